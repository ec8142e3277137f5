"""Routing: up-down routes equal Dijkstra's where both apply; ECMP is deterministic; GPUs inside a
multi-GPU host never forward."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest

from sim.cluster import Cluster
from sim.topology import dgx, leaf_spine, star, torus


def routes(graph, mode):
    g = graph.copy()
    g.graph["routing"] = mode
    cl = Cluster(g)
    p = cl.size
    return {(s, d): cl.paths.arcs_of(cl.path_id(s, d)).tolist() for s, d in itertools.permutations(range(p), 2)}, cl


@pytest.mark.parametrize(
    "graph",
    [
        star(5, "100Gbps", "1us"),
        star(3, "100Gbps", gpus_per_host=3, intra_bandwidth="300GB/s"),
        leaf_spine(3, 2, 3, "100Gbps", "200Gbps", "1us"),
        leaf_spine(2, 2, 2, "100Gbps", gpus_per_host=2, intra_bandwidth="300GB/s"),
        dgx(hosts=3, gpus_per_host=4, hosts_per_leaf=2, spines=3, ecmp="hash"),
        dgx(hosts=3, gpus_per_host=4, hosts_per_leaf=2, spines=3),
    ],
    ids=["star", "star-multi-gpu", "leaf-spine", "leaf-spine-multi-gpu", "dgx-hash", "dgx"],
)
def test_updown_equals_dijkstra(graph):
    a, cl = routes(graph, "updown")
    b, _ = routes(graph, "dijkstra")
    assert a == b
    # and every route is a shortest path in hops
    und = graph.copy()
    for (s, d), arcs in a.items():
        assert len(arcs) == nx.shortest_path_length(und, cl.ranks[s], cl.ranks[d])


def test_routes_are_valid_walks_and_skip_gpus():
    g = dgx(hosts=2, gpus_per_host=4)
    cl = Cluster(g)
    for s, d in itertools.permutations(range(cl.size), 2):
        arcs = cl.paths.arcs_of(cl.path_id(s, d))
        nodes = [cl.nodes[cl.arc_u[arcs[0]]]] + [cl.nodes[cl.arc_v[a]] for a in arcs]
        assert nodes[0] == cl.ranks[s] and nodes[-1] == cl.ranks[d]
        for a, b in zip(arcs[:-1], arcs[1:], strict=True):
            assert cl.arc_v[a] == cl.arc_u[b]
        assert all(g.nodes[n]["kind"] != "gpu" for n in nodes[1:-1])


def test_ecmp_spreads_and_is_deterministic():
    g = leaf_spine(2, 8, 4, "100Gbps")
    spines_used = set()
    for _ in range(2):
        cl = Cluster(g)
        for s in range(8):
            arcs = cl.paths.arcs_of(cl.path_id(s, 8 + s))
            spines_used.add(cl.nodes[cl.arc_v[arcs[1]]])
    assert len(spines_used) > 1  # several spines carry the 8 cross-leaf routes
    runs = []
    for _ in range(3):
        cl = Cluster(g)
        runs.append(cl.paths.arcs_of(cl.path_id(0, 9)).tolist())
    assert len(runs[0]) == 4 and runs[0] == runs[1] == runs[2]


def test_torus_routes_through_hosts():
    cl = Cluster(torus("4x4", "100Gbps"))
    arcs = cl.paths.arcs_of(cl.path_id(0, 10))  # (0,0) -> (2,2): 4 hops through other hosts
    assert len(arcs) == 4


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash",
        "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3",  # the default: by destination
        "leaf-spine:leaves=3,hosts_per_leaf=3,spines=2,bandwidth=100Gbps",
        "star:hosts=3,bandwidth=100Gbps,gpus_per_host=3,intra_bandwidth=300GB/s",
        "torus:dims=3x3,bandwidth=1GB/s",  # no bulk router: pair by pair
    ],
)
@pytest.mark.parametrize("bulk_min", [0, 10**9])
def test_path_ids_are_path_id(spec, bulk_min, monkeypatch):
    """Many pairs at once (routed in bulk where the fabric allows) get the ids, and the routes, that
    asking pair by pair gives -- interned in the order the pairs first appear, repeats and pairs
    interned before included."""
    import numpy as np

    from sim import cluster as cluster_mod

    monkeypatch.setattr(cluster_mod, "_BULK_MIN", bulk_min)
    one, many = Cluster(spec), Cluster(spec)
    p = one.size
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, p, 3 * p * p), rng.integers(0, p, 3 * p * p)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    many.path_id(int(src[5]), int(dst[5]))  # one pair already interned
    one.path_id(int(src[5]), int(dst[5]))
    want = [one.path_id(s, d) for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    got = many.path_ids(src, dst)
    assert got.tolist() == want
    assert bool(many._bulk) == (bulk_min == 0 and not spec.startswith("torus"))  # routed in bulk, or not
    assert many.paths.count == one.paths.count
    for pid in range(one.paths.count):
        assert many.paths.arcs_of(pid).tolist() == one.paths.arcs_of(pid).tolist()
        assert many.paths.latency[pid] == one.paths.latency[pid]
        assert many.paths.bottleneck[pid] == one.paths.bottleneck[pid]
    assert (many.paths.src[: one.paths.count] == one.paths.src[: one.paths.count]).all()
    assert many.path_ids(src[:0], dst[:0]).tolist() == []
    # the same pairs again, together or one by one: nothing new
    assert many.path_ids(src, dst).tolist() == want
    assert [many.path_id(s, d) for s, d in zip(src[:50].tolist(), dst[:50].tolist(), strict=True)] == want[:50]
    assert many.paths.count == one.paths.count


def _spine_of(cl, src: int, dst: int) -> str | None:
    names = [cl.arc_name(a) for a in cl.paths.arcs_of(cl.path_id(src, dst)).tolist()]
    ups = [n.split("->")[1] for n in names if n.split("->")[1].startswith("spine")]
    return ups[0] if ups else None


def _one_spine_per_destination(cl, per: int) -> None:
    """Hosts 0-3 (one leaf group) reached from hosts 4-7 (another) on every rail: one spine per
    destination host whatever the source, and a different spine for each of them."""
    for dst_host in range(4):
        spines = {
            _spine_of(cl, src_host * per + rail, dst_host * per + rail)
            for src_host in range(4, 8)
            for rail in range(per)
        }
        assert len(spines) == 1 and None not in spines
    assert len({_spine_of(cl, 4 * per, d * per) for d in range(4)}) == 4  # one spine each


def test_destination_routing_takes_one_spine_per_destination_host_on_every_rail():
    """hgx's InfiniBand presets route by destination (D-mod-K): every flow to a host crosses the same spine
    whatever its source and rail, and the hosts under one leaf take the spines one each; the RoCE presets
    hash (source, destination) per flow."""
    from sim.topology.hgx import hgx

    g = hgx(8, "dgx-h100", hosts_per_leaf=4, gpus_per_host=2)  # 2 leaf groups of 4 hosts, 4 spines per rail
    cl = Cluster(g)
    assert cl.graph.graph["ecmp"] == "destination"
    per = 2
    _one_spine_per_destination(cl, per)
    hashed = Cluster(hgx(8, "dgx-h100", hosts_per_leaf=4, gpus_per_host=2, ecmp="hash"))
    assert hashed.router.dest_key is None
    assert len({_spine_of(hashed, s * per, 0) for s in range(4, 8)}) > 1
    assert Cluster(hgx(2, "oci-bm-gpu-h100-8")).router.dest_key is None


@pytest.mark.parametrize(
    "spec, per, default",
    [
        ("dgx:hosts=8,gpus_per_host=2,hosts_per_leaf=4", 2, "destination"),
        ("leaf-spine:leaves=2,hosts_per_leaf=4,spines=4,bandwidth=100Gbps", 1, "hash"),
    ],
    ids=["dgx", "leaf-spine"],
)
def test_dgx_and_leaf_spine_route_by_destination_when_asked(spec, per, default):
    """``ecmp=destination`` on the dgx and leaf-spine builders: every flow to a host crosses one spine,
    the hosts under a leaf take the spines one each; ``hash`` spreads one destination's flows over
    several spines. ``dgx`` (a DGX SuperPOD: InfiniBand) routes by destination by default, ``leaf-spine``
    (any fabric, Ethernet's ECMP alike) hashes."""
    cl = Cluster(f"{spec},ecmp=destination")
    assert cl.graph.graph["ecmp"] == "destination" and cl.router.dest_key is not None
    _one_spine_per_destination(cl, per)
    hashed = Cluster(f"{spec},ecmp=hash")
    assert hashed.graph.graph["ecmp"] == "hash" and hashed.router.dest_key is None
    assert len({_spine_of(hashed, s * per, 0) for s in range(4, 8)}) > 1
    plain = Cluster(spec)
    assert plain.graph.graph["ecmp"] == default and (plain.router.dest_key is None) == (default == "hash")
    routed = cl if default == "destination" else hashed
    pairs = [(s, d) for s in range(0, plain.size, 3) for d in range(plain.size) if s != d]
    assert [_spine_of(plain, s, d) for s, d in pairs] == [_spine_of(routed, s, d) for s, d in pairs]


def _searched_ancestors(router, dst):
    """A node's ancestors and shortest descending hops by a plain search from it (no reuse of the
    nodes above)."""
    import heapq

    dist = {dst: 0.0}
    heap = [(0.0, dst)]
    ptr, up, w, arc = router._above_ptr, router._above_u, router._above_w, router._above_arc
    while heap:
        d, v = heapq.heappop(heap)
        if d > dist[v]:
            continue
        for k in range(ptr[v], ptr[v + 1]):
            nd = d + w[k]
            if nd < dist.get(up[k], float("inf")):
                dist[up[k]] = nd
                heapq.heappush(heap, (nd, up[k]))
    down: dict[int, list[tuple[int, int]]] = {}
    for v, dv in dist.items():
        for k in range(ptr[v], ptr[v + 1]):
            if abs(dv + w[k] - dist[up[k]]) <= 1e-9 * max(1.0, dist[up[k]]):
                down.setdefault(up[k], []).append((v, arc[k]))
    return dist, {u: sorted(h) for u, h in down.items()}


@pytest.mark.parametrize(
    "spec",
    ["hgx:preset=dgx-h100,hosts=40,hosts_per_leaf=8", "hgx:preset=oci-bm-gpu-h100-8,hosts=24,hosts_per_leaf=8"],
    ids=["destination", "hash"],
)
def test_reused_ancestors_and_ways_on_equal_a_search_per_pair(spec):
    """A node's ancestors taken from the nodes above it, and a destination-keyed route continued from
    a node another route passed, are what a search from scratch gives: the same nodes, distances, hops
    and routes."""
    cl = Cluster(spec)
    router = cl.router
    assert router.mode == "updown" and not router._unit
    for dst in range(router._n):
        dist, down = router._ancestors(dst)
        want_dist, want_down = _searched_ancestors(router, dst)
        assert dist.keys() == want_dist.keys() and down == want_down
        assert all(abs(dist[u] - want_dist[u]) <= 1e-12 * max(1.0, want_dist[u]) for u in dist)
    fresh = Cluster(spec).router
    gpus = [int(v) for v in cl.rank_node]
    for s, d in itertools.product(gpus[::3], gpus[::5]):
        fresh._cache.clear()  # nothing kept from other routes
        assert router.route(s, d) == fresh.route(s, d)
