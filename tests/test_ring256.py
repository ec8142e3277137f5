"""The congested fast path's work on ring-rank-256 (docs/performance-log.md, "ring256"): FastExecutor._widen's
whole-row doubling held to the element-wise gather and scatter it replaced."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sim.fastpath as fastpath
from sim import simulate
from sim.fastpath import FastExecutor
from sim.rates import _CORE
from sim.topology import dgx


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


def _private_by_message(arrivals: dict[float, list[tuple[Any, ...]]]) -> tuple[np.ndarray, ...]:
    """FastExecutor._in_flight_private as it was: four small arrays per message, concatenated."""
    whens, srcs, steps, pids = [], [], [], []
    for when, bucket in arrivals.items():
        for src, _dst, fstep, pid, _nbytes in bucket:
            whens.append(np.full(np.size(src), when))
            srcs.append(np.atleast_1d(src))
            steps.append(np.atleast_1d(fstep))
            pids.append(np.atleast_1d(pid))
    if not whens:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0), empty, empty, empty
    return np.concatenate(whens), np.concatenate(srcs), np.concatenate(steps), np.concatenate(pids)


def _message(rng: np.random.Generator) -> tuple[Any, ...]:
    kind = int(rng.integers(0, 4))
    n = int(rng.integers(1, 5))
    cols = [rng.integers(0, 1000, size=n) for _ in range(5)]
    if kind == 0:  # one message of Python ints
        return tuple(int(c[0]) for c in cols)
    if kind == 1:  # numpy scalars
        return tuple(c[0] for c in cols)
    if kind == 2:  # the compiled core's batches: lists
        return tuple(c.tolist() for c in cols)
    return tuple(cols)  # arrays


@pytest.mark.parametrize("seed", [*range(8), None])
def test_in_flight_private_matches_the_per_message_arrays(seed: int | None) -> None:
    rng = np.random.default_rng(seed)
    arrivals = (
        {}
        if seed is None
        else {
            float(rng.random()) * 1e-3: [_message(rng) for _ in range(int(rng.integers(1, 6)))]
            for _ in range(int(rng.integers(0, 12)))
        }
    )
    ex = FastExecutor.__new__(FastExecutor)
    ex._core = None
    ex._arrivals = arrivals
    got, want = ex._in_flight_private(), _private_by_message(arrivals)
    assert len(got) == len(want) == 4
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_the_cores_digest_counts_the_draining_flows_in_place(monkeypatch: pytest.MonkeyPatch, gamma: float) -> None:
    """Fast.digest where the network's ``_active_arr`` is None counts the executor's draining flows from
    ``_is_active`` in place (no flatnonzero, the property not read): the same digest as the Python lines'
    (made after it, so that the core's call sees the network as the run left it)."""
    digests: list[tuple[bool, bool]] = []
    after = fastpath.FastExecutor._after

    def checked(self: Any) -> None:
        """The core's digest of the state now (an extra call: it changes nothing) beside the Python lines'."""
        if self._core is not None:
            s0, net = int(self.step[self.ref]), self.net
            in_place = net._active_arr is None
            got = self._core.digest(s0, fastpath._FINISHED)
            assert (net._active_arr is None) == in_place  # (the property not read: nothing cached)
            active, waiting = net.in_flight(self.owner)
            private = sum(np.size(b[0]) for bucket in self._arrivals.values() for b in bucket) + self._core.held()
            relative = np.where(self.step < self.total, self.step - s0, fastpath._FINISHED)
            key = (relative.tobytes(), self.send_left.tobytes(), self.recv_left.tobytes())
            digests.append((in_place and len(active) > 0, got == hash((*key, (len(active), len(waiting), private)))))
        after(self)

    monkeypatch.setattr(fastpath.FastExecutor, "_after", checked)
    simulate(
        dgx(hosts=4, gpus_per_host=8, ecmp="hash"),
        "allreduce",
        "ring:order=rank",
        2**22 + 7,
        engine="fast",
        gamma=gamma,
    )
    assert sum(in_place for in_place, _ in digests) > 2  # (draining flows counted in place)
    assert all(same for _, same in digests)
