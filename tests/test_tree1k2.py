"""The congested fast path's fixed costs on tree-1k, second round (docs/performance-log.md, "tree1k2"): the
router's tables by the compiled core's ``router_tables`` -- held to the numpy lines they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from sim import routing as routing_mod
from sim.cluster import Cluster
from sim.topology.graph import GPU

_CORE = routing_mod._CORE
_needs_core = pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")


def _same_tables(arc_u: np.ndarray, arc_v: np.ndarray, n: int, is_gpu: np.ndarray | None) -> None:
    got = routing_mod._tables(_CORE, arc_u, arc_v, n, is_gpu)
    router = routing_mod.Router.__new__(routing_mod.Router)
    router._n = n
    want = router._numpy_tables(arc_u, arc_v, n, is_gpu)
    assert got.keys() == want.keys()
    for key, w in want.items():
        assert got[key].dtype == w.dtype, key
        np.testing.assert_array_equal(got[key], w, err_msg=key)


@_needs_core
@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=128,ecmp=hash",
        "dgx:hosts=3",
        "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,bandwidth=100Gbps",
        "star:hosts=5,bandwidth=100Gbps",
        "hgx:preset=dgx-h100,hosts=4",
        "torus:dims=3x4,bandwidth=100Gbps",
        "two-rack-2to1",
    ],
)
def test_router_tables_equal_numpy_on_fabrics(spec: str) -> None:
    """Every table of a fabric's router, up-down (with the levels) or not, as numpy makes it."""
    cl = Cluster(spec)
    gpu = np.array([cl.graph.nodes[v].get("kind") == GPU for v in cl.nodes])
    for is_gpu in (None, gpu):
        _same_tables(cl.arc_u, cl.arc_v, len(cl.nodes), is_gpu)
    assert cl.router.arrays.keys() == (
        {"out_ptr", "out_v", "out_arc"} | ({"level", "up_ptr", "up_v", "up_arc", "above_ptr", "above_u", "above_arc"})
        if cl.router.mode == "updown"
        else {"out_ptr", "out_v", "out_arc"}
    )


@_needs_core
@pytest.mark.parametrize("seed", range(8))
def test_router_tables_equal_numpy_on_random_arcs(seed: int) -> None:
    """Arcs in any order, parallel arcs, loops, nodes no GPU reaches (level -1), arcs between equal levels."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    m = int(rng.integers(0, 4 * n + 1))
    arc_u, arc_v = rng.integers(0, n, size=m), rng.integers(0, n, size=m)
    if m > 4:
        arc_u[1], arc_v[1] = arc_u[0], arc_v[0]  # a parallel arc
    is_gpu = rng.random(n) < 0.2
    _same_tables(arc_u, arc_v, n, is_gpu)
    _same_tables(arc_u, arc_v, n, None)


@_needs_core
def test_router_tables_refuse_nodes_out_of_range() -> None:
    with pytest.raises(IndexError, match="router_tables: node out of range"):
        routing_mod._tables(_CORE, np.array([0, 3]), np.array([1, 0]), 3, np.array([True, False, False]))


@pytest.mark.parametrize(
    ("topology", "algorithm", "engine"),
    [
        ("dgx:hosts=16,ecmp=hash", "tree", "fast"),
        ("dgx:hosts=16,ecmp=hash", "ring", "message"),
        (
            "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,bandwidth=100Gbps,uplink_bandwidth=50Gbps",
            "halving-doubling",
            "fast",
        ),
    ],
)
def test_arc_bytes_equal_add_at(topology: str, algorithm: str, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Network.arc_bytes (the paths' arcs read as one slice, summed by np.bincount) against np.add.at over
    every path's arcs gathered path by path, to the bit."""
    from sim.network import Network
    from sim.rates import gather_arcs
    from sim.simulate import simulate

    seen: list[Network] = []
    busiest = Network.busiest
    monkeypatch.setattr(Network, "busiest", lambda self, *a, **k: seen.append(self) or busiest(self, *a, **k))
    simulate(Cluster(topology), "allreduce", algorithm, "3MB", engine=engine)
    (net,) = seen
    paths = net.cluster.paths
    n = min(paths.count, len(net._path_bytes))
    assert n > 1
    want = np.zeros(net.cluster.num_arcs)
    np.add.at(want, gather_arcs(paths, np.arange(n))[1], np.repeat(net._path_bytes[:n], paths.length[:n]))
    if net._unpathed is not None:
        want += net._unpathed[0]
    got = net.arc_bytes
    assert got.tobytes() == want.tobytes()
    assert (got > 0).any()


