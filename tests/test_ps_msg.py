"""The parameter server at the message level without the data check (sim/algorithms/ps.py, ``_Counted``):
its pushes' and pulls' arrivals counted in their hooks give every result of the process per server and
per pull (``_COUNTED`` off) bit for bit -- on stars, two-level fabrics routed by hash and by destination,
dedicated servers, stragglers and slow links, reductions that cost, the classes' fall-back to the message
level and a training iteration's buckets sharing one network -- and the data check still runs the
processes, which prove every contribution arrives exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.algorithms.ps as ps
import sim.classes as classes
import sim.runtime
from sim import network
from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.network import Network
from sim.runtime import Job
from sim.simulate import new_environment, simulate
from sim.topology import dgx
from sim.training import Workload, simulate_iteration

from .test_fastpath import perturb


def _result(r: Any) -> tuple[Any, ...]:
    """What the two ways must agree on: the time (its repr: every bit), flows, bytes on the links, the
    busiest links, the engine."""
    return repr(r.time_s), r.flows, repr(r.link_bytes), repr(r.max_link_utilization), r.engine


def _both(monkeypatch: pytest.MonkeyPatch, run: Any) -> tuple[Any, Any]:
    """``run()`` with the processes (``_COUNTED`` off), then counted; every wake-up of the networks the
    two made the same (``sim.network._WAKE_LOG``: its instant, the next one, the flows draining, their
    slots summed and weighted by their routes -- the sends posted in the same order)."""
    out, logs = [], []
    for counted in (False, True):
        logs.append([])
        monkeypatch.setattr(network, "_WAKE_LOG", logs[-1])
        monkeypatch.setattr(ps, "_COUNTED", counted)
        out.append(run())
    assert logs[0] == logs[1]
    return out[0], out[1]


def _counted_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs :class:`ps._Counted` takes (one entry per run)."""
    runs: list[int] = []
    init = ps._Counted.__init__

    def counting(self: Any, *args: Any, **kw: Any) -> None:
        runs.append(1)
        init(self, *args, **kw)

    monkeypatch.setattr(ps._Counted, "__init__", counting)
    return runs


CASES = [
    ("star:hosts=8,bandwidth=100Gbps,latency=1us", "ps", {}),
    ("dgx:hosts=4,ecmp=hash", "ps", {}),
    ("dgx:hosts=4,ecmp=destination", "ps", {}),
    ("dgx:hosts=6,gpus_per_host=4,hosts_per_leaf=2,ecmp=hash", "ps:shards=8", {}),
    ("dgx:hosts=6,gpus_per_host=4,hosts_per_leaf=2,ecmp=destination", "ps:shards=24", {}),
    ("dgx:hosts=8,gpus_per_host=4,ecmp=hash", "ps:placement=dedicated,shards=4", {"ranks": 16}),
    ("dgx:hosts=8,gpus_per_host=4,ecmp=destination", "ps:placement=dedicated,shards=2", {"ranks": 16}),
    (
        "leaf-spine:leaves=3,hosts_per_leaf=3,spines=2,bandwidth=100Gbps,uplink_bandwidth=50Gbps,latency=1us",
        "ps:shards=3",
        {},
    ),
    ("perturbed", "ps", {}),
    ("perturbed", "ps:shards=5", {}),
    ("perturbed", "ps:placement=dedicated,shards=2", {"ranks": 8}),
]


def _topology(spec: str, seed: int = 2) -> Any:
    if spec == "perturbed":  # stragglers (overheads, slow reductions) and slow links: flows end at many instants
        return perturb(dgx(hosts=6, gpus_per_host=2, hosts_per_leaf=2, spines=2, ecmp="hash"), seed=seed)
    return spec


@pytest.mark.parametrize(("topology", "algorithm", "kw"), CASES)
@pytest.mark.parametrize("gamma", [0.0, 1e-10])
def test_the_same_results_as_the_processes(topology, algorithm, kw, gamma, monkeypatch):
    g = _topology(topology)
    runs = _counted_runs(monkeypatch)

    def run():
        return simulate(g, "allreduce", algorithm, "3MiB", engine="message", gamma=gamma, **kw)

    slow, fast = _both(monkeypatch, run)
    assert _result(fast) == _result(slow)
    # reductions that cost keep the processes (a reduction at a time on the server's processor)
    assert len(runs) == (0 if gamma > 0 else 1)
    if not gamma:
        assert fast.events < slow.events


def test_the_1k_case_of_the_benchmark_with_its_time(monkeypatch):
    """scale.py's ps-rank-1k-message, at 128 GPUs (the 1,024 of the benchmark take a minute the old way):
    the same time bit for bit, no process per pull."""
    slow, fast = _both(monkeypatch, lambda: simulate("dgx:hosts=16", "allreduce", "ps", "1GiB", engine="message"))
    assert _result(fast) == _result(slow)
    assert fast.flows == 2 * 128 * 127
    assert 10 * fast.events < slow.events


