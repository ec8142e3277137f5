"""A rank's part of a point-to-point algorithm as data: a list of :class:`Step`.

In a step a rank posts all its sends and receives at once, waits for every one of them (its sends have
left, its receives have arrived), then does the step's local work (reductions and copies). That is the
simulator's rule -- "a rank starts a step when its previous send has left and its receive and reduction
are done" -- and, because the two ends of every message post it in steps of the same tag, the same
schedule runs deadlock-free on gloo (where a send completes once its receiver has posted) and on NCCL
(where the step's operations are one ``batch_isend_irecv`` group).

Plans are built once per size (views, peers, scratch buffers) so that running one costs only the
communication and the arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

__all__ = ["Add", "Comm", "Copy", "Step", "Transfer", "run_steps", "schedule_plan"]

Transfer = tuple[torch.Tensor, int, int]
"""A buffer, the peer rank it goes to (a send) or comes from (a receive), and the message's tag."""


@dataclass(frozen=True)
class Add:
    """``out = a + b`` (in place when ``out`` is ``a``)."""

    out: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor

    def __call__(self) -> None:
        if self.out is self.a:
            self.a.add_(self.b)
        else:
            torch.add(self.a, self.b, out=self.out)


@dataclass(frozen=True)
class Copy:
    """``dst = src``."""

    dst: torch.Tensor
    src: torch.Tensor

    def __call__(self) -> None:
        self.dst.copy_(self.src)


Local = Add | Copy


@dataclass(frozen=True)
class Step:
    """Post ``sends`` and ``recvs``, wait for all, then run ``after`` in order.

    ``before`` runs first (local copies that must precede the messages). Empty buffers are not sent:
    both ends know the sizes, so both skip them. Two messages between the same ranks in the same
    direction never share a tag within a collective, so matching never depends on posting order.
    """

    sends: tuple[Transfer, ...] = ()
    recvs: tuple[Transfer, ...] = ()
    after: tuple[Local, ...] = ()
    before: tuple[Local, ...] = field(default=())


class Comm(Protocol):
    """What a schedule needs from the transport."""

    rank: int
    size: int

    def exchange(self, sends: Sequence[Transfer], recvs: Sequence[Transfer]) -> None:
        """Post every send and receive, and return when all of them have completed."""
        ...


def run_steps(comm: Comm, steps: Sequence[Step]) -> None:
    """Run a rank's steps in order."""
    for step in steps:
        for op in step.before:
            op()
        if step.sends or step.recvs:
            comm.exchange(step.sends, step.recvs)
        for op in step.after:
            op()


def schedule_plan(comm: Comm, steps: Sequence[Step]) -> Callable[[], None]:
    """A callable that runs ``steps`` on ``comm`` (what :meth:`RealAlgorithm.plan` returns)."""
    frozen = tuple(steps)

    def run() -> None:
        run_steps(comm, frozen)

    run.steps = frozen  # type: ignore[attr-defined]  (for inspection and tests)
    return run
