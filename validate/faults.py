"""Injected faults, for testing how runs end: ``COLLSIM_VALIDATE_FAULT="rank=2,iteration=3,action=kill"``
makes rank 2, at iteration 3 (counting warm-up iterations from 0) of the first size -- or of the size
given as ``size=BYTES`` -- kill itself with SIGKILL (``kill``), exit with status 3 (``exit``) or sleep
forever outside the collective (``hang``). Without the variable nothing happens. No torch here.

>>> parse_fault("rank=1,iteration=2,action=hang")
Fault(rank=1, iteration=2, action='hang', size_bytes=None)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

from sim.errors import ConfigError
from sim.units import parse_size

__all__ = ["FAULT_VAR", "Fault", "parse_fault"]

FAULT_VAR = "COLLSIM_VALIDATE_FAULT"
ACTIONS = ("kill", "exit", "hang")


@dataclass(frozen=True)
class Fault:
    """One injected fault."""

    rank: int
    iteration: int
    action: str
    size_bytes: int | None = None

    def maybe_fire(self, rank: int, size_index: int, size_bytes: int, iteration: int) -> None:
        """Fire if this is the rank, size and iteration the fault names."""
        if rank != self.rank or iteration != self.iteration:
            return
        if (size_index != 0) if self.size_bytes is None else (size_bytes != self.size_bytes):
            return
        print(f"rank {rank}: injected fault: {self.action} at iteration {iteration}", file=sys.stderr, flush=True)
        if self.action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif self.action == "exit":
            os._exit(3)
        while True:  # hang
            time.sleep(3600)


def parse_fault(text: str | None) -> Fault | None:
    """The fault described by ``text`` (the variable's value), or None when it is empty."""
    if not text or not text.strip():
        return None
    fields: dict[str, str] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise ConfigError(f"{FAULT_VAR}={text!r}: expected key=value items, got {item!r}")
        fields[key.strip()] = value.strip()
    unknown = set(fields) - {"rank", "iteration", "action", "size"}
    if unknown or not {"rank", "iteration", "action"} <= set(fields):
        raise ConfigError(f"{FAULT_VAR}={text!r}: expected rank=R,iteration=I,action={'|'.join(ACTIONS)}[,size=B]")
    if fields["action"] not in ACTIONS:
        raise ConfigError(f"{FAULT_VAR}={text!r}: action must be one of {', '.join(ACTIONS)}")
    try:
        rank, iteration = int(fields["rank"]), int(fields["iteration"])
    except ValueError:
        raise ConfigError(f"{FAULT_VAR}={text!r}: rank and iteration must be whole numbers") from None
    size = int(parse_size(fields["size"], FAULT_VAR)) if "size" in fields else None
    return Fault(rank, iteration, fields["action"], size)
