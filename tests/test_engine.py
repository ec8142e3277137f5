"""The network engine against hand-derived answers: max-min shares, full duplex, staggered flows."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from sim.cluster import Cluster
from sim.maxmin import maxmin_rates, maxmin_rates_sequential
from sim.network import Network
from sim.topology import ClusterBuilder, star


def run_flows(cluster, flows, check=True):
    """flows: list of (start_time, src, dst, nbytes[, rate bound]) -> completion times, in order."""
    env = simpy.Environment()
    net = Network(env, cluster, check=check)
    done = [None] * len(flows)

    def one(i, start, src, dst, nbytes, bound=None):
        yield env.timeout(start)
        yield net.send(src, dst, nbytes, bound=bound)
        done[i] = env.now

    for i, f in enumerate(flows):
        env.process(one(i, *f))
    env.run()
    return done, net


def small(caps, lat=0.0):
    """Hosts h0..hN-1 on one switch with the given link capacities (bytes/s)."""
    b = ClusterBuilder("hand")
    b.add_switch("sw")
    for i, cap in enumerate(caps):
        b.add_host(f"h{i}")
        b.add_link(f"h{i}", "sw", bandwidth=cap, latency=lat)
    return Cluster(b.build())


# --------------------------------------------------------------------------- max-min solver
def test_two_flows_share_one_link_equally():
    rates = maxmin_rates(np.array([0, 1]), np.array([0, 0]), 2, np.array([10.0]))
    assert rates.tolist() == [5.0, 5.0]


def test_flow_bottlenecked_upstream_leaves_the_rest_to_the_other():
    # flow 0 crosses link 0 (cap 2) then link 1 (cap 10); flow 1 crosses link 1 only
    rates = maxmin_rates(np.array([0, 0, 1]), np.array([0, 1, 1]), 2, np.array([2.0, 10.0]))
    assert rates.tolist() == [2.0, 8.0]


def test_upper_bounds_are_respected_and_release_capacity():
    rates = maxmin_rates(np.array([0, 1, 2]), np.array([0, 0, 0]), 3, np.array([9.0]), np.array([1.0, np.inf, np.inf]))
    assert rates.tolist() == [1.0, 4.0, 4.0]


@st.composite
def flow_sets(draw):
    links = draw(st.integers(1, 6))
    caps = np.array(draw(st.lists(st.floats(1, 100), min_size=links, max_size=links)))
    nflows = draw(st.integers(1, 8))
    entries_f, entries_a = [], []
    for f in range(nflows):
        used = draw(st.sets(st.integers(0, links - 1), min_size=1, max_size=links))
        for a in sorted(used):
            entries_f.append(f)
            entries_a.append(a)
    return np.array(entries_f), np.array(entries_a), nflows, caps


@given(flow_sets())
def test_maxmin_is_feasible_and_every_flow_has_a_bottleneck(case):
    ef, ea, n, caps = case
    rates = maxmin_rates(ef, ea, n, caps)
    load = np.zeros(len(caps))
    np.add.at(load, ea, rates[ef])
    assert (load <= caps * (1 + 1e-9)).all()
    # max-min optimality: each flow crosses a saturated link on which no flow is faster
    for f in range(n):
        mine = ea[ef == f]
        ok = False
        for a in mine:
            saturated = load[a] >= caps[a] * (1 - 1e-9)
            fastest = rates[ef[ea == a]].max() <= rates[f] * (1 + 1e-9)
            ok |= saturated and fastest
        assert ok, (f, rates, load, caps)


@given(flow_sets(), st.lists(st.floats(0.5, 200), min_size=8, max_size=8))
def test_parallel_filling_equals_the_textbook_one(case, bounds):
    """Fixing every locally tightest link in one round gives the same allocation as one level per
    round (with and without per-flow bounds)."""
    ef, ea, n, caps = case
    for bound in (None, np.array(bounds[:n])):
        fast = maxmin_rates(ef, ea, n, caps, bound)
        slow = maxmin_rates_sequential(ef, ea, n, caps, bound)
        assert np.allclose(fast, slow, rtol=1e-9, atol=0), (fast, slow)


def test_many_distinct_levels_settle_in_few_rounds():
    """Fan-ins of 1..200 flows into 200 links: 200 distinct levels, all settled in one round."""
    flows, arcs = [], []
    f = 0
    for link in range(200):
        for _ in range(link + 1):
            flows.append(f)
            arcs.append(link)
            f += 1
    rates = maxmin_rates(np.array(flows), np.array(arcs), f, np.full(200, 100.0))
    expected = np.concatenate([np.full(k + 1, 100.0 / (k + 1)) for k in range(200)])
    assert np.allclose(rates, expected, rtol=1e-12)


# --------------------------------------------------------------------------- timing
def test_single_message_is_hockney():
    cl = Cluster(star(2, 1e9, 1e-6))
    (t,), _ = run_flows(cl, [(0, 0, 1, 1e6)])
    assert t == pytest.approx(2e-6 + 1e-3, rel=1e-12)


def test_fan_in_shares_the_receivers_link():
    cl = Cluster(star(3, 1e9, 0.0))
    times, _ = run_flows(cl, [(0, 0, 2, 1e6), (0, 1, 2, 1e6)])
    assert times == pytest.approx([2e-3, 2e-3], rel=1e-12)


def test_upstream_bottleneck_gives_the_rest_to_the_other_flow():
    # h0's own link is 1e8; h1's and h2's are 1e9. Both send 1e6 bytes to h2: flow A is held to 1e8
    # by its own link, so B gets 9e8 of h2's link until it ends at 1e6/9e8; then A keeps 1e8.
    cl = small([1e8, 1e9, 1e9])
    (ta, tb), net = run_flows(cl, [(0, 0, 2, 1e6), (0, 1, 2, 1e6)])
    assert tb == pytest.approx(1e6 / 9e8, rel=1e-12)
    assert ta == pytest.approx(1e6 / 1e8, rel=1e-12)
    assert net.peak_load.max() <= 1e9 * (1 + 1e-12)


def test_full_duplex_directions_are_independent():
    cl = Cluster(star(2, 1e9, 0.0))
    times, _ = run_flows(cl, [(0, 0, 1, 1e6), (0, 1, 0, 1e6)])
    assert times == pytest.approx([1e-3, 1e-3], rel=1e-12)


def test_asymmetric_link_directions():
    b = ClusterBuilder("asym")
    b.add_switch("sw")
    for h in ("a", "b"):
        b.add_host(h)
    b.add_link("a", "sw", bandwidth=1e9, reverse_bandwidth=2e9)
    b.add_link("b", "sw", bandwidth=1e9, reverse_bandwidth=1e9)
    cl = Cluster(b.build())
    (t_ab, t_ba), _ = run_flows(cl, [(0, 0, 1, 1e6), (0, 1, 0, 1e6)])
    assert t_ab == pytest.approx(1e-3)  # a->sw at 1e9
    assert t_ba == pytest.approx(1e-3)  # b->sw at 1e9 is the narrower of b->sw, sw->a


def test_staggered_start_recomputes_rates():
    # A starts at 0 alone at 1e9; B joins at 0.5 ms on the same receiver link: both at 5e8.
    # A has 5e5 bytes left at 0.5 ms -> ends at 1.5 ms; B then alone drains its last 5e5 by 2 ms.
    cl = Cluster(star(3, 1e9, 0.0))
    (ta, tb), _ = run_flows(cl, [(0, 0, 2, 1e6), (0.5e-3, 1, 2, 1e6)])
    assert ta == pytest.approx(1.5e-3, rel=1e-12)
    assert tb == pytest.approx(2.0e-3, rel=1e-12)


def test_latency_is_paid_before_draining_and_overhead_at_the_sender():
    cl = Cluster(star(3, 1e9, 1e-3, overhead=2e-3))
    # two flows into h2; A starts draining at 4 ms, B at 5 ms: A alone for 1 ms (1e6 B), then shared.
    (ta, tb), _ = run_flows(cl, [(0, 0, 2, 2e6), (1e-3, 1, 2, 1e6)])
    # at 5 ms A has 1e6 left, B 1e6: both at 5e8 -> both end at 7 ms
    assert ta == pytest.approx(7e-3, rel=1e-12)
    assert tb == pytest.approx(7e-3, rel=1e-12)


def test_zero_byte_and_self_messages_cost_only_latency():
    cl = Cluster(star(2, 1e9, 1e-6))
    (t0, t1), _ = run_flows(cl, [(0, 0, 1, 0), (0, 0, 0, 1e6)])
    assert t0 == pytest.approx(2e-6)
    assert t1 == 0.0


def test_batched_transfer_equals_separate_sends():
    cl = Cluster(star(8, 1e9, 1e-6))
    env = simpy.Environment()
    net = Network(env, cl)
    out = {}

    def proc():
        yield net.transfer(np.arange(8), (np.arange(8) + 3) % 8, 1e6)
        out["batch"] = env.now

    env.process(proc())
    env.run()
    times, _ = run_flows(cl, [(0, i, (i + 3) % 8, 1e6) for i in range(8)])
    assert out["batch"] == pytest.approx(max(times), rel=1e-15)


def test_link_bytes_account_every_arc():
    cl = Cluster(star(3, 1e9, 0.0))
    _, net = run_flows(cl, [(0, 0, 2, 1e6), (0, 1, 2, 3e6)])
    assert net.arc_bytes.sum() == pytest.approx(2 * 4e6)  # each flow crosses two arcs
    into_h2 = cl.arc_id("sw0", "h2")
    assert net.arc_bytes[into_h2] == pytest.approx(4e6)


def test_a_deadlocked_algorithm_is_one_clear_error():
    """A rank waiting for a message nobody sends ends the run with RunError, not SimPy's RuntimeError."""
    from sim.algorithms import register
    from sim.algorithms.base import Algorithm
    from sim.algorithms.registry import _REGISTRY
    from sim.errors import RunError
    from sim.simulate import simulate

    class Stuck(Algorithm):
        name, collective = "stuck-test", "allreduce"

        def run(self, job):
            yield job.recv(0, 1)

        def cost(self, p, n, alpha, beta, gamma=0.0):
            return 0.0

    register(Stuck)
    try:
        with pytest.raises(RunError, match="deadlocked at t=0 s: .* 1 receive"):
            simulate(star(2, 1e9), "allreduce", "stuck-test", 1e6)
    finally:
        del _REGISTRY[("allreduce", "stuck-test")]


