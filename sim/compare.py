"""Every algorithm of a collective side by side on one cluster and one size, fastest first.

>>> rows = compare("star:hosts=8,bandwidth=100Gbps,latency=1us", "64MiB")
>>> [(row.algorithm, round(row.result.time_s * 1e3, 3)) for row in rows[:4]]
[('ps', 9.399), ('halving-doubling', 9.407), ('hierarchical:outer=halving-doubling', 9.407), ('ring', 9.423)]
>>> [row.algorithm for row in rows if row.result is None]
['ps:placement=dedicated', 'ps:shards=2,placement=dedicated', 'nvls', 'nvls-tree', 'collnet-direct', 'collnet-chain']

All of them move the bandwidth-optimal 2·(p-1)/p·n per rank; ``ps`` with one co-located shard per rank
pays 2 message latencies, halving-doubling 2·log2 p, the ring 2(p-1) (on a star every host has one GPU,
so hierarchical is its outer algorithm). Algorithms that cannot run on
the cluster (a dedicated parameter server without hosts to spare, NVLS without an NVSwitch that
reduces, CollNet without switches that do) come last, with the reason instead
of a result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import networkx as nx

from .algorithms import algorithm_names, get_algorithm
from .algorithms.registry import _REGISTRY
from .cluster import Cluster
from .collectives import get_collective
from .errors import AlgorithmError, ConfigError
from .linkmodel import LinkModel
from .prepare import nccl_release_of, resolve_cluster
from .results import SimResult
from .simulate import simulate
from .units import check_size

__all__ = ["Comparison", "candidates", "compare"]


@dataclass(frozen=True)
class Comparison:
    """One row: the algorithm's spec and its result, or why it was skipped."""

    algorithm: str
    result: SimResult | None = None
    skipped: str = ""


def candidates(collective: str = "allreduce") -> list[str]:
    """What :func:`compare` runs: every registered algorithm with its default options, then each of
    its example option sets (``tree:chunks=4``, ``ps:placement=dedicated``, ...), as canonical specs."""
    coll = get_collective(collective).name
    out: list[str] = []
    for name in algorithm_names(coll):
        out.append(name)
        out.extend(get_algorithm(coll, example).spec for example in _REGISTRY[(coll, name)].examples)
    return out


def compare(
    topology: str | os.PathLike[str] | nx.Graph | Cluster,
    size: float | str,
    *,
    collective: str = "allreduce",
    ranks: int | None = None,
    gamma: float | None = None,
    algorithms: list[str] | None = None,
    link_model: LinkModel | None = None,
) -> list[Comparison]:
    """Simulate ``algorithms`` (default: :func:`candidates`) and return them fastest first, the ones
    that do not apply last (in the order given)."""
    cluster = resolve_cluster(topology, link_model)
    size = check_size(size)
    p = ranks or cluster.size
    if p > cluster.size:
        raise ConfigError(f"ranks: {p}, but the cluster {cluster.name} has only {cluster.size} GPUs", param="ranks")
    coll = get_collective(collective).name
    ran: list[Comparison] = []
    skipped: list[Comparison] = []
    seen: set[str] = set()
    for spec in algorithms or candidates(coll):
        algo = get_algorithm(coll, spec)
        runs = nccl_release_of(algo, cluster.link_model).spec  # (a calibration's NCCL release, where it has one)
        if runs in seen:  # another spec that runs the same (``nccl`` and ``nccl:version=R`` under R's calibration)
            continue
        seen.add(runs)
        try:
            result = simulate(cluster, coll, algo, size, ranks=p, gamma=gamma)
        except AlgorithmError as exc:
            skipped.append(Comparison(algo.spec, skipped=str(exc)))
            continue
        ran.append(Comparison(algo.spec, result))
    ran.sort(key=lambda row: row.result.time_s if row.result else 0.0)
    return ran + skipped
