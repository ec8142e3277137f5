"""How large a part of the network a change may re-solve before the rate computation solves every
active flow instead (``sim.rates._PART_SHARE``) is a matter of cost only: the rates, and so every
time, are the ones a solve of all the flows gives -- the same, bit for bit, whatever the threshold,
and the message level's."""

from __future__ import annotations

import pytest

import sim.rates as rates
from sim.simulate import simulate
from sim.topology import hgx


def _made(made: list[rates.Rates]):
    """Rates.__init__, keeping every rate computation made (its ``partial``: the parts it re-solved, in
    Python or in the compiled wake-up alike)."""
    init = rates.Rates.__init__

    def wrapped(self, cluster):
        init(self, cluster)
        made.append(self)

    return wrapped


@pytest.mark.parametrize("preset", ["dgx-h100", "oci-bm-gpu-h100-8"])
def test_the_share_a_part_may_reach_changes_the_cost_not_the_times(preset, monkeypatch):
    graph, spec = hgx(4, preset, gpus_per_host=4), "nvls-tree"
    monkeypatch.setattr(rates, "_SPREAD", True)  # spread along full links from the first change
    made: list[rates.Rates] = []
    monkeypatch.setattr(rates.Rates, "__init__", _made(made))
    times, parts = {}, {}
    floor, middle = rates._PART_FLOOR, rates._PART_SHARE
    for share in (1, middle, 10**9):  # 1: up to half the active flows; 10**9: never a part
        monkeypatch.setattr(rates, "_PART_SHARE", share)
        monkeypatch.setattr(rates, "_PART_SHARE_CORE", share)  # (the compiled core's, where it is built)
        monkeypatch.setattr(rates, "_PART_FLOOR", 0 if share == 10**9 else floor)
        made.clear()
        r = simulate(graph, "allreduce", spec, 2**26, gamma=1e-11)
        times[share] = (r.time_s, r.events, r.flows)
        parts[share] = sum(m.partial for m in made)
    # a larger share, more parts re-solved; a limit of 0 flows: only the parts with nothing to solve
    assert parts[10**9] < parts[middle] <= parts[1]
    assert times[1] == times[middle] == times[10**9]
    message = simulate(graph, "allreduce", spec, 2**26, gamma=1e-11, engine="message")
    assert times[1][0] == pytest.approx(message.time_s, rel=1e-9, abs=0)
