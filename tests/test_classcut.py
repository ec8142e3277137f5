"""A split of flow classes in C (sim/_classcore.c ``cut``, :func:`sim.classes._parts`) against its numpy lines:
the same parts, members, counted crossings and listed crossings on random classes -- signatures that tie,
wrap around 2**64 and order members across classes -- and on every split of hashed parameter-server runs,
which end at the same time to the bit as with no C at all."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.classes as classes
from sim import maxmin

from .test_classcore_settle import CASES, _run, _same

core = pytest.importorskip("sim._classcore")
_PARTS = classes._parts


def _numpy_parts(*args):
    """:func:`sim.classes._parts` with no C (its numpy lines, and :func:`sim.classes._counted`'s)."""
    saved, maxmin._CORE = maxmin._CORE, None
    try:
        return _PARTS(*args)
    finally:
        maxmin._CORE = saved


def _assert_same(got, want):
    """Two results of :func:`sim.classes._parts`, array by array, dtypes too."""
    got_arrays, want_arrays = ([a for x in r for a in (x if isinstance(x, tuple) else (x,))] for r in (got, want))
    assert len(got_arrays) == len(want_arrays) == 9
    for g, w in zip(got_arrays, want_arrays, strict=True):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w)


def _classes(seed: int, n: int, arcs_n: int, small_hash: bool):
    """``n`` random classes over ``arcs_n`` arcs: each member crosses a few arcs at a few hops (in a random
    order, sometimes an arc twice), some arcs saturated; the arcs' hashes the executor's, or a few small
    and huge numbers (signatures that tie across different arcs and wrap around)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, int(rng.choice([5, 40, 150])), n)  # up to 150: the signatures table grows
    which, arcs, hop, counts = [], [], [], []
    for size in sizes.tolist():
        k = rng.integers(0, 6, size)
        w = np.repeat(np.arange(size), k)
        order = rng.permutation(len(w)) if rng.random() < 0.5 else np.arange(len(w))
        which.append(w[order])
        arcs.append(rng.integers(0, arcs_n, len(w)))
        hop.append(rng.integers(0, int(rng.integers(1, 5)), len(w)))
        counts.append(len(w))
    saturated = rng.random(arcs_n) < rng.uniform(0.1, 0.9)
    x = (np.arange(arcs_n, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    arc_hash = (x ^ (x >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    if small_hash:
        arc_hash = rng.choice(np.array([0, 1, 2, 2**63, 2**64 - 1], dtype=np.uint64), arcs_n)
    members = rng.integers(0, 10**9, int(sizes.sum()))
    return (
        sizes,
        np.array(counts, dtype=np.int64),
        np.concatenate(which).astype(np.int64),
        np.concatenate(arcs).astype(np.int64),
        np.concatenate(hop).astype(np.int64),
        members,
        saturated,
        arc_hash,
    )


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 8),
    arcs_n=st.integers(1, 600),
    small_hash=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_the_c_split_is_the_numpy_split(seed, n, arcs_n, small_hash):
    args = _classes(seed, n, arcs_n, small_hash)
    want = _numpy_parts(*args)
    for _ in range(2):  # twice: the C scratch (signatures' table, cell counts) left clean by the first call
        _assert_same(classes._parts(*args), want)


def test_a_class_crossing_nothing_is_one_part():
    args = _classes(5, 3, 1, False)
    args = (*args[:6], np.zeros(1, dtype=bool), args[7])  # nothing saturated: every signature 0
    got = classes._parts(*args)
    _assert_same(got, _numpy_parts(*args))
    assert got[0].tolist() == [1, 1, 1]


def test_the_c_split_refuses_arrays_out_of_shape():
    sizes, counts, which, arcs, hop, members, saturated, arc_hash = _classes(1, 2, 50, False)
    i64 = np.empty(4 * len(arcs) + 4 * len(members) + 8, dtype=np.int64)
    outs = (i64[:2], i64[: len(members) + 1], i64[: len(members)], i64[: len(members)])
    outs += (i64[: len(arcs)], i64[: len(arcs)], np.empty(len(arcs)), i64[: len(members) + 1])
    outs += (i64[: len(arcs)], i64[: len(arcs)], i64[: len(arcs)])
    h = arc_hash.view(np.int64)
    bad = which.copy()
    bad[0] = sizes[0]  # a member beyond its class
    with pytest.raises(ValueError, match="out of shape"):
        core.cut(sizes, counts, bad, arcs, hop, members, saturated, h, 50, *outs)
    with pytest.raises(ValueError, match="out of shape"):  # the saturated mask one arc short
        core.cut(sizes, counts, which, arcs, hop, members, saturated[:-1], h, 50, *outs)
    with pytest.raises(ValueError, match="out of shape"):  # no room for the listed crossings
        core.cut(sizes, counts, which, arcs, hop, members, saturated, h, 50, *outs[:-1], outs[-1][:-1])
    with pytest.raises(TypeError, match="20 arguments|cut\\("):
        core.cut(sizes)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3], CASES[5]], ids=[0, 2, 3, 5])
def test_every_split_of_a_run_is_the_numpy_split(monkeypatch, case):
    """Hashed parameter-server runs that split classes: every split's C arrays are the numpy lines' on the
    run's own classes, and the run ends as it does with no C at all."""
    calls = []

    def both(*args):
        got = _PARTS(*args)
        _assert_same(got, _numpy_parts(*args))
        calls.append(len(got[0]))
        return got

    with monkeypatch.context() as m:
        m.setattr(classes, "_parts", both)
        got = _run(case)
    assert calls, "the run split nothing"
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_CORE", None)
        _same(_run(case), got)
