"""The compiled cores (``sim/_ratecore.c``, ``sim/_classcore.c``) and the engine's switches: which to use.

setup.py builds the cores where a C compiler is found; each has a Python (numpy) reference beside its
caller, which runs where a core is not built or where ``COLLSIM_PURE=1`` is in the environment (read at
import: :data:`PURE`).

Every shortcut the engine takes in place of lines that stay as its reference -- a compiled loop, a class of
flows counted rather than simulated, a wake-up run without an event of its own -- has a module-level switch,
on by default, that tests turn off to hold the shortcut to its reference. :data:`SWITCHES` names them all
(tests/test_switches.py turns each off in turn on a mix of cases and checks that no switch goes
unregistered); :func:`switches` reads them.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["PURE", "SWITCHES", "built", "chosen", "switches"]

#: ``COLLSIM_PURE`` set in the environment (other than 0) at import: no compiled core is used, and the
#: shortcuts whose reference is plain Python (the compiled plain ranks, the parameter server's counted
#: arrivals) are off from the start
PURE = os.environ.get("COLLSIM_PURE", "") not in ("", "0")

#: every engine switch, ``module.NAME``: on (True) takes the shortcut, off runs the reference lines
SWITCHES: tuple[str, ...] = (
    # SimPy's event loop in the compiled core (sim/simulate.py)
    "sim.simulate._RUN_CORE",
    # the network: the private lane, the wake-up and the sends in the compiled core (sim/network.py)
    "sim.network._RESUME_IN_WAKE",
    "sim.network._PRIVATE",
    "sim.network._LANE_CORE",
    "sim.network._WAKE_CORE",
    "sim.network._WHOLE_CORE",
    "sim.network._SEND_CORE",
    "sim.network._PUMP",
    "sim.network._DUE_CORE",
    "sim.network._MSG_CORE",
    # the rates (sim/rates.py, sim/maxmin.py)
    "sim.rates._HIT_CORE",
    "sim.rates._CORE_EARLY",
    "sim.maxmin._UNBOUNDED_CORE",
    "sim.maxmin._BOUNDED_CORE",
    # routes in bulk (sim/routing.py)
    "sim.routing._BULK",
    # the message level's ranks (sim/program.py, sim/algorithms/)
    "sim.program._PLAIN_RANKS",
    "sim.program._CRANKS",
    "sim.algorithms.ring._FROM_PROGRAM",
    "sim.algorithms.ps._COUNTED",
    "sim.runtime._POST_CORE",
    # the fast paths (sim/fastpath.py, sim/dataflow.py, sim/classes.py)
    "sim.fastpath._FAST_CORE",
    "sim.fastpath._FAST_LAUNCH",
    "sim.fastpath._STEP_WAKES",
    "sim.dataflow._DF_CORE",
    "sim.classes._STRUCTURE",
    "sim.classes._SETTLE_CORE",
)


def switches() -> dict[str, bool]:
    """Every switch of :data:`SWITCHES` and its value now."""
    out = {}
    for name in SWITCHES:
        module, attr = name.rsplit(".", 1)
        out[name] = bool(getattr(importlib.import_module(module), attr))
    return out


def built(name: str) -> Any:
    """The compiled module ``sim.<name>``, or None where it is not built (no C compiler)."""
    try:
        return importlib.import_module(f"sim.{name}")
    except ImportError:
        return None


def chosen(module: Any) -> Any:
    """``module`` (a :func:`built` core), or None where ``COLLSIM_PURE`` is set (other than 0): the Python path."""
    return None if PURE else module
