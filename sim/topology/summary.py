"""``collsim topology show``: what a cluster holds and what its network can carry."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import networkx as nx

from ..units import format_bandwidth
from .graph import NIC, NVSWITCH, SWITCH, hosts_of

__all__ = ["TopologySummary", "bisection_bandwidth", "summarize"]

#: bisection by max-flow is computed up to this many GPUs (it grows quickly beyond)
BISECTION_LIMIT = 4096


@dataclass(frozen=True)
class TopologySummary:
    name: str
    spec: str
    hosts: int
    gpus: int
    nics: int
    switches: int
    nvswitches: int
    links: int
    link_classes: tuple[tuple[str, int], ...]
    bisection_Bps: float | None
    routing: str = ""

    def lines(self) -> list[str]:
        bis = f"not computed (more than {BISECTION_LIMIT} GPUs)"
        if self.bisection_Bps is not None:
            bis = f"{format_bandwidth(self.bisection_Bps)} ({self.bisection_Bps / 1e9:.4g} GB/s)"
        out = [
            f"topology:   {self.name}  ({self.spec})",
            f"hosts:      {self.hosts}",
            f"GPUs:       {self.gpus}",
            f"NICs:       {self.nics}",
            f"switches:   {self.switches}" + (f" (+{self.nvswitches} NVSwitch fabrics)" if self.nvswitches else ""),
            f"links:      {self.links} full duplex",
        ]
        for label, count in self.link_classes:
            out.append(f"            {count:6d} x {label}")
        out.append(f"bisection:  {bis}  (first half of the ranks -> second half, max-flow)")
        if self.routing:
            out.append(f"routing:    {self.routing}")
        return out


def bisection_bandwidth(graph: nx.DiGraph) -> float:
    """Max-flow (bytes/s) from the first half of the ranks to the second half."""
    ranks = graph.graph["ranks"]
    half = len(ranks) // 2
    if half == 0:
        return 0.0
    flow = nx.DiGraph()
    for u, v, data in graph.edges(data=True):
        flow.add_edge(u, v, capacity=data["bandwidth"])
    for gpu in ranks[:half]:
        flow.add_edge("__source__", gpu)  # no capacity attribute = unbounded
    for gpu in ranks[half:]:
        flow.add_edge(gpu, "__sink__")
    value, _ = nx.maximum_flow(flow, "__source__", "__sink__")
    return float(value)


def routing_of(graph: nx.DiGraph) -> str:
    """How routes are picked (:mod:`sim.routing`), in words."""
    how = "shortest paths" if graph.graph.get("routing") != "updown" else "shortest up-down paths"
    if graph.graph.get("ecmp") == "destination":
        return f"{how}; equal ones by the destination host (InfiniBand, D-mod-K: ecmp=destination)"
    return f"{how}; equal ones by a hash of source and destination per flow (ECMP)"


def summarize(graph: nx.DiGraph) -> TopologySummary:
    kinds = Counter(data.get("kind") for _, data in graph.nodes(data=True))
    classes: Counter[str] = Counter()
    seen = set()
    for u, v, data in graph.edges(data=True):
        if data["link"] in seen:
            continue
        seen.add(data["link"])
        ends = "-".join(sorted((graph.nodes[u]["kind"], graph.nodes[v]["kind"])))
        classes[f"{ends} {format_bandwidth(data['bandwidth'])}, {data['latency'] * 1e6:g} us"] += 1
    gpus = len(graph.graph["ranks"])
    return TopologySummary(
        name=graph.graph.get("name", ""),
        spec=str(graph.graph.get("spec", "")),
        hosts=len(hosts_of(graph)),
        gpus=gpus,
        nics=kinds.get(NIC, 0),
        switches=kinds.get(SWITCH, 0),
        nvswitches=kinds.get(NVSWITCH, 0),
        links=len(seen),
        link_classes=tuple(sorted(classes.items(), key=lambda kv: -kv[1])),
        bisection_Bps=bisection_bandwidth(graph) if gpus <= BISECTION_LIMIT else None,
        routing=routing_of(graph),
    )
