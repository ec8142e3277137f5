"""The ``dgx`` and ``leaf-spine`` builders' clusters as arrays, built without a graph.

A DGX fabric of 131,072 hosts (1,048,576 GPUs) is 2.4 M nodes and 8.4 M link directions; as a networkx
graph it takes minutes to build and most of 10 GiB, and the simulation needs only arrays from it (arcs,
capacities, latencies, which nodes are GPUs). :func:`inline_fabric` recognizes an inline ``dgx:...``
spec and :func:`dgx_fabric` builds those arrays directly with numpy -- the same nodes in the same order,
the same arcs in the order the graph lists them (tail by tail, each tail's links in the order they were
added), so that arc ids, ECMP candidate order and therefore every route and time are the graph's.
An inline ``leaf-spine:...`` spec likewise (:func:`leaf_spine_fabric`: 1,024 hosts as a graph cost
~13 ms, as arrays ~1 ms). The graph itself is built only if something asks for it
(:attr:`Fabric.build_graph`). ``tests/test_topology.py`` holds every array to the graph's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from .._cores import built, chosen
from ..deadline import check as check_deadline
from ..schema import validate_spec
from .builders import BUILDERS, DgxParams, LeafSpineParams, _check_size, _intra_links, _spec

__all__ = ["Fabric", "dgx_fabric", "inline_fabric", "leaf_spine_fabric"]

#: the compiled core (``dgx_arcs``, ``dgx_names``), or None: numpy
_CORE: Any = chosen(built("_ratecore"))


@dataclass(eq=False)
class Fabric:
    """A cluster's nodes and arcs as arrays (what :class:`sim.cluster.Cluster` reads off a graph)."""

    name: str
    spec: str
    routing: str
    overhead: float  # seconds per message sent, every GPU
    nodes: list[str]
    is_gpu: np.ndarray  # per node
    endpoint_only: np.ndarray  # per node: a GPU that is reached, never passed through
    arc_u: np.ndarray
    arc_v: np.ndarray
    capacity: np.ndarray
    latency: np.ndarray
    weight: np.ndarray
    rank_node: np.ndarray  # every GPU's node, in rank order
    rank_host: np.ndarray  # every GPU's host number (hosts in order of their first rank)
    hosts: list[str]  # host names by number
    builder: str  # the builder (BUILDERS) and its checked parameters, which build the graph
    params: dict[str, Any]
    #: per node, the key destination-based routing picks a spine by (``ecmp=destination``; None: hash):
    #: a host's nodes share its ordinal among the graph's hosts and switches, as ``Cluster`` reads it
    dest_key: np.ndarray | None = None

    def build_graph(self) -> nx.DiGraph:
        """The graph the builder makes of these parameters (the one these arrays were read off)."""
        return BUILDERS[self.builder][0](**self.params)


def inline_fabric(topology: Any) -> Fabric | None:
    """The arrays of ``topology`` when it is an inline ``dgx:...`` or ``leaf-spine:...`` spec that
    :func:`sim.topology.load_graph` would build with that builder; None for anything else (built as a
    graph)."""
    if not isinstance(topology, str):
        return None
    text = topology.strip()
    if not (text.startswith("dgx:") or text.startswith("leaf-spine:")):
        return None
    try:
        if Path(topology).exists():
            return None  # a file of that name: load_graph reads the file
    except (OSError, ValueError):
        pass
    from .load import inline_params  # noqa: PLC0415 - load imports the builders, as this module does

    kind, params = inline_params(topology)
    if kind == "dgx":
        return dgx_fabric(validate_spec(DgxParams, params, kind))
    if kind == "leaf-spine":
        return leaf_spine_fabric(validate_spec(LeafSpineParams, params, kind))
    return None


