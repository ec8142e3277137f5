"""A rank's part of a point-to-point algorithm as data: a list of :class:`Op`, one per step of its
schedule (the simulator's counterpart, one step of every rank at once, is :class:`sim.program.Step`).

In an op a rank posts all its sends and receives at once, waits for every one of them (its sends have
left, its receives have arrived), then does the op's local work (reductions and copies). That is the
simulator's rule -- "a rank starts a step when its previous send has left and its receive and reduction
are done" -- and, because the two ends of every message post it in steps of the same tag, the same
schedule runs deadlock-free on gloo (where a send completes once its receiver has posted) and on NCCL
(where an op's messages are one ``batch_isend_irecv`` group).

Plans are built once per size (views, peers, scratch buffers) so that running one costs only the
communication and the arithmetic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

import torch

__all__ = [
    "Add",
    "Comm",
    "Copy",
    "Op",
    "Transfer",
    "can_post_early",
    "concurrent_plan",
    "run_ops",
    "schedule_plan",
    "segment_tag",
    "segments",
]

#: tags of a step's segments: segment ``j`` of a step tagged ``t`` is tagged ``t + j * SEGMENT_TAG``
#: (step tags stay below it), so segment 0 keeps the step's own tag
SEGMENT_TAG = 1 << 20
MAX_SEGMENTS = (2**31 - 1) // SEGMENT_TAG - 1

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
class Op:
    """One step of a rank's schedule: post ``sends`` and ``recvs``, wait for all, then run ``after`` in
    order.

    ``each`` (one entry per receive, or empty) is local work to do as soon as that receive has arrived,
    while later ones may still be in flight -- how a step split into segments overlaps its reduction
    with its transfer. ``before`` runs first (local copies that must precede the messages). Empty
    buffers are not sent: both ends know the sizes, so both skip them. Two messages between the same
    ranks in the same direction never share a tag within a collective, so matching never depends on
    posting order.
    """

    sends: tuple[Transfer, ...] = ()
    recvs: tuple[Transfer, ...] = ()
    after: tuple[Local, ...] = ()
    before: tuple[Local, ...] = field(default=())
    each: tuple[Local | None, ...] = ()


class Comm(Protocol):
    """What a schedule needs from the transport.

    ``start`` posts a step's messages and ``finish`` waits for them (running ``each[i]`` as receive ``i``
    completes); ``post_recvs`` may post the next step's receives early, while this step runs, and
    return a token for ``start`` -- or return None where the transport gains nothing from it.
    """

    rank: int
    size: int

    def start(self, sends: Sequence[Transfer], recvs: Sequence[Transfer], early: Any = None) -> Any: ...

    def finish(self, posted: Any, each: Sequence[Local | None] = ()) -> None: ...

    def post_recvs(self, recvs: Sequence[Transfer]) -> Any: ...

    def exchange(self, sends: Sequence[Transfer], recvs: Sequence[Transfer], each: Sequence[Local | None] = ()) -> None:
        """Post every send and receive; run ``each[i]`` as receive ``i`` completes (in order); return
        when all have completed."""
        ...


def _extent(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    return start, start + t.numel() * t.element_size()


def _touched(op: Op) -> list[torch.Tensor]:
    out = [t for t, _, _ in op.sends] + [t for t, _, _ in op.recvs]
    for work in (*op.before, *op.after, *(e for e in op.each if e is not None)):
        out += [work.out, work.a, work.b] if isinstance(work, Add) else [work.dst, work.src]
    return [t for t in out if t.numel()]


def can_post_early(op: Op, following: Op) -> bool:
    """Whether ``following``'s receives may be posted while ``op`` runs: their buffers are not
    touched by ``op`` (sent, received into, reduced, copied) nor by ``following``'s ``before``."""
    targets = [_extent(t) for t, _, _ in following.recvs if t.numel()]
    if not targets:
        return False
    busy = [_extent(t) for t in _touched(op)]
    busy += [
        _extent(t)
        for work in following.before
        for t in ((work.out, work.a, work.b) if isinstance(work, Add) else (work.dst, work.src))
    ]
    return not any(a < d and c < b for a, b in targets for c, d in busy)


def run_ops(comm: Comm, ops: Sequence[Op], early: Sequence[bool] = ()) -> None:
    """Run a rank's ops in order. Where ``early[k]``, op ``k + 1``'s receives are posted while
    op ``k`` runs (their buffers are free, :func:`can_post_early`): with gloo, whose send waits for
    its receiver to have posted, that takes a handshake off every step; no data moves earlier."""
    posted_early: Any = None
    for k, op in enumerate(ops):
        for work in op.before:
            work()
        posted = comm.start(op.sends, op.recvs, posted_early) if (op.sends or op.recvs) else None
        posted_early = comm.post_recvs(ops[k + 1].recvs) if k < len(early) and early[k] else None
        if posted is not None:
            comm.finish(posted, op.each)
        for work in op.after:
            work()


def _writes(work: Local) -> torch.Tensor:
    return work.out if isinstance(work, Add) else work.dst


def check_op(op: Op) -> None:
    """Refuse an op whose ``each`` work writes into a buffer its sends may still be reading."""
    sending = [_extent(t) for t, _, _ in op.sends if t.numel()]
    for work in op.each:
        if work is not None and _writes(work).numel():
            a, b = _extent(_writes(work))
            if any(a < d and c < b for c, d in sending):
                raise ValueError(f"step work {work!r} writes into a buffer the step is sending")


def schedule_plan(comm: Comm, ops: Sequence[Op]) -> Callable[[], None]:
    """A callable that runs ``ops`` on ``comm`` (what :meth:`RealAlgorithm.plan` returns)."""
    frozen = tuple(ops)
    for op in frozen:
        check_op(op)
    early = tuple(can_post_early(a, b) for a, b in pairwise(frozen))

    def run() -> None:
        run_ops(comm, frozen, early)

    run.ops = frozen  # type: ignore[attr-defined]  (for inspection and tests)
    return run


def segment_tag(tag: int, j: int) -> int:
    """The tag of segment ``j`` of a message tagged ``tag``."""
    return tag + j * SEGMENT_TAG


def segments(t: torch.Tensor, elements: int) -> tuple[torch.Tensor, ...]:
    """``t`` cut into pieces of at most ``elements`` elements (one piece when ``elements`` is 0), never
    more than :data:`MAX_SEGMENTS` of them."""
    n = t.numel()
    if elements <= 0 or n <= elements:
        return (t,)
    elements = max(elements, -(-n // MAX_SEGMENTS))
    return t.split(elements)


def concurrent_plan(comm: Comm, sequences: Sequence[Sequence[Op]]) -> Callable[[], None]:
    """A callable that runs several independent op sequences of one rank at the same time, each on
    its own thread (as the simulator runs them as separate processes): each keeps its own order, none
    waits for another. The first error raised by any of them is raised."""
    plans = [schedule_plan(comm, seq) for seq in sequences]
    if len(plans) == 1:
        return plans[0]

    def run() -> None:
        errors: list[BaseException] = []

        def body(plan: Callable[[], None]) -> None:
            try:
                plan()
            except BaseException as exc:  # noqa: BLE001  (re-raised below)
                errors.append(exc)

        threads = [threading.Thread(target=body, args=(plan,), daemon=True) for plan in plans[1:]]
        for t in threads:
            t.start()
        body(plans[0])
        if errors:  # a failed stream: do not wait for the others (they may wait on the same peer)
            raise errors[0]
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    run.ops = tuple(op for seq in sequences for op in seq)  # type: ignore[attr-defined]
    return run
