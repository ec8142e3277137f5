"""Flow classes (sim.classes): the parameter server and master-worker run as classes of equivalent
flows give the message-level times to 1e-9 -- uniform, heterogeneous, congested and straggler cases --
and the verification really splits classes whose members are not equivalent."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import Cluster, classes, prepare
from sim.algorithms.base import Algorithm
from sim.algorithms.registry import _REGISTRY
from sim.bulkroute import bulk_router
from sim.classes import FanExecutor, fan_plan
from sim.maxmin import maxmin_rates, maxmin_rates_full
from sim.network import Network
from sim.simulate import simulate
from sim.topology import dgx, leaf_spine, star, torus
from sim.training import Workload, simulate_iteration

from .test_fastpath import assert_same, both, interleaved_racks, perturb

FAN = sorted((c, n) for (c, n), cls in _REGISTRY.items() if cls.fan is not Algorithm.fan)

#: (graph, GPUs per host) -- dedicated servers need hosts that hold no rank
TOPOLOGIES = {
    "interleaved-racks": (interleaved_racks(), 1),
    "star": (star(6, "100Gbps", "1us"), 1),
    "star-multi-gpu": (star(3, "100Gbps", "2us", gpus_per_host=4, intra_bandwidth="300GB/s", intra_latency="1us"), 4),
    "leaf-spine-2to1": (leaf_spine(3, 4, 1, "100Gbps", "200Gbps", "1us"), 1),
    "dgx": (dgx(hosts=3, gpus_per_host=4), 4),  # routed by destination (the default)
    "dgx-hash": (dgx(hosts=3, gpus_per_host=4, ecmp="hash"), 4),
    "torus": (torus("3x3", "50Gbps", "1us"), 1),
}
SPECS = ["ps", "ps:shards=3", "ps:shards=2,placement=dedicated", "ps:placement=dedicated", "master-worker"]


def kwargs_for(spec, graph, per_host):
    """Ranks that leave the dedicated servers their hosts (two spare hosts, or one per rank)."""
    gpus = len(graph.graph["ranks"])
    if "dedicated" not in spec:
        return {}
    if "shards=2" in spec:
        return {"ranks": gpus - 2 * per_host}
    hosts = gpus // per_host
    # one server per rank: the most ranks whose hosts leave as many hosts spare
    return {"ranks": max(r for r in range(1, gpus) if hosts - -(-r // per_host) >= r)}


def test_the_fan_algorithms_have_plans():
    assert FAN == [("allreduce", "master-worker"), ("allreduce", "ps")]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
@pytest.mark.parametrize("gamma", [0.0, 3e-11])
def test_same_times_on_every_kind_of_fabric(spec, name, gamma):
    graph, per_host = TOPOLOGIES[name]
    kw = kwargs_for(spec, graph, per_host)
    a, b = both(graph, "allreduce", spec, 5 * 2**20 + 3, gamma=gamma, **kw)
    assert b.engine == "fast:classes"
    assert_same(a, b)


@pytest.mark.parametrize("root", [0, 4])
def test_master_worker_any_root(root):
    a, b = both(TOPOLOGIES["leaf-spine-2to1"][0], "allreduce", "master-worker", 3 * 2**20, gamma=1e-11, root=root)
    assert_same(a, b)


@pytest.mark.parametrize("spec", ["ps", "ps:shards=2", "master-worker", "ps:shards=2,placement=dedicated"])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gamma=st.sampled_from([0.0, 1e-11, 1e-10]), size=st.floats(1e3, 1e8))
def test_same_times_with_stragglers_and_slow_links(spec, seed, gamma, size):
    """Stragglers (per-message overhead, slow reductions) and slowed links make the members of a class
    unequal: the classes must split (or start apart) and still give the message-level times."""
    base = [
        (star(7, "100Gbps", "1us"), 1),
        (leaf_spine(2, 3, 1, "100Gbps", "100Gbps", "1us"), 1),
        (dgx(hosts=3, gpus_per_host=3, ecmp="hash"), 3),
        (interleaved_racks(), 1),
    ]
    graph, per_host = base[seed % len(base)]
    graph = perturb(graph, seed)
    a, b = both(graph, "allreduce", spec, size, gamma=gamma, **kwargs_for(spec, graph, per_host))
    assert_same(a, b)


def executor(topology, spec, size, **kw):
    run = prepare(topology, "allreduce", spec, **kw)
    net = Network(simpy.Environment(), run.cluster)
    plan = fan_plan(run.algorithm, run.ranks, size, run.cluster)
    ex = FanExecutor(net, plan, run.gamma, run.cluster.compute_scale, max_classes=np.inf)
    return ex, ex.simulate(0.0)


def test_a_uniform_fabric_is_a_few_classes():
    """On a star every push drains at one rate: the phase is one class, solved a handful of times, and
    nothing is split -- while the message-level path runs 2·16·15 flows."""
    ex, t = executor("star:hosts=16,bandwidth=1GB/s,latency=1us", "ps", 2**24)
    assert ex.splits == 0 and ex.solves <= 4
    assert t == pytest.approx(simulate("star:hosts=16,bandwidth=1GB/s,latency=1us", "allreduce", "ps", 2**24).time_s)


@pytest.mark.parametrize("pcie", ["25GB/s", "50GB/s", "64GB/s"])
def test_arcs_a_neighbour_dominates_are_left_out_exactly(pcie):
    """Around a node with two neighbours (a NIC between its GPU and its leaf, the NVSwitch of a 2-GPU
    host) the arcs on either side carry the same flows: the classes count only the narrower -- PCIe
    narrower than the NIC, equal, wider -- and the times stay the message level's."""
    topology = f"dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=2,spines=2,pcie_bandwidth={pcie}"
    ex, t = executor(topology, "ps:shards=4", 3 * 2**20 + 7, gamma=1e-11)
    cl = ex.cluster
    srcs, dsts = np.divmod(np.arange(cl.size * cl.size), cl.size)
    rows = ex.routes(srcs[srcs != dsts], dsts[srcs != dsts], ids=False)[0]
    trimmed = ex.trim(rows)
    dropped = np.unique(rows[(rows >= 0) & (trimmed < 0)])
    nics = [a for a in dropped.tolist() if ":nic" in cl.nodes[cl.arc_u[a]] + cl.nodes[cl.arc_v[a]]]
    assert len(nics) == 2 * cl.size  # one side of every NIC, both ways
    for a in dropped.tolist():  # every route over a crosses its dominator, no wider
        d = int(ex._dom[a])
        assert ((rows == a).any(axis=1) <= (rows == d).any(axis=1)).all() and cl.capacity[d] <= cl.capacity[a]
    m = simulate(topology, "allreduce", "ps:shards=4", 3 * 2**20 + 7, gamma=1e-11, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s


@pytest.mark.parametrize("warm", [0.0, 0.5, 2.0])
def test_loads_followed_exactly_or_bounded_give_the_same_times(monkeypatch, warm):
    """Arcs half full are followed exactly, the others under a bound that books every class only when
    a rate rises past the least room per member: following every arc exactly (0), the default (0.5)
    and only the arcs ever kept (2) all give the message level's times, and the bound spares most
    bookings."""
    monkeypatch.setattr(classes, "_WARM", warm)
    topology = "dgx:hosts=16,gpus_per_host=2,hosts_per_leaf=4,spines=4,ecmp=hash"
    ex, t = executor(topology, "ps:shards=12", 3 * 2**20 + 7, gamma=1e-11)
    m = simulate(topology, "allreduce", "ps:shards=12", 3 * 2**20 + 7, gamma=1e-11, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert ex.splits > 0 and 0 < ex.bookings < ex.solves


def test_unequal_members_are_split():
    """ECMP spreads a DGX's cross-rail pushes unevenly over the spines (some uplinks saturate): the
    verification catches classes whose members are not equivalent and splits them; times stay exact."""
    ex, t = executor("dgx:hosts=4,gpus_per_host=4,ecmp=hash", "ps", 2**24)
    assert ex.splits > 0
    m = simulate("dgx:hosts=4,gpus_per_host=4,ecmp=hash", "allreduce", "ps", 2**24, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s


def test_destination_routing_keeps_the_pushes_equal():
    """Routed by destination (InfiniBand's D-mod-K) no two hosts' flows meet on a spine by chance: the
    pushes of a DGX stay a handful of classes, none split, and the time is the message level's."""
    topology = "dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=4,ecmp=destination"
    ex, t = executor(topology, "ps", 2**24)
    assert ex.splits == 0 and ex.solves <= 16
    m = simulate(topology, "allreduce", "ps", 2**24, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    hashed, _ = executor("dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=4,ecmp=hash", "ps", 2**24)
    assert hashed.splits > 0 and hashed.solves > 4 * ex.solves
    # dgx's default (a DGX SuperPOD's InfiniBand) is this routing: the same classes, the same time
    default, td = executor("dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=4", "ps", 2**24)
    assert (default.splits, default.solves, td) == (ex.splits, ex.solves, t)


def test_a_straggling_server_pulls_late():
    """A server that reduces 5x slower starts its pulls later: its pulls are classes of their own."""
    g = star(6, "100Gbps", "1us")
    g.nodes["h2"]["compute_scale"] = 5.0
    a, b = both(g, "allreduce", "ps", 2**22, gamma=1e-10)
    assert_same(a, b)
    assert b.time_s > simulate(star(6, "100Gbps", "1us"), "allreduce", "ps", 2**22, gamma=1e-10).time_s * 1.01


def test_the_data_check_runs_every_message():
    r = simulate("dgx:hosts=2,gpus_per_host=4", "allreduce", "ps:shards=3", 2**20, check=True)
    assert r.engine == "message" and r.wrong == 0
    ded = simulate("dgx:hosts=4,gpus_per_host=2", "allreduce", "ps:placement=dedicated", 2**20, ranks=2, check=True)
    assert ded.engine == "message" and ded.wrong == 0


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_weighted_maxmin_is_the_expanded_one(seed):
    """A class of m flows that all cross the same arcs, given weight m, gets the rate each of its m
    flows gets when they are expanded one by one."""
    rng = np.random.default_rng(seed)
    arcs = int(rng.integers(2, 7))
    classes = int(rng.integers(1, 6))
    capacity = rng.uniform(1.0, 10.0, arcs)
    paths = [rng.choice(arcs, size=int(rng.integers(1, arcs + 1)), replace=False) for _ in range(classes)]
    mult = rng.integers(1, 5, classes)
    cls = np.concatenate([np.full(len(p), i) for i, p in enumerate(paths)])
    arc = np.concatenate(paths)
    weighted = maxmin_rates(cls, arc, classes, capacity, weight=np.repeat(mult, [len(p) for p in paths]))
    flows = [(i, p) for i, p in enumerate(paths) for _ in range(mult[i])]
    flat = maxmin_rates(
        np.concatenate([np.full(len(p), k) for k, (_, p) in enumerate(flows)]),
        np.concatenate([p for _, p in flows]),
        len(flows),
        capacity,
    )
    expanded = np.array([flat[[k for k, (i, _) in enumerate(flows) if i == c]] for c in range(classes)], dtype=object)
    for c in range(classes):
        assert np.allclose(expanded[c], weighted[c], rtol=1e-12)


def test_training_iterations_reuse_the_class_run():
    """A serial-bucket iteration with the parameter server (each bucket alone: the flow-class run)
    gives every bucket's start and end as simulating every bucket message by message does."""
    w = Workload(
        gradient_bytes=20 * 2**20, forward_s=1e-3, backward_s=1e-3, bucket_bytes=4 * 2**20, concurrent_buckets=False
    )
    fast = simulate_iteration("dgx:hosts=2,gpus_per_host=4", "ps:shards=4", w, gamma=1e-11)
    ref = simulate_iteration("dgx:hosts=2,gpus_per_host=4", "ps:shards=4", w, gamma=1e-11, reuse=False)
    for a, b in zip(fast.bucket_timings, ref.bucket_timings, strict=True):
        assert a.end_s == pytest.approx(b.end_s, rel=1e-9, abs=0)
    assert fast.flows == ref.flows
    assert fast.link_bytes == pytest.approx(ref.link_bytes, rel=1e-12)


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=3,hosts_per_leaf=2,spines=2,ecmp=hash",
        "dgx:hosts=6,hosts_per_leaf=2,spines=3,gpus_per_host=4,ecmp=hash",
        "dgx:hosts=2,ecmp=hash",
        "dgx:hosts=6,hosts_per_leaf=2,spines=3,gpus_per_host=4",  # the default: by destination
        "leaf-spine:leaves=4,hosts_per_leaf=3,spines=2,bandwidth=100Gbps,uplink_bandwidth=100Gbps",
        "star:hosts=5,bandwidth=1GB/s",
    ],
)
def test_bulk_routes_are_the_routers(spec):
    """Every rank pair routed in bulk takes the route the router gives it pair by pair."""
    cluster = Cluster(spec)
    bulk = bulk_router(cluster)
    assert bulk is not None
    n = cluster.size
    src, dst = np.divmod(np.arange(n * n), n)
    src, dst = src[src != dst], dst[src != dst]
    rows, odd = bulk.routes(src, dst)
    assert not odd.any()
    for i in range(len(src)):
        want = cluster.router.route(int(cluster.rank_node[src[i]]), int(cluster.rank_node[dst[i]]))
        assert rows[i][rows[i] >= 0].tolist() == list(want)


def test_no_bulk_routes_where_the_shape_differs():
    assert bulk_router(Cluster("torus:dims=3x3,bandwidth=1GB/s")) is None


def test_uninterned_routes_book_the_same_bytes(monkeypatch):
    """A plan too large to intern its routes books bytes per link and per rank instead: the same totals,
    the same busiest links."""
    topo = "dgx:hosts=3,hosts_per_leaf=2,spines=2,gpus_per_host=4"
    ref = simulate(topo, "allreduce", "ps:shards=5", 2**22, engine="message")
    monkeypatch.setattr(classes, "_INTERN_MAX", 0)
    big = simulate(Cluster(topo), "allreduce", "ps:shards=5", 2**22)
    assert big.engine == "fast:classes"
    assert abs(big.time_s - ref.time_s) <= 1e-9 * ref.time_s
    assert big.flows == ref.flows
    assert big.link_bytes == pytest.approx(ref.link_bytes, rel=1e-12)
    assert big.max_sent_bytes == pytest.approx(ref.max_sent_bytes, rel=1e-12)
    assert [x.link for x in big.busiest_links] == [x.link for x in ref.busiest_links]


def test_fragmented_classes_fall_back_to_the_messages(monkeypatch):
    """Where the classes split nearly into single messages the algorithm's own process runs instead,
    on the same network, with the same result as asking for the message level."""
    topo = "dgx:hosts=4,gpus_per_host=4,ecmp=hash"
    ref = simulate(topo, "allreduce", "ps", 2**22, engine="message")
    monkeypatch.setattr(classes, "_MIN_CLASSES", 2)
    monkeypatch.setattr(classes, "_FLOWS_PER_CLASS", 10**9)
    got = simulate(topo, "allreduce", "ps", 2**22)
    assert got.engine == "message"
    assert got.time_s == ref.time_s and got.flows == ref.flows and got.link_bytes == ref.link_bytes


def test_large_classes_are_verified_and_split_by_chunks(monkeypatch):
    """Classes beyond a chunk of members are checked and cut chunk by chunk: the same times."""
    monkeypatch.setattr(classes, "_CHUNK", 7)
    ex, t = executor("dgx:hosts=4,gpus_per_host=4,ecmp=hash", "ps", 2**24)
    assert ex.splits > 0
    m = simulate("dgx:hosts=4,gpus_per_host=4,ecmp=hash", "allreduce", "ps", 2**24, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s


#: fabrics whose leaves above the servers take as much as the servers' NICs: ECMP's uneven hash fills
#: some spine downlinks, and the pushes split into (server, spine) classes ending at many instants
#: (hashed: ``dgx`` routes by destination by default, where they would not meet by chance)
FRAGMENTING = [
    ("dgx:hosts=16,gpus_per_host=2,hosts_per_leaf=4,ecmp=hash", "ps:shards=16", {}),
    ("dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=2,ecmp=hash", "ps:shards=8", {}),
    (
        "dgx:hosts=16,gpus_per_host=2,hosts_per_leaf=4,spines=4,ecmp=hash",
        "ps:shards=8,placement=dedicated",
        {"ranks": 16},
    ),
    ("dgx:hosts=4,gpus_per_host=2,hosts_per_leaf=2,ecmp=hash", "ps", {}),
]


@pytest.mark.parametrize(("topology", "spec", "kw"), FRAGMENTING)
def test_fragmented_classes_are_solved_by_components(topology, spec, kw):
    """Where the classes fragment, a completion re-solves only the components (classes joined by arcs
    that fill) it touches -- and the times are still the message level's."""
    ex, t = executor(topology, spec, 2**24, **kw)
    m = simulate(topology, "allreduce", spec, 2**24, engine="message", **kw)
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert ex.splits > 0
    if "hosts_per_leaf=4" in topology:  # several leaves above the servers: several components
        assert ex.partial > 0


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    hosts=st.integers(4, 12),
    per_leaf=st.integers(2, 4),
    spines=st.integers(1, 4),
    gamma=st.sampled_from([0.0, 1e-11]),
    size=st.floats(1e4, 1e8),
)
def test_random_congested_fabrics_keep_the_message_times(seed, hosts, per_leaf, spines, gamma, size):
    """Random rail fabrics with few spines (oversubscribed), random shards and placements, slowed links
    and stragglers: the component-wise class run gives the message level's times."""
    rng = np.random.default_rng(seed)
    gpus = 2
    graph = dgx(hosts=hosts, gpus_per_host=gpus, hosts_per_leaf=per_leaf, spines=spines, ecmp="hash")
    graph = perturb(graph, seed, stragglers=1, slow_links=2)
    if rng.random() < 0.5:
        shards = int(rng.integers(1, hosts * gpus + 1))
        spec, kw = f"ps:shards={shards}", {}
    else:
        spare = int(rng.integers(1, hosts))
        shards = int(rng.integers(1, spare + 1))
        spec, kw = f"ps:shards={shards},placement=dedicated", {"ranks": (hosts - spare) * gpus}
    m = simulate(graph, "allreduce", spec, size, gamma=gamma, engine="message", **kw)
    ex, t = executor(graph, spec, size, gamma=gamma, **kw)
    assert abs(t - m.time_s) <= 1e-9 * m.time_s


#: many classes on few links: two or three spines above leaves of four to eight hosts
FEW_LINKS = [
    ("dgx:hosts=12,gpus_per_host=2,hosts_per_leaf=6,spines=3,ecmp=hash", "ps:shards=12", {}),
    ("dgx:hosts=12,gpus_per_host=2,hosts_per_leaf=4,spines=2,ecmp=hash", "ps", {}),
    (
        "dgx:hosts=16,gpus_per_host=2,hosts_per_leaf=8,spines=2,ecmp=hash",
        "ps:shards=6,placement=dedicated",
        {"ranks": 20},
    ),
]


@pytest.mark.parametrize(("topology", "spec", "kw"), FEW_LINKS)
@pytest.mark.parametrize("seed", [None, 3, 11])
def test_many_classes_on_few_links_keep_the_message_times(monkeypatch, topology, spec, kw, seed):
    """Hundreds of classes sharing a few links -- as they are, with slowed links and stragglers -- with
    the class table compacted after every few splits: the message level's times, and the table really
    dropped dead classes' crossings and the classes really split."""
    monkeypatch.setattr(classes, "_COMPACT_MIN", 16)
    graph = Cluster(topology).graph if seed is None else perturb(Cluster(topology).graph, seed)
    gamma = 0.0 if seed is None else 1e-11
    ex, t = executor(graph, spec, 3 * 2**22 + 5, gamma=gamma, **kw)
    m = simulate(graph, "allreduce", spec, 3 * 2**22 + 5, gamma=gamma, engine="message", **kw)
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert ex.splits > 0 and ex.compactions > 0


def test_a_completion_instant_completes_every_class_due_then():
    """On a star every push drains at one rate: however many classes a phase has, the pushes complete
    in one event and the pulls in another -- a few solves in all."""
    ex, t = executor("star:hosts=24,bandwidth=1GB/s,latency=1us", "ps:shards=7", 2**24)
    assert ex.solves <= 4
    m = simulate("star:hosts=24,bandwidth=1GB/s,latency=1us", "allreduce", "ps:shards=7", 2**24, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s


@given(seed=st.integers(0, 2**32 - 1), chain=st.integers(0, 12))
@settings(max_examples=60, deadline=None)
def test_class_maxmin_is_maxmin_rates_to_the_bit(seed, chain):
    """The executor's max-min (:func:`sim.maxmin.maxmin_rates`: rounds over the crossings of unfixed classes
    only) gives exactly the rates of the full-width rounds (:func:`sim.maxmin.maxmin_rates_full`) with
    weights -- on random problems, and on a staircase of ``chain`` links each sharing a class with the
    next, a little tighter, which takes a round per link."""
    rng = np.random.default_rng(seed)
    arcs = int(rng.integers(1, 12))
    n = int(rng.integers(1, 30))
    paths = [rng.choice(arcs, size=int(rng.integers(1, min(arcs, 4) + 1)), replace=False) for _ in range(n)]
    capacity = np.concatenate([rng.choice([1.0, 2.0, 3.0, rng.uniform(0.5, 5.0)], arcs), 10.0 - 0.5 * np.arange(chain)])
    paths += [np.array([arcs + i, arcs + i + 1]) for i in range(chain - 1)] + [
        np.array([arcs + i]) for i in range(chain)
    ]
    cls = np.concatenate([np.full(len(p), i) for i, p in enumerate(paths)])
    arc = np.concatenate(paths)
    weight = rng.integers(1, 6, len(arc)).astype(float)
    want = maxmin_rates_full(cls, arc, len(paths), capacity, weight=weight)
    got = maxmin_rates(cls, arc, len(paths), capacity, weight=weight)
    assert np.array_equal(got, want)
    # the engine's solves: bounds per flow, no weights
    bound = np.where(rng.random(len(paths)) < 0.3, rng.uniform(0.1, 3.0, len(paths)), np.inf)
    assert np.array_equal(
        maxmin_rates(cls, arc, len(paths), capacity, bound), maxmin_rates_full(cls, arc, len(paths), capacity, bound)
    )


#: one shard per rank, co-located and dedicated, on rail fabrics whose NICs and spine links all fill:
#: every class joins one component and each max-min solve runs chains of bottlenecks
ONE_PER_RANK = [
    ("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=3,spines=2,ecmp=hash", "ps", {}, 2**20),
    ("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=3,spines=2,ecmp=hash", "ps", {}, 3 * 2**24 + 1),
    ("dgx:hosts=12,gpus_per_host=2,hosts_per_leaf=4,spines=2,ecmp=hash", "ps:placement=dedicated", {"ranks": 8}, 2**22),
]


@pytest.mark.parametrize(("topology", "spec", "kw", "size"), ONE_PER_RANK)
def test_one_shard_per_rank_keeps_the_message_times(topology, spec, kw, size):
    """The report's parameter server (one shard per rank): the class run gives the message level's
    time, its classes split down to single messages."""
    ex, t = executor(topology, spec, size, gamma=1e-11, **kw)
    m = simulate(topology, "allreduce", spec, size, gamma=1e-11, engine="message", **kw)
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert ex.splits > 0
    assert ex.above > 0  # completions re-solved only the classes at and above their rates


@pytest.mark.parametrize(("topology", "spec", "kw"), FRAGMENTING[:3])
def test_arcs_kept_anew_re_solve_only_the_components_they_join(monkeypatch, topology, spec, kw):
    """An arc that fills during a partial re-solve joins the components of the classes crossing it to
    the region -- not every class -- and the times stay the message level's."""
    joined = []
    original = FanExecutor._joined

    def spy(self, region):
        out = original(self, region)
        joined.append(len(out) < self._nactive)
        return out

    monkeypatch.setattr(FanExecutor, "_joined", spy)
    ex, t = executor(topology, spec, 2**24, **kw)
    m = simulate(topology, "allreduce", spec, 2**24, engine="message", **kw)
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert any(joined)


def test_routes_interned_in_bulk_are_the_routers_paths():
    """The routes a plan interns in bulk (``Cluster.intern_routes``, kept as sorted keys, not a dict entry
    per pair) are found again by ``path_id`` and ``path_ids``: the same ids, the router's arcs."""
    ex, _ = executor("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=2,spines=2,ecmp=hash", "ps", 2**20)
    cl = ex.cluster
    assert ex.intern and len(cl._bulk_keys) > 0 and len(cl._pid) < len(cl._bulk_keys)
    srcs, dsts = np.divmod(np.arange(cl.size * cl.size), cl.size)
    keep = srcs != dsts
    ids = cl.path_ids(srcs[keep], dsts[keep])
    assert len(set(ids.tolist())) == int(keep.sum())  # one path per pair, none interned twice
    for s, d, pid in zip(srcs[keep].tolist(), dsts[keep].tolist(), ids.tolist(), strict=True):
        assert cl.path_id(s, d) == pid
        arcs = cl.router.route(int(cl.rank_node[s]), int(cl.rank_node[d]))
        assert cl.paths.arcs_of(pid).tolist() == list(arcs)