@pytest.mark.parametrize("seed", range(4))
def test_re_solving_only_the_touched_components_gives_the_full_solution(seed, monkeypatch):
    """Random flows between the hosts of an oversubscribed leaf-spine, started at random instants, many
    sharing few uplinks: every completion time is the same whether a change re-solves only the
    components it touches or every active flow."""
    import random

    import sim.rates as rates

    cluster = Cluster("leaf-spine:leaves=4,hosts_per_leaf=32,spines=2,bandwidth=100Gbps,uplink_bandwidth=100Gbps")
    rng = random.Random(seed)
    flows = [
        (
            rng.uniform(0, 2e-3),
            *rng.sample(range(cluster.size), 2),
            rng.choice([2**16, 2**20, 2**22]) * rng.uniform(0.5, 2),
        )
        for _ in range(600)
    ]
    ends, used = run_flows(cluster, flows)
    monkeypatch.setattr(rates, "_INCREMENTAL_MIN", 10**9)
    full, unused = run_flows(cluster, flows)
    used, unused = used.rates, unused.rates
    assert used.partial > 0 and unused.partial == 0
    assert ends == pytest.approx(full, rel=1e-12, abs=0)


@pytest.mark.parametrize("seed", range(3))
def test_components_solved_in_plain_python_numpy_or_all_at_once_agree(seed, monkeypatch):
    """Many bounded and unbounded flows sharing a few uplinks (one spine, 8:1), started at random
    instants: every completion time is the same whether a change's component is solved in plain
    Python, with numpy, or every active flow is re-solved -- and no link is ever over capacity."""
    import random

    import sim.rates as rates

    cluster = Cluster("leaf-spine:leaves=4,hosts_per_leaf=16,spines=1,bandwidth=100Gbps,uplink_bandwidth=200Gbps")
    rng = random.Random(seed)
    flows = [
        (
            rng.uniform(0, 1e-3),
            *rng.sample(range(cluster.size), 2),
            rng.choice([2**14, 2**18, 2**21]) * rng.uniform(0.5, 2),
            rng.choice([None, None, rng.uniform(1e9, 2e10)]),
        )
        for _ in range(400)
    ]
    scalar, used = run_flows(cluster, flows)
    monkeypatch.setattr(rates, "_SCALAR_MAX", 0)
    vectorized, used_numpy = run_flows(cluster, flows)
    monkeypatch.setattr(rates, "_INCREMENTAL_MIN", 10**9)
    full, unused = run_flows(cluster, flows)
    used, used_numpy, unused = used.rates, used_numpy.rates, unused.rates
    assert used.partial > 0 and used_numpy.partial > 0 and unused.partial == 0
    assert scalar == pytest.approx(full, rel=1e-12, abs=0)
    assert vectorized == pytest.approx(full, rel=1e-12, abs=0)


