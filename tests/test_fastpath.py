"""The fast path (step programs, vectorized) against the message-level path (a SimPy process per rank,
a flow per message): the same times to 1e-9 everywhere, including where symmetry breaks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.algorithms import ring
from sim.algorithms.base import Algorithm
from sim.algorithms.registry import _REGISTRY
from sim.errors import ConfigError
from sim.simulate import simulate
from sim.topology import dgx, leaf_spine, star, torus

FAST = sorted(
    (c, n)
    for (c, n), cls in _REGISTRY.items()
    if (cls.program is not Algorithm.program or cls.dataflow is not Algorithm.dataflow)  # dataflows: test_dataflow.py
    and getattr(cls, "star_oracle", True)  # NVLS: tests/test_nccl.py
)


@pytest.fixture(autouse=True)
def _ring_generators(monkeypatch):
    """The single ring's message level as its rank generators (``sim.algorithms.ring._FROM_PROGRAM`` off):
    this file holds them to the step program; tests/test_ring_messages.py holds the program's message
    level to them."""
    monkeypatch.setattr(ring, "_FROM_PROGRAM", False)


def both(graph, collective, spec, size, **kw):
    a = simulate(graph, collective, spec, size, engine="message", **kw)
    b = simulate(graph, collective, spec, size, engine="fast", **kw)
    assert a.engine == "message" and b.engine.startswith("fast:")
    return a, b


def assert_same(a, b):
    assert abs(a.time_s - b.time_s) <= 1e-9 * a.time_s, (a.time_s, b.time_s)
    assert a.flows == b.flows
    assert a.link_bytes == pytest.approx(b.link_bytes, rel=1e-12)


def perturb(graph, seed, stragglers=2, slow_links=3):
    """Give a few GPUs extra per-message overhead and slower reductions, and slow a few links down."""
    rng = np.random.default_rng(seed)
    g = graph.copy()
    gpus = g.graph["ranks"]
    for node in rng.choice(gpus, size=min(stragglers, len(gpus)), replace=False):
        g.nodes[node]["overhead"] = float(rng.uniform(1e-6, 2e-5))
        g.nodes[node]["compute_scale"] = float(rng.uniform(1.5, 4.0))
    edges = list(g.edges)
    for i in rng.choice(len(edges), size=min(slow_links, len(edges)), replace=False):
        g.edges[edges[i]]["bandwidth"] *= float(rng.uniform(0.2, 0.9))
    return g


def test_ring_has_a_fast_path():
    assert ("allreduce", "ring") in FAST


def interleaved_racks(hosts_per_rack=3, uplink=12.5e9):
    """Two racks whose ranks alternate (r0h0, r1h0, r0h1, ...): every ring hop crosses the uplinks,
    so ring messages contend there."""
    from sim.topology import ClusterBuilder

    b = ClusterBuilder("interleaved")
    for sw in ("tor0", "tor1", "core"):
        b.add_switch(sw)
    for r in range(2):
        for h in range(hosts_per_rack):
            b.add_host(f"r{r}h{h}")
            b.add_link(f"r{r}h{h}", f"tor{r}", bandwidth=12.5e9, latency=1e-6)
        b.add_link(f"tor{r}", "core", bandwidth=uplink, latency=1e-6)
    return b.build([f"r{r}h{h}" for h in range(hosts_per_rack) for r in range(2)])


TOPOLOGIES = {
    "interleaved-racks": interleaved_racks(),
    "star": star(6, "100Gbps", "1us"),
    "star-multi-gpu": star(3, "100Gbps", "2us", gpus_per_host=4, intra_bandwidth="300GB/s", intra_latency="1us"),
    "leaf-spine-2to1": leaf_spine(3, 4, 1, "100Gbps", "200Gbps", "1us"),
    "dgx": dgx(hosts=2, gpus_per_host=4),
    "torus": torus("3x3", "50Gbps", "1us"),
}


@pytest.mark.parametrize("collective, spec", FAST)
@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
@pytest.mark.parametrize("gamma", [0.0, 3e-11])
def test_same_times_on_every_kind_of_fabric(collective, spec, name, gamma):
    a, b = both(TOPOLOGIES[name], collective, spec, 5 * 2**20 + 3, gamma=gamma)
    assert_same(a, b)


@pytest.mark.parametrize("collective, spec", FAST)
@given(seed=st.integers(0, 2**32 - 1), gamma=st.sampled_from([0.0, 1e-11, 1e-10]), size=st.floats(1e3, 1e8))
def test_same_times_with_stragglers_and_slow_links(collective, spec, seed, gamma, size):
    """Stragglers (per-message overhead, slow reductions) and slowed links break the lock-step that
    the fast path exploits; it must still agree with the message-level run."""
    base = [
        star(7, "100Gbps", "1us"),
        leaf_spine(2, 3, 1, "100Gbps", "100Gbps", "1us"),
        dgx(hosts=2, gpus_per_host=3),
        interleaved_racks(),
    ]
    graph = perturb(base[seed % len(base)], seed)
    a, b = both(graph, collective, spec, size, gamma=gamma)
    assert_same(a, b)


def test_stragglers_really_break_the_symmetry():
    """The perturbed case is not secretly uniform: the straggler makes the ring slower."""
    g = star(8, "100Gbps", "1us")
    slow = g.copy()
    slow.nodes["h3"]["compute_scale"] = 5.0
    fast_time = simulate(g, "allreduce", "ring", "64MiB", gamma=1e-11, engine="fast").time_s
    a, b = both(slow, "allreduce", "ring", "64MiB", gamma=1e-11)
    assert_same(a, b)
    assert b.time_s > fast_time * 1.01


def test_both_fast_strategies_are_exercised():
    assert simulate(TOPOLOGIES["star"], "allreduce", "ring", 2**20).engine == "fast:maxplus"
    assert simulate(TOPOLOGIES["interleaved-racks"], "allreduce", "ring", 2**20).engine == "fast:events"


def test_auto_takes_the_fast_path_unless_checking():
    g = star(4, "100Gbps", "1us")
    assert simulate(g, "allreduce", "ring", 2**20).engine.startswith("fast")
    assert simulate(g, "allreduce", "ring", 2**20, check=True).engine == "message"
    with pytest.raises(ConfigError, match="data check"):
        simulate(g, "allreduce", "ring", 2**20, check=True, engine="fast")
    with pytest.raises(ConfigError, match="unknown engine"):
        simulate(g, "allreduce", "ring", 2**20, engine="warp")


@pytest.mark.parametrize("p", [2, 3, 5, 8])
@pytest.mark.parametrize("gamma", [0.0, 1e-10])
def test_ring_program_run_message_level_equals_the_hand_written_ring(p, gamma):
    """The generic per-rank interpreter of a step program gives the hand-written ring's times and
    passes the data check."""
    import simpy

    from sim.algorithms.ring import RingAllReduce
    from sim.cluster import Cluster
    from sim.network import Network
    from sim.program import run_messages
    from sim.runtime import DataCheck, Job

    graph = perturb(star(p, "100Gbps", "1us"), seed=p)
    cluster = Cluster(graph)
    program = RingAllReduce().program(p, 3e6, cluster)
    env = simpy.Environment()
    job = Job(env, Network(env, cluster), p, 3e6, gamma=gamma, data=DataCheck("allreduce", p, p))
    env.run(env.process(run_messages(job, program)))
    assert job.data.wrong_ranks() == []
    ref = simulate(graph, "allreduce", "ring", 3e6, gamma=gamma, engine="message")
    assert env.now == pytest.approx(ref.time_s, rel=1e-12)


@pytest.mark.parametrize(
    "collective, spec",
    [("allreduce", "halving-doubling"), ("allreduce", "recursive-doubling"), ("allgather", "recursive-doubling")],
)
@pytest.mark.parametrize("p", [2, 3, 6, 8])
def test_step_programs_of_the_doubling_algorithms_pass_the_data_check(collective, spec, p):
    """The programs of halving-doubling and recursive doubling (fold included) deliver every block
    exactly once when run message by message with the symbolic data check, in the algorithms' times."""
    import simpy

    from sim.algorithms import get_algorithm
    from sim.cluster import Cluster
    from sim.network import Network
    from sim.program import run_messages
    from sim.runtime import DataCheck, Job

    graph = perturb(star(p, "100Gbps", "1us"), seed=p)
    cluster = Cluster(graph)
    algo = get_algorithm(collective, spec)
    size = 3e6 if collective == "allreduce" else 3e6 * p
    program = algo.program(p, size, cluster)
    env = simpy.Environment()
    job = Job(env, Network(env, cluster), p, size, gamma=1e-10, data=DataCheck(collective, p, algo.segments(p)))
    env.run(env.process(run_messages(job, program)))
    assert job.data.wrong_ranks() == []
    ref = simulate(graph, collective, spec, size, gamma=1e-10, engine="message")
    assert env.now == pytest.approx(ref.time_s, rel=1e-12)


