"""Recursive halving-doubling all-reduce (Rabenseifner), with MPICH's handling of other rank counts.

With ``p'`` the largest power of two <= ``p`` and ``r = p - p'``: first the ``2r`` lowest ranks pair
up -- each even one sends its whole buffer to the odd one above it, which adds it, and sits out (the
standard non-power-of-two step). The ``p'`` ranks left (new ranks ``0..p'-1``) then do a reduce-scatter
by recursive halving: at distance ``p'/2, p'/4, ..., 1`` each exchanges half of the range of blocks it
still holds with its partner (new rank XOR distance) -- keeping the lower half when that bit of its new
rank is clear -- and adds what it receives, until new rank ``x`` holds block ``x`` reduced; an
all-gather by recursive doubling at distance ``1, 2, ...`` swaps everything held, and the odd ranks
finally send the result to the even ones that sat out -- the simulator's ``halving-doubling``. On ``p``
a power of two: ``2·log2(p)·α + 2·(p-1)/p·n·β + (p-1)/p·n·γ``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate

import torch

from ..schedule import Add, Op, schedule_plan
from .base import RealAlgorithm, Task
from .common import fold
from .registry import register

__all__ = ["HalvingDoublingAllReduce", "halving_doubling_allreduce_ops"]


def halving_doubling_allreduce_ops(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0) -> list[Op]:
    """Rank ``order[i]``'s Rabenseifner all-reduce of ``buf`` among ``order``."""
    f = fold(order, i, buf, tag)
    if f.new_rank is None:
        return f.pre + f.post
    sizes = [b.numel() for b in torch.tensor_split(buf, f.pof2)]
    start = [0, *accumulate(sizes)]

    def blocks(lo: int, hi: int) -> torch.Tensor:
        return buf[start[lo] : start[hi]]

    tmp = torch.empty(max(sizes) * max(f.pof2 // 2, 1), dtype=buf.dtype, device=buf.device)
    new, steps, t = f.new_rank, [], tag + 2
    lo, hi, mask = 0, f.pof2, f.pof2 >> 1
    while mask:  # recursive halving: keep half of the blocks still held (the lower half when the bit is clear)
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if new & mask else ((lo, mid), (mid, hi))
        partner, kept = f.real(new ^ mask), blocks(*keep)
        got = tmp[: kept.numel()]
        steps.append(Op(sends=((blocks(*give), partner, t),), recvs=((got, partner, t),), each=(Add(kept, kept, got),)))
        (lo, hi), mask, t = keep, mask >> 1, t + 1
    mask = 1
    while mask < f.pof2:  # recursive doubling: swap everything held
        width = hi - lo
        theirs = (lo - width, lo) if new & mask else (hi, hi + width)
        partner = f.real(new ^ mask)
        steps.append(Op(sends=((blocks(lo, hi), partner, t),), recvs=((blocks(*theirs), partner, t),)))
        lo, hi, mask, t = min(lo, theirs[0]), max(hi, theirs[1]), mask << 1, t + 1
    return f.pre + steps + f.post


@register
class HalvingDoublingAllReduce(RealAlgorithm):
    name = "halving-doubling"
    collective = "allreduce"
    summary = "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling all-gather (MPICH)"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, halving_doubling_allreduce_ops(range(task.p), task.rank, task.out))
