from __future__ import annotations

import dataclasses
import pickle
import textwrap

import networkx as nx
import numpy as np
import pytest

from sim.cluster import Cluster
from sim.errors import ConfigError, TopologyError
from sim.topology import bundled_topologies, dgx, leaf_spine, load_graph, ring, star, summarize, torus
from sim.topology.summary import bisection_bandwidth


def write(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# --------------------------------------------------------------------------- builders
def test_star_structure():
    g = star(4, "100Gbps", "1us")
    assert g.graph["ranks"] == ["h0", "h1", "h2", "h3"]
    assert g.number_of_edges() == 8  # 4 full-duplex links, two arcs each
    for h in g.graph["ranks"]:
        assert g.edges[h, "sw0"]["bandwidth"] == 12.5e9
        assert g.edges["sw0", h]["latency"] == 1e-6
        assert g.edges[h, "sw0"]["link"] == g.edges["sw0", h]["link"]


def test_star_with_several_gpus_per_host():
    g = star(2, "100Gbps", gpus_per_host=4, intra_bandwidth="300GB/s", intra_latency="1us")
    assert len(g.graph["ranks"]) == 8
    assert g.graph["ranks"][:2] == ["h0:gpu0", "h0:gpu1"]
    assert g.nodes["h0"]["kind"] == "nvswitch"
    assert g.edges["h0:gpu0", "h0"]["bandwidth"] == 300e9
    with pytest.raises(TopologyError, match="intra_bandwidth"):
        star(2, "100Gbps", gpus_per_host=4)


def test_leaf_spine_oversubscription():
    g = leaf_spine(leaves=2, hosts_per_leaf=4, spines=2, bandwidth="100Gbps", uplink_bandwidth="100Gbps")
    assert len(g.graph["ranks"]) == 8
    # 4 x 100G down, 2 x 100G up per leaf: 2:1; bisection = 2 uplinks x 100G
    assert bisection_bandwidth(g) == pytest.approx(2 * 12.5e9)


def test_dgx_rail_optimized():
    g = dgx(hosts=4)
    assert len(g.graph["ranks"]) == 32
    # NIC i of every host hangs off a leaf of rail i
    for h in range(4):
        for rail in range(8):
            assert g.has_edge(f"h{h}:nic{rail}", f"leaf{rail}.0")
    assert g.edges["h0:gpu0", "h0"]["bandwidth"] == 450e9  # 900 GB/s both ways together
    assert g.edges["h0:nic0", "leaf0.0"]["bandwidth"] == 50e9  # 400 Gb/s


def test_torus_and_ring_degrees():
    g = torus("4x4", "100Gbps")
    und = nx.Graph(g)
    assert all(d == 4 for _, d in und.degree())
    g3 = torus((2, 2, 2), "100Gbps")
    assert all(d == 3 for _, d in nx.Graph(g3).degree())
    r = ring(5, "10Gbps")
    assert all(d == 2 for _, d in nx.Graph(r).degree())


def test_inline_specs_equal_builders():
    a = load_graph("star:hosts=3,bandwidth=25GB/s,latency=2us")
    b = star(3, 25e9, 2e-6)
    assert nx.utils.graphs_equal(a, b)
    assert a.graph["spec"] == "star:hosts=3,bandwidth=200Gbps,latency=2us"
    assert nx.utils.graphs_equal(load_graph(a.graph["spec"]), a)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("star:hosts=4", "star.bandwidth: required"),
        ("star:hosts=4,bandwidth=-1Gbps", "star.bandwidth: must be > 0, got '-1Gbps'"),
        ("star:hosts=4,bandwidth=1Gbps,latency=1parsec", "star.latency: unknown unit 'parsec'"),
        ("star:hosts=zero,bandwidth=1Gbps", "star.hosts: expected a whole number"),
        ("star:hosts=4,bandwith=1Gbps", "star.bandwith: unknown field (valid: hosts, bandwidth"),
        ("star:hosts=4,bandwidth", "expected key=value"),
        ("tours:dims=4x4", "no topology 'tours:dims=4x4'"),
        ("torus:dims=4by4,bandwidth=1Gbps", "torus.dims: expected sizes like '4x4'"),
        ("star:hosts=100000000,bandwidth=1Gbps", "more than collsim builds"),
    ],
)
def test_inline_errors_are_path_qualified(spec, message):
    with pytest.raises(ConfigError) as info:
        load_graph(spec)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- YAML files
GOOD = """\
name: small
defaults: {bandwidth: 100Gbps, latency: 1us}
hosts:
  - {name: a}
  - {name: b, gpus: 2, intra_bandwidth: 300GB/s}
switches: [sw]
links:
  - {between: [a, sw]}
  - {between: [b, sw], bandwidth: 200Gbps, reverse: {bandwidth: 50Gbps}}
"""


