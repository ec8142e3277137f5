"""Where NCCL's schedules put their actors: hosts and their GPUs, each GPU's NICs, channel endpoints,
NVSwitch engines, NCCL's binary trees, and the slice count of a pipelined schedule."""

from __future__ import annotations

import math
import weakref
from collections.abc import Generator
from typing import Any

import numpy as np

from ..errors import AlgorithmError
from ..program import StepProgram, run_messages
from ..runtime import DataCheck
from .pipeline import EndpointData

__all__ = [
    "btree_parent",
    "channel_endpoint",
    "channel_endpoints",
    "dtree_parent",
    "engine",
    "host_ranks",
    "leaf_period",
    "nics_of",
    "run_program",
    "sharp_fabric",
    "sharp_forest",
    "sharp_switches",
    "slices",
]

MAX_SLICES = 4096


def host_ranks(cluster: Any, p: int, even: bool = True) -> list[list[int]]:
    """Ranks 0..p-1 by host (hosts in order of their first rank); with ``even``, every host must hold
    as many."""
    groups: dict[str, list[int]] = {}
    for r in range(p):
        groups.setdefault(cluster.host_of(r), []).append(r)
    out = list(groups.values())
    if even and len({len(g) for g in out}) > 1:
        raise AlgorithmError(
            f"NCCL schedules need the same number of ranks on every host; these hold {sorted({len(g) for g in out})}"
        )
    return out


def nics_of(cluster: Any, rank: int) -> list[str]:
    """The NICs a rank's GPU owns (linked to it, directly or as the NIC's ``gpu``), by name."""
    return list(_nic_table(cluster.graph).get(cluster.ranks[rank], ()))


_NICS: weakref.WeakKeyDictionary[Any, dict[Any, list[str]]] = weakref.WeakKeyDictionary()


def _nic_table(g: Any) -> dict[Any, list[str]]:
    """GPU -> its NICs, sorted: those linked to it if any, else those naming it (and its host) as their
    ``gpu``. One scan of the graph, kept per graph (a scan per rank made laying out 16,384 GPUs'
    channels quadratic)."""
    table = _NICS.get(g)
    if table is not None:
        return table
    direct: dict[Any, list[str]] = {}
    owned: dict[Any, list[str]] = {}
    for v, d in g.nodes(data=True):
        if d.get("kind") != "nic":
            continue
        for u in g.predecessors(v):
            if g.nodes[u].get("kind") == "gpu" and g.has_edge(u, v):
                direct.setdefault(u, []).append(v)
        gpu = d.get("gpu")
        if gpu is not None and gpu in g and d.get("host") == g.nodes[gpu].get("host"):
            owned.setdefault(gpu, []).append(v)
    table = {gpu: sorted(nics) for gpu, nics in owned.items()}
    table.update({gpu: sorted(nics) for gpu, nics in direct.items()})
    _NICS[g] = table
    return table


def channel_endpoint(cluster: Any, rank: int, key: object, nic: int = 0) -> int:
    """Rank ``rank``'s actor for channel ``key``, leaving its host by its ``nic``-th NIC (mod its count)."""
    return channel_endpoints(cluster, [rank], key, nic)[0]


def channel_endpoints(cluster: Any, ranks: list[int], key: object, nic: int = 0) -> list[int]:
    """:func:`channel_endpoint` of every rank in ``ranks`` (one call for a whole channel)."""
    table, names = _nic_table(cluster.graph), cluster.ranks  # not copied: one lookup per channel and GPU
    vias = []
    for rank in ranks:
        nics = table.get(names[rank])
        vias.append(nics[nic % len(nics)] if nics else None)
    return cluster.add_endpoints(ranks, vias, key)


def engine(cluster: Any, rank: int, key: str) -> int:
    """The reduction (``key="reduce"``) or multicast engine of the NVSwitch that ``rank``'s GPU is on."""
    node = cluster.graph.nodes[cluster.ranks[rank]].get("host")
    if node not in cluster.graph or not cluster.graph.nodes[node].get("nvls"):  # (no node: GPUs linked directly)
        raise AlgorithmError(
            f"NVLS needs an NVSwitch that reduces (NVLink SHARP); {cluster.name}'s GPU {cluster.ranks[rank]} has none "
            "(topologies: hgx:preset=dgx-h100 or oci-bm-gpu-h100-8)"
        )
    return cluster.add_endpoint(node=node, key=("nvls", key))


