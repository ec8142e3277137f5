"""Flow classes solved only above a completion (sim.classes.FanExecutor._solve_above): when classes
complete and nothing else changes, the classes slower than all of them -- below a gap wider than the
verification's tolerance -- keep their rates and only the others are solved again. The times stay the
message level's, and those of solving the whole component every time."""

from __future__ import annotations

import numpy as np
import pytest

import sim.classes as classes
from sim.classes import FanExecutor
from sim.simulate import simulate
from sim.topology import dgx

from .test_classes import executor
from .test_fastpath import perturb


def whole(monkeypatch):
    """Every completion solves its whole component again (no cut: nothing stands). The C settle cuts as
    ``_cut_below`` does, so it is turned off with it."""
    monkeypatch.setattr(FanExecutor, "_cut_below", staticmethod(lambda rates, floor: -np.inf))
    monkeypatch.setattr(classes, "_SETTLE_CORE", False)


def test_the_cut_is_under_a_gap_wider_than_the_tolerance():
    cut = FanExecutor._cut_below
    # 9.0 is the highest rate under 10 with the next one up (10, the floor) more than 1e-9 above it
    assert cut(np.array([9.0, 5.0, 11.0, 10.0]), 10.0) == 9.0
    # rates within 1e-9 of the floor, or of each other down from it, move with it: the cut is below them
    tied = np.array([10.0 * (1 - 5e-10), 10.0 * (1 - 9e-10), 7.0, 3.0])
    assert cut(tied, 10.0) == 7.0
    chain = 10.0 * (1 - 5e-10 * np.arange(1, 4000))  # a crowd that reaches past the sorted neighbourhood
    assert cut(np.concatenate([chain, [2.0]]), 10.0) == 2.0
    assert cut(chain, 10.0) == -np.inf
    assert cut(np.array([12.0, 10.0]), 10.0) == -np.inf  # nothing below


#: one shard per rank (every NIC and spine link full, one component) and S = hosts, co-located and
#: dedicated, on rail fabrics with few spines, hashed (the pushes meet on spines by chance and split)
CASES = [
    ("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=3,spines=2,ecmp=hash", "ps", {}, 2**20),
    ("dgx:hosts=8,gpus_per_host=2,hosts_per_leaf=4,spines=3,ecmp=hash", "ps", {}, 3 * 2**22 + 7),
    ("dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=4,spines=2,ecmp=hash", "ps:shards=8", {}, 2**24),
    ("dgx:hosts=12,gpus_per_host=2,hosts_per_leaf=4,spines=2,ecmp=hash", "ps:placement=dedicated", {"ranks": 8}, 2**22),
    # stragglers and slowed links
    *(
        (perturb(dgx(hosts=8, gpus_per_host=2, hosts_per_leaf=4, spines=2, ecmp="hash"), seed), "ps", {}, 2**22)
        for seed in (3, 11)
    ),
]


@pytest.mark.parametrize(("topology", "spec", "kw", "size"), CASES)
def test_solving_above_completions_keeps_the_times(monkeypatch, topology, spec, kw, size):
    """The message level's time, and the whole-component solves' to 1e-12, with most solves above a
    completion."""
    ex, t = executor(topology, spec, size, gamma=1e-11, **kw)
    m = simulate(topology, "allreduce", spec, size, gamma=1e-11, engine="message", **kw)
    assert abs(t - m.time_s) <= 1e-9 * m.time_s
    assert ex.above > 0
    whole(monkeypatch)
    ref, t_whole = executor(topology, spec, size, gamma=1e-11, **kw)
    assert ref.above == 0
    assert abs(t - t_whole) <= 1e-12 * t_whole
