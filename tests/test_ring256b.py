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


def _run(monkeypatch: pytest.MonkeyPatch, on: bool, algorithm: str, size: float, **kw: Any) -> tuple[Any, int]:
    """simulate(...) on 4 DGX hosts with the fast engine, _STEP_WAKES ``on``: (the result, the wake-ups the
    cores ran: SimPy's events taken by the pump and their own queues' entries)."""
    cores: list[Any] = []
    bind = fastpath.FastExecutor._bind_core

    def bound(self: Any) -> None:
        bind(self)
        if self._core is not None:
            cores.append(self._core)

    with monkeypatch.context() as m:
        m.setattr(fastpath, "_STEP_WAKES", on)
        m.setattr(fastpath.FastExecutor, "_bind_core", bound)
        r = simulate(dgx(hosts=4, gpus_per_host=8, ecmp="hash"), "allreduce", algorithm, size, engine="fast", **kw)
    assert bool(cores) == (r.engine == "fast:events")
    return r, sum(core.stepped() + core.woken() for core in cores)


@pytest.mark.parametrize(
    ("algorithm", "size", "kw"),
    [
        ("ring:order=rank", 2**22 + 7, {}),
        ("ring:order=rank", 2**24, {"gamma": 1e-11}),
        ("ring:order=rank", 3 * 2**20 + 5, {"dtype": "half"}),
        ("halving-doubling", 2**22, {}),
        ("ring", 2**23 + 3, {}),  # (contention-free: max-plus, no core)
        ("tree", 2**22 + 1, {}),
    ],
)
def test_the_pump_runs_the_wake_ups_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch, algorithm: str, size: float, kw: dict[str, Any]
) -> None:
    off, none = _run(monkeypatch, False, algorithm, size, **kw)
    on, stepped = _run(monkeypatch, True, algorithm, size, **kw)
    assert none == 0
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
    if algorithm == "ring:order=rank":  # (congested: the network wakes up between the private arrivals)
        assert on.engine == "fast:events" and stepped > 10


def test_a_deadline_leaves_the_wake_ups_to_simpys_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with a timeout (its steps look at a deadline first): no wake-up taken by the pump, the same results."""
    off, _ = _run(monkeypatch, False, "ring:order=rank", 2**22 + 7)
    on, stepped = _run(monkeypatch, True, "ring:order=rank", 2**22 + 7, timeout=600.0)
    assert stepped == 0
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