def test_a_flow_left_alone_on_its_link_gets_the_whole_link():
    """When one of two flows sharing a link ends, the other's component is re-solved: it speeds up to
    the full link for the rest of its bytes (1 MB at half of 1 GB/s, then 1 MB at 1 GB/s)."""
    import simpy

    from sim.cluster import Cluster
    from sim.network import Network

    env = simpy.Environment()
    net = Network(env, Cluster("star:hosts=3,bandwidth=1GB/s,latency=0"))
    ends = {}

    def sender(src, size):
        yield net.send(src, 2, size)
        ends[src] = env.now

    env.process(sender(0, 1e6))
    env.process(sender(1, 2e6))
    env.run()
    assert ends[0] == pytest.approx(2e-3, rel=1e-12)
    assert ends[1] == pytest.approx(3e-3, rel=1e-12)


def _reference_ends(cluster, flows):
    """Completion times of ``flows`` ((start, src, dst, nbytes[, bound]) as in :func:`run_flows`) by the
    model itself, recomputed from scratch at every instant: every active flow's max-min rate by the
    textbook filling, time moved on to the next start or end (flows due within 1e-12 of it end there)."""
    model = cluster.message_model
    paths = cluster.paths
    begin, wire, arcs, bounds = [], [], [], []
    for start, src, dst, nbytes, *rest in flows:
        pid = cluster.path_id(src, dst)
        delay, w = model.one(pid, src, nbytes)
        begin.append(start + delay)
        wire.append(w)
        arcs.append(paths.arcs_of(pid).tolist())
        bounds.append(rest[0] if rest and rest[0] is not None else np.inf)
    left = list(wire)
    ends = [None] * len(flows)
    active: list[int] = []
    waiting = sorted(range(len(flows)), key=lambda i: begin[i])
    t = 0.0
    while active or waiting:
        while waiting and begin[waiting[0]] <= t:
            i = waiting.pop(0)
            if left[i] <= 0 or not arcs[i]:
                ends[i] = t
            else:
                active.append(i)
        rate = {}
        if active:
            ef = np.concatenate([np.full(len(arcs[i]), k) for k, i in enumerate(active)])
            ea = np.concatenate([arcs[i] for i in active])
            r = maxmin_rates_sequential(ef, ea, len(active), cluster.capacity, np.array([bounds[i] for i in active]))
            rate = dict(zip(active, r.tolist(), strict=True))
        nxt = min([t + left[i] / rate[i] for i in active] + ([begin[waiting[0]]] if waiting else []))
        for i in active:
            left[i] -= rate[i] * (nxt - t)
        t = nxt
        for i in [i for i in active if t + left[i] / rate[i] <= t * (1 + 1e-12)]:
            ends[i] = t
            active.remove(i)
    return ends


