"""Inline ``leaf-spine`` specs built as arrays (:func:`sim.topology.fabric.leaf_spine_fabric`, no graph) are
the cluster read off the builder's graph: the same nodes, arcs in the same order, capacities, latencies,
ranks, hosts, router tables and routes; the same errors; the same results on both engines (the ``dgx``
builder's arrays are held to its graph in tests/test_topology.py)."""

from __future__ import annotations

import dataclasses
import pickle

import networkx as nx
import numpy as np
import pytest

from sim.cluster import Cluster
from sim.errors import ConfigError, TopologyError
from sim.simulate import simulate
from sim.topology import load_graph

LS = "leaf-spine:leaves=3,hosts_per_leaf=4,spines=2,bandwidth=100Gbps,latency=1us"
MULTI = ",gpus_per_host=4,intra_bandwidth=300GB/s,intra_latency=0.5us"

SPECS = [
    LS,
    LS + ",ecmp=destination",
    LS + ",uplink_bandwidth=400Gbps,overhead=2us",
    LS + MULTI,
    LS + MULTI + ",ecmp=destination,overhead=1us",
    "leaf-spine:leaves=1,hosts_per_leaf=5,spines=1,bandwidth=10Gbps,gpus_per_host=2,intra_bandwidth=1TB/s",
    "leaf-spine:leaves=4,hosts_per_leaf=1,spines=3,bandwidth=10Gbps",
    "leaf-spine:leaves=2,hosts_per_leaf=3,spines=1,bandwidth=200Mbps,uplink_bandwidth=300Mbps,ecmp=destination",
    # scale.py's hd-ls1k / tree8-ls1k fabric
    "leaf-spine:leaves=16,hosts_per_leaf=64,spines=4,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us",
]


