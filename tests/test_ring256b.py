"""The congested fast path's work on ring-rank-256, second round (docs/performance-log.md, "ring256b"): the
compiled core queues its network's wake-ups in its own queue and its pump runs them, and runs a wake-up at the
head of SimPy's queue itself (sim.fastpath._STEP_WAKES) -- the same simulated time, events and flows as the
runs that leave them to SimPy's events and loop."""

from __future__ import annotations

from typing import Any

import pytest

import sim.fastpath as fastpath
from sim import simulate
from sim.rates import _CORE
from sim.topology import dgx

pytestmark = pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")


def _run(
    monkeypatch: pytest.MonkeyPatch, on: bool, algorithm: str, size: float, hosts: int = 4, **kw: Any
) -> tuple[Any, tuple[int, int, int, int]]:
    """simulate(...) on ``hosts`` DGX hosts with the fast engine, _STEP_WAKES ``on``: (the result, (the wake-ups the
    cores' pumps took off SimPy's queue, the ones their own queues ran, the steps extrapolated, the networks'
    wake-ups))."""
    cores: list[Any] = []
    executors: list[Any] = []
    bind = fastpath.FastExecutor._bind_core

    def bound(self: Any) -> None:
        bind(self)
        executors.append(self)
        if self._core is not None:
            cores.append(self._core)

    with monkeypatch.context() as m:
        m.setattr(fastpath, "_STEP_WAKES", on)
        m.setattr(fastpath.FastExecutor, "_bind_core", bound)
        cluster = dgx(hosts=hosts, gpus_per_host=8, ecmp="hash")
        r = simulate(cluster, "allreduce", algorithm, size, engine="fast", **kw)
    assert bool(cores) == (r.engine == "fast:events")
    stepped = sum(core.stepped() for core in cores)
    woken = sum(core.woken() for core in cores)
    wakeups = sum(ex.net.wakeups for ex in executors)
    return r, (stepped, woken, sum(ex.extrapolated_steps for ex in executors), wakeups)


@pytest.mark.parametrize(
    ("algorithm", "size", "kw"),
    [
        ("ring:order=rank", 2**22 + 7, {}),
        ("ring:order=rank", 2**24, {"gamma": 1e-11}),
        ("ring:order=rank", 3 * 2**20 + 5, {"dtype": "half"}),
        ("ring:order=rank", 2**26, {}),  # (a steady state: extrapolated, the network suspended and resumed)
        ("ring:order=rank,channels=2", 2**24, {}),
        ("halving-doubling", 2**22, {}),
        ("ring", 2**23 + 3, {}),  # (contention-free: max-plus, no core)
        ("tree", 2**22 + 1, {}),
    ],
)
def test_the_pump_runs_the_wake_ups_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch, algorithm: str, size: float, kw: dict[str, Any]
) -> None:
    off, (stepped_off, woken_off, jumped_off, wakeups_off) = _run(monkeypatch, False, algorithm, size, **kw)
    on, (stepped, woken, jumped, wakeups) = _run(monkeypatch, True, algorithm, size, **kw)
    assert stepped_off == woken_off == 0
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
    assert (jumped, wakeups) == (jumped_off, wakeups_off)  # (a superseded wake-up does not run)
    if algorithm.startswith("ring:order=rank"):  # (congested: the network wakes up between the private arrivals)
        assert on.engine == "fast:events" and woken > 10
    if size == 2**26:
        assert jumped > 0


def test_a_deadline_leaves_the_wake_ups_to_simpys_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with a timeout (its steps look at a deadline first): no wake-up taken by the pump, the same results."""
    off, _ = _run(monkeypatch, False, "ring:order=rank", 2**22 + 7)
    on, (stepped, woken, _, _) = _run(monkeypatch, True, "ring:order=rank", 2**22 + 7, timeout=600.0)
    assert stepped == woken == 0
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)


def test_the_wake_ups_queued_later_supersede_the_ones_before() -> None:
    """ring-rank-256 itself (256 MiB on 32 hosts): flows launched between two wake-ups queue earlier ones (a fifth of
    them), which supersede the one queued before -- the network wakes up as often as with SimPy's events."""
    with pytest.MonkeyPatch.context() as m:
        off, (_, _, _, wakeups_off) = _run(m, False, "ring:order=rank", 2**28, hosts=32)
        on, (_, woken, _, wakeups) = _run(m, True, "ring:order=rank", 2**28, hosts=32)
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
    assert wakeups == wakeups_off and woken > 1000
