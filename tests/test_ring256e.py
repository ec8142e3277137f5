"""The congested fast path's work on ring-rank-256, fifth round (docs/performance-log.md, "ring256e"): the core's
queue of arrivals an array in order (not a binary heap), an arrival's entry carrying its bucket's slot, a bucket
of several handed to ``_done`` as it lies, ``_after``'s first test skipped while nothing changed, the environment's
attributes remembered across the core's own clock writes, ``_begin`` of one phase in one pass, and
``FastExecutor._widen`` in C (``_ratecore.fast_widen``): the same simulated time, events and flows as the Python
lines (``sim.fastpath._FAST_CORE`` off), and the same widened arrays as the numpy lines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sim.fastpath as fastpath
from sim.fastpath import FastExecutor
from sim.rates import _CORE
from tests.test_ring256c import _run

pytestmark = pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")


@pytest.mark.parametrize(
    ("algorithm", "size", "hosts", "kw", "widened"),
    [
        ("ring:order=rank", 2**24 + 3, 4, {"gamma": 1e-11}, 1),  # (the reductions' timers)
        ("ring:order=rank", 2**26, 4, {"gamma": 2e-11}, 1),  # (a steady state: the buckets in flight moved)
        ("ring:order=rank,channels=2", 2**25, 4, {}, 0),  # (buckets of several messages: handed over as they lie)
        ("halving-doubling", 2**23 + 5, 4, {"gamma": 1e-11}, 0),  # (phases of one step each)
        ("ring:order=rank", 2**25, 8, {}, 3),  # (the window doubled three times, in C)
        ("ring:order=rank", 2**26 + 9, 8, {"dtype": "half"}, 3),
    ],
)
def test_the_core_gives_the_python_lines_results(
    algorithm: str, size: float, hosts: int, kw: dict[str, Any], widened: int
) -> None:
    calls: list[tuple[int, ...]] = []
    widen = _CORE.fast_widen

    def counted(*args: Any) -> Any:
        calls.append(args[3].shape)
        return widen(*args)

    off, _ = _run(False, algorithm, size, hosts=hosts, **kw)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_CORE, "fast_widen", counted)
        on, private = _run(True, algorithm, size, hosts=hosts, **kw)
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
    assert on.engine == "fast:events" and len(calls) == widened
    if algorithm.startswith("ring:order=rank"):
        assert private > 100


def _widened(step: np.ndarray, count: np.ndarray, last: np.ndarray, core: bool) -> FastExecutor:
    ex = FastExecutor.__new__(FastExecutor)
    ex.window, ex.step, ex.early_count, ex.early_last = count.shape[1], step, count, last
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fastpath, "_FAST_CORE", core)
        ex._widen()
    return ex


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("old", [1, 2, 3, 8, 64])
def test_fast_widen_gives_the_numpy_lines_arrays(seed: int, old: int) -> None:
    rng = np.random.default_rng(seed)
    e = int(rng.integers(1, 40))
    step = rng.integers(0, 7 * old + 3, size=e).astype(np.int64)
    filled = rng.random((e, old)) < 0.5
    count = np.where(filled, rng.integers(1, 9, size=(e, old)), 0).astype(np.int64)
    last = np.where(filled, rng.random((e, old)) * 10, -np.inf)
    want, got = _widened(step, count, last, False), _widened(step, count, last, True)
    assert got.window == want.window == 2 * old
    for a, b in ((got.early_count, want.early_count), (got.early_last, want.early_last)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.flags.c_contiguous
        np.testing.assert_array_equal(a, b)


def test_fast_widen_leaves_rows_not_side_by_side_to_the_numpy_lines() -> None:
    step = np.array([0, 3, 5], dtype=np.int64)
    count = np.arange(24, dtype=np.int64).reshape(3, 8)[:, ::2]  # (columns 16 bytes apart)
    last = np.arange(24, dtype=np.float64).reshape(3, 8)[:, ::2]
    out_c, out_l = np.empty((3, 8), dtype=np.int64), np.empty((3, 8))
    assert _CORE.fast_widen(step, count, last, out_c, out_l) is False
    want, got = _widened(step, count, last, False), _widened(step, count, last, True)
    np.testing.assert_array_equal(got.early_count, want.early_count)
    np.testing.assert_array_equal(got.early_last, want.early_last)
    with pytest.raises(ValueError, match="shapes differ"):
        _CORE.fast_widen(step[:2], np.ascontiguousarray(count), np.ascontiguousarray(last), out_c, out_l)


def _finishing(core: bool) -> list[tuple[float, int, float]]:
    """(now, finished, end_time) at each ``_after`` that looks at a new step of the reference endpoint."""
    seen: list[tuple[float, int, float]] = []
    after = FastExecutor._after

    def looked(self: Any) -> None:
        if int(self.step[self.ref]) != self._seen0:
            seen.append((self.env.now, self.finished, self.end_time))
        after(self)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(FastExecutor, "_after", looked)
        _run(core, "ring:order=rank", 2**25, hosts=8, gamma=1e-11)
    return seen


def test_finished_endpoints_counted_in_c_as_the_python_lines_count_them() -> None:
    """The core's _finished_one lines (all but the last endpoint's): ``finished`` and ``end_time`` at each look
    at the state are ones the Python lines have at the same instant, up to every endpoint finished."""
    lines: dict[float, set[tuple[int, float]]] = {}
    for now, finished, end in _finishing(False):
        lines.setdefault(now, set()).add((finished, end))
    core = _finishing(True)
    assert all((finished, end) in lines.get(now, ()) for now, finished, end in core)
    assert max(finished for _, finished, _ in core) == 64 and len({end for _, _, end in core}) > 5
