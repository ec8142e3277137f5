"""Max-min fair rates by progressive filling, vectorized with numpy.

All unfixed flows grow at the same rate (the *level*); link ``l`` saturates at level
``(capacity_l - fixed_l) / unfixed_l``, its *share*. Textbook progressive filling fixes the flows of the
link with the smallest share, then repeats -- one round per distinct bottleneck level, which is hundreds
of rounds when hundreds of links saturate at different levels (a parameter server's fan-ins).

This implementation fixes, in one round, every link whose share is the smallest along every one of its
unfixed flows' paths (and every flow whose own upper bound is below all of its links' shares). Such a link
saturates at exactly its share whatever happens elsewhere: shares only grow as other flows are fixed
below them, and none of its flows can be stopped earlier by a tighter link. The allocation is the unique
max-min fair one, as the sequential algorithm gives (tests/test_engine.py checks it against the
definition and against :func:`maxmin_rates_sequential`); rounds drop to the length of the longest chain
of bottlenecks, usually one to three. Each round is O(entries) numpy work.

>>> import numpy as np
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> maxmin_rates(np.array([0, 1, 1]), np.array([0, 0, 1]), 2, np.array([10.0, 2.0]))
array([8., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._cores import built, chosen

#: the rounds in C (sim/_classcore.c), or None: the numpy rounds below (sim._cores)
_CORE: Any = chosen(built("_classcore"))

__all__ = ["maxmin_rates", "maxmin_rates_full", "maxmin_rates_sequential"]

_RTOL = 1e-12  # (sim/_classcore.c has it too)
#: bounds that bound no flow (all ``inf``: :meth:`sim.rates.Rates._solve_all` passes every active flow's)
#: solved as no bounds, in C; False: the numpy rounds with the bounds, the reference (tests)
_UNBOUNDED_CORE = True
#: solves with a finite bound in C too (the same rounds with the bounds); False: the numpy rounds, the
#: reference (tests)
_BOUNDED_CORE = True


def _prepare(entry_flow: np.ndarray, entry_arc: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, ...]:
    if len(entry_flow) > 1 and (np.diff(entry_flow) < 0).any():
        order = np.argsort(entry_flow, kind="stable")
        entry_flow, entry_arc = entry_flow[order], entry_arc[order]
    if len(capacity) <= 4 * len(entry_arc):
        # few links for many crossings: index the links directly instead of sorting the crossings
        return entry_flow, entry_arc, capacity.astype(float, copy=True), len(capacity)
    arcs, local = np.unique(entry_arc, return_inverse=True)
    return entry_flow, local, capacity[arcs].astype(float, copy=True), len(arcs)


def maxmin_rates(
    entry_flow: np.ndarray,
    entry_arc: np.ndarray,
    nflows: int,
    capacity: np.ndarray,
    bound: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rate of each flow.

    Parameters
    ----------
    entry_flow, entry_arc : numpy.ndarray
        One entry per (flow, arc) crossing: flow index (0..nflows-1) and arc index into ``capacity``.
        Every flow must have at least one entry.
    nflows : int
        Number of flows.
    capacity : numpy.ndarray
        Capacity of every arc (bytes/s), indexed by arc.
    bound : numpy.ndarray, optional
        Per-flow upper bound on its rate (``inf`` for none).
    weight : numpy.ndarray, optional
        Per entry, how many flows of a *class* cross that arc (:mod:`sim.classes`): flow ``i`` then
        stands for a class whose members all get its rate, and an arc carries ``weight`` times the
        class's rate. Default 1 (every flow on its own).

    Each round runs over the crossings of the flows not yet fixed only: most flows are fixed in the
    first rounds, and the chains of bottlenecks behind them (a parameter server's fan-ins, one shard
    per rank) then cost what is left. The rounds and their arithmetic are :func:`maxmin_rates_full`'s
    (every round over every crossing), so the rates are the same to the bit. They run in C where
    ``sim._classcore`` is built (the same operations in the same order: the same rates to the bit,
    tests/test_classcore.py), with the bounds where one is finite and as no bounds where none is (an
    ``inf`` bound fixes no flow, as no bound does); the numpy rounds below are the reference and the
    fallback.
    """
    rate = np.zeros(nflows)
    if nflows == 0:
        return rate
    if bound is not None and _CORE is not None and _UNBOUNDED_CORE and _unbounded(bound):
        bound = None  # no flow bounded: the same rounds (an ``inf`` bound fixes no flow), in C
    if _CORE is not None and (bound is None or _BOUNDED_CORE):
        flow = np.ascontiguousarray(entry_flow, dtype=np.int64)
        arc = np.ascontiguousarray(entry_arc, dtype=np.int64)
        w = None if weight is None else np.ascontiguousarray(weight, dtype=float)
        b = None if bound is None else np.ascontiguousarray(bound, dtype=float)
        if (b is None or b.ndim == 1) and _CORE.maxmin(
            flow, arc, np.ascontiguousarray(capacity, dtype=float), w, rate, b
        ):
            return rate
    flow, local, remaining, narcs, weight = _prepared(entry_flow, entry_arc, nflows, capacity, weight)
    count = np.bincount(local, weights=weight, minlength=narcs).astype(float)
    flow_bound = None if bound is None else np.asarray(bound, dtype=float)
    ids = np.arange(nflows)  # the flows not yet fixed; ``pos``: each live crossing's position among them
    lens = np.bincount(flow, minlength=nflows)
    pos = flow
    share = np.empty(narcs)
    while True:
        starts = np.cumsum(lens) - lens
        share.fill(np.inf)
        np.divide(remaining, count, out=share, where=count > 0)
        entry_share = share[local]
        tightest = np.minimum.reduceat(entry_share, starts)
        if flow_bound is not None:
            tightest = np.minimum(tightest, flow_bound[ids])
        # a link is settled when, for every unfixed flow on it, no other constraint is tighter
        slack = entry_share > tightest[pos] * (1 + _RTOL)
        settled = (np.bincount(local[slack], minlength=narcs) == 0) & (count > 0)
        newly = np.zeros(len(ids), dtype=bool)
        newly[pos[settled[local]]] = True
        if flow_bound is not None:
            newly |= flow_bound[ids] <= tightest * (1 + _RTOL)
        if not newly.any():  # pragma: no cover - impossible
            raise AssertionError("max-min filling made no progress")
        given = np.maximum(tightest, 0.0)
        rate[ids[newly]] = given[newly]
        gone = newly[pos]
        at = local[gone]
        w = None if weight is None else weight[gone]
        used = given[pos[gone]] if w is None else given[pos[gone]] * w
        remaining -= np.bincount(at, weights=used, minlength=narcs)
        np.maximum(remaining, 0.0, out=remaining)
        count -= np.bincount(at, weights=w, minlength=narcs)
        if newly.all():
            return rate
        keep, stay = ~gone, ~newly
        ids, lens = ids[stay], lens[stay]
        local = local[keep]
        weight = None if weight is None else weight[keep]
        pos = (np.cumsum(stay) - 1)[pos[keep]]


