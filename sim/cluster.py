"""A cluster ready to simulate: the graph's arcs as arrays, ranks mapped to GPUs, and routes between
ranks interned as path ids (each path stored once, its arcs in one flat array).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from ._arrays import all_distinct, ranges
from ._cores import built, chosen
from ._gc import paused_gc
from .deadline import check as check_deadline
from .errors import ConfigError, RoutingError
from .linkmodel import NOMINAL, LinkModel
from .msgmodel import MessageModel
from .routing import Router
from .topology.fabric import Fabric, inline_fabric
from .topology.graph import GPU
from .topology.load import load_graph

__all__ = ["Cluster", "hockney"]

#: new rank pairs from which :meth:`Cluster.path_ids` routes in bulk (below, pair by pair is as quick)
_BULK_MIN = 2048
#: the compiled core (``row_arcs``), or None: numpy
_CORE: Any = chosen(built("_ratecore"))


def _row_arcs(arcs: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of routes as rows of arcs padded with -1: each row's arc count, the arcs row after row, and each
    row's least capacity (inf for none) -- in one compiled pass where the core is built."""
    if _CORE is not None and arcs.ndim == 2 and arcs.shape[1] and capacity.dtype == np.float64:
        n, width = arcs.shape
        length, bottleneck = np.empty(n, dtype=np.int64), np.empty(n)
        flat = np.empty(n * width, dtype=np.int64)
        used = _CORE.row_arcs(
            np.ascontiguousarray(arcs, dtype=np.int64).reshape(-1), width, capacity, length, flat, bottleneck
        )
        return length, flat[:used], bottleneck
    valid = arcs >= 0
    return valid.sum(axis=1), arcs[valid], np.where(valid, capacity[np.maximum(arcs, 0)], np.inf).min(axis=1)


