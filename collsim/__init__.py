"""collsim: simulate, measure and plan gradient synchronization on GPU clusters.

The simulator lives in :mod:`sim`, real runs in :mod:`validate`; this package holds the CLI.
"""

from __future__ import annotations

from sim import __version__  # the one place the version is written: sim/__init__.py

__all__ = ["__version__"]