def btree_parent(n: int, r: int) -> int:
    """Parent of ``r`` in NCCL's binary tree over ``n`` nodes, -1 at the root (trees.cc: ncclGetBtree)."""
    if r == 0:
        return -1
    bit = 1
    while bit < n and not bit & r:
        bit <<= 1
    up = (r ^ bit) | (bit << 1)
    return r ^ bit if up >= n else up


def dtree_parent(n: int, r: int, tree: int) -> int:
    """Parent of ``r`` in tree 0 or 1 of NCCL's double binary tree (trees.cc: ncclGetDtree): tree 1
    mirrors tree 0 when ``n`` is even and shifts it by one when odd."""
    if tree == 0 or n == 1:
        return btree_parent(n, r)
    if n % 2 == 0:
        up = btree_parent(n, n - 1 - r)
        return -1 if up < 0 else n - 1 - up
    up = btree_parent(n, (r - 1) % n)
    return -1 if up < 0 else (up + 1) % n


#: buffer slots per connection (device.h: NCCL_STEPS): how many chunks a sender may have in flight
NCCL_STEPS = 8


def slices(per_channel: float, chunk: float) -> int:
    """How many pipeline slices a channel's ``per_channel`` bytes are cut into: a slice is what one
    connection holds in flight, ``NCCL_STEPS`` chunks of NCCL's size (a step of the program waits for
    its messages, where NCCL keeps up to ``NCCL_STEPS`` chunks moving); at most :data:`MAX_SLICES`."""
    return int(min(MAX_SLICES, max(1, math.ceil(per_channel / (NCCL_STEPS * chunk) - 1e-9))))


def run_program(job: Any, program: StepProgram, segments: int) -> Generator[Any, Any, None]:
    """Message-level run of a program whose actors include endpoints beyond the ranks. With the data
    check on, the job's check is replaced by one of ``segments`` segments (the count depends on the
    size, which :meth:`~sim.algorithms.base.Algorithm.segments_for` does not see) seen through
    :class:`EndpointData`; the job keeps it, so the verdict is this one."""
    # the actors were added to the cluster after the job was made: the job's processor time and the
    # cluster's message model grow to them on their own
    if isinstance(job.data, DataCheck):
        fresh = DataCheck(job.data.collective, job.p, segments, job.root)
        job.data = EndpointData(fresh, job.net.cluster, job.p)
    yield from run_messages(job, program)


def lags_up(parent: list[int], first: int) -> tuple[np.ndarray, int]:
    """Reduce-up lags over a forest given by ``parent`` (-1 at roots): a node sends at ``first`` when
    it has no children, else one step after its last child's message; returns (lag per node, the
    step by which every root holds the sum)."""
    up = np.asarray(parent, dtype=np.int64)
    _, depth = _roots_depths(up)
    height = np.zeros(len(up), dtype=np.int64)  # a leaf's 0, else one more than its highest child's
    below = np.flatnonzero(up >= 0)
    order = below[np.argsort(-depth[below], kind="stable")]
    cuts = np.flatnonzero(np.diff(depth[order])) + 1
    for level in np.split(order, cuts):  # the deepest children first: a parent's height is final
        np.maximum.at(height, up[level], height[level] + 1)  # before it is passed up
    lag = height + first
    roots = up < 0
    done = int(lag[roots].max()) if roots.any() else first
    return lag, done


