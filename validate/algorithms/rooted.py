"""Point-to-point broadcast, reduce, gather and scatter (root = ``--root``, rank 0 by default).

* broadcast ``binomial-tree`` (MPICH): relative rank ``v = rank - root``; ``v`` receives from
  ``v - 2^b`` (``2^b`` its lowest set bit), then sends to ``v + 2^c`` for ``c = b-1 .. 0``, largest
  subtree first; ``ring``: a chain root, root+1, ... pipelined in ``chunks`` pieces (a rank forwards a
  piece once it has it and its previous forward has arrived); ``flat``: the root sends to every rank
  at once.
* reduce ``binomial-tree``: the broadcast tree upside down (``v`` adds what ``v + 2^c`` sends for
  ``c = 0, 1, ...`` below its lowest set bit, then sends to ``v - 2^b``); ``ring``: a ring from the root
  reduce-scatters, then every rank sends its reduced chunk straight to the root, as gloo does.
* gather and scatter ``flat``: every block goes straight to (from) the root, all at once;
  ``binomial-tree``: the reduce's (broadcast's) tree, a rank passing on the blocks of its whole subtree
  in one message. Subtrees are ranges of relative ranks, so blocks travel in a staging buffer in
  relative order (a copy at the root and at each leaf when the root is not rank 0).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sim.schema import Chunks, Spec

from ..schedule import Add, Copy, Step, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register
from .ring import ring_reduce_scatter
from .tree import pipeline

__all__ = ["binomial_broadcast", "binomial_reduce"]


def _lowbit(v: int, p: int) -> int:
    """``v``'s lowest set bit (for the root, the first power of two >= p)."""
    mask = 1
    while mask < p and not v & mask:
        mask <<= 1
    return mask


def binomial_broadcast(p: int, rank: int, root: int, buf: torch.Tensor) -> list[Step]:
    """MPICH's binomial-tree broadcast of ``buf`` from ``root``; tags are the edges' distances."""
    v = (rank - root) % p
    low = _lowbit(v, p)
    steps = [Step(recvs=((buf, (v - low + root) % p, low),))] if v else []
    mask = low >> 1
    while mask:
        if v + mask < p:
            steps.append(Step(sends=((buf, (v + mask + root) % p, mask),)))
        mask >>= 1
    return steps


def binomial_reduce(p: int, rank: int, root: int, buf: torch.Tensor) -> list[Step]:
    """MPICH's binomial-tree reduce of ``buf`` to ``root`` (in place)."""
    v = (rank - root) % p
    tmp = torch.empty_like(buf)
    steps, mask = [], 1
    while mask < p:
        if v & mask:
            steps.append(Step(sends=((buf, (v - mask + root) % p, mask),)))
            break
        if v + mask < p:
            steps.append(Step(recvs=((tmp, (v + mask + root) % p, mask),), after=(Add(buf, buf, tmp),)))
        mask <<= 1
    return steps


class ChunksOptions(Spec):
    """``chunks``: pieces the pipelined chain moves the buffer in."""

    chunks: Chunks = 8


@register
class BinomialBroadcast(RealAlgorithm):
    name = "binomial-tree"
    collective = "broadcast"
    summary = "MPICH binomial tree: log2(p) rounds, largest subtree first"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, binomial_broadcast(task.p, task.rank, task.root, task.out))


@register
class RingBroadcast(RealAlgorithm):
    name = "ring"
    collective = "broadcast"
    Options = ChunksOptions
    summary = "a chain from the root, pipelined in `chunks` pieces"

    def plan(self, task: Task) -> Callable[[], None]:
        p, i = task.p, (task.rank - task.root) % task.p
        pieces = torch.tensor_split(task.out, self.options.chunks)  # type: ignore[attr-defined]
        prev = [(task.rank - 1) % p] if i > 0 else []
        nxt = [(task.rank + 1) % p] if i < p - 1 else []
        return schedule_plan(task.comm, pipeline(pieces, prev, nxt, 0, reduce=False))


