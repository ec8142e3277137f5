"""Random clusters and collectives for the property tests (tests/test_properties.py) and the monotonicity
search (benchmarks/monotonicity.py): every case is drawn from one integer seed, so any case a test or a
search reports can be rebuilt exactly with :func:`case`.

>>> c = case(7)
>>> c.describe() == case(7).describe()
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import networkx as nx

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.collectives import COLLECTIVES
from sim.compare import candidates
from sim.topology.graph import ClusterBuilder

__all__ = ["Case", "case", "random_cluster", "scaled"]

GB = 1e9
_BANDWIDTHS = (0.5 * GB, 1 * GB, 2 * GB, 4 * GB, 12.5 * GB)
_LATENCIES = (0.0, 1e-6, 5e-6)


def random_cluster(rng: random.Random) -> nx.DiGraph:
    """A small cluster with links of mixed bandwidth and latency: a star, two racks under a core, or a
    chain of three switches; 2-9 hosts of one or two GPUs, some host links asymmetric."""
    shape = rng.choice(("star", "racks", "chain"))
    b = ClusterBuilder(f"random-{shape}", overhead=rng.choice((0.0, 0.0, 2e-6)))
    switches = {"star": ["s0"], "racks": ["core", "r0", "r1"], "chain": ["s0", "s1", "s2"]}[shape]
    for s in switches:
        b.add_switch(s)
    if shape == "racks":
        for r in ("r0", "r1"):
            b.add_link(r, "core", bandwidth=rng.choice(_BANDWIDTHS), latency=rng.choice(_LATENCIES))
    elif shape == "chain":
        b.add_link("s0", "s1", bandwidth=rng.choice(_BANDWIDTHS), latency=rng.choice(_LATENCIES))
        b.add_link("s1", "s2", bandwidth=rng.choice(_BANDWIDTHS), latency=rng.choice(_LATENCIES))
    edge = [s for s in switches if s != "core"]
    gpus = rng.choice((1, 1, 2))
    for h in range(rng.randint(2, 9)):
        name = f"h{h}"
        b.add_host(name, gpus=gpus, intra_bandwidth=rng.choice(_BANDWIDTHS) * 4, intra_latency=rng.choice(_LATENCIES))
        reverse = rng.choice((None, None, rng.choice(_BANDWIDTHS)))
        b.add_link(
            name,
            rng.choice(edge),
            bandwidth=rng.choice(_BANDWIDTHS),
            latency=rng.choice(_LATENCIES),
            reverse_bandwidth=reverse,
        )
    return b.build()


@dataclass(frozen=True)
class Case:
    """One simulation: a cluster, a collective, an algorithm, a size, a rank count, a reduction cost."""

    seed: int
    graph: nx.DiGraph
    collective: str
    algorithm: str
    size: int
    ranks: int
    gamma: float

    def describe(self) -> str:
        links = sorted(
            (d["link"], u, round(d["bandwidth"] / GB, 3), d["latency"]) for u, v, d in self.graph.edges(data=True)
        )
        return (
            f"seed {self.seed}: {self.collective} {self.algorithm}, {self.size} B, {self.ranks} ranks, "
            f"gamma {self.gamma:g}, {self.graph.graph['name']} {links}"
        )


def case(seed: int, *, collectives: tuple[str, ...] | None = None) -> Case:
    """The case drawn from ``seed`` (an algorithm that cannot run on the drawn ranks, or whose pick for the
    drawn size is refused -- ``nccl`` for all-gather picking PAT -- is replaced by the collective's first
    algorithm, which runs on any)."""
    rng = random.Random(seed)
    graph = random_cluster(rng)
    total = len(graph.graph["ranks"])
    ranks = rng.randint(2, total) if total > 2 else total
    collective = rng.choice(collectives or tuple(COLLECTIVES))
    algorithm = rng.choice(candidates(collective))
    algo = get_algorithm(collective, algorithm)
    try:
        algo.check(ranks, Cluster(graph))
    except Exception:  # noqa: BLE001 - any refusal: fall back to the collective's first algorithm
        algorithm = candidates(collective)[0]
    size = rng.choice((1, 1000, 4096, 65536, 1 << 20, 3 * (1 << 20) + 7))
    gamma = rng.choice((0.0, 0.0, 1e-10))
    builds = getattr(get_algorithm(collective, algorithm), "builds", None)
    if builds is not None and not builds(ranks, size, Cluster(graph)):  # NCCL picks a schedule not built
        algorithm = candidates(collective)[0]
    return Case(seed, graph, collective, algorithm, size, ranks, gamma)


def scaled(graph: nx.DiGraph, link: str | None = None, *, bandwidth: float = 1.0, latency: float = 1.0) -> nx.DiGraph:
    """A copy of ``graph`` with the bandwidth and latency of ``link`` (both directions; every link when
    None) multiplied by the given factors."""
    g = graph.copy()
    for _u, _v, data in g.edges(data=True):
        if link is None or data["link"] == link:
            data["bandwidth"] *= bandwidth
            data["latency"] *= latency
    return g
