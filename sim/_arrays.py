"""Distinct values of large integer arrays, by sorting.

NumPy 2.4's ``np.unique(a)`` without ``return_*`` arguments goes through a hash table that is two
orders of magnitude slower than sorting on large arrays of distinct integers (1 M ranks: 2.2 s against
0.01 s on the 2-core machine of docs/performance-log.md); the fast path asks such questions about every
step of programs over a million ranks.
"""

from __future__ import annotations

import numpy as np

__all__ = ["all_distinct", "distinct", "floats", "ranges"]


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``values`` (``np.unique(values)``)."""
    s = np.sort(np.asarray(values).ravel())
    if len(s) <= 1:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def all_distinct(values: np.ndarray) -> bool:
    """Whether no value of ``values`` repeats (``len(np.unique(values)) == len(values)``)."""
    s = np.sort(np.asarray(values).ravel())
    return not bool((s[1:] == s[:-1]).any())


def ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The indices ``starts[i] .. starts[i] + lens[i] - 1`` of every ``i``, concatenated in order."""
    lens = np.asarray(lens, dtype=np.int64)
    ends = np.cumsum(lens)
    total = int(ends[-1]) if len(ends) else 0
    return np.arange(total) + np.repeat(np.asarray(starts, dtype=np.int64) - (ends - lens), lens)


def floats(values: np.ndarray | float, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` as float64s of ``shape``, read only: the array itself where it already is one (the
    fast paths hand over per-message sizes; ``np.broadcast_to`` costs microseconds a call), else
    broadcast."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64 and values.shape == shape:
        return values
    return np.broadcast_to(np.asarray(values, dtype=float), shape)
