"""The plain ranks as compiled loops (``sim._ratecore.Crank``) give :func:`sim.program._plain_rank`'s results
bit for bit.

:func:`~sim.program.run_messages` without the data check runs each rank as a ``Crank``: no generator and
no SimPy process, the object itself the callback of the events it waits on, started by an event scheduled
as SimPy's ``Initialize`` is and ending with one triggered as ``Process._resume`` triggers a process. It
makes the same sends and receives and waits in the same order as the plain rank's process, so every result
-- and the count of events scheduled -- must be the same with ``sim.program._CRANKS`` on and off, on NCCL's
schedules, on random clusters and collectives, with stragglers, slow links and reductions.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim.network as network
import sim.program as program
from sim import simulate
from sim.cluster import Cluster
from sim.runtime import Job
from sim.topology import dgx, hgx

from .random_cases import case
from .test_fast_core import straggler_graph
from .test_fastpath import assert_same, perturb
from .test_message_engine import _same

pytestmark = pytest.mark.skipif(
    network._ops is network._PyDue or not program._PLAIN_RANKS, reason="the compiled core is not built"
)


def _count_ranks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many ranks run as compiled loops and as generators from here on."""
    seen = {"crank": 0, "plain": 0}
    compiled, plain = program._compiled_ranks, program._plain_rank

    def counting_compiled(job: Any, prog: Any) -> Any:
        got = compiled(job, prog)
        seen["crank"] += 0 if got is None else len(got)
        return got

    def counting_plain(*a: Any) -> Any:
        seen["plain"] += 1
        return plain(*a)

    monkeypatch.setattr(program, "_compiled_ranks", counting_compiled)
    monkeypatch.setattr(program, "_plain_rank", counting_plain)
    return seen


def _both(monkeypatch: pytest.MonkeyPatch, topology: Any, *args: Any, **kw: Any) -> tuple[Any, Any]:
    """The message-level run with the compiled ranks and with the plain ranks' processes: the same
    results, the same events scheduled; the compiled ranks must have run."""
    seen = _count_ranks(monkeypatch)
    quick = simulate(topology, *args, engine="message", **kw)
    cranks = seen["crank"]
    with monkeypatch.context() as m:
        m.setattr(program, "_CRANKS", False)
        ref = simulate(topology, *args, engine="message", **kw)
    _same(quick, ref)
    assert repr(quick.time_s) == repr(ref.time_s)
    assert quick.events == ref.events
    if not kw.get("check"):
        assert cranks > 0 and seen["plain"] > 0  # (the compiled loops ran; the switch brought the processes)
    return quick, ref


#: the algorithms whose message level runs plain ranks (the textbook ones have processes of their own)
SPECS = ["nccl", "nccl-tree", "nvls-tree", "ring:channels=2", "nccl:algo=ring", "collnet-direct", "collnet-chain"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("hosts, seed", [(2, None), (3, 0), (4, 1)])
def test_nccls_schedules(monkeypatch, spec, hosts, seed):
    g = hgx(hosts, "dgx-h100", gpus_per_host=4, sharp=spec.startswith("collnet"))
    g = g if seed is None else perturb(g, seed)
    quick, _ = _both(monkeypatch, Cluster(g), "allreduce", spec, float(2**22 + 4096 * hosts + 3))
    assert_same(quick, simulate(Cluster(g), "allreduce", spec, float(2**22 + 4096 * hosts + 3), engine="fast"))


@pytest.mark.parametrize("spec", ["nccl", "nccl-tree", "nvls-tree", "ring:channels=4"])
def test_reductions_wait_on_the_processor(monkeypatch, spec):
    """gamma > 0: each step's reduction is a wait on Job.compute, stragglers' processors slower."""
    g = perturb(hgx(2, "dgx-h100", gpus_per_host=4), 5, stragglers=3)
    _both(monkeypatch, Cluster(g), "allreduce", spec, 3e6 + 7, gamma=2e-11)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("algorithm", ["nccl", "nccl-tree", "ring:channels=2"])
def test_congested_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    _both(monkeypatch, straggler_graph(seed), "allreduce", algorithm, float(2**20 + 17 * seed), gamma=1e-11)


RAN = {"ran": 0, "refused": 0}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hosts=st.integers(1, 4),
    gpus=st.sampled_from([2, 4, 8]),
    seed=st.integers(0, 1000),
    spec=st.sampled_from(SPECS[:5] + ["ring:channels=3", "nccl:algo=tree"]),
    collective=st.sampled_from(["allreduce", "allreduce", "allgather", "reducescatter", "broadcast"]),
    size=st.sampled_from([1.0, 4096.0, 65537.0, 2.0**20 + 3, 3.0 * 2**22 + 7]),
    gamma=st.sampled_from([0.0, 0.0, 3e-11]),
)
def test_random_nccl_programs(monkeypatch, hosts, gpus, seed, spec, collective, size, gamma):
    """NCCL's programs on random fabrics (stragglers, slow links), collectives, sizes, gammas: 0 difference
    (a combination NCCL refuses is skipped)."""
    g = perturb(hgx(hosts, "dgx-h100", gpus_per_host=gpus), seed, stragglers=2, slow_links=seed % 5)
    try:
        simulate(Cluster(g), collective, spec, size, engine="fast", gamma=gamma)
    except Exception:  # noqa: BLE001 - a schedule NCCL does not build for these ranks or this collective
        RAN["refused"] += 1
        return
    RAN["ran"] += 1
    seen = _count_ranks(monkeypatch)
    quick = simulate(Cluster(g), collective, spec, size, engine="message", gamma=gamma)
    with monkeypatch.context() as m:
        m.setattr(program, "_CRANKS", False)
        ref = simulate(Cluster(g), collective, spec, size, engine="message", gamma=gamma)
    _same(quick, ref)
    assert repr(quick.time_s) == repr(ref.time_s)
    assert quick.events == ref.events
    assert seen["plain"] == 0 or seen["crank"] > 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6))
