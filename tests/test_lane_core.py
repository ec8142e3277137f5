"""The compiled core's message path (``sim._ratecore``: ``lane_send``, ``lane_done``, ``job_recv``,
``job_deliver``, ``run_callbacks``) gives the Python lines' results bit for bit.

Where the core is built, the private lane's sends and completions (:meth:`sim.network.Network._lane_send_py`,
:meth:`~sim.network.Network._lane_done_py`), a job's receives and deliveries (:meth:`sim.runtime.Job.recv`,
:meth:`~sim.runtime.Job._deliver`) and a wake-up's resumes (:meth:`~sim.network.Network._resume_held`) run
in C. Every case here runs with ``sim.network._LANE_CORE`` on and off -- uniform, congested (the lane
closes mid-run), straggler and slow-link fabrics, with and without the data check and reductions, rate
bounds, sizes that are ints, a link model -- and must agree in every result and in the events scheduled.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import simpy
from simpy.events import Event

import sim.network as network
import sim.runtime as runtime
from sim import simulate
from sim.cluster import Cluster
from sim.linkmodel import LinkModel, Segment
from sim.simulate import CountingEnvironment
from sim.topology import dgx, leaf_spine, star

from .test_fastpath import perturb
from .test_message_engine import CASES, _same
from .test_msg1k_lane import LEAF_SPINE, _arrivals, due_after_start_plan, sent_later_plan

pytestmark = pytest.mark.skipif(
    network._ops is network._PyDue, reason="the compiled core is not built (or COLLSIM_PURE=1)"
)

CONGESTED = [
    (leaf_spine(2, 3, 1, "100Gbps", "50Gbps", "1us"), "allreduce", "ring"),
    # hashed: the rails' flows meet on the spines by chance (routed by destination, dgx's default, they would not)
    (dgx(hosts=3, gpus_per_host=4, ecmp="hash"), "allreduce", "ring:order=rank"),
    (dgx(hosts=2, gpus_per_host=4, ecmp="hash"), "allreduce", "ring:channels=2"),
]


def _both(monkeypatch: pytest.MonkeyPatch, topology: Any, collective: str, algorithm: str, **kw: Any) -> Any:
    """The run with the core's message path, and without it (the Python lines)."""

    size = kw.pop("size", 3e6 + 7)

    def run() -> Any:
        cluster = topology if isinstance(topology, Cluster) else Cluster(topology)
        return simulate(cluster, collective, algorithm, size, engine="message", **kw)

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(network, "_LANE_CORE", False)
        ref = run()
    _same(fast, ref)
    assert fast.events == ref.events
    return fast, ref