@register
class FlatBroadcast(RealAlgorithm):
    name = "flat"
    collective = "broadcast"
    summary = "the root sends the buffer to every rank at once"

    def plan(self, task: Task) -> Callable[[], None]:
        others = [r for r in range(task.p) if r != task.root]
        if task.rank == task.root:
            steps = [Step(sends=tuple((task.out, r, 0) for r in others))]
        else:
            steps = [Step(recvs=((task.out, task.root, 0),))]
        return schedule_plan(task.comm, steps if others else [])


@register
class BinomialReduce(RealAlgorithm):
    name = "binomial-tree"
    collective = "reduce"
    summary = "MPICH binomial tree, leaves first"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, binomial_reduce(task.p, task.rank, task.root, task.out))


@register
class RingReduce(RealAlgorithm):
    name = "ring"
    collective = "reduce"
    summary = "ring reduce-scatter, then every rank sends its reduced chunk to the root (as gloo)"

    def plan(self, task: Task) -> Callable[[], None]:
        p, root = task.p, task.root
        order = [(root + j) % p for j in range(p)]  # the ring starts at the root
        i = order.index(task.rank)
        chunks = torch.tensor_split(task.out, p)
        steps = ring_reduce_scatter(order, i, chunks, 0)
        if p > 1 and i:
            steps.append(Step(sends=((chunks[(i + 1) % p], root, p),)))
        elif p > 1:
            steps.append(Step(recvs=tuple((chunks[(j + 1) % p], order[j], p) for j in range(1, p))))
        return schedule_plan(task.comm, steps)


@register
class FlatGather(RealAlgorithm):
    name = "flat"
    collective = "gather"
    summary = "every rank sends its block to the root at once"

    def plan(self, task: Task) -> Callable[[], None]:
        if task.rank != task.root:
            return schedule_plan(task.comm, [Step(sends=((task.inp, task.root, 0),))])
        blocks = torch.tensor_split(task.out, task.p)
        others = [r for r in range(task.p) if r != task.root]
        step = Step(before=(Copy(blocks[task.root], task.inp),), recvs=tuple((blocks[r], r, 0) for r in others))
        return schedule_plan(task.comm, [step])


@register
class FlatScatter(RealAlgorithm):
    name = "flat"
    collective = "scatter"
    summary = "the root sends every rank its block at once"

    def plan(self, task: Task) -> Callable[[], None]:
        if task.rank != task.root:
            return schedule_plan(task.comm, [Step(recvs=((task.out, task.root, 0),))])
        blocks = torch.tensor_split(task.inp, task.p)
        others = [r for r in range(task.p) if r != task.root]
        step = Step(before=(Copy(task.out, blocks[task.root]),), sends=tuple((blocks[r], r, 0) for r in others))
        return schedule_plan(task.comm, [step])


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
        steps = [Step(before=(Copy(stage[rel * block : (rel + 1) * block], task.inp),))]
        held, mask = 1, 1
        while mask < p:
            if rel & mask:
                parent = (rel - mask + task.root) % p
                steps.append(Step(sends=((stage[rel * block : (rel + held) * block], parent, 0),)))
                break
            if rel + mask < p:
                size = min(mask, p - rel - mask)
                child = (rel + mask + task.root) % p
                steps.append(Step(recvs=((stage[(rel + mask) * block : (rel + mask + size) * block], child, 0),)))
                held += size
            mask <<= 1
        if rel == 0:
            steps.append(Step(after=_rotate(task, stage, block, into_out=True)))
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
            steps = [Step(recvs=((stage[rel * block : (rel + min(low, p - rel)) * block], parent, 0),))]
        else:
            steps = [Step(before=_rotate(task, stage, block, into_out=False))]
        mask = low >> 1
        while mask:
            if rel + mask < p:
                size = min(mask, p - rel - mask)
                child = (rel + mask + task.root) % p
                steps.append(Step(sends=((stage[(rel + mask) * block : (rel + mask + size) * block], child, 0),)))
            mask >>= 1
        steps.append(Step(after=(Copy(task.out, stage[rel * block : (rel + 1) * block]),)))
        return schedule_plan(task.comm, steps)
