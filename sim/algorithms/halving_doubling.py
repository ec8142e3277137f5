"""Recursive halving-doubling all-reduce (Rabenseifner): a reduce-scatter by recursive halving, then
an all-gather by recursive doubling, on the buffer cut into p blocks.

Schedule (p a power of two, blocks of n/p): in halving step s = 0..log2 p-1, rank x pairs with
x XOR p/2^(s+1); of the blocks it still reduces, it sends the half its partner keeps (the upper half
when x has that bit clear) and reduces the half it receives into the half it keeps -- n/2^(s+1) bytes
each way. After log2 p steps rank x holds block x reduced. The doubling steps run the pairs in reverse
order, each rank sending everything it holds (n/p, 2n/p, ...) and storing its partner's.

On a star every step is one message each way per host, so it is exact::

    T = 2·log2 p·α + 2·(p-1)/p·n·β + (p-1)/p·n·γ

For p not a power of two the ranks fold into the largest power of two p' first and unfold at the end
(:class:`sim.algorithms.common.Fold`); the form is then
2·(log2 p' + 1)·α + 2·(1 + (p'-1)/p')·n·β + (1 + (p'-1)/p')·n·γ, not exact for the reason
:mod:`sim.algorithms.recursive_doubling` gives.

:func:`halving_doubling_program` is the same schedule over any list of ranks as a step program
(:mod:`sim.program`), for the fast path; :mod:`sim.algorithms.hierarchical` runs it across hosts.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from ..program import Step, StepProgram
from ..runtime import Job
from .base import Algorithm
from .common import Fold, core_size, exchange, folded
from .registry import register

__all__ = ["HalvingDoubling", "halving_doubling_program"]


@register
class HalvingDoubling(Algorithm):
    name = "halving-doubling"
    collective = "allreduce"
    summary = "Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive doubling"

    def segments(self, p: int) -> int:
        return Fold(p).core

    def closed_form_exact(self, p: int) -> bool:
        return p & (p - 1) == 0

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        """The same schedule as :meth:`run`: :func:`halving_doubling_program` over ranks 0..p-1."""
        if p == 1:
            return None
        return halving_doubling_program(list(range(p)), nbytes, p)

    def run(self, job: Job) -> Generator[Any, Any, None]:
        fold = Fold(job.p)
        size = fold.core
        block = job.nbytes / size

        def core(rank: int, new: int) -> Generator[Any, Any, None]:
            lo, hi, mask, tag = 0, size, size >> 1, 2
            while mask:  # recursive halving: keep half of what is left, reduce it
                mid = (lo + hi) // 2
                keep, give = ((mid, hi), (lo, mid)) if new & mask else ((lo, mid), (mid, hi))
                half = (hi - lo) // 2 * block
                got = yield from exchange(job, rank, fold.rank_of(new ^ mask), half, slice(*give), tag)
                yield from job.combine(rank, slice(*keep), got, half)
                (lo, hi), mask, tag = keep, mask >> 1, tag + 1
            mask = 1
            while mask < size:  # recursive doubling: swap everything held
                width = hi - lo
                theirs = (lo - width, lo) if new & mask else (hi, hi + width)
                got = yield from exchange(job, rank, fold.rank_of(new ^ mask), width * block, slice(lo, hi), tag)
                job.data.put(rank, slice(*theirs), got)
                lo, hi, mask, tag = min(lo, theirs[0]), max(hi, theirs[1]), mask << 1, tag + 1

        whole = slice(None)
        yield folded(
            job,
            fold,
            core,
            seg_in=lambda _r: whole,
            bytes_in=job.nbytes,
            reduce_in=True,
            seg_out=lambda _r: whole,
            bytes_out=job.nbytes,
        )

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        fold = Fold(p)
        q = fold.core
        core = 2 * fold.steps * alpha + 2 * (q - 1) / q * n * beta + (q - 1) / q * n * gamma
        if fold.extra:
            core += 2 * (alpha + n * beta) + n * gamma
        return core


def halving_doubling_program(order: list[int], nbytes: float, endpoints: int, seg_off: int = 0) -> StepProgram:
    """Rabenseifner's all-reduce over ``order`` as a step program: recursive halving reduce-scatter,
    then recursive doubling all-gather, on q' blocks of nbytes/q' (q' = the largest power of two <=
    len(order)). With r = len(order) - q' extra participants, MPICH's folding comes first: position 2i
    sends its buffer to 2i+1 (i < r), which reduces it and takes part in the core; at the end 2i+1 sends
    the result back to 2i."""
    full = list(order)
    q = core_size(len(full))
    extra = len(full) - q
    core = [full[2 * i + 1] for i in range(extra)] + full[2 * extra :]
    order = core
    block = nbytes / q
    everything = dict(endpoints=endpoints, seg=seg_off, seg_width=q)
    fold_in = (
        Step.make(
            [full[2 * i] for i in range(extra)], [full[2 * i + 1] for i in range(extra)], nbytes, nbytes, **everything
        )
        if extra
        else None
    )
    nodes = np.asarray(order, dtype=np.int64)
    j = np.arange(q)
    lo, hi = np.zeros(q, dtype=np.int64), np.full(q, q, dtype=np.int64)  # the blocks each position holds
    phases: list[tuple[Step, int]] = []
    mask = q >> 1
    while mask:  # recursive halving: send the half the partner keeps, reduce the half received
        mid = (lo + hi) // 2
        upper = (j & mask) != 0  # keeps the upper half, gives the lower
        give_lo, give_hi = np.where(upper, lo, mid), np.where(upper, mid, hi)
        width = give_hi - give_lo
        half = width * block
        step = Step.make(
            nodes, nodes[j ^ mask], half, half, endpoints=endpoints, seg=seg_off + give_lo, seg_width=width
        )
        phases.append((step, 1))
        lo, hi = np.where(upper, mid, lo), np.where(upper, hi, mid)
        mask >>= 1
    mask = 1
    while mask < q:  # recursive doubling: swap everything held, store what arrives
        width = hi - lo
        step = Step.make(
            nodes, nodes[j ^ mask], width * block, 0.0, endpoints=endpoints, seg=seg_off + lo, seg_width=width
        )
        phases.append((step, 1))
        lo, hi = np.minimum(lo, lo[j ^ mask]), np.maximum(hi, hi[j ^ mask])
        mask <<= 1
    if fold_in is not None:
        fold_out = Step.make(
            [full[2 * i + 1] for i in range(extra)], [full[2 * i] for i in range(extra)], nbytes, 0.0, **everything
        )
        phases = [(fold_in, 1), *phases, (fold_out, 1)]
    return StepProgram(endpoints, tuple(phases))