@pytest.mark.parametrize("seed", range(3))
def test_completions_from_the_due_time_heap_equal_a_solve_from_scratch_at_every_instant(seed):
    """Flows on a crowded fabric (one spine, 4:1), started in waves that reuse slots, with equal flows
    that end together, rate bounds and rates that change many times while a flow drains: every flow ends
    when a from-scratch simulation of the model says (due times come from a heap whose stale entries are
    skipped; the flows due at one instant end in one wake-up)."""
    import random

    cluster = Cluster("leaf-spine:leaves=4,hosts_per_leaf=8,spines=1,bandwidth=100Gbps,uplink_bandwidth=200Gbps")
    rng = random.Random(seed)
    flows = []
    for wave in range(6):
        t0 = wave * 4e-4
        for _ in range(25):
            src, dst = rng.sample(range(cluster.size), 2)
            bound = rng.choice([None, None, None, rng.uniform(2e9, 1e10)])
            flows.append((t0 + rng.uniform(0, 2e-4), src, dst, rng.choice([2**12, 2**16, 2**19]), bound))
        flows += [(t0, 3 * k, 3 * k + 9, 2**18) for k in range(6)]  # equal flows, started together
    ends, net = run_flows(cluster, flows)
    want = _reference_ends(cluster, flows)
    assert ends == pytest.approx(want, rel=1e-9, abs=0)
    assert net.active_flows == 0 and net.solves > 50


