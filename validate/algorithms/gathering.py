"""Point-to-point all-gather, reduce-scatter, all-to-all and send/recv.

* allgather ``ring``: each rank puts its block in place, then the ring all-gather of
  :mod:`validate.algorithms.ring`; ``recursive-doubling``: at distance 1, 2, 4, ... exchange all blocks
  gathered so far with rank XOR distance; for ``p`` not a power of two, MPICH's fold (as in
  :mod:`validate.algorithms.halving_doubling`): the even rank of each of the ``2(p-p')`` lowest pairs
  hands its block to the odd one and gets the other ``p-1`` blocks back in one message at the end.
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
    summary = "log2 p exchanges of everything gathered so far with rank XOR 2^k (MPICH's fold otherwise)"

    def plan(self, task: Task) -> Callable[[], None]:
        p, me, b = task.p, task.rank, task.inp.numel()
        pof2 = 1 << (p.bit_length() - 1)
        extra = p - pof2
        out = task.out

        def held(new: int, width: int) -> tuple[int, int]:
            """The block range new ranks ``new .. new + width - 1`` hold after the fold in."""
            first = 2 * new if new < extra else new + extra
            last = 2 * (new + width - 1) + 1 if new + width - 1 < extra else new + width - 1 + extra
            return first, last + 1

        steps = [Step(before=(Copy(out[me * b : (me + 1) * b], task.inp),))]
        if me < 2 * extra and me % 2 == 0:  # sits out: hand over its block, get all the others back
            stage = torch.empty((p - 1) * b, dtype=out.dtype, device=out.device)
            steps.append(Step(sends=((task.inp, me + 1, 0),)))
            back = (Copy(out[: me * b], stage[: me * b]), Copy(out[(me + 1) * b :], stage[me * b :]))
            steps.append(Step(recvs=((stage, me + 1, 1),), after=back))
            return schedule_plan(task.comm, steps)
        if me < 2 * extra:
            steps.append(Step(recvs=((out[(me - 1) * b : me * b], me - 1, 0),)))
        new = me // 2 if me < 2 * extra else me - extra
        mask, t = 1, 2
        while mask < pof2:
            peer = new ^ mask
            mine, theirs = held(new & ~(mask - 1), mask), held(peer & ~(mask - 1), mask)
            partner = 2 * peer + 1 if peer < extra else peer + extra
            steps.append(
                Step(
                    sends=((out[mine[0] * b : mine[1] * b], partner, t),),
                    recvs=((out[theirs[0] * b : theirs[1] * b], partner, t),),
                )
            )
            mask, t = mask << 1, t + 1
        if me < 2 * extra:  # fold out: every block but the even rank's own, in one message
            e = me - 1
            stage = torch.empty((p - 1) * b, dtype=out.dtype, device=out.device)
            pack = (Copy(stage[: e * b], out[: e * b]), Copy(stage[e * b :], out[(e + 1) * b :]))
            steps.append(Step(before=pack, sends=((stage, e, 1),)))
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