@pytest.mark.parametrize("contended", [False, True])
def test_rate_bounds_of_a_step_hold_on_every_path(contended):
    """A message's rate bound (NCCL's per-channel SM caps use it) holds on the message level, the
    event-driven fast path and the max-plus recurrence alike: alone on a link a bounded message drains
    at its bound; where it shares a link, max-min gives the rest to the others."""
    import simpy

    from sim.cluster import Cluster
    from sim.fastpath import FastExecutor
    from sim.network import Network
    from sim.program import Step, StepProgram, run_messages
    from sim.runtime import Job

    cluster = Cluster(star(4, "100Gbps", "0us"))  # 12.5 GB/s links
    dst = [1, 1] if contended else [1, 2]
    step = Step.make([0, 2] if contended else [0, 3], dst, 1e6, endpoints=4, bound=[2.5e9, np.inf])
    program = StepProgram(4, ((step, 3),))
    times = []
    for engine in ("message", "fast", "alone"):  # alone: the max-plus recurrence where nothing is shared
        env = simpy.Environment()
        net = Network(env, cluster)
        if engine == "message":
            job = Job(env, net, 4, 1e6)
            env.run(env.process(run_messages(job, program)))
        else:
            ex = FastExecutor(net, program, 0.0, np.ones(4), alone=engine == "alone")
            env.run(env.process(ex.run()))
        times.append(env.now)
    # bounded: 1 MB at 2.5 GB/s a step; contended, the other message takes the remaining 10 GB/s
    assert times[0] == pytest.approx(3 * 1e6 / 2.5e9, rel=1e-12)
    assert times[1] == pytest.approx(times[0], rel=1e-12)
    assert times[2] == pytest.approx(times[0], rel=1e-12)
    with pytest.raises(ValueError, match="rate bound"):
        Step.make([0], [1], 1.0, endpoints=2, bound=0.0)