def test_yaml_explicit(tmp_path):
    g = load_graph(write(tmp_path, GOOD))
    assert g.graph["ranks"] == ["a", "b:gpu0", "b:gpu1"]
    assert g.edges["b", "sw"]["bandwidth"] == 25e9
    assert g.edges["sw", "b"]["bandwidth"] == 50e9 / 8  # the reverse direction differs
    assert g.edges["a", "sw"]["latency"] == 1e-6


def test_yaml_builder_form(tmp_path):
    path = write(tmp_path, "name: x\nbuilder: star\nparams: {hosts: 3, bandwidth: 1GB/s}\n")
    assert load_graph(path).graph["ranks"] == ["h0", "h1", "h2"]


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace("[a, sw]", "[a, sw9]"), "links[0].between[1]: unknown node 'sw9'"),
        (GOOD.replace("bandwidth: 200Gbps", "bandwidth: 0Gbps"), "links[1].bandwidth: must be > 0"),
        (GOOD.replace("bandwidth: 200Gbps", "bandwidth: 200Gbpz"), "links[1].bandwidth: unknown unit 'Gbpz'"),
        (GOOD.replace("latency: 1us", "latency: -1us"), "defaults.latency: must be >= 0"),
        (
            GOOD.replace("  - {between: [b, sw], bandwidth: 200Gbps, reverse: {bandwidth: 50Gbps}}\n", ""),
            "cannot reach each other",
        ),
        (GOOD.replace("switches: [sw]", "switches: [sw]\nswitches: [sw2]"), "duplicate key 'switches'"),
        (GOOD.replace("{name: a}", "{name: a, gpu: 2}"), "hosts[0].gpu: unknown field"),
        (GOOD.replace("gpus: 2,", "gpus: -2,"), "hosts[1].gpus: must be > 0"),
        (GOOD + "placement: [a, sw]\n", "'sw' is not a GPU"),
        (GOOD.replace("{name: a}", "{name: sw}"), "node 'sw' is defined twice"),
        ("name: x\nlinks: [\n", "invalid YAML"),
        ("- a\n- b\n", "expected a mapping at the top level"),
        ("name: x\n", "needs either builder"),
        ("name: x\nbuilder: star\nparams: {hosts: 2}\n", "params.bandwidth: required"),
    ],
)
def test_yaml_errors(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        load_graph(write(tmp_path, text))
    assert message in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_graph(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="not a file, a bundled name"):
        load_graph("no-such-cluster")


def test_user_graph_accepted():
    g = nx.Graph()
    g.add_node("x", kind="gpu")
    g.add_node("y", kind="gpu")
    g.add_edge("x", "y", bandwidth=1e9, latency=1e-6)
    d = load_graph(g)
    assert d.is_directed() and d.number_of_edges() == 2 and d.graph["ranks"] == ["x", "y"]


# --------------------------------------------------------------------------- bundled
@pytest.mark.parametrize("name", sorted(bundled_topologies()))
def test_bundled_files_load_and_name_sources(name):
    path = bundled_topologies()[name]
    assert "Source figures" in path.read_text()
    g = load_graph(name)
    s = summarize(g)
    assert s.gpus == len(g.graph["ranks"]) >= 4
    assert s.bisection_Bps is None or s.bisection_Bps > 0


def test_at_least_four_bundled():
    names = set(bundled_topologies())
    assert {"dgx-h100-4", "two-rack-2to1"} <= names and len(names) >= 4


def test_two_rack_is_two_to_one():
    g = load_graph("two-rack-2to1")
    down = sum(g.edges[h, "tor0"]["bandwidth"] for h in g.predecessors("tor0") if h.startswith("r0"))
    assert down / g.edges["tor0", "core"]["bandwidth"] == pytest.approx(2.0)


def test_stragglers_from_yaml(tmp_path):
    """A host's per-message overhead and reduction slowdown reach the simulation."""
    from sim.simulate import simulate

    text = GOOD.replace("{name: a}", "{name: a, overhead: 20us, compute_scale: 3}")
    g = load_graph(write(tmp_path, text))
    assert g.nodes["a"]["overhead"] == pytest.approx(20e-6) and g.nodes["a"]["compute_scale"] == 3.0
    base = simulate(load_graph(write(tmp_path, GOOD, "base.yaml")), "allreduce", "ring", 2**20, gamma=1e-10)
    slow = simulate(g, "allreduce", "ring", 2**20, gamma=1e-10)
    assert slow.time_s > base.time_s
    with pytest.raises(ConfigError, match="compute_scale: must be > 0"):
        load_graph(write(tmp_path, GOOD.replace("{name: a}", "{name: a, compute_scale: 0}"), "bad.yaml"))


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=2,ecmp=hash",
        "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash",
        "dgx:hosts=3,gpus_per_host=1,hosts_per_leaf=2,ecmp=hash",
        "dgx:hosts=70,hosts_per_leaf=16,uplink_bandwidth=100Gbps,overhead=1us,pcie_bandwidth=32GB/s,ecmp=hash",
        "dgx:hosts=9,gpus_per_host=4,hosts_per_leaf=4,ecmp=destination",
        "dgx:hosts=5,gpus_per_host=1,hosts_per_leaf=2,ecmp=destination",
        # the default: routed by destination, as a DGX SuperPOD's InfiniBand routes
        "dgx:hosts=2",
        "dgx:hosts=70,hosts_per_leaf=16,uplink_bandwidth=100Gbps,overhead=1us,pcie_bandwidth=32GB/s",
    ],
)
def test_dgx_built_as_arrays_is_the_graph(spec):
    """An inline dgx spec is built as arrays (no graph): the same nodes, arcs in the same order, the
    same capacities, latencies, ranks, hosts and router tables as the cluster read off the graph; the
    graph, when asked for, is the builder's."""
    fast, ref = Cluster(spec), Cluster(load_graph(spec))
    assert fast._graph is None  # nothing built the graph
    for name in ("arc_u", "arc_v", "capacity", "latency", "rank_node", "overhead", "compute_scale", "rank_host"):
        assert np.array_equal(getattr(fast, name), getattr(ref, name)), name
    assert (fast.nodes, fast.ranks, fast.name) == (ref.nodes, ref.ranks, ref.name)
    for name in ("_out_v", "_out_arc", "_in_u", "_in_ptr", "_level", "_up_v", "_up_arc", "_above_u", "_above_arc"):
        assert getattr(fast.router, name) == getattr(ref.router, name), name
    assert np.array_equal(fast.router._endpoint_only, ref.router._endpoint_only)
    assert (fast.router.dest_key is None) == (ref.router.dest_key is None) == ("ecmp=hash" in spec)
    if fast.router.dest_key is not None:
        assert np.array_equal(fast.router.dest_key, ref.router.dest_key)
        pairs = [(s, d) for s in range(0, fast.size, 3) for d in range(fast.size - 1, -1, -2)]
        arcs = [[c.paths.arcs_of(c.path_id(s, d)).tolist() for s, d in pairs] for c in (fast, ref)]
        assert arcs[0] == arcs[1]
    assert [fast.host_of(r) for r in range(fast.size)] == [ref.host_of(r) for r in range(ref.size)]
    assert fast.path_id(0, fast.size - 1) == ref.path_id(0, ref.size - 1)
    assert fast.paths.arcs_of(0).tolist() == ref.paths.arcs_of(0).tolist()
    assert Cluster(spec, ranks=3).ranks == ref.ranks[:3]
    assert nx.utils.graphs_equal(fast.graph, ref.graph) and fast._graph is not None
    copy = pickle.loads(pickle.dumps(Cluster(spec)))  # clusters travel to report workers
    assert np.array_equal(copy.arc_u, ref.arc_u) and nx.utils.graphs_equal(copy.graph, ref.graph)
    other = fast.with_link_model(dataclasses.replace(fast.link_model, gamma=1e-12))
    assert np.array_equal(other.arc_u, ref.arc_u) and other._graph is None


