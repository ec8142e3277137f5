"""``--timeout SECONDS`` (``COLLSIM_TIMEOUT``): the wall-clock bound of ``collsim simulate``, ``compare`` and
``report``, one option shared by the three (the bound itself is :mod:`sim.deadline`).

When it passes, the command ends with one line, ``collsim: error: the simulation did not finish within
--timeout 5 s (wall clock)``, and exit code 2. ``COLLSIM_TIMEOUT`` is also the per-collective timeout of
``python -m validate``: in both places it means "give up after this long".
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Optional

import typer

from sim.deadline import Deadline, deadline
from sim.errors import ConfigError
from sim.units import parse_time

__all__ = ["TimeoutOpt", "bounded", "timeout_seconds"]

TimeoutOpt = Annotated[
    Optional[str],
    typer.Option(
        "--timeout",
        envvar="COLLSIM_TIMEOUT",
        help="Stop with an error if the command's simulations take longer than this (wall clock), e.g. 60s.",
    ),
]


def timeout_seconds(text: str | None, option: str = "--timeout") -> float | None:
    """Seconds from ``--timeout`` (or the ``option`` named; None when not given); refuses values that are
    not > 0.

    >>> timeout_seconds("2min"), timeout_seconds(None)
    (120.0, None)
    """
    if text is None or not str(text).strip():
        return None
    seconds = parse_time(text, option)
    if not seconds > 0:
        raise ConfigError(f"{option}: must be > 0 seconds, got {text!r}")
    return seconds


def bounded(text: str | None) -> contextlib.AbstractContextManager[Deadline | None]:
    """The deadline of ``--timeout`` for the block it wraps (nothing when not given)."""
    return deadline(timeout_seconds(text))
