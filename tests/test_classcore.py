"""The max-min rounds in C (sim/_classcore.c) give :func:`sim.maxmin.maxmin_rates`' numpy rounds' rates
to the bit -- on random weighted and unweighted problems, on chains of bottlenecks that take a round
per link, on the class executor's own solves -- and whole parameter-server runs the same times with
and without them; ``COLLSIM_PURE=1`` turns them off. And a split's crossings counted in a dense table
(:func:`sim.classes._counted`) are ``np.unique``'s keys and counts."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import maxmin
from sim.classes import FanExecutor, _counted, _necks
from sim.maxmin import maxmin_rates, maxmin_rates_full
from sim.simulate import simulate
from sim.training import Workload, simulate_iteration

core = pytest.importorskip("sim._classcore")


def _problem(seed: int, chain: int, ties: bool) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Random classes over random arcs (capacities drawn from a few values where ``ties``, so that
    shares tie across arcs), and a staircase of ``chain`` links a round each."""
    rng = np.random.default_rng(seed)
    arcs = int(rng.integers(1, 40))
    n = int(rng.integers(1, 80))
    paths = [rng.choice(arcs, size=int(rng.integers(1, min(arcs, 6) + 1)), replace=False) for _ in range(n)]
    if ties:
        capacity = rng.choice([1.0, 2.0, 3.0, 50e9, 0.0], arcs)
    else:
        capacity = rng.uniform(0.0, 5.0, arcs) * 10.0 ** rng.integers(-3, 12)
    capacity = np.concatenate([capacity, 10.0 - 0.5 * np.arange(chain) / 3.0])
    paths += [np.array([arcs + i, arcs + i + 1]) for i in range(chain - 1)] + [
        np.array([arcs + i]) for i in range(chain)
    ]
    cls = np.concatenate([np.full(len(p), i) for i, p in enumerate(paths)])
    arc = np.concatenate(paths)
    weight = rng.integers(1, 9, len(arc)).astype(float)
    return cls, arc, len(paths), capacity, weight


@given(seed=st.integers(0, 2**32 - 1), chain=st.integers(0, 20), ties=st.booleans(), wide=st.booleans())
@settings(max_examples=300, deadline=None)
def test_the_c_rounds_are_the_numpy_rounds_to_the_bit(seed, chain, ties, wide):
    cls, arc, n, capacity, weight = _problem(seed, chain, ties)
    if wide:  # the same arcs among many more that no class crosses (the C rounds then number the crossed ones)
        rng = np.random.default_rng(seed + 1)
        spot = rng.choice(8 * len(arc) + len(capacity), size=len(capacity), replace=False)
        wider = rng.uniform(0.0, 5.0, 8 * len(arc) + len(capacity))
        wider[spot] = capacity
        arc, capacity = spot[arc], wider
    for w in (weight, None):
        want = _numpy(maxmin_rates, cls, arc, n, capacity, weight=w)
        got = np.zeros(n)
        assert core.maxmin(cls, arc, capacity, w, got) is True
        assert np.array_equal(got, want), got - want
        assert np.array_equal(want, maxmin_rates_full(cls, arc, n, capacity, weight=w))
        assert np.array_equal(maxmin_rates(cls, arc, n, capacity, weight=w), want)


def _numpy(fn, *args, **kw):
    """``fn`` with the C rounds off (sim.maxmin's numpy rounds)."""
    saved, maxmin._CORE = maxmin._CORE, None
    try:
        return fn(*args, **kw)
    finally:
        maxmin._CORE = saved


def test_what_the_c_rounds_leave_to_numpy():
    """Crossings not sorted by flow, a flow with none, an arc out of range: the C rounds decline, and
    maxmin_rates answers (or refuses) as the numpy rounds do."""
    capacity = np.array([10.0, 2.0])
    out = np.zeros(2)
    unsorted = (np.array([1, 0, 1]), np.array([1, 0, 0]))
    assert core.maxmin(*unsorted, capacity, None, out) is False
    assert np.array_equal(maxmin_rates(*unsorted, 2, capacity), _numpy(maxmin_rates, *unsorted, 2, capacity))
    assert core.maxmin(np.array([0, 2]), np.array([0, 0]), capacity, None, np.zeros(3)) is False
    with pytest.raises(ValueError, match="every flow must cross"):
        maxmin_rates(np.array([0, 2]), np.array([0, 0]), 3, capacity)
    assert core.maxmin(np.array([0, 1]), np.array([0, 5]), capacity, None, out) is False
    with pytest.raises(TypeError):
        core.maxmin(np.array([0.0, 1.0]), np.array([0, 0]), capacity, None, out)


def _run(monkeypatch, pure: bool, fn):
    monkeypatch.setattr(maxmin, "_CORE", None if pure else core)
    return fn()


