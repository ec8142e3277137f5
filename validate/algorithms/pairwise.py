"""All-to-all ``pairwise``: in step ``s = 1 .. p-1`` rank ``r`` sends its block for ``r + s`` and
receives the block from ``r - s`` -- the simulator's ``pairwise``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..schedule import Copy, Op, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["PairwiseAllToAll"]


@register
class PairwiseAllToAll(RealAlgorithm):
    name = "pairwise"
    collective = "alltoall"
    summary = "p-1 steps; in step s send to r+s, receive from r-s"

    def plan(self, task: Task) -> Callable[[], None]:
        p, me = task.p, task.rank
        src, dst = torch.tensor_split(task.inp, p), torch.tensor_split(task.out, p)
        steps = [Op(before=(Copy(dst[me], src[me]),))]
        for s in range(1, p):
            to, frm = (me + s) % p, (me - s) % p
            steps.append(Op(sends=((src[to], to, s),), recvs=((dst[frm], frm, s),)))
        return schedule_plan(task.comm, steps)
