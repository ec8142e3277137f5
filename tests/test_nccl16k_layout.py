"""The tree lags of NCCL's schedules (sim.nccl.layout.lags_up / lags_down, computed a tree level at a
time) against their definitions, node by node, on random forests."""

from __future__ import annotations

import numpy as np
import pytest

from sim.nccl.layout import lags_down, lags_up


def _forest(rng: np.random.Generator, n: int) -> list[int]:
    """A random forest on n nodes, numbered in no particular order."""
    parent = [-1 if v == 0 or rng.random() < 0.1 else int(rng.integers(0, v)) for v in range(n)]
    perm = rng.permutation(n)
    inv = np.argsort(perm)
    return [-1 if parent[perm[v]] < 0 else int(inv[parent[perm[v]]]) for v in range(n)]


def _up(parent: list[int], first: int, v: int) -> int:
    kids = [c for c, u in enumerate(parent) if u == v]
    return first if not kids else max(_up(parent, first, c) for c in kids) + 1


def _down(parent: list[int], start: np.ndarray, v: int) -> int:
    return int(start[v]) - 1 if parent[v] < 0 else _down(parent, start, parent[v]) + 1


@pytest.mark.parametrize("seed", range(40))
def test_lags_follow_their_definitions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    parent = _forest(rng, n)
    first = int(rng.integers(0, 3))
    lag, done = lags_up(parent, first)
    assert lag.tolist() == [_up(parent, first, v) for v in range(n)]
    assert done == max(_up(parent, first, v) for v in range(n) if parent[v] < 0)
    start = rng.integers(0, 9, n)
    assert lags_down(parent, start).tolist() == [_down(parent, start, v) for v in range(n)]