def dgx_fabric(p: DgxParams) -> Fabric | None:
    """:func:`sim.topology.builders.dgx`'s cluster as arrays (None where only the graph would say what
    is wrong: a non-positive bandwidth, a negative latency)."""
    spines = p.spines or min(p.hosts, p.hosts_per_leaf)
    up = p.uplink_bandwidth or p.nic_bandwidth
    g, h_count, hpl = p.gpus_per_host, p.hosts, p.hosts_per_leaf
    groups = math.ceil(h_count / hpl)
    _check_size("dgx", h_count * g, 3 * h_count * g + g * groups * spines)
    nv, nv_lat = p.nvlink_bandwidth / 2, p.nvlink_latency
    if not min(up, nv, p.pcie_bandwidth, p.nic_bandwidth) > 0 or not min(nv_lat, p.latency) >= 0 or g > 4096:
        return None
    leaves = g * groups
    base = spines + leaves  # the first host's first node
    per_host = 1 + 2 * g if g > 1 else 2  # NVSwitch, GPUs, NICs (one GPU: the GPU, its NIC)
    n = base + h_count * per_host
    dest_key = None
    if p.ecmp == "destination":  # switches their own ordinal, then one per host (sim.cluster._host_keys)
        dest_key = np.concatenate([np.arange(base), base + np.repeat(np.arange(h_count), per_host)])
    if _CORE is not None:  # the same arrays and names, in one compiled pass each
        m = 2 * spines * leaves + g * h_count + h_count * (5 * g if g > 1 else 3)
        tail, head = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
        capacity, latency = np.empty(m), np.empty(m)
        rank_node, is_gpu = np.empty(h_count * g, dtype=np.int64), np.empty(n, dtype=bool)
        bands = (float(up), float(p.nic_bandwidth), float(p.latency), float(nv), float(nv_lat), float(p.pcie_bandwidth))
        arrays = (tail, head, capacity, latency, rank_node, is_gpu)
        _CORE.dgx_arcs(spines, groups, hpl, h_count, g, *bands, *arrays)
        check_deadline()  # --timeout counts the build too
        names, host_names = _CORE.dgx_names(spines, g, groups, h_count)
        arcs = (tail, head, capacity, latency)
        return _fabric("dgx", p, f"dgx-{h_count}x{g}", names, is_gpu, arcs, rank_node, host_names, dest_key)
    hosts = np.arange(h_count)
    first = base + hosts * per_host
    rails = np.arange(g)
    if g > 1:
        gpu = first[:, None] + 1 + rails[None, :]  # [host, rail]
        nic = first[:, None] + 1 + g + rails[None, :]
    else:
        gpu = first[:, None]
        nic = first[:, None] + 1
    leaf = spines + rails[None, :] * groups + (hosts // hpl)[:, None]  # each NIC's leaf
    # the arcs in the graph's order, tail by tail, each tail's in the order its links were added (no sort)
    s_idx, l_idx = np.arange(spines), np.arange(leaves)
    # a spine's to every leaf
    tails, heads = [np.repeat(s_idx, leaves)], [np.tile(spines + l_idx, spines)]
    caps, lats = [np.full(spines * leaves, float(up))], [np.full(spines * leaves, float(p.latency))]
    # a leaf's (rail r, group k) to every spine, then to the NICs of rail r of its hosts k * hpl, ...
    count = spines + np.minimum(hpl, h_count - (l_idx % groups) * hpl)
    on = np.repeat(l_idx, count)
    j = np.arange(len(on)) - np.repeat(np.cumsum(count) - count, count)  # the arc's place among its leaf's
    to_spine = j < spines
    host = np.where(to_spine, 0, (on % groups) * hpl + j - spines)
    tails.append(spines + on)
    heads.append(np.where(to_spine, j, nic[host, on // groups]))
    caps.append(np.where(to_spine, float(up), float(p.nic_bandwidth)))
    lats.append(np.full(len(on), float(p.latency)))
    # host by host, counted from its first node: its NVSwitch's to its GPUs; each GPU's to the NVSwitch and
    # to its NIC; each NIC's to its GPU and to its leaf (-1 below: the leaf). One GPU: the GPU's to its NIC;
    # the NIC's to the GPU and to its leaf
    pcie, nic_bw = float(p.pcie_bandwidth), float(p.nic_bandwidth)
    if g > 1:
        r = np.arange(1, g + 1)
        t_tail = np.concatenate([np.zeros(g, dtype=np.int64), np.repeat(r, 2), np.repeat(g + r, 2)])
        t_head = np.concatenate([r, np.stack([0 * r, g + r], 1).ravel(), np.stack([r, -1 + 0 * r], 1).ravel()])
        t_cap = [float(nv)] * g + [float(nv), pcie] * g + [pcie, nic_bw] * g
        t_lat = [float(nv_lat)] * g + [float(nv_lat), 0.0] * g + [0.0, float(p.latency)] * g
    else:
        t_tail, t_head = np.array([0, 1, 1]), np.array([1, 0, -1])
        t_cap, t_lat = [pcie, pcie, nic_bw], [0.0, 0.0, float(p.latency)]
    host_heads = first[:, None] + t_head[None, :]
    host_heads[:, t_head < 0] = leaf
    tails.append((first[:, None] + t_tail[None, :]).ravel())
    heads.append(host_heads.ravel())
    caps.append(np.tile(np.array(t_cap), h_count))
    lats.append(np.tile(np.array(t_lat), h_count))
    tail, head, capacity, latency = (np.concatenate(col) for col in (tails, heads, caps, lats))
    check_deadline()  # --timeout counts the build too
    names = [f"spine{s}" for s in range(spines)]
    names += [f"leaf{r}.{k}" for r in range(g) for k in range(groups)]
    if g > 1:
        kinds = [""] + [f":gpu{i}" for i in range(g)] + [f":nic{i}" for i in range(g)]
    else:
        kinds = ["", ":nic0"]
    host_names = [f"h{h}" for h in range(h_count)]
    names += [f"{host}{kind}" for host in host_names for kind in kinds]
    is_gpu = np.zeros(n, dtype=bool)
    is_gpu[gpu.ravel()] = True
    arcs = (tail, head, capacity, latency)
    return _fabric("dgx", p, f"dgx-{h_count}x{g}", names, is_gpu, arcs, gpu.ravel(), host_names, dest_key)


def _fabric(
    builder: str,
    p: DgxParams | LeafSpineParams,
    name: str,
    nodes: list[str],
    is_gpu: np.ndarray,
    arcs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    rank_node: np.ndarray,
    hosts: list[str],
    dest_key: np.ndarray | None,
) -> Fabric:
    """The :class:`Fabric` of ``builder``'s parameters ``p``: ``arcs`` (tails, heads, capacities,
    latencies) in the graph's order, unit weights, every host's ``p.gpus_per_host`` GPUs in rank order."""
    g = p.gpus_per_host
    return Fabric(
        name=name,
        spec=_spec(builder, p),
        routing="updown",
        overhead=float(p.overhead),
        nodes=nodes,
        is_gpu=is_gpu,
        endpoint_only=is_gpu if g > 1 else np.zeros(len(nodes), dtype=bool),  # a GPU in a host of several
        arc_u=arcs[0],
        arc_v=arcs[1],
        capacity=arcs[2],
        latency=arcs[3],
        weight=np.ones(len(arcs[0])),
        rank_node=rank_node,
        rank_host=np.repeat(np.arange(len(hosts)), g),
        hosts=hosts,
        builder=builder,
        params=p.model_dump(),
        dest_key=dest_key,
    )


def leaf_spine_fabric(p: LeafSpineParams) -> Fabric | None:
    """:func:`sim.topology.builders.leaf_spine`'s cluster as arrays (None where only the graph would say
    what is wrong: a non-positive bandwidth, a negative latency, GPUs without ``intra_bandwidth``).

    The graph's nodes: the spines, then leaf by leaf the leaf and its hosts (a host of one GPU is one
    node; of several, its NVSwitch node then its GPUs). Its arcs, tail by tail in that order: a spine's to
    every leaf; a leaf's to every spine then to its hosts; a host's (NVSwitch's) to its GPUs then to its
    leaf; a GPU's to its NVSwitch -- every leaf's block of arcs the same but for where it starts."""
    g, hpl, leaves, spines = p.gpus_per_host, p.hosts_per_leaf, p.leaves, p.spines
    h_count = leaves * hpl
    _check_size("leaf-spine", h_count * g, leaves * spines + h_count + _intra_links(h_count, g))
    up, bw, lat = p.uplink_bandwidth or p.bandwidth, p.bandwidth, p.latency
    intra, intra_lat = p.intra_bandwidth, p.intra_latency
    if not min(up, bw) > 0 or not lat >= 0 or g > 4096:
        return None
    if g > 1 and (intra is None or not intra > 0 or not intra_lat >= 0):
        return None
    per_host = 1 if g == 1 else 1 + g  # the host's node (its GPU, or its NVSwitch), then its GPUs
    per_leaf = 1 + hpl * per_host
    n = spines + leaves * per_leaf
    # one leaf's block: tails and heads counted from the leaf's node (a spine's head: -1 - spine)
    host = 1 + per_host * np.arange(hpl)
    tails = [np.zeros(spines + hpl, dtype=np.int64)]
    heads = [-1 - np.arange(spines), host]
    caps = [np.full(spines, float(up)), np.full(hpl, float(bw))]
    lats = [np.full(spines + hpl, float(lat))]
    if g == 1:
        tails.append(host)
        heads.append(np.zeros(hpl, dtype=np.int64))
        caps.append(np.full(hpl, float(bw)))
        lats.append(np.full(hpl, float(lat)))
    else:
        gpu = host[:, None] + 1 + np.arange(g)[None, :]  # [host, gpu]
        k = np.arange(2 * g + 1)
        # per host: its NVSwitch's arcs (to its GPUs, then to the leaf), then each GPU's (to the NVSwitch)
        tails.append((host[:, None] + np.where(k <= g, 0, k - g)[None, :]).ravel())
        heads.append(np.concatenate([gpu, np.zeros((hpl, 1), dtype=np.int64), host[:, None].repeat(g, 1)], 1).ravel())
        c = np.full(2 * g + 1, float(intra))
        c[g] = float(bw)
        caps.append(np.tile(c, hpl))
        t = np.full(2 * g + 1, float(intra_lat))
        t[g] = float(lat)
        lats.append(np.tile(t, hpl))
    t_tail, t_head = np.concatenate(tails), np.concatenate(heads)
    base = spines + per_leaf * np.arange(leaves)
    to_spine = t_head < 0
    tail = np.concatenate([np.repeat(np.arange(spines), leaves), (base[:, None] + t_tail[None, :]).ravel()])
    head_leaf = np.where(to_spine[None, :], -1 - t_head[None, :], base[:, None] + t_head[None, :])
    head = np.concatenate([np.tile(base, spines), head_leaf.ravel()])
    capacity = np.concatenate([np.full(spines * leaves, float(up)), np.tile(np.concatenate(caps), leaves)])
    latency = np.concatenate([np.full(spines * leaves, float(lat)), np.tile(np.concatenate(lats), leaves)])
    check_deadline()  # --timeout counts the build too
    hosts = (base[:, None] + host[None, :]).ravel()  # every host's node, in order
    host_names = [f"h{h}" for h in range(h_count)]
    names = [f"spine{s}" for s in range(spines)]
    if g == 1:
        for leaf in range(leaves):
            names.append(f"leaf{leaf}")
            names += host_names[leaf * hpl : (leaf + 1) * hpl]
        rank_node = hosts
    else:
        kinds = [""] + [f":gpu{i}" for i in range(g)]
        for leaf in range(leaves):
            names.append(f"leaf{leaf}")
            names += [f"{name}{kind}" for name in host_names[leaf * hpl : (leaf + 1) * hpl] for kind in kinds]
        rank_node = (hosts[:, None] + 1 + np.arange(g)[None, :]).ravel()
    is_gpu = np.zeros(n, dtype=bool)
    is_gpu[rank_node] = True
    dest_key = None
    if p.ecmp == "destination":  # switches their own ordinal, then one per host (sim.cluster._host_keys)
        first = np.ones(n, dtype=np.int64)
        if g > 1:
            first[rank_node] = 0  # a GPU shares its host's
        dest_key = np.cumsum(first) - 1
    arcs = (tail, head, capacity, latency)
    return _fabric("leaf-spine", p, f"leaf-spine-{leaves}x{hpl}", names, is_gpu, arcs, rank_node, host_names, dest_key)
