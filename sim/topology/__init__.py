"""Cluster topologies: YAML files, inline builder specs and generators, all as networkx graphs."""

from __future__ import annotations

from .builders import BUILDERS, dgx, leaf_spine, register_builder, ring, star, torus
from .graph import GPU, NIC, NVSWITCH, SWITCH, ClusterBuilder, gpu_nodes, hosts_of
from .hgx import PRESETS as HGX_PRESETS
from .hgx import hgx
from .load import TopologyFile, bundled_topologies, load_graph, parse_inline
from .summary import summarize

__all__ = [
    "BUILDERS",
    "GPU",
    "NIC",
    "NVSWITCH",
    "SWITCH",
    "ClusterBuilder",
    "TopologyFile",
    "bundled_topologies",
    "dgx",
    "gpu_nodes",
    "HGX_PRESETS",
    "hgx",
    "hosts_of",
    "leaf_spine",
    "load_graph",
    "parse_inline",
    "register_builder",
    "ring",
    "star",
    "summarize",
    "torus",
]
