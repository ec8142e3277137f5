"""Binary tree all-reduce, ``tree:chunks=K``: a pipelined reduce up the tree, then a pipelined
broadcast down it (seed 003's "Tree-All-Reduce"; NCCL's tree kernel runs the same up-then-down loop,
``runTreeUpDown``).

The tree is the binary heap on ranks counted from the root (``root``, default 0): rank i's children
are 2i+1 and 2i+2, its depth is d = ⌊log2 p⌋. The buffer is cut into K chunks of n/K (K = 1 is
unpipelined). Every rank

* for each chunk in turn: receives the chunk from its children, reduces each into its own copy as it
  arrives (n/K·γ each, one after the other), and sends the sum to its parent once the previous chunk
  has arrived there;
* then for each chunk: receives it from its parent and sends it to all its children at once, once its
  previous chunk has arrived at them.

Cost on a star. Let c be the children per inner node, T = α + c·(n/K)·β the time of one tree step
(the c children's chunks share the parent's link; going down, the parent's c chunks share it) and
g = c·(n/K)·γ the reductions per step. Going up, a chunk passes d links and d reductions, a new one
leaves every max(T, g) (a pipeline of 2d stages, K jobs); going down it passes d links, a new one
every T::

    T_tree = d·(T + g) + (K-1)·max(T, g) + (d + K - 1)·T

This is exact when every inner node has the same number of children and all leaves sit at depth d,
i.e. p = 2^(d+1) - 1 (c = 2) and p = 2 (c = 1): then siblings send in lockstep. For K = 1, γ = 0 it is
model.md's 2d·(α + 2n·β) exactly. model.md's pipelined form (2d + K - 1)·(α + 2(n/K)·β) lets the
broadcast of the first chunks overlap the reduce of the last; this schedule does not (a rank finishes
its reduce loop before it starts its broadcast loop), so it pays the K-1 fill twice:
2·(d + K - 1)·(α + 2(n/K)·β) for γ = 0.

For other p the siblings are not in lockstep and flows share links part of the way: with p = 4
(0 <- {1, 2}, 1 <- 3) and K = 1 the time is 4α + 5n·β (tests/test_congested.py derives it).

:func:`tree_program` is the unpipelined tree over any list of ranks as a step program
(:mod:`sim.program`); :mod:`sim.algorithms.hierarchical` runs it across hosts.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from .._cores import built, chosen
from ..dataflow import _ID, ARRIVED, HELD, MAX_MESSAGES, Dataflow, DataflowBuilder
from ..deadline import check as check_deadline
from ..program import Step, StepProgram
from ..runtime import Job
from ..schema import Chunks, Spec
from .base import Algorithm
from .common import fan_in, spread
from .registry import register

#: the compiled core (``tree_pairs``), or None: numpy
_CORE: Any = chosen(built("_ratecore"))

__all__ = [
    "BinaryTree",
    "TreeOptions",
    "heap_parents",
    "heap_tree",
    "pipelined_tree",
    "tree_allreduce",
    "tree_dataflow",
    "tree_program",
    "tree_time",
]


class TreeOptions(Spec):
    chunks: Chunks = 1


def heap_tree(p: int, root: int = 0) -> tuple[list[int | None], list[list[int]]]:
    """Parent and children of every rank in the binary heap counted from ``root`` (:func:`heap_parents`)."""
    ups = heap_parents(p, root).tolist()
    parent: list[int | None] = [None if up < 0 else up for up in ups]
    children: list[list[int]] = [[] for _ in range(p)]
    for i in range(1, p):  # (each parent's children in heap order)
        me = (i + root) % p
        children[ups[me]].append(me)
    return parent, children


def tree_allreduce(
    job: Job, me: int, parent: int | None, children: Sequence[int], chunk: float, segs: Sequence[Any], tag: int
) -> Generator[Any, Any, None]:
    """Rank ``me``'s part of a pipelined tree reduce then broadcast over chunks ``segs`` of ``chunk``
    bytes each; uses tags ``tag .. tag + 2·len(segs) - 1``."""
    k, data = len(segs), job.data
    sent: Any = None
    for c, seg in enumerate(segs):

        def fold(_src: int, payload: Any, seg: Any = seg) -> Generator[Any, Any, None]:
            yield from job.combine(me, seg, payload, chunk)

        yield from fan_in(job, me, children, tag + c, fold)
        if parent is not None:
            if sent is not None:
                yield sent
            sent = job.send(me, parent, chunk, data.take(me, seg), tag + c)
    if sent is not None:
        yield sent
    down: list[Any] = []
    for c, seg in enumerate(segs):
        if parent is not None:
            data.put(me, seg, (yield job.recv(me, parent, tag + k + c)))
        if children:
            if down:
                yield job.env.all_of(down)
            down = [job.send(me, child, chunk, data.take(me, seg), tag + k + c) for child in children]
    if down:
        yield job.env.all_of(down)


def tree_pairs(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A forest's (``parent[v]``, -1 at a root) pairs: the children ``kids`` and their parents ``up_of``;
    the sibling pairs (``sib[i]``, ``sib_of[i]``), every child w' of w's parent for each child w, w itself
    included; and ``inner``, the children whose parent has a parent too."""
    if _CORE is not None and parent.dtype == np.int64 and parent.flags.c_contiguous:  # the same, a pass each
        sizes = _CORE.tree_pairs(parent, None, None, None, None, None)
        if sizes is not None:
            nk, nsib, ninner = sizes
            out = tuple(np.empty(size, dtype=np.int64) for size in (nk, nk, nsib, nsib, ninner))
            _CORE.tree_pairs(parent, *out)
            return out  # type: ignore[return-value]
    n = len(parent)
    kids = np.flatnonzero(parent >= 0)
    up_of = parent[kids]
    order = np.argsort(up_of, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(up_of, minlength=n), out=ptr[1:])
    counts = ptr[up_of + 1] - ptr[up_of]
    sib = np.repeat(kids, counts)
    offsets = np.arange(len(sib)) - np.repeat(np.cumsum(counts) - counts, counts)
    sib_of = kids[order][np.repeat(ptr[up_of], counts) + offsets]
    return kids, up_of, sib, sib_of, kids[parent[up_of] >= 0]