def _table(cl: Cluster) -> list[bytes]:
    p = cl.paths
    n = p.count
    cols = (p.start[:n], p.length[:n], p.latency[:n], p.src[:n], p.dst[:n], p.bottleneck[:n])
    return [p.arcs[: p._used].tobytes(), *(c.tobytes() for c in cols), repr(p.latency_list).encode()]


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=16,ecmp=hash",
        "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3",
        "leaf-spine:leaves=3,hosts_per_leaf=3,spines=2,bandwidth=100Gbps",
        "torus:dims=3x3,bandwidth=1GB/s",
    ],
)
@pytest.mark.parametrize("leave_out", [False, True])
def test_route_many_distinct_pairs_as_sorted(spec: str, leave_out: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct pairs between ranks on their own nodes, routed in the order they come (no np.unique of the
    triples, no gather of the rows after), intern the same table, to the bit, as the triples sorted do --
    also where the router leaves pairs to route one by one."""
    from sim import cluster as cluster_mod

    monkeypatch.setattr(cluster_mod, "_BULK_MIN", 10**9)
    if leave_out:
        routes = routing_mod.Router.routes

        def leaving(self: routing_mod.Router, srcs: np.ndarray, dsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            rows, left = routes(self, srcs, dsts)
            left = left.copy()
            left[::3] = True
            rows[left] = -1
            return rows, left

        monkeypatch.setattr(routing_mod.Router, "routes", leaving)
    fast, sorted_ = Cluster(spec), Cluster(spec)
    assert fast._ranks_apart()
    sorted_.__dict__["_ranks_apart_"] = False
    rng = np.random.default_rng(3)
    p = fast.size
    src, dst = rng.integers(0, p, 4 * p), rng.integers(0, p, 4 * p)
    keep = src != dst
    got, want = fast.path_ids(src[keep], dst[keep]), sorted_.path_ids(src[keep], dst[keep])
    assert got.tolist() == want.tolist()
    assert _table(fast) == _table(sorted_)


def _record(r: object) -> tuple[object, ...]:
    return (repr(r.time_s), r.events, r.flows, repr(r.link_bytes), repr(r.busiest_links))  # type: ignore[attr-defined]


_SOLVED = [
    ("dgx:hosts=16,ecmp=hash", "tree", "fast"),
    ("dgx:hosts=16,ecmp=hash", "tree", "message"),
    (
        "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,bandwidth=100Gbps,uplink_bandwidth=50Gbps",
        "halving-doubling",
        "fast",
    ),
]


@_needs_core
@pytest.mark.parametrize(("topology", "algorithm", "engine"), _SOLVED)
def test_solve_all_calls_the_rounds_as_maxmin_rates_would(
    topology: str, algorithm: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled wake-up's solve of every flow calls _classcore's rounds itself (its capsule) where
    sim.maxmin.maxmin_rates would call them: the same results, to the bit, as through maxmin_rates (its
    _CORE another object: the call goes through Python), and with the bounds where _UNBOUNDED_CORE is off;
    maxmin_rates is not called for those solves."""
    from sim import maxmin
    from sim import rates as rates_mod
    from sim.simulate import simulate

    def run() -> tuple[object, ...]:
        return _record(simulate(Cluster(topology), "allreduce", algorithm, "3MB", engine=engine))

    direct = run()
    calls: list[object] = []
    counted = maxmin.maxmin_rates

    def counting(*args: object, **kw: object) -> np.ndarray:
        calls.append(args)
        return counted(*args, **kw)

    with monkeypatch.context() as m:  # the same function in both modules: the solves of every flow in C
        m.setattr(maxmin, "maxmin_rates", counting)
        m.setattr(rates_mod, "maxmin_rates", counting)
        assert run() == direct
    in_c = len(calls)
    calls.clear()
    with monkeypatch.context() as m:  # only the rates' name: every solve through it
        m.setattr(rates_mod, "maxmin_rates", counting)
        assert run() == direct
    assert len(calls) > in_c
    rounds = maxmin._CORE.maxmin

    class Proxy:  # _classcore's rounds behind another object: called through maxmin_rates
        maxmin = staticmethod(rounds)

    with monkeypatch.context() as m:
        m.setattr(maxmin, "_CORE", Proxy())
        assert run() == direct
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_UNBOUNDED_CORE", False)
        assert run() == direct
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_UNBOUNDED_CORE", False)
        m.setattr(maxmin, "_BOUNDED_CORE", False)
        assert run() == direct


def test_known_one_is_known() -> None:
    """A pair's id among those interned in bulk, searched alone: :meth:`Cluster._known`'s, found or not
    (-1), at the ends of the sorted keys and beyond what a key holds as is."""
    cl = Cluster("dgx:hosts=4")
    p = cl.size
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, p, 40), rng.integers(0, p, 40)
    keep = src != dst
    cl.path_ids(src[keep], dst[keep])
    pairs = [(s, d) for s in range(p) for d in range(p)] + [(0, 0), (p + 3, 1), (1 << 31, 2), (2, 1 << 32)]
    hits = 0
    for s, d in pairs:
        want = int(cl._known(np.array([s]), np.array([d]))[0])
        assert cl._known_one(s, d) == want, (s, d)
        hits += want >= 0
    assert 0 < hits < len(pairs)


