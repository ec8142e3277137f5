"""An engine that makes no progress stops with one line (sim.errors.Stalled, a RunError), not a loop forever.

Each guard is tripped by a deliberate break of the engine it guards: the classes engine's completions
(``FanExecutor._due_split_comp`` and ``_alive`` losing a class that is due, with the compiled cores and with the
Python lines); the network's rates (one draining flow's rate set to 0 after a solve: SimPy's queue would empty
with it unfinished) through each of its wake-ups -- in C whole (``net_run``), the Python wake-up with the compiled
next wake-up (``wake_next``), and the Python lines; and the wake-up's drain completing nothing (a wake-up that
comes round at one instant forever), in Python and in C (``stall_drains``, sim/_ratecore.c's one switch for
tests). The runs are bounded by the guards' iteration counts (the Python ones lowered here), never by the clock.
"""

from __future__ import annotations

import numpy as np
import pytest

from collsim.cli import main
from sim import RunError, classes, maxmin, network, rates, simulate
from sim.errors import Stalled

PS = "dgx:hosts=2,gpus_per_host=4,ecmp=hash"  # a hashed parameter server: the classes engine
CONGESTED = "two-rack-2to1"  # halving-doubling shares the uplinks: the network's max-min solves


def _lose_one(monkeypatch, how: str, pure: bool) -> list[int]:
    """Break the classes engine: the first class due that ``_due_split_comp`` (or ``_alive``) finds is never
    reported due again -- dropped from its component (``drop``) or kept among the classes still draining
    (``stuck``, a completion time always a hair later than the real one). Returns the count of the loop's
    iterations (one ``_finish`` each)."""
    monkeypatch.setattr(maxmin, "_CORE", None if pure else maxmin._CORE)
    monkeypatch.setattr(classes, "_STALLED", 50)
    lost: list[int] = []
    split, alive, finish = classes.FanExecutor._due_split_comp, classes.FanExecutor._alive, classes.FanExecutor._finish

    def hide(done: np.ndarray, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(done) and not lost:
            lost.append(int(done[0]))
        if not lost or lost[0] not in done:
            return done, rest
        return done[done != lost[0]], (rest if how == "drop" else np.sort(np.append(rest, lost[0])))

    def due_split_comp(self, c, t, near):
        return hide(*split(self, c, t, near))

    def alive_(self, members, t=np.nan, near=np.nan):
        got = alive(self, members, t, near)
        return got if np.isnan(near) else hide(got, got[:0])[0]

    iterations = [0]

    def finish_(self, done):
        iterations[0] += 1
        return finish(self, done)

    monkeypatch.setattr(classes.FanExecutor, "_due_split_comp", due_split_comp)
    monkeypatch.setattr(classes.FanExecutor, "_alive", alive_)
    monkeypatch.setattr(classes.FanExecutor, "_finish", finish_)
    return iterations


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "python"])
@pytest.mark.parametrize("how", ["drop", "stuck"])
def test_the_classes_engine_stops_where_a_class_never_completes(monkeypatch, how, pure):
    if not pure and getattr(maxmin._CORE, "due_split_tail", None) is None:
        pytest.skip("sim._classcore is not built")
    iterations = _lose_one(monkeypatch, how, pure)
    with pytest.raises(RunError) as err:
        simulate(PS, "allreduce", "ps", 2**24)
    assert isinstance(err.value, Stalled)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("the classes engine (sim.classes.FanExecutor) made no progress at simulated t=")
    assert "flow classes active, none completes or starts -- a defect of collsim, not of the input" in message
    assert err.value.active >= 1
    assert iterations[0] < 1000  # the bound, 50 iterations in a row with nothing done, ended it


def test_the_classes_engine_passes_unbroken(monkeypatch):
    """The guard's low bound of the test above does not fire on the same run unbroken (the classes engine runs)."""
    monkeypatch.setattr(classes, "_STALLED", 50)
    runs = []
    simulate_ = classes.FanExecutor._simulate
    monkeypatch.setattr(classes.FanExecutor, "_simulate", lambda self, t0: runs.append(1) or simulate_(self, t0))
    assert simulate(PS, "allreduce", "ps", 2**24).time_s > 0 and runs


