"""Recursive-doubling all-reduce: at distance 1, 2, 4, ... every rank exchanges its whole buffer with
its partner (rank XOR distance) and adds what it receives -- ``log2(p)·α + log2(p)·n·β + log2(p)·n·γ``.
Non-powers of two are folded first exactly as in :mod:`validate.algorithms.halving_doubling` (MPICH).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..schedule import Add, Step, schedule_plan
from .base import RealAlgorithm, Task
from .halving_doubling import fold
from .registry import register

__all__ = ["RecursiveDoublingAllReduce", "recursive_doubling_allreduce"]


def recursive_doubling_allreduce(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0) -> list[Step]:
    """Rank ``order[i]``'s recursive-doubling all-reduce of ``buf`` among ``order``."""
    f = fold(order, i, buf, tag)
    if f.new_rank is None:
        return f.pre + f.post
    tmp = torch.empty_like(buf)
    steps = []
    mask, t = 1, tag + 2
    while mask < f.pof2:
        partner = f.real(f.new_rank ^ mask)
        steps.append(Step(sends=((buf, partner, t),), recvs=((tmp, partner, t),), after=(Add(buf, buf, tmp),)))
        mask, t = mask << 1, t + 1
    return f.pre + steps + f.post


@register
class RecursiveDoublingAllReduce(RealAlgorithm):
    name = "recursive-doubling"
    collective = "allreduce"
    summary = "log2(p) full-buffer exchanges with rank XOR 2^k, adding each"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, recursive_doubling_allreduce(range(task.p), task.rank, task.out))
