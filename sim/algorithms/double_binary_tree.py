"""Double binary tree all-reduce as NCCL builds it (``src/graph/trees.cc``), ``double-binary-tree``.

Tree 0 is NCCL's btree on ranks 0..p-1 (root 0, which has one child; every other inner node has one
or two): rank x's parent flips its lowest set bit up a level, its children are x ± (lowbit/2) (the
right one shrunk until it is in range). Tree 1 is the mirror image (rank x in the role of p-1-x) for
even p, and tree 0 shifted by one rank (x in the role of x-1) for odd p, so that nearly every rank is a
leaf in one tree and an inner node in the other. Each tree all-reduces half of the buffer with
:func:`sim.algorithms.tree.tree_allreduce`'s schedule (pipelined in ``chunks`` pieces), both at once, each
tree's actor on a rank reducing on a processor of its own (NCCL runs each tree on its own channel). The
schedule is a dataflow (:func:`dbt_dataflow`, :mod:`sim.dataflow`): run message by message, and on the fast
path (``fast:dataflow``). The trees' roots are 0 and p-1 (even p) or 1 (odd p), as in NCCL; ``--root``
does not move them.

Cost. For p = 2 the trees are 0 <- 1 and 1 <- 0 and never share a link direction, so it is exact: one
tree of n/2 with one child per node (:func:`sim.algorithms.tree.tree_time`, depth 1, fan-out 1)::

    T = (α + n/(2K)·β + n/(2K)·γ) + (K-1)·max(α + n/(2K)·β, n/(2K)·γ) + K·(α + n/(2K)·β)

For larger p the two trees' flows share links part of the way and the time has no closed form;
:meth:`DoubleBinaryTree.cost` then returns the steady-state estimate with D = ⌈log2 p⌉ levels: each
rank's link carries per step two half-chunks in (its children in its inner tree) and two out (its
parent in each tree), so a step is α + (n/K)·β::

    T ≈ 2·(D + K - 1)·(α + n/K·β) + D·(n/K)·γ + (K-1)·(n/K)·γ

which tends to model.md's 2·D·α + 2n·β for large n and K. tests/test_congested.py derives the exact
time for p = 4, K = 1 (4α + 3n·β) by hand.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from ..dataflow import Dataflow, DataflowBuilder, run_dataflow
from ..runtime import Job
from .base import Algorithm
from .common import ceil_log2
from .registry import register
from .tree import TreeOptions, pipelined_tree, tree_time

__all__ = ["DoubleBinaryTree", "btree_parents", "dbt_dataflow", "dtree_parents", "nccl_btree", "nccl_dtree"]


def nccl_btree(p: int, rank: int) -> tuple[int, list[int]]:
    """NCCL's ``ncclGetBtree``: (parent or -1, children) of ``rank`` in a btree of ``p`` ranks."""
    bit = 1
    while bit < p and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, ([bit >> 1] if p > 1 else [])
    up = (rank ^ bit) | (bit << 1)
    if up >= p:
        up = rank ^ bit
    low = bit >> 1
    down0 = -1 if low == 0 else rank - low
    down1 = -1 if low == 0 else rank + low
    while down1 >= p:
        down1 = -1 if low == 0 else rank + low
        low >>= 1
    return up, [c for c in (down0, down1) if c != -1]


def nccl_dtree(p: int, rank: int) -> tuple[tuple[int, list[int]], tuple[int, list[int]]]:
    """NCCL's ``ncclGetDtree``: (parent, children) of ``rank`` in tree 0 and in tree 1."""
    first = nccl_btree(p, rank)
    if p % 2:  # shift by one rank
        up, down = nccl_btree(p, (rank - 1) % p)
        second = (-1 if up == -1 else (up + 1) % p, [(d + 1) % p for d in down])
    else:  # mirror
        up, down = nccl_btree(p, p - 1 - rank)
        second = (-1 if up == -1 else p - 1 - up, [p - 1 - d for d in down])
    return first, second


def btree_parents(p: int, ranks: np.ndarray) -> np.ndarray:
    """:func:`nccl_btree`'s parent of every rank of ``ranks`` (in 0..p-1; -1 for rank 0), in array
    operations: a rank's lowest set bit flipped up a level, or only cleared where that leaves 0..p-1."""
    ranks = np.asarray(ranks, dtype=np.int64)
    bit = ranks & -ranks
    up = (ranks ^ bit) | (bit << 1)
    up = np.where(up >= p, ranks ^ bit, up)
    return np.where(ranks == 0, -1, up)


def dtree_parents(p: int) -> np.ndarray:
    """:func:`nccl_dtree`'s parents, ``[tree][rank]``: tree 1 tree 0 mirrored (even p) or shifted by one
    rank (odd p)."""
    ranks = np.arange(p, dtype=np.int64)
    first = btree_parents(p, ranks)
    if p % 2:
        up = btree_parents(p, (ranks - 1) % p)
        second = np.where(up == -1, -1, (up + 1) % p)
    else:
        up = btree_parents(p, p - 1 - ranks)
        second = np.where(up == -1, -1, p - 1 - up)
    return np.stack([first, second])


def dbt_dataflow(p: int, nbytes: float, chunks: int) -> Dataflow:
    """Both trees as one dataflow: tree t's node on rank r is actor t·p + r with a processor of its own
    (NCCL runs each tree on its own channel, an SM of its own), reducing half t of the buffer in
    ``chunks`` pieces (data-check segments t·chunks + c) with :func:`sim.algorithms.tree.tree_allreduce`'s
    rules (:func:`sim.algorithms.tree.pipelined_tree`)."""
    b = DataflowBuilder(p)
    ranks = np.arange(p)
    ups = dtree_parents(p)
    for t in range(2):  # tree t: actors t·p .. t·p + p-1 (the other tree's actors stay out of it)
        up = ups[t]
        parent = np.full(2 * p, -1, dtype=np.int64)
        parent[t * p + ranks] = np.where(up >= 0, up + t * p, -1)
        pipelined_tree(b, parent, np.tile(ranks, 2), np.arange(2 * p), chunks, nbytes / (2 * chunks), t * chunks)
    return b.build()


@register
class DoubleBinaryTree(Algorithm):
    name = "double-binary-tree"
    collective = "allreduce"
    Options = TreeOptions
    summary = "NCCL's two complementary binary trees, half of the buffer each (chunks=K per tree)"
    examples = ("double-binary-tree:chunks=4",)

    options: TreeOptions

    def segments(self, p: int) -> int:
        return 2 * self.options.chunks

    def closed_form_exact(self, p: int) -> bool:
        return p <= 2

    def run(self, job: Job) -> Generator[Any, Any, None]:
        if job.p > 1:
            yield from run_dataflow(job, dbt_dataflow(job.p, job.nbytes, self.options.chunks))

    def dataflow(self, p: int, nbytes: float, cluster: Any = None, root: int = 0) -> Dataflow | None:
        """The schedule of :meth:`run`, for the fast path (``fast:dataflow``)."""
        return dbt_dataflow(p, nbytes, self.options.chunks) if p > 1 else None

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        k = self.options.chunks
        if p <= 2:
            return tree_time(p - 1, 1, k, n / 2, alpha, beta, gamma)
        levels = ceil_log2(p)
        return 2 * (levels + k - 1) * (alpha + n / k * beta) + (levels + k - 1) * n / k * gamma
