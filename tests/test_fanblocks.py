"""Flow classes built from the fabric's structure (sim.fanblocks) against the same classes built pair by
pair, and against the message level: the same classes (starts, sizes, crossings, pushes per server),
the same bookings, the same times to the last digit."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from sim import classes, prepare
from sim.classes import FanExecutor, fan_plan
from sim.network import Network
from sim.simulate import simulate
from sim.topology import dgx
from sim.training import Workload, simulate_iteration

#: destination-routed DGX fabrics with several leaves per rail and several spines
FABRICS = [
    "dgx:hosts=2,ecmp=destination",
    "dgx:hosts=4,gpus_per_host=4,hosts_per_leaf=2,ecmp=destination",
    "dgx:hosts=8,hosts_per_leaf=2,spines=3,ecmp=destination",
    "dgx:hosts=9,gpus_per_host=2,hosts_per_leaf=4,spines=2,ecmp=destination",
    "dgx:hosts=16,gpus_per_host=4,hosts_per_leaf=4,ecmp=destination",
    "dgx:hosts=32,gpus_per_host=2,hosts_per_leaf=8,spines=5,ecmp=destination",
    # NVLink as slow to cross as two leaf links: near pairs and pairs under one leaf start together
    "dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=3,spines=2,nvlink_latency=1us,latency=1us,ecmp=destination",
    # hosts on the leaves themselves: pairs under one leaf are near (through the leaf), and the pushes
    # into a host's link split (the runs start again pair by pair)
    "leaf-spine:leaves=3,hosts_per_leaf=3,spines=2,bandwidth=100Gbps,ecmp=destination",
    "leaf-spine:leaves=4,hosts_per_leaf=2,spines=3,bandwidth=100Gbps,uplink_bandwidth=50Gbps,gpus_per_host=2,"
    "intra_bandwidth=200Gbps,ecmp=destination",
]
#: (spec, ranks: None for every GPU, else the GPUs less this many hosts' worth)
SPECS = [
    ("ps", None),
    ("ps:shards=3", None),
    ("ps:shards=2,placement=dedicated", 2),
    ("ps:placement=dedicated", "one"),
]


def _shape(topology):
    """(GPUs, hosts) of a fabric, as the cluster built from it counts them."""
    cluster = prepare(topology, "allreduce", "ring").cluster
    return cluster.size, len({cluster.host_of(r) for r in range(cluster.size)})


#: every fabric with every spec, but the dedicated servers' spreads a fabric has no hosts to spare for
CASES = [
    (topology, spec, spread)
    for topology in FABRICS
    for spec, spread in SPECS
    if not (isinstance(spread, int) and _shape(topology)[1] <= spread)
]


def _ranks(topology, spread):
    """Ranks that leave dedicated servers their hosts: every GPU but ``spread`` hosts' worth, or
    (``"one"``) one server per rank, the most ranks whose hosts leave as many hosts spare."""
    gpus, hosts = _shape(topology)
    per_host = gpus // hosts
    if spread is None:
        return {}
    if spread == "one":
        return {"ranks": max(r for r in range(1, gpus) if hosts - -(-r // per_host) >= r)}
    assert hosts > spread, f"{topology}: {hosts} hosts leave no {spread} spare (CASES leaves it out)"
    return {"ranks": gpus - spread * per_host}


def _executor(topology, spec, size, structure, gamma=0.0, **kw):
    run = prepare(topology, "allreduce", spec, gamma=gamma, **kw)
    env = simpy.Environment()
    net = Network(env, run.cluster)
    plan = fan_plan(run.algorithm, run.ranks, size, run.cluster)
    old = classes._STRUCTURE
    classes._STRUCTURE = structure
    try:
        ex = FanExecutor(net, plan, run.gamma, run.cluster.compute_scale)
    finally:
        classes._STRUCTURE = old
    return ex, env, net


def _run(topology, spec, size, structure, gamma=0.0, **kw):
    ex, env, net = _executor(topology, spec, size, structure, gamma, **kw)
    done = env.process(ex.run())
    env.run(until=done)
    sent, received = net.rank_bytes()
    return ex, float(env.now), net.arc_bytes, sent, received, net.flows


def _classes(ex, built):
    """Every class's numbers as the table holds them, and its pushes per server."""
    tab = ex._tab
    s = len(ex.plan.servers)
    out = []
    for c in built:
        i = c.id
        lo, hi = tab.lo[i], tab.hi[i]
        per = c.per_server(s) if c.phase.push else None
        out.append(
            (
                repr(float(tab.start[i])),
                repr(float(tab.rem[i])),
                int(tab.size[i]),
                int(tab.width[i]),
                tab.e_arc[lo:hi].tolist(),
                tab.e_hop[lo:hi].tolist(),
                tab.e_cnt[lo:hi].tolist(),
                None if per is None else per.tolist(),
            )
        )
    return out