def pipelined_tree(
    b: DataflowBuilder,
    parent: np.ndarray,
    endpoint: np.ndarray,
    proc: np.ndarray,
    chunks: int,
    chunk: float,
    seg_off: int = 0,
) -> None:
    """:func:`tree_allreduce` as a dataflow (:mod:`sim.dataflow`), for every node of a forest at once.

    Node v (``parent[v]``, -1 at a root) runs on endpoint ``endpoint[v]`` and reduces on processor
    ``proc[v]``; chunk c is ``chunk`` bytes, data-check segment ``seg_off + c``. With U[c, v] the message
    v -> parent(v) of chunk c (reduced there) and D[c, v] the one parent(v) -> v (stored), the rules of
    :func:`tree_allreduce` are:

    * U[c, v] starts when v holds chunk c of all its children (U[c, w] held) and U[c-1, v] has arrived;
    * U[c, w] is reduced at u = parent(w) once u has folded all of chunk c-1 (U[c-1, w'] held for every
      child w' of u) and its send U[c-2, u] has arrived -- where u's loop reaches chunk c;
    * D[c, v] leaves u = parent(v) once u holds chunk c (D[c, u] held; for c = 0 also u's reduce loop is
      over: U[K-1, w'] held for its children, U[K-1, u] arrived) and D[c-1, w'] has arrived at every
      child w' of u.
    """
    parent = np.asarray(parent, dtype=np.int64)
    n = len(parent)
    kids, up_of, sib, sib_of, inner = tree_pairs(parent)
    k, nk = chunks, len(kids)
    check_deadline()  # a long pipeline is built at once; --timeout may stop it before
    # every chunk's messages in one call each: their ids run chunk after chunk, the children in order within
    # a chunk (as one call per chunk numbers them), so U[c, v] is the first U's id + c * nk + v's place among
    # the children, and likewise D
    # (one chunk: the gathered columns as they are, every message's segment seg_off -- no tile or repeat made)
    segs = seg_off if k == 1 else np.repeat(seg_off + np.arange(k, dtype=np.int64), nk)

    def tiled(x: np.ndarray) -> np.ndarray:
        return x if k == 1 else np.tile(x, k)

    def chunked(src: np.ndarray, dst: np.ndarray, reduce: bool, at: np.ndarray) -> int:
        """Every chunk's messages src -> dst, reduced or stored on ``proc[at]``: the first one's id."""
        sent = b.messages(
            tiled(endpoint[src]),
            tiled(endpoint[dst]),
            chunk,
            reduce=reduce,
            proc=tiled(proc[at]),
            seg=segs,
        )
        return int(sent[0]) if len(sent) else 0

    place = np.full(n, -1, dtype=_ID)
    place[kids] = np.arange(nk, dtype=_ID)
    first_up, first_down = chunked(kids, up_of, True, up_of), chunked(up_of, kids, False, kids)

    def up(c: int, nodes: np.ndarray) -> tuple[int, np.ndarray]:  # U[c, nodes] (children only), as _rows takes it
        return first_up + c * nk, place[nodes]

    def down(c: int, nodes: np.ndarray) -> tuple[int, np.ndarray]:  # D[c, nodes]
        return first_down + c * nk, place[nodes]

    # each kind's edges in the order a loop over the chunks adds them: chunk 0's row (``first``), then one
    # row per later chunk (``rest``, from the chunk given on: the parts side by side); the edges on no
    # message (a chunk -1, a root's own U or D: the loop's -1s, which the builder drops) left out here. Where no
    # row follows (one chunk; two or fewer for the last gates) the later chunks' places are not gathered at all.
    # Starts, ARRIVED: U[c, v] after U[c-1, v]; D[c, w] after D[c-1, w'] for every sibling w' of w (chunk 0:
    # D[0, v] after U[K-1, parent(v)])
    up_in, last = parent[inner], k - 1  # (``inner``: the children whose parent is no root, in their order)
    rows = k - 1
    b.after(
        _rows([down(0, inner)], [up(1, kids), down(1, sib)] if rows else [], rows, nk),
        _rows([up(last, up_in)], [up(0, kids), down(0, sib_of)] if rows else [], rows, nk),
        ARRIVED,
        copy=False,
    )
    # starts, HELD: U[c, parent(w)] after U[c, w]; D[c, v] after D[c, parent(v)] (chunk 0 also: D[0, w] after
    # U[K-1, w'] for every sibling w')
    b.after(
        _rows([up(0, up_in), down(0, inner), down(0, sib)], [up(1, up_in), down(1, inner)] if rows else [], rows, nk),
        _rows(
            [up(0, inner), down(0, up_in), up(last, sib_of)], [up(1, inner), down(1, up_in)] if rows else [], rows, nk
        ),
        HELD,
        copy=False,
    )
    # gates: U[c, w] reduced after U[c-1, w'] of every sibling w' is held and U[c-2, parent(w)] has arrived
    b.gate(
        _rows([], [up(1, sib)] if rows else [], rows, nk),
        _rows([], [up(0, sib_of)] if rows else [], rows, nk),
        HELD,
        copy=False,
    )
    rows = max(k - 2, 0)
    b.gate(
        _rows([], [up(2, inner)] if rows else [], rows, nk),
        _rows([], [up(0, up_in)] if rows else [], rows, nk),
        ARRIVED,
        copy=False,
    )


