"""The compiled cores (``sim/_ratecore.c``, ``sim/_classcore.c``): which to use.

setup.py builds them where a C compiler is found; each has a Python (numpy) reference beside its caller,
which runs where a core is not built or where ``COLLSIM_PURE=1`` is in the environment (read at import).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["built", "chosen"]


def built(name: str) -> Any:
    """The compiled module ``sim.<name>``, or None where it is not built (no C compiler)."""
    try:
        return importlib.import_module(f"sim.{name}")
    except ImportError:
        return None


def chosen(module: Any) -> Any:
    """``module`` (a :func:`built` core), or None where ``COLLSIM_PURE`` is set (other than 0): the Python path."""
    return None if os.environ.get("COLLSIM_PURE", "") not in ("", "0") else module
