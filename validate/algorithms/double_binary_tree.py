"""NCCL's double binary tree: two pipelined binary trees, each reducing and broadcasting half the buffer.

The trees are NCCL's (``src/graph/trees.cc``): the first is its "btree" -- a node's parent and
children follow from its lowest set bit, rank 0 at the top with a single child -- and the second is the
first mirrored (``p - 1 - r``) when ``p`` is even, or shifted by one rank when ``p`` is odd, so that
most nodes that are leaves in one tree are inner nodes in the other. Each half of the buffer runs the
reduce-then-broadcast steps of :mod:`validate.algorithms.tree` on its tree, both at once -- two
independent sequences on two threads of the rank, as the simulator's ``double-binary-tree`` runs two
processes per rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..schedule import Op, concurrent_plan
from .base import RealAlgorithm, Task
from .registry import register
from .tree import Tree, TreeOptions, busy, tree_ops

__all__ = ["DoubleBinaryTreeAllReduce", "nccl_btree", "nccl_dtree"]


def _btree_links(n: int, r: int) -> tuple[int, list[int]]:
    """NCCL's ``ncclGetBtree`` for index ``r`` of ``n``: (parent or -1, children)."""
    bit = 1
    while bit < n and not bit & r:
        bit <<= 1
    if r == 0:
        return -1, ([bit >> 1] if n > 1 else [])
    up = (r ^ bit) | (bit << 1)
    if up >= n:
        up = r ^ bit
    low = bit >> 1
    if low == 0:
        return up, []
    down0, down1 = r - low, r + low
    while down1 >= n:
        down1 = r + low if low else -1
        low >>= 1
    return up, [c for c in (down0, down1) if c >= 0 and c != r]


def _tree(n: int, index: Callable[[int], int], rank_of: Callable[[int], int], order: Sequence[int]) -> Tree:
    parent: dict[int, int | None] = {}
    children: dict[int, list[int]] = {}
    root = order[0]
    for j in range(n):
        up, down = _btree_links(n, index(j))
        me = order[j]
        parent[me] = None if up < 0 else order[rank_of(up)]
        children[me] = [order[rank_of(c)] for c in down]
        if up < 0:
            root = me
    return Tree(root, parent, children)


def nccl_btree(order: Sequence[int]) -> Tree:
    """NCCL's first tree over ``order`` (index ``j`` plays NCCL rank ``j``)."""
    n = len(order)
    return _tree(n, lambda j: j, lambda r: r, order)


def nccl_dtree(order: Sequence[int]) -> tuple[Tree, Tree]:
    """NCCL's two trees over ``order``."""
    n = len(order)
    if n % 2:  # shift by one
        second = _tree(n, lambda j: (j - 1) % n, lambda r: (r + 1) % n, order)
    else:  # mirror
        second = _tree(n, lambda j: n - 1 - j, lambda r: n - 1 - r, order)
    return nccl_btree(order), second


def dbt_sequences(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0, chunks: int = 1) -> list[list[Op]]:
    """Rank ``order[i]``'s two step sequences (one per tree) of a double-binary-tree all-reduce of
    ``buf`` among ``order``: tree ``t`` takes half ``t`` of the buffer in ``chunks`` pieces, with tags
    from ``tag + 2·chunks·t``."""
    halves = torch.tensor_split(buf, 2)
    return [
        [s for s in tree_ops(tree, order[i], torch.tensor_split(half, chunks), tag + 2 * chunks * t) if busy(s)]
        for t, (tree, half) in enumerate(zip(nccl_dtree(order), halves, strict=True))
    ]


@register
class DoubleBinaryTreeAllReduce(RealAlgorithm):
    name = "double-binary-tree"
    collective = "allreduce"
    Options = TreeOptions
    summary = "NCCL's two complementary binary trees, half the buffer each, pipelined in `chunks` pieces"

    def plan(self, task: Task) -> Callable[[], None]:
        chunks = self.options.chunks  # type: ignore[attr-defined]
        return concurrent_plan(task.comm, dbt_sequences(range(task.p), task.rank, task.out, 0, chunks))
