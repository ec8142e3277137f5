"""``python -m validate [runner options]``: one rank (see :mod:`validate.rank`)."""

from __future__ import annotations

from .rank import main

raise SystemExit(main())