@pytest.mark.parametrize("hosts, chunks", [(2, 2), (3, 4), (4, 3)])
def test_pipelined_hierarchical_overlaps_its_phases(hosts, chunks):
    """``hierarchical:chunks=K`` delivers every contribution once, the fast path gives the message
    level's time, and overlapping the inter-host phase with the intra-host rings beats one pass where
    both phases take time (DGX: NVLink in the hosts, one NIC per GPU between them)."""
    g = dgx(hosts)
    spec = f"hierarchical:chunks={chunks}"
    a = simulate(g, "allreduce", spec, 2**26, check=True, gamma=1e-12)
    b = simulate(g, "allreduce", spec, 2**26, engine="fast", gamma=1e-12)
    assert a.wrong == 0
    assert abs(a.time_s - b.time_s) <= 1e-9 * a.time_s
    one = simulate(g, "allreduce", "hierarchical", 2**26, gamma=1e-12)
    assert b.time_s < one.time_s


def test_overlay_refuses_sequences_that_share_a_pair():
    from sim.program import Step, overlay

    s = Step.make([0], [1], 1.0, endpoints=2)
    with pytest.raises(ValueError, match="share"):
        overlay(2, [(s, 2)], [(s, 1)])


CROWDED = {
    # 8:1 oversubscribed: 16 hosts per leaf share one spine uplink of two hosts' bandwidth
    "leaf-spine-8to1": leaf_spine(4, 16, 1, "100Gbps", "200Gbps", "1us"),
    # a rank-order ring across DGX rails: every host's last GPU sends to the next host's first one, over
    # spines picked by hashed ECMP (routed by destination, dgx's default, no two of them would meet)
    "dgx-rails": dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=2, ecmp="hash"),
}