@settings(max_examples=60, deadline=None)
@given(
    hosts=st.integers(2, 5),
    gpus=st.sampled_from([1, 2, 4]),
    ecmp=st.sampled_from(["hash", "destination"]),
    shards=st.integers(1, 20),
    dedicated=st.booleans(),
    size=st.integers(1, 2**24),
    seed=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_random_small_cases_against_the_processes(hosts, gpus, ecmp, shards, dedicated, size, seed):
    g = dgx(hosts=hosts, gpus_per_host=gpus, hosts_per_leaf=2, ecmp=ecmp)
    if seed is not None:
        g = perturb(g, seed=seed)
    gpus_total = hosts * gpus
    if dedicated:  # the servers on the hosts beyond the ranks' (one per host)
        ranks = max(1, (hosts - 1) * gpus)
        shards = min(shards, hosts - (ranks + gpus - 1) // gpus)
        spec = f"ps:placement=dedicated,shards={shards}"
    else:
        ranks = gpus_total
        spec = f"ps:shards={min(shards, ranks)}"
    out = []
    old = ps._COUNTED
    try:
        for counted in (False, True):
            ps._COUNTED = counted
            out.append(_result(simulate(g, "allreduce", spec, size, engine="message", ranks=ranks)))
    finally:
        ps._COUNTED = old
    assert out[0] == out[1]


def test_jobs_sharing_the_network_see_the_same_steps(monkeypatch):
    """Three all-reduces at once on one network (two parameter servers and a master-worker, its process
    the processes' fan-in and fan-out): the master and the lone server end their pushes at the same
    instant, and which of them sends first, and which job ends first, hangs on the steps between an
    arrival and the sends -- the counted run takes as many as the processes (a step less or more
    reorders the sends, and the network's slots with them)."""
    cluster = Cluster("star:hosts=4,bandwidth=100Gbps,latency=1us")

    def run() -> list[tuple[str, str]]:
        env = new_environment()
        net = Network(env, cluster)
        ends: list[tuple[str, str]] = []

        def body(spec: str) -> Any:
            yield from get_algorithm("allreduce", spec).run(Job(env, net, cluster.size, 2**20))
            ends.append((spec, repr(env.now)))

        env.run(until=env.all_of([env.process(body(s)) for s in ("ps:shards=1", "master-worker", "ps:shards=2")]))
        return ends

    slow, fast = _both(monkeypatch, run)
    assert fast == slow
    assert [spec for spec, _ in fast] == ["ps:shards=2", "master-worker", "ps:shards=1"]


def test_the_classes_fall_back_to_the_counted_messages(monkeypatch):
    """Where the classes fragment (``auto``), the run falls back to the algorithm's own process: counted,
    with the processes' time."""
    monkeypatch.setattr(classes, "_MIN_CLASSES", 1)
    monkeypatch.setattr(classes, "_FLOWS_PER_CLASS", 10**9)
    g = _topology("perturbed", seed=5)
    runs = _counted_runs(monkeypatch)
    slow, fast = _both(monkeypatch, lambda: simulate(g, "allreduce", "ps", "2MiB", engine="auto"))
    assert _result(fast) == _result(slow) and len(runs) == 1


@pytest.mark.parametrize("concurrent", [False, True])
def test_a_training_iteration_with_buckets_sharing_the_network(concurrent, monkeypatch):
    """Buckets on one network (each its own job, in flight together with ``concurrent_buckets``), the
    classes kept out so that every bucket runs message-level: every bucket's timing the same."""
    monkeypatch.setattr(classes, "_MIN_CLASSES", 1)
    monkeypatch.setattr(classes, "_FLOWS_PER_CLASS", 10**9)
    g = _topology("perturbed", seed=7)
    w = Workload(
        gradient_bytes=9 * 2**20,
        forward_s=1e-4,
        backward_s=2e-4,
        bucket_bytes=2 * 2**20,
        first_bucket_bytes=2**20,
        concurrent_buckets=concurrent,
    )
    runs = _counted_runs(monkeypatch)
    slow, fast = _both(monkeypatch, lambda: simulate_iteration(g, "ps", w, reuse=False))
    assert runs
    assert repr(fast.iteration_s) == repr(slow.iteration_s)
    assert [repr(t) for b in fast.bucket_timings for t in (b.start_s, b.end_s)] == [
        repr(t) for b in slow.bucket_timings for t in (b.start_s, b.end_s)
    ]


def test_the_data_check_runs_the_processes(monkeypatch):
    """With the data check on, the processes run (no counting) and prove every contribution arrives
    exactly once; a server that dropped one contribution is caught."""
    runs = _counted_runs(monkeypatch)
    r = simulate("dgx:hosts=2,gpus_per_host=4", "allreduce", "ps:shards=3", "1MiB", engine="message", check=True)
    assert r.wrong == 0 and not runs

    fold = ps.fan_in

    def dropping(job, at, peers, tag, fold_one):  # the server reduces every contribution but its first peer's
        def fold_but_first(src, payload):
            if src != peers[0]:
                yield from fold_one(src, payload)

        return fold(job, at, peers, tag, fold_but_first)

    monkeypatch.setattr(ps, "fan_in", dropping)
    r = simulate("dgx:hosts=2,gpus_per_host=4", "allreduce", "ps:shards=3", "1MiB", engine="message", check=True)
    assert r.wrong == 8


def test_a_stand_in_for_job_send_sees_every_message(monkeypatch):
    """A test's recording ``Job.send`` keeps the processes (the counted run posts its sends itself)."""
    runs = _counted_runs(monkeypatch)
    sent: list[tuple[int, int]] = []
    original = sim.runtime.Job.send

    def recording(self, src, dst, nbytes, payload=None, tag=0):
        sent.append((src, dst))
        return original(self, src, dst, nbytes, payload, tag)

    monkeypatch.setattr(sim.runtime.Job, "send", recording)
    simulate("dgx:hosts=2,gpus_per_host=3", "allreduce", "ps", "1MiB", engine="message")
    assert len(sent) == 2 * 6 * 5 and len(set(sent)) == 6 * 5 and not runs


def test_one_rank_keeps_the_processes(monkeypatch):
    runs = _counted_runs(monkeypatch)
    r = simulate("dgx:hosts=1,gpus_per_host=1", "allreduce", "ps", "1MiB", engine="message")
    assert r.time_s == 0.0 and not runs


def test_the_python_lines_of_the_engine_too():
    """``COLLSIM_PURE=1`` (no compiled core, ``Network.send`` for every message) keeps the processes by
    default; counted there, the same time."""
    code = (
        "import sim.algorithms.ps as ps\n"
        "from sim.simulate import simulate\n"
        "assert not ps._COUNTED\n"
        "for ps._COUNTED in (False, True):\n"
        "    r = simulate('dgx:hosts=3,gpus_per_host=2,hosts_per_leaf=2,ecmp=hash', 'allreduce', 'ps', '3MiB', "
        "engine='message')\n"
        "    print(repr(r.time_s), r.events)\n"
    )
    env = dict(os.environ, COLLSIM_PURE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    (slow, slow_events), (fast, fast_events) = (line.split() for line in out.stdout.splitlines())
    assert fast == slow and int(fast_events) < int(slow_events)


@pytest.mark.parametrize(("topology", "algorithm", "kw"), CASES)
def test_posts_with_their_routes_given(topology, algorithm, kw, monkeypatch):
    """Job.post's sends with the routes Network.intern gave (``sim._ratecore.eng_post``, ``sim.runtime._POST_CORE``)
    against its loop of single sends, each route looked up: the same results and wake-ups, bit for bit, and
    the same events."""
    g = _topology(topology)
    out, logs = [], []
    for on in (False, True):
        logs.append([])
        monkeypatch.setattr(network, "_WAKE_LOG", logs[-1])
        monkeypatch.setattr(sim.runtime, "_POST_CORE", on)
        out.append(simulate(g, "allreduce", algorithm, "3MiB", engine="message", **kw))
    assert logs[0] == logs[1]
    assert _result(out[0]) == _result(out[1])
    assert out[0].events == out[1].events


@pytest.mark.skipif(not hasattr(network._ops, "eng_post"), reason="the compiled core is not built (or COLLSIM_PURE=1)")
def test_eng_post_stops_where_the_python_lines_must_send(monkeypatch):
    """``eng_post`` returns how many it sent; where the free slots run out (``eng_send``'s NotImplemented) Job.post
    sends that one by Network.send (which grows the arrays) and posts the rest: every message arrives once."""
    env = new_environment()
    net = Network(env, Cluster("dgx:hosts=2"))
    job = Job(env, net, 16, 1e6)
    pairs = [(w, 0) for w in range(1, 16)]
    pids = net.intern([s for s, _ in pairs], [d for _, d in pairs]).tolist()
    net._end_lane()  # (the lane closed: the engine's single sends)
    assert net._send_ctx is not None
    got = []
    sends = []
    real = net.send
    monkeypatch.setattr(net, "send", lambda *a, **k: sends.append(a) or real(*a, **k))
    del net._free[2:]  # two free slots: the third post falls to Network.send
    job.post(0, list(range(1, 16)), True, 1e6, (lambda key, _p: got.append(key), 7, None), pids)
    env.run()
    assert sorted(got) == [7] * 15
    assert sends and sends[0][:2] == pairs[2]
    with pytest.raises(TypeError, match="lists of one length"):
        network._ops.eng_post(net._send_ctx, [1], [0, 2], [pids[0]], 1.0, None)
