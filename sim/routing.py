"""Routing: shortest paths by the links' ``weight`` (1 per hop unless set), ties broken by a
deterministic hash of (source, destination) at every hop, as ECMP does -- or, where the topology says its
fabric routes by destination (``graph.graph["ecmp"] = "destination"``: InfiniBand, whose switches forward
by destination LID from tables the subnet manager fills, D-mod-K on a fat-tree), by the destination's
*key* (its host's ordinal) modulo the candidates: every flow to one host leaves a switch by the same port,
and the hosts of one leaf are spread over the spines one each. A GPU inside a multi-GPU host
is an endpoint only: no route passes through it on its way elsewhere (a single-GPU host, as in a torus,
forwards like any node). A route never changes during a flow.

Two ways to find the distances that define "shortest", with the same next-hop rule:

* ``dijkstra`` (any graph): one Dijkstra from the destination over the reversed arcs, cached per
  destination.
* ``updown`` (tree-like fabrics: star, leaf-spine, fat-tree, DGX rails; builders declare it with
  ``graph.graph["routing"] = "updown"``): nodes get a level (hops from the nearest GPU); a shortest
  route climbs, then descends. The destination's *ancestors* (nodes that reach it only descending) are
  found by a small search, so a route on a 131,072-GPU cluster touches a few dozen nodes instead of all
  of them. Tests check that both give the same routes where both apply.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from typing import Any

import numpy as np

from ._cores import built, chosen
from .errors import RoutingError

__all__ = ["Router", "ecmp_hash"]

_MASK = (1 << 64) - 1
#: the compiled core's ``updown_routes`` (sim/_ratecore.c), or None: :meth:`Router.routes` routes pair by pair
_CORE: object = chosen(built("_ratecore"))
#: whether :meth:`Router.routes` routes an up-down router's pairs in bulk (the compiled core); False: every pair
#: by :meth:`Router.route`, the reference the bulk routes are held to (tests/test_routing_bulk.py)
_BULK = True


def ecmp_hash(src: int, dst: int, hop: int) -> int:
    """A stable 64-bit mix of (src, dst, hop) -- the same on every run and every machine."""
    x = (src * 0x9E3779B97F4A7C15 + dst * 0xBF58476D1CE4E5B9 + hop * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    x = (x * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _tables(
    core: Any, arc_u: np.ndarray, arc_v: np.ndarray, n: int, is_gpu: np.ndarray | None
) -> dict[str, np.ndarray]:
    """:meth:`Router._numpy_tables` by the compiled core's ``router_tables``: the same tables, one pass
    each (counting sorts, a breadth-first search) instead of numpy's sorts and gathers over every arc."""
    m = len(arc_u)
    u = np.ascontiguousarray(arc_u, dtype=np.int64)
    v = np.ascontiguousarray(arc_v, dtype=np.int64)
    out = {"out_ptr": np.empty(n + 1, dtype=np.int64), "out_v": np.empty(m, dtype=np.int64)}
    out["out_arc"] = np.empty(m, dtype=np.int64)
    if is_gpu is None:
        core.router_tables(u, v, None, out["out_ptr"], out["out_v"], out["out_arc"], *[None] * 7)
        return out
    level, up_ptr, above_ptr = (
        np.empty(n, dtype=np.int64),
        np.empty(n + 1, dtype=np.int64),
        np.empty_like(out["out_ptr"]),
    )
    up_v, up_arc, above_u, above_arc = (np.empty(m, dtype=np.int64) for _ in range(4))
    gpu = np.ascontiguousarray(is_gpu, dtype=bool)
    nup, nabove = core.router_tables(
        u,
        v,
        gpu,
        out["out_ptr"],
        out["out_v"],
        out["out_arc"],
        level,
        up_ptr,
        up_v,
        up_arc,
        above_ptr,
        above_u,
        above_arc,
    )
    out.update(level=level, up_ptr=up_ptr, up_v=up_v[:nup], up_arc=up_arc[:nup])
    out.update(above_ptr=above_ptr, above_u=above_u[:nabove], above_arc=above_arc[:nabove])
    return out


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Order of items grouped by key (stable) and the offsets of each key's group."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return order, ptr


