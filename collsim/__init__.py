"""collsim: simulate, measure and plan gradient synchronization on GPU clusters.

The simulator lives in :mod:`sim`, real runs in :mod:`validate`; this package holds the CLI.

Importing the package imports nothing else: the console script's :func:`entry` starts before the
simulator's imports (most of a second), with the interrupting signals held, so that a Ctrl-C (or SIGTERM,
SIGHUP) during them ends as one later does -- one line, exit 130 -- not with a traceback.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

__all__ = ["HELD_SIGNALS", "__version__", "entry"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from sim import __version__  # the one place the version is written: sim/__init__.py

        return __version__
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def entry() -> None:
    """Console-script entry point: SIGINT, SIGTERM and SIGHUP are held (blocked) during the imports and
    arrive once :func:`collsim.cli.main` has its handlers -- a signal inside an import can surface as
    anything (a traceback, a library's own error, an exit by signal), never as collsim's one line."""
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    from collsim.cli import main

    sys.exit(main())


#: what :func:`entry` holds until :func:`collsim.cli.main` has installed its handlers (and unblocks them)
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
