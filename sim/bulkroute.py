"""Routes of many rank pairs at once, vectorized, on two-level up-down fabrics (star, leaf-spine, DGX
rails): the routes :class:`sim.routing.Router` gives pair by pair, without a Python loop per pair.

A parameter server at 16,384 GPUs sends 2·p·S = 67 M messages; routing them one by one (tens of
microseconds each) would take longer than the whole simulation may. On a two-level fabric every route
is one of three shapes, and the router's rules for them (shortest route, ECMP candidates in head order,
the candidate picked by :func:`sim.routing.ecmp_hash` of (source, destination, hop)) are applied to
whole arrays of pairs:

* **short**: the destination is a neighbour of the source, or of one of its neighbours (the router's
  short cut: two GPUs on one NVSwitch, two hosts on one leaf) -- the common neighbour when there is one;
* **one leaf**: up the source's chain to its leaf, down the destination's chain;
* **across**: up to the source's leaf, to a spine (ECMP over the leaf's spines, or the destination's
  key where the router picks by destination), down to the destination's leaf and down its chain.

Routes start and end at *origins*: the ranks' GPUs, or any nodes given (NCCL's channels leave their
hosts by the NICs: :meth:`sim.cluster.Cluster.path_ids` routes from the NIC on). On a weighted fabric
(the DGX hosts' PCIe links weigh more than NVLink, so that GPUs of one host talk over the NVSwitch) a
near pair takes the cheapest way up to a common neighbour and down where that is the only cheapest and
no longer way can match it; other near pairs are left to the router.

:func:`bulk_router` recognizes such a fabric (up-down routing with unit weights, every endpoint's way
up a single chain to a leaf, every spine linked to every leaf) and checks its routes against the
router's on a sample of pairs; anything else gets ``None`` and is routed pair by pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import distinct
from .rates import _CORE

__all__ = ["BulkRouter", "bulk_router", "ecmp_hash_many"]

_C_MIN = 64  # pairs from which node_routes takes the compiled pass
_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_C3 = np.uint64(0x94D049BB133111EB)


def ecmp_hash_many(src: np.ndarray, dst: np.ndarray, hop: np.ndarray | int) -> np.ndarray:
    """:func:`sim.routing.ecmp_hash` of arrays (uint64 arithmetic wraps as the masked Python one)."""
    with np.errstate(over="ignore"):
        x = src.astype(np.uint64) * _C1 + dst.astype(np.uint64) * _C2 + np.asarray(hop).astype(np.uint64) * _C3
        x ^= x >> np.uint64(31)
        x *= _C2
        x ^= x >> np.uint64(27)
        x *= _C3
        return x ^ (x >> np.uint64(31))


class BulkRouter:
    """Vectorized routes between the ranks of a two-level up-down cluster (see the module docstring).
    Build it with :func:`bulk_router`."""

    def __init__(self, cluster: Any, origins: np.ndarray | None = None) -> None:
        self.cluster = cluster
        self._far: tuple[Any, ...] | None = None  # far_tables()
        r = cluster.router
        n = len(cluster.nodes)
        self.n = n
        #: per node, the key a destination-keyed router picks by (None: the ECMP hash)
        self.dest_key = None if r.dest_key is None else np.asarray(r.dest_key, dtype=np.int64)
        #: hop-count routing: near pairs take the router's short cut; else (weighted links) the cheapest
        #: way up to a common neighbour and down, where it is the only one and no longer way can match it
        self.unit = bool(r._unit)
        self.weight = r._arc_w_array
        self.level = r.arrays["level"]
        self._keys = cluster.arc_u.astype(np.int64) * n + cluster.arc_v
        self._sorted = np.argsort(self._keys)
        self._skeys = self._keys[self._sorted]
        up_ptr, up_v, up_arc = r.arrays["up_ptr"], r.arrays["up_v"], r.arrays["up_arc"]
        n_ups = up_ptr[1:] - up_ptr[:-1]
        has_up = n_ups > 0
        up_owner = np.repeat(np.arange(n), n_ups)  # the tail of every up-arc entry
        level = r.arrays["level"]
        top_level = level.max()
        tops = np.flatnonzero(level == top_level)
        if has_up[tops].any():
            raise ValueError("a top node climbs further")
        # tall: can climb to a top node (grown one level a round, from the previous round's nodes)
        tall = level == top_level
        for _ in range(int(top_level) + 1):
            grow = tall.copy()
            grow[up_owner[tall[up_v]]] = True
            tall = grow
        # every origin's chain up to its leaf (a node whose up-neighbours are top nodes), all at once; the
        # tables are indexed by node (-1 rows for the nodes that are no origin)
        nodes = distinct(np.asarray(cluster.rank_node[: cluster.size] if origins is None else origins, dtype=np.int64))
        size = n
        width = int(top_level)
        tops_up = np.bincount(up_owner, weights=level[up_v] == top_level, minlength=n).astype(np.int64)
        stop = (has_up & (tops_up == n_ups)) | ~has_up | (level == top_level)
        useful = np.flatnonzero(tall[up_v])  # up-arc entries that lead towards a top node
        n_useful = np.bincount(up_owner[useful], minlength=n)
        first_useful = np.full(n, -1, dtype=np.int64)
        first_useful[up_owner[useful][::-1]] = useful[::-1]  # the first such entry of every node
        chain = np.full((size, width), -1, dtype=np.int64)
        cur = np.arange(n, dtype=np.int64)
        self.origin = np.zeros(n, dtype=bool)
        self.origin[nodes] = True
        walking = nodes[~stop[nodes]]
        k = 0
        while len(walking):
            u = cur[walking]
            if (n_useful[u] != 1).any() or k >= width:
                raise ValueError("an endpoint's way up forks")
            entry = first_useful[u]
            chain[walking, k] = up_arc[entry]
            cur[walking] = up_v[entry]
            walking = walking[~stop[cur[walking]]]
            k += 1
        leaf = np.where(self.origin, cur, -1)
        self.up = chain
        self.up_len = (chain >= 0).sum(axis=1)
        #: the nodes of every origin's way up; ``climb``: a route to an origin on it is its prefix (set
        #: by :func:`bulk_router` where the router agrees on a sample, weighted fabrics only)
        self.up_node = np.where(chain >= 0, cluster.arc_v[np.maximum(chain, 0)], -1)
        self.climb = False
        #: whether a node on an origin's way up that is no origin itself (a leaf switch holding SHARP's
        #: engines) reaches the origin by that way, reversed, as the router goes: checked on a sample when
        #: first asked (:func:`_descents_agree`); None until then
        self.descend: bool | None = None
        self.leaf = leaf
        down = np.full_like(chain, -1)
        for k in range(width):
            has = chain[:, k] >= 0
            down[has, k] = self._arc(cluster.arc_v[chain[has, k]], cluster.arc_u[chain[has, k]])
        self.down = down  # down[e, k] reverses up[e, k]: walked from the last one to the first
        leaves = distinct(leaf[nodes])
        self.leaves = leaves
        counts = n_ups[leaves]
        top_ups = tops_up[leaves]
        if ((counts == 0) | (top_ups != counts)).any() and (len(leaves) > 1 or counts.any()):
            raise ValueError("a leaf that is not below the spines")
        if (counts != counts[0]).any():
            raise ValueError("leaves with different spines")
        m = int(counts[0])
        entries = up_ptr[leaves][:, None] + np.arange(m)[None, :]  # [leaf index, spine index]
        spine_of = up_v[entries]
        first = spine_of[0]
        if (spine_of != first[None, :]).any():
            raise ValueError("leaves with different spines")
        self.top = first
        self.top_arcs = up_arc[entries] if m else None
        if m:
            down_arcs = self._arc(np.repeat(first, len(leaves)), np.tile(leaves, m)).reshape(m, len(leaves))
            if (down_arcs < 0).any():
                raise ValueError("a spine not linked to every leaf")
            self.spine_down = down_arcs  # [spine index, leaf index]
        self.leaf_index = np.where(self.origin, np.searchsorted(leaves, leaf), -1)
        # the short cut's neighbours: every endpoint's out-neighbours that routes may pass through
        out_ptr, out_v, out_arc = r.arrays["out_ptr"], r.arrays["out_v"], r.arrays["out_arc"]
        through = ~np.asarray(r._endpoint_only)
        lo, hi = np.where(self.origin, out_ptr[:-1], 0), np.where(self.origin, out_ptr[1:], 0)
        deg = max(int((hi - lo).max(initial=0)), 1)
        self.near = np.full((size, deg), -1, dtype=np.int64)
        self.near_arc = np.full((size, deg), -1, dtype=np.int64)
        filled = np.zeros(size, dtype=np.int64)
        for i in range(deg):  # the i-th out-neighbour of every endpoint, kept in order where passable
            has = lo + i < hi
            entry = np.where(has, lo + i, 0)
            keep = has & through[out_v[entry]]
            col = filled + keep
            rows = np.flatnonzero(keep)
            self.near[rows, (col - 1)[rows]] = out_v[entry[rows]]
            self.near_arc[rows, (col - 1)[rows]] = out_arc[entry[rows]]
            filled = col
        self.width = 2 * width + 2

    def _arc(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The arc u -> v for arrays of node pairs; -1 where there is none."""
        key = np.asarray(u, dtype=np.int64) * self.n + np.asarray(v, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._skeys, key), len(self._skeys) - 1)
        return np.where(self._skeys[pos] == key, self._sorted[pos], -1)

    def _arc_one(self, u: int, v: int) -> int:
        return int(self._arc(np.array([u]), np.array([v]))[0])

    def routes(self, srcs: np.ndarray, dsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Arcs of the route between every pair of ranks (rows padded with -1), and a mask of the pairs
        this router could not route (several common neighbours: route those with the router)."""
        node = self.cluster.rank_node
        return self.node_routes(node[np.asarray(srcs, dtype=np.int64)], node[np.asarray(dsts, dtype=np.int64)])

    def node_routes(self, srcs: np.ndarray, dsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`routes` between nodes (both origins of this router: see :func:`bulk_router`; a node to
        itself: no arcs); a pair with an end that is no origin is in the mask too. (The tables are
        indexed by node.) With the compiled core, the pairs more than two hops apart -- most of them on a
        large fabric -- are routed in one pass in C (``far_routes``: the "one leaf" and "across" lines of
        :meth:`_node_routes`), the others by those lines."""
        srcs = np.asarray(srcs, dtype=np.int64)
        dsts = np.asarray(dsts, dtype=np.int64)
        if _CORE is None or len(srcs) < _C_MIN:
            return self._node_routes(srcs, dsts)
        out = np.full((len(srcs), self.width), -1, dtype=np.int64)
        done = np.zeros(len(srcs), dtype=np.uint8)
        _CORE.far_routes(srcs, dsts, *self.far_tables(), out.ravel(), done)
        odd = np.zeros(len(srcs), dtype=bool)
        rest = np.flatnonzero(done == 0)
        if len(rest):
            out[rest], odd[rest] = self._node_routes(srcs[rest], dsts[rest])
        return out, odd

    def far_tables(self) -> tuple[Any, ...]:
        """The tables ``far_routes`` reads (sim/_ratecore.c), made once: the near nodes, every node's
        in-neighbours (CSR), the origins, the ways up and down, the leaves, the spine arcs, the keys."""
        if self._far is None:
            arc_u, arc_v = self.cluster.arc_u, self.cluster.arc_v
            in_ptr = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(np.bincount(arc_v, minlength=self.n), out=in_ptr[1:])
            in_u = np.ascontiguousarray(arc_u[np.argsort(arc_v, kind="stable")], dtype=np.int64)
            spines = self.top_arcs is not None
            none = np.zeros(0, dtype=np.int64)
            self._far = (
                self.near.ravel(),
                in_ptr,
                in_u,
                self.origin,
                self.up.ravel(),
                self.up_len,
                self.leaf,
                self.leaf_index,
                np.ascontiguousarray(self.top_arcs).ravel() if spines else none,
                np.ascontiguousarray(self.spine_down).ravel() if spines else none,
                self.down.ravel(),
                self.dest_key,
                len(self.top) if spines else 0,
            )
        return self._far

    def _node_routes(self, srcs: np.ndarray, dsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`node_routes` in numpy (every pair; the reference the compiled pass is held to)."""
        out = np.full((len(srcs), self.width), -1, dtype=np.int64)
        # the short cut: a direct link, else the common neighbours
        direct = self._arc(srcs, dsts)
        second = np.full((len(srcs), self.near.shape[1]), -1, dtype=np.int64)
        for i in range(self.near.shape[1]):
            v = self.near[srcs, i]
            second[:, i] = np.where(v >= 0, self._arc(np.maximum(v, 0), dsts), -1)
        common = (second >= 0).sum(axis=1)
        short = (direct < 0) & (common == 1)
        pick = np.argmax(second >= 0, axis=1)
        rows = np.flatnonzero(short)
        out[rows, 0] = self.near_arc[srcs[rows], pick[rows]]
        out[rows, 1] = second[rows, pick[rows]]
        rows = np.flatnonzero(direct >= 0)
        out[rows, 0] = direct[rows]
        foreign = ~(self.origin[srcs] & self.origin[dsts])
        odd = ((direct < 0) & (common > 1)) | foreign
        if not self.unit:  # weighted links (PCIe under NVLink): see _near_weighted
            near = (direct >= 0) | (common > 0)
            odd |= near
            rows = np.flatnonzero(near)
            if len(rows):
                arcs, ok = self._near_weighted(srcs[rows], dsts[rows], direct[rows], second[rows])
                out[rows, :2] = arcs
                out[rows, 2:] = -1
                odd[rows[ok]] = False
            if self.climb:  # a GPU to its NIC: up its chain
                rows = np.flatnonzero(odd & ~foreign)
                hit = self.up_node[srcs[rows]] == dsts[rows][:, None]
                on = hit.any(axis=1)
                rows, k = rows[on], np.argmax(hit[on], axis=1)
                width = self.up.shape[1]
                out[rows] = -1
                out[rows, :width] = np.where(np.arange(width)[None, :] <= k[:, None], self.up[srcs[rows]], -1)
                odd[rows] = False
        far = (direct < 0) & (common == 0) & ~foreign
        # up the source's chain
        up_len = self.up_len[srcs]
        w = self.up.shape[1]
        out[far, :w] = self.up[srcs[far]]
        same = far & (self.leaf[srcs] == self.leaf[dsts])
        across = far & ~same
        pos = np.where(far, up_len, 0)
        if across.any():
            if self.top_arcs is None:  # pragma: no cover - one leaf has no spine
                raise ValueError("pairs under different leaves with no spine")
            rows = np.flatnonzero(across)
            if self.dest_key is not None:  # the router picks by the destination alone
                j = self.dest_key[dsts[rows]] % len(self.top)
            else:
                j = (ecmp_hash_many(srcs[rows], dsts[rows], up_len[rows]) % np.uint64(len(self.top))).astype(np.int64)
            li = self.leaf_index
            out[rows, pos[rows]] = self.top_arcs[li[srcs[rows]], j]
            out[rows, pos[rows] + 1] = self.spine_down[j, li[dsts[rows]]]
            pos[rows] += 2
        # down the destination's chain, last arc of its way up first
        rows = np.flatnonzero(far)
        dl = self.up_len[dsts[rows]]
        for k in range(w):
            has = k < dl
            r = rows[has]
            out[r, pos[r] + k] = self.down[dsts[r], dl[has] - 1 - k]
        down_to = odd & foreign & self.origin[dsts] & ~self.origin[srcs]
        if down_to.any():
            self._descents(srcs, dsts, down_to, out, odd)
        same = srcs == dsts  # (near itself: never a short cut)
        out[same] = -1
        return out, odd & ~same

    def _descents(self, srcs: np.ndarray, dsts: np.ndarray, rows: np.ndarray, out: np.ndarray, odd: np.ndarray) -> None:
        """Routes from a node on an origin's way up down to the origin (``rows``, a mask): that way,
        reversed, where the router agrees (:attr:`descend`); written to ``out``, taken off ``odd``."""
        if self.descend is None:
            self.descend = _descents_agree(self)
        if not self.descend:
            return
        rows = np.flatnonzero(rows)
        hit = self.up_node[dsts[rows]] == srcs[rows][:, None]
        on = hit.any(axis=1)
        rows, k = rows[on], np.argmax(hit[on], axis=1)
        width = self.up.shape[1]
        step = k[:, None] - np.arange(width)[None, :]  # down[e, k] reverses up[e, k]: from k down to 0
        out[rows] = -1
        out[rows, :width] = np.where(step >= 0, self.down[dsts[rows][:, None], np.maximum(step, 0)], -1)
        odd[rows] = False

    def _near_weighted(
        self, srcs: np.ndarray, dsts: np.ndarray, direct: np.ndarray, second: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Up-down routes between nodes one or two hops apart on a weighted fabric: the link between
        them (``direct``), or a way through one of the source's near nodes (``second``: the arc from
        each of them to the destination) that climbs, descends, or climbs then descends -- the
        cheapest. Taken (the mask) where it is the only cheapest and no longer way can match it: cheaper
        than three of the lightest links (two, where the source is no origin: its ways through near
        nodes are not listed, only the link); the rest are left to the router."""
        w, level = self.weight, self.level
        lightest = w.min(initial=np.inf)
        one = np.where((direct >= 0) & (level[srcs] != level[dsts]), w[np.maximum(direct, 0)], np.inf)
        up, over = self.near_arc[srcs], self.near[srcs]
        mid = level[np.maximum(over, 0)]
        rise, fall = np.sign(mid - level[srcs][:, None]), np.sign(level[dsts][:, None] - mid)
        two = (second >= 0) & (over >= 0) & (rise != 0) & (fall != 0) & ~((rise < 0) & (fall > 0))
        cost = np.concatenate([one[:, None], np.where(two, w[np.maximum(up, 0)] + w[np.maximum(second, 0)], np.inf)], 1)
        best = cost.min(axis=1)
        pick = np.argmin(cost, axis=1)
        ties = (cost <= best[:, None] * (1 + 1e-9)).sum(axis=1)
        bound = np.where(self.origin[srcs], 3.0, 2.0) * lightest * (1 - 1e-9)
        ok = np.isfinite(best) & (ties == 1) & (best < bound)
        rows = np.arange(len(srcs))
        via = np.maximum(pick - 1, 0)
        arcs = np.where(
            (pick == 0)[:, None],
            np.stack([direct, np.full(len(srcs), -1)], axis=1),
            np.stack([up[rows, via], second[rows, via]], axis=1),
        )
        return np.where(ok[:, None], arcs, -1), ok


def bulk_router(cluster: Any, sample: int = 400, seed: int = 0, origins: np.ndarray | None = None) -> BulkRouter | None:
    """A :class:`BulkRouter` for ``cluster`` when it is a two-level up-down fabric and the vectorized
    routes equal the router's on ``sample`` random pairs of its origins (every pair where there are few):
    the ranks' nodes, or the nodes ``origins`` (say the NICs that NCCL's channels leave their hosts by,
    and the ranks' nodes); else None."""
    router = cluster.router
    if router.mode != "updown" or cluster.size < 2:
        return None
    try:
        bulk = BulkRouter(cluster, origins)
    except ValueError:
        return None
    nodes = np.asarray(cluster.rank_node[: cluster.size] if origins is None else distinct(origins), dtype=np.int64)
    if not bulk.unit:
        bulk.climb = _climbs_agree(bulk, nodes, sample, seed)
    size = len(nodes)
    if size * size <= sample:
        src, dst = np.divmod(np.arange(size * size), size)
    else:
        rng = np.random.default_rng(seed)
        src, dst = rng.integers(0, size, sample), rng.integers(0, size, sample)
    src, dst = nodes[src], nodes[dst]
    if size > 1:  # and pairs next to each other in node order (GPUs of one host): near routes
        i = np.random.default_rng(seed + 1).integers(0, size - 1, min(sample, size - 1))
        src, dst = np.concatenate([src, nodes[i], nodes[i + 1]]), np.concatenate([dst, nodes[i + 1], nodes[i]])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    got, odd = bulk.node_routes(src, dst)
    for i in range(len(src)):
        if odd[i]:
            continue
        want = router.route(int(src[i]), int(dst[i]))
        row = got[i]
        if row[row >= 0].tolist() != list(want):
            return None
    return bulk


def _descents_agree(bulk: BulkRouter, sample: int = 400, seed: int = 3) -> bool:
    """Whether the router's route to an origin from every node on its way up that is no origin is that
    way reversed, on ``sample`` random origins that have one (never where none has)."""
    below = bulk.origin & (bulk.up_len > 0)
    have = np.flatnonzero(below)
    if not len(have):
        return False
    route = bulk.cluster.router.route
    rng = np.random.default_rng(seed)
    for e in rng.choice(have, size=min(sample, len(have)), replace=False).tolist():
        for k in range(int(bulk.up_len[e])):
            u = int(bulk.up_node[e, k])
            if not bulk.origin[u] and route(u, e) != bulk.down[e, k::-1].tolist():
                return False
    return True


def _climbs_agree(bulk: BulkRouter, nodes: np.ndarray, sample: int, seed: int) -> bool:
    """Whether the router's route from an origin to every origin on its way up is that way's prefix, on
    ``sample`` random origins that have one (never where none has)."""
    on = bulk.origin[np.maximum(bulk.up_node[nodes], 0)] & (bulk.up_node[nodes] >= 0)
    have = nodes[on.any(axis=1)]
    if not len(have):
        return False
    rng = np.random.default_rng(seed + 2)
    route = bulk.cluster.router.route
    for s in rng.choice(have, size=min(sample, len(have)), replace=False).tolist():
        for k in np.flatnonzero(bulk.origin[np.maximum(bulk.up_node[s], 0)] & (bulk.up_node[s] >= 0)).tolist():
            if route(s, int(bulk.up_node[s, k])) != bulk.up[s, : k + 1].tolist():
                return False
    return True
