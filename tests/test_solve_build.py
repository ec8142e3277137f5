"""The second round of the dataflow's wake-up (docs/performance-log.md, "The dataflow's wake-up, second round"):
full solves whose bounds bound no flow run in C (``sim.maxmin._UNBOUNDED_CORE``), and the dataflow
builder spreads its per-call constants and drops missing edges once, in ``build``. Each is held to the
lines it replaced: the numpy rounds with the bounds, and the builder as it was (:class:`_OldBuilder`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.maxmin as maxmin
from sim import simulate
from sim.algorithms.double_binary_tree import dbt_dataflow, nccl_dtree
from sim.algorithms.tree import tree_dataflow
from sim.dataflow import _ID, ARRIVED, HELD, Dataflow, DataflowBuilder
from sim.maxmin import maxmin_rates
from sim.topology import dgx, leaf_spine

from .test_classcore import _problem
from .test_message_engine import _same

core = pytest.importorskip("sim._classcore")


@given(seed=st.integers(0, 2**32 - 1), chain=st.integers(0, 12), ties=st.booleans(), bounded=st.integers(0, 3))
@settings(max_examples=200, deadline=None)
def test_inf_bounds_are_solved_in_c_as_the_numpy_rounds_solve_them(seed, chain, ties, bounded):
    """Bounds of ``inf`` everywhere: the C rounds without bounds, the rates of the numpy rounds with those
    bounds to the bit; any finite bound: the C rounds with the bounds (``sim.maxmin._BOUNDED_CORE``), the
    same rates again."""
    flow, arc, n, capacity, _ = _problem(seed, chain, ties)
    rng = np.random.default_rng(seed)
    bound = np.full(n, np.inf)
    if bounded:  # some flows bounded, at or below their share and above it
        bound[rng.choice(n, size=min(bounded, n), replace=False)] = rng.choice([0.0, 0.5, 3.0, 1e12], min(bounded, n))
    calls: list[Any] = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(maxmin, "_CORE", _Counting(calls))
        got = maxmin_rates(flow, arc, n, capacity, bound)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(maxmin, "_UNBOUNDED_CORE", False)
        m.setattr(maxmin, "_BOUNDED_CORE", False)
        want = maxmin_rates(flow, arc, n, capacity, bound)
    assert np.array_equal(got, want), got - want
    assert len(calls) == 1 and (calls[0][5] is None) == (not bounded)


class _Counting:
    """``sim._classcore`` with its ``maxmin`` calls counted."""

    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def maxmin(self, *args: Any) -> Any:
        self.calls.append(args)
        return core.maxmin(*args)


SOLVED = [
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "double-binary-tree:chunks=8", "fast"),
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "double-binary-tree:chunks=8", "message"),
    (dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1), "ring:order=rank", "fast"),
    (dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1), "tree:chunks=4", "message"),
    (leaf_spine(4, 4, 1, "100Gbps", "50Gbps", "1us"), "halving-doubling", "message"),
]


@pytest.mark.parametrize("graph, algorithm, engine", SOLVED)
def test_the_runs_solve_in_c_and_give_the_numpy_rounds_results(monkeypatch, graph, algorithm, engine):
    """A whole run with the full solves in C and with the numpy rounds: the same results, bit for bit,
    and the same events (and the C rounds do run)."""
    calls: list[Any] = []
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_CORE", _Counting(calls))
        got = simulate(graph, "allreduce", algorithm, 2**22 + 5, engine=engine)
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_UNBOUNDED_CORE", False)
        m.setattr(maxmin, "_BOUNDED_CORE", False)
        want = simulate(graph, "allreduce", algorithm, 2**22 + 5, engine=engine)
    _same(got, want)
    assert repr(got.time_s) == repr(want.time_s)
    assert (got.events, got.engine) == (want.events, want.engine)
    assert calls


class _OldBuilder(DataflowBuilder):
    """The builder's lines before this round: every column made in full per call, missing edges dropped
    per call."""

    def __init__(self, endpoints: int) -> None:
        super().__init__(endpoints)
        self._old: list[list[np.ndarray]] = [[] for _ in range(8)]

    def messages(self, src: Any, dst: Any, nbytes: float, *, reduce: bool, proc: Any, seg: Any, width: int = 1):
        src = np.asarray(src, dtype=np.int64).ravel()
        n = len(src)
        ids = np.arange(self.count, self.count + n, dtype=np.int64)
        self.count += n
        lo = np.broadcast_to(np.asarray(seg, dtype=np.int64), (n,))
        cols = (
            src,
            np.broadcast_to(np.asarray(dst, dtype=np.int64).ravel(), (n,)),
            np.full(n, float(nbytes)),
            np.full(n, float(nbytes) if reduce else 0.0),
            np.broadcast_to(np.asarray(proc, dtype=np.int64).ravel(), (n,)),
            np.full(n, bool(reduce)),
            lo,
            lo + width,
        )
        for store, col in zip(self._old, cols, strict=True):
            store.append(col)
        return ids

    @staticmethod
    def _edges(store: tuple[list[np.ndarray], ...], m: np.ndarray, on: np.ndarray, kind: int) -> None:
        m, on = np.broadcast_arrays(np.asarray(m, dtype=np.int64), np.asarray(on, dtype=np.int64))
        keep = (m >= 0) & (on >= 0)
        store[2 * kind].append(m[keep].astype(_ID))
        store[2 * kind + 1].append(on[keep].astype(_ID))

    _take = _edges  # (the edges handed over, as the lines took any)

    def build(self) -> Dataflow:
        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

        types = (np.int64, np.int64, float, float, np.int64, bool, np.int64, np.int64)
        src, dst, size, red, proc, comb, lo, hi = (cat(c, t) for c, t in zip(self._old, types, strict=True))

        def edges(store: tuple[list[np.ndarray], ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            sizes = [sum(len(part) for part in store[k]) for k in (0, 2)]
            kind = np.repeat(np.array([ARRIVED, HELD], dtype=np.int8), sizes)
            return cat(store[0] + store[2], _ID), cat(store[1] + store[3], _ID), kind

        return Dataflow(self.endpoints, src, dst, size, red, proc, comb, lo, hi, edges(self._deps), edges(self._gates))


_FIELDS = ("src", "dst", "nbytes", "reduce", "proc", "combine", "seg_lo", "seg_hi")


def _same_flow(got: Dataflow, want: Dataflow) -> None:
    for name in _FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    for mine, theirs in ((got.deps, want.deps), (got.gates, want.gates)):
        for a, b in zip(mine, theirs, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    for name in ("dep_count", "gate_count", "processed"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    for name in ("on_arrived", "on_held", "gate_on_arrived", "gate_on_held"):
        (p, (v,)), (q, (w,)) = getattr(got, name), getattr(want, name)
        assert np.array_equal(p, q) and np.array_equal(v, w), name


def _program(b: DataflowBuilder, seed: int) -> Dataflow:
    """Random calls of every form: arrays, lists and scalars, reductions and stores, widths, segments
    by message, edges broadcast from a scalar and with -1 (no edge) on either side."""
    rng = np.random.default_rng(seed)
    p = int(rng.integers(2, 9))
    for _ in range(int(rng.integers(1, 7))):
        n = int(rng.integers(1, 6))
        src = rng.integers(0, p, n)
        dst = int(rng.integers(0, p)) if rng.random() < 0.3 else rng.integers(0, p, n).tolist()
        seg = rng.integers(0, 5, n) if rng.random() < 0.5 else int(rng.integers(0, 5))
        b.messages(src, dst, float(rng.uniform(1, 1e6)), reduce=bool(rng.random() < 0.5), proc=src, seg=seg,
                   width=int(rng.integers(1, 4)))  # fmt: skip
    for _ in range(int(rng.integers(0, 12))):
        k = int(rng.integers(1, 6))
        m = rng.integers(-1, b.count, k)
        on = int(rng.integers(-1, b.count)) if rng.random() < 0.3 else rng.integers(-1, b.count, k)
        (b.after if rng.random() < 0.5 else b.gate)(m, on, int(rng.integers(0, 2)))
    return b.build()


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_the_builder_builds_what_it_built(seed):
    _same_flow(_program(DataflowBuilder(8), seed), _program(_OldBuilder(8), seed))


def test_the_trees_build_what_they_built(monkeypatch):
    """The double binary tree (its parents now taken from one pass over the ranks) and the tree, each
    with the builder as it was: the same program."""
    import sim.algorithms.double_binary_tree as dbt  # noqa: PLC0415
    import sim.algorithms.tree as tree  # noqa: PLC0415

    for p, chunks in ((2, 1), (7, 3), (16, 5), (33, 2)):
        got = dbt_dataflow(p, 2**20 + 1, chunks)
        with monkeypatch.context() as m:
            m.setattr(dbt, "DataflowBuilder", _OldBuilder)
            want = dbt_dataflow(p, 2**20 + 1, chunks)
        _same_flow(got, want)
        for t in range(2):  # tree t's reductions (segments t·chunks ..): its children to their parents
            up = (got.reduce > 0) & (got.seg_lo // chunks == t)
            parents = [nccl_dtree(p, r)[t][0] for r in range(p)]
            assert (
                list(zip(got.src[up].tolist(), got.dst[up].tolist(), strict=True))
                == [(r, u) for r, u in enumerate(parents) if u >= 0] * chunks
            )
        got = tree_dataflow(p, 2**20 + 1, chunks, root=p // 2)
        with monkeypatch.context() as m:
            m.setattr(tree, "DataflowBuilder", _OldBuilder)
            want = tree_dataflow(p, 2**20 + 1, chunks, root=p // 2)
        _same_flow(got, want)


def test_the_builder_copies_the_edges_it_is_given():
    """Edges given as arrays the caller changes afterwards are the edges as they were given."""
    b = DataflowBuilder(2)
    b.messages([0, 1, 0], [1, 0, 1], 8.0, reduce=False, proc=[1, 0, 1], seg=0)
    m, on = np.array([1, 2]), np.array([0, 0])
    b.after(m, on, ARRIVED)
    m[:] = -1
    on[:] = 1
    flow = b.build()
    assert flow.deps[0].tolist() == [1, 2] and flow.deps[1].tolist() == [0, 0]
