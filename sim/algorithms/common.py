"""Helpers several algorithms share: the integer helpers, the fan-in / fan-out steps that flat,
master-worker, the parameter server and the trees are built from, and MPICH's fold for rank counts that
are not a power of two (recursive doubling and halving-doubling).

Every message of a flat step starts at once, so on a star the ``q`` flows into (or out of) one host
share its link: the step takes ``α + q·m·β`` for ``q`` messages of ``m`` bytes.

**p not a power of two** (:class:`Fold`, :func:`folded`; MPICH's, after Thakur, Rabenseifner & Gropp
2005). Let p' be the largest power of two <= p and r = p - p'. Among the first 2r ranks, every even rank
first sends its whole buffer to the odd rank after it, which folds it in, and sits out ("fold in"); the
odd ones (new rank = rank // 2) and the ranks from 2r on (new rank = rank - r) run the power-of-two
algorithm; at the end every odd rank below 2r sends the result back to the even rank before it ("fold
out"). That costs two more messages of the whole buffer (and one reduction).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np

from ..runtime import Job, Segment

__all__ = [
    "Fold",
    "ceil_log2",
    "core_size",
    "exchange",
    "fan_in",
    "fan_out",
    "folded",
    "receive_into",
    "spread",
    "storing",
]


def ceil_log2(p: int) -> int:
    """⌈log2 p⌉ (0 for p = 1)."""
    return (p - 1).bit_length()


def core_size(q: int) -> int:
    """The largest power of two <= q (the core of :class:`Fold`, halving-doubling's blocks)."""
    return 1 << (q.bit_length() - 1)


def spread(job: Job, bodies: Sequence[Generator[Any, Any, None]]) -> Any:
    """One SimPy process per body; the returned event fires when all of them are done."""
    return job.env.all_of([job.env.process(body) for body in bodies])


def fan_in(
    job: Job,
    at: int,
    peers: Sequence[int],
    tag: int,
    fold: Callable[[int, Any], Generator[Any, Any, None]],
) -> Generator[Any, Any, None]:
    """``at`` receives one message with ``tag`` from each of ``peers`` and handles each one with
    ``fold(src, payload)`` in the order they arrive (ties in ``peers`` order): a reduction there is
    serialized on ``at``'s processor, as a master or a server reduces one buffer after another.
    """
    pending = {src: job.recv(at, src, tag) for src in peers}
    while pending:
        if not any(event.triggered for event in pending.values()):
            yield job.env.any_of(list(pending.values()))
        for src in [s for s, event in pending.items() if event.triggered]:
            payload = pending.pop(src).value
            yield from fold(src, payload)


def storing(job: Job, at: int, seg_of: Callable[[int], Segment]) -> Callable[[int, Any], Generator[Any, Any, None]]:
    """A ``fold`` for :func:`fan_in` that stores the message from ``src`` as ``at``'s copy of
    ``seg_of(src)`` (a copy, no reduction)."""

    def fold(src: int, payload: Any) -> Generator[Any, Any, None]:
        job.data.put(at, seg_of(src), payload)
        yield from ()

    return fold


def fan_out(
    job: Job, at: int, peers: Sequence[int], nbytes: float, payload: Callable[[int], Any], tag: int
) -> list[Any]:
    """``at`` sends ``nbytes`` to each of ``peers`` at once (payload ``payload(peer)``); returns the
    send events."""
    return [job.send(at, dst, nbytes, payload(dst), tag) for dst in peers]


def receive_into(job: Job, rank: int, src: int, seg: Segment, tag: int) -> Generator[Any, Any, None]:
    """``rank`` receives one message from ``src`` and stores it as its copy of ``seg``."""
    got = yield job.recv(rank, src, tag)
    job.data.put(rank, seg, got)


class Fold:
    """The power-of-two core of ``p`` ranks (see the module docstring): ``core`` = p', new ranks and
    their ranks."""

    def __init__(self, p: int) -> None:
        self.p = p
        self.core = core_size(p)
        self.extra = p - self.core

    def new_rank(self, rank: int) -> int | None:
        """The rank's place in the core, or None when it sits out (an even rank below 2r)."""
        if rank < 2 * self.extra:
            return None if rank % 2 == 0 else rank // 2
        return rank - self.extra

    def rank_of(self, new: int) -> int:
        return 2 * new + 1 if new < self.extra else new + self.extra

    @property
    def steps(self) -> int:
        return self.core.bit_length() - 1

    def blocks_of(self, new: int) -> list[int]:
        """The blocks (one per rank) new rank ``new`` holds after the fold in."""
        rank = self.rank_of(new)
        return [rank - 1, rank] if rank < 2 * self.extra else [rank]

    def held(self, new: int, step: int) -> np.ndarray:
        """The blocks new rank ``new`` holds at the start of recursive-doubling step ``step``."""
        first = new & ~((1 << step) - 1)
        return np.array([b for x in range(first, first + (1 << step)) for b in self.blocks_of(x)])


def exchange(job: Job, me: int, peer: int, nbytes: float, send_seg: Any, tag: int) -> Generator[Any, Any, Any]:
    """Send ``send_seg`` to ``peer`` and receive its message with the same tag; returns the payload
    once both the receive and our own send are done."""
    sent = job.send(me, peer, nbytes, job.data.take(me, send_seg), tag)
    got = yield job.recv(me, peer, tag)
    yield sent
    return got


def folded(
    job: Job,
    fold: Fold,
    core: Callable[[int, int], Generator[Any, Any, None]],
    *,
    seg_in: Callable[[int], Any],
    bytes_in: float,
    reduce_in: bool,
    seg_out: Callable[[int], Any],
    bytes_out: float,
) -> Any:
    """Every rank's process: ``core(rank, new_rank)`` on the power-of-two core, with fold in and fold
    out around it; returns the event that fires when all ranks are done.

    An even rank e below 2r hands ``seg_in(e)`` (``bytes_in`` bytes, tag 0) to the odd rank after it, which
    reduces it into its own copy (``reduce_in``) or stores it; after the core the odd rank sends
    ``seg_out(even rank)`` (``bytes_out`` bytes, tag 1) back. The core's tags must start at 2.
    """

    def member(rank: int) -> Generator[Any, Any, None]:
        new = fold.new_rank(rank)
        if new is None:  # sits out: hand over, wait for the result
            job.send(rank, rank + 1, bytes_in, job.data.take(rank, seg_in(rank)), 0)
            job.data.put(rank, seg_out(rank), (yield job.recv(rank, rank + 1, 1)))
            return
        if rank < 2 * fold.extra:
            got = yield job.recv(rank, rank - 1, 0)
            if reduce_in:
                yield from job.combine(rank, seg_in(rank - 1), got, bytes_in)
            else:
                job.data.put(rank, seg_in(rank - 1), got)
        yield from core(rank, new)
        if rank < 2 * fold.extra:
            yield job.send(rank, rank - 1, bytes_out, job.data.take(rank, seg_out(rank - 1)), 1)

    return spread(job, [member(r) for r in range(job.p)])