def test_path_ids_in_bulk_are_the_routers_routes():
    """Many rank pairs at once (a step of a 16-host DGX and of a leaf-spine, some pairs already
    interned, a rank to itself) get the routes, latencies and narrowest capacities that routing the
    pairs one by one gives; a fabric the bulk router does not know (a torus) routes them one by one."""
    rng = np.random.default_rng(3)
    for spec in (
        "dgx:hosts=96,ecmp=hash",
        "dgx:hosts=96",  # the default: by destination
        "leaf-spine:leaves=8,hosts_per_leaf=96,spines=3,bandwidth=100Gbps",
        "torus:dims=8x8x8,bandwidth=100Gbps",
    ):
        bulk, one = Cluster(spec), Cluster(spec)
        p = bulk.size
        src = rng.integers(0, p, 3000)
        dst = np.where(rng.random(3000) < 0.3, (src ^ 8) % p, rng.integers(0, p, 3000))
        dst = np.where(dst == src, (src + 1) % p, dst)  # bulk routing takes distinct ranks (below: to itself)
        for s, d in zip(src[10:20].tolist(), dst[10:20].tolist(), strict=True):
            bulk.path_id(s, d)  # interned before
        pids = bulk.path_ids(src, dst)
        assert (bulk._bulk is False) == spec.startswith("torus")
        mixed = bulk.path_ids(np.array([4, 4, 7]), np.array([4, 9, 7]))  # a rank to itself: pair by pair
        assert mixed.tolist() == [bulk.path_id(4, 4), bulk.path_id(4, 9), bulk.path_id(7, 7)]
        for pid, s, d in zip(pids.tolist(), src.tolist(), dst.tolist(), strict=True):
            ref = one.path_id(s, d)
            assert bulk.paths.arcs_of(pid).tolist() == one.paths.arcs_of(ref).tolist()
            assert bulk.paths.latency[pid] == pytest.approx(one.paths.latency[ref], rel=1e-15)
            assert bulk.paths.bottleneck[pid] == one.paths.bottleneck[ref]
            assert bulk.path_id(s, d) == pid


