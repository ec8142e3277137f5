"""The messages of a push or pull phase counted from the fabric's structure, not pair by pair.

A phase of a :class:`sim.classes.FanPlan` sends a message between every source and every destination
(every worker and every server, the server itself left out where it is a rank): p·S pairs, 537 M
messages per all-reduce at 16,384 GPUs with one shard per rank. :class:`sim.classes.FanExecutor`
groups them into flow classes and needs of each class only numbers: how many members, how many cross
each arc at each hop (the route rows trimmed as :meth:`sim.classes.FanExecutor.trim` trims them), the
bytes every arc and rank carries, and per server how many of its pushes the class holds.

On a two-level fabric routed by destination (:class:`sim.bulkroute.BulkRouter` with a destination key:
InfiniBand's D-mod-K, ``ecmp=destination``) a pair more than two hops apart -- a *far* pair -- takes one
of two routes, and every arc of it depends on one end or on (source leaf, destination key) or on
(destination key, destination leaf):

* **one leaf** (both under one leaf): up the source's chain, down the destination's;
* **across**: up the source's chain, to the spine ``key(destination) mod spines``, down to the
  destination's leaf and down its chain.

So the far pairs' crossings are counts per source (its chain), per destination (its chain), per (leaf,
spine) and per (spine, leaf) -- products of how many sources each leaf holds and how many destinations
each (spine, leaf) holds -- less the *near* pairs (two GPUs on one NVSwitch: a direct link or a common
neighbour), which are few (each endpoint's neighbours' neighbours) and listed explicitly: the caller
routes them as it routes any pair. Where every far pair of a shape has the same latencies hop by hop and
its source the same overhead, the shape has one start delay (its representative's route row, summed as
the caller sums every row), so the phase's classes are the near pairs grouped by their delays and the
two shapes, each class's numbers those sums -- never the pairs themselves.

:func:`phase_blocks` returns None where the fabric lacks that structure (no destination key: hashed ECMP;
an endpoint that is no origin of the router; chains of different lengths or latencies; an arc beside a
chain's end that the trim would take out across it; too many near candidates), and the caller builds
the phase pair by pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._arrays import ranges

__all__ = ["Blocks", "Shape", "phase_blocks"]

_NEAR_MAX = 64  # near candidates per endpoint of a phase beyond which the pairs are enumerated instead


@dataclass(frozen=True)
class Shape:
    """The far pairs of one shape (one leaf, or across the spines): ``row`` is a representative's route
    (arcs, -1 padded to the router's width; every pair of the shape has its latencies hop by hop), and
    for every source / destination of the phase how many of the shape's pairs it has (``per_src``,
    ``per_dst``); ``key`` and ``count``: the trimmed crossings (``arc * width + hop``, sorted, counts > 0);
    ``arcs`` and ``arc_count``: the untrimmed arcs crossed and by how many pairs."""

    row: np.ndarray
    per_src: np.ndarray
    per_dst: np.ndarray
    key: np.ndarray
    count: np.ndarray
    arcs: np.ndarray
    arc_count: np.ndarray

    @property
    def size(self) -> int:
        return int(self.per_src.sum())


@dataclass(frozen=True)
class Blocks:
    """A phase's pairs: the near ones listed (positions into the sources and destinations), the far
    ones by shape."""

    near_src: np.ndarray
    near_dst: np.ndarray
    shapes: tuple[Shape, ...]


def phase_blocks(
    bulk: Any, dom: np.ndarray, src_nodes: np.ndarray, dst_nodes: np.ndarray, overhead: np.ndarray
) -> Blocks | None:
    """The pairs ``src_nodes`` x ``dst_nodes`` but a node to itself (distinct nodes on each side,
    origins of ``bulk``), near ones listed and far ones counted by shape (module docstring); ``dom``:
    every arc's dominator (:func:`sim.rates._static_dominators`, which the trim reads); ``overhead``:
    every source's overhead per message. None where the fabric lacks the structure."""
    if bulk.dest_key is None:
        return None
    src_nodes = np.asarray(src_nodes, dtype=np.int64)
    dst_nodes = np.asarray(dst_nodes, dtype=np.int64)
    n = bulk.n
    if not (bulk.origin[src_nodes].all() and bulk.origin[dst_nodes].all()):
        return None
    near = _near_pairs(bulk, src_nodes, dst_nodes)
    if near is None:
        return None
    ns, nd = near  # positions
    dst_at = np.full(n, -1, dtype=np.int64)
    dst_at[dst_nodes] = np.arange(len(dst_nodes))
    src_at = np.full(n, -1, dtype=np.int64)
    src_at[src_nodes] = np.arange(len(src_nodes))
    li = bulk.leaf_index
    leaves = len(bulk.leaves)
    ls, ld = li[src_nodes], li[dst_nodes]
    spines = len(bulk.top) if bulk.top_arcs is not None else 0
    a_leaf = np.bincount(ls, minlength=leaves)  # sources per leaf
    b_leaf = np.bincount(ld, minlength=leaves)  # destinations per leaf
    # a node on both sides (a co-located server): its pair with itself is no pair
    self_src = dst_at[src_nodes] >= 0
    self_dst = src_at[dst_nodes] >= 0
    same_near = ls[ns] == ld[nd]
    n_same = b_leaf[ls] - self_src - np.bincount(ns[same_near], minlength=len(src_nodes))
    n_across = (len(dst_nodes) - b_leaf[ls]) - np.bincount(ns[~same_near], minlength=len(src_nodes))
    m_same = a_leaf[ld] - self_dst - np.bincount(nd[same_near], minlength=len(dst_nodes))
    m_across = (len(src_nodes) - a_leaf[ld]) - np.bincount(nd[~same_near], minlength=len(dst_nodes))
    far = (n_same + n_across) > 0
    far_dst = (m_same + m_across) > 0
    if not far.any():
        return Blocks(ns, nd, ())
    u = _uniform_chain(bulk, bulk.up, src_nodes[far], np.asarray(overhead)[far])
    v = _uniform_chain(bulk, bulk.down, dst_nodes[far_dst], None)
    if u is None or v is None:
        return None
    up_t = _trimmed(bulk.up[src_nodes], u, dom, reverse=False)
    down_t = _trimmed(bulk.down[dst_nodes], v, dom, reverse=True)
    if up_t is None or down_t is None:
        return None
    width = bulk.width
    shapes = []
    s0 = int(src_nodes[np.argmax(far)])
    d0 = int(dst_nodes[np.argmax(far_dst)])
    if n_same.any():
        row = np.full(width, -1, dtype=np.int64)
        row[:u] = bulk.up[s0, :u]
        row[u : u + v] = bulk.down[d0, :v][::-1]
        ends = _chains(bulk, src_nodes, dst_nodes, up_t, down_t, n_same, m_same, u, u, width)
        shapes.append(Shape(row, n_same, m_same, *ends))
    if n_across.any():
        if spines == 0:
            return None
        j = bulk.dest_key[dst_nodes] % spines
        near_j = j[nd[~same_near]]
        # pairs per (source leaf, spine) and per (spine, destination leaf), less the near ones
        b_jl = np.bincount(j * leaves + ld, minlength=spines * leaves).reshape(spines, leaves)
        top = a_leaf[:, None] * (b_jl.sum(axis=1)[None, :] - b_jl.T)  # [leaf, spine]
        top -= np.bincount(ls[ns[~same_near]] * spines + near_j, minlength=leaves * spines).reshape(leaves, spines)
        down = b_jl * (len(src_nodes) - a_leaf)[None, :]  # [spine, leaf]
        down -= np.bincount(near_j * leaves + ld[nd[~same_near]], minlength=spines * leaves).reshape(spines, leaves)
        total = int(n_across.sum())
        if int(top.sum()) != total or int(down.sum()) != total or int(m_across.sum()) != total:  # pragma: no cover
            raise AssertionError("the far pairs counted by spine do not add up")
        t_arcs, t_cnt = bulk.top_arcs.ravel(), top.ravel()
        d_arcs, d_cnt = bulk.spine_down.ravel(), down.ravel()
        t_arcs, t_cnt = t_arcs[t_cnt > 0], t_cnt[t_cnt > 0]
        d_arcs, d_cnt = d_arcs[d_cnt > 0], d_cnt[d_cnt > 0]
        lat = bulk.cluster.latency
        if (dom[t_arcs] >= 0).any() or (dom[d_arcs] >= 0).any():
            return None  # the trim would read the chains' ends beside them
        if (lat[t_arcs] != lat[t_arcs[0]]).any() or (lat[d_arcs] != lat[d_arcs[0]]).any():
            return None
        row = np.full(width, -1, dtype=np.int64)
        row[:u] = bulk.up[s0, :u]
        row[u], row[u + 1] = t_arcs[0], d_arcs[0]
        row[u + 2 : u + 2 + v] = bulk.down[d0, :v][::-1]
        key, count, arcs, arc_count = _chains(
            bulk, src_nodes, dst_nodes, up_t, down_t, n_across, m_across, u, u + 2, width
        )
        mid_key = np.concatenate([t_arcs * width + u, d_arcs * width + u + 1])
        mid_cnt = np.concatenate([t_cnt, d_cnt])
        key, count = _summed(np.concatenate([key, mid_key]), np.concatenate([count, mid_cnt]))
        arcs, arc_count = _summed(np.concatenate([arcs, t_arcs, d_arcs]), np.concatenate([arc_count, t_cnt, d_cnt]))
        shapes.append(Shape(row, n_across, m_across, key, count, arcs, arc_count))
    return Blocks(ns, nd, tuple(shapes))