@pytest.mark.parametrize("topology, collective, algorithm", CASES + CONGESTED)
@pytest.mark.parametrize("gamma, check", [(0.0, False), (4e-11, True)])
def test_the_core_gives_the_python_lines_results(monkeypatch, topology, collective, algorithm, gamma, check):
    fast, _ = _both(monkeypatch, topology, collective, algorithm, gamma=gamma, check=check)
    assert fast.wrong in (None, 0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("algorithm", ["ring", "halving-doubling", "tree:chunks=3", "ps"])
def test_the_core_with_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    bases = [star(6, "100Gbps", "1us"), dgx(hosts=2, gpus_per_host=4), leaf_spine(2, 3, 1, "100Gbps", "100Gbps", "1us")]
    graph = perturb(bases[seed % len(bases)], seed)
    _both(monkeypatch, graph, "allreduce", algorithm, gamma=1e-11, size=float(2**20 + 17 * seed))


def test_the_core_under_a_link_model(monkeypatch):
    """A link model's delays depend on the size: its sends take the Python lane (the pair's delay is None)."""
    model = LinkModel(classes={"cross-switch": (Segment(0, 3e-6, 0.8), Segment(2**20, None, 0.9))})
    cluster = Cluster("dgx:hosts=2,gpus_per_host=4", link_model=model)
    _both(monkeypatch, cluster, "allreduce", "ring")


def _plan_run(seed: int, core: bool, private: bool) -> tuple[Any, ...]:
    """Timed sends through a Job on a star of 6 ranks (some of int sizes, some with rate bounds, every
    send's event waited on by its sender and by a second process), and their receives, posted at random
    times (so that messages wait in the mailboxes, several under one key): with ``private``, rounds of
    one permutation of the ranks far enough apart that no two flows ever meet (the lane stays open),
    else random pairs and times (the lane closes). (What the processes saw, in order; the bytes delivered
    per path; flows; events scheduled; whether the lane is open at the end.)"""
    rng = np.random.default_rng(seed)
    saved = network._LANE_CORE
    network._LANE_CORE = core
    try:
        env = CountingEnvironment()
        net = network.Network(env, Cluster("star:hosts=6,bandwidth=1GB/s,latency=1us"))
        job = runtime.Job(env, net, 6, 1e6)
    finally:
        network._LANE_CORE = saved
    assert (job._ctx is not None) is core
    seen: list[Any] = []

    def sender(i: int, at: float, src: int, dst: int, nbytes: Any, bound: Any, tag: int) -> Any:
        yield env.timeout(at)
        sent = job.send(src, dst, nbytes, payload=i, tag=tag, bound=bound)
        env.process(watcher(i, sent))
        yield sent
        seen.append(("sent", i, env.now, sent.value))

    def watcher(i: int, sent: Event) -> Any:
        yield sent
        seen.append(("watched", i, env.now))

    def receiver(i: int, at: float, src: int, dst: int, tag: int) -> Any:
        yield env.timeout(at)
        payload = yield job.recv(dst, src, tag)
        seen.append(("got", i, env.now, payload))

    perm = [int(x) for x in rng.permutation(6)]
    while any(perm[r] == r for r in range(6)):
        perm = [int(x) for x in rng.permutation(6)]
    for i in range(48):
        if private:
            src, at, tag = i % 6, 1e-4 * (i // 6) + float(rng.choice([0.0, 3e-6])) * (i % 2), 0
            dst = perm[src]
        else:
            src, dst = (int(x) for x in rng.choice(6, size=2, replace=False))
            at, tag = float(rng.choice([0.0, 1e-6, 2.5e-6, rng.uniform(0, 1e-4)])), i % 3
        nbytes: Any = float(rng.uniform(1, 2e4)) if i % 4 else int(rng.integers(1, 2 * 10**4))
        bound = None if i % 3 else float(rng.uniform(5e8, 1.5e9))
        env.process(sender(i, at, src, dst, nbytes, bound, tag))
        env.process(receiver(i, float(rng.choice([0.0, rng.uniform(0, 1e-3)])), src, dst, tag))
    env.run()
    return seen, net.path_bytes().tolist(), net.flows, env.scheduled, net._lane


@pytest.mark.parametrize("private", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_random_sends_receives_and_bounds(seed, private):
    fast = _plan_run(seed, True, private)
    assert fast == _plan_run(seed, False, private)
    assert len(fast[0]) == 3 * 48 and fast[-1] is private


def test_events_made_in_c_are_simpys():
    """``job_recv``'s events hold what ``Event(env)`` gives one (``env``, an empty ``callbacks``), and
    behave as one when triggered."""
    env = simpy.Environment()
    net = network.Network(env, Cluster("star:hosts=2,bandwidth=1GB/s,latency=1us"))
    job = runtime.Job(env, net, 2, 1.0)
    made = job.recv(1, 0)
    assert type(made) is Event and vars(made) == vars(Event(env)) and list(vars(made)) == ["env", "callbacks"]
    seen: list[Any] = []

    def waiter() -> Any:
        seen.append((yield made))

    env.process(waiter())
    job.send(0, 1, 1e3, payload="x")
    env.run()
    assert seen == ["x"] and made.processed and made.ok


@pytest.mark.parametrize("make", [due_after_start_plan, sent_later_plan])
def test_flows_due_just_after_a_private_start(make):
    """tests/test_msg1k_lane.py's plans with every pair's route known before its send (the core's lane
    takes a pair it has seen: its first send goes the Python way): the core gives the same arrivals, at
    the start they must arrive at."""
    plan, which, start = make()
    fast = _arrivals(LEAF_SPINE, plan, True, core=True, known=True)
    assert fast == _arrivals(LEAF_SPINE, plan, True, core=False, known=True)
    assert fast[which] == start