class Router:
    """Shortest-path ECMP routes over a cluster's arcs.

    Parameters
    ----------
    arc_u, arc_v : numpy.ndarray
        Tail and head node index of every arc.
    weight : numpy.ndarray
        Routing metric of every arc.
    endpoint_only : numpy.ndarray
        Per node: True where routes may end but never pass through (GPUs inside multi-GPU hosts).
    is_gpu : numpy.ndarray
        Per node: True for GPUs (level 0 of the up-down levels).
    mode : {"dijkstra", "updown"}
    cache_entries : int
        Destinations whose distance data are kept.
    """

    def __init__(
        self,
        arc_u: np.ndarray,
        arc_v: np.ndarray,
        weight: np.ndarray,
        endpoint_only: np.ndarray,
        is_gpu: np.ndarray,
        mode: str = "dijkstra",
        cache_entries: int = 1 << 16,
        dest_key: np.ndarray | None = None,
    ) -> None:
        if mode not in ("dijkstra", "updown"):
            raise ValueError(f"unknown routing mode {mode!r} (valid: dijkstra, updown)")
        n = len(endpoint_only)
        self.mode = mode
        #: per node, the key destination-based routing picks by (None: ECMP hash of source and destination)
        self.dest_key = dest_key
        self._n = n
        self._endpoint_only = endpoint_only
        # out-adjacency sorted by (tail, head): the order ECMP candidates are listed in (one stable sort of the
        # key tail * n + head, np.lexsort((arc_v, arc_u))'s order: a fabric's arcs come nearly sorted so)
        #: the tables below as numpy arrays too, for code that works on many nodes at once (levels,
        #: :mod:`sim.bulkroute`)
        self.arrays: dict[str, np.ndarray] = (
            _tables(_CORE, arc_u, arc_v, n, is_gpu if mode == "updown" else None)
            if _CORE is not None
            else self._numpy_tables(arc_u, arc_v, n, is_gpu if mode == "updown" else None)
        )
        self._unit = bool((weight == 1.0).all())  # hop counts: breadth-first search and short cuts
        self._cache: OrderedDict[int, object] = OrderedDict()
        self._cache_entries = (
            cache_entries if mode == "updown" else max(4, min(cache_entries, (256 << 20) // (8 * n + 1)))
        )
        self._graph = (arc_u, arc_v, weight)  # for the Python lists, made when first asked for
        self._arc_w_array = np.ascontiguousarray(weight, dtype=float)
        self._dest_key_array = None if dest_key is None else np.ascontiguousarray(dest_key, dtype=np.int64)
        self._top = int(self.arrays["level"].max()) if mode == "updown" else 0  # the highest level
        self._endpoint_only_array = np.ascontiguousarray(endpoint_only, dtype=bool)

    #: the tables as Python lists, which the Python lines route with (:meth:`_lists` makes them)
    _LISTS = frozenset(
        "_dest_key _out_v _out_arc _out_w _out_ptr _arc_w _in_u _in_w _in_ptr _level _up_v _up_arc _up_w _up_ptr "
        "_above_u _above_arc _above_w _above_ptr".split()
    )

    def __getattr__(self, name: str) -> Any:  # (only for attributes not set yet)
        if name in Router._LISTS and "_graph" in self.__dict__:
            self._lists()
            return object.__getattribute__(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _lists(self) -> None:
        """The tables as Python lists, made once, when the Python lines first route: the compiled routes
        (``sim._ratecore``) read the numpy arrays, and a cluster routed only by them never needs these."""
        arc_u, arc_v, weight = self._graph
        a = self.arrays
        order = a["out_arc"]
        self._dest_key = None if self.dest_key is None else self.dest_key.tolist()
        self._out_v = a["out_v"].tolist()
        self._out_arc = order.tolist()
        self._out_w = weight[order].tolist()
        self._out_ptr = a["out_ptr"].tolist()
        self._arc_w = weight.tolist()
        inorder, inptr = _csr(arc_v, self._n)
        self._in_u = arc_u[inorder].tolist()
        self._in_w = weight[inorder].tolist()
        self._in_ptr = inptr.tolist()
        if self.mode == "updown":
            up, ordd = a["up_arc"], a["above_arc"]
            self._level = a["level"].tolist()
            self._up_v = a["up_v"].tolist()
            self._up_arc = up.tolist()
            self._up_w = weight[up].tolist()
            self._up_ptr = a["up_ptr"].tolist()
            self._above_u = a["above_u"].tolist()
            self._above_arc = ordd.tolist()
            self._above_w = weight[ordd].tolist()
            self._above_ptr = a["above_ptr"].tolist()

    def _numpy_tables(
        self, arc_u: np.ndarray, arc_v: np.ndarray, n: int, is_gpu: np.ndarray | None
    ) -> dict[str, np.ndarray]:
        """The out-arcs sorted by (tail, head) and, given the GPUs (up-down), the levels, the up-arcs and the
        arcs above each node, in numpy (the compiled core's ``router_tables`` makes the same, :func:`_tables`)."""
        order = np.argsort(arc_u.astype(np.int64) * n + arc_v, kind="stable")
        out_ptr = np.concatenate(([0], np.cumsum(np.bincount(arc_u, minlength=n))))
        arrays = {"out_ptr": out_ptr, "out_v": arc_v[order], "out_arc": order}
        if is_gpu is None:
            return arrays
        self.arrays = arrays  # (for _levels)
        level = self._levels(is_gpu)
        climbs = level[arc_v] > level[arc_u]
        up = order[climbs[order]]  # up-arcs grouped by tail, heads ascending
        up_ptr = np.concatenate(([0], np.cumsum(np.bincount(arc_u[up], minlength=n))))
        arrays.update(level=level, up_ptr=up_ptr, up_v=arc_v[up], up_arc=up)
        descends = np.flatnonzero(level[arc_u] > level[arc_v])  # arcs y->x that descend into x
        ordd = descends[np.argsort(arc_v[descends].astype(np.int64) * n + arc_u[descends], kind="stable")]
        above_ptr = np.concatenate(([0], np.cumsum(np.bincount(arc_v[ordd], minlength=n))))
        arrays.update(above_ptr=above_ptr, above_u=arc_u[ordd], above_arc=ordd)
        return arrays

    # ------------------------------------------------------------------ levels (up-down)
    def _levels(self, is_gpu: np.ndarray) -> np.ndarray:
        """Hops from the nearest GPU, over links in either direction (-1: none reaches the node); a
        breadth-first search, a whole frontier at a time."""
        ptr, out_v = self.arrays["out_ptr"], self.arrays["out_v"]
        level = np.full(self._n, -1, dtype=np.int64)
        frontier = np.flatnonzero(is_gpu)
        level[frontier] = 0
        depth = 0
        while len(frontier):
            depth += 1
            lo, counts = ptr[frontier], ptr[frontier + 1] - ptr[frontier]
            total = int(counts.sum())
            within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            heads = out_v[np.repeat(lo, counts) + within]
            heads = heads[level[heads] < 0]
            level[heads] = depth
            frontier = np.flatnonzero(level == depth)
        return level

    # ------------------------------------------------------------------ distances
    def _dijkstra(self, dst: int) -> np.ndarray:
        dist = np.full(self._n, np.inf)
        dist[dst] = 0.0
        heap = [(0.0, dst)]
        endpoint_only = self._endpoint_only
        in_u, in_w, in_ptr = self._in_u, self._in_w, self._in_ptr
        while heap:
            d, v = heapq.heappop(heap)
            if d > dist[v]:
                continue
            if endpoint_only[v] and v != dst:
                continue  # an endpoint-only GPU is reached, never passed through
            for k in range(in_ptr[v], in_ptr[v + 1]):
                u = in_u[k]
                nd = d + in_w[k]
                if nd < dist[u]:
                    dist[u] = nd
                    heapq.heappush(heap, (nd, u))
        return dist

    def _ancestors(self, dst: int) -> tuple[dict[int, float], dict[int, list[tuple[int, int]]]]:
        """Nodes that reach ``dst`` by descending only, with their distance to it, and for each of them
        the descending arcs that lie on a shortest way down, as (head, arc) sorted by head."""
        if self._unit:
            return self._ancestors_bfs(dst)
        if self._above_ptr[dst + 1] > self._above_ptr[dst]:
            return self._ancestors_chained(dst)
        dist = {dst: 0.0}
        heap = [(0.0, dst)]
        above_u, above_w, above_ptr = self._above_u, self._above_w, self._above_ptr
        while heap:
            d, v = heapq.heappop(heap)
            if d > dist[v]:
                continue
            for k in range(above_ptr[v], above_ptr[v + 1]):
                u = above_u[k]
                nd = d + above_w[k]
                if nd < dist.get(u, np.inf):
                    dist[u] = nd
                    heapq.heappush(heap, (nd, u))
        down: dict[int, list[tuple[int, int]]] = {}
        for v, dv in dist.items():
            for k in range(above_ptr[v], above_ptr[v + 1]):
                u = above_u[k]
                du = dist[u]
                if abs(dv + above_w[k] - du) <= 1e-9 * max(1.0, du):
                    down.setdefault(u, []).append((v, self._above_arc[k]))
        for hops in down.values():
            hops.sort()
        return dist, down

    def _ancestors_chained(self, dst: int) -> tuple[dict[int, float], dict[int, list[tuple[int, int]]]]:
        """:meth:`_ancestors` of a node with nodes above it, from theirs (kept as destinations of their
        own): a way down to ``dst`` ends with an arc from one of them, so its distance from ``u`` is the
        least over them of the arc's weight plus ``u``'s distance to it, and ``u``'s hops down are those
        of the nodes above that reach that least (the one hop into ``dst`` for a node just above). A
        GPU's NIC, a NIC's leaf: a copy of a dictionary instead of a search."""
        above = [
            (self._above_u[k], self._above_w[k], self._above_arc[k])
            for k in range(self._above_ptr[dst], self._above_ptr[dst + 1])
        ]
        subs = []
        for p, w, arc in above:
            anc, down_p = self._cached(p)[:2]  # type: ignore[misc]
            subs.append((p, w, arc, anc, down_p))
        if len(subs) == 1 or sum(len(sub[3]) for sub in subs) == len(set().union(*[sub[3] for sub in subs])):
            # one node above, or no node above two of them (a GPU's NVSwitch and its NIC): each keeps its
            # own ways down
            dist, down = {}, {}
            for p, w, arc, anc, down_p in subs:
                dist.update({u: d + w for u, d in anc.items()})
                down.update(down_p)
                down[p] = [(dst, arc)]
            dist[dst] = 0.0
            return dist, down
        dist = {dst: 0.0}
        for _, w, _, anc, _ in subs:
            for u, d in anc.items():
                nd = d + w
                got = dist.get(u)
                if got is None or nd < got:
                    dist[u] = nd
        hops: dict[int, set[tuple[int, int]]] = {}
        for p, w, arc, anc, down_p in subs:
            for u, d in anc.items():
                du = dist[u]
                if abs(d + w - du) <= 1e-9 * max(1.0, du):  # p lies on a shortest way down from u
                    got = hops.setdefault(u, set())
                    got.update([(dst, arc)] if u == p else down_p[u])
        down = {u: sorted(h) for u, h in hops.items()}
        return dist, down

    def _ancestors_bfs(self, dst: int) -> tuple[dict[int, float], dict[int, list[tuple[int, int]]]]:
        """:meth:`_ancestors` when every link counts one hop: breadth-first, one pass."""
        above_u, above_arc, above_ptr = self._above_u, self._above_arc, self._above_ptr
        dist: dict[int, float] = {dst: 0.0}
        down: dict[int, list[tuple[int, int]]] = {}
        frontier = [dst]
        depth = 0.0
        while frontier:
            depth += 1.0
            nxt = []
            for v in frontier:
                for k in range(above_ptr[v], above_ptr[v + 1]):
                    u = above_u[k]
                    du = dist.get(u)
                    if du is None:
                        dist[u] = depth
                        nxt.append(u)
                        down[u] = [(v, above_arc[k])]
                    elif du == depth:
                        down[u].append((v, above_arc[k]))
            frontier = nxt
        for hops in down.values():
            if len(hops) > 1:
                hops.sort()
        return dist, down

    def _short(self, src: int, dst: int) -> list[int] | None:
        """The route when ``dst`` is one or two hops from ``src`` (unit weights): a direct link, or
        the common neighbours (ECMP among them); None when it is farther."""
        out_v, out_arc, out_ptr, endpoint_only = self._out_v, self._out_arc, self._out_ptr, self._endpoint_only
        first = {}
        for k in range(out_ptr[src], out_ptr[src + 1]):
            v = out_v[k]
            if v == dst:
                return [out_arc[k]]
            if not endpoint_only[v]:
                first[v] = out_arc[k]
        choices = []
        for v, arc in first.items():
            for k in range(out_ptr[v], out_ptr[v + 1]):
                if out_v[k] == dst:
                    choices.append((v, arc, out_arc[k]))
                    break
        if not choices:
            return None
        choices.sort()
        _, a, b = choices[self._pick(src, dst, 0, len(choices))] if len(choices) > 1 else choices[0]
        return [a, b]

    def _pick(self, src: int, dst: int, hop: int, n: int) -> int:
        """Which of ``n`` equal-cost candidates (in head order) a route takes at its ``hop``-th hop."""
        if self._dest_key is not None:
            return self._dest_key[dst] % n
        return ecmp_hash(src, dst, hop) % n

    def _cached(self, dst: int) -> object:
        entry = self._cache.get(dst)
        if entry is None:
            entry = self._dijkstra(dst) if self.mode == "dijkstra" else (*self._ancestors(dst), {}, {}, {})
            self._cache[dst] = entry
            if len(self._cache) > self._cache_entries:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(dst)
        return entry

    def _updown_dist(self, u: int, anc: dict[int, float], memo: dict[int, float]) -> float:
        """Shortest up-then-down distance from ``u`` to the destination whose ancestors are ``anc``."""
        got = anc.get(u)
        if got is not None:
            return got
        got = memo.get(u)
        if got is not None:
            return got
        best = np.inf
        for k in range(self._up_ptr[u], self._up_ptr[u + 1]):
            best = min(best, self._up_w[k] + self._updown_dist(self._up_v[k], anc, memo))
        memo[u] = best
        return best

    # ------------------------------------------------------------------ routes
    def route(self, src: int, dst: int) -> list[int]:
        """Arc ids of the route from node ``src`` to node ``dst`` (empty when they are the same)."""
        if src == dst:
            return []
        if self.bulk:  # the compiled lines, as for many pairs (the same route); those they leave: below
            rows, left = self.routes(np.array([src]), np.array([dst]))
            if not left[0]:
                return [arc for arc in rows[0].tolist() if arc >= 0]
        return self._route_lines(src, dst)

    def _route_lines(self, src: int, dst: int) -> list[int]:
        """:meth:`route` by the Python lines (the reference the compiled ones are held to)."""
        if src == dst:
            return []
        if self._unit:
            short = self._short(src, dst)
            if short is not None:
                return short
        if self.mode == "updown":
            return self._route_updown(src, dst)
        dist = self._cached(dst)
        here = float(dist[src])  # type: ignore[index]
        if not np.isfinite(here):
            raise RoutingError(f"no route from node {src} to node {dst}")
        arcs: list[int] = []
        node, hop = src, 0
        out_v, out_w, out_arc, out_ptr, endpoint_only = (
            self._out_v,
            self._out_w,
            self._out_arc,
            self._out_ptr,
            self._endpoint_only,
        )
        while node != dst:
            tol = 1e-9 * max(1.0, here)
            choices = [
                k
                for k in range(out_ptr[node], out_ptr[node + 1])
                if (out_v[k] == dst or not endpoint_only[out_v[k]]) and abs(dist[out_v[k]] + out_w[k] - here) <= tol  # type: ignore[index]
            ]
            if not choices:
                raise RoutingError(f"routing stalled at node {node} towards node {dst}")
            k = choices[self._pick(src, dst, hop, len(choices))] if len(choices) > 1 else choices[0]
            arcs.append(out_arc[k])
            node, hop = out_v[k], hop + 1
            here = float(dist[node])  # type: ignore[index]
        return arcs

    @property
    def bulk(self) -> bool:
        """Whether :meth:`routes` finds routes in bulk (else pair by pair, with :meth:`route`)."""
        return _BULK and _CORE is not None and self.mode == "updown"

    def routes(self, srcs: np.ndarray, dsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`route` of every pair ``srcs[i] -> dsts[i]`` (nodes), as rows of arcs padded with -1 (one
        column at least), and a mask of the pairs left out (rows of -1): those :meth:`route` raises for (no
        route, stalled), and every pair where the routes are not found in bulk -- route those with
        :meth:`route`. An up-down router with the compiled core finds them in bulk (``updown_routes``, the
        pairs of one destination together: no Python per pair, no per-destination dictionaries); else (or
        with ``_BULK`` off) pair by pair with :meth:`route`, none left out but the failing ones."""
        srcs = np.ascontiguousarray(srcs, dtype=np.int64)
        dsts = np.ascontiguousarray(dsts, dtype=np.int64)
        if self.bulk and len(srcs):
            a = self.arrays
            width = max(2, 2 * self._top + 2)  # a climb and a descent, a level a hop at least
            rows = np.full((len(srcs), width), -1, dtype=np.int64)
            status = np.zeros(len(srcs), dtype=np.int64)
            _CORE.updown_routes(  # type: ignore[attr-defined]
                srcs,
                dsts,
                np.argsort(dsts, kind="stable"),
                a["out_ptr"],
                a["out_v"],
                a["out_arc"],
                self._endpoint_only_array,
                a["level"],
                a["up_ptr"],
                a["up_v"],
                a["up_arc"],
                a["above_ptr"],
                a["above_u"],
                a["above_arc"],
                self._arc_w_array,
                self._dest_key_array,
                self._top,
                self._unit,
                rows.reshape(-1),
                status,
            )
            left = status != 0
            rows[left] = -1
            return rows, left
        routes: list[list[int]] = []
        left = np.zeros(len(srcs), dtype=bool)
        for i, (s, d) in enumerate(zip(srcs.tolist(), dsts.tolist(), strict=True)):
            try:
                routes.append(self.route(s, d))
            except RoutingError:
                routes.append([])
                left[i] = True
        width = max((len(r) for r in routes), default=0) or 1
        rows = np.full((len(routes), width), -1, dtype=np.int64)
        for i, arcs in enumerate(routes):
            rows[i, : len(arcs)] = arcs
        return rows, left

    def _route_updown(self, src: int, dst: int) -> list[int]:
        """Climb (up-arcs whose climbing distance matches) until an ancestor of ``dst``, then descend
        along the recorded shortest descending arcs; candidates in head order, as in Dijkstra mode."""
        anc, down, memo, climbs, tails = self._cached(dst)  # type: ignore[misc]
        keyed = self._dest_key is not None  # every hop's pick depends on the destination alone: the
        # way on from a node is the same whatever the source, and is kept (tails: node -> its arcs)
        if keyed:
            got = tails.get(src)
            if got is not None:
                return list(got)
        here = self._updown_dist(src, anc, memo)
        if not np.isfinite(here):
            raise RoutingError(f"no route from node {src} to node {dst}")
        arcs: list[int] = []
        nodes: list[int] = []
        node, hop = src, 0
        while node != dst:
            if keyed:
                got = tails.get(node)
                if got is not None:
                    arcs.extend(got)
                    break
                nodes.append(node)
            if node in anc:
                choices = down[node]
            else:  # the shortest climbs from a node depend on the node and the destination only: kept
                choices = climbs.get(node)
                if choices is None:
                    tol = 1e-9 * max(1.0, here)
                    choices = climbs[node] = [
                        (self._up_v[k], self._up_arc[k])
                        for k in range(self._up_ptr[node], self._up_ptr[node + 1])
                        if abs(self._updown_dist(self._up_v[k], anc, memo) + self._up_w[k] - here) <= tol
                    ]
            if not choices:
                raise RoutingError(f"routing stalled at node {node} towards node {dst}")
            v, arc = choices[self._pick(src, dst, hop, len(choices))] if len(choices) > 1 else choices[0]
            arcs.append(arc)
            here -= self._out_w_of(arc)
            node, hop = v, hop + 1
        for i, u in enumerate(nodes):
            tails[u] = tuple(arcs[i:])
        return arcs

    def _out_w_of(self, arc: int) -> float:
        return self._arc_w[arc]
