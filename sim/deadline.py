"""A wall-clock bound on simulations (``--timeout``): one deadline per context, checked where work
piles up, free when none is set.

:func:`deadline` sets the deadline for the code it wraps (the CLI wraps a whole command in it; a report
worker wraps each point in the report's deadline, which travels as an absolute time so that every
process and thread of a sweep stops at the same moment). :func:`check` raises
:class:`SimulationTimeout` once it has passed. The event loop of :func:`sim.simulate` looks at the
clock before every event (:class:`sim.simulate.TimedEnvironment`), the closed-form fast path once per
step and the cluster builder once per link, so that building, routing and simulating are all bounded.
With no deadline set the event loop is SimPy's own and every other check is one context-variable read.

>>> import time
>>> with deadline(None):
...     check()                      # no deadline: nothing happens
>>> with deadline(0.0):
...     time.sleep(0.001)
...     check()
Traceback (most recent call last):
...
sim.deadline.SimulationTimeout: the simulation did not finish within --timeout 0 s (wall clock)
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import RunError

__all__ = ["Deadline", "SimulationTimeout", "check", "current", "deadline", "deadline_at"]


class SimulationTimeout(RunError):
    """The wall-clock bound (``--timeout``) passed before the simulation finished."""


@dataclass(frozen=True)
class Deadline:
    """An absolute wall-clock time (``time.time()``, comparable across processes of one machine) and
    the bound it came from, for the message."""

    at: float
    seconds: float
    #: the option that set it, for the message (a report's point limit names its own)
    what: str = "--timeout"

    def expired(self) -> bool:
        return time.time() > self.at

    def message(self) -> str:
        return f"the simulation did not finish within {self.what} {self.seconds:g} s (wall clock)"


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("collsim_deadline", default=None)


def current() -> Deadline | None:
    """The deadline in force here, if any."""
    return _CURRENT.get()


def check() -> None:
    """Raise :class:`SimulationTimeout` if the deadline in force has passed."""
    d = _CURRENT.get()
    if d is not None and time.time() > d.at:
        raise SimulationTimeout(d.message())


@contextlib.contextmanager
def deadline_at(bound: Deadline | None) -> Iterator[Deadline | None]:
    """Put ``bound`` in force for the block (None: leave the one in force, if any). An outer deadline
    that ends sooner stays in force."""
    outer = _CURRENT.get()
    if bound is None or (outer is not None and outer.at <= bound.at):
        yield outer
        return
    token = _CURRENT.set(bound)
    try:
        yield bound
    finally:
        _CURRENT.reset(token)


def deadline(seconds: float | None) -> contextlib.AbstractContextManager[Deadline | None]:
    """A deadline ``seconds`` from now for the block (None: no new bound).

    Raises :class:`~sim.errors.ConfigError` for a negative or non-finite bound.
    """
    if seconds is None:
        return deadline_at(None)
    from .errors import ConfigError

    if not (seconds >= 0 and seconds != float("inf")):
        raise ConfigError(f"timeout: must be a finite number of seconds >= 0, got {seconds!r}", param="timeout")
    return deadline_at(Deadline(time.time() + seconds, seconds))