@pytest.mark.parametrize(
    ("topology", "spec", "size", "kw"),
    [
        ("dgx:hosts=4", "ps", 25 * 2**20, {}),  # the report's ps: one shard per rank, 32 GPUs
        ("dgx:hosts=4,ecmp=hash", "ps", 25 * 2**20, {}),  # ... hashed: pushes meet on spines by chance
        ("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=3,spines=2,ecmp=hash", "ps", 2**20, {"gamma": 1e-11}),
        (
            "dgx:hosts=12,gpus_per_host=2,hosts_per_leaf=4,spines=2,ecmp=hash",
            "ps:placement=dedicated",
            2**22,
            {"ranks": 8},
        ),
        ("dgx:hosts=4", "master-worker", 2**24, {}),
        (
            "leaf-spine:leaves=3,hosts_per_leaf=4,spines=1,bandwidth=100Gbps,uplink_bandwidth=200Gbps",
            "ps:shards=3",
            2**22,
            {},
        ),
    ],
)
def test_class_runs_keep_their_times_with_the_c_rounds(monkeypatch, topology, spec, size, kw):
    """The flow classes solve through maxmin_rates: the same times to the bit with the C rounds and the
    numpy ones, and the message level's to 1e-9."""
    c = _run(monkeypatch, False, lambda: simulate(topology, "allreduce", spec, size, **kw))
    py = _run(monkeypatch, True, lambda: simulate(topology, "allreduce", spec, size, **kw))
    assert c.engine == "fast:classes"
    assert c.time_s == py.time_s and c.events == py.events and c.link_bytes == py.link_bytes
    m = simulate(topology, "allreduce", spec, size, engine="message", **kw)
    assert abs(c.time_s - m.time_s) <= 1e-9 * m.time_s


def test_an_iteration_keeps_its_times_with_the_c_rounds(monkeypatch):
    w = Workload(gradient_bytes=60 * 2**20, forward_s=1e-4, backward_s=2e-4)
    c = _run(monkeypatch, False, lambda: simulate_iteration("dgx:hosts=2", "ps", w))
    py = _run(monkeypatch, True, lambda: simulate_iteration("dgx:hosts=2", "ps", w))
    assert c.bucket_timings == py.bucket_timings and c.iteration_s == py.iteration_s


def test_collsim_pure_turns_the_c_rounds_off():
    code = "import sim.maxmin as m; print(m._CORE is None)"
    env = dict(os.environ, COLLSIM_PURE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"]


@given(seed=st.integers(0, 2**32 - 1), parts=st.integers(1, 40), dense=st.booleans())
@settings(max_examples=200, deadline=None)
def test_a_splits_counts_are_uniques(seed, parts, dense):
    """Every way of :func:`sim.classes._counted` (in C; in numpy, a dense table over the arcs crossed,
    or ``np.unique`` where that table would be large) gives ``np.unique``'s sorted keys and counts."""
    rng = np.random.default_rng(seed)
    arcs_n = int(rng.integers(1, 50 if dense else 100_000))
    n = int(rng.integers(1, 3000))
    width = int(rng.integers(1, 7))
    part = rng.integers(0, parts, n)
    arcs = rng.integers(0, arcs_n, n) if dense else rng.choice(arcs_n, size=n)
    hop = rng.integers(0, width, n)
    key, count = np.unique((part * arcs_n + arcs) * width + hop, return_counts=True)
    want = (key // (arcs_n * width), key // width % arcs_n, key % width, count.astype(float))
    for got in (
        _counted(part, parts, arcs, hop, width, arcs_n),
        _numpy(_counted, part, parts, arcs, hop, width, arcs_n),
    ):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and np.array_equal(g, w)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 500))
@settings(max_examples=100, deadline=None)
def test_arcs_numbered_by_marking_are_uniques(seed, n):
    """The executor numbers the arcs a solve crosses by marking them (:meth:`FanExecutor._numbered`),
    the same arrays as ``np.unique(arcs, return_inverse=True)``, its scratch left clean."""
    rng = np.random.default_rng(seed)
    arcs_n = int(rng.integers(1, 2000))
    arcs = rng.integers(0, arcs_n, n)
    scratch = SimpleNamespace(_mark=np.zeros(arcs_n, dtype=bool), _index_of=np.zeros(arcs_n, dtype=np.int64))
    for _ in range(2):
        where, local = FanExecutor._numbered(scratch, arcs)
        want_where, want_local = np.unique(arcs, return_inverse=True)
        assert where.dtype == want_where.dtype and np.array_equal(where, want_where)
        assert local.dtype == want_local.dtype and np.array_equal(local, want_local.reshape(-1))
        assert not scratch._mark.any()


@given(seed=st.integers(0, 2**32 - 1), classes=st.integers(1, 60), saturate=st.booleans())
@settings(max_examples=200, deadline=None)
def test_the_c_verification_numbers_are_numpys(seed, classes, saturate):
    """:func:`sim.classes._necks` in C (``necks``) and in numpy: the same full arcs, bottleneck
    crossings and quick-test classes -- on max-min rates (so arcs fill, rates tie), with loads of
    other classes taken off the capacities."""
    cls, arc, n, capacity, weight = _problem(seed, 0, saturate)
    rng = np.random.default_rng(seed)
    taken = np.where(rng.random(len(capacity)) < 0.3, capacity * rng.random(len(capacity)), 0.0)
    rate = maxmin_rates(cls, arc, n, np.maximum(capacity - taken, 0.0), weight=weight)
    hop = np.concatenate([np.arange(k) for k in np.bincount(cls)])
    width = int(hop.max()) + 1
    size = rng.integers(1, 12, n)
    got = _necks(cls, arc, weight, hop, rate, taken, capacity, size, width)
    want = _numpy(_necks, cls, arc, weight, hop, rate, taken, capacity, size, width)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == bool and np.array_equal(g, w)
    assert got[0].any() and got[1].any()
