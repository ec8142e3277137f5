"""Max-min fair rates by progressive filling, vectorized with numpy.

All unfixed flows grow at the same rate (the *level*); link ``l`` saturates at level
``(capacity_l - fixed_l) / unfixed_l``. The smallest such level (or a flow's own upper bound, if smaller)
fixes every flow crossing a saturated link at that level; repeat until every flow is fixed. Each round is
O(entries) numpy work, and there are as many rounds as distinct bottleneck levels.

>>> import numpy as np
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> maxmin_rates(np.array([0, 1, 1]), np.array([0, 0, 1]), 2, np.array([10.0, 2.0]))
array([8., 2.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["maxmin_rates"]

_RTOL = 1e-12


def maxmin_rates(
    entry_flow: np.ndarray,
    entry_arc: np.ndarray,
    nflows: int,
    capacity: np.ndarray,
    bound: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rate of each flow.

    Parameters
    ----------
    entry_flow, entry_arc : numpy.ndarray
        One entry per (flow, arc) crossing: flow index (0..nflows-1) and arc index into ``capacity``.
    nflows : int
        Number of flows; every flow must cross at least one arc or carry a finite bound.
    capacity : numpy.ndarray
        Capacity of every arc (bytes/s), indexed by arc.
    bound : numpy.ndarray, optional
        Per-flow upper bound on its rate (``inf`` for none).
    """
    rate = np.zeros(nflows)
    if nflows == 0:
        return rate
    arcs, local = np.unique(entry_arc, return_inverse=True)
    remaining = capacity[arcs].astype(float, copy=True)
    count = np.bincount(local, minlength=len(arcs)).astype(float)
    fixed = np.zeros(nflows, dtype=bool)
    flow_bound = np.full(nflows, np.inf) if bound is None else np.asarray(bound, dtype=float)
    left = nflows
    while left:
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, remaining / count, np.inf)
        level = share.min() if len(share) else np.inf
        free_bounds = np.where(fixed, np.inf, flow_bound)
        level = min(level, free_bounds.min())
        if not np.isfinite(level):
            raise ValueError("a flow crosses no link and has no bound: its rate is unbounded")
        level = max(level, 0.0)
        cut = level * (1 + _RTOL)
        saturated = share <= cut
        newly = np.zeros(nflows, dtype=bool)
        newly[entry_flow[saturated[local]]] = True
        newly |= free_bounds <= cut
        newly &= ~fixed
        rate[newly] = level
        crossing = newly[entry_flow]
        used = np.bincount(local[crossing], minlength=len(arcs))
        remaining -= used * level
        count -= used
        np.maximum(remaining, 0.0, out=remaining)
        fixed |= newly
        left -= int(newly.sum())
    return rate