def _recording_rates(monkeypatch):
    """Every network's rate computation (sim.rates.Rates) made from now on, in a list."""
    import sim.network
    import sim.rates

    made = []

    class Recording(sim.rates.Rates):
        def __init__(self, cluster):
            super().__init__(cluster)
            made.append(self)

    monkeypatch.setattr(sim.network, "Rates", Recording)
    return made


@pytest.mark.parametrize("spec", ["halving-doubling", "recursive-doubling", "ring:order=rank"])
@pytest.mark.parametrize("name", sorted(CROWDED))
@pytest.mark.parametrize("perturbed", [False, True])
def test_same_times_with_many_flows_on_few_links(spec, name, perturbed, monkeypatch):
    """Tens of flows sharing a few links, so that a start or an end re-solves only its component
    (plain Python for small ones): the fast path still gives the message level's times, with and
    without stragglers and slowed links."""
    made = _recording_rates(monkeypatch)
    graph = perturb(CROWDED[name], 7) if perturbed else CROWDED[name]
    a, b = both(graph, "allreduce", spec, 3 * 2**20 + 5, gamma=1e-11)
    assert_same(a, b)
    if perturbed and spec != "ring:order=rank":
        # stragglers break the lock-step: starts and ends re-solve their components only
        assert all(r.partial > 0 for r in made)


@pytest.mark.parametrize("spec", ["halving-doubling", "recursive-doubling"])
@pytest.mark.parametrize("seed", [1, 2])
def test_same_times_on_a_crowded_fabric_at_512_ranks_with_stragglers(spec, seed):
    """512 ranks on an 8:1 oversubscribed leaf-spine with two spines, a few stragglers and slowed links:
    from the distance of one leaf on, every step's flows share each leaf's two uplinks (ECMP spreads
    them unevenly), so ranks drift apart and flows end one by one. The fast path routes each step's
    512 pairs in bulk (the message level one by one) and gives the same times."""
    graph = perturb(leaf_spine(8, 64, 2, "100Gbps", "400Gbps", "1us"), seed, stragglers=6, slow_links=8)
    a, b = both(graph, "allreduce", spec, 2**20 + 3 * seed, gamma=1e-11)
    assert_same(a, b)
    assert b.engine == "fast:events"