def _booked(ex):
    """The phase's bookings as (arc bytes, sent, received, flows), whichever way they were booked."""
    cl = ex.cluster
    arcs, sent, received, flows = np.zeros(cl.num_arcs), np.zeros(cl.size), np.zeros(cl.size), 0
    for kind, args in ex._booked:
        if kind == "account_arcs":
            arcs, sent, received = arcs + args[0], sent + args[1], received + args[2]
        else:
            pids, nbytes, n = args
            paths = cl.paths
            for pid, b in zip(pids.tolist(), nbytes.tolist(), strict=True):
                arcs[paths.arcs_of(pid)] += b
                sent[paths.src[pid]] += b
                received[paths.dst[pid]] += b
        flows += args[-1]
    return arcs, sent, received, flows


@pytest.mark.parametrize(("topology", "spec", "spread"), CASES)
def test_a_phase_built_from_the_structure_is_the_pairs_classes(topology, spec, spread):
    """Pushes to every server and to random subsets of them, pulls from them: the classes built from the
    fabric's structure are the classes built pair by pair -- the same starts, sizes, widths, crossing
    counts per (arc, hop), pushes per server -- and the bookings the same bytes on every arc and rank."""
    kw = _ranks(topology, spread)
    rng = np.random.default_rng(len(topology) + len(spec))
    fast, _, _ = _executor(topology, spec, 5 * 2**20 + 3, True, **kw)
    slow, _, _ = _executor(topology, spec, 5 * 2**20 + 3, False, **kw)
    s = len(fast.plan.servers)
    subsets = [np.arange(s), np.sort(rng.choice(s, size=max(1, s // 3), replace=False)), np.array([s - 1])]
    for servers in subsets:
        for push in (True, False):
            for ex in (fast, slow):
                ex._tab = classes._Table()
                ex._booked = []
            a = _classes(fast, fast._phase(servers, 1e-3, push))
            b = _classes(slow, slow._phase(servers, 1e-3, push))
            assert a == b
            got, want = _booked(fast), _booked(slow)
            for x, y in zip(got[:3], want[:3], strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)
            assert got[3] == want[3]
    assert fast.implicit == 6 and slow.implicit == 0


@pytest.mark.parametrize(("topology", "spec", "spread"), CASES)
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_the_structure_gives_the_pairs_times_and_the_message_levels(topology, spec, spread, gamma):
    """A whole run: the same simulated time to the last digit as the classes built pair by pair, the same
    bytes on every arc and rank and the same flows, and the message level's time to 1e-9."""
    kw = _ranks(topology, spread)
    size = 5 * 2**20 + 3
    fast, t_fast, *bytes_fast = _run(topology, spec, size, True, gamma, **kw)
    slow, t_slow, *bytes_slow = _run(topology, spec, size, False, gamma, **kw)
    assert fast.implicit > 0 and slow.implicit == 0
    assert repr(t_fast) == repr(t_slow)
    for x, y in zip(bytes_fast[:3], bytes_slow[:3], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)
    assert bytes_fast[3] == bytes_slow[3]
    assert (fast.solves, fast.splits) == (slow.solves, slow.splits)
    m = simulate(topology, "allreduce", spec, size, gamma=gamma, engine="message", **kw)
    assert abs(t_fast - m.time_s) <= 1e-9 * m.time_s
    assert m.flows == bytes_fast[3]
    assert m.link_bytes == pytest.approx(float(bytes_fast[0].sum()), rel=1e-12)


def test_one_shard_per_rank_is_never_split_and_never_listed():
    """Routed by destination, one shard per rank is a handful of classes, none split: every phase is
    built from the structure and no class ever lists its members."""
    ex, t, *_ = _run("dgx:hosts=16,gpus_per_host=4,hosts_per_leaf=4,ecmp=destination", "ps", 2**24, True)
    assert ex.structured and ex.splits == 0 and ex.implicit == 2 and ex._tab.n <= 8


def test_a_split_starts_the_run_again_pair_by_pair():
    """A straggler's slow reduction and slow links make the members of a class unequal: the class built
    from the structure cannot be split without its members, so the run starts again pair by pair --
    and gives the message level's time."""
    g = dgx(hosts=6, gpus_per_host=2, hosts_per_leaf=2, spines=2, ecmp="destination")
    g.nodes["h1:gpu0"]["compute_scale"] = 3.0
    for u, v in (("h2:nic1", "leaf1.1"), ("spine0", "leaf0.2")):
        g.edges[u, v]["bandwidth"] *= 0.3
    fast, t, arcs, _, _, flows = _run(g, "ps", 2**22, True, gamma=1e-10)
    assert not fast.structured and fast.splits > 0
    m = simulate(g, "allreduce", "ps", 2**22, gamma=1e-10, engine="message")
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert flows == m.flows and float(arcs.sum()) == pytest.approx(m.link_bytes, rel=1e-12)


def test_a_straggling_server_pulls_alone_from_the_structure():
    """A server that reduces 4x slower sends its pulls later, alone: a pull phase of one server, built
    from the structure, with the pairs' time."""
    g = dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, ecmp="destination")
    g.nodes["h2:gpu1"]["compute_scale"] = 4.0
    fast, t_fast, *bytes_fast = _run(g, "ps", 2**22, True, gamma=1e-10)
    slow, t_slow, *bytes_slow = _run(g, "ps", 2**22, False, gamma=1e-10)
    assert fast.structured and fast.implicit >= 3
    assert repr(t_fast) == repr(t_slow)
    for x, y in zip(bytes_fast[:3], bytes_slow[:3], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "topology",
    ["dgx:hosts=4,hosts_per_leaf=2,ecmp=hash", "leaf-spine:leaves=3,hosts_per_leaf=2,spines=2,bandwidth=100Gbps"],
)
def test_no_structure_where_routes_hash(topology):
    """Hashed ECMP gives every pair its own spine: no phase is built from the structure."""
    ex, *_ = _run(topology, "ps", 2**20, True)
    assert ex.implicit == 0


def test_the_default_dgx_is_built_from_the_structure():
    """``dgx`` routes by destination by default (a DGX SuperPOD's InfiniBand): its phases are built from
    the structure, with the classes, bytes and time of ``ecmp=destination`` said outright."""
    plain = _run("dgx:hosts=4,hosts_per_leaf=2", "ps", 2**20, True)
    said = _run("dgx:hosts=4,hosts_per_leaf=2,ecmp=destination", "ps", 2**20, True)
    assert plain[0].implicit > 0 and plain[0].implicit == said[0].implicit
    assert plain[1] == said[1] and plain[5] == said[5]
    for x, y in zip(plain[2:5], said[2:5], strict=True):
        assert np.array_equal(x, y)


def test_an_iteration_books_the_structures_bytes():
    """A serial-bucket iteration whose all-reduces are built from the structure books their bytes per
    arc and rank (never as paths) times the buckets: the same iteration, bytes and flows as building
    the classes pair by pair and as simulating every bucket."""
    topology = "dgx:hosts=4,gpus_per_host=4,hosts_per_leaf=2,ecmp=destination"
    w = Workload(
        gradient_bytes=20 * 2**20, forward_s=1e-3, backward_s=1e-3, bucket_bytes=4 * 2**20, concurrent_buckets=False
    )
    fast = simulate_iteration(topology, "ps", w, gamma=1e-11)
    old = classes._STRUCTURE
    classes._STRUCTURE = False
    try:
        pairs = simulate_iteration(topology, "ps", w, gamma=1e-11)
    finally:
        classes._STRUCTURE = old
    every = simulate_iteration(topology, "ps", w, gamma=1e-11, reuse=False)
    assert repr(fast.iteration_s) == repr(pairs.iteration_s)
    for ref in (pairs, every):
        for a, b in zip(fast.bucket_timings, ref.bucket_timings, strict=True):
            assert a.end_s == pytest.approx(b.end_s, rel=1e-9, abs=0)
        assert fast.flows == ref.flows
        assert fast.link_bytes == pytest.approx(ref.link_bytes, rel=1e-12)
        assert fast.bytes_sent == pytest.approx(ref.bytes_sent, rel=1e-12)
        assert fast.max_rank_bytes == pytest.approx(ref.max_rank_bytes, rel=1e-12)
        assert [u.bytes for u in fast.busiest_links] == pytest.approx([u.bytes for u in ref.busiest_links], rel=1e-12)
