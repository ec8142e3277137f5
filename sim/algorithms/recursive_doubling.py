"""Recursive doubling (all-reduce and all-gather). For p not a power of two the ranks fold into the
largest power of two p' <= p first and unfold at the end, as halving-doubling does (MPICH's scheme,
:class:`sim.algorithms.common.Fold`): two more messages of the whole buffer (and one reduction).

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

from collections.abc import Generator
from typing import Any

import numpy as np

from ..program import Step, StepProgram
from ..runtime import Job
from .base import Algorithm
from .common import Fold, exchange, folded
from .registry import register

__all__ = ["RecursiveDoublingAllGather", "RecursiveDoublingAllReduce"]


@register
class RecursiveDoublingAllReduce(Algorithm):
    name = "recursive-doubling"
    collective = "allreduce"
    summary = "log2 p steps; in step s swap the whole buffer with rank XOR 2^s and reduce"

    def segments(self, p: int) -> int:
        return 1

    def closed_form_exact(self, p: int) -> bool:
        return p & (p - 1) == 0

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        """The same schedule as :meth:`run` as a step program: fold in, log2 p' swaps, fold out."""
        if p == 1:
            return None
        fold = Fold(p)
        core = np.array([fold.rank_of(x) for x in range(fold.core)], dtype=np.int64)
        phases = []
        for s in range(fold.steps):
            partner = core[np.arange(fold.core) ^ (1 << s)]
            phases.append((Step.make(core, partner, nbytes, nbytes, endpoints=p), 1))
        return _with_fold(fold, p, phases, nbytes, True, True, nbytes)

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

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        """The same schedule as :meth:`run` as a step program (segments: one block per rank)."""
        if p == 1:
            return None
        fold, block = Fold(p), nbytes / p
        core = np.array([fold.rank_of(x) for x in range(fold.core)], dtype=np.int64)
        phases = []
        x = np.arange(fold.core, dtype=np.int64)
        first_block = np.where(x < fold.extra, 2 * x, x + fold.extra)  # new rank x's lowest block
        last_block = np.where(x < fold.extra, 2 * x + 1, x + fold.extra)
        for s in range(fold.steps):
            # new rank x holds the (contiguous) blocks of new ranks x & ~(2^s - 1) .. that + 2^s - 1
            first = x & ~((1 << s) - 1)
            lo = first_block[first]
            width = last_block[first + (1 << s) - 1] - lo + 1
            partner = core[x ^ (1 << s)]
            phases.append((Step.make(core, partner, width * block, 0.0, endpoints=p, seg=lo, seg_width=width), 1))
        return _with_fold(fold, p, phases, block, False, None, (p - 1) * block)

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


def _with_fold(
    fold: Fold,
    p: int,
    phases: list[tuple[Step, int]],
    bytes_in: float,
    reduce_in: bool,
    whole: bool | None,
    bytes_out: float,
) -> StepProgram:
    """``phases`` (the power-of-two core) with :func:`~sim.algorithms.common.folded`'s fold in and fold
    out around them: even rank e < 2r hands its data to e + 1 and gets the result back. ``whole`` is
    None for the all-gather (each rank's own block in, every other block out), else every message
    carries the one segment."""
    if not fold.extra:
        return StepProgram(p, tuple(phases))
    even = np.arange(0, 2 * fold.extra, 2, dtype=np.int64)
    if whole is None:
        fold_in = Step.make(even, even + 1, bytes_in, 0.0, endpoints=p, seg=even, seg_width=1, combine=False)
        # every block back (e's own included: the odd rank stored it at the fold in)
        fold_out = Step.make(even + 1, even, bytes_out, 0.0, endpoints=p, seg=0, seg_width=p, combine=False)
    else:
        fold_in = Step.make(even, even + 1, bytes_in, bytes_in, endpoints=p, combine=True)
        fold_out = Step.make(even + 1, even, bytes_out, 0.0, endpoints=p, combine=False)
    return StepProgram(p, ((fold_in, 1), *phases, (fold_out, 1)))
