"""Point-to-point all-gather, reduce-scatter, all-to-all and send/recv.

* allgather ``ring``: each rank puts its block in place, then the ring all-gather of
  :mod:`validate.algorithms.ring`; ``recursive-doubling`` (``p`` a power of two): at distance 1, 2, 4, ...
  exchange all blocks gathered so far with rank XOR distance.
* reducescatter ``ring``: the ring reduce-scatter, out of place (the input is read, partial sums travel
  in a scratch buffer, rank ``r`` ends with block ``r``).
* alltoall ``pairwise``: in step ``s = 1 .. p-1`` rank ``r`` sends its block for ``r + s`` and receives
  the block from ``r - s``.
* sendrecv ``direct``: every rank sends its buffer to ``r + 1`` and receives from ``r - 1``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..schedule import Copy, Step, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register
from .ring import ring_allgather, ring_reduce_scatter

__all__ = ["PairwiseAllToAll"]


@register
class RingAllGather(RealAlgorithm):
    name = "ring"
    collective = "allgather"
    summary = "blocks passed around a ring, p-1 steps"

    def plan(self, task: Task) -> Callable[[], None]:
        blocks = torch.tensor_split(task.out, task.p)
        steps = [Step(before=(Copy(blocks[task.rank], task.inp),))]
        steps += ring_allgather(range(task.p), task.rank, blocks, 0, first=0)
        return schedule_plan(task.comm, steps)


@register
class RecursiveDoublingAllGather(RealAlgorithm):
    name = "recursive-doubling"
    collective = "allgather"
    summary = "log2(p) exchanges of everything gathered so far with rank XOR 2^k (p a power of two)"

    def check(self, p: int, gpus_per_host: int = 1) -> None:
        if p & (p - 1):
            raise self.refuse(f"needs a power-of-two number of ranks, got {p}")

    def plan(self, task: Task) -> Callable[[], None]:
        self.check(task.p)
        me, b = task.rank, task.inp.numel()
        steps = [Step(before=(Copy(task.out[me * b : (me + 1) * b], task.inp),))]
        mask = 1
        while mask < task.p:
            partner, base = me ^ mask, me & ~(mask - 1)
            theirs = partner & ~(mask - 1)
            steps.append(
                Step(
                    sends=((task.out[base * b : (base + mask) * b], partner, mask),),
                    recvs=((task.out[theirs * b : (theirs + mask) * b], partner, mask),),
                )
            )
            mask <<= 1
        return schedule_plan(task.comm, steps)


@register
class RingReduceScatter(RealAlgorithm):
    name = "ring"
    collective = "reducescatter"
    summary = "ring reduce-scatter, p-1 steps of n/p, out of place"

    def plan(self, task: Task) -> Callable[[], None]:
        blocks = torch.tensor_split(task.inp, task.p)
        return schedule_plan(
            task.comm, ring_reduce_scatter(range(task.p), task.rank, blocks, 0, offset=-1, out=task.out)
        )


@register
class PairwiseAllToAll(RealAlgorithm):
    name = "pairwise"
    collective = "alltoall"
    summary = "p-1 steps; in step s send to r+s, receive from r-s"

    def plan(self, task: Task) -> Callable[[], None]:
        p, me = task.p, task.rank
        src, dst = torch.tensor_split(task.inp, p), torch.tensor_split(task.out, p)
        steps = [Step(before=(Copy(dst[me], src[me]),))]
        for s in range(1, p):
            to, frm = (me + s) % p, (me - s) % p
            steps.append(Step(sends=((src[to], to, s),), recvs=((dst[frm], frm, s),)))
        return schedule_plan(task.comm, steps)


@register
class DirectSendRecv(RealAlgorithm):
    name = "direct"
    collective = "sendrecv"
    summary = "every rank sends its buffer to r+1 and receives from r-1"

    def plan(self, task: Task) -> Callable[[], None]:
        p, me = task.p, task.rank
        if p == 1:
            return schedule_plan(task.comm, [Step(before=(Copy(task.out, task.inp),))])
        step = Step(sends=((task.inp, (me + 1) % p, 0),), recvs=((task.out, (me - 1) % p, 0),))
        return schedule_plan(task.comm, [step])