def _unbounded(bound: np.ndarray) -> bool:
    """Whether no flow of ``bound`` has a finite upper bound."""
    return bool((np.asarray(bound, dtype=float) == np.inf).all())


def _prepared(
    entry_flow: np.ndarray, entry_arc: np.ndarray, nflows: int, capacity: np.ndarray, weight: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]:
    """The crossings sorted by flow (weights with them), arcs numbered locally where few are crossed;
    refuses a flow that crosses no arc."""
    entry_flow = np.asarray(entry_flow)
    if weight is not None:
        weight = np.asarray(weight, dtype=float)
        if len(entry_flow) > 1 and (np.diff(entry_flow) < 0).any():
            order = np.argsort(entry_flow, kind="stable")
            entry_flow, entry_arc, weight = entry_flow[order], np.asarray(entry_arc)[order], weight[order]
    flow, local, remaining, narcs = _prepare(entry_flow, np.asarray(entry_arc), capacity)
    # sorted: every flow 0..nflows-1 present iff the first is 0, the last nflows-1, and it steps nflows-1 times
    if not len(flow) or flow[0] != 0 or flow[-1] != nflows - 1 or np.count_nonzero(np.diff(flow)) != nflows - 1:
        raise ValueError("every flow must cross at least one link")
    return flow, local, remaining, narcs, weight


