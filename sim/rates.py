"""Rates of the active flows: max-min fairness, computed as little as possible.

:class:`Rates` hears which flows start and end (:meth:`Rates.added`, :meth:`Rates.removed`) and, when
asked (:meth:`Rates.compute`), sets every active flow's rate:

* **alone on its links** -- while no link direction carries two flows, every flow is a max-min component
  of its own and drains at its path's narrowest capacity (or its own bound); the flows already running
  keep their rates and only the new ones need one. Per-link user counts are kept as flows come and go.
* **a solution seen before** -- max-min rates depend only on which paths are active (flows on the same
  path get the same rate), so solutions are cached by the multiset of active paths (a sum of fixed
  64-bit numbers per path, updated as flows come and go, checked against the path list on a hit). A
  ring, whose every step has the same sender->receiver pairs, solves once.
* **only what changed** -- max-min rates decompose over the connected components of the flows-and-links
  graph (flows that share no link, directly or through other flows, do not constrain each other), and
  every active flow's rate is kept valid from one computation to the next. So after flows start or end,
  only the components that hold a link of theirs are re-solved (found by a breadth-first search from
  those links, a few numpy passes over the crossings); the others keep their rates. Used while the
  touched components hold under half the active flows; the solution is the one a solve of all the
  flows gives (the filling of one component never looks at another).
* otherwise, :func:`sim.maxmin.maxmin_rates` over all active flows.

A link model whose capacities depend on the flows around them (``duplex``, ``flows``:
:mod:`sim.linkmodel`) turns the first shortcut off and gives the max-min computation those capacities;
they depend only on which paths are active, so the cache stays valid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .maxmin import maxmin_rates

__all__ = ["Rates", "gather_arcs"]

_CACHE_ENTRIES = 256
_INCREMENTAL_MIN = 64  # active flows below which a solve of all of them is as cheap as finding the part
_BFS_ROUNDS = 8  # breadth-first rounds before a change is deemed to touch too much


def gather_arcs(paths: Any, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flow index, arc) for every arc of every path in ``pids``, flow by flow."""
    lens = paths.length[pids]
    total = int(lens.sum())
    flow = np.repeat(np.arange(len(pids)), lens)
    ends = np.cumsum(lens)
    offsets = np.arange(total) - np.repeat(ends - lens, lens)
    return flow, paths.arcs[np.repeat(paths.start[pids], lens) + offsets]


