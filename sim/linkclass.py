"""Link classes: which kind of path a message between two ranks takes, read off the topology.

Calibration measures and fits one set of parameters per class, and applies them to every message of
that class. A route between two ranks is in exactly one class:

=================  ==============================================================================
``intra-host``     both ranks are GPUs of the same host (NVLink/NVSwitch, PCIe, or loopback)
``same-switch``    different hosts, the route crosses switches but no switch-to-switch link
``cross-switch``   the route crosses at least one switch-to-switch link (rack uplinks, spines)
``direct``         different hosts linked without a switch (torus and ring builders)
=================  ==============================================================================

>>> from sim.cluster import Cluster
>>> c = Cluster("netlab-2rack")
>>> pair_class(c, 0, 1), pair_class(c, 0, 2)
('same-switch', 'cross-switch')
>>> classes_of(c)
{'same-switch': [(0, 1), (1, 0), (2, 3), (3, 2)], 'cross-switch': [(0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1)]}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .topology.graph import SWITCH

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["LINK_CLASSES", "classes_of", "pair_class", "path_class", "path_classes"]

#: every class, cheapest first
LINK_CLASSES = ("intra-host", "same-switch", "cross-switch", "direct")

#: pairs examined per class at most (classes_of stays cheap on large clusters)
_SCAN_RANKS = 64


def _switch_nodes(cluster: Cluster) -> np.ndarray:
    cached = getattr(cluster, "_switch_mask", None)
    if cached is None:
        nodes = cluster.graph.nodes
        cached = np.array([nodes[v].get("kind") == SWITCH for v in cluster.nodes], dtype=bool)
        cluster._switch_mask = cached  # type: ignore[attr-defined]
    return cached


def _endpoint_host(cluster: Cluster, e: int) -> str:
    """The host of endpoint ``e`` (a rank, or an actor beyond the ranks: a channel, an NVSwitch engine)."""
    if e < cluster.size:
        return cluster.host_of(e)
    node = cluster.nodes[int(cluster.rank_node[e])]
    return cluster.graph.nodes[node].get("host") or node


def path_class(cluster: Cluster, pid: int) -> str:
    """The class of interned path ``pid`` (see the module docstring)."""
    src, dst = int(cluster.paths.src[pid]), int(cluster.paths.dst[pid])
    if _endpoint_host(cluster, src) == _endpoint_host(cluster, dst):
        return "intra-host"
    arcs = cluster.paths.arcs_of(pid)
    switch = _switch_nodes(cluster)
    at_u, at_v = switch[cluster.arc_u[arcs]], switch[cluster.arc_v[arcs]]
    if (at_u & at_v).any():
        return "cross-switch"
    if at_v.any():
        return "same-switch"
    return "direct"


def path_classes(cluster: Cluster, pids: np.ndarray) -> list[str]:
    """:func:`path_class` of every path in ``pids``."""
    return [path_class(cluster, int(pid)) for pid in pids]


def pair_class(cluster: Cluster, src: int, dst: int) -> str:
    """The class of the route from rank ``src`` to rank ``dst``."""
    return path_class(cluster, cluster.path_id(src, dst))


def classes_of(cluster: Cluster, ranks: int | None = None) -> dict[str, list[tuple[int, int]]]:
    """Class -> the ordered rank pairs (src, dst) in it, cheapest class first; on large clusters only
    the pairs among the first 64 ranks are examined (enough to find a representative of each class)."""
    p = min(cluster.size if ranks is None else ranks, _SCAN_RANKS)
    found: dict[str, list[tuple[int, int]]] = {}
    for src in range(p):
        for dst in range(p):
            if src != dst:
                found.setdefault(pair_class(cluster, src, dst), []).append((src, dst))
    return {name: found[name] for name in LINK_CLASSES if name in found}