@pytest.mark.parametrize("spec", SPECS)
def test_leaf_spine_built_as_arrays_is_the_graph(spec):
    fast, ref = Cluster(spec), Cluster(load_graph(spec))
    assert fast._graph is None  # nothing built the graph
    for name in ("arc_u", "arc_v", "capacity", "latency", "rank_node", "overhead", "compute_scale", "rank_host"):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert (fast.nodes, fast.ranks, fast.name, fast.spec, fast.num_arcs) == (
        ref.nodes,
        ref.ranks,
        ref.name,
        ref.spec,
        ref.num_arcs,
    )
    for name in ("_out_v", "_out_arc", "_in_u", "_in_ptr", "_level", "_up_v", "_up_arc", "_above_u", "_above_arc"):
        assert getattr(fast.router, name) == getattr(ref.router, name), name
    assert np.array_equal(fast.router._endpoint_only, ref.router._endpoint_only)
    assert (fast.router.dest_key is None) == (ref.router.dest_key is None) == ("ecmp=destination" not in spec)
    if fast.router.dest_key is not None:
        assert np.array_equal(fast.router.dest_key, ref.router.dest_key)
    step = max(1, fast.size // 40)
    pairs = [(s, d) for s in range(0, fast.size, step) for d in range(fast.size - 1, -1, -step) if s != d]
    arcs = [[c.paths.arcs_of(c.path_id(s, d)).tolist() for s, d in pairs] for c in (fast, ref)]
    assert arcs[0] == arcs[1]
    assert [fast.host_of(r) for r in range(fast.size)] == [ref.host_of(r) for r in range(ref.size)]
    assert [fast.arc_name(a) for a in range(fast.num_arcs)] == [ref.arc_name(a) for a in range(ref.num_arcs)]
    assert Cluster(spec, ranks=3).ranks == ref.ranks[:3]
    assert fast._graph is None
    assert nx.utils.graphs_equal(fast.graph, ref.graph) and fast._graph is not None
    copy = pickle.loads(pickle.dumps(Cluster(spec)))  # clusters travel to report workers
    assert np.array_equal(copy.arc_u, ref.arc_u) and nx.utils.graphs_equal(copy.graph, ref.graph)
    other = Cluster(spec).with_link_model(dataclasses.replace(fast.link_model, gamma=1e-12))
    assert np.array_equal(other.arc_v, ref.arc_v) and other._graph is None


def test_leaf_spine_arrays_refuse_what_the_graph_refuses():
    with pytest.raises(ConfigError):
        Cluster(LS, ranks=13)
    for spec in (
        LS + ",gpus_per_host=0",
        LS + ",bogus=1",
        LS + ",gpus_per_host=2",  # no intra_bandwidth
        LS + ",latency=-1us",
        LS + ",ecmp=nearest",
        "leaf-spine:leaves=2",
        "leaf-spine:leaves=2048,hosts_per_leaf=2048,spines=1,bandwidth=1Gbps",
    ):
        with pytest.raises((ConfigError, TopologyError)) as graph_error:
            load_graph(spec)
        with pytest.raises((ConfigError, TopologyError)) as array_error:
            Cluster(spec)
        assert type(array_error.value) is type(graph_error.value)
        assert str(array_error.value) == str(graph_error.value)


@pytest.mark.parametrize("routed", ["", ",ecmp=destination"], ids=["hash", "destination"])
@pytest.mark.parametrize(
    "algorithm", ["ring", "halving-doubling", "tree:chunks=4", "double-binary-tree:chunks=4", "hierarchical"]
)
@pytest.mark.parametrize("hosts", ["", MULTI], ids=["one-gpu", "four-gpus"])
def test_leaf_spine_arrays_simulate_as_the_graph(algorithm, routed, hosts):
    """End to end: the array-built cluster takes the graph-built one's times, bytes, flows, events and
    busiest links, on both engines."""
    spec = LS + ",uplink_bandwidth=50Gbps" + routed + hosts
    for engine in ("message", "auto"):
        fast = simulate(Cluster(spec), "allreduce", algorithm, 2**24, engine=engine)
        ref = simulate(Cluster(load_graph(spec)), "allreduce", algorithm, 2**24, engine=engine)
        assert (repr(fast.time_s), fast.link_bytes, fast.flows, fast.events, fast.engine) == (
            repr(ref.time_s),
            ref.link_bytes,
            ref.flows,
            ref.events,
            ref.engine,
        )
        assert [x.link for x in fast.busiest_links] == [x.link for x in ref.busiest_links]


@pytest.mark.parametrize("p", [1, 2, 3, 4, 7, 8, 13, 64, 100])
def test_heap_parents_and_heap_tree_are_the_binary_heap(p):
    """Both are the heap counted from the root, held to the textbook loop (the one heap_tree was)."""
    from sim.algorithms.tree import heap_parents, heap_tree

    for root in range(p):
        parent: list[int | None] = [None] * p
        children: list[list[int]] = [[] for _ in range(p)]
        for i in range(1, p):
            me, up = (i + root) % p, ((i - 1) // 2 + root) % p
            parent[me] = up
            children[up].append(me)
        assert heap_tree(p, root) == (parent, children)
        assert heap_parents(p, root).tolist() == [-1 if u is None else u for u in parent]


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=9,gpus_per_host=4,hosts_per_leaf=4",
        "torus:dims=4x4,bandwidth=1Gbps",
        "hgx:hosts=6,preset=hgx-a100-200g,fabric=fat-tree,hosts_per_leaf=2",
        "two-rack-2to1",
        LS + MULTI,
    ],
)
def test_router_tables_in_lexsort_order(spec):
    """The router's out-adjacency by (tail, head) and its arcs down by (head, tail): np.lexsort's orders
    (one stable sort of a combined key gives them)."""
    c = Cluster(spec)
    r, u, v = c.router, c.arc_u, c.arc_v
    assert np.array_equal(r.arrays["out_arc"], np.lexsort((v, u)))
    if r.mode == "updown":
        level = r.arrays["level"]
        down = np.flatnonzero(level[u] > level[v])
        assert np.array_equal(r.arrays["above_arc"], down[np.lexsort((u[down], v[down]))])