class Rates:
    """The rate computation of a :class:`~sim.network.Network` (see the module docstring).

    Attributes
    ----------
    solves, cache_hits, isolated : int
        Max-min computations run, answered from the cache, and skipped because no link was shared.
    """

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.solves = 0
        self.cache_hits = 0
        self.isolated = 0
        self._users = np.zeros(cluster.num_arcs, dtype=np.int64)
        self._shared = 0  # link directions with two or more flows
        self._fresh: list[np.ndarray] = []  # flows started since the last computation
        self._gone: list[np.ndarray] = []  # paths of the flows ended since the last computation
        self.partial = 0  # computations that re-solved only the components a change touched
        self._valid = False  # every active flow holds its max-min rate (set by a full solve)
        self._alone_rates = True  # every active flow's rate is its path's narrowest capacity
        self._bounded = 0  # active flows with a finite bound (they disable the cache)
        self._key = 0
        self._path_hash = np.zeros(0, dtype=np.uint64)
        self._cache: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        model = cluster.message_model
        #: the link model's capacities that depend on the flows around them (sim.msgmodel), or None
        self._capacity = model.capacity if model.shares else None

    # ------------------------------------------------------------------ bookkeeping
    def added(self, slots: np.ndarray, pids: np.ndarray, bounds: np.ndarray) -> None:
        """Flows ``slots`` (on paths ``pids``, with rate bounds ``bounds``) started draining."""
        self._key = (self._key + int(self._hash_of(pids).sum(dtype=np.uint64))) % (1 << 64)
        self._use(pids, +1)
        self._fresh.append(slots)
        self._bounded += int(np.isfinite(bounds).sum())

    def removed(self, pids: np.ndarray, bounds: np.ndarray) -> None:
        """Flows on paths ``pids`` ended."""
        self._key = (self._key - int(self._hash_of(pids).sum(dtype=np.uint64))) % (1 << 64)
        self._gone.append(pids)
        self._use(pids, -1)
        self._bounded -= int(np.isfinite(bounds).sum())

    def _use(self, pids: np.ndarray, sign: int) -> None:
        """Add (+1) or remove (-1) flows on ``pids`` from the per-link user counts."""
        paths = self.cluster.paths
        if len(pids) <= 8:  # a few flows: plain Python beats numpy's per-call cost
            users = self._users
            shared = 0
            for pid in pids.tolist():
                start = int(paths.start[pid])
                for arc in paths.arcs[start : start + int(paths.length[pid])].tolist():
                    before = int(users[arc])
                    users[arc] = before + sign
                    shared += (before + sign >= 2) - (before >= 2)
            self._shared += shared
            return
        arcs = gather_arcs(paths, pids)[1]
        if not len(arcs):
            return
        uniq, count = np.unique(arcs, return_counts=True)
        before = self._users[uniq]
        after = before + sign * count
        self._users[uniq] = after
        self._shared += int(((after >= 2) & (before < 2)).sum()) - int(((before >= 2) & (after < 2)).sum())

    def _hash_of(self, pids: np.ndarray) -> np.ndarray:
        """A fixed pseudo-random 64-bit number per path id (the same on every run)."""
        need = self.cluster.paths.count
        if len(self._path_hash) < need:
            ids = np.arange(need, dtype=np.uint64)
            x = (ids + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            x ^= x >> np.uint64(31)
            x *= np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(29)
            self._path_hash = x
        return self._path_hash[pids]

    # ------------------------------------------------------------------ computing
    def compute(
        self,
        active: np.ndarray,
        path: np.ndarray,
        bound: np.ndarray,
        rate: np.ndarray,
        entries: Callable[[], tuple[np.ndarray, np.ndarray]],
    ) -> None:
        """Write the rate of every active flow into ``rate``. ``path``, ``bound`` and ``rate`` are the
        network's per-slot arrays; ``entries()`` gives the active flows' (flow, arc) crossings, built
        only when a solve needs them."""
        fresh, self._fresh = self._fresh, []
        gone, self._gone = self._gone, []
        if not len(active):
            return
        if self._shared == 0 and self._capacity is None:
            if not self._alone_rates:
                new = active  # the last computation left some flows at a shared rate
            elif fresh:
                new = np.concatenate(fresh) if len(fresh) > 1 else fresh[0]
            else:
                new = active[:0]
            rate[new] = np.minimum(self.cluster.paths.bottleneck[path[new]], bound[new])
            self._alone_rates = True
            self.isolated += 1
            return
        self._alone_rates = False
        pids = path[active]
        cacheable = self._bounded == 0
        if cacheable:
            hit = self._cache.get(self._key)
            if hit is not None and hit[2] == len(active):
                keys, rates, _ = hit
                pos = np.searchsorted(keys, pids)
                if len(keys) and (pos < len(keys)).all() and (keys[np.minimum(pos, len(keys) - 1)] == pids).all():
                    rate[active] = rates[pos]
                    self.cache_hits += 1
                    return
        self.solves += 1
        flow, arc = entries()
        capacity = self.cluster.capacity if self._capacity is None else self._capacity(arc)
        touched = None
        if self._capacity is None and len(active) >= _INCREMENTAL_MIN:
            touched = self._touched(active, path, fresh, gone, flow, arc)
        if touched is not None:
            keep = touched[flow]
            renumber = np.cumsum(touched) - 1
            sub = maxmin_rates(renumber[flow[keep]], arc[keep], int(touched.sum()), capacity, bound[active[touched]])
            rate[active[touched]] = sub
            rates = rate[active]
            self.partial += 1
        else:
            rates = maxmin_rates(flow, arc, len(active), capacity, bound[active])
            rate[active] = rates
        if cacheable:
            keys, first = np.unique(pids, return_index=True)
            if len(self._cache) >= _CACHE_ENTRIES:
                self._cache.pop(next(iter(self._cache)))
            self._cache[self._key] = (keys, rates[first], len(active))

    def _touched(
        self,
        active: np.ndarray,
        path: np.ndarray,
        fresh: list[np.ndarray],
        gone: list[np.ndarray],
        flow: np.ndarray,
        arc: np.ndarray,
    ) -> np.ndarray | None:
        """Which active flows (a mask over ``active``) lie in a component that holds a link of a flow
        started or ended since the last computation; None when that is half of them or more (solve
        all), or when some active flow has no valid rate to keep."""
        if not self._valid:
            self._valid = True
            return None
        paths = self.cluster.paths
        changed = [path[f] for f in fresh] + gone
        if not changed:
            return None
        pids = np.concatenate(changed) if len(changed) > 1 else changed[0]
        marked = np.zeros(self.cluster.num_arcs, dtype=bool)
        marked[gather_arcs(paths, pids)[1]] = True
        limit = len(active) // 2
        count = -1
        for _ in range(_BFS_ROUNDS):
            touched = np.zeros(len(active), dtype=bool)
            touched[flow[marked[arc]]] = True
            n = int(touched.sum())
            if n >= limit:
                return None
            if n == count:
                return touched
            count = n
            marked[arc[touched[flow]]] = True
        return None
