"""Master-worker all-reduce: every worker sends its whole buffer to the master at once, the master adds
them up (in rank order) and sends the sum back to every worker at once -- the simulator's
``master-worker`` and model.md's ``2α + 2(p-1)·n·β + (p-1)·n·γ``. The master is ``--root`` (rank 0).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..schedule import Add, Op, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["MasterWorkerAllReduce"]


@register
class MasterWorkerAllReduce(RealAlgorithm):
    name = "master-worker"
    collective = "allreduce"
    summary = "all workers send n to the master at once; it reduces and sends the sum back to all at once"

    def plan(self, task: Task) -> Callable[[], None]:
        buf, me, master = task.out, task.rank, task.root
        if task.p == 1:
            return schedule_plan(task.comm, [])
        if me != master:
            steps = [Op(sends=((buf, master, 0),)), Op(recvs=((buf, master, 1),))]
        else:
            workers = [w for w in range(task.p) if w != master]
            tmps = {w: torch.empty_like(buf) for w in workers}
            steps = [
                Op(recvs=tuple((tmps[w], w, 0) for w in workers), after=tuple(Add(buf, buf, tmps[w]) for w in workers)),
                Op(sends=tuple((buf, w, 1) for w in workers)),
            ]
        return schedule_plan(task.comm, steps)