@pytest.mark.parametrize("seed", range(3))
def test_links_left_out_of_the_bookkeeping_change_no_rate(seed, monkeypatch):
    """Every flow that crosses a DGX GPU's link to its NIC also crosses the NIC's link to its leaf, and
    the narrower of the two is the only one the rate bookkeeping keeps (``sim.rates._Dominance``). Random
    flows between the hosts (rate bounds, NICs wider or narrower than PCIe), then flows into an endpoint
    on a NIC, whose path crosses the GPU->NIC link alone and brings that link back while flows drain:
    every completion time is the same, bit for bit, as keeping every link, and the model's own."""
    import random

    import sim.rates as rates
    from sim.topology import dgx

    rng = random.Random(seed)
    nic, pcie = rng.choice([(50e9, 64e9), (64e9, 50e9), (50e9, 50e9)])

    def cluster():
        return Cluster(dgx(hosts=4, gpus_per_host=2, hosts_per_leaf=2, nic_bandwidth=nic, pcie_bandwidth=pcie))

    flows = []
    for _ in range(250):
        src, dst = rng.sample(range(8), 2)
        bound = rng.choice([None, None, None, rng.uniform(1e10, 6e10)])
        flows.append((rng.uniform(0, 1e-4), src, dst, rng.choice([2**16, 2**20, 2**22]), bound))
    late = [(rng.uniform(5e-5, 1e-4), rng.randrange(8), None, 2**20) for _ in range(12)]

    def run(c):
        engine = rates._dominance_of(c)  # before the endpoint: its NIC is a node routes pass through
        nic0 = c.add_endpoint(node="h0:nic0")
        ends, net = run_flows(c, flows + [(t, src, nic0, n) for t, src, _, n in late])
        return engine, ends, net, nic0

    left_out, ends, net, nic0 = run(cluster())
    gpu_nic = left_out.cluster.arc_id("h0:gpu0", "h0:nic0")
    assert left_out.version >= 1 and left_out.dom[gpu_nic] == -1  # brought back by the endpoint's paths
    assert net.rates.partial > 0 and (left_out.dom >= 0).sum() > 0
    assert net.rates._shared == 0  # the shared-link count followed every change
    monkeypatch.setattr(rates, "_static_dominators", lambda c: np.full(c.num_arcs, -1, dtype=np.int64))
    kept, every, _, _ = run(cluster())
    assert kept.kept.all()
    assert ends == every
    c = left_out.cluster
    want = _reference_ends(c, flows + [(t, src, nic0, n) for t, src, _, n in late])
    assert ends == pytest.approx(want, rel=1e-9, abs=0)


@pytest.mark.parametrize(
    ("topology", "algorithm"),
    [
        ("dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=2,ecmp=hash", "double-binary-tree:chunks=8"),
        ("leaf-spine:leaves=4,hosts_per_leaf=8,spines=2,bandwidth=100Gbps,uplink_bandwidth=100Gbps", "tree:chunks=6"),
    ],
)
def test_components_solved_before_are_remembered_not_approximated(topology, algorithm, monkeypatch):
    """A pipelined tree's chunks meet the same components (the same paths sharing the same links) one
    after another: their rates are taken from the first solve -- the same times, bit for bit, as solving
    every one, on the fast path and message by message (and the two agree). The memory is the Python
    path's (the compiled core solves every part): ``fast`` comes from the core where it is built, the
    rest from the Python path, so the two are held to the same times too."""
    import sim.rates as rates
    from sim import simulate

    fast = simulate(topology, "allreduce", algorithm, "64MiB", gamma=1e-11)
    message = simulate(topology, "allreduce", algorithm, "64MiB", gamma=1e-11, engine="message")
    monkeypatch.setattr(rates, "_CORE", None)
    hits = []
    monkeypatch.setattr(rates.Rates, "_relaxed", _counting(rates.Rates._relaxed, hits))
    simulate(topology, "allreduce", algorithm, "64MiB", gamma=1e-11)
    assert hits and hits[-1] > 0
    monkeypatch.setattr(rates, "_SPREAD", True)  # parts spread along full links remembered the same way
    assert simulate(topology, "allreduce", algorithm, "64MiB", gamma=1e-11).time_s == fast.time_s
    assert hits[-1] > 0
    monkeypatch.setattr(rates, "_PARTS_MAX", 0)
    assert simulate(topology, "allreduce", algorithm, "64MiB", gamma=1e-11).time_s == fast.time_s
    assert simulate(topology, "allreduce", algorithm, "64MiB", gamma=1e-11, engine="message").time_s == message.time_s
    assert fast.engine == "fast:dataflow" and fast.time_s == pytest.approx(message.time_s, rel=1e-12)


def _counting(solve, hits):
    def wrapped(self, *args, **kwargs):
        solved = solve(self, *args, **kwargs)
        hits.append(self.part_hits)
        return solved

    return wrapped


