"""The ``dgx`` builder's cluster as arrays, built without a graph.

A DGX fabric of 131,072 hosts (1,048,576 GPUs) is 2.4 M nodes and 8.4 M link directions; as a networkx
graph it takes minutes to build and most of 10 GiB, and the simulation needs only arrays from it (arcs,
capacities, latencies, which nodes are GPUs). :func:`inline_fabric` recognizes an inline ``dgx:...``
spec and :func:`dgx_fabric` builds those arrays directly with numpy -- the same nodes in the same order,
the same arcs in the order the graph lists them (tail by tail, each tail's links in the order they were
added), so that arc ids, ECMP candidate order and therefore every route and time are the graph's.
The graph itself is built only if something asks for it (:attr:`Fabric.build_graph`).
``tests/test_topology.py`` holds every array to the graph's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from ..deadline import check as check_deadline
from ..schema import validate_spec
from .builders import BUILDERS, DgxParams, _check_size, _spec

__all__ = ["Fabric", "dgx_fabric", "inline_fabric"]


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
    """The arrays of ``topology`` when it is an inline ``dgx:...`` spec that :func:`sim.topology.load_graph`
    would build with the ``dgx`` builder; None for anything else (built as a graph)."""
    if not isinstance(topology, str) or not topology.strip().startswith("dgx:"):
        return None
    try:
        if Path(topology).exists():
            return None  # a file of that name: load_graph reads the file
    except (OSError, ValueError):
        pass
    from .load import inline_params  # noqa: PLC0415 - load imports the builders, as this module does

    kind, params = inline_params(topology)
    if kind != "dgx":
        return None
    checked = validate_spec(DgxParams, params, kind)
    return dgx_fabric(checked)


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
    parts: list[tuple[np.ndarray, ...]] = []

    def arcs(tail: Any, head: Any, seq: Any, bandwidth: float, latency: float) -> None:
        tail, head, seq = (np.asarray(x, dtype=np.int64).ravel() for x in np.broadcast_arrays(tail, head, seq))
        parts.append((tail, head, seq, np.full(len(tail), float(bandwidth)), np.full(len(tail), float(latency))))

    s_idx, l_idx = np.arange(spines), np.arange(leaves)
    arcs(s_idx[:, None], spines + l_idx[None, :], l_idx[None, :], up, p.latency)  # spine -> leaves
    arcs(spines + l_idx[:, None], s_idx[None, :], s_idx[None, :], up, p.latency)  # leaf -> spines
    arcs(leaf, nic, spines + (hosts % hpl)[:, None], p.nic_bandwidth, p.latency)  # leaf -> its hosts' NICs
    if g > 1:
        arcs(first[:, None], gpu, rails[None, :], nv, nv_lat)  # NVSwitch -> GPUs
        arcs(gpu, first[:, None], 0, nv, nv_lat)  # GPU -> NVSwitch
        arcs(gpu, nic, 1, p.pcie_bandwidth, 0.0)
    else:
        arcs(gpu, nic, 0, p.pcie_bandwidth, 0.0)
    arcs(nic, gpu, 0, p.pcie_bandwidth, 0.0)
    arcs(nic, leaf, 1, p.nic_bandwidth, p.latency)
    tail, head, seq, capacity, latency = (np.concatenate(col) for col in zip(*parts, strict=True))
    check_deadline()  # --timeout counts the build too
    order = np.lexsort((seq, tail))  # the graph lists arcs tail by tail, each in the order it was added
    check_deadline()
    n = base + h_count * per_host
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
    dest_key = None
    if p.ecmp == "destination":  # switches their own ordinal, then one per host (sim.cluster._host_keys)
        dest_key = np.concatenate([np.arange(base), base + np.repeat(hosts, per_host)])
    return Fabric(
        name=f"dgx-{h_count}x{g}",
        spec=_spec("dgx", p),
        routing="updown",
        overhead=float(p.overhead),
        nodes=names,
        is_gpu=is_gpu,
        endpoint_only=is_gpu if g > 1 else np.zeros(n, dtype=bool),
        arc_u=tail[order],
        arc_v=head[order],
        capacity=capacity[order],
        latency=latency[order],
        weight=np.ones(len(order)),
        rank_node=gpu.ravel(),
        rank_host=np.repeat(hosts, g),
        hosts=host_names,
        builder="dgx",
        params=p.model_dump(),
        dest_key=dest_key,
    )
