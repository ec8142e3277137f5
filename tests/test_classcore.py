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
    if wide:
        arc, capacity = _widened(seed, arc, capacity)
    for w in (weight, None):
        want = _numpy(maxmin_rates, cls, arc, n, capacity, weight=w)
        got = np.zeros(n)
        assert core.maxmin(cls, arc, capacity, w, got) is True
        assert np.array_equal(got, want), got - want
        assert np.array_equal(want, maxmin_rates_full(cls, arc, n, capacity, weight=w))
        assert np.array_equal(maxmin_rates(cls, arc, n, capacity, weight=w), want)


def _widened(seed: int, arc: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same arcs among many more that no class crosses (the C rounds then number the crossed ones)."""
    rng = np.random.default_rng(seed + 1)
    spot = rng.choice(8 * len(arc) + len(capacity), size=len(capacity), replace=False)
    wider = rng.uniform(0.0, 5.0, 8 * len(arc) + len(capacity))
    wider[spot] = capacity
    return spot[arc], wider


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


def _bounds(seed: int, n: int, rates: np.ndarray, capacity: np.ndarray, odd: bool) -> np.ndarray:
    """Per-flow bounds for a problem whose unbounded rates are ``rates``: below, at and just around them
    (within the rounds' tolerance and beyond it), above, ties among flows, a link's capacity, zero and
    ``inf`` -- and, where ``odd``, NaN and negative ones."""
    rng = np.random.default_rng(seed + 2)
    r = np.where(np.isfinite(rates), rates, 1.0)
    kinds = [
        np.full(n, np.inf),
        r * 0.5,
        r,
        r * (1 + 1e-13),
        r * (1 - 1e-13),
        r * (1 + 1e-11),
        r * 2.0,
        np.full(n, float(rng.choice(r))),
        np.full(n, float(rng.choice(capacity))),
        np.zeros(n),
        np.full(n, float(rng.uniform(0.0, 2.0 * r.max() + 1.0))),
    ]
    if odd:
        kinds.append(np.full(n, -0.0))
    pick = rng.integers(0, len(kinds), n)
    bound = np.choose(pick, kinds)
    if rng.random() < 0.3:  # most flows unbounded, as a message level's slice caps leave them
        bound[rng.random(n) < 0.8] = np.inf
    if odd and rng.random() < 0.3:  # one NaN (np.minimum's: it wins)
        bound[rng.integers(0, n)] = np.nan
    if odd and rng.random() < 0.2:  # one negative (below its own tolerance: the rounds stall)
        bound[rng.integers(0, n)] = -1.0
    return bound


@given(
    seed=st.integers(0, 2**32 - 1),
    chain=st.integers(0, 20),
    ties=st.booleans(),
    wide=st.booleans(),
    odd=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_the_c_rounds_with_bounds_are_the_numpy_rounds_to_the_bit(seed, chain, ties, wide, odd):
    """Per-flow bounds below, at, around and above the flows' shares, tied, zero, ``inf`` (and NaN, -0.0
    and negative), with weights and without, zero-capacity links among the ties (of either sign): the C
    rounds give the numpy rounds' rates to the bit, signed zeros and NaNs too, and maxmin_rates sends the
    solve to them."""
    cls, arc, n, capacity, weight = _problem(seed, chain, ties)
    if wide:
        arc, capacity = _widened(seed, arc, capacity)
    if odd:  # zero capacities of either sign (np.minimum / np.maximum give the second operand on a tie)
        capacity = np.where(capacity == 0.0, -0.0, capacity)
    for w in (weight, None):
        free = _numpy(maxmin_rates, cls, arc, n, capacity, weight=w)
        got = np.full(n, -7.0)
        assert core.maxmin(cls, arc, capacity, w, got) is True
        assert _bits(got) == _bits(free)
        bound = _bounds(seed, n, free, capacity, odd)
        try:
            want = _numpy(maxmin_rates, cls, arc, n, capacity, bound, weight=w)
        except AssertionError:  # a NaN or negative bound can stall the rounds: C stalls where numpy does
            assert odd
            with pytest.raises(AssertionError, match="no progress"):
                core.maxmin(cls, arc, capacity, w, np.zeros(n), bound)
            continue
        got = np.full(n, -7.0)
        assert core.maxmin(cls, arc, capacity, w, got, bound) is True
        assert _bits(got) == _bits(want), got - want
        if not odd:
            assert np.array_equal(want, maxmin_rates_full(cls, arc, n, capacity, bound, weight=w))
            assert (want <= bound).all()
        calls: list = []
        saved, maxmin._CORE = maxmin._CORE, _Counting(calls)
        try:
            routed = maxmin_rates(cls, arc, n, capacity, bound, weight=w)
        finally:
            maxmin._CORE = saved
        assert _bits(routed) == _bits(want)
        assert len(calls) == 1 and (calls[0][5] is None) == bool((bound == np.inf).all())
        bounded = _numpy_bounded(maxmin_rates, cls, arc, n, capacity, bound, weight=w)
        assert _bits(bounded) == _bits(want)


def _bits(x: np.ndarray) -> list[int]:
    """The float64s' bit patterns (-0.0 apart from 0.0, each NaN's payload)."""
    return np.ascontiguousarray(x, dtype=float).view(np.uint64).tolist()


def _numpy_bounded(fn, *args, **kw):
    """``fn`` with the C rounds on for solves without a finite bound and off for the others
    (``sim.maxmin._BOUNDED_CORE``)."""
    saved, maxmin._BOUNDED_CORE = maxmin._BOUNDED_CORE, False
    try:
        return fn(*args, **kw)
    finally:
        maxmin._BOUNDED_CORE = saved


class _Counting:
    """``sim._classcore`` with its ``maxmin`` calls counted."""

    def __init__(self, calls: list) -> None:
        self.calls = calls

    def maxmin(self, *args):
        self.calls.append(args)
        return core.maxmin(*args)


def test_bounds_the_c_rounds_leave_to_numpy():
    """Fewer bounds than flows, crossings not sorted by flow, a bound array of two dimensions: the C
    rounds decline (or are not asked), and maxmin_rates answers or refuses as the numpy rounds do; more
    bounds than flows: the first ones, as numpy reads them."""
    capacity = np.array([10.0, 2.0])
    flow, arc = np.array([0, 1, 1]), np.array([0, 0, 1])
    out = np.zeros(2)
    assert core.maxmin(flow, arc, capacity, None, out, np.array([1.0])) is False
    for fn in (maxmin_rates, lambda *a: _numpy(maxmin_rates, *a)):
        with pytest.raises(IndexError):
            fn(flow, arc, 2, capacity, np.array([1.0]))
    longer = np.array([3.0, np.inf, 0.5])
    assert core.maxmin(flow, arc, capacity, None, out, longer) is True
    assert out.tolist() == [3.0, 2.0]
    assert np.array_equal(
        maxmin_rates(flow, arc, 2, capacity, longer), _numpy(maxmin_rates, flow, arc, 2, capacity, longer)
    )
    unsorted = (np.array([1, 0, 1]), np.array([1, 0, 0]))
    assert core.maxmin(*unsorted, capacity, None, out, np.array([4.0, 1.0])) is False
    assert maxmin_rates(*unsorted, 2, capacity, np.array([4.0, 1.0])).tolist() == [4.0, 1.0]
    assert maxmin_rates(*unsorted, 2, capacity, [4.0, 1.0]).tolist() == [4.0, 1.0]  # a list, as numpy takes it
    with pytest.raises(TypeError):
        core.maxmin(flow, arc, capacity, None, out, np.array([1, 2]))
    assert core.maxmin(flow, arc, capacity, None, out, None) is True
    assert out.tolist() == [8.0, 2.0]


def test_a_bound_that_binds_in_a_later_round():
    """A bound that binds only once a first bottleneck has fixed other flows (so the bounded flow is
    fixed in the second round, by its bound), and bounds at a link's share exactly (fixed by the bound
    and by the link at once): C and numpy alike."""
    # link 0 (capacity 1) carries flow 0; link 1 (capacity 10) carries flows 0, 1, 2; flow 2 bounded at 5
    flow, arc = np.array([0, 0, 1, 2]), np.array([0, 1, 1, 1])
    capacity = np.array([1.0, 10.0])
    for bound in ([np.inf, np.inf, 5.0], [np.inf, np.inf, 4.5], [1.0, np.inf, 3.0], [0.0, 0.0, 0.0]):
        b = np.array(bound)
        want = _numpy(maxmin_rates, flow, arc, 3, capacity, b)
        got = np.zeros(3)
        assert core.maxmin(flow, arc, capacity, None, got, b) is True
        assert np.array_equal(got, want) and np.array_equal(want, maxmin_rates_full(flow, arc, 3, capacity, b))
    assert maxmin_rates(flow, arc, 3, capacity, np.array([np.inf, np.inf, 4.5])).tolist() == [1.0, 4.5, 4.5]


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
