"""Recursive doubling (all-reduce and all-gather), and the standard handling of p not a power of two
that halving-doubling shares (MPICH's, after Thakur, Rabenseifner & Gropp 2005).

**p not a power of two.** Let p' be the largest power of two <= p and r = p - p'. Among the first 2r
ranks, every even rank first sends its whole buffer to the odd rank after it, which folds it in, and
sits out ("fold in"); the odd ones (new rank = rank // 2) and the ranks from 2r on (new rank = rank - r)
run the power-of-two algorithm; at the end every odd rank below 2r sends the result back to the even
rank before it ("fold out"). That costs two more messages of the whole buffer (and one reduction).

* all-reduce ``recursive-doubling``: in step s = 0..log2 p'-1 (new) rank x swaps its whole buffer with
  x XOR 2^s and reduces what it gets. On a star each step is one message each way per host::

      T = log2 p·(α + n·β + n·γ)                         (p a power of two: exact)
      T = (log2 p' + 2)·(α + n·β) + (log2 p' + 1)·n·γ    (otherwise: the form, not exact)

* all-gather ``recursive-doubling`` (n = the total, blocks of n/p): in step s, x swaps everything it
  holds (2^s blocks) with x XOR 2^s::

      T = log2 p·α + (p-1)/p·n·β                         (p a power of two: exact)

Why the fold is not exact on a star: the ranks that do not fold start their first step at once, and
their message reaches a folding rank while the fold-in message still drains into it, so the two share
its link. With p = 3 (rank 0 folds into 1, ranks 1 and 2 swap) all-reduce takes 3α + 4n·β, not
3α + 3n·β (tests/test_congested.py derives it).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from ..runtime import Job
from .base import Algorithm
from .flat import spread
from .registry import register

__all__ = ["Fold", "RecursiveDoublingAllGather", "RecursiveDoublingAllReduce", "exchange"]


class Fold:
    """The power-of-two core of ``p`` ranks: ``core`` = p', new ranks and their ranks."""

    def __init__(self, p: int) -> None:
        self.p = p
        self.core = 1 << (p.bit_length() - 1)
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


@register
class RecursiveDoublingAllReduce(Algorithm):
    name = "recursive-doubling"
    collective = "allreduce"
    summary = "log2 p steps; in step s swap the whole buffer with rank XOR 2^s and reduce"

    def segments(self, p: int) -> int:
        return 1

    def closed_form_exact(self, p: int) -> bool:
        return p & (p - 1) == 0

    def run(self, job: Job) -> Generator[Any, Any, None]:
        fold, n = Fold(job.p), job.nbytes

        def core(rank: int, new: int) -> Generator[Any, Any, None]:
            for s in range(fold.steps):
                got = yield from exchange(job, rank, fold.rank_of(new ^ (1 << s)), n, 0, 2 + s)
                yield from job.combine(rank, 0, got, n)

        whole = lambda _r: 0  # noqa: E731
        yield folded(job, fold, core, seg_in=whole, bytes_in=n, reduce_in=True, seg_out=whole, bytes_out=n)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        fold = Fold(p)
        extra = 2 if fold.extra else 0
        return (fold.steps + extra) * (alpha + n * beta) + (fold.steps + extra // 2) * n * gamma


@register
class RecursiveDoublingAllGather(Algorithm):
    name = "recursive-doubling"
    collective = "allgather"
    summary = "log2 p steps; in step s swap everything held with rank XOR 2^s"

    def closed_form_exact(self, p: int) -> bool:
        return p & (p - 1) == 0

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p
        fold, block = Fold(p), job.nbytes / p

        def core(rank: int, new: int) -> Generator[Any, Any, None]:
            for s in range(fold.steps):
                peer = new ^ (1 << s)
                mine, theirs = fold.held(new, s), fold.held(peer, s)
                sent = job.send(rank, fold.rank_of(peer), len(mine) * block, job.data.take(rank, mine), 2 + s)
                job.data.put(rank, theirs, (yield job.recv(rank, fold.rank_of(peer), 2 + s)))
                yield sent

        def others(rank: int) -> np.ndarray:
            return np.delete(np.arange(p), rank)

        yield folded(
            job,
            fold,
            core,
            seg_in=lambda r: r,
            bytes_in=block,
            reduce_in=False,
            seg_out=others,
            bytes_out=(p - 1) * block,
        )

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        fold = Fold(p)
        if not fold.extra:
            return fold.steps * alpha + (p - 1) / p * n * beta
        # fold in one block; each core step as long as its largest message; fold out p-1 blocks
        core = sum(max(len(fold.held(x, s)) for x in range(fold.core)) for s in range(fold.steps))
        return (fold.steps + 2) * alpha + (1 + core + p - 1) / p * n * beta
