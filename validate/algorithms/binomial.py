"""Binomial-tree broadcast, reduce, gather and scatter (root = ``--root``, rank 0 by default) -- the
simulator's ``binomial-tree``.

* broadcast (MPICH): relative rank ``v = rank - root``; ``v`` receives from ``v - 2^b`` (``2^b`` its
  lowest set bit), then sends to ``v + 2^c`` for ``c = b-1 .. 0``, largest subtree first.
* reduce: the broadcast tree upside down (``v`` adds what ``v + 2^c`` sends for ``c = 0, 1, ...`` below
  its lowest set bit, then sends to ``v - 2^b``).
* gather and scatter: the reduce's (broadcast's) tree, a rank passing on the blocks of its whole subtree
  in one message. Subtrees are ranges of relative ranks, so blocks travel in a staging buffer in
  relative order (a copy at the root and at each leaf when the root is not rank 0).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..schedule import Add, Copy, Op, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = [
    "BinomialBroadcast",
    "BinomialGather",
    "BinomialReduce",
    "BinomialScatter",
    "binomial_broadcast_ops",
    "binomial_reduce_ops",
]


def _lowbit(v: int, p: int) -> int:
    """``v``'s lowest set bit (for the root, the first power of two >= p)."""
    mask = 1
    while mask < p and not v & mask:
        mask <<= 1
    return mask


def binomial_broadcast_ops(p: int, rank: int, root: int, buf: torch.Tensor) -> list[Op]:
    """MPICH's binomial-tree broadcast of ``buf`` from ``root``; tags are the edges' distances."""
    v = (rank - root) % p
    low = _lowbit(v, p)
    steps = [Op(recvs=((buf, (v - low + root) % p, low),))] if v else []
    mask = low >> 1
    while mask:
        if v + mask < p:
            steps.append(Op(sends=((buf, (v + mask + root) % p, mask),)))
        mask >>= 1
    return steps


def binomial_reduce_ops(p: int, rank: int, root: int, buf: torch.Tensor) -> list[Op]:
    """MPICH's binomial-tree reduce of ``buf`` to ``root`` (in place)."""
    v = (rank - root) % p
    tmp = torch.empty_like(buf)
    steps, mask = [], 1
    while mask < p:
        if v & mask:
            steps.append(Op(sends=((buf, (v - mask + root) % p, mask),)))
            break
        if v + mask < p:
            steps.append(Op(recvs=((tmp, (v + mask + root) % p, mask),), after=(Add(buf, buf, tmp),)))
        mask <<= 1
    return steps


@register
class BinomialBroadcast(RealAlgorithm):
    name = "binomial-tree"
    collective = "broadcast"
    summary = "MPICH binomial tree: log2(p) rounds, largest subtree first"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, binomial_broadcast_ops(task.p, task.rank, task.root, task.out))


@register
class BinomialReduce(RealAlgorithm):
    name = "binomial-tree"
    collective = "reduce"
    summary = "MPICH binomial tree, leaves first"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, binomial_reduce_ops(task.p, task.rank, task.root, task.out))


def _staging(task: Task, block: int) -> torch.Tensor:
    return torch.empty(task.p * block, dtype=task.inp.dtype, device=task.inp.device)


def _rotate(task: Task, rel_buf: torch.Tensor, block: int, *, into_out: bool) -> tuple[Copy, ...]:
    """Copies between the root's staging buffer (relative order) and the rank-ordered buffer."""
    p, root = task.p, task.root
    head = (p - root) * block  # relative ranks 0 .. p-root-1 are ranks root .. p-1
    ranked = task.out if into_out else task.inp
    pairs = ((ranked[root * block :], rel_buf[:head]), (ranked[: root * block], rel_buf[head:]))
    return tuple(Copy(a, b) if into_out else Copy(b, a) for a, b in pairs if a.numel())


@register
class BinomialGather(RealAlgorithm):
    name = "binomial-tree"
    collective = "gather"
    summary = "binomial tree to the root, each rank passing on its subtree's blocks in one message"

    def plan(self, task: Task) -> Callable[[], None]:
        p, block = task.p, task.inp.numel()
        rel = (task.rank - task.root) % p
        stage = _staging(task, block)
        steps = [Op(before=(Copy(stage[rel * block : (rel + 1) * block], task.inp),))]
        held, mask = 1, 1
        while mask < p:
            if rel & mask:
                parent = (rel - mask + task.root) % p
                steps.append(Op(sends=((stage[rel * block : (rel + held) * block], parent, 0),)))
                break
            if rel + mask < p:
                size = min(mask, p - rel - mask)
                child = (rel + mask + task.root) % p
                steps.append(Op(recvs=((stage[(rel + mask) * block : (rel + mask + size) * block], child, 0),)))
                held += size
            mask <<= 1
        if rel == 0:
            steps.append(Op(after=_rotate(task, stage, block, into_out=True)))
        return schedule_plan(task.comm, steps)


@register
class BinomialScatter(RealAlgorithm):
    name = "binomial-tree"
    collective = "scatter"
    summary = "binomial tree from the root, each child getting its subtree's blocks in one message"

    def plan(self, task: Task) -> Callable[[], None]:
        p, block = task.p, task.out.numel()
        rel = (task.rank - task.root) % p
        stage = _staging(task, block)
        low = rel & -rel if rel else 1 << (p - 1).bit_length()
        if rel:
            parent = (rel - low + task.root) % p
            steps = [Op(recvs=((stage[rel * block : (rel + min(low, p - rel)) * block], parent, 0),))]
        else:
            steps = [Op(before=_rotate(task, stage, block, into_out=False))]
        mask = low >> 1
        while mask:
            if rel + mask < p:
                size = min(mask, p - rel - mask)
                child = (rel + mask + task.root) % p
                steps.append(Op(sends=((stage[(rel + mask) * block : (rel + mask + size) * block], child, 0),)))
            mask >>= 1
        steps.append(Op(after=(Copy(task.out, stage[rel * block : (rel + 1) * block]),)))
        return schedule_plan(task.comm, steps)
