"""The cluster graph: how hosts, GPUs, NICs, switches and links are stored in networkx.

A topology is a :class:`networkx.DiGraph`. Every physical link is full duplex and appears as two arcs,
one per direction, each with its own ``bandwidth`` (bytes/s) and ``latency`` (s), plus ``weight`` (the
routing metric, 1 per hop unless set) and ``link`` (a name shared by the two arcs). Nodes carry
``kind`` -- one of ``gpu``, ``nic``, ``switch`` or ``nvswitch`` (a host's internal fabric) -- and, for
the nodes inside a host, ``host``. A GPU node may carry ``overhead`` (seconds of software cost per
message it sends; the graph's ``overhead`` applies otherwise) and ``compute_scale`` (a straggler factor).

Graph attributes: ``name``, ``ranks`` (GPU node names in rank order), ``overhead`` and ``spec`` (how it
was built). :class:`ClusterBuilder` is the one place that adds nodes and links, used by the generators
and by the YAML loader alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import networkx as nx

from ..deadline import check as check_deadline
from ..errors import TopologyError

__all__ = [
    "GPU",
    "BYTES_PER_ELEMENT",
    "MAX_GPUS",
    "MAX_LINKS",
    "available_memory",
    "check_memory",
    "NIC",
    "NODE_KINDS",
    "NVSWITCH",
    "SWITCH",
    "ClusterBuilder",
    "gpu_nodes",
    "hosts_of",
]

#: 2,097,152 GPUs: a bound that refuses absurd specs before memory blows up
MAX_GPUS = 1 << 21
#: 8,388,608 links (16.8 M link directions): the largest DGX cluster within MAX_GPUS has exactly that
MAX_LINKS = 1 << 23

GPU = "gpu"
NIC = "nic"
SWITCH = "switch"
NVSWITCH = "nvswitch"
NODE_KINDS = (GPU, NIC, SWITCH, NVSWITCH)


#: What one node or link of a built cluster costs in memory, measured (networkx dicts, names, the
#: arrays of sim.Cluster): ~700 B for the graph, rounded up to leave room for routing and the summary.
BYTES_PER_ELEMENT = 1024


def available_memory() -> int | None:
    """Bytes this process may still allocate: the least of the machine's available memory, the cgroup's
    limit less its use, and the address-space limit less what is mapped (None when none is known)."""
    bounds: list[int] = []
    # (read as bytes: a text file's first ascii decoder costs an import, ~0.15 ms of every fresh process's build)
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    bounds.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", "rb") as fh:
            limit = fh.read().strip()
        with open("/sys/fs/cgroup/memory.current", "rb") as fh:
            used = int(fh.read().strip())
        if limit.isdigit():
            bounds.append(int(limit) - used)
    except (OSError, ValueError):
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm", "rb") as fh:
                mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            bounds.append(soft - mapped)
    except (OSError, ValueError, ImportError, IndexError):
        pass
    return max(0, min(bounds)) if bounds else None


def check_memory(what: str, nodes: int, links: int) -> None:
    """Refuse, before building, a cluster whose graph would not fit in the memory this process has."""
    need = BYTES_PER_ELEMENT * (nodes + links)
    have = available_memory()
    if have is not None and need > have:
        raise TopologyError(
            f"{what}: {nodes:,} nodes and {links:,} links need about {need / 2**30:.1f} GiB to build, "
            f"more than the {have / 2**30:.1f} GiB of memory available"
        )


class ClusterBuilder:
    """Accumulates a cluster and returns it as a validated :class:`networkx.DiGraph`.

    >>> b = ClusterBuilder("tiny")
    >>> b.add_switch("sw0")
    >>> b.add_host("h0"); b.add_host("h1")
    ['h0']
    ['h1']
    >>> b.add_link("h0", "sw0", bandwidth=1e9, latency=1e-6)
    >>> b.add_link("h1", "sw0", bandwidth=1e9, latency=1e-6)
    >>> g = b.build()
    >>> g.graph["ranks"], g.number_of_edges()
    (['h0', 'h1'], 4)
    """

    def __init__(self, name: str, *, overhead: float = 0.0, spec: str | None = None) -> None:
        self.graph = nx.DiGraph(name=name, overhead=float(overhead), spec=spec or name)
        self._gpus: list[str] = []
        self._links = 0

    # -- nodes ---------------------------------------------------------------------------------
    def add_node(self, name: str, kind: str, *, host: str | None = None, **attrs: Any) -> None:
        if kind not in NODE_KINDS:
            raise TopologyError(f"node {name!r}: unknown kind {kind!r} (valid: {', '.join(NODE_KINDS)})")
        if name in self.graph:
            raise TopologyError(f"node {name!r} is defined twice")
        self.graph.add_node(name, kind=kind, host=host, **attrs)
        if not len(self.graph) & 1023:
            check_deadline()  # a cluster of millions of single-GPU hosts has few links to check at
        if kind == GPU:
            self._gpus.append(name)

    def add_switch(self, name: str) -> None:
        self.add_node(name, SWITCH)

    def add_host(
        self,
        name: str,
        *,
        gpus: int = 1,
        intra_bandwidth: float | None = None,
        intra_latency: float = 0.0,
        overhead: float | None = None,
        compute_scale: float | None = None,
    ) -> list[str]:
        """Add a host and return its GPU node names.

        ``overhead`` (seconds per message sent) and ``compute_scale`` (a factor on every reduction's
        time: 2.0 is a GPU that reduces at half speed) make a host's GPUs stragglers.

        A host with one GPU is a single node named after the host (the GPU and its NIC in one
        endpoint). A host with several GPUs gets an ``nvswitch`` node named after the host, which its
        GPUs ``HOST:gpuI`` reach over links of ``intra_bandwidth``; the host's network links attach to
        that node.
        """
        if gpus < 1:
            raise TopologyError(f"host {name!r}: gpus must be >= 1, got {gpus}")
        if len(self._gpus) + gpus > MAX_GPUS:
            raise TopologyError(
                f"host {name!r}: {len(self._gpus) + gpus:,} GPUs is more than collsim builds (at most {MAX_GPUS:,})"
            )
        if gpus > 4096:
            check_memory(f"host {name!r}", 2 * (len(self._gpus) + gpus), self._links + gpus)
        extra: dict[str, float] = {}
        if overhead is not None:
            extra["overhead"] = float(overhead)
        if compute_scale is not None:
            if not compute_scale > 0:
                raise TopologyError(f"host {name!r}: compute_scale must be > 0, got {compute_scale}")
            extra["compute_scale"] = float(compute_scale)
        if gpus == 1:
            self.add_node(name, GPU, host=name, **extra)
            return [name]
        if intra_bandwidth is None or intra_bandwidth <= 0:
            raise TopologyError(f"host {name!r}: {gpus} GPUs need intra_bandwidth > 0")
        self.add_node(name, NVSWITCH, host=name)
        names = []
        for i in range(gpus):
            gpu = f"{name}:gpu{i}"
            self.add_node(gpu, GPU, host=name, **extra)
            self.add_link(gpu, name, bandwidth=intra_bandwidth, latency=intra_latency)
            names.append(gpu)
        return names

    # -- links ---------------------------------------------------------------------------------
    def add_link(
        self,
        a: str,
        b: str,
        *,
        bandwidth: float,
        latency: float = 0.0,
        weight: float = 1.0,
        reverse_bandwidth: float | None = None,
        reverse_latency: float | None = None,
    ) -> None:
        """A full-duplex link: arcs a->b (``bandwidth``, ``latency``) and b->a (the ``reverse_*``
        values where given, else the same)."""
        if self._links >= MAX_LINKS:
            raise TopologyError(f"link {a}--{b}: more than {MAX_LINKS:,} links is more than collsim builds")
        check_deadline()  # building a big cluster counts against --timeout too
        for end in (a, b):
            if end not in self.graph:
                raise TopologyError(f"link {a}--{b}: unknown node {end!r}")
        if a == b:
            raise TopologyError(f"link {a}--{b}: a link needs two different nodes")
        if self.graph.has_edge(a, b):
            raise TopologyError(f"link {a}--{b} is defined twice")
        rb = bandwidth if reverse_bandwidth is None else reverse_bandwidth
        rl = latency if reverse_latency is None else reverse_latency
        for bw, lat, where in ((bandwidth, latency, f"{a}->{b}"), (rb, rl, f"{b}->{a}")):
            if not bw > 0:
                raise TopologyError(f"link {where}: bandwidth must be > 0, got {bw}")
            if not lat >= 0:
                raise TopologyError(f"link {where}: latency must be >= 0, got {lat}")
        if not weight > 0:
            raise TopologyError(f"link {a}--{b}: weight must be > 0, got {weight}")
        link = f"{a}--{b}"
        self._links += 1
        self.graph.add_edge(a, b, bandwidth=float(bandwidth), latency=float(latency), weight=float(weight), link=link)
        self.graph.add_edge(b, a, bandwidth=float(rb), latency=float(rl), weight=float(weight), link=link)

    # -- result --------------------------------------------------------------------------------
    def build(self, ranks: Iterable[str] | None = None, routing: str = "dijkstra") -> nx.DiGraph:
        """Return the graph with ``ranks`` (GPU nodes in rank order) set and connectivity checked.

        ``routing`` names how routes are found (see :mod:`sim.routing`): ``updown`` only for fabrics
        whose shortest paths climb then descend (stars, leaf-spines, rail-optimized DGX networks).
        """
        self.graph.graph["routing"] = routing
        order = list(ranks) if ranks is not None else list(self._gpus)
        if not order:
            raise TopologyError(f"topology {self.graph.graph['name']!r} has no GPUs")
        seen: set[str] = set()
        for node in order:
            if node not in self.graph or self.graph.nodes[node].get("kind") != GPU:
                raise TopologyError(f"placement: {node!r} is not a GPU of this topology")
            if node in seen:
                raise TopologyError(f"placement: GPU {node!r} is listed twice")
            seen.add(node)
        self.graph.graph["ranks"] = order
        check_connected(self.graph, order)
        return self.graph


def check_connected(graph: nx.DiGraph, gpus: list[str]) -> None:
    """Raise :class:`TopologyError` naming two GPUs that cannot reach each other."""
    if len(gpus) < 2:
        return
    # Links are full duplex, so reachability is symmetric and weak components suffice.
    component = nx.node_connected_component(graph.to_undirected(as_view=True), gpus[0])
    for gpu in gpus[1:]:
        if gpu not in component:
            raise TopologyError(f"GPUs {gpus[0]!r} and {gpu!r} cannot reach each other")


def gpu_nodes(graph: nx.DiGraph) -> list[str]:
    """GPU node names in rank order."""
    return list(graph.graph["ranks"])


def hosts_of(graph: nx.DiGraph) -> dict[str, list[str]]:
    """Host name -> its GPU node names (in rank order)."""
    hosts: dict[str, list[str]] = {}
    for gpu in graph.graph["ranks"]:
        hosts.setdefault(graph.nodes[gpu]["host"] or gpu, []).append(gpu)
    return hosts