def _rate_zero(monkeypatch) -> list[int]:
    """Break the network: after every solve, the first draining flow's rate is 0 (it never completes). The solves
    the compiled wake-up takes whole never see the break, so the compiled per-link sets are made late
    (``_CORE_EARLY``): the first solves then go through ``Network._solve``."""
    monkeypatch.setattr(rates, "_CORE_EARLY", False)
    solve = network.Network._solve
    zeroed: list[int] = []

    def broken(self):
        solve(self)
        active = np.flatnonzero(self._is_active)
        if len(active):
            zeroed.append(int(active[0]))
            self._set_rates([int(active[0])], [0.0])

    monkeypatch.setattr(network.Network, "_solve", broken)
    return zeroed


@pytest.mark.parametrize("engine", ["fast", "message"])
@pytest.mark.parametrize("wake", ["net_run", "wake_next", "python"])
def test_the_network_stops_where_a_flow_never_completes(monkeypatch, engine, wake):
    if wake != "python" and network._ops is network._PyDue:
        pytest.skip("sim._ratecore is not built")
    if wake == "wake_next":
        monkeypatch.setattr(network, "_WHOLE_CORE", False)
    elif wake == "python":
        monkeypatch.setattr(network, "_ops", network._PyDue)
    zeroed = _rate_zero(monkeypatch)
    with pytest.raises(RunError) as err:
        simulate(CONGESTED, "allreduce", "halving-doubling", 2**20, engine=engine)
    assert zeroed and isinstance(err.value, Stalled)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("the network's wake-up (sim.network.Network) made no progress at simulated t=")
    assert message.endswith(
        "flows active, none completes or starts -- a defect of collsim, not of the input; please report it"
    )
    assert err.value.t > 0 and err.value.active >= 1


@pytest.mark.parametrize("wake", ["wake_next", "python"])
def test_a_wake_up_that_comes_round_at_one_instant_stops(monkeypatch, wake):
    """The Python wake-up (``Network._wake_py``) whose drain completes nothing: the flow due stays due, the next
    wake-up is at the same instant, forever -- it stops after ``_IDLE_WAKES`` of them in a row."""
    if wake == "wake_next":
        if network._ops is network._PyDue:
            pytest.skip("sim._ratecore is not built")
        monkeypatch.setattr(network, "_WHOLE_CORE", False)
    else:
        monkeypatch.setattr(network, "_ops", network._PyDue)
    monkeypatch.setattr(network, "_IDLE_WAKES", 20)
    drain = network.Network._drain
    calls = [0]

    def broken(self, now):
        calls[0] += 1
        if calls[0] <= 3:
            return drain(self, now)
        self._t_last = now
        return False  # from the fourth wake-up on, nothing drains

    monkeypatch.setattr(network.Network, "_drain", broken)
    with pytest.raises(RunError) as err:
        simulate(CONGESTED, "allreduce", "halving-doubling", 2**20)
    assert isinstance(err.value, Stalled) and "\n" not in str(err.value)
    assert str(err.value).startswith("the network's wake-up (sim.network.Network) made no progress at simulated t=")
    assert err.value.active >= 1
    assert calls[0] < 100  # 20 idle wake-ups in a row at one instant, after the few that drained


def test_the_compiled_wake_up_that_comes_round_at_one_instant_stops():
    """The same in C (``net_run``'s ``w_body``), its drain broken by the test-only switch ``stall_drains``: it stops
    after 1,000 idle wake-ups in a row at one instant (``w_idled``)."""
    stall = getattr(network._ops, "stall_drains", None)
    if stall is None:
        pytest.skip("sim._ratecore is not built")
    stall(3)  # from the fourth drain on, the compiled wake-up's drains complete nothing
    try:
        with pytest.raises(RunError) as err:
            simulate(CONGESTED, "allreduce", "halving-doubling", 2**20)
    finally:
        stall(-1)
    assert isinstance(err.value, Stalled) and "\n" not in str(err.value)
    assert str(err.value).startswith("the network's wake-up (sim.network.Network) made no progress at simulated t=")
    assert err.value.active >= 1
    assert simulate(CONGESTED, "allreduce", "halving-doubling", 2**20).time_s > 0  # the switch is off again


def test_the_cli_prints_one_line_and_exits_2(monkeypatch, capsys):
    """``collsim simulate`` on a broken engine: one line on stderr, exit code 2 (RunError's), no traceback."""
    _rate_zero(monkeypatch)
    code = main(["simulate", "-t", CONGESTED, "-a", "halving-doubling", "--size", "1MiB"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("collsim: error: the network's wake-up (sim.network.Network) made no progress")
    assert "a defect of collsim, not of the input" in lines[0]
