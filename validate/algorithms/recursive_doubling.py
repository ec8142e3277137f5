"""Recursive doubling -- the simulator's ``recursive-doubling``.

* allreduce: at distance 1, 2, 4, ... every rank exchanges its whole buffer with its partner (rank XOR
  distance) and adds what it receives -- ``log2(p)·α + log2(p)·n·β + log2(p)·n·γ``. Non-powers of two
  are folded first exactly as in :mod:`validate.algorithms.halving_doubling` (MPICH's fold,
  :func:`validate.algorithms.common.fold`).
* allgather: at distance 1, 2, 4, ... exchange all blocks gathered so far with rank XOR distance; for
  ``p`` not a power of two, MPICH's fold: the even rank of each of the ``2(p-p')`` lowest pairs hands
  its block to the odd one and gets the other ``p-1`` blocks back in one message at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..schedule import Add, Copy, Op, schedule_plan
from .base import RealAlgorithm, Task
from .common import fold
from .registry import register

__all__ = ["RecursiveDoublingAllGather", "RecursiveDoublingAllReduce", "recursive_doubling_allreduce_ops"]


def recursive_doubling_allreduce_ops(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0) -> list[Op]:
    """Rank ``order[i]``'s recursive-doubling all-reduce of ``buf`` among ``order``."""
    f = fold(order, i, buf, tag)
    if f.new_rank is None:
        return f.pre + f.post
    tmp = torch.empty_like(buf)
    steps = []
    mask, t = 1, tag + 2
    while mask < f.pof2:
        partner = f.real(f.new_rank ^ mask)
        steps.append(Op(sends=((buf, partner, t),), recvs=((tmp, partner, t),), after=(Add(buf, buf, tmp),)))
        mask, t = mask << 1, t + 1
    return f.pre + steps + f.post


@register
class RecursiveDoublingAllReduce(RealAlgorithm):
    name = "recursive-doubling"
    collective = "allreduce"
    summary = "log2(p) full-buffer exchanges with rank XOR 2^k, adding each"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, recursive_doubling_allreduce_ops(range(task.p), task.rank, task.out))


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

        steps = [Op(before=(Copy(out[me * b : (me + 1) * b], task.inp),))]
        if me < 2 * extra and me % 2 == 0:  # sits out: hand over its block, get all the others back
            stage = torch.empty((p - 1) * b, dtype=out.dtype, device=out.device)
            steps.append(Op(sends=((task.inp, me + 1, 0),)))
            back = (Copy(out[: me * b], stage[: me * b]), Copy(out[(me + 1) * b :], stage[me * b :]))
            steps.append(Op(recvs=((stage, me + 1, 1),), after=back))
            return schedule_plan(task.comm, steps)
        if me < 2 * extra:
            steps.append(Op(recvs=((out[(me - 1) * b : me * b], me - 1, 0),)))
        new = me // 2 if me < 2 * extra else me - extra
        mask, t = 1, 2
        while mask < pof2:
            peer = new ^ mask
            mine, theirs = held(new & ~(mask - 1), mask), held(peer & ~(mask - 1), mask)
            partner = 2 * peer + 1 if peer < extra else peer + extra
            steps.append(
                Op(
                    sends=((out[mine[0] * b : mine[1] * b], partner, t),),
                    recvs=((out[theirs[0] * b : theirs[1] * b], partner, t),),
                )
            )
            mask, t = mask << 1, t + 1
        if me < 2 * extra:  # fold out: every block but the even rank's own, in one message
            e = me - 1
            stage = torch.empty((p - 1) * b, dtype=out.dtype, device=out.device)
            pack = (Copy(stage[: e * b], out[: e * b]), Copy(stage[e * b :], out[(e + 1) * b :]))
            steps.append(Op(before=pack, sends=((stage, e, 1),)))
        return schedule_plan(task.comm, steps)