@pytest.mark.parametrize("spec", ["halving-doubling", "recursive-doubling"])
@pytest.mark.parametrize("perturbed", [False, True])
def test_same_times_on_a_4to1_leaf_spine_re_solving_through_full_links_only(spec, perturbed, monkeypatch):
    """The 4:1 leaf-spine of the 16k benchmark, scaled down (8 leaves of 16 hosts, 4 spines): host links
    carry flows of several steps once ranks drift apart without filling, so a change re-solves only
    the flows joined to it through full links (sim.rates). The fast path gives the message level's
    times, the same bit for bit without the parts' remembered solves, and both give the times of
    solving every active flow at every change. (The parts' memory is the Python path's: the compiled
    core, where it is built, gives the same times without it.)"""
    import sim.rates

    core = sim.rates._CORE
    monkeypatch.setattr(sim.rates, "_CORE", None)
    made = _recording_rates(monkeypatch)
    graph = leaf_spine(8, 16, 4, "100Gbps", "100Gbps", "1us")
    if perturbed:
        graph = perturb(graph, 11, stragglers=4, slow_links=6)
    a, b = both(graph, "allreduce", spec, 2**22 + 5, gamma=1e-11)
    assert_same(a, b)
    assert b.engine == "fast:events" and all(r.partial > 0 for r in made)
    assert any(r.part_hits for r in made)  # parts' relaxed solves answered from memory
    monkeypatch.setattr(sim.rates, "_PARTS_MAX", 0)
    assert simulate(graph, "allreduce", spec, 2**22 + 5, engine="fast", gamma=1e-11).time_s == b.time_s
    monkeypatch.setattr(sim.rates, "_CORE", core)
    assert simulate(graph, "allreduce", spec, 2**22 + 5, engine="fast", gamma=1e-11).time_s == b.time_s
    monkeypatch.setattr(sim.rates, "_INCREMENTAL_MIN", 10**9)
    full = simulate(graph, "allreduce", spec, 2**22 + 5, engine="fast", gamma=1e-11)
    assert abs(full.time_s - b.time_s) <= 1e-12 * full.time_s, (full.time_s, b.time_s)


def _recording_executors(monkeypatch):
    import sim.fastpath

    made = []
    init = sim.fastpath.FastExecutor.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(sim.fastpath.FastExecutor, "__init__", recording)
    return made


@pytest.mark.parametrize("hosts, spines", [(4, 1), (8, 2)])
@pytest.mark.parametrize("perturbed", [False, True])
def test_private_messages_arrive_without_becoming_flows(hosts, spines, perturbed, monkeypatch):
    """A rank-order ring across DGX rails: every NVLink hop crosses links that no other sender's message
    crosses (private: it arrives at its time alone on its path, without a flow or a rate computation),
    while the hops from host to host share the rails' uplinks to the spines. Same times, flows and link
    bytes as the message level -- with the steady state jumped over while private messages are in
    flight, and with stragglers and slowed links."""
    made = _recording_executors(monkeypatch)
    graph = dgx(hosts=hosts, gpus_per_host=4, hosts_per_leaf=2, spines=spines, ecmp="hash")
    if perturbed:
        graph = perturb(graph, hosts, stragglers=3, slow_links=6)
    a, b = both(graph, "allreduce", "ring:order=rank", 2**22 + 7, gamma=1e-11)
    assert_same(a, b)
    executor = made[-1]
    assert b.engine == "fast:events" and executor.private > 0
    if not perturbed:
        assert executor.extrapolated_steps > 0


def test_messages_whose_receiver_hears_several_senders_are_not_private(monkeypatch):
    """Halving-doubling's partners change every step, so a GPU's incoming link carries messages of
    several senders (which may overlap when ranks drift apart): none of its messages is private."""
    made = _recording_executors(monkeypatch)
    graph = perturb(dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1), 5)
    a, b = both(graph, "allreduce", "halving-doubling", 2**20)
    assert_same(a, b)
    assert made[-1].private == 0


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("hgx:preset=dgx-h100,hosts=4", "ring:channels=16"),
        ("dgx:hosts=8,hosts_per_leaf=2,ecmp=hash", "halving-doubling"),
    ],
)
def test_few_arrivals_counted_in_python_equal_the_numpy_count(spec, name, monkeypatch):
    """A few messages arriving together are counted in plain Python (_few_done): the same run, bit for
    bit, as counting every batch in numpy -- early arrivals, ranks completing together included."""
    import sim.fastpath as fp

    def run():
        r = simulate(spec, "allreduce", name, "8MiB", engine="fast", gamma=1e-11)
        return r.time_s, r.events, r.flows

    few = run()
    monkeypatch.setattr(fp, "_FEW", 0)
    assert run() == few