def _grown(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` in an array of ``size`` (not fewer) entries, the rest zero: the room a growing column takes
    (``np.resize``, which fills the rest with repeats of ``values``, took ~5x as long; no entry past those
    interned is read)."""
    out = np.empty(size, dtype=values.dtype)
    out[: len(values)] = values
    out[len(values) :] = 0
    return out


class _PathTable:
    """Paths interned by (src rank, dst rank): arcs in one growing flat array, with offsets."""

    def __init__(self) -> None:
        self.arcs = np.zeros(1024, dtype=np.int64)
        self.start = np.zeros(64, dtype=np.int64)
        self.length = np.zeros(64, dtype=np.int64)
        self.latency = np.zeros(64)
        self.latency_list: list[float] = []  # the same, as Python floats (grows in place)
        self.src = np.zeros(64, dtype=np.int64)  # the ranks a path joins
        self.dst = np.zeros(64, dtype=np.int64)
        self.bottleneck = np.full(64, np.inf)  # the narrowest capacity on the path (inf when empty)
        self.count = 0
        self._used = 0

    def add(self, arcs: list[int], latency: float, src: int, dst: int, bottleneck: float = np.inf) -> int:
        pid = self.count
        need = self._reserve(1, len(arcs))
        self.arcs[self._used : need] = arcs
        self.start[pid] = self._used
        self.length[pid] = len(arcs)
        self.latency[pid] = latency
        self.src[pid] = src
        self.dst[pid] = dst
        self.bottleneck[pid] = bottleneck
        self.latency_list.append(latency)
        self._used = need
        self.count += 1
        return pid

    def add_many(
        self,
        arcs: np.ndarray,
        latency: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        capacity: np.ndarray,
        inverse: np.ndarray | None = None,
    ) -> np.ndarray:
        """:meth:`add` for many paths at once: ``arcs`` one row per path, padded with -1; returns the ids.
        With ``inverse``, path ``i``'s arcs and latency are row ``inverse[i]`` of ``arcs`` and ``latency``
        (many paths on few distinct routes: each route's arcs read once)."""
        length, flat, bottleneck = _row_arcs(arcs, capacity)
        if inverse is None:
            return self._append(flat, length, latency, src, dst, bottleneck)
        first_arc = np.cumsum(length) - length
        flat = flat[ranges(first_arc[inverse], length[inverse])]
        return self._append(flat, length[inverse], latency[inverse], src, dst, bottleneck[inverse])

    def _append(
        self,
        flat: np.ndarray,
        length: np.ndarray,
        latency: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        bottleneck: np.ndarray,
    ) -> np.ndarray:
        """Paths of ``length[i]`` arcs each, their arcs ``flat`` one after another; returns the ids."""
        n = len(length)
        first = self.count
        need = self._reserve(n, len(flat))
        self.arcs[self._used : need] = flat
        ids = slice(first, first + n)  # (the new ids run on: slices, not an index array per column)
        self.start[ids] = self._used + np.cumsum(length) - length
        self.length[ids] = length
        self.latency[ids] = latency
        self.src[ids] = src
        self.dst[ids] = dst
        self.bottleneck[ids] = bottleneck
        self.latency_list.extend(np.asarray(latency, dtype=float).tolist())
        self._used = need
        self.count += n
        return np.arange(first, first + n)

    def _reserve(self, paths: int, arcs: int) -> int:
        """Room for ``paths`` more paths of ``arcs`` arcs in all (each column at least doubled when it grows);
        returns where the arcs will end."""
        if self.count + paths > len(self.start):
            size = max(self.count + paths, 2 * len(self.start))
            for name in ("start", "length", "latency", "src", "dst", "bottleneck"):
                setattr(self, name, _grown(getattr(self, name), size))
        need = self._used + arcs
        if need > len(self.arcs):
            self.arcs = _grown(self.arcs, max(need, 2 * len(self.arcs)))
        return need

    def arcs_of(self, pid: int) -> np.ndarray:
        s = self.start[pid]
        return self.arcs[s : s + self.length[pid]]


class Cluster:
    """A topology prepared for simulation.

    Parameters
    ----------
    topology : str, path or networkx graph
        Anything :func:`sim.topology.load_graph` accepts.
    ranks : int, optional
        Use only the first ``ranks`` GPUs (in the topology's rank order).
    link_model : LinkModel, optional
        How messages and links depart from the topology's nominal figures (:mod:`sim.linkmodel`; a
        calibration's, say). Default: the nominal model.

    Attributes
    ----------
    graph : networkx.DiGraph
    ranks : list of str
        GPU node of each rank.
    nodes : list of str
        Node names; ``arc_u`` / ``arc_v`` index into it.
    capacity, latency : numpy.ndarray
        Per link direction (arc): bytes/s and seconds. ``num_arcs`` of them.
    overhead : numpy.ndarray
        Per-message software cost (s) at each rank when it sends.
    link_model : LinkModel
    message_model : sim.msgmodel.MessageModel
        Start delay and wire bytes of every message under ``link_model`` (what the engine asks).
    """

    def __init__(
        self,
        topology: str | os.PathLike[str] | nx.Graph,
        ranks: int | None = None,
        *,
        link_model: LinkModel | None = None,
    ) -> None:
        with paused_gc():
            fabric = inline_fabric(topology)  # a DGX fabric: arrays, no graph unless asked for
            source = load_graph(topology) if fabric is None else fabric
            self._setup(source, ranks, NOMINAL if link_model is None else link_model)

    def _setup(self, source: nx.DiGraph | Fabric, ranks: int | None, link_model: LinkModel) -> None:
        self._ranks_arg = ranks
        self._source = source
        if isinstance(source, Fabric):
            self._setup_fabric(source, ranks)
        else:
            self._setup_graph(source, ranks)
        self.link_model = link_model
        self._finish_setup()

    def _setup_graph(self, graph: nx.DiGraph, ranks: int | None) -> None:
        all_ranks = list(graph.graph["ranks"])
        self._checked_ranks(len(all_ranks), ranks, graph.graph["name"])
        all_ranks = all_ranks[:ranks]
        self._graph: nx.DiGraph | None = graph
        self.name: str = graph.graph.get("name", "cluster")
        self.ranks: list[str] = all_ranks
        self.nodes: list[str] = list(graph.nodes)
        index = {name: i for i, name in enumerate(self.nodes)}
        self._index = index
        m = graph.number_of_edges()
        arc_u = np.empty(m, dtype=np.int64)
        arc_v = np.empty(m, dtype=np.int64)
        self.capacity = np.empty(m)
        self.latency = np.empty(m)
        weight = np.empty(m)
        for i, (u, v, data) in enumerate(graph.edges(data=True)):
            arc_u[i] = index[u]
            arc_v[i] = index[v]
            self.capacity[i] = data["bandwidth"]
            self.latency[i] = data["latency"]
            weight[i] = data.get("weight", 1.0)
        self.arc_u, self.arc_v = arc_u, arc_v
        self.num_arcs = m
        nodes = graph.nodes
        is_gpu = np.array([nodes[v].get("kind") == GPU for v in self.nodes], dtype=bool)
        endpoint_only = np.array(
            [nodes[v].get("kind") == GPU and nodes[v].get("host", v) not in (None, v) for v in self.nodes],
            dtype=bool,
        )
        default = float(graph.graph.get("overhead", 0.0))
        self._endpoint_buffers(
            np.array([float(nodes[g].get("overhead", default)) for g in self.ranks]),
            np.array([float(nodes[g].get("compute_scale", 1.0)) for g in self.ranks]),
            np.array([index[g] for g in self.ranks], dtype=np.int64),
        )
        self.router = Router(
            arc_u,
            arc_v,
            weight,
            endpoint_only,
            is_gpu,
            mode=graph.graph.get("routing", "dijkstra"),
            dest_key=_host_keys(graph, self.nodes) if graph.graph.get("ecmp") == "destination" else None,
        )

    def _setup_fabric(self, fabric: Fabric, ranks: int | None) -> None:
        """:meth:`_setup_graph`'s arrays, from arrays (the graph is built only if asked for)."""
        nodes = fabric.nodes
        self._checked_ranks(len(fabric.rank_node), ranks, fabric.name)
        self._graph = None
        self.name = fabric.name
        self.rank_node = fabric.rank_node[:ranks].copy()
        self.ranks = [nodes[i] for i in self.rank_node.tolist()]
        self.nodes = nodes
        self.arc_u, self.arc_v = fabric.arc_u, fabric.arc_v
        self.capacity, self.latency = fabric.capacity.copy(), fabric.latency.copy()
        self.num_arcs = len(fabric.arc_u)
        self._endpoint_buffers(np.full(len(self.ranks), fabric.overhead), np.ones(len(self.ranks)), self.rank_node)
        self.router = Router(
            fabric.arc_u,
            fabric.arc_v,
            fabric.weight,
            fabric.endpoint_only,
            fabric.is_gpu,
            mode=fabric.routing,
            dest_key=fabric.dest_key,
        )

    def _checked_ranks(self, total: int, ranks: int | None, name: str) -> None:
        if ranks is not None:
            if ranks < 1:
                raise ConfigError(f"ranks: must be >= 1, got {ranks}", param="ranks")
            if ranks > total:
                raise ConfigError(f"ranks: {ranks}, but topology {name!r} has only {total} GPUs", param="ranks")

    @property
    def graph(self) -> nx.DiGraph:
        """The cluster's graph (built on first use where the cluster was built from arrays)."""
        if self._graph is None:
            self._graph = self._source.build_graph()  # type: ignore[union-attr]
        return self._graph

    @property
    def spec(self) -> str | None:
        """The topology's inline spec where a builder made it (``dgx:hosts=4,...``), else None."""
        if isinstance(self._source, Fabric):
            return self._source.spec
        return self.graph.graph.get("spec")

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.nodes)}

    def _finish_setup(self) -> None:
        self.paths = _PathTable()
        self._pid: dict[tuple[int, int], int] = {}
        #: endpoints beyond the ranks (see :meth:`add_endpoint`): key -> index, and each one's rank (-1: none)
        self._extra: dict[tuple[object, ...], int] = {}
        self.endpoint_rank: list[int] = []
        self._via: dict[int, int] = {}
        self._bulk: object = None  # the bulk router (sim.bulkroute), False where the fabric has none
        #: pairs interned in bulk (by :meth:`path_ids`): sorted keys src << 32 | dst and their path ids
        #: (a dict of millions of tuples would cost seconds and hundreds of MiB); :meth:`path_id` looks
        #: here after ``_pid`` and copies what it finds there
        self._bulk_keys = np.zeros(0, dtype=np.int64)
        self._bulk_ids = np.zeros(0, dtype=np.int64)
        self.message_model = MessageModel(self, self.link_model)

    def with_link_model(self, link_model: LinkModel) -> Cluster:
        """This cluster under another link model: the same (already checked) graph and ranks, its own
        arrays, routes and endpoints. Returns ``self`` when the model is the same."""
        if link_model == self.link_model:
            return self
        other = Cluster.__new__(Cluster)
        with paused_gc():
            other._setup(self._source, self._ranks_arg, link_model)
        return other

    @property
    def size(self) -> int:
        """Number of ranks."""
        return len(self.ranks)

    def host_of(self, rank: int) -> str:
        if isinstance(self._source, Fabric):
            return self._source.hosts[int(self._source.rank_host[rank])]
        node = self.ranks[rank]
        return self.graph.nodes[node].get("host") or node

    @functools.cached_property
    def rank_host(self) -> np.ndarray:
        """The host of every rank (:meth:`host_of`) as a number: hosts numbered 0, 1, ... in the order
        of their first ranks."""
        if isinstance(self._source, Fabric):
            return self._source.rank_host[: self.size].copy()
        nodes = self.graph.nodes
        ids: dict[str, int] = {}
        hosts = (ids.setdefault(nodes[g].get("host") or g, len(ids)) for g in self.ranks)
        return np.fromiter(hosts, dtype=np.int64, count=len(self.ranks))

    @property
    def endpoints(self) -> int:
        """Ranks plus the endpoints added by :meth:`add_endpoint`."""
        return len(self.rank_node)

    def _endpoint_buffers(self, overhead: np.ndarray, compute_scale: np.ndarray, rank_node: np.ndarray) -> None:
        """Per-endpoint buffers that grow by doubling, the ranks' first (schedules add endpoints one at a
        time: NCCL's 16 channels on 16,384 GPUs are 262,144 of them); the attributes are their views."""
        self._grown = {"overhead": overhead, "compute_scale": compute_scale, "rank_node": rank_node}
        self._endpoints = len(self.ranks)
        self._views()

    def _views(self) -> None:
        n = self._endpoints
        self.overhead = self._grown["overhead"][:n]
        self.compute_scale = self._grown["compute_scale"][:n]
        self.rank_node = self._grown["rank_node"][:n]

    def add_endpoint(
        self,
        rank: int | None = None,
        node: str | None = None,
        via: str | None = None,
        key: object = None,
        overhead: float | None = None,
    ) -> int:
        """An endpoint beyond the ranks, for schedules whose actors are not ranks (idempotent).

        * ``rank`` given: one more actor on that rank's GPU -- an NCCL channel, which runs on its own SM
          and progresses on its own; ``via`` names the NIC its messages leave the host by (else routing
          picks); ``key`` tells channels apart. Its traffic counts as the rank's.
        * ``rank`` None: an actor at ``node`` -- an NVSwitch's reduction engine; its reductions are free.

        ``overhead`` replaces the per-message cost it would inherit (its rank's, 0 for an engine).
        """
        if rank is not None:
            return self.add_endpoints([rank], [via], key, overhead)[0]
        ident = (rank, node, via, key, overhead)
        got = self._extra.get(ident)
        if got is not None:
            return got
        if node not in self._index or (via is not None and via not in self._index):
            raise ConfigError(f"endpoint at {node!r} via {via!r}: no such node")
        e = self._grow(1)
        self._grown["rank_node"][e] = self._index[node]
        self._grown["overhead"][e] = 0.0 if overhead is None else overhead
        self._grown["compute_scale"][e] = 0.0
        self.endpoint_rank.append(-1)
        if via is not None:
            self._via[e] = self._index[via]
        self._extra[ident] = e
        return e

    def add_endpoints(
        self,
        ranks: list[int],
        vias: list[str | None],
        key: object = None,
        overhead: float | None = None,
        keys: list[object] | None = None,
    ) -> list[int]:
        """:meth:`add_endpoint` on every rank ``ranks[i]`` with ``via=vias[i]``, the same ``key`` (or
        ``keys[i]``) and ``overhead``, in order (the same endpoints as one call each, at the cost of one:
        NCCL's channels add 262,144 of them at 16,384 GPUs)."""
        extra, index = self._extra, self._index
        e = self._endpoints
        if keys is None:
            idents = [(rank, None, via, key, overhead) for rank, via in zip(ranks, vias, strict=True)]
        else:
            idents = [(rank, None, via, k, overhead) for rank, via, k in zip(ranks, vias, keys, strict=True)]
        known = list(map(extra.get, idents))
        if None not in known:
            return known  # type: ignore[return-value]
        if known.count(None) == len(known) and len(set(idents)) == len(idents):
            # all new and none twice (a channel's actors, say): numbered in order, as the loop below would
            for via in dict.fromkeys(vias):
                if via is not None and via not in index:
                    raise ConfigError(f"endpoint at {self.ranks[ranks[vias.index(via)]]!r} via {via!r}: no such node")
            extra.update(zip(idents, range(e, e + len(idents)), strict=True))
            self._add_new(list(ranks), list(vias), overhead)
            return list(range(e, e + len(idents)))
        out: list[int] = []
        new: list[int] = []
        new_vias: list[str | None] = []
        for i, (rank, via) in enumerate(zip(ranks, vias, strict=True)):
            ident = (rank, None, via, key if keys is None else keys[i], overhead)
            got = extra.get(ident)
            if got is None:
                if via is not None and via not in index:
                    raise ConfigError(f"endpoint at {self.ranks[rank]!r} via {via!r}: no such node")
                got = extra[ident] = e + len(new)
                new.append(rank)
                new_vias.append(via)
            out.append(got)
        if new:
            self._add_new(new, new_vias, overhead)
        return out

    def _add_new(self, new: list[int], new_vias: list[str | None], overhead: float | None) -> None:
        """Endpoints on ranks ``new`` leaving by ``new_vias``, numbered from the next free one."""
        index = self._index
        at = np.asarray(new, dtype=np.int64)
        first = self._grow(len(new))
        grown = self._grown
        grown["rank_node"][first : first + len(new)] = grown["rank_node"][at]
        grown["overhead"][first : first + len(new)] = grown["overhead"][at] if overhead is None else overhead
        grown["compute_scale"][first : first + len(new)] = grown["compute_scale"][at]
        self.endpoint_rank.extend(new)
        self._via.update((first + i, index[v]) for i, v in enumerate(new_vias) if v is not None)

    def _grow(self, k: int) -> int:
        """Room for ``k`` more endpoints (the buffers double as needed); returns the first one's index."""
        e = self._endpoints
        while e + k > len(self._grown["rank_node"]):
            self._grown = {name: np.concatenate([v, np.zeros_like(v)]) for name, v in self._grown.items()}
        self._endpoints = e + k
        self._views()
        return e

    def _extra_route(self, src: int, dst: int) -> tuple[list[int], int, int]:
        """Route and accounted ranks of a message between endpoints of which one is beyond the ranks."""
        s, d = int(self.rank_node[src]), int(self.rank_node[dst])
        # :meth:`_vias` and :meth:`_owners` of one pair, without their tables over every endpoint (a
        # route each costs O(endpoints) there: NCCL's channels at 1,024 GPUs route ~10^5 pairs so)
        v = self._via.get(src, -1)
        if v >= 0:
            host = self._node_host_ids()
            if not (host[s] >= 0 and host[d] != host[s]):
                v = -1
        a, b = (
            e if e < self.size or self.endpoint_rank[e - self.size] < 0 else self.endpoint_rank[e - self.size]
            for e in (src, dst)
        )
        return self._route_via(s, v, d), int(a), int(b)

    def _vias(self, es: np.ndarray, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Per message from endpoint ``es[i]`` (at node ``s[i]``) to node ``d[i]``: the node it leaves its
        host by -- an extra endpoint's ``via`` (its NIC), for a message between hosts -- else -1."""
        if not self._via:
            return np.full(len(es), -1, dtype=np.int64)
        table = np.full(self.endpoints, -1, dtype=np.int64)
        table[list(self._via)] = list(self._via.values())
        via, host = table[es], self._node_host_ids()
        return np.where((via >= 0) & (host[s] >= 0) & (host[d] != host[s]), via, -1)

    def _route_via(self, s: int, v: int, d: int) -> list[int]:
        """The route from node ``s`` to node ``d``, through node ``v`` unless it is -1 (:meth:`_vias`)."""
        return self._node_route(s, d) if v < 0 else self._node_route(s, v) + self._node_route(v, d)

    def _owners(self, es: np.ndarray) -> np.ndarray:
        """The rank each endpoint's bytes count for: a rank itself, an extra endpoint the rank it was
        added for (itself where none)."""
        owner = np.array(es, dtype=np.int64)
        extra = owner >= self.size
        if extra.any():
            rank = np.asarray(self.endpoint_rank, dtype=np.int64)[owner[extra] - self.size]
            owner[extra] = np.where(rank >= 0, rank, owner[extra])
        return owner

    def _node_hosts(self) -> list[str | None]:
        """Per node, the host it belongs to (its ``host`` attribute), or None."""
        hosts = self.__dict__.get("_hosts_of_nodes")
        if hosts is None:
            nodes = self.graph.nodes
            hosts = self.__dict__["_hosts_of_nodes"] = [nodes[v].get("host") for v in self.nodes]
        return hosts

    def _node_route(self, s: int, d: int) -> list[int]:
        """The router's route between nodes, remembered: the endpoints of NCCL's channels on one GPU all
        leave by the same ways (half to four fifths of their routes are repeats)."""
        memo = self.__dict__.setdefault("_node_routes", {})
        arcs = memo.get((s, d))
        if arcs is None:
            if len(memo) >= 1 << 20:
                memo.clear()
            arcs = memo[(s, d)] = self.router.route(s, d)
        return arcs

    def arc_id(self, u: str, v: str) -> int:
        """The arc (link direction) from node ``u`` to node ``v``."""
        iu, iv = self._index[u], self._index[v]
        hits = np.flatnonzero((self.arc_u == iu) & (self.arc_v == iv))
        if not len(hits):
            raise ConfigError(f"no link from {u!r} to {v!r}")
        return int(hits[0])

    def path_id(self, src: int, dst: int) -> int:
        """The interned route from rank ``src`` to rank ``dst``."""
        key = (src, dst)
        pid = self._pid.get(key)
        if pid is None and len(self._bulk_keys):
            got = self._known_one(src, dst)
            if got >= 0:
                self._pid[key] = pid = got
        if pid is None:
            check_deadline()  # a new route costs 10 us to ms; many at once count against --timeout
            arcs, a, b = self._routed(src, dst)
            pid = self.paths.add(
                arcs,
                float(self.latency[arcs].sum()) if arcs else 0.0,
                a,
                b,
                float(self.capacity[arcs].min()) if arcs else np.inf,
            )
            self._pid[key] = pid
        return pid

    def _routed(self, src: int, dst: int) -> tuple[list[int], int, int]:
        """The route between endpoints ``src`` and ``dst`` and the ranks its bytes count for."""
        try:
            if src < self.size and dst < self.size:
                return self.router.route(int(self.rank_node[src]), int(self.rank_node[dst])), src, dst
            return self._extra_route(src, dst)
        except RoutingError as exc:
            names = [
                f"{'rank' if e < self.size else 'endpoint'} {e} ({self.nodes[int(self.rank_node[e])]})"
                for e in (src, dst)
            ]
            raise RoutingError(f"{names[0]} -> {names[1]}: {exc}") from None

    def _route_many(self, us: np.ndarray, ud: np.ndarray) -> np.ndarray:
        """:meth:`path_id` of many pairs not interned yet (distinct): interned at once with the same
        routes, latencies and bottlenecks :meth:`path_id` would give them. A route depends only on its
        ends' nodes and, between hosts, the NIC its source leaves by (NCCL's channels on one GPU repeat
        their routes), so each such triple is routed once."""
        node = self.rank_node
        s, d = node[us].astype(np.int64), node[ud].astype(np.int64)
        v = self._vias(us, s, d)
        if not self._via and self._ranks_apart() and int(max(us.max(), ud.max())) < self.size:
            # no vias, every rank on its own node: the distinct pairs are distinct triples, routed as they come
            rows = self._triple_routes(s, v, d, us, ud, distinct=True)
            ids = self.paths.add_many(rows, self._latencies(rows), self._owners(us), self._owners(ud), self.capacity)
            self._bulk_add(us, ud, ids)
            return ids
        n = len(self.nodes)
        _, first, inverse = np.unique((s * (n + 1) + v + 1) * n + d, return_index=True, return_inverse=True)
        rows = self._triple_routes(s[first], v[first], d[first], us[first], ud[first])
        latency = self._latencies(rows)
        ids = self.paths.add_many(rows, latency, self._owners(us), self._owners(ud), self.capacity, inverse.ravel())
        self._bulk_add(us, ud, ids)
        return ids

    def _bulk_add(self, us: np.ndarray, ud: np.ndarray, ids: np.ndarray) -> None:
        """Pairs ``us[i] -> ud[i]`` interned in bulk as path ``ids[i]`` (see ``_bulk_keys``)."""
        keys = np.concatenate([self._bulk_keys, _pair_keys(us, ud)])
        ids = np.concatenate([self._bulk_ids, ids])
        if len(keys) > 1 and (keys[1:] < keys[:-1]).any():
            sort = np.argsort(keys, kind="stable")
            keys, ids = keys[sort], ids[sort]
        # (else in order already -- a dataflow's pairs, the first interned: as the stable sort would leave them)
        self._bulk_keys, self._bulk_ids = keys, ids

    def _ranks_apart(self) -> bool:
        """Whether no two ranks share a node."""
        got = self.__dict__.get("_ranks_apart_")
        if got is None:
            got = self.__dict__["_ranks_apart_"] = bool(all_distinct(self.rank_node[: self.size]))
        return got

    def _triple_routes(
        self, s: np.ndarray, v: np.ndarray, d: np.ndarray, us: np.ndarray, ud: np.ndarray, distinct: bool = False
    ) -> np.ndarray:
        """The routes (rows of arcs padded with -1) of distinct triples (node ``s``, via ``v``, node ``d``)
        of messages ``us -> ud``: :meth:`_route_via`'s. Many of them on a two-level fabric are routed in
        bulk from the via (or the source) on (:mod:`sim.bulkroute`); the few distinct ways from a GPU to
        its NIC by the router. ``distinct``: the triples come in any order, none with a via (else sorted)."""
        bulk = self._via_bulk() if len(s) >= _BULK_MIN else None
        if bulk is None:
            return self._legs_routes(s, v, d, us, ud, distinct)
        check_deadline()
        has = v >= 0
        start = np.where(has, v, s)
        tail = self._bulk_routes(bulk, start, d, us, ud)
        n = len(self.nodes)
        heads, first, where = np.unique(s[has] * n + v[has], return_index=True, return_inverse=True)
        head = np.full((len(s), 1), -1, dtype=np.int64)
        if len(heads):
            at = np.flatnonzero(has)[first]
            ways = self._bulk_routes(bulk, s[at], v[at], us[at], ud[at])
            head = np.full((len(s), ways.shape[1]), -1, dtype=np.int64)
            head[has] = ways[where.ravel()]
        return _joined(head, tail)

    def _legs_routes(
        self, s: np.ndarray, v: np.ndarray, d: np.ndarray, us: np.ndarray, ud: np.ndarray, distinct: bool = False
    ) -> np.ndarray:
        """:meth:`_triple_routes` by the router's routes of many pairs (:meth:`sim.routing.Router.routes`:
        an up-down router's in one compiled pass): the way to the via (or the destination) and, where there
        is a via, on from it -- each distinct leg once (NCCL's channels on one GPU leave by the same ways).
        The legs it leaves out go to :meth:`_node_route` in the order the triples list them (a triple's
        way to the via first), which raises for the first one without a route, naming its pair, as routing
        triple by triple did. ``distinct`` (:meth:`_triple_routes`): no via, each leg a triple's own, in
        any order -- the legs left out go in the order of their triples sorted, as :meth:`_route_many` sorts them."""
        has = v >= 0
        n = len(self.nodes)
        if distinct:
            a, b = s, d
            legs = where = np.arange(len(s))
        else:
            starts = np.concatenate([s, v[has]])
            stops = np.concatenate([np.where(has, v, d), d[has]])
            legs, first, where = np.unique(starts * n + stops, return_index=True, return_inverse=True)
            where = where.ravel()
            a, b = starts[first], stops[first]
        step = len(legs) if self.router.bulk else 4096  # (pair by pair: --timeout looked at between blocks)
        parts, lefts = [], []
        for lo in range(0, len(legs), step):
            check_deadline()
            rows, left = self.router.routes(a[lo : lo + step], b[lo : lo + step])
            parts.append(rows)
            lefts.append(left)
        width = max((p.shape[1] for p in parts), default=1)
        if len(parts) == 1:  # (one block, the router's own fresh arrays: no copies)
            rows, left = parts[0], np.flatnonzero(lefts[0])
        else:
            rows = np.concatenate([_widened(p, width) for p in parts]) if parts else np.full((0, 1), -1, dtype=np.int64)
            left = np.flatnonzero(np.concatenate(lefts)) if lefts else np.zeros(0, dtype=np.int64)
        if len(left):
            # each leg's first place among the triples': its triple, the way to the via before the way on
            if distinct:  # (the triples' places once sorted: no via, so a leg's (s, d) orders them)
                place = np.empty(len(legs), dtype=np.int64)
                place[np.argsort(s * n + d, kind="stable")] = 2 * np.arange(len(legs))
            else:
                triple = np.concatenate([np.arange(len(s)), np.flatnonzero(has)])
                place = np.full(len(legs), np.iinfo(np.int64).max)
                np.minimum.at(place, where, 2 * triple + (np.arange(len(starts)) >= len(s)))
            for k in left[np.argsort(place[left], kind="stable")].tolist():
                try:
                    arcs = self._node_route(int(a[k]), int(b[k]))
                except RoutingError:
                    t = k if distinct else int(place[k]) // 2
                    self._routed(int(us[t]), int(ud[t]))  # raises, naming the pair
                    raise
                rows = _widened(rows, len(arcs))
                rows[k, : len(arcs)] = arcs
        if distinct:
            return rows
        rows = rows[where]
        head = rows[: len(s)]
        if not has.any():
            return head
        tail = np.full_like(head, -1)
        tail[has] = rows[len(s) :]
        return _joined(head, tail)

    def _latencies(self, rows: np.ndarray) -> np.ndarray:
        """Each route's latency, from rows of arcs padded with -1 (in one compiled pass where the core is
        built: the same sums, numpy's order)."""
        lat = self.latency
        if _CORE is not None and rows.ndim == 2 and rows.shape[1] and len(lat) and lat.dtype == np.float64:
            out = np.empty(len(rows))
            _CORE.row_latency(np.ascontiguousarray(rows, dtype=np.int64).reshape(-1), rows.shape[1], lat, out)
            return out
        # (the padding's -1 read as the last arc by take's wrap, then 0.0: a gather without an index array made)
        return np.where(rows >= 0, self.latency.take(rows, mode="wrap"), 0.0).sum(axis=1)

    def _bulk_routes(self, bulk: Any, a: np.ndarray, b: np.ndarray, us: np.ndarray, ud: np.ndarray) -> np.ndarray:
        """Routes between nodes ``a[i]`` and ``b[i]`` (of messages ``us[i] -> ud[i]``) from ``bulk``, the
        router's own where it leaves them (several common neighbours, ends that are no origin)."""
        rows, odd = bulk.node_routes(a, b)
        for i in np.flatnonzero(odd).tolist():
            try:
                arcs = self._node_route(int(a[i]), int(b[i]))
            except RoutingError:
                self._routed(int(us[i]), int(ud[i]))  # raises, naming the pair
                raise
            rows = _widened(rows, len(arcs))
            rows[i] = -1
            rows[i, : len(arcs)] = arcs
        return rows

    def _via_bulk(self) -> Any:
        """The bulk router from the ranks' nodes and the vias (:mod:`sim.bulkroute`), or None."""
        got = self.__dict__.get("_via_bulk_router")
        if got is None or got[0] != len(self._via):
            from .bulkroute import bulk_router  # noqa: PLC0415 - only large route sets need it

            origins = np.concatenate([self.rank_node[: self.size], np.array(list(self._via.values()), dtype=np.int64)])
            got = self.__dict__["_via_bulk_router"] = (len(self._via), bulk_router(self, origins=origins))
        return got[1]

    def _node_host_ids(self) -> np.ndarray:
        """Per node, a number for the host it belongs to (-1: none)."""
        ids = self.__dict__.get("_host_ids_of_nodes")
        if ids is None:
            number: dict[str, int] = {}
            ids = self.__dict__["_host_ids_of_nodes"] = np.array(
                [-1 if h is None else number.setdefault(h, len(number)) for h in self._node_hosts()], dtype=np.int64
            )
        return ids

    def path_ids(self, srcs: np.ndarray, dsts: np.ndarray) -> np.ndarray:
        """:meth:`path_id` of every pair ``srcs[i] -> dsts[i]``: the same ids, new routes interned in
        the order their pairs first appear. Many new pairs between distinct ranks of a two-level up-down
        fabric are routed in bulk (:mod:`sim.bulkroute`, the router's routes without a loop per pair)."""
        srcs = np.asarray(srcs, dtype=np.int64).ravel()
        dsts = np.asarray(dsts, dtype=np.int64).ravel()
        if not len(srcs):
            return np.zeros(0, dtype=np.int64)
        width = max(self.endpoints, int(srcs.max()) + 1, int(dsts.max()) + 1)
        keys = srcs * width + dsts
        if (keys[1:] > keys[:-1]).all():  # distinct and in order already (a dataflow's pairs): as they are
            where = None
            us, ud = srcs, dsts
        else:
            _, first, where = np.unique(keys, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")  # distinct pairs in order of first appearance
            us, ud = srcs[first[order]], dsts[first[order]]
        pids = self._known(us, ud)
        new = np.flatnonzero(pids < 0)
        bulk = None
        if len(new) >= _BULK_MIN and ((us[new] < self.size) & (ud[new] < self.size) & (us[new] != ud[new])).all():
            if self._bulk is None:
                from .bulkroute import bulk_router  # noqa: PLC0415 - only large route sets need it

                self._bulk = bulk_router(self) or False
            bulk = self._bulk or None
        if bulk is not None:
            check_deadline()
            rows, odd = bulk.routes(us[new], ud[new])  # type: ignore[attr-defined]
            for i in np.flatnonzero(odd).tolist():  # several common neighbours: the router's own choice
                arcs = self.router.route(int(self.rank_node[us[new[i]]]), int(self.rank_node[ud[new[i]]]))
                rows[i] = -1
                rows[i, : len(arcs)] = arcs
            fresh = rows
            latency = self._latencies(fresh)
            ids = self.paths.add_many(fresh, latency, us[new], ud[new], self.capacity)
            pids[new] = ids
            self._bulk_add(us[new], ud[new], ids)
        elif len(new):
            pids[new] = self._route_many(us[new], ud[new])
        if where is None:
            return pids
        by_key = np.empty_like(pids)
        by_key[order] = pids
        return by_key[where.ravel()]

    def intern_routes(self, srcs: np.ndarray, dsts: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Path ids of the routes ``srcs`` -> ``dsts`` between ranks, whose arcs ``rows`` (padded with -1)
        were computed in bulk (:mod:`sim.bulkroute`); pairs not interned yet are, as :meth:`path_id`
        would."""
        pids = self._known(srcs, dsts)
        new = np.flatnonzero(pids < 0)
        if len(new):
            fresh = rows[new]
            latency = self._latencies(fresh)
            ids = self.paths.add_many(fresh, latency, srcs[new], dsts[new], self.capacity)
            pids[new] = ids
            self._bulk_add(srcs[new], dsts[new], ids)  # (sorted keys: found again without a loop per pair)
        return pids

    def _known_one(self, src: int, dst: int) -> int:
        """:meth:`_known` of one pair not in ``_pid``: its id among the pairs interned in bulk, or -1 (one
        search of the sorted keys, no arrays made)."""
        if not (0 <= src < 1 << 31 and 0 <= dst < 1 << 32):  # (keys beyond what an int64 holds as is)
            return int(self._known(np.array([src]), np.array([dst]))[0])
        key = src << 32 | dst  # (_pair_keys')
        keys = self._bulk_keys
        at = int(keys.searchsorted(key))
        return int(self._bulk_ids[at]) if at < len(keys) and int(keys[at]) == key else -1

    def _known(self, srcs: np.ndarray, dsts: np.ndarray) -> np.ndarray:
        """Path ids of the pairs already interned; -1 for the others."""
        pids = np.full(len(srcs), -1, dtype=np.int64)
        if len(self._bulk_keys):
            key = _pair_keys(srcs, dsts)
            pos = np.minimum(np.searchsorted(self._bulk_keys, key), len(self._bulk_keys) - 1)
            hit = self._bulk_keys[pos] == key
            pids[hit] = self._bulk_ids[pos[hit]]
        if self._pid:
            rest = np.flatnonzero(pids < 0)
            if len(rest) > 64 and len(rest) > 2 * len(self._pid):  # the dict's fewer pairs searched for instead
                pairs = np.array(list(self._pid), dtype=np.int64).reshape(-1, 2)
                keys = _pair_keys(pairs[:, 0], pairs[:, 1])
                sort = np.argsort(keys)
                keys, ids = keys[sort], np.fromiter(self._pid.values(), dtype=np.int64, count=len(keys))[sort]
                key = _pair_keys(srcs[rest], dsts[rest])
                pos = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
                hit = keys[pos] == key
                pids[rest[hit]] = ids[pos[hit]]
                return pids
            get = self._pid.get
            pairs = zip(srcs[rest].tolist(), dsts[rest].tolist(), strict=True)
            pids[rest] = np.fromiter((get(k, -1) for k in pairs), dtype=np.int64, count=len(rest))
        return pids

    def arc_name(self, arc: int) -> str:
        return f"{self.nodes[self.arc_u[arc]]}->{self.nodes[self.arc_v[arc]]}"

    def alpha_beta(self, src: int, dst: int) -> tuple[float, float]:
        """Hockney parameters of the route src -> dst: α = path latency + sender overhead,
        β = 1 / (narrowest bandwidth on the path)."""
        pid = self.path_id(src, dst)
        arcs = self.paths.arcs_of(pid)
        alpha = float(self.paths.latency[pid] + self.overhead[src])
        beta = float(1.0 / self.capacity[arcs].min()) if len(arcs) else 0.0
        return alpha, beta


@dataclass(frozen=True)
class Hockney:
    """α-β parameters of a cluster where every rank pair sees the same path cost."""

    alpha: float
    beta: float


def hockney(cluster: Cluster) -> Hockney:
    """α and β shared by all rank pairs (a star, say); raises ConfigError when pairs differ."""
    pairs = {cluster.alpha_beta(0, d) for d in range(1, cluster.size)}
    pairs |= {cluster.alpha_beta(s, 0) for s in range(1, cluster.size)}
    if len(pairs) != 1:
        raise ConfigError(f"{cluster.name}: rank pairs have different α-β costs; no single closed form applies")
    alpha, beta = pairs.pop()
    return Hockney(alpha, beta)


def _pair_keys(srcs: np.ndarray, dsts: np.ndarray) -> np.ndarray:
    """One int64 key per pair of endpoints, ``src << 32 | dst`` (the order of the bulk-interned keys)."""
    return (np.asarray(srcs).astype(np.int64) << 32) | np.asarray(dsts, dtype=np.int64)


def _host_keys(graph: nx.DiGraph, nodes: list[str]) -> np.ndarray:
    """Per node, the ordinal of its host (the host's own node, its GPUs, NICs and PCIe switches share it;
    a network switch is its own): the key destination-based routing picks a port by."""
    ordinal: dict[str, int] = {}
    keys = np.empty(len(nodes), dtype=np.int64)
    for i, v in enumerate(nodes):
        keys[i] = ordinal.setdefault(graph.nodes[v].get("host") or v, len(ordinal))
    return keys


def _joined(head: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """Rows of routes (padded with -1) ``head[i]`` then ``tail[i]``."""
    out = np.full((len(head), head.shape[1] + tail.shape[1]), -1, dtype=np.int64)
    out[:, : head.shape[1]] = head
    valid = tail >= 0
    cols = (head >= 0).sum(axis=1)[:, None] + np.arange(tail.shape[1])[None, :]
    out[np.nonzero(valid)[0], cols[valid]] = tail[valid]
    return out


def _widened(rows: np.ndarray, width: int) -> np.ndarray:
    """``rows`` (routes padded with -1) with ``width`` columns at least."""
    if width <= rows.shape[1]:
        return rows
    return np.concatenate([rows, np.full((len(rows), width - rows.shape[1]), -1, dtype=np.int64)], 1)
