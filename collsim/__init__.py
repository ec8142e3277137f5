"""collsim: simulate, measure and plan gradient synchronization on GPU clusters.

The simulator lives in :mod:`sim`, real runs in :mod:`validate`; this package holds the CLI.
"""

from __future__ import annotations

__version__ = "0.1.0"