def _rows(first: list[tuple[int, np.ndarray]], rest: list[tuple[int, np.ndarray]], rows: int, step: int) -> np.ndarray:
    """Message ids written into one array: for each ``(base, places)`` of ``first``, ``base + places``, one
    after the other; then ``rows`` rows, row r holding ``base + r * step + places`` for each part of
    ``rest`` side by side (no array made per part but the places)."""
    head = sum(len(places) for _, places in first)
    width = sum(len(places) for _, places in rest)
    out = np.empty(head + rows * width, dtype=_ID)
    at = 0
    for base, places in first:
        np.add(places, base, out=out[at : at + len(places)], dtype=_ID)
        at += len(places)
    if not rows or not width:  # (no row to write: one chunk's tree)
        return out
    body = out[head:].reshape(rows, width)
    offsets = (np.arange(rows, dtype=_ID) * step)[:, None]
    at = 0
    for base, places in rest:
        np.add(offsets, places[None, :] + _ID(base), out=body[:, at : at + len(places)], dtype=_ID)
        at += len(places)
    return out


def heap_parents(p: int, root: int = 0) -> np.ndarray:
    """Every rank's parent in the binary heap counted from ``root`` (-1 at the root), without a loop over the
    ranks: rank ``(i + root) % p`` hangs below ``((i - 1) // 2 + root) % p``."""
    i = np.arange(1, p, dtype=np.int64)
    parent = np.full(p, -1, dtype=np.int64)
    if root == 0:  # (the same: no sum reaches p)
        parent[1:] = (i - 1) // 2
        return parent
    parent[(i + root) % p] = ((i - 1) // 2 + root) % p
    return parent


def tree_dataflow(p: int, nbytes: float, chunks: int, root: int = 0) -> Dataflow:
    """The binary tree all-reduce (:class:`BinaryTree`) as a dataflow."""
    ranks = np.arange(p)
    b = DataflowBuilder(p)
    pipelined_tree(b, heap_parents(p, root), ranks, ranks, chunks, nbytes / chunks)
    return b.build()


def tree_time(depth: int, fanout: int, k: int, n: float, alpha: float, beta: float, gamma: float) -> float:
    """The time of :func:`tree_allreduce` on a star for a complete tree (every inner node ``fanout``
    children, every leaf at ``depth``), ``n`` bytes in ``k`` chunks (see the module docstring)."""
    if depth == 0:
        return 0.0
    step = alpha + fanout * n / k * beta
    reduce = fanout * n / k * gamma
    return depth * (step + reduce) + (k - 1) * max(step, reduce) + (depth + k - 1) * step


@register
class BinaryTree(Algorithm):
    name = "tree"
    collective = "allreduce"
    Options = TreeOptions
    summary = "binary tree: pipelined reduce to the root, then pipelined broadcast (chunks=K)"
    examples = ("tree:chunks=4",)

    options: TreeOptions

    def segments(self, p: int) -> int:
        return self.options.chunks

    def closed_form_exact(self, p: int) -> bool:
        return p <= 2 or (p + 1) & p == 0

    def run(self, job: Job) -> Generator[Any, Any, None]:
        k = self.options.chunks
        parent, children = heap_tree(job.p, job.root)
        segs = list(range(k))
        yield spread(
            job, [tree_allreduce(job, r, parent[r], children[r], job.nbytes / k, segs, 0) for r in range(job.p)]
        )

    def dataflow(self, p: int, nbytes: float, cluster: Any = None, root: int = 0) -> Dataflow | None:
        """The schedule of :meth:`run` as a dataflow, for the fast path (``fast:dataflow``)."""
        if p == 1 or 2 * (p - 1) * self.options.chunks > MAX_MESSAGES:
            return None  # too many messages to hold at once: the per-rank processes, message by message
        return tree_dataflow(p, nbytes, self.options.chunks, root)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        depth = (p).bit_length() - 1
        return tree_time(depth, 1 if p == 2 else 2, self.options.chunks, n, alpha, beta, gamma)


def tree_program(order: list[int], nbytes: float, endpoints: int, seg_off: int = 0, seg_width: int = 1) -> StepProgram:
    """A binary heap tree over ``order`` (root ``order[0]``, children of position j at 2j+1, 2j+2):
    reduce up one level per step, then broadcast down one level per step; unpipelined. Every message
    carries the whole buffer, data-check segments ``[seg_off, seg_off + seg_width)``."""
    q = len(order)
    depth = [0] * q
    for j in range(1, q):
        depth[j] = depth[(j - 1) // 2] + 1
    d = max(depth)
    phases: list[tuple[Step, int]] = []
    for s in range(d):  # reduce: the nodes at depth d - s send to their parents
        senders = [j for j in range(q) if depth[j] == d - s]
        src = [order[j] for j in senders]
        dst = [order[(j - 1) // 2] for j in senders]
        phases.append((Step.make(src, dst, nbytes, nbytes, endpoints=endpoints, seg=seg_off, seg_width=seg_width), 1))
    for s in range(d):  # broadcast: the nodes at depth s send to their children
        senders = [j for j in range(1, q) if depth[j] == s + 1]
        src = [order[(j - 1) // 2] for j in senders]
        dst = [order[j] for j in senders]
        phases.append((Step.make(src, dst, nbytes, 0.0, endpoints=endpoints, seg=seg_off, seg_width=seg_width), 1))
    return StepProgram(endpoints, tuple(phases))