def test_random_clusters_and_collectives(monkeypatch, seed):
    """Random heterogeneous clusters, collectives, algorithms, sizes and gammas: 0 difference (the
    compiled ranks need not run: an algorithm of its own processes has no plain ranks)."""
    c = case(seed)
    seen = _count_ranks(monkeypatch)
    kw = {"ranks": c.ranks, "gamma": c.gamma}
    quick = simulate(Cluster(c.graph), c.collective, c.algorithm, c.size, engine="message", **kw)
    with monkeypatch.context() as m:
        m.setattr(program, "_CRANKS", False)
        ref = simulate(Cluster(c.graph), c.collective, c.algorithm, c.size, engine="message", **kw)
    _same(quick, ref)
    assert repr(quick.time_s) == repr(ref.time_s)
    assert quick.events == ref.events
    assert seen["plain"] == 0 or seen["crank"] > 0  # (where plain ranks ran at all, the compiled ones did)


def test_a_recording_job_keeps_the_processes(monkeypatch):
    """A Job whose send is another's (a test's recording stand-in) gets the plain ranks' processes, which
    call it; the compiled loops would not."""
    sent: list[int] = []

    class Recording(Job):
        def send(self, src: int, dst: int, nbytes: float, payload: Any = None, tag: int = 0, bound: Any = None) -> Any:
            sent.append(src)
            return super().send(src, dst, nbytes, payload, tag, bound=bound)

    seen = _count_ranks(monkeypatch)
    monkeypatch.setattr(sys.modules["sim.simulate"], "Job", Recording)
    r = simulate(dgx(hosts=2, gpus_per_host=4), "allreduce", "nccl", 2**20, engine="message")
    assert seen["crank"] == 0 and seen["plain"] > 0
    assert len(sent) == r.flows


def test_bad_plans_are_refused():
    crank = network._ops.Crank
    job = type("J", (), {})()
    with pytest.raises(TypeError):
        crank(0, ((1, (), ()),), (job,) * 7)
    with pytest.raises(TypeError):
        crank(0, ((1, ((1, 2.0),), (), 0.0),), (job,) * 7)
    with pytest.raises(TypeError):
        crank("0", (), (job,) * 7)


def _cut_run(graph: Any, cut: float) -> tuple[int, int, float]:
    """Run a program of uneven steps (a ring shift and a fan-in, repeated) until ``cut`` s: what the job
    counts as receives waiting and messages not received then."""
    import simpy

    from sim.network import Network
    from sim.program import Step, StepProgram, run_messages

    cluster = Cluster(graph)
    p = cluster.size
    env = simpy.Environment()
    net = Network(env, cluster)
    job = Job(env, net, p, 2**20)
    ranks = list(range(p))
    shift = Step.make(ranks, [(r + 1) % p for r in ranks], [1e5 * (1 + r) for r in ranks], endpoints=p)
    fan = Step.make(ranks[1:], [0] * (p - 1), 3e5, endpoints=p)
    prog = StepProgram(p, ((shift, 3), (fan, 2), (shift, 1)))
    env.process(run_messages(job, prog))
    env.run(until=cut)
    return job.pending_receives(), job.pending_messages(), env.now


@pytest.mark.parametrize("cut", [2e-6, 1e-5, 3e-5, 6e-5, 1e-4, 1.0])
def test_the_inboxes_count_what_the_mailboxes_would(monkeypatch, cut):
    """Cut mid-run: the receives waiting and the messages not received yet, as the job's own mailboxes
    count them with the plain ranks' processes."""
    graph = perturb(dgx(hosts=2, gpus_per_host=4), 3)
    seen = _count_ranks(monkeypatch)
    quick = _cut_run(graph, cut)
    assert seen["crank"] > 0
    with monkeypatch.context() as m:
        m.setattr(program, "_CRANKS", False)
        ref = _cut_run(graph, cut)
    assert quick == ref