@pytest.mark.parametrize("seed", range(3))
def test_changes_spread_only_along_full_links_and_overfilled_ones_grow_the_part(seed, monkeypatch):
    """A change re-solves only the flows joined to it through *full* links (kept): on an oversubscribed
    leaf-spine most host links carry several flows without filling, so they join nothing. When the
    relaxed solve of a part overfills a link it shares with flows outside the part, the part grows
    through that link and is solved again. Every completion time is the one full solves give, with and
    without rate bounds, and no link is ever over capacity (check=True)."""
    import random

    import sim.rates as rates

    cluster = Cluster("leaf-spine:leaves=8,hosts_per_leaf=8,spines=4,bandwidth=100Gbps,uplink_bandwidth=100Gbps")
    rng = random.Random(100 + seed)
    flows = []
    for _ in range(500):
        src, dst = rng.sample(range(cluster.size), 2)
        bound = rng.choice([None, None, None, rng.uniform(2e9, 2e10)])
        flows.append((rng.uniform(0, 1e-2), src, dst, rng.choice([2**16, 2**20, 2**22]) * rng.uniform(0.5, 2), bound))
    ends, used = run_flows(cluster, flows)
    monkeypatch.setattr(rates, "_SCALAR_MAX", 0)
    vectorized, used_numpy = run_flows(cluster, flows)
    monkeypatch.setattr(rates, "_INCREMENTAL_MIN", 10**9)
    full, unused = run_flows(cluster, flows)
    assert used.rates.partial > 0 and used.rates.regrown > 0 and unused.rates.partial == 0
    assert used.rates._spread  # whole components grew too big: changes spread along full links
    assert used_numpy.rates.regrown > 0
    assert ends == pytest.approx(full, rel=1e-12, abs=0)
    assert vectorized == pytest.approx(full, rel=1e-12, abs=0)


def test_a_part_is_remembered_with_its_outer_links_not_for_its_paths_alone(monkeypatch):
    """Two flows start together on a link L (150 GB/s) that a third one, held to 10 GB/s elsewhere,
    already crosses without filling it: they are solved as a part of their own with L shared with a flow
    outside it (a bound of 150 GB/s on each: 100 GB/s each, which overfills L, so the part grows through
    it). When the third flow ends, the same two paths make a whole component on L (75 GB/s each). The
    remembered relaxed solutions are told apart by their outer links: a memory keyed by the paths alone
    would hand the whole component the first part's 100 GB/s each (and L, full by then, is not checked
    again). Twice over, so the second round is answered from memory: every completion time is the one
    solving every part gives, bit for bit, and the model's own; no link is ever over capacity. (Changes
    spread along full links from the start: these components are small.) The memory is the Python
    path's; the compiled core, where it is built, gives the same times without it."""
    import sim.rates as rates

    monkeypatch.setattr(rates, "_SPREAD", True)
    core = rates._CORE
    monkeypatch.setattr(rates, "_CORE", None)

    b = ClusterBuilder("outer")
    b.add_switch("s0")
    b.add_switch("s1")
    b.add_link("s0", "s1", bandwidth=150e9, latency=0.0)
    for name, switch, cap in [("a0", "s0", 100e9), ("a1", "s0", 100e9), ("a2", "s0", 100e9)] + [
        ("b0", "s1", 100e9),
        ("b1", "s1", 100e9),
        ("b2", "s1", 10e9),
    ]:
        b.add_host(name)
        b.add_link(name, switch, bandwidth=cap, latency=0.0)
    for i in range(16):  # flows of their own that keep the rate computation incremental
        b.add_host(f"c{i}")
        b.add_link(f"c{i}", "s0", bandwidth=100e9, latency=0.0)
    cluster = Cluster(b.build())
    flows = [(0.0, 6 + 2 * i, 7 + 2 * i, 1.5e9) for i in range(8)]
    for t in (1e-3, 5e-3):
        flows += [(t, 2, 5, 2e7), (t + 1e-3, 0, 3, 2e8), (t + 1e-3, 1, 4, 2e8)]
    ends, net = run_flows(cluster, flows)
    assert net.rates.part_hits > 0 and net.rates.regrown > 0
    assert net.peak_load.max() > 0 and (net.peak_load <= cluster.capacity * (1 + 1e-12)).all()
    monkeypatch.setattr(rates, "_PARTS_MAX", 0)
    solved, unremembered = run_flows(cluster, flows)
    assert unremembered.rates.part_hits == 0
    assert ends == solved
    monkeypatch.setattr(rates, "_CORE", core)
    assert run_flows(cluster, flows)[0] == ends
    assert ends == pytest.approx(_reference_ends(cluster, flows), rel=1e-9, abs=0)