def _roots_depths(up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every node's root and depth in the forest ``up`` (parents, -1 at roots), by pointer jumping."""
    node = np.arange(len(up), dtype=np.int64)
    anc = np.where(up < 0, node, up)  # roots point at themselves
    dist = (up >= 0).astype(np.int64)  # hops to ``anc``
    while True:
        nxt = anc[anc]
        if np.array_equal(nxt, anc):
            return anc, dist
        dist = dist + dist[anc]
        anc = nxt


def lags_down(parent: list[int], start: np.ndarray) -> np.ndarray:
    """Broadcast-down lags: the message parent -> v is carried at ``start[root] + depth(v)``, where
    ``start`` gives each root's first send step; returns the lag of each non-root's incoming message
    (roots: their ``start`` - 1, the step they hold the result)."""
    root, depth = _roots_depths(np.asarray(parent, dtype=np.int64))
    return np.asarray(start, dtype=np.int64)[root] - 1 + depth


def sharp_leaf(cluster: Any, rank: int, nic: int) -> str:
    """The leaf switch that ``rank``'s ``nic``-th NIC (modulo its NICs) is linked to."""
    g = cluster.graph
    nics = nics_of(cluster, rank)
    if not nics:
        raise AlgorithmError(f"in-network reduction across hosts needs NICs; GPU {cluster.ranks[rank]} has none")
    nic = nics[nic % len(nics)]
    fabric = [
        v for v in sorted(g.successors(nic)) if g.nodes[v].get("kind") == "switch" and g.nodes[v].get("host") is None
    ]
    if not fabric:
        raise AlgorithmError(f"in-network reduction across hosts: NIC {nic} is not linked to a switch")
    return fabric[0]


def leaf_period(cluster: Any, groups: list[list[int]], multiple: int = 1) -> int:
    """Hosts per leaf group where the hosts (``groups``: ranks by host, in order) hang in equal, consecutive
    groups from their first NICs' leaf switches, rounded up to a ``multiple``; 0 where they do not, or
    where that is all of them. The period a translation of a ring's positions by whole leaf groups would
    have (:mod:`sim.symmetry` checks that it maps the fabric onto itself)."""
    if len({len(g) for g in groups}) != 1:
        return 0
    try:
        leaves = [sharp_leaf(cluster, grp[0], 0) for grp in groups]
    except AlgorithmError:
        return 0
    h = len(leaves)
    first = next((i for i, v in enumerate(leaves) if v != leaves[0]), h)  # the first group's hosts
    period = first * multiple // math.gcd(first, multiple)
    if h % period or period == h:
        return 0
    blocks = [leaves[i : i + first] for i in range(0, h, first)]
    if any(len(set(b)) != 1 for b in blocks) or len({b[0] for b in blocks}) != len(blocks):
        return 0
    return period


def sharp_switches(cluster: Any, rank: int, nic: int, spread: int) -> tuple[str, str | None]:
    """The leaf switch that ``rank``'s ``nic``-th NIC is linked to (:func:`sharp_leaf`), and a spine above
    it (the ``spread``-th, modulo their count; None where the leaf has none), for in-network reduction."""
    g = cluster.graph
    leaf = sharp_leaf(cluster, rank, nic)
    spines = sorted(v for v in g.successors(leaf) if g.nodes[v].get("kind") == "switch" and v != leaf)
    return leaf, (spines[spread % len(spines)] if spines else None)


def sharp_fabric(cluster: Any, groups: list[list[int]]) -> bool:
    """Whether every switch the hosts' NICs reach (leaves and spines) reduces in the network (``sharp``)."""
    g = cluster.graph
    for grp in groups:
        for r in grp:
            for t in range(2):
                try:
                    leaf, spine = sharp_switches(cluster, r, t, 0)
                except AlgorithmError:
                    return False
                above = [v for v in g.successors(leaf) if g.nodes[v].get("kind") == "switch"]
                for sw in (leaf, *above):
                    if not g.nodes[sw].get("sharp"):
                        return False
    return True


def sharp_forest(
    cluster: Any, ranks: list[int], actors: list[int], nic: int, spread: int, key: object
) -> tuple[list[int], list[int]]:
    """The switches that reduce between hosts (SHARP) for ``actors`` (one per host, on GPUs ``ranks``,
    leaving by their ``nic``-th NIC): (the forest's nodes, their parents, -1 at roots) -- the actors, then
    one endpoint ``key`` per leaf switch their NICs hang from (each actor under its leaf), and above
    several leaves the ``spread``-th spine over the first leaf, the leaves under it."""
    h = len(actors)
    nodes, parent = list(actors), [-1] * h
    at: dict[str, int] = {}
    for host, r in enumerate(ranks):
        leaf = sharp_leaf(cluster, r, nic)
        if leaf not in at:
            at[leaf] = len(nodes)
            nodes.append(cluster.add_endpoint(node=leaf, key=key))
            parent.append(-1)
        parent[host] = at[leaf]
    leaves = list(range(h, len(nodes)))
    if len(leaves) > 1:  # several leaf switches: a spine above the first leaf's reduces theirs
        _, spine = sharp_switches(cluster, ranks[0], nic, spread)
        if spine is None:
            raise AlgorithmError("in-network reduction across leaf switches needs a spine above them")
        top = len(nodes)
        nodes.append(cluster.add_endpoint(node=spine, key=key))
        parent.append(-1)
        for i in leaves:
            parent[i] = top
    return nodes, parent