def _near_pairs(bulk: Any, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(source position, destination position) of every pair whose route the router's short cut may
    take -- the destination a neighbour of the source or of one of its near nodes
    (:meth:`sim.bulkroute.BulkRouter._node_routes`: every other pair is far), a node to itself left
    out; None where they would be too many to list."""
    arrays = bulk.cluster.router.arrays
    out_ptr, out_v = arrays["out_ptr"], arrays["out_v"]
    via = np.concatenate([src_nodes[:, None], bulk.near[src_nodes]], axis=1)
    row, col = np.nonzero(via >= 0)
    nodes = via[row, col]
    lens = out_ptr[nodes + 1] - out_ptr[nodes]
    if int(lens.sum()) > _NEAR_MAX * (len(src_nodes) + len(dst_nodes)):
        return None
    owner = np.repeat(row, lens)
    heads = out_v[ranges(out_ptr[nodes], lens)]
    dst_at = np.full(bulk.n, -1, dtype=np.int64)
    dst_at[dst_nodes] = np.arange(len(dst_nodes))
    keep = (dst_at[heads] >= 0) & (heads != src_nodes[owner])
    key = np.unique(owner[keep] * len(dst_nodes) + dst_at[heads[keep]])
    return key // len(dst_nodes), key % len(dst_nodes)


def _uniform_chain(bulk: Any, chains: np.ndarray, nodes: np.ndarray, overhead: np.ndarray | None) -> int | None:
    """The length of the chains (ways up, or down) of ``nodes`` where all have one length and the same
    latencies hop by hop (and the same ``overhead``, where given); None otherwise."""
    lens = bulk.up_len[nodes]
    k = int(lens[0])
    if (lens != k).any():
        return None
    lat = bulk.cluster.latency[np.maximum(chains[nodes, :k], 0)]
    if (lat != lat[0]).any():
        return None
    if overhead is not None and (overhead != overhead[0]).any():
        return None
    return k


def _trimmed(chains: np.ndarray, k: int, dom: np.ndarray, reverse: bool) -> np.ndarray | None:
    """The first ``k`` arcs of ``chains`` (rows) with the ones whose dominator is beside them in the
    chain set to -1, as the trim takes them out of a route (``reverse``: ways down, walked from the last
    arc to the first); None where an arc has a dominator that is not beside it within the chain (the
    trim would look across the chain's end)."""
    arcs = chains[:, :k].copy()
    d = np.where(arcs >= 0, dom[np.maximum(arcs, 0)], -1)
    beside = np.zeros(arcs.shape, dtype=bool)
    beside[:, 1:] = arcs[:, :-1] == d[:, 1:]
    beside[:, :-1] |= arcs[:, 1:] == d[:, :-1]
    hit = d >= 0
    if (hit & ~beside).any():
        return None
    del reverse  # (a chain's neighbours are the same arcs either way round)
    return np.where(hit, -1, arcs)


def _chains(
    bulk: Any,
    src_nodes: np.ndarray,
    dst_nodes: np.ndarray,
    up_t: np.ndarray,
    down_t: np.ndarray,
    per_src: np.ndarray,
    per_dst: np.ndarray,
    u: int,
    first_down: int,
    width: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The crossings of the sources' ways up (hops 0..u-1) and the destinations' ways down (from hop
    ``first_down``), ``per_src`` / ``per_dst`` pairs each: (trimmed keys, counts, untrimmed arcs,
    counts), summed."""
    v = down_t.shape[1]
    hop_up = np.broadcast_to(np.arange(u), up_t.shape)
    cnt_up = np.broadcast_to(per_src[:, None], up_t.shape)
    down_rev, down_rev_t = bulk.down[dst_nodes, :v][:, ::-1], down_t[:, ::-1]
    hop_dn = np.broadcast_to(first_down + np.arange(v), down_rev_t.shape)
    cnt_dn = np.broadcast_to(per_dst[:, None], down_rev_t.shape)
    on_up, on_dn = (up_t >= 0) & (cnt_up > 0), (down_rev_t >= 0) & (cnt_dn > 0)
    key, count = _summed(
        np.concatenate([up_t[on_up] * width + hop_up[on_up], down_rev_t[on_dn] * width + hop_dn[on_dn]]),
        np.concatenate([cnt_up[on_up], cnt_dn[on_dn]]),
    )
    up = bulk.up[src_nodes, :u]
    on_up, on_dn = (up >= 0) & (cnt_up > 0), (down_rev >= 0) & (cnt_dn > 0)
    arcs, arc_count = _summed(
        np.concatenate([up[on_up], down_rev[on_dn]]), np.concatenate([cnt_up[on_up], cnt_dn[on_dn]])
    )
    return key, count, arcs, arc_count


def _summed(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys``, sorted, and the sum of ``counts`` of each (those with a positive sum)."""
    keys = np.asarray(keys, dtype=np.int64)
    uniq, inv = np.unique(keys, return_inverse=True)
    total = np.bincount(inv.reshape(-1), weights=np.asarray(counts, dtype=float), minlength=len(uniq))
    total = np.rint(total).astype(np.int64)
    return uniq[total > 0], total[total > 0]