def _dominators_both(cluster: object, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    from sim import rates as rates_mod

    got = rates_mod._static_dominators(cluster)
    with monkeypatch.context() as m:
        m.setattr(rates_mod, "_CORE", None)
        want = rates_mod._static_dominators(cluster)
    return got, want


@pytest.mark.parametrize(
    "spec", ["dgx:hosts=4", "dgx:hosts=16,ecmp=hash", "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,bandwidth=100Gbps"]
)
def test_static_dominators_in_c_on_fabrics(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got, want = _dominators_both(Cluster(spec), monkeypatch)
    np.testing.assert_array_equal(got, want)


def _random_arcs(seed: int) -> object:
    """Chains of nodes with two neighbours, parallel and one-way arcs, loops, ties and NaN in the capacities,
    ranks anywhere (negative indices too)."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    edges = rng.integers(0, n, size=(int(rng.integers(1, 3 * n)), 2))
    chain = np.arange(n)  # a path through every node: many with two neighbours
    edges = np.concatenate([edges[: int(rng.integers(0, len(edges) + 1))], np.stack([chain[:-1], chain[1:]], 1)])
    both = rng.random(len(edges)) < 0.9  # most links both ways
    u = np.concatenate([edges[:, 0], edges[both, 1]])
    v = np.concatenate([edges[:, 1], edges[both, 0]])
    perm = rng.permutation(len(u))
    cap = rng.choice([1.0, 2.0, 2.0, 4.0], size=len(u))
    if seed % 3 == 0:
        cap[rng.integers(0, len(u))] = np.nan
    ranks = rng.choice(np.arange(-n, n), size=int(rng.integers(0, 4)), replace=False)
    return SimpleNamespace(arc_u=u[perm], arc_v=v[perm], capacity=cap, rank_node=ranks)


@pytest.mark.parametrize("seed", range(12))
def test_static_dominators_in_c_on_random_arcs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one pass gives the numpy lines' dominators on :func:`_random_arcs`."""
    got, want = _dominators_both(_random_arcs(seed), monkeypatch)
    np.testing.assert_array_equal(got, want)


def test_static_dominators_random_arcs_found_some(monkeypatch: pytest.MonkeyPatch) -> None:
    """(The random cases are not vacuous: most of them have dominated arcs.)"""
    found = [int((_dominators_both(_random_arcs(seed), monkeypatch)[1] >= 0).sum()) for seed in range(12)]
    assert sum(f > 0 for f in found) >= 6, found


@pytest.mark.parametrize(
    "spec", ["dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash", "torus:dims=3x3,bandwidth=1GB/s"]
)
def test_path_ids_of_sorted_distinct_pairs(spec: str) -> None:
    """Pairs already distinct and in order (a dataflow's): taken as they are, the ids path_id gives, some
    interned before; a repeat or a pair out of order still goes through np.unique."""
    one, many = Cluster(spec), Cluster(spec)
    p = one.size
    src, dst = np.divmod(np.arange(p * p), p)
    keep = (src != dst) & (np.arange(p * p) % 3 != 0)
    src, dst = src[keep], dst[keep]
    many.path_id(int(src[7]), int(dst[7]))
    one.path_id(int(src[7]), int(dst[7]))
    want = [one.path_id(s, d) for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    assert many.path_ids(src, dst).tolist() == want
    assert _table(many) == _table(one)
    again = np.array([3, 1, 3])
    assert many.path_ids(src[again], dst[again]).tolist() == [want[3], want[1], want[3]]
    fresh = Cluster(spec)
    twice = np.array([1, 3, 3, 4])  # in order, one pair twice, none interned yet
    got = fresh.path_ids(src[twice], dst[twice]).tolist()
    assert got[1] == got[2] and len(set(got)) == 3 == fresh.paths.count
