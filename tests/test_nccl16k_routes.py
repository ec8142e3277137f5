"""Routes of NCCL's actors interned many at once (``Cluster.path_ids`` -> ``_route_many``, each
(source node, NIC, destination node) routed once) are the routes ``path_id`` gives pair by pair."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cluster import Cluster
from sim.errors import RoutingError
from sim.nccl.layout import channel_endpoint, engine


def _endpoints(cluster: Cluster) -> list[int]:
    """Ranks and channel actors on both NICs of every GPU (two keys per NIC)."""
    ends = list(range(cluster.size))
    for r in range(cluster.size):
        for nic in range(2):
            for key in range(2):
                ends.append(channel_endpoint(cluster, r, ("test", nic, key), nic))
    return ends


def _pairs(cluster: Cluster, ends: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Random pairs of ``ends``, and every NVSwitch engine to and from its host's GPUs."""
    rng = np.random.default_rng(7)
    pick = np.array(ends)[rng.choice(len(ends), size=(2, 3000))]
    src, dst = pick[0].tolist(), pick[1].tolist()
    for r in range(cluster.size):
        e = engine(cluster, r, "reduce")
        src += [e, r]
        dst += [r, e]
    return np.array(src), np.array(dst)


def _route(cluster: Cluster, pid: int) -> tuple[list[int], float, int, int, float]:
    p = cluster.paths
    start, length = int(p.start[pid]), int(p.length[pid])
    return (
        p.arcs[start : start + length].tolist(),
        float(p.latency[pid]),
        int(p.src[pid]),
        int(p.dst[pid]),
        float(p.bottleneck[pid]),
    )


