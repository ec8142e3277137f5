"""Send/recv ``direct``: every rank sends its buffer to ``r + 1`` and receives from ``r - 1`` (nccl-tests'
sendrecv) -- the simulator's ``direct``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..schedule import Copy, Op, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["DirectSendRecv"]


@register
class DirectSendRecv(RealAlgorithm):
    name = "direct"
    collective = "sendrecv"
    summary = "every rank sends its buffer to r+1 and receives from r-1"

    def plan(self, task: Task) -> Callable[[], None]:
        p, me = task.p, task.rank
        if p == 1:
            return schedule_plan(task.comm, [Op(before=(Copy(task.out, task.inp),))])
        step = Op(sends=((task.inp, (me + 1) % p, 0),), recvs=((task.out, (me - 1) % p, 0),))
        return schedule_plan(task.comm, [step])