def test_dgx_arrays_refuse_what_the_graph_refuses():
    with pytest.raises(ConfigError):
        Cluster("dgx:hosts=2", ranks=17)
    for spec in ("dgx:hosts=2,gpus_per_host=0", "dgx:hosts=2,nic_bandwidth=-1Gbps", "dgx:hosts=2,bogus=1"):
        with pytest.raises(ConfigError) as graph_error:
            load_graph(spec)
        with pytest.raises(ConfigError) as array_error:
            Cluster(spec)
        assert str(array_error.value) == str(graph_error.value)


@pytest.mark.parametrize("routed", [",ecmp=hash", ""], ids=["hash", "default"])
@pytest.mark.parametrize("algorithm", ["ring", "hierarchical", "double-binary-tree:chunks=4", "halving-doubling"])
def test_dgx_arrays_simulate_as_the_graph(algorithm, routed):
    """End to end: a collective on the array-built cluster takes the graph-built one's times, bytes
    and busiest links, on both engines; hashed and on the default fabric (routed by destination)."""
    from sim.simulate import simulate

    spec = "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3" + routed
    for engine in ("message", "auto"):
        fast = simulate(Cluster(spec), "allreduce", algorithm, 2**24, engine=engine)
        ref = simulate(Cluster(load_graph(spec)), "allreduce", algorithm, 2**24, engine=engine)
        assert (fast.time_s, fast.link_bytes, fast.flows, fast.engine) == (
            ref.time_s,
            ref.link_bytes,
            ref.flows,
            ref.engine,
        )
        assert [x.link for x in fast.busiest_links] == [x.link for x in ref.busiest_links]