def maxmin_rates_full(
    entry_flow: np.ndarray,
    entry_arc: np.ndarray,
    nflows: int,
    capacity: np.ndarray,
    bound: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`maxmin_rates` with every round over every crossing (fixed flows' masked out): the
    reference its narrowing rounds are held to, bit for bit (tests)."""
    rate = np.zeros(nflows)
    if nflows == 0:
        return rate
    flow, local, remaining, narcs, weight = _prepared(entry_flow, entry_arc, nflows, capacity, weight)
    starts = np.flatnonzero(np.concatenate(([True], flow[1:] != flow[:-1])))  # flow is sorted
    count = np.bincount(local, weights=weight, minlength=narcs).astype(float)
    flow_bound = np.full(nflows, np.inf) if bound is None else np.asarray(bound, dtype=float)
    fixed = np.zeros(nflows, dtype=bool)
    live = np.ones(len(flow), dtype=bool)  # entries of unfixed flows
    while True:
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, remaining / count, np.inf)
        entry_share = np.where(live, share[local], np.inf)
        tightest = np.minimum(np.minimum.reduceat(entry_share, starts), flow_bound)
        tightest[fixed] = np.inf
        # a link is settled when, for every unfixed flow on it, no other constraint is tighter
        slack = live & (share[local] > tightest[flow] * (1 + _RTOL))
        settled = np.bincount(local[slack], minlength=narcs) == 0
        settled &= count > 0
        on_settled = np.zeros(nflows, dtype=bool)
        on_settled[flow[live & settled[local]]] = True
        by_bound = ~fixed & (flow_bound <= tightest * (1 + _RTOL))
        newly = (on_settled | by_bound) & ~fixed
        if not newly.any():
            if fixed.all():
                break
            raise AssertionError("max-min filling made no progress")  # pragma: no cover - impossible
        rate[newly] = np.maximum(tightest[newly], 0.0)
        gone = newly[flow]
        w = None if weight is None else weight[gone]
        used = np.bincount(
            local[gone], weights=rate[flow[gone]] if w is None else rate[flow[gone]] * w, minlength=narcs
        )
        remaining -= used
        np.maximum(remaining, 0.0, out=remaining)
        count -= np.bincount(local[gone], weights=w, minlength=narcs)
        live &= ~gone
        fixed |= newly
        if fixed.all():
            break
    return rate


def maxmin_rates_sequential(
    entry_flow: np.ndarray,
    entry_arc: np.ndarray,
    nflows: int,
    capacity: np.ndarray,
    bound: np.ndarray | None = None,
) -> np.ndarray:
    """Textbook progressive filling, one bottleneck level per round (the reference for tests)."""
    rate = np.zeros(nflows)
    if nflows == 0:
        return rate
    flow, local, remaining, narcs = _prepare(np.asarray(entry_flow), np.asarray(entry_arc), capacity)
    count = np.bincount(local, minlength=narcs).astype(float)
    fixed = np.zeros(nflows, dtype=bool)
    flow_bound = np.full(nflows, np.inf) if bound is None else np.asarray(bound, dtype=float)
    while not fixed.all():
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, remaining / count, np.inf)
        level = min(share.min() if len(share) else np.inf, np.where(fixed, np.inf, flow_bound).min())
        cut = level * (1 + _RTOL)
        newly = np.zeros(nflows, dtype=bool)
        newly[flow[(share <= cut)[local]]] = True
        newly |= np.where(fixed, np.inf, flow_bound) <= cut
        newly &= ~fixed
        rate[newly] = level
        gone = newly[flow]
        used = np.bincount(local[gone], minlength=narcs)
        remaining -= used * level
        count -= used
        np.maximum(remaining, 0.0, out=remaining)
        fixed |= newly
    return rate
