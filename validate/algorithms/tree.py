"""Binary-tree all-reduce, pipelined in ``chunks`` pieces: a reduce up the tree, then a broadcast down
it -- the simulator's ``tree`` (``sim/algorithms/tree.py``), step for step.

The tree is the binary heap on ranks counted from the root (``--root``, rank 0 by default): relative
rank ``j``'s children are ``2j+1`` and ``2j+2``. The buffer is cut into ``K`` pieces. Every rank first
runs the reduce: in step ``c`` it receives piece ``c`` from each child (adding each as it arrives) while
its send of piece ``c-1`` to its parent completes; then the broadcast: in step ``c`` it receives piece
``c`` from its parent while its sends of piece ``c-1`` to its children complete. So a rank sends a piece
once it has it and its previous piece has arrived -- the simulator's rule. ``chunks=1`` is the
unpipelined tree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from sim.schema import Chunks, Spec

from ..schedule import Op, schedule_plan
from .base import RealAlgorithm, Task
from .common import pipeline_ops
from .registry import register

__all__ = ["Tree", "TreeAllReduce", "TreeOptions", "busy", "heap_tree", "tree_allreduce_ops", "tree_ops"]


@dataclass(frozen=True)
class Tree:
    """A rooted tree over ranks: ``parent[r]`` (None at the root) and ``children[r]``."""

    root: int
    parent: dict[int, int | None]
    children: dict[int, list[int]]


def heap_tree(order: Sequence[int]) -> Tree:
    """The binary heap over ``order``: ``order[0]`` is the root, ``order[j]`` has children
    ``order[2j+1]`` and ``order[2j+2]``."""
    q = len(order)
    parent = {order[j]: (order[(j - 1) // 2] if j else None) for j in range(q)}
    children = {order[j]: [order[c] for c in (2 * j + 1, 2 * j + 2) if c < q] for j in range(q)}
    return Tree(order[0], parent, children)


def tree_ops(tree: Tree, me: int, pieces: Sequence[torch.Tensor], tag: int) -> list[Op]:
    """``me``'s reduce then broadcast over ``tree`` (tags ``tag .. tag + 2K - 1``); ``2(K + 1)`` steps,
    some possibly empty, for every rank."""
    up = tree.parent[me]
    kids = tree.children[me]
    parent = [up] if up is not None else []
    return pipeline_ops(pieces, kids, parent, tag, reduce=True) + pipeline_ops(
        pieces, parent, kids, tag + len(pieces), reduce=False
    )


def tree_allreduce_ops(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0, chunks: int = 1) -> list[Op]:
    """Rank ``order[i]``'s pipelined binary-tree all-reduce of ``buf`` among ``order`` (root ``order[0]``)."""
    return [s for s in tree_ops(heap_tree(order), order[i], torch.tensor_split(buf, chunks), tag) if busy(s)]


def busy(step: Op) -> bool:
    """Whether a step does anything."""
    return bool(step.sends or step.recvs or step.after or step.before)


class TreeOptions(Spec):
    """``chunks``: pieces the buffer is pipelined in (1 = unpipelined)."""

    chunks: Chunks = 1


@register
class TreeAllReduce(RealAlgorithm):
    name = "tree"
    collective = "allreduce"
    Options = TreeOptions
    summary = "binary tree (heap from the root): pipelined reduce, then pipelined broadcast (chunks=K)"

    def plan(self, task: Task) -> Callable[[], None]:
        order = [(task.root + j) % task.p for j in range(task.p)]
        chunks = self.options.chunks  # type: ignore[attr-defined]
        return schedule_plan(task.comm, tree_allreduce_ops(order, order.index(task.rank), task.out, 0, chunks))
