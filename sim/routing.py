"""Routing: shortest paths by the links' ``weight`` (1 per hop unless set), ties broken by a
deterministic hash of (source, destination) at every hop, as ECMP does. A GPU inside a multi-GPU host
is an endpoint only: no route passes through it on its way elsewhere (a single-GPU host, as in a torus,
forwards like any node). A route never changes during a flow.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict

import networkx as nx
import numpy as np

from .errors import RoutingError
from .topology.graph import GPU

__all__ = ["Router", "ecmp_hash"]

_MASK = (1 << 64) - 1


def ecmp_hash(src: int, dst: int, hop: int) -> int:
    """A stable 64-bit mix of (src, dst, hop) -- the same on every run and every machine."""
    x = (src * 0x9E3779B97F4A7C15 + dst * 0xBF58476D1CE4E5B9 + hop * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    x = (x * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class Router:
    """Shortest-path ECMP routes over a cluster graph.

    Distances to a destination come from one Dijkstra over the reversed arcs, kept in a bounded cache;
    a route then walks from the source choosing among the equally short next hops by :func:`ecmp_hash`.

    Parameters
    ----------
    graph : networkx.DiGraph
        The cluster (see :mod:`sim.topology.graph`).
    nodes : list
        Node names; positions are node indices.
    arc_index : dict
        ``(u, v) -> arc id``.
    cache_bytes : int
        Memory allowed for cached distance arrays.
    """

    def __init__(
        self, graph: nx.DiGraph, nodes: list[str], arc_index: dict[tuple[str, str], int], cache_bytes: int = 256 << 20
    ) -> None:
        self._index = {name: i for i, name in enumerate(nodes)}
        self._names = nodes
        n = len(nodes)
        # endpoints that never forward: GPUs inside a multi-GPU host
        self._is_gpu = np.array(
            [graph.nodes[v].get("kind") == GPU and graph.nodes[v].get("host", v) not in (None, v) for v in nodes],
            dtype=bool,
        )
        out: list[list[tuple[int, int, float]]] = [[] for _ in range(n)]
        into: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for (u, v), arc in arc_index.items():
            ui, vi = self._index[u], self._index[v]
            w = float(graph.edges[u, v].get("weight", 1.0))
            out[ui].append((vi, arc, w))
            into[vi].append((ui, w))
        for hops in out:
            hops.sort()
        self._out = out
        self._into = into
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cache_entries = max(4, cache_bytes // max(1, 8 * n))

    def _distances(self, dst: int) -> np.ndarray:
        cached = self._cache.get(dst)
        if cached is not None:
            self._cache.move_to_end(dst)
            return cached
        dist = np.full(len(self._names), np.inf)
        dist[dst] = 0.0
        heap = [(0.0, dst)]
        is_gpu = self._is_gpu
        into = self._into
        while heap:
            d, v = heapq.heappop(heap)
            if d > dist[v]:
                continue
            if is_gpu[v] and v != dst:
                continue  # an endpoint-only GPU is reached, never passed through
            for u, w in into[v]:
                nd = d + w
                if nd < dist[u]:
                    dist[u] = nd
                    heapq.heappush(heap, (nd, u))
        self._cache[dst] = dist
        if len(self._cache) > self._cache_entries:
            self._cache.popitem(last=False)
        return dist

    def route(self, src: str, dst: str) -> list[int]:
        """Arc ids of the route from node ``src`` to node ``dst`` (empty when they are the same)."""
        s, t = self._index[src], self._index[dst]
        if s == t:
            return []
        dist = self._distances(t)
        if not np.isfinite(dist[s]):
            raise RoutingError(f"no route from {src!r} to {dst!r}")
        arcs: list[int] = []
        node, hop = s, 0
        while node != t:
            here = dist[node]
            tol = 1e-9 * max(1.0, here)
            choices = [
                (v, arc)
                for v, arc, w in self._out[node]
                if (v == t or not self._is_gpu[v]) and abs(dist[v] + w - here) <= tol
            ]
            v, arc = choices[ecmp_hash(s, t, hop) % len(choices)] if len(choices) > 1 else choices[0]
            arcs.append(arc)
            node, hop = v, hop + 1
        return arcs