@pytest.mark.parametrize("spec", ["hgx:preset=dgx-h100,hosts=4", "hgx:preset=oci-bm-gpu-h100-8,hosts=4"])
def test_routes_many_at_once_equal_one_by_one(spec: str) -> None:
    many, one = Cluster(spec), Cluster(spec)
    ends = _endpoints(many)
    assert ends == _endpoints(one)
    src, dst = _pairs(many, ends)
    _pairs(one, ends)  # the engines, added to both in the same order
    pids = many.path_ids(src, dst)
    got = [_route(many, pid) for pid in pids.tolist()]
    want = [_route(one, one.path_id(s, d)) for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    assert got == want
    assert many.paths.count == one.paths.count
    crossing = [g for g, s, d in zip(got, src.tolist(), dst.tolist(), strict=True) if s >= many.size and g[0]]
    assert len({tuple(g[0]) for g in crossing}) > 100  # the NICs' own routes, many of them


def test_unroutable_pair_named_as_one_by_one() -> None:
    many, one = Cluster("hgx:preset=dgx-h100,hosts=2"), Cluster("hgx:preset=dgx-h100,hosts=2")
    e_many, e_one = engine(many, 0, "reduce"), engine(one, 0, "reduce")  # NVSwitch h0: no NIC of its own
    with pytest.raises(RoutingError) as one_by_one:
        one.path_id(e_one, 8)
    with pytest.raises(RoutingError, match="endpoint 16 .*rank 8") as at_once:
        many.path_ids(np.array([0, 1, e_many]), np.array([1, 2, 8]))
    assert str(at_once.value) == str(one_by_one.value)


@pytest.mark.parametrize("spec", ["hgx:preset=dgx-h100,hosts=4", "hgx:preset=oci-bm-gpu-h100-8,hosts=4"])
def test_routes_in_bulk_equal_one_by_one(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with every batch routed in bulk from the NICs (sim.bulkroute's node routes, on the
    weighted DGX fabric: PCIe under NVLink) wherever the fabric allows it."""
    import sim.cluster

    monkeypatch.setattr(sim.cluster, "_BULK_MIN", 1)
    many, one = Cluster(spec), Cluster(spec)
    ends = _endpoints(many)
    assert ends == _endpoints(one)
    src, dst = _pairs(many, ends)
    _pairs(one, ends)
    pids = many.path_ids(src, dst)
    got = [_route(many, pid) for pid in pids.tolist()]
    want = [_route(one, one.path_id(s, d)) for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    assert got == want
    assert (many._via_bulk() is not None) == spec.startswith("hgx:preset=dgx-h100")  # (OCI: two NICs a GPU)


@pytest.mark.parametrize(
    "spec",
    [
        "hgx:preset=dgx-h100,hosts=3",
        "dgx:hosts=3",
        "dgx:hosts=6,hosts_per_leaf=2,spines=3",
        "hgx:preset=dgx-h100,hosts=4,hosts_per_leaf=2",
    ],
)
def test_node_routes_equal_the_routers(spec: str) -> None:
    """Every pair of nodes below the leaves (GPUs, NICs, NVSwitches, PCIe switches), routed in bulk
    from the origins (the GPUs and their NICs), as the router routes it -- or left to it (the mask),
    never routed otherwise; an NVSwitch and its GPUs (one light link) are routed too."""
    from sim.bulkroute import bulk_router

    c = Cluster(spec)
    kinds = [c.graph.nodes[v].get("kind") for v in c.nodes]
    origins = np.array([i for i, k in enumerate(kinds) if k in ("gpu", "nic")])
    below = np.array(
        [
            i
            for i, k in enumerate(kinds)
            if k in ("gpu", "nic", "nvswitch", "switch") and "leaf" not in c.nodes[i] and "spine" not in c.nodes[i]
        ]
    )
    bulk = bulk_router(c, origins=origins)
    assert bulk is not None
    src, dst = (a.ravel() for a in np.meshgrid(below, below))
    keep = src != dst
    src, dst = src[keep], dst[keep]
    rows, odd = bulk.node_routes(src, dst)
    inside = np.isin(src, origins) & np.isin(dst, origins)
    assert (~odd[inside]).mean() > 0.9
    engines = np.array([kinds[a] == "nvswitch" or kinds[b] == "nvswitch" for a, b in zip(src, dst, strict=True)])
    if engines.any() and spec.startswith("hgx"):
        linked = np.array([c.graph.has_edge(c.nodes[a], c.nodes[b]) for a, b in zip(src, dst, strict=True)])
        assert not odd[engines & linked].any()
    for i in np.flatnonzero(~odd).tolist():
        row = rows[i]
        assert row[row >= 0].tolist() == c.router.route(int(src[i]), int(dst[i])), (c.nodes[src[i]], c.nodes[dst[i]])


def test_channel_endpoints_at_once_equal_one_by_one() -> None:
    from sim.nccl.layout import channel_endpoints

    many, one = Cluster("hgx:preset=oci-bm-gpu-h100-8,hosts=2"), Cluster("hgx:preset=oci-bm-gpu-h100-8,hosts=2")
    ranks = [3, 1, 3, 9, 1]  # repeats: the same endpoint
    for key, nic in ((("a",), 0), (("a",), 1), (("b",), 0), (("a",), 0)):
        got = channel_endpoints(many, ranks, key, nic)
        assert got == [channel_endpoint(one, r, key, nic) for r in ranks]
    assert many.endpoints == one.endpoints == 16 + 9
    assert many.endpoint_rank == one.endpoint_rank
    assert many._via == one._via
    for name in ("rank_node", "overhead", "compute_scale"):
        assert np.array_equal(getattr(many, name), getattr(one, name))


def test_launchers_at_once_equal_one_by_one() -> None:
    from sim.nccl.pipeline import launchers

    many, one = Cluster("hgx:preset=dgx-h100,hosts=2"), Cluster("hgx:preset=dgx-h100,hosts=2")
    actors = [channel_endpoint(many, r, ("c",), 0) for r in (0, 5, 9)] + [3, 3, 12]
    assert actors == [channel_endpoint(one, r, ("c",), 0) for r in (0, 5, 9)] + [3, 3, 12]
    got = launchers(many, actors, 7e-6)
    want = []
    for a in dict.fromkeys(actors):
        rank = a if a < one.size else one.endpoint_rank[a - one.size]
        want.append((one.add_endpoint(rank=rank, key=("launch", a), overhead=7e-6), a))
    assert got == want
    assert launchers(many, actors, 7e-6) == got  # idempotent
    assert many.endpoint_rank == one.endpoint_rank
    for name in ("rank_node", "overhead", "compute_scale"):
        assert np.array_equal(getattr(many, name), getattr(one, name))


@pytest.mark.parametrize("spec", ["hgx:preset=dgx-h100,hosts=4,sharp=true", "dgx:hosts=4", "hgx:hosts=3"])
def test_descents_from_a_way_up_equal_the_routers(spec: str) -> None:
    """From every node on an origin's way up that is no origin (its PCIe switch, its leaf: where CollNet's
    SHARP engines sit) down to the origin, routed in bulk (that way reversed) as the router routes it."""
    from sim.bulkroute import bulk_router

    c = Cluster(spec)
    kinds = [c.graph.nodes[v].get("kind") for v in c.nodes]
    origins = np.array([i for i, k in enumerate(kinds) if k in ("gpu", "nic")])
    bulk = bulk_router(c, origins=origins)
    assert bulk is not None
    src, dst = [], []
    for e in origins.tolist():
        for u in bulk.up_node[e].tolist():
            if u >= 0 and not bulk.origin[u]:
                src.append(u)
                dst.append(e)
    assert any("leaf" in c.nodes[u] for u in src)
    rows, odd = bulk.node_routes(np.array(src), np.array(dst))
    assert bulk.descend and not odd.any()
    for i, (u, e) in enumerate(zip(src, dst, strict=True)):
        row = rows[i]
        assert row[row >= 0].tolist() == c.router.route(u, e), (c.nodes[u], c.nodes[e])


def test_known_pairs_are_found_whichever_side_is_searched() -> None:
    """``_known`` looks each pair up in the dict of pairs interned one by one, or (many pairs, a small
    dict) searches the dict's pairs among them: the same ids either way, -1 for the pairs not interned."""
    c = Cluster("dgx:hosts=4")
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, c.size, 300), rng.integers(0, c.size, 300)
    want = {(int(s), int(d)): c.path_id(int(s), int(d)) for s, d in zip(src[:20], dst[:20], strict=True)}
    expect = [want.get((int(s), int(d)), -1) for s, d in zip(src, dst, strict=True)]
    assert c._known(src, dst).tolist() == expect  # 300 pairs, a dict of <= 20: searched
    assert [int(c._known(src[i : i + 1], dst[i : i + 1])[0]) for i in range(40)] == expect[:40]  # looked up
