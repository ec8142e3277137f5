"""Sends and arrivals without Python per message (``sim.network._MSG_CORE``) give the results of the lines
they stand for, bit for bit.

With the switch on, the compiled ranks (``sim._ratecore.Crank``) find each send's route and start delay
once and make its record ``(event, hook)`` once, and write its numbers into the network's per-slot arrays at
the send; ``net_run`` writes what other single sends staged into those arrays itself (``Network._flush``'s
lines) and finishes the single sends of no owner and no transfer group itself (``Network._finish`` /
``_finish_few``'s lines: bytes booked, rates zeroed, each arrival's hook -- a rank's ``Crank.sent`` called as
C --, its event triggered, the slots freed). Every result, every ``repr`` of the simulated time and the count
of events scheduled must be the same with the switch off, on NCCL's schedules, with stragglers, slow links,
reductions on the processors (gamma > 0), the data check, and on a textbook algorithm's processes.
"""

from __future__ import annotations

from typing import Any

import pytest

import sim.network as network
import sim.program as program
from sim import simulate
from sim.cluster import Cluster
from sim.topology import hgx

from .test_fast_core import straggler_graph
from .test_fastpath import perturb
from .test_message_engine import _same

pytestmark = pytest.mark.skipif(network._ops is network._PyDue, reason="the compiled core is not built")


def _python_lines(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the Python lines the switch replaces run from here on (Network._flush, _finish, _finish_few)."""
    calls = {"n": 0}
    for name in ("_flush", "_finish", "_finish_few"):
        original = getattr(network.Network, name)

        def counted(self: Any, *a: Any, _original: Any = original) -> Any:
            calls["n"] += 1
            return _original(self, *a)

        monkeypatch.setattr(network.Network, name, counted)
    return calls


def _both(monkeypatch: pytest.MonkeyPatch, topology: Any, *args: Any, **kw: Any) -> tuple[Any, int, int]:
    """The message-level run with the switch on and off: the same results, reprs and events. Returns the
    run and how often the Python lines ran with it on and off."""
    calls = _python_lines(monkeypatch)
    runs = []
    for switch in (True, False):
        with monkeypatch.context() as m:
            m.setattr(network, "_MSG_CORE", switch)
            before = calls["n"]
            runs.append((simulate(topology, *args, engine="message", **kw), calls["n"] - before))
    (quick, on), (ref, off) = runs
    _same(quick, ref)
    assert (repr(quick.time_s), quick.events, quick.flows) == (repr(ref.time_s), ref.events, ref.flows)
    return quick, on, off


SPECS = ["nccl", "nccl-tree", "nvls-tree", "ring:channels=2", "nccl:algo=ring", "collnet-chain"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("hosts, seed", [(2, None), (3, 0), (4, 1)])
def test_nccls_schedules(monkeypatch, spec, hosts, seed):
    g = hgx(hosts, "dgx-h100", gpus_per_host=4, sharp=spec.startswith("collnet"))
    g = g if seed is None else perturb(g, seed)  # (stragglers and slow links)
    _, on, off = _both(monkeypatch, Cluster(g), "allreduce", spec, float(2**22 + 4096 * hosts + 3))
    assert on < off  # (the compiled lines ran where the Python ones did)


@pytest.mark.parametrize("spec", ["nccl", "nvls-tree", "ring:channels=4"])
def test_reductions_wait_on_the_processor(monkeypatch, spec):
    """gamma > 0: each step's reduction a wait on Job.compute, the stragglers' processors slower."""
    g = perturb(hgx(2, "dgx-h100", gpus_per_host=4), 5, stragglers=3)
    _both(monkeypatch, Cluster(g), "allreduce", spec, 3e6 + 7, gamma=2e-11)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("algorithm", ["nccl", "nccl-tree", "ring", "halving-doubling"])
def test_congested_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    """Congested fabrics, stragglers and slow links; the textbook algorithms run processes of their own (their
    sends staged by Job.send, finished in C)."""
    _both(monkeypatch, straggler_graph(seed), "allreduce", algorithm, float(2**20 + 17 * seed), gamma=1e-11)


@pytest.mark.parametrize("algorithm", ["nccl", "ring", "double-binary-tree:chunks=3"])
def test_the_data_check(monkeypatch, algorithm):
    """With the data check the ranks are processes carrying payloads; the arrivals' hooks deliver them."""
    g = perturb(hgx(2, "dgx-h100", gpus_per_host=4), 2)
    quick, _, _ = _both(monkeypatch, Cluster(g), "allreduce", algorithm, 2e6 + 3, check=True, gamma=1e-11)
    assert quick.wrong == 0


@pytest.mark.parametrize("collective", ["allgather", "reducescatter"])
def test_other_collectives(monkeypatch, collective):
    g = perturb(hgx(3, "dgx-h100", gpus_per_host=2), 4)
    _both(monkeypatch, Cluster(g), collective, "nccl", 5e6 + 1)


def test_with_the_compiled_ranks_off(monkeypatch):
    """The plain ranks' processes (sim.program._CRANKS off) with the switch on and off."""
    monkeypatch.setattr(program, "_CRANKS", False)
    _both(monkeypatch, Cluster(perturb(hgx(2, "dgx-h100", gpus_per_host=4), 7)), "allreduce", "nccl", 2**21 + 9)


def test_every_rank_plan_at_once(monkeypatch):
    """Step.plain_ranks: each rank's Step.plain, as tuples (the programs the compiled ranks ran)."""
    seen: list[Any] = []
    compiled = program._compiled_ranks

    def recording(job: Any, prog: Any) -> Any:
        seen.append(prog)
        return compiled(job, prog)

    monkeypatch.setattr(program, "_compiled_ranks", recording)
    simulate(Cluster(hgx(2, "dgx-h100", gpus_per_host=4)), "allreduce", "nvls-tree", 2**20, engine="message")
    assert seen
    for prog in seen:
        for step, _ in prog.phases:
            sends, srcs, reduce = step.plain_ranks()
            for r in range(prog.endpoints):
                one = step.plain(r)
                assert sends[r] == tuple(one[0]) and srcs[r] == tuple(one[1]) and reduce[r] == one[2]
