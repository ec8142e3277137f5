"""The congested fast path's work on ring-rank-256 (docs/performance-log.md, "ring256"): FastExecutor._widen's
whole-row doubling held to the element-wise gather and scatter it replaced."""

from __future__ import annotations

import numpy as np
import pytest

from sim.fastpath import FastExecutor


def _widen_by_element(step: np.ndarray, count: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The window doubled as it was before: count[r, (step[r] + j) % new] = early_count[r, (step[r] + j) % old]."""
    e, old = count.shape
    new = old * 2
    ranks = np.arange(e)[:, None]
    future = step[:, None] + np.arange(old)[None, :]
    out_count = np.zeros((e, new), dtype=np.int64)
    out_last = np.full((e, new), -np.inf)
    to = (ranks * new + future % new).ravel()
    at = (ranks * old + future % old).ravel()
    out_count.ravel()[to] = count.ravel()[at]
    out_last.ravel()[to] = last.ravel()[at]
    return out_count, out_last


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("old", [1, 2, 8, 64])
def test_widen_matches_the_element_wise_doubling(seed: int, old: int) -> None:
    rng = np.random.default_rng(seed)
    e = int(rng.integers(1, 40))
    ex = FastExecutor.__new__(FastExecutor)
    ex.window = old
    ex.step = rng.integers(0, 5 * old + 3, size=e).astype(np.int64)
    filled = rng.random((e, old)) < 0.4
    ex.early_count = np.where(filled, rng.integers(1, 9, size=(e, old)), 0).astype(np.int64)
    ex.early_last = np.where(filled, rng.random((e, old)) * 10, -np.inf)
    want_count, want_last = _widen_by_element(ex.step, ex.early_count, ex.early_last)
    ex._widen()
    assert ex.window == 2 * old
    for got, want in ((ex.early_count, want_count), (ex.early_last, want_last)):
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
