"""The single ring's message level without the data check runs its step program's ranks
(``sim.algorithms.ring._FROM_PROGRAM``: :func:`~sim.program.run_messages`, compiled loops where the core is
built) rather than its rank generators: both give the same results -- the simulated time to the last bit,
the events SimPy counts, the flows, every link's bytes -- on congested, heterogeneous and straggling
fabrics, with reductions on the processors, for all-reduce, all-gather and reduce-scatter. The data check
still runs the generators (they are the reference the step program is held to: tests/test_fastpath.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sim import program as prog
from sim.algorithms import ring
from sim.simulate import simulate
from sim.topology import dgx, leaf_spine

CASES = [
    ("dgx:hosts=4,ecmp=hash", "allreduce", "ring:order=rank", 64e6, 0.0),
    ("dgx:hosts=4,ecmp=hash", "allreduce", "ring", 64e6, 1e-10),
    ("dgx:hosts=3", "allgather", "ring", 10e6, 0.0),
    ("dgx:hosts=3", "allgather", "ring:order=rank", 10e6, 0.0),
    ("dgx:hosts=3", "reducescatter", "ring:order=rank", 10e6, 2e-10),
    ("dgx:hosts=2,ecmp=hash", "reducescatter", "ring", 3e6, 0.0),
]


def run(monkeypatch, on, *args, **kw):
    """simulate(*args, engine="message") with the switch ``on`` or off; the result and how many times the
    program's message level ran."""
    calls = []
    real = ring.run_messages

    def counted(job, program):
        calls.append(program)
        return real(job, program)

    with monkeypatch.context() as m:
        m.setattr(ring, "_FROM_PROGRAM", on)
        m.setattr(ring, "run_messages", counted)
        return simulate(*args, engine="message", **kw), len(calls)


def same(a, b):
    assert repr(a.time_s) == repr(b.time_s)
    assert (a.events, a.flows) == (b.events, b.flows)
    assert a.link_bytes == b.link_bytes


@pytest.mark.parametrize("topo, collective, spec, size, gamma", CASES)
def test_program_messages_equal_the_generators(monkeypatch, topo, collective, spec, size, gamma):
    a, used = run(monkeypatch, True, topo, collective, spec, size, gamma=gamma)
    b, unused = run(monkeypatch, False, topo, collective, spec, size, gamma=gamma)
    assert (used, unused) == (1, 0)
    same(a, b)


def congested(seed):
    """A 3:1 oversubscribed leaf-spine of 2-GPU hosts with a few slow links and straggling GPUs (per-message
    overhead, slower reductions)."""
    g = leaf_spine(3, 3, 1, 25e9, uplink_bandwidth=25e9, latency=1e-6, gpus_per_host=2, intra_bandwidth=100e9)
    rng = np.random.default_rng(seed)
    gpus = g.graph["ranks"]
    for node in rng.choice(gpus, size=2, replace=False):
        g.nodes[node]["overhead"] = float(rng.uniform(1e-6, 2e-5))
        g.nodes[node]["compute_scale"] = float(rng.uniform(1.5, 4.0))
    edges = list(g.edges)
    for i in rng.choice(len(edges), size=3, replace=False):
        g.edges[edges[i]]["bandwidth"] *= float(rng.uniform(0.2, 0.9))
    return g


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("collective", ["allreduce", "allgather", "reducescatter"])
def test_congested_and_straggling(monkeypatch, seed, collective):
    g = congested(seed)
    a, used = run(monkeypatch, True, g, collective, "ring:order=rank", 9e6, gamma=1e-10)
    b, _ = run(monkeypatch, False, g, collective, "ring:order=rank", 9e6, gamma=1e-10)
    assert used == 1
    same(a, b)


def test_the_compiled_ranks_run(monkeypatch):
    """Where the compiled core is built, the program's ranks are its compiled loops (not generators)."""
    made = []
    real = prog._compiled_ranks

    def seen(job, program):
        got = real(job, program)
        made.append(got is not None)
        return got

    monkeypatch.setattr(prog, "_compiled_ranks", seen)
    run(monkeypatch, True, dgx(hosts=2), "allreduce", "ring", 1e6)
    core, _ = prog.runtime_core()
    if prog._CRANKS and getattr(core, "Crank", None) is not None:
        assert made == [True]
    else:  # the pure lines (COLLSIM_PURE=1, or no core): generators, the compiled loops not asked for or refused
        assert not any(made)


def test_the_data_check_runs_the_generators(monkeypatch):
    r, used = run(monkeypatch, True, "dgx:hosts=2", "allreduce", "ring:order=rank", 1e6, check=True)
    assert used == 0 and r.wrong == 0


def test_single_rank_and_channels_untouched(monkeypatch):
    """One rank runs nothing; ``channels=K`` rings are NCCL's program already (run_program)."""
    r, used = run(monkeypatch, True, "dgx:hosts=1", "allreduce", "ring:channels=2", 1e6)
    assert used == 0 and r.flows > 0
