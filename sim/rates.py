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
  graph, and every active flow's rate is kept valid from one computation to the next. So after flows
  start or end, only the components that hold a link of theirs are re-solved; the others keep their
  rates. The components are found by a search over the set of active flows on every link direction,
  kept as flows come and go (its cost follows the component, not the number of active flows). Once a
  change's components reach half the active flows (or ``_COMPONENT_MAX``: one spans the fabric), the
  decomposition is made finer for that change, and for the rest of the run once it keeps happening --
  a link that is not full constrains none of its flows: every link direction's load is kept too, and a
  change re-solves only the flows joined to it through *full* links, a link shared with flows outside
  them being a bound on each of its flows; if their new rates overfill one, the part grows through it
  and is solved again
  (:meth:`Rates._solve_part`). Parts (whole components or not) are solved in plain Python up to
  ``_SCALAR_MAX`` flows (a link only one of them crosses is a bound on that flow; a flow alone takes
  its path's narrowest capacity), with numpy beyond, and while no flow has a bound their solutions are
  remembered by their multiset of paths and the links they share with flows outside them (a pipeline
  meets the same parts chunk after chunk). Links whose flows all cross an adjacent link no wider are
  left out of this bookkeeping (:class:`_Dominance`). Used while the part holds under half the active
  flows (and under ``_COMPONENT_MAX``); the solution is the one a solve of all the flows gives.
* otherwise, :func:`sim.maxmin.maxmin_rates` over all active flows.

The incremental state (the per-link sets of active flows, the loads and the full set) and the searches
and solves over it run in C where the extension ``sim._ratecore`` is built (``setup.py``; see
sim/_ratecore.c): the same steps with the same floating-point operations, so the same rates to the bit,
without the dict and set work on boxed ints that dominates here in Python. Without it, or with
``COLLSIM_PURE=1`` in the environment, the Python methods below run. The core does not remember parts'
relaxed solutions (``_parts``): it solves a part in less time than the Python path takes to build its key.

Rates are handed to the network (``apply``), which brings a flow's remaining bytes up to date only when
its rate changes and keeps its due time otherwise: a change costs what it touches.

A link model whose capacities depend on the flows around them (``duplex``, ``flows``:
:mod:`sim.linkmodel`) turns the first shortcut off and gives the max-min computation those capacities;
they depend only on which paths are active, so the cache stays valid.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from ._arrays import ranges
from ._cores import built, chosen
from .maxmin import _RTOL, maxmin_rates

__all__ = ["SMALL_BATCH", "Rates", "gather_arcs"]

_ratecore: Any = built("_ratecore")  # the compiled core (sim/_ratecore.c), or None where not built
#: the core the engine uses, or None: the Python path (sim._cores)
_CORE: Any = chosen(_ratecore)
#: the base of :class:`Rates` (and :class:`sim.network.Network`'s, ``_NET_BASE``): the attributes the compiled
#: wake-up reads and writes every time held in C (``sim._ratecore.RatesBase``: the same values, read and written
#: as attributes), or ``object`` where the core is not used (COLLSIM_PURE=1)
_RATES_BASE: Any = object if _CORE is None else _CORE.RatesBase
_NET_BASE: Any = object if _CORE is None else _CORE.NetBase

_CACHE_ENTRIES = 256
_INCREMENTAL_MIN = 8  # active flows below which a solve of all of them is as cheap as finding the part
_COMPONENT_MAX = 4096  # a change touching more flows than this re-solves them all (numpy beats the search)
_SKIP_MAX = 64  # consecutive searches that touched too much make up to this many computations skip the search
_SCALAR_MAX = 48  # components of up to this many flows are solved in plain Python
_PARTS_MAX = 4096  # parts' relaxed solutions remembered (by their multiset of paths and outer links)
_PART_FLOWS = 256  # ... of up to this many flows
_PARTS_TRIAL = 512  # given up when fewer than 1/4 of the first this many lookups were answered
_FULL_RTOL = 1e-9  # a link direction loaded to within this of its capacity is full (kept)
_OVER_RTOL = 1e-12  # a relaxed solve that loads a link beyond this over its capacity is solved again
_SPREAD = False  # spread changes along full links from the first computation (tests), not after whole
# components grew too big _SPREAD_AFTER times
_SPREAD_AFTER = 4
#: once spreading for good, a change whose part reaches _PART_FLOOR flows and this fraction of the active
#: ones (not above half of them) solves them all: the search, relaxed solve and commit cost ~2.4 us a flow,
#: a numpy solve of all ~0.3 us an active flow beyond its fixed cost (`nccl` at 16k GPUs; up to half
#: took 10-15% more there, the same times)
_PART_SHARE = 8
_PART_FLOOR = 128
#: with the compiled core a part's search, solve and commit cost a fraction of the Python ones: changes
#: spread to bigger components and parts before all flows are solved (`nvls-tree` at 16k GPUs 12.99 ->
#: 9.02 CPU s, `nccl-tree` 8.91 -> 8.10, the same times)
_COMPONENT_MAX_CORE = 65536
_PART_SHARE_CORE = 2
#: the core's per-link sets are dropped for a recount (Rates._use) only for a batch of more than a
#: 1/_RECOUNT_CORE of the link directions: a recount and rebuild cost a pass over every link direction,
#: entering or leaving a flow a few links' worth (double-binary-tree at 16k GPUs rebuilt 761 times for
#: batches of ~40 flows)
_RECOUNT_CORE = 16
#: a cache hit's rates looked up in the compiled core where it is built (Rates.compute); tests turn it off
#: to compare
_HIT_CORE = True
#: the compiled per-link sets (``Core``) made as soon as the dominated links are first handled, so that the
#: first recount and solves run in the compiled wake-up (off: made at the first search, the solves before it
#: through Network._solve -- tests/test_engine_guard.py breaks those)
_CORE_EARLY = True

#: the network's side of a computation, as Rates.compute is given it: (active_slots, path, bound, rate,
#: entries, apply)
_Ask = tuple[
    Callable[[], np.ndarray],
    np.ndarray,
    np.ndarray,
    np.ndarray,
    Callable[[], tuple[np.ndarray, np.ndarray]],
    Callable[[Any, Any], None],
]


def _thresholds(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per link direction, the load above which a solve overfills it (top) and from which it is full
    (brim): the Python path's and the compiled core's."""
    return capacity * (1 + _OVER_RTOL), capacity * (1 - _FULL_RTOL)


def gather_arcs(paths: Any, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flow index, arc) for every arc of every path in ``pids``, flow by flow."""
    lens = paths.length[pids]
    return np.repeat(np.arange(len(pids)), lens), paths.arcs[ranges(paths.start[pids], lens)]


class _Dominance:
    """Links that never bind, shared by the rate computations on one cluster.

    A link direction ``a`` whose flows all cross another one ``b`` no wider (``b`` adjacent to ``a``
    on every interned path that crosses ``a``) is never over capacity while ``b`` is not, and it
    never saturates before ``b`` does: with ``a``'s flows a subset of ``b``'s and ``a`` at least as
    wide, its share is never below ``b``'s, in floating point too (the same levels are taken off a
    capacity at least as large). So max-min fairness over the other links gives every flow the same
    rate, bit for bit, and the components are the same; the per-link bookkeeping leaves ``a`` out. Such
    pairs are found from the topology (a NIC between a GPU and its leaf: a node that is no endpoint,
    with two neighbours, which a route through it must enter from one and leave to the other; ties
    broken by arc id so that no two links leave each other out) and verified on every path interned
    so far (:meth:`verify`): a path that crosses ``a`` without ``b`` beside it makes ``a`` count again.
    """

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.dom = _static_dominators(cluster)
        self.kept = self.dom < 0
        self.table = cluster.paths
        self.checked = 0  # paths of ``table`` verified so far
        self.version = 0  # bumped whenever a left-out link is brought back

    def verify(self) -> None:
        """Check the paths interned since the last call; bring back links they show to be needed."""
        paths = self.cluster.paths
        if paths is not self.table:  # a new table: verify it from its first path
            self.table, self.checked = paths, 0
        count = paths.count
        if count - self.checked > 4 and _CORE is not None and _CORE.verify_paths(self, paths, self.checked, count):
            return  # (the lines below where they bring no link back, in C: tests/test_tree1k.py)
        first, self.checked = self.checked, count
        if count <= first or self.kept.all():
            return
        if count - first <= 4:  # paths interned one by one: plain Python beats numpy's per-call cost
            dom, bad = self.dom, []
            for pid in range(first, count):
                start = int(paths.start[pid])
                crossed = paths.arcs[start : start + int(paths.length[pid])].tolist()
                last = len(crossed) - 1
                for i, arc in enumerate(crossed):
                    d = dom[arc]
                    if d >= 0 and not ((i > 0 and crossed[i - 1] == d) or (i < last and crossed[i + 1] == d)):
                        bad.append(arc)
            if bad:
                self.dom[bad] = -1
                self.kept = self.dom < 0
                self.version += 1
            return
        flow, arcs = gather_arcs(paths, np.arange(first, count))
        d = self.dom[arcs]
        at = np.flatnonzero(d >= 0)
        if not len(at):
            return
        before, after = np.maximum(at - 1, 0), np.minimum(at + 1, len(arcs) - 1)
        beside = ((at > 0) & (flow[before] == flow[at]) & (arcs[before] == d[at])) | (
            (at + 1 < len(arcs)) & (flow[after] == flow[at]) & (arcs[after] == d[at])
        )
        bad = arcs[at[~beside]]
        if len(bad):
            self.dom[bad] = -1
            self.kept = self.dom < 0
            self.version += 1


def _static_dominators(cluster: Any) -> np.ndarray:
    """For every arc, the adjacent arc that carries all its flows and is no wider (or -1), from the
    topology: around a node that is no endpoint and has exactly two neighbours (both ways)."""
    u, v, cap = cluster.arc_u, cluster.arc_v, cluster.capacity
    m = len(u)
    dom = np.full(m, -1, dtype=np.int64)
    if not m:
        return dom
    if _CORE is not None and _CORE.static_dominators(  # the lines below in one pass (tests/test_tree1k2.py)
        np.ascontiguousarray(u, dtype=np.int64),
        np.ascontiguousarray(v, dtype=np.int64),
        np.ascontiguousarray(cap, dtype=float),
        np.ascontiguousarray(cluster.rank_node, dtype=np.int64),
        dom,
    ):
        return dom
    n = int(max(u.max(), v.max())) + 1
    outdeg, indeg = np.bincount(u, minlength=n), np.bincount(v, minlength=n)
    through = (outdeg == 2) & (indeg == 2)
    through[np.asarray(cluster.rank_node, dtype=np.int64)] = False
    if not through.any():
        return dom

    def two(ends: np.ndarray, sel: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # the two arcs of ``sel`` (every through node's two at that end, ids ascending) at each of ``nodes``,
        # the lower id first: only those arcs sorted, not the whole fabric's (a fifth of them on DGX hosts)
        order = sel[np.argsort(ends[sel], kind="stable")]
        first, second = order[0::2], order[1::2]
        at = np.empty(n, dtype=np.int64)
        at[ends[first]] = np.arange(len(first))  # (each node once)
        at = at[nodes]
        return first[at], second[at]

    def narrower(c: np.ndarray, a: np.ndarray) -> np.ndarray:
        cc, ca = cap[c], cap[a]
        return (cc < ca) | ((cc == ca) & (c < a))

    # into a through node w from x: the flows leave w to its other neighbour
    into, out = np.flatnonzero(through[v]), np.flatnonzero(through[u])
    o1, o2 = two(u, out, v[into])
    back1, back2 = v[o1] == u[into], v[o2] == u[into]
    nxt = np.where(back1, o2, o1)
    ok = (back1 != back2) & narrower(nxt, into)
    dom[into[ok]] = nxt[ok]
    # out of a through node w to y: the flows came into w from its other neighbour
    i1, i2 = two(v, into, u[out])
    from1, from2 = u[i1] == v[out], u[i2] == v[out]
    prv = np.where(from1, i2, i1)
    ok = (from1 != from2) & narrower(prv, out)
    held = dom[out]
    ok &= (held < 0) | narrower(prv, np.maximum(held, 0))
    dom[out[ok]] = prv[ok]
    return dom


def _dominance_of(cluster: Any) -> _Dominance:
    got = getattr(cluster, "_rates_dominance", None)
    if got is None or got.cluster is not cluster or len(got.dom) != cluster.num_arcs:
        got = _Dominance(cluster)
        cluster._rates_dominance = got
    return got


#: flows started or ended together up to this many are handled in scalar Python, here and in
#: :mod:`sim.network` (numpy's per-call cost beats its per-element gain)
SMALL_BATCH = 16


class Rates(_RATES_BASE):
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
        #: (paths, rates) of the flows ended since the last computation
        self._gone: list[tuple[np.ndarray, np.ndarray]] = []
        self.partial = 0  # computations that re-solved only the components a change touched
        self.regrown = 0  # parts solved again because their rates overfilled a link they shared
        self._valid = False  # every active flow holds its max-min rate (set by a full solve)
        self._alone_rates = True  # every active flow's rate is its path's narrowest capacity
        self._bounded = 0  # active flows with a finite bound (they disable the cache)
        self._key = 0
        self._path_hash = np.zeros(0, dtype=np.uint64)
        self._cache: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        model = cluster.message_model
        #: the link model's capacities that depend on the flows around them (sim.msgmodel), or None
        self._capacity = model.capacity if model.shares else None
        self._path_arcs: list[tuple[int, ...] | None] = []  # arcs of each path, as Python ints
        #: active slots on every link direction, kept while components are re-solved one by one
        #: (built when a search first needs them, from the active flows; dropped by a big batch)
        self._members: list[set[int] | None] | None = None
        self._count = 0  # active flows
        self._incremental = self._capacity is None
        self._skip = 0  # computations left that go straight to a full solve
        self._skip_next = 1  # how many the next search that touches too much buys (doubles, up to _SKIP_MAX)
        self._slot_arcs: list[tuple[int, ...]] = []  # arcs of each active slot's path
        #: links left out of the bookkeeping because another carries all their flows (_Dominance)
        self._dominance = _dominance_of(cluster) if self._capacity is None else None
        self._kept: np.ndarray | None = None  # the link directions the bookkeeping keeps (None: all)
        self._version = -1
        self._recount = False  # user counts to be rebuilt from the active flows at the next computation
        self._slot_pid: list[int] = []  # the path of each slot in the per-link sets
        #: relaxed rates of parts solved before (:meth:`_relaxed`), by their sorted path ids and their
        #: links shared with flows outside them: path id -> rate
        self._parts: dict[tuple[tuple[int, ...], tuple[int, ...]], dict[int, float]] = {}
        self.part_hits = 0  # parts answered from them
        self._part_tries = 0
        self._parts_on = _PARTS_MAX > 0
        #: every link direction's rate sum as the last computation left it (None: rebuilt when needed)
        self._load: array | None = None
        #: the full link directions (and maybe a few that no longer are): the only links along which a
        #: change spreads to other flows (see _solve_part)
        self._full: set[int] = set()
        self._cap: list[float] | None = None  # the capacities as Python floats
        self._top: list[float] = []  # ... times 1 + _OVER_RTOL: a load above it overfills its link
        self._brim: list[float] = []  # ... times 1 - _FULL_RTOL: a load from it up fills its link
        #: a change re-solves the flows joined to it through full links (set for good once a change's
        #: whole components reached _COMPONENT_MAX or half the active flows _SPREAD_AFTER times), not
        #: its whole components
        self._spread = _SPREAD
        self._spills = 0  # changes whose whole components were that big
        #: the compiled core holding the per-link sets, loads and full set in place of ``_members``,
        #: ``_load`` and ``_full`` (made when the sets are first built), or None: the Python path
        self._core: Any = None
        self._use_core = _CORE is not None and self._incremental

    # ------------------------------------------------------------------ bookkeeping
    def added(self, slots: np.ndarray, pids: np.ndarray, bounds: np.ndarray) -> None:
        """Flows ``slots`` (on paths ``pids``, with rate bounds ``bounds``) started draining."""
        dominance = self._dominance
        if dominance is not None:
            if self.cluster.paths.count > dominance.checked:
                dominance.verify()
            if dominance.version != self._version:
                self._leave_out(dominance)
        numbers, finite = self._sums(pids, bounds)
        self._key = (self._key + numbers) % (1 << 64)
        self._use(pids, +1, slots)
        self._fresh.append(slots)
        self._bounded += finite

    def removed(self, slots: np.ndarray, pids: np.ndarray, bounds: np.ndarray, rates: np.ndarray) -> None:
        """Flows ``slots`` on paths ``pids``, at rates ``rates``, ended."""
        numbers, finite = self._sums(pids, bounds)
        self._key = (self._key - numbers) % (1 << 64)
        self._gone.append((pids, rates.copy()))
        self._use(pids, -1, slots)
        self._bounded -= finite

    def _sums(self, pids: np.ndarray, bounds: np.ndarray) -> tuple[int, int]:
        """(:meth:`_hash_sum` of ``pids``, :meth:`_finite` of ``bounds``): in one call to the core where
        it is built (the sum mod 2**64 there; the callers take it mod 2**64)."""
        if _CORE is not None:
            return _CORE.hash_finite(self._hashes(), pids, bounds)  # type: ignore[no-any-return]
        return self._hash_sum(pids), self._finite(bounds)

    def _leave_out(self, dominance: _Dominance) -> None:
        """Follow the links ``dominance`` leaves out now: what was built over the old set is dropped
        (paths' arcs, per-link sets) and the user counts are rebuilt at the next computation."""
        self._version = dominance.version
        self._kept = None if dominance.kept.all() else dominance.kept
        self._path_arcs = []
        self._members = None
        self._recount = True
        self._parts.clear()
        self._load = None  # loads and full links taken again over the links now kept
        if self._core is not None:
            self._core.reset(self._kept)
        elif self._use_core and _CORE_EARLY:  # made now, not at the first search: the recount and solves that
            self._new_core()  # come first then run in the compiled wake-up too (net_wake's Network._solve)

    def _hash_sum(self, pids: np.ndarray) -> int:
        """The paths' numbers summed (a flow at a time in scalar operations: numpy's per-call cost
        dominates when flows start and end one by one)."""
        if len(pids) <= SMALL_BATCH:
            return sum(self._hash_of(pids).tolist())  # the caller takes it mod 2**64
        return int(self._hash_of(pids).sum(dtype=np.uint64))

    @staticmethod
    def _finite(bounds: np.ndarray) -> int:
        if len(bounds) <= SMALL_BATCH:
            return sum(map(math.isfinite, bounds.tolist()))
        return int(np.count_nonzero(np.isfinite(bounds)))

    def _arcs_of(self, pid: int) -> tuple[int, ...]:
        """The arcs of path ``pid`` as a tuple of ints (built once per path)."""
        arcs = self._path_arcs
        if pid >= len(arcs):
            arcs.extend([None] * (pid + 1 - len(arcs)))
        got = arcs[pid]
        if got is None:
            paths = self.cluster.paths
            start = int(paths.start[pid])
            crossed = paths.arcs[start : start + int(paths.length[pid])]
            if self._kept is not None:
                crossed = crossed[self._kept[crossed]]
            got = arcs[pid] = tuple(crossed.tolist())
        return got

    def _use(self, pids: np.ndarray, sign: int, slots: np.ndarray) -> None:
        """Add (+1) or remove (-1) flows ``slots`` on ``pids`` from the per-link user counts (and, while
        components are re-solved one by one, from the per-link sets of users)."""
        paths = self.cluster.paths
        self._count += sign * len(pids)
        if self._recount:
            return  # counted from the active flows at the next computation
        members = self._members
        if (
            members is not None
            and len(pids) > 8
            and 4 * len(pids) > self._count
            and (members is not self._core or _RECOUNT_CORE * len(pids) > self.cluster.num_arcs)
        ):
            # a batch as big as a good part of the active flows (ranks in lock-step): the user counts
            # (not kept while the sets are) are taken from the active flows in numpy at the next
            # computation, and the sets rebuilt from them if a search needs them
            self._members = None
            self._recount = True
            return
        if members is not None:
            # the per-link sets; the shared links counted from their sizes (the user counts are not
            # kept meanwhile: see the drop above)
            if sign > 0:
                self._shared += self._enter(members, slots, pids)
                return
            if members is self._core:
                self._shared += self._core.leave(slots)
                return
            slot_arcs = self._slot_arcs
            shared = 0
            for slot in slots.tolist():
                for arc in slot_arcs[slot]:
                    group = members[arc]
                    group.discard(slot)  # type: ignore[union-attr]
                    shared -= len(group) == 1  # type: ignore[arg-type]
            self._shared += shared
            return
        if len(pids) <= 8:  # a few flows: plain Python beats numpy's per-call cost
            users = self._users
            shared = 0
            for pid in pids.tolist():
                for arc in self._arcs_of(pid):
                    before = int(users[arc])
                    users[arc] = before + sign
                    shared += (before + sign >= 2) - (before >= 2)
            self._shared += shared
            return
        arcs = gather_arcs(paths, pids)[1]
        if self._kept is not None:
            arcs = arcs[self._kept[arcs]]
        if not len(arcs):
            return
        uniq, count = np.unique(arcs, return_counts=True)
        before = self._users[uniq]
        after = before + sign * count
        self._users[uniq] = after
        self._shared += int(((after >= 2) & (before < 2)).sum()) - int(((before >= 2) & (after < 2)).sum())

    def _hash_of(self, pids: np.ndarray) -> np.ndarray:
        """A fixed pseudo-random 64-bit number per path id (the same on every run)."""
        return self._hashes()[pids]

    def _hashes(self) -> np.ndarray:
        """:meth:`_hash_of`'s table, a number for every path interned so far (and for the ids that come next:
        grown to twice its length at least, the new numbers made and added at the end, so that paths
        interned a few at a time cost a growth now and then, not one each; the numbers do not depend on it)."""
        need = self.cluster.paths.count
        have = len(self._path_hash)
        if have < need:
            ids = np.arange(have, max(need, 2 * have), dtype=np.uint64)
            x = (ids + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            x ^= x >> np.uint64(31)
            x *= np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(29)
            self._path_hash = np.concatenate((self._path_hash, x)) if have else x
        return self._path_hash

    # ------------------------------------------------------------------ computing
    def compute(
        self,
        count: int,
        active_slots: Callable[[], np.ndarray],
        path: np.ndarray,
        bound: np.ndarray,
        rate: np.ndarray,
        entries: Callable[[], tuple[np.ndarray, np.ndarray]],
        apply: Callable[[np.ndarray | list[int], np.ndarray | list[float]], None],
        active_mask: np.ndarray | None = None,
    ) -> None:
        """Give every one of the ``count`` active flows its max-min rate: ``apply(slots, rates)`` is
        called with the slots whose rate is (re)set. ``active_slots()`` gives the active slots and
        ``entries()`` their (flow, arc) crossings, both built only when a computation needs them;
        ``path``, ``bound`` and ``rate`` are the network's per-slot arrays, and ``active_mask`` (where
        given) the mask over the slots that ``active_slots()`` lists."""
        fresh, self._fresh = self._fresh, []
        gone, self._gone = self._gone, []
        if self._recount:
            self._count_users(path[active_slots()] if count else path[:0])
        if not count:
            return
        if self._shared == 0 and self._capacity is None:
            if not self._alone_rates:
                new = active_slots()  # the last computation left some flows at a shared rate
            elif fresh:
                new = np.concatenate(fresh) if len(fresh) > 1 else fresh[0]
            else:
                new = path[:0]
            if len(new):
                apply(new, np.minimum(self.cluster.paths.bottleneck[path[new]], bound[new]))
            self._alone_rates = True
            self._valid = True
            self._load = None
            self.isolated += 1
            return
        self._alone_rates = False
        cacheable = self._bounded == 0
        ask = (active_slots, path, bound, rate, entries, apply)
        if cacheable:
            hit = self._cache.get(self._key)
            if hit is not None and hit[2] == count:
                keys, rates, _ = hit
                if _CORE is not None and _HIT_CORE:  # (_hit_rates, in C: tests/test_wake_core.py holds them equal)
                    masked = active_mask is not None
                    got = _CORE.hit_rates(keys, rates, active_mask if masked else active_slots(), path, masked)
                else:
                    got = self._hit_rates(keys, rates, active_slots(), path)
                if got is not None:
                    apply(*got)
                    self.cache_hits += 1
                    self._valid = True
                    self._load = None
                    return
        if self._valid and self._incremental and count >= _INCREMENTAL_MIN and self._skip:
            self._skip -= 1  # the last searches found the change touching too much: solve all for a while
        elif self._valid and self._incremental and count >= _INCREMENTAL_MIN:
            if self._members is None:
                self._rebuild(active_slots(), path)
            limit = min(count // 2, _COMPONENT_MAX_CORE if self._use_core else _COMPONENT_MAX)
            solved = None
            if not self._spread:
                new = [slot for slots in fresh for slot in slots.tolist()]
                if len(new) < limit:  # (a batch of half the active flows or more: solve them all)
                    solved = self._solve_component(path, bound, new, gone, limit)
                    if solved is None:  # components that reach much of the fabric
                        self._spilled(count, ask, fresh, gone, limit, cacheable)
                        return
            else:
                solved = self._by_full_links(count, ask, fresh, gone, limit)
            self._settled(solved, ask, cacheable)
            return
        self._solve_all(ask, cacheable)

    def _spilled(self, count: int, ask: _Ask, fresh: list[np.ndarray], gone: list, limit: int, cacheable: bool) -> None:
        """:meth:`compute` where whole components reached ``limit`` flows: the change spreads along full
        links this time, and from now on once it keeps happening."""
        self._spills += 1
        self._spread = self._spills >= _SPREAD_AFTER
        self._settled(self._by_full_links(count, ask, fresh, gone, limit), ask, cacheable)

    def _by_full_links(
        self, count: int, ask: _Ask, fresh: list[np.ndarray], gone: list, limit: int
    ) -> tuple[list[int], list[float]] | None:
        """The flows a change touches through full links re-solved (:meth:`_solve_part`), the loads
        taken first where none are kept."""
        active_slots, path, bound, rate, entries, _ = ask
        if self._load is None:
            self._reload(active_slots(), *entries(), rate, gone)
        if self._spread:  # a part costs more per flow than a solve of all does (see _PART_SHARE)
            limit = min(_PART_FLOOR + count // (_PART_SHARE_CORE if self._use_core else _PART_SHARE), limit)
        solved = self._solve_part(path, bound, rate, fresh, self._unload(gone), limit)
        if not self._spread:
            self._load = None  # whole components keep no loads
        return solved

    def _settled(self, solved: tuple[list[int], list[float]] | None, ask: _Ask, cacheable: bool) -> None:
        """A partial re-solve's rates applied, or, where it touched too much (None), a while of solves of
        all the flows from this one on."""
        if solved is None:
            self._skip, self._skip_next = self._skip_next, min(2 * self._skip_next, _SKIP_MAX)
            self._solve_all(ask, cacheable)
            return
        self._skip_next = 1
        self.solves += 1
        self.partial += 1
        if solved[0]:
            ask[5](*solved)

    def _solve_all(self, ask: _Ask, cacheable: bool) -> None:
        """:meth:`compute`'s last resort: max-min over every active flow (cached where no flow has a bound)."""
        active_slots, path, bound, _, entries, apply = ask
        self.solves += 1
        active = active_slots()
        pids = path[active]
        flow, arc = entries()
        capacity = self.cluster.capacity if self._capacity is None else self._capacity(arc)
        rates = maxmin_rates(flow, arc, len(active), capacity, bound[active])
        apply(active, rates)
        self._valid = True
        self._load = None
        if cacheable:
            keys, first = np.unique(pids, return_index=True)
            if len(self._cache) >= _CACHE_ENTRIES:
                self._cache.pop(next(iter(self._cache)))
            self._cache[self._key] = (keys, rates[first], len(active))

    @staticmethod
    def _hit_rates(
        keys: np.ndarray, rates: np.ndarray, active: np.ndarray, path: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """A cache hit's (slots, rates): the draining flows ``active`` each at the rate of its path in
        ``keys`` (sorted, distinct), or None where a path is not among them (or there are no keys)."""
        pos = np.searchsorted(keys, path[active])
        if len(keys) and (pos < len(keys)).all() and (keys[np.minimum(pos, len(keys) - 1)] == path[active]).all():
            return active, rates[pos]
        return None

    def _count_users(self, pids: np.ndarray) -> None:
        """The per-link user counts from scratch, from the paths of the active flows."""
        arcs = gather_arcs(self.cluster.paths, pids)[1]
        if self._kept is not None:
            arcs = arcs[self._kept[arcs]]
        self._users = np.bincount(arcs, minlength=self.cluster.num_arcs).astype(np.int64)
        self._shared = int((self._users >= 2).sum())
        self._recount = False

    def _rebuild(self, active: np.ndarray, path: np.ndarray) -> None:
        """The per-link sets of active flows, from scratch."""
        if self._use_core:
            if self._core is None:
                self._new_core()
            self._core.clear()
            self._core.enter(active, path[active])
            self._members = self._core
            return
        members: list[set[int] | None] = [None] * self.cluster.num_arcs
        self._enter(members, active, path[active])  # the shared links are counted already
        self._members = members

    def _new_core(self) -> None:
        """The compiled per-link sets and loads (``Core``), over the links kept."""
        capacity = self.cluster.capacity
        self._core = _CORE.Core(self.cluster, capacity, *_thresholds(capacity))
        self._core.reset(self._kept)

    def _enter(self, members: list[set[int] | None], slots: np.ndarray, pids: np.ndarray) -> int:
        """Put flows ``slots`` (on paths ``pids``) into the per-link sets ``members``; returns how many
        links they made shared."""
        if members is self._core:
            return self._core.enter(slots, pids)
        slot_arcs, slot_pid = self._slot_arcs, self._slot_pid
        top = int(slots.max()) + 1 if len(slots) else 0
        if top > len(slot_arcs):
            slot_arcs.extend([()] * (top - len(slot_arcs)))
            slot_pid.extend([-1] * (top - len(slot_pid)))
        path_arcs = self._path_arcs
        if len(path_arcs) < self.cluster.paths.count:
            path_arcs.extend([None] * (self.cluster.paths.count - len(path_arcs)))
        arcs_of = self._arcs_of
        shared = 0
        for slot, pid in zip(slots.tolist(), pids.tolist(), strict=True):
            arcs = path_arcs[pid]
            if arcs is None:
                arcs = arcs_of(pid)
            slot_arcs[slot] = arcs
            slot_pid[slot] = pid
            for arc in arcs:
                group = members[arc]
                if group is None:
                    members[arc] = {slot}
                else:
                    group.add(slot)
                    shared += len(group) == 2
        return shared

    def _reload(self, active: np.ndarray, flow: np.ndarray, arc: np.ndarray, rate: np.ndarray, gone: list) -> None:
        """Every link direction's load from scratch (the active flows at their rates, the flows that
        ended since the last computation at theirs: the state that computation left), and the full
        ones put in the full set. Links the bookkeeping leaves out (:class:`_Dominance`) carry no load
        here: their flows all cross a link no wider, full whenever they are."""
        load = np.bincount(arc, weights=rate[active][flow], minlength=self.cluster.num_arcs)
        for pids, rates in gone:
            g_flow, g_arc = gather_arcs(self.cluster.paths, pids)
            np.add.at(load, g_arc, rates[g_flow])
        if self._kept is not None:
            load[~self._kept] = 0.0
        if self._core is not None:
            self._core.set_load(load)
            self._load = self._core  # (a marker: the core holds the loads and the full set)
            return
        self._load = array("d", load.tobytes())  # (a copy, not a list: no Python float made per link)
        if not self._top:
            capacity = self.cluster.capacity
            self._cap = capacity.tolist()
            top, brim = _thresholds(capacity)
            self._top, self._brim = top.tolist(), brim.tolist()
        self._full = set(np.flatnonzero(load >= _thresholds(self.cluster.capacity)[1]).tolist())

    def _unload(self, gone: list) -> list[int]:
        """Take the flows that ended off the loads; their links in the full set, where the flows left
        on them may now go faster."""
        if self._core is not None:
            return self._core.unload(gone)
        load, full, members = self._load, self._full, self._members
        assert load is not None and members is not None
        seeds: list[int] = []
        arcs_of, path_arcs = self._arcs_of, self._path_arcs  # an ended flow's path was entered (or dropped)
        for pids, rates in gone:
            for pid, r in zip(pids.tolist(), rates.tolist(), strict=True):
                arcs = path_arcs[pid] if pid < len(path_arcs) else None
                for arc in arcs_of(pid) if arcs is None else arcs:
                    if members[arc]:
                        load[arc] -= r
                        if arc in full:
                            seeds.append(arc)
                    else:  # no drift left behind on an idle link (and nobody on it to speed up)
                        load[arc] = 0.0
                        full.discard(arc)
        return seeds

    def _solve_part(
        self,
        path: np.ndarray,
        bound: np.ndarray,
        rate: np.ndarray,
        fresh: list[np.ndarray],
        seeds: list[int],
        limit: int,
    ) -> tuple[list[int], list[float]] | None:
        """Re-solve the flows a change touches, spreading along *full* links only (the full set: links
        loaded to capacity, and maybe a few that no longer are): the new flows and every flow joined to
        them or to the full links of the ended ones through full links. A link that is not full
        constrains nobody -- every flow on it is limited elsewhere -- so the max-min allocation of the
        whole network is the one that treats it as unbounded, as long as it is not overfilled. The part
        is solved with each link that also carries flows outside it taken as a bound on each of its
        flows (their capacity: implied by the real constraint; :meth:`_relaxed`); if the new rates
        overfill such a link it joins the full set, the part grows through it, and the part is solved
        again. After a solve, the part's links that are full join the full set, and those no longer
        full leave it. Returns (slots, rates), or None when the part reaches ``limit`` flows (solve
        all)."""
        if self._core is not None:
            regrown, moved, rates = self._core.solve_part(path, bound, rate, fresh, seeds, limit, _SCALAR_MAX, _RTOL)
            self.regrown += regrown
            return None if moved is None else (moved, rates)
        load, full, members, top = self._load, self._full, self._members, self._top
        assert load is not None and members is not None
        slot_arcs = self._slot_arcs
        bottleneck = self.cluster.paths.bottleneck
        new = [slot for part in fresh for slot in part.tolist()]
        seeds = list(seeds)
        for slot in new:  # links a new flow could overfill at its rate alone join the full set at once
            alone = -1.0  # its rate alone, taken when first needed
            for arc in slot_arcs[slot]:
                if arc in full:
                    seeds.append(arc)
                elif len(members[arc]) > 1:  # type: ignore[arg-type]
                    if alone < 0:
                        alone = min(float(bottleneck[path[slot]]), float(bound[slot]))
                    if load[arc] + alone > top[arc]:
                        full.add(arc)
                        seeds.append(arc)
        if not new and not seeds:  # flows ended on links that were not full: nobody else speeds up
            return new, []
        while True:
            part = self._component(new, seeds, limit, full)
            if part is None:
                return None
            rates = self._relaxed(part, path, bound)
            over, moved, moved_rates = self._commit(part, rates, rate)
            if not over:
                return moved, moved_rates
            self.regrown += 1
            seeds.extend(over)

    def _solve_component(
        self, path: np.ndarray, bound: np.ndarray, new: list[int], gone: list, limit: int
    ) -> tuple[list[int], list[float]] | None:
        """Re-solve the whole components that hold a link of a flow started (``new``) or ended since the
        last computation (max-min rates decompose over them; no loads kept). Returns (slots, rates), or
        None when they reach ``limit`` flows."""
        if self._core is not None:
            return self._core.solve_component(path, bound, new, gone, limit, _SCALAR_MAX, _RTOL)
        path_arcs, arcs_of = self._path_arcs, self._arcs_of
        seeds: list[int] = []
        for pids, _ in gone:  # every ended flow's path was entered (or dropped): its arcs are known
            for pid in pids.tolist():
                arcs = path_arcs[pid] if pid < len(path_arcs) else None
                seeds.extend(arcs_of(pid) if arcs is None else arcs)
        part = self._component(new, seeds, limit, None)
        if part is None:
            return None
        return part, self._relaxed(part, path, bound, whole=True) if part else []

    def _component(self, new: list[int], seeds: list[int], limit: int, full: set[int] | None) -> list[int] | None:
        """The new flows ``new`` and the active flows joined to them or to ``seeds`` through the links
        ``full`` (None: through every link, whole components), a search over the per-link user sets;
        None when they are ``limit`` or more. (The slots' links are pushed through iterators that run
        in C: a comprehension per slot costs a call.)"""
        members = self._members
        assert members is not None
        get_arcs = self._slot_arcs.__getitem__
        if len(new) >= limit:
            return None
        found: set[int] = set(new)
        order: list[int] = list(new)  # the order found in (the same on every run)
        todo = list(seeds)
        pop, extend = todo.pop, todo.extend
        keep = None if full is None else full.__contains__
        arcs = chain.from_iterable(map(get_arcs, new))
        extend(arcs if keep is None else filter(keep, arcs))
        seen: set[int] = set()
        add = seen.add
        while todo:
            arc = pop()
            if arc in seen:
                continue
            add(arc)
            users = members[arc]
            if not users:
                continue
            more = users - found  # set operations in C: an arc's users are mostly found already
            if more:
                found |= more
                if len(found) >= limit:
                    return None
                if len(more) == 1:
                    (slot,) = more
                    order.append(slot)
                    arcs = get_arcs(slot)
                else:
                    ranked = sorted(more)
                    order.extend(ranked)
                    arcs = chain.from_iterable(map(get_arcs, ranked))
                extend(arcs if keep is None else filter(keep, arcs))
        return order

    def _commit(
        self, part: list[int], rates: list[float], rate: np.ndarray
    ) -> tuple[list[int], list[int], list[float]]:
        """The links the part's new ``rates`` would overfill (they join the full set; nothing else
        changes), or none: then the loads take the new rates, the part's full links join the full set
        and the others leave it. Returns (those links, the slots whose rate changes, their rates): a
        flow of the part whose rate stays is not handed to the network again."""
        load, full, top = self._load, self._full, self._top
        assert load is not None
        slot_arcs = self._slot_arcs
        delta: dict[int, float] = {}
        get = delta.get
        old = rate.take(part).tolist() if len(part) > 4 else [float(rate[slot]) for slot in part]
        moved: list[int] = []
        moved_rates: list[float] = []
        for slot, new, was in zip(part, rates, old, strict=True):
            if new != was:
                moved.append(slot)
                moved_rates.append(new)
                d = new - was
                for arc in slot_arcs[slot]:
                    delta[arc] = get(arc, 0.0) + d
        over = []
        after: dict[int, float] | None = None
        for arc, d in delta.items():
            if arc not in full and load[arc] + d > top[arc]:
                # a link shared with flows outside the part: its load counted afresh (no drift)
                members = self._members
                assert members is not None
                if after is None:
                    after = dict(zip(part, rates, strict=True))
                exact = math.fsum(after.get(s, float(rate[s])) for s in members[arc])  # type: ignore[union-attr]
                if exact > top[arc]:
                    over.append(arc)
        if over:
            full.update(over)
            return over, [], []
        brim = self._brim
        for arc, d in delta.items():
            now = load[arc] + d
            load[arc] = now
            if now >= brim[arc]:
                full.add(arc)
            else:
                full.discard(arc)  # a link of the full set has all its users in the part
        return over, moved, moved_rates

    def _relaxed(self, part: list[int], path: np.ndarray, bound: np.ndarray, whole: bool = False) -> list[float]:
        """Max-min rates of the part's flows over its *inner* links, those whose every user is in the
        part; a link that also carries flows outside it (an *outer* one), or only one flow, is a bound
        on each of its flows in the part.

        These rates depend on nothing but the part's multiset of paths, which of the links two or more
        of them cross are outer, and the flows' bounds (flows on one path get one rate). So while no
        active flow has a bound they are remembered by the first two (``_parts``): a pipeline's parts,
        the same from one chunk to the next, solve once, and a part that is a whole component (no outer
        link) is told apart from one with the same paths cut out of a bigger component. What is
        remembered is the relaxed solve only: :meth:`_commit` checks it against the flows outside the
        part every time, as it checks a fresh solve."""
        if len(part) == 1:  # a flow alone: its narrowest link, or its bound
            slot = part[0]
            return [min(float(self.cluster.paths.bottleneck[path[slot]]), float(bound[slot]))]
        remember = self._bounded == 0 and self._parts_on and len(part) <= _PART_FLOWS
        if not remember and (whole or len(part) > _SCALAR_MAX):  # no key: the solve finds the inner links
            if len(part) > _SCALAR_MAX:
                return self._relaxed_numpy(part, path, bound, None)
            return self._maxmin_scalar(part, bound, None)
        members, slot_arcs = self._members, self._slot_arcs
        assert members is not None
        outer: list[int] = []
        many: list[int] | None = None
        if not whole:  # (a whole component: every link's users are in it, none is outer)
            here = Counter(chain.from_iterable([slot_arcs[slot] for slot in part]))
            many = [arc for arc, k in here.items() if k > 1]
            outer = [arc for arc in many if here[arc] != len(members[arc])]  # type: ignore[arg-type]
        key = None
        if remember:
            slot_pid = self._slot_pid
            pids = [slot_pid[slot] for slot in part]
            key = (tuple(sorted(pids)), tuple(sorted(outer)))
            got = self._parts.get(key)
            self._part_tries += 1
            if got is not None:
                self.part_hits += 1
                return [got[pid] for pid in pids]
            if self._part_tries == _PARTS_TRIAL and 4 * self.part_hits < self._part_tries:
                self._parts_on = False  # parts rarely repeat here: stop remembering them
                self._parts.clear()
                key = None
        inner = None if many is None else set(many).difference(outer)
        if len(part) <= _SCALAR_MAX:
            rates = self._maxmin_scalar(part, bound, inner)
        else:
            rates = self._relaxed_numpy(part, path, bound, inner)
        if key is not None:
            if len(self._parts) >= _PARTS_MAX:
                self._parts.clear()
            self._parts[key] = dict(zip(pids, rates, strict=True))
        return rates

    def _relaxed_numpy(
        self, part: list[int], path: np.ndarray, bound: np.ndarray, inner: set[int] | None
    ) -> list[float]:
        """:meth:`_relaxed`'s solve in numpy, given its inner links (None: found here)."""
        members = self._members
        assert members is not None
        slots = np.array(part, dtype=np.int64)
        capacity = self.cluster.capacity
        flow, arc = gather_arcs(self.cluster.paths, path[slots])
        if self._kept is not None:  # the links the bookkeeping leaves out: their flows cross one no wider
            keep = self._kept[arc]
            flow, arc = flow[keep], arc[keep]
        if inner is None:
            uniq, inv, count = np.unique(arc, return_inverse=True, return_counts=True)
            users = np.array([len(members[a]) for a in uniq.tolist()], dtype=np.int64)  # type: ignore[arg-type]
            shared = ((count > 1) & (count == users))[inv]
        else:
            shared = np.isin(arc, np.fromiter(inner, dtype=np.int64, count=len(inner)))
        limit = bound[slots].astype(float, copy=True)
        np.minimum.at(limit, flow[~shared], capacity[arc[~shared]])
        rates = limit.copy()
        has = np.zeros(len(slots), dtype=bool)
        has[flow[shared]] = True
        if has.any():
            index = np.cumsum(has) - 1
            rates[has] = maxmin_rates(index[flow[shared]], arc[shared], int(has.sum()), capacity, limit[has])
        return rates.tolist()

    def _maxmin_scalar(self, slots: list[int], bound: np.ndarray, inner: set[int] | None) -> list[float]:
        """:meth:`_relaxed`'s solve in plain Python for a few flows, given its inner links (None: a whole
        component, whose links of two or more users are all inner):
        :func:`sim.maxmin.maxmin_rates_sequential`'s rule -- the links of the smallest share, and the
        flows bounded below it, fix their flows at that level -- without numpy's per-call cost."""
        if self._cap is None:
            self._cap = self.cluster.capacity.tolist()
        cap, members = self._cap, self._members
        assert members is not None
        slot_arcs = self._slot_arcs
        bounds = [float(bound[s]) for s in slots]
        left: dict[int, float] = {}
        count: dict[int, int] = {}
        users: dict[int, list[int]] = {}
        crossed: list[list[int]] = []  # the inner links of every flow
        for i, slot in enumerate(slots):
            mine = []
            for arc in slot_arcs[slot]:
                if arc in inner if inner is not None else len(members[arc]) > 1:  # type: ignore[arg-type]
                    if arc in users:
                        users[arc].append(i)
                        count[arc] += 1
                    else:
                        users[arc] = [i]
                        count[arc] = 1
                        left[arc] = cap[arc]
                    mine.append(arc)
                elif cap[arc] < bounds[i]:
                    bounds[i] = cap[arc]
            crossed.append(mine)
        rates = [0.0] * len(slots)
        unfixed = set(range(len(slots)))
        while unfixed:
            level = min(bounds[i] for i in unfixed)
            for arc, k in count.items():
                share = left[arc] / k
                if share < level:
                    level = share
            cut = level * (1 + _RTOL)
            newly = {i for i in unfixed if bounds[i] <= cut}
            for arc, k in count.items():
                if left[arc] / k <= cut:
                    newly.update(i for i in users[arc] if i in unfixed)
            unfixed -= newly
            for i in newly:
                rates[i] = level
                for arc in crossed[i]:
                    k = count[arc] - 1
                    if k:
                        count[arc] = k
                        left[arc] = max(left[arc] - level, 0.0)
                    else:
                        del count[arc]
        return rates
