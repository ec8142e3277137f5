"""Flat broadcast, gather and scatter (root = ``--root``, rank 0 by default): every message goes
straight from (to) the root, all at once -- the simulator's ``flat``.

* broadcast ``flat``: the root sends the buffer to every rank at once.
* gather and scatter ``flat``: every block goes straight to (from) the root, all at once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..schedule import Copy, Op, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["FlatBroadcast", "FlatGather", "FlatScatter"]


@register
class FlatBroadcast(RealAlgorithm):
    name = "flat"
    collective = "broadcast"
    summary = "the root sends the buffer to every rank at once"

    def plan(self, task: Task) -> Callable[[], None]:
        others = [r for r in range(task.p) if r != task.root]
        if task.rank == task.root:
            steps = [Op(sends=tuple((task.out, r, 0) for r in others))]
        else:
            steps = [Op(recvs=((task.out, task.root, 0),))]
        return schedule_plan(task.comm, steps if others else [])


@register
class FlatGather(RealAlgorithm):
    name = "flat"
    collective = "gather"
    summary = "every rank sends its block to the root at once"

    def plan(self, task: Task) -> Callable[[], None]:
        if task.rank != task.root:
            return schedule_plan(task.comm, [Op(sends=((task.inp, task.root, 0),))])
        blocks = torch.tensor_split(task.out, task.p)
        others = [r for r in range(task.p) if r != task.root]
        step = Op(before=(Copy(blocks[task.root], task.inp),), recvs=tuple((blocks[r], r, 0) for r in others))
        return schedule_plan(task.comm, [step])


@register
class FlatScatter(RealAlgorithm):
    name = "flat"
    collective = "scatter"
    summary = "the root sends every rank its block at once"

    def plan(self, task: Task) -> Callable[[], None]:
        if task.rank != task.root:
            return schedule_plan(task.comm, [Op(recvs=((task.out, task.root, 0),))])
        blocks = torch.tensor_split(task.inp, task.p)
        others = [r for r in range(task.p) if r != task.root]
        step = Op(before=(Copy(task.out, blocks[task.root]),), sends=tuple((blocks[r], r, 0) for r in others))
        return schedule_plan(task.comm, [step])
