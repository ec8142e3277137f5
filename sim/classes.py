"""Flow classes: many equivalent flows simulated as one, exactly -- the fan-in/fan-out algorithms
(the parameter server, master-worker) without a flow, an event or a process per message.

A :class:`FanPlan` says what such an algorithm does: every worker sends ``nbytes`` to every server at
once (the push), a server reduces the pushes it receives one after another in arrival order on its own
processor (γ·nbytes each, times its compute scale; with ``first_free`` the first is a copy and costs
nothing), and once it has them all it sends ``nbytes`` back to every one of its workers at once (the
pull). That is exactly what ``ParameterServer.run`` and ``MasterWorker.run`` do message by message.

:class:`FanExecutor` simulates the plan with **flow classes**: the messages of a phase that leave at
the same instant with the same start delay and the same wire bytes form a class of ``m`` members, and
a class is one unknown of max-min fairness -- a link crossed by ``k`` of its members carries ``k``
times its rate (:func:`sim.maxmin.maxmin_rates` with weights). That is exact when the members would
get equal rates, and every solution is *verified* member by member before it is used: an allocation is
the max-min fair one iff no link is over capacity (true by construction: the loads are counted
exactly) and every flow crosses a saturated link on which no flow is faster (its bottleneck). A class
whose members do not all have such a link is split -- the members that cross one of its bottlenecks
from the others -- and the network re-solved, until every class passes; a class of one always passes,
so the result is the message-level one, whatever the topology (heterogeneous links, oversubscribed
fabrics, stragglers). Members of a verified class keep equal rates, so they drain and arrive together,
and the servers' reduction queues are advanced with per-server arrival counts. On a uniform fabric a
phase is a handful of classes (by route length), so the cost follows the links, not the p·S messages.

Where ECMP makes the classes split into (server, spine) pairs, the cost follows what changes: only arcs
that fill (**kept arcs**) enter the max-min problem -- every arc's exact load is followed, and an arc
that fills is kept from then on -- and a completion re-solves only its **component**, the classes
joined to it by kept arcs (one leaf above the servers), not every class (:meth:`FanExecutor.simulate`).
And a completion that changes nothing else re-solves only the classes of its component at and above
the completed classes' rate: the slower ones keep their rates (exactly: :meth:`FanExecutor._solve_above`),
which with one shard per rank -- every NIC full, the fabric one component, the fastest classes
mostly completing first -- is a tenth of the component on average (64 and 128 GPUs; 2,048 GPUs with
S = hosts too). Such a settle -- the cut, the one solve above it, the loads followed, the verification and
the completion times -- runs in C where ``sim._classcore`` is built (:meth:`FanExecutor._settle_core`), down
the path it takes nearly always (no arc kept anew, nothing booked, every class verified by its quick test);
where it leaves that path it changes nothing and the Python lines, the reference, run.

On a two-level fabric routed by destination (InfiniBand's D-mod-K: ``dgx:...,ecmp=destination``) a
phase's classes are built from the fabric's structure -- the far pairs counted per source, destination,
(leaf, spine) and (spine, leaf), the few near pairs listed (:mod:`sim.fanblocks`) -- without listing the
p·S pairs; their members stay implicit, and where one such class has to list them (a split, a
verification member by member) the run starts again with every phase built pair by pair.

Only for an algorithm alone on the network (a class assumes nothing else shares its links) and without
the data check (which needs every message's payload: ``--check`` runs the messages).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import maxmin as _maxmin
from ._arrays import ranges
from .bulkroute import bulk_router
from .deadline import check as check_deadline
from .errors import Stalled
from .fanblocks import phase_blocks
from .maxmin import maxmin_rates
from .rates import _CORE, _static_dominators, gather_arcs

__all__ = ["FanExecutor", "FanPlan", "Fragmented", "fan_plan"]

_TIME_RTOL = 1e-12  # classes due within this fraction of "now" complete together (as in sim.network)
_TOL = 1e-9  # saturation and rate ties in the verification
_MIN_CLASSES = 128  # classes a plan may always split into before the message level takes over
# ... and beyond that, at least this many messages per class on average. With the class table in numpy
# a class costs little more than a message of the message level: one shard per rank (every message its
# own class, the senders' NICs full too) runs 1x-2x faster as classes (32-128 GPUs), so only a plan
# fragmented into about one class per message in flight goes to the message level
_FLOWS_PER_CLASS = 2
_WARM = 0.5  # the fraction of its capacity an arc's load reaches to be followed exactly (sim.classes._full)
_COMPACT_MIN = 1 << 20  # crossings in the class table below which dead classes' are not dropped
_NEAR = 1e-6  # rates this close below a completed class's are sorted for a gap first (FanExecutor._cut_below)
_STRUCTURE = True  # phases built from the fabric's structure where it has one (sim.fanblocks)
# a settle of one component that lost classes in C where sim._classcore is built, down the path it nearly
# always takes (FanExecutor._settle_core); the Python lines where it leaves that path
_SETTLE_CORE = True
_SEGMENTS = 8  # the most segments a component's tail is kept in (FanExecutor._due_split_comp)
_NO_SEGMENTS = np.zeros(0)
# FanExecutor._simulate stops (Stalled) after this many iterations in a row that complete and start no class,
# beyond the entries its heap holds after the first of them: such an iteration pops at least one entry and
# pushes none, so a correct run has at most that many in a row (docs/reliability.md: "An engine that makes no
# progress")
_STALLED = 1000
_NOT, _DONE, _ANEW = 0, 1, 2  # what FanExecutor._settle_core did: nothing, the settle, its first solve (arcs kept anew)


class Fragmented(Exception):
    """The classes split nearly into single messages: the message level is the cheaper way."""


@dataclass(frozen=True)
class FanPlan:
    """A push / reduce / pull algorithm: ``servers[k]`` (an endpoint) serves every rank ``0..ranks-1``
    other than itself; each message is ``nbytes``."""

    ranks: int
    servers: tuple[int, ...]
    nbytes: float
    first_free: bool = False


def fan_plan(algorithm: Any, p: int, nbytes: float, cluster: Any, root: int = 0) -> FanPlan | None:
    """``algorithm``'s :class:`FanPlan` on ``cluster``, or None: it has none, or the link model makes a
    link's capacity depend on the flows on it (a class's members would then change it one by one)."""
    plan = algorithm.fan(p, nbytes, cluster, root)
    if plan is None or cluster.message_model.shares:
        return None
    return plan


_CHUNK = 1 << 20  # pairs routed at a time
#: a split's counted and listed crossings go to memory kept for them up to this many int64 (6 per crossing;
#: a larger split allocates its own, rather than keep as much for the rest of the run)
_CUT_ROOM = 6 << 18
_INTERN_MAX = 1 << 22  # messages of a plan up to which their routes are interned as paths


class _Phase:
    """The messages of one phase -- the pushes to ``servers`` (indices into the plan's servers), or
    their pulls -- numbered server by server, ``per`` messages each (pair ``i`` is the ``i % per``-th
    worker of server ``servers[i // per]``); routes are computed when asked for, never all kept."""

    __slots__ = ("ex", "per", "push", "servers")

    def __init__(self, ex: FanExecutor, servers: np.ndarray, push: bool) -> None:
        self.ex = ex
        self.servers = servers
        self.push = push
        self.per = ex.per

    def __len__(self) -> int:
        return len(self.servers) * self.per

    def server(self, idx: np.ndarray) -> np.ndarray:
        """The server index of every pair in ``idx``."""
        return self.servers[idx // self.per]

    def pairs(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(source endpoints, destination endpoints) of the pairs ``idx``."""
        ends = self.ex.ends[self.server(idx)]
        j = idx % self.per
        workers = j + (j >= ends) if self.ex.skip_self else j  # every rank but the server itself
        return (workers, ends) if self.push else (ends, workers)

    def routes(self, idx: np.ndarray, ids: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Arcs of the routes of the pairs ``idx`` (rows padded with -1), and their path ids where
        routes are interned and ``ids`` asks for them (None otherwise)."""
        return self.ex.routes(*self.pairs(idx), ids=ids)

    def crossed(self, idx: np.ndarray) -> np.ndarray:
        """The arcs of the routes of the pairs ``idx`` that the classes count (:meth:`FanExecutor.trim`)."""
        return self.ex.trim(self.routes(idx, ids=False)[0])


class _Class:
    """Equivalent flows: pairs ``members`` of ``phase``, all draining together; their numbers -- start,
    wire bytes left, rate, crossing counts per (arc, hop) -- are row ``id`` of the executor's class
    table (:class:`_Table`), so a re-solve is numpy work over the table, not Python per class. A class
    built from the fabric's structure (:mod:`sim.fanblocks`) holds only how many members it has
    (:class:`_Counts`): asking for its members raises :class:`_Implicit`."""

    __slots__ = ("_members", "cross", "id", "phase")

    def __init__(self, phase: _Phase, members: np.ndarray | _Counts, cid: int) -> None:
        self.phase = phase
        self._members = members
        self.id = cid
        self.cross: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (member, arc, hop), once asked for

    @property
    def members(self) -> np.ndarray:
        members = self._members
        if isinstance(members, _Counts):
            raise _Implicit(f"class {self.id}'s {members.size} members were never listed")
        return members

    @property
    def size(self) -> int:
        return len(self._members)

    def per_server(self, servers: int) -> np.ndarray:
        """How many of the members each server (index) has: pushes only."""
        members = self._members
        if isinstance(members, _Counts):
            return members.per_server
        return np.bincount(self.phase.server(members), minlength=servers)


class _Counts:
    """The members of a class built from the fabric's structure: how many, and how many each server
    has (pushes; None for pulls) -- never enumerated."""

    __slots__ = ("per_server", "size")

    def __init__(self, size: int, per_server: np.ndarray | None) -> None:
        self.size = size
        self.per_server = per_server

    def __len__(self) -> int:
        return self.size


class _Implicit(Exception):
    """A class built from the fabric's structure was asked for its members (a split, or a verification
    member by member): the run starts again with every phase built pair by pair."""


class _Counted:
    """Crossing counts already summed (what :class:`_Entries` returns)."""

    def __init__(self, arc: np.ndarray, hop: np.ndarray, count: np.ndarray, width: int) -> None:
        self._result = (arc, hop, count, width)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        return self._result


class _Table:
    """Every class's numbers, one row per class (index ``_Class.id``), and its crossings: entries
    ``lo[c] .. hi[c] - 1`` of the (``e_arc``, ``e_hop``, ``e_cnt``) columns say how many of its
    members cross each arc at each hop. Rows and entries are only appended (a split class's parts get
    rows of their own)."""

    ROWS = ("rate", "booked", "hbooked", "rem", "since", "start", "due", "comp", "alive", "lo", "hi", "width", "size")
    ROWS += ("k_lo", "k_hi", "k_ver")
    FLOATS = ("rate", "booked", "hbooked", "rem", "since", "start", "due")
    FILL = {"comp": -1, "due": np.inf, "k_ver": -1}  # a new row's values (0 otherwise)
    ENTRIES = ("e_arc", "e_hop", "e_cnt")
    KEPT = ("k_arc", "k_hop", "k_cnt")

    def __init__(self) -> None:
        self.n = 0
        self.ne = 0
        self.objs: list[_Class | None] = []  # None once completed or split: never read again
        for name in self.ROWS:
            dtype = bool if name == "alive" else float if name in self.FLOATS else np.int64
            setattr(self, name, np.full(64, self.FILL.get(name, 0), dtype=dtype))
        for name in self.ENTRIES + self.KEPT:
            setattr(self, name, np.zeros(256, dtype=float if name.endswith("cnt") else np.int64))
        self.kn = 0
        self.compactions = 0
        self._rows = np.empty((2, 0), dtype=np.int64)  # kept_rows' outputs (sim/_classcore.c)
        self._on = np.empty(0, dtype=bool)

    @staticmethod
    def _grown(arr: np.ndarray, need: int, fill: Any) -> np.ndarray:
        if need <= len(arr):
            return arr
        out = np.full(max(need, 2 * len(arr)), fill, dtype=arr.dtype)
        out[: len(arr)] = arr
        return out

    def add(
        self, phase: _Phase, members: np.ndarray | _Counts, start: float, remaining: float, entries: _Entries | _Counted
    ) -> _Class:
        """A new (not yet active) class of ``members`` with the crossings ``entries`` counted."""
        arc, hop, count, width = entries.result()
        ids = self.add_many([phase], [members], [start], [remaining], [width], [len(arc)], (arc, hop, count))
        return self.obj(int(ids[0]))

    def add_many(
        self,
        phases: list[_Phase],
        members: list[np.ndarray] | list[_Counts],
        start: Any,
        remaining: Any,
        width: Any,
        lens: Any,
        entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> np.ndarray:
        """New (not yet active) classes, one per element of ``phases``, ``members``, ...; ``entries``:
        their crossings' (arc, hop, count) columns, class after class, ``lens[i]`` for class ``i``.
        Returns their ids."""
        c, k, total = self.n, len(phases), len(entries[0])
        if c + k > len(self.rate):
            for name in self.ROWS:
                setattr(self, name, self._grown(getattr(self, name), c + k, self.FILL.get(name, 0)))
        if self.ne + total > len(self.e_arc) and self.ne > _COMPACT_MIN:
            # rather than grow: drop the crossings of the classes never read again (completed or
            # split), if they are most of them (a re-solve that splits thousands of classes adds
            # their parts' crossings here, between the event loop's compactions)
            keep = np.flatnonzero([obj is not None for obj in self.objs])
            if 2 * int((self.hi[keep] - self.lo[keep]).sum()) < self.ne:
                self.compact(keep)
        e = self.ne
        if e + total > len(self.e_arc):
            for name in self.ENTRIES:
                setattr(self, name, self._grown(getattr(self, name), e + total, 0))
        for name, col in zip(self.ENTRIES, entries, strict=True):
            getattr(self, name)[e : e + total] = col
        ids = np.arange(c, c + k)
        self.rate[ids] = self.booked[ids] = self.hbooked[ids] = 0.0
        self.rem[ids] = remaining
        self.since[ids] = self.start[ids] = start
        self.due[ids], self.comp[ids], self.alive[ids], self.k_ver[ids] = np.inf, -1, False, -1
        self.hi[ids] = e + np.cumsum(lens)
        self.lo[ids] = self.hi[ids] - np.asarray(lens, dtype=np.int64)
        self.width[ids] = width
        self.size[ids] = [len(m) for m in members]
        self.n, self.ne = c + k, e + total
        self.objs.extend(_Class(p, m, cid) for p, m, cid in zip(phases, members, ids.tolist(), strict=True))
        return ids

    def obj(self, c: int) -> _Class:
        """Class ``c`` (active or waiting)."""
        found = self.objs[c]
        assert found is not None, "a completed or split class was asked for"
        return found

    def drop(self, ids: list[int]) -> None:
        """Forget the members and crossings of the classes ``ids`` (completed, or split into parts)."""
        for c in ids:
            self.objs[c] = None

    def entries(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row within ``ids``, entry index) of every crossing of the classes ``ids``, class by class."""
        lens = self.hi[ids] - self.lo[ids]
        return np.repeat(np.arange(len(ids)), lens), ranges(self.lo[ids], lens)

    def kept(self, ids: np.ndarray, keep: np.ndarray, hot: np.ndarray, version: int) -> tuple[np.ndarray, np.ndarray]:
        """(row within ``ids``, index into the ``k_*`` columns) of every crossing of the classes ``ids``
        on the arcs ``keep`` (a mask), class by class. A class's crossings of the arcs whose loads are
        followed exactly (``hot``, a mask at ``version``: every arc ever kept, and arcs found half
        full) are copied out of its crossings once per version: a re-solve reads only those, not the
        crossings of arcs that never fill, and picks the ones kept now -- arcs left out and kept again
        as loads come and go cost nothing more."""
        stale = ids[self.k_ver[ids] != version]
        if len(stale):
            row, idx = self.entries(stale)
            sel = idx[hot[self.e_arc[idx]]]
            k = self.kn
            if k and k + len(sel) > len(self.k_arc):
                # full of copies from earlier versions: start over with these classes (the others
                # copy theirs again when asked), rather than grow
                self.k_ver[: self.n] = -1
                stale = ids
                row, idx = self.entries(stale)
                sel = idx[hot[self.e_arc[idx]]]
                k = 0
            counts = np.bincount(row[hot[self.e_arc[idx]]], minlength=len(stale))
            for name, src in zip(self.KEPT, self.ENTRIES, strict=True):
                setattr(self, name, self._grown(getattr(self, name), k + len(sel), 0))
                getattr(self, name)[k : k + len(sel)] = getattr(self, src)[sel]
            self.k_hi[stale] = k + np.cumsum(counts)
            self.k_lo[stale] = self.k_hi[stale] - counts
            self.k_ver[stale] = version
            self.kn = k + len(sel)
        core = getattr(_maxmin._CORE, "kept_rows", None)
        if core is not None:  # in C: the same rows (distinct classes copied at most kn)
            if self._rows.shape[1] < self.kn:
                self._rows = np.empty((2, 2 * self.kn), dtype=np.int64)
                self._on = np.empty(2 * self.kn, dtype=bool)
            row, idx = self._rows
            ids = np.ascontiguousarray(ids, np.int64)
            n = core(ids, self.k_lo, self.k_hi, self.k_arc, keep, keep, row, idx, self._on)
            if n >= 0:  # (else a class asked for twice: the numpy lines)
                return row[:n].copy(), idx[:n].copy()
        lens = self.k_hi[ids] - self.k_lo[ids]
        row, idx = np.repeat(np.arange(len(ids)), lens), ranges(self.k_lo[ids], lens)
        on = keep[self.k_arc[idx]]
        return row[on], idx[on]

    def compact(self, keep: np.ndarray) -> None:
        """Drop the crossings of every class but ``keep`` (ids: the active and waiting ones; the others
        -- completed, or split into parts -- are never read again)."""
        row, idx = self.entries(keep)
        lens = self.hi[keep] - self.lo[keep]
        for name in self.ENTRIES:
            setattr(self, name, getattr(self, name)[idx])
        self.lo[: self.n] = self.hi[: self.n] = 0
        self.hi[keep] = np.cumsum(lens)
        self.lo[keep] = self.hi[keep] - lens
        self.ne = len(idx)
        self.compactions += 1
        self.k_ver[: self.n] = -1  # kept crossings are copied again when asked for
        self.kn = 0

    def advance(self, ids: np.ndarray, t: float) -> None:
        """Drain the classes ``ids`` at their rates up to ``t``."""
        rate, since = self.rate[ids], self.since[ids]
        moved = t > since
        with np.errstate(invalid="ignore"):
            drained = np.where(np.isinf(rate), 0.0, self.rem[ids] - rate * (t - since))
        self.rem[ids] = np.where(moved, drained, self.rem[ids])
        self.since[ids] = t


class _Entries:
    """Crossing counts by (arc, hop), accumulated over chunks of route rows: sparse (sorted keys) for
    the few crossings of a small class, a dense count per (arc, hop) for a large one."""

    def __init__(self, arcs: int) -> None:
        self.arcs = arcs
        self.width = 1
        self.keys: list[np.ndarray] = []
        self.dense: np.ndarray | None = None

    def add(self, rows: np.ndarray) -> None:
        width = rows.shape[1]
        if width > self.width:
            if self.keys or self.dense is not None:
                self._flush(regrow=width)
            self.width = width
        col = np.broadcast_to(np.arange(width), rows.shape)
        valid = rows >= 0
        self.keys.append(rows[valid] * self.width + col[valid])
        if sum(len(k) for k in self.keys) > self.arcs * self.width // 4:
            self._flush()

    def _flush(self, regrow: int = 0) -> None:
        """Fold the pending keys into the dense counts (re-laid out ``regrow`` wide if given)."""
        size = self.arcs * self.width
        dense = self.dense if self.dense is not None else np.zeros(size)
        for k in self.keys:
            dense += np.bincount(k, minlength=size)
        self.keys = []
        if regrow:
            grown = np.zeros((self.arcs, regrow))
            grown[:, : self.width] = dense.reshape(self.arcs, self.width)
            dense = grown.reshape(-1)
        self.dense = dense

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        if self.dense is None:
            keys = np.concatenate(self.keys) if self.keys else np.zeros(0, dtype=np.int64)
            key, count = np.unique(keys, return_counts=True)
            count = count.astype(float)
        else:
            self._flush()
            assert self.dense is not None
            key = np.flatnonzero(self.dense)
            count = self.dense[key]
        return key // self.width, key % self.width, count, self.width


def _counted(
    part: np.ndarray, parts: int, arcs: np.ndarray, hop: np.ndarray, width: int, arcs_n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (part, arc, hop) of crossings, sorted, and how many crossings each has (floats):
    ``np.unique`` of the keys ``(part * arcs_n + arc) * width + hop`` with their counts. Where the
    parts times the arcs crossed times ``width`` are few against the crossings, counted in a dense
    table over the arcs crossed (numbered in order, so the keys keep their order) instead of sorted:
    the same arrays, without sorting tens of thousands of keys per split (ps at 2k GPUs). In C where
    ``sim._classcore`` is built: the crossings bucketed by part, each part's cells counted in a table
    and the cells it touched sorted."""
    core = _maxmin._CORE
    if core is not None and len(arcs) < 2**31 - 1:
        out = np.empty((3, len(arcs)), dtype=np.int64)
        count = np.empty(len(arcs))
        k = core.counted(part, parts, arcs, hop, width, arcs_n, out[0], out[1], out[2], count)
        return out[0, :k], out[1, :k], out[2, :k], count[:k]
    marked = np.zeros(arcs_n, dtype=bool)
    marked[arcs] = True
    crossed = np.flatnonzero(marked)
    cells = parts * len(crossed) * width
    if cells > 8 * len(arcs) + 4096:
        key, count = np.unique((part * arcs_n + arcs) * width + hop, return_counts=True)
        return key // (arcs_n * width), key // width % arcs_n, key % width, count.astype(float)
    local = np.zeros(arcs_n, dtype=np.int64)
    local[crossed] = np.arange(len(crossed))
    table = np.bincount((part * len(crossed) + local[arcs]) * width + hop, minlength=cells)
    key = np.flatnonzero(table)
    return key // (len(crossed) * width), crossed[key // width % len(crossed)], key % width, table[key].astype(float)


def _parts(
    sizes: np.ndarray,
    counts: np.ndarray,
    which: np.ndarray,
    arcs: np.ndarray,
    hop: np.ndarray,
    members: np.ndarray,
    saturated: np.ndarray,
    arc_hash: np.ndarray,
    room: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """:meth:`FanExecutor._cut`'s split of classes: class ``i`` has ``sizes[i]`` members (``members``,
    class after class) and ``counts[i]`` crossings (``which``: the member's index within its class, ``arcs``,
    ``hop``; class after class). A member's signature is the sum of ``arc_hash`` (uint64) over the
    saturated arcs it crosses; each class's members with one signature form a part, the parts in the
    order of their signatures, class after class. Returns how many parts each class has, each part's
    first member (and the end) in ``members`` reordered part after part (their order kept within a part),
    the number of (arc, hop) cells each part crosses, those cells' (arc, hop, count) part after part
    (:func:`_counted`), each part's first crossing (and the end) and the crossings part after part, their
    order kept: rows (the member's place in its part, arc, hop). In C where ``sim._classcore`` is built (``cut``):
    the counted and listed crossings then in ``room`` (int64, where it has room for six per crossing), to be
    copied out before the next call."""
    core = _maxmin._CORE
    n, m, e = len(sizes), len(members), len(arcs)
    if core is not None and e < 2**31 - 1 and all(x.dtype == np.int64 for x in (which, arcs, hop, members)):
        per = np.empty(n, dtype=np.int64)
        cuts, edges, lens = np.empty((3, m + 1), dtype=np.int64)
        out = np.empty(m, dtype=np.int64)  # (the parts' members are views of it: an array of its own)
        if room is None or len(room) < 6 * e:
            room = np.empty(6 * e, dtype=np.int64)
        cells, listed = room[: 2 * e].reshape(2, e), room[3 * e : 6 * e].reshape(3, e)
        count = room[2 * e : 3 * e].view(np.float64)
        p, k = core.cut(
            sizes,
            counts,
            which,
            arcs,
            hop,
            members,
            saturated,
            arc_hash.view(np.int64),
            len(saturated),
            per,
            cuts,
            out,
            lens,
            cells[0],
            cells[1],
            count,
            edges,
            listed[0],
            listed[1],
            listed[2],
        )
        return per, cuts[: p + 1], out, lens[:p], (cells[0, :k], cells[1, :k], count[:k]), edges[: p + 1], listed
    first = np.cumsum(sizes) - sizes  # each class's first member, numbered over all of them
    which = which + np.repeat(first, counts)
    sig = np.zeros(m, dtype=np.uint64)
    on = saturated[arcs]
    np.add.at(sig, which[on], arc_hash[arcs[on]])
    owner = np.repeat(np.arange(n), sizes)
    order = np.lexsort((sig, owner))  # members by class, then signature (stable: member order kept)
    new = np.ones(m, dtype=bool)
    new[1:] = (owner[order][1:] != owner[order][:-1]) | (sig[order][1:] != sig[order][:-1])
    cuts = np.append(np.flatnonzero(new), m)
    part = np.empty(m, dtype=np.int64)
    part[order] = np.cumsum(new) - 1
    per = np.bincount(owner[order][new], minlength=n)
    where = np.empty(m, dtype=np.int64)  # each member's position within its part
    where[order] = np.arange(m) - np.repeat(cuts[:-1], np.diff(cuts))
    pw = part[which]
    width = int(hop.max(initial=0)) + 1
    e_part, e_arc, e_hop, e_cnt = _counted(pw, len(cuts) - 1, arcs, hop, width, len(saturated))
    grouped = np.argsort(pw, kind="stable")
    edges = np.searchsorted(pw[grouped], np.arange(len(cuts)))
    lens = np.bincount(e_part, minlength=len(cuts) - 1)
    return (
        per,
        cuts,
        members[order],
        lens,
        (e_arc, e_hop, e_cnt),
        edges,
        np.stack((where[which[grouped]], arcs[grouped], hop[grouped])),
    )


def _necks(
    cls: np.ndarray,
    local: np.ndarray,
    count: np.ndarray,
    hop: np.ndarray,
    rate: np.ndarray,
    taken: np.ndarray,
    capacity: np.ndarray,
    size: np.ndarray,
    width: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numbers of a solve's verification (:meth:`FanExecutor._unverified`): which arcs crossed are
    full (``capacity`` and ``taken`` per arc, ``local`` numbering them per crossing), which crossings are
    bottlenecks (a full arc, no class on it faster by ``_TOL``), and which classes' bottleneck crossings
    at one hop position count every member (``size``). In C where ``sim._classcore`` is built (the same
    operations in the same order), numpy otherwise."""
    core = _maxmin._CORE
    if core is not None:
        full, neck, quick = np.empty(len(capacity), bool), np.empty(len(cls), bool), np.empty(len(size), bool)
        core.necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick)
        return full, neck, quick
    load = taken + np.bincount(local, weights=count * rate[cls], minlength=len(capacity))
    fastest = np.zeros(len(capacity))
    np.maximum.at(fastest, local, rate[cls])
    full = load >= capacity * (1 - _TOL)
    neck = full[local] & (rate[cls] >= fastest[local] * (1 - _TOL))
    # quick test: the bottleneck crossings at one hop position account for every member
    cover = np.bincount(cls[neck] * width + hop[neck], weights=count[neck], minlength=len(size) * width)
    quick = (cover.reshape(len(size), width) >= size[:, None]).any(axis=1)
    return full, neck, quick


class FanExecutor:
    """Runs a :class:`FanPlan` alone on ``net`` with flow classes (see the module docstring); the same
    times as the algorithm's SimPy process. ``run()`` is the process body.

    ``fallback`` (the algorithm's own process) runs instead when the classes fragment past
    ``max_classes`` (default ``max(128, messages / 2)``); ``paths`` interns every route of a phase built
    pair by pair as a path even for plans of more than 4 M messages. A phase built from the fabric's
    structure (:mod:`sim.fanblocks`: a two-level fabric routed by destination) interns none: its bytes
    are booked per arc and rank (:meth:`unpathed`).

    Attributes
    ----------
    mode : str
        ``classes``.
    solves, splits : int
        Max-min computations, and classes split because their members were not equivalent.
    partial : int
        Changes that re-solved only some of the active classes (the components they touch).
    above : int
        Of those, solves of only the classes at and above the rates of the classes that completed
        (the slower ones keep theirs, :meth:`_solve_above`).
    bookings : int
        Times every class's loads were booked on every arc it crosses (:meth:`_full`).
    compactions : int
        Times the class table dropped the crossings of split and completed classes.
    """

    mode = "classes"

    def __init__(
        self,
        net: Any,
        plan: FanPlan,
        gamma: float,
        compute_scale: np.ndarray | None = None,
        *,
        fallback: Callable[[], Generator[Any, Any, None]] | None = None,
        max_classes: float | None = None,
        paths: bool = False,
    ) -> None:
        self.net = net
        self.fallback = fallback
        flows = 2 * len(plan.servers) * max(plan.ranks - 1, 0)
        self.max_classes = max(_MIN_CLASSES, flows / _FLOWS_PER_CLASS) if max_classes is None else max_classes
        self._booked: list[tuple[str, tuple[Any, ...]]] = []
        self.env = net.env
        self.plan = plan
        self.cluster = cl = net.cluster
        s = len(plan.servers)
        self.ends = servers = np.asarray(plan.servers, dtype=np.int64)
        scale = np.ones(cl.size) if compute_scale is None else np.asarray(compute_scale)
        scale = np.concatenate([scale, np.ones(max(0, int(servers.max(initial=0)) + 1 - len(scale)))])
        # the reduction of one push on each server (job.combine / job.compute: only when γ > 0)
        self.fold = plan.nbytes * gamma * scale[servers] if gamma > 0 else np.zeros(s)
        # every server serves every rank but itself: all but co-located ones serve all p
        self.skip_self = bool((servers < plan.ranks).all()) if s else False
        if s and not self.skip_self and (servers < plan.ranks).any():
            raise ValueError("servers must be all ranks or all beyond the ranks")
        self.per = plan.ranks - 1 if self.skip_self else plan.ranks
        self.expected = np.full(s, self.per, dtype=np.int64)
        self.solves = 0
        self.splits = 0
        self.partial = 0
        self.above = 0
        self.bookings = 0
        self._tab = _Table()
        self._arc_hash = np.zeros(0, dtype=np.uint64)
        self._cut_room = np.empty(0, dtype=np.int64)  # _parts' outputs copied out (a split's crossings)
        self.nominal = not cl.link_model.classes
        self.bulk = bulk_router(cl) if self.nominal and (servers < cl.size).all() else None
        # routes interned as paths (Network.path_bytes sees the bytes): asked for, or small enough
        self.intern = paths or 2 * s * self.per <= _INTERN_MAX or self.bulk is None
        self._dom = _static_dominators(cl)
        #: phases built from the fabric's structure (:mod:`sim.fanblocks`), without listing their pairs;
        #: False once such a class had to list its members (the run then started again pair by pair)
        self.structured = _STRUCTURE and self.bulk is not None and self.bulk.dest_key is not None
        self.implicit = 0  # phases so built

    @property
    def compactions(self) -> int:
        return self._tab.compactions

    def run(self) -> Generator[Any, Any, None]:
        """The SimPy process body: the plan with flow classes, or, where they fragment into nearly one
        class per message and a ``fallback`` (the algorithm's own process) is given, that instead."""
        try:
            end = self.simulate(float(self.env.now))
        except Fragmented:
            if self.fallback is None:
                raise
            self.mode = "message"
            yield from self.fallback()
            return
        for kind, args in self._booked:
            getattr(self.net, kind)(*args)
        yield self.env.timeout(end - self.env.now)

    def unpathed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The bytes this run booked without paths (:meth:`sim.network.Network.account_arcs`: per link
        direction, sent and received per rank), summed; None where it booked every message by path."""
        booked = [args for kind, args in self._booked if kind == "account_arcs"]
        if not booked or self.mode != "classes":
            return None
        return tuple(np.sum([args[i] for args in booked], axis=0) for i in range(3))  # type: ignore[return-value]

    # ------------------------------------------------------------------ routes and phases
    def routes(self, srcs: np.ndarray, dsts: np.ndarray, ids: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Arcs of the routes ``srcs`` -> ``dsts`` (rows padded with -1), and their interned path ids
        (None when the plan is too large to intern them, or ``ids`` is false)."""
        cl = self.cluster
        if self.bulk is None:
            pids = np.fromiter(
                (cl.path_id(a, b) for a, b in zip(srcs.tolist(), dsts.tolist(), strict=True)),
                dtype=np.int64,
                count=len(srcs),
            )
            paths = cl.paths
            lens = paths.length[pids]
            rows = np.full((len(pids), max(int(lens.max(initial=0)), 1)), -1, dtype=np.int64)
            which, arcs = gather_arcs(paths, pids)
            rows[which, np.arange(len(arcs)) - np.repeat(np.cumsum(lens) - lens, lens)] = arcs
            return rows, pids
        rows, odd = self.bulk.routes(srcs, dsts)
        for i in np.flatnonzero(odd).tolist():  # several common neighbours: the router's own choice
            arcs = cl.router.route(int(cl.rank_node[srcs[i]]), int(cl.rank_node[dsts[i]]))
            rows[i, : len(arcs)] = arcs
        return rows, cl.intern_routes(srcs, dsts, rows) if self.intern and ids else None

    def trim(self, rows: np.ndarray) -> np.ndarray:
        """Route ``rows`` without the arcs whose neighbour in the route is their dominator (-1 there):
        an arc out of or into a node with no other neighbour (a NIC between its GPU and its leaf)
        carries exactly the flows of the adjacent arc beside it, and where that one is no wider its
        constraint implies the arc's -- the feasible rates, hence the max-min fair ones, are the same
        without it. The classes then count ~1/3 fewer crossings. (With the compiled core, one pass in C:
        ``trim_rows``.)"""
        if _CORE is not None and rows.size:
            rows = np.ascontiguousarray(rows, dtype=np.int64)
            out = np.empty_like(rows)
            try:
                _CORE.trim_rows(rows.ravel(), self._dom, rows.shape[1], out.ravel())
            except ValueError as exc:  # pragma: no cover - as below
                raise AssertionError(str(exc)) from None
            return out
        dom = self._dom[np.maximum(rows, 0)]
        hit = (rows >= 0) & (dom >= 0)
        if not hit.any():
            return rows
        beside = np.zeros(rows.shape, dtype=bool)
        beside[:, 1:] = rows[:, :-1] == dom[:, 1:]
        beside[:, :-1] |= rows[:, 1:] == dom[:, :-1]
        if (hit & ~beside).any():  # pragma: no cover - a simple path leaves such a node the other way
            raise AssertionError("a route crosses an arc without the arc that dominates it")
        return np.where(hit, -1, rows)

    def _delays(self, rows: np.ndarray, srcs: np.ndarray) -> np.ndarray:
        """The start delays of messages from ``srcs`` along route ``rows`` (padded with -1): their
        latencies summed row by row, plus the sender's overhead."""
        cl = self.cluster
        return np.where(rows >= 0, cl.latency[np.maximum(rows, 0)], 0.0).sum(axis=1) + cl.overhead[srcs]

    def _phase(self, servers: np.ndarray, t: float, push: bool) -> list[_Class]:
        """The classes of the pushes to (``push``) or the pulls from ``servers`` (indices), sent at
        ``t``: messages with the same start delay and wire bytes, and their crossing counts -- from the
        fabric's structure where it has one (:meth:`_phase_blocks`), else pair by pair."""
        plan, cl = self.plan, self.cluster
        phase = _Phase(self, servers, push)
        if self.structured:
            got = self._phase_blocks(phase, t)
            if got is not None:
                self.implicit += 1
                return got
        groups: dict[tuple[float, float], tuple[list[np.ndarray], _Entries]] = {}
        arc_bytes = np.zeros(cl.num_arcs)
        sent = np.zeros(cl.size)
        received = np.zeros(cl.size)
        for a in range(0, len(phase), _CHUNK):
            idx = np.arange(a, min(a + _CHUNK, len(phase)), dtype=np.int64)
            srcs, dsts = phase.pairs(idx)
            rows, pids = phase.routes(idx)
            nbytes = np.full(len(idx), plan.nbytes)
            if pids is not None:
                self._booked.append(("account", (pids, nbytes, len(idx))))
                delay, wire = cl.message_model.many(pids, srcs, nbytes)
            else:
                valid = rows >= 0
                arc_bytes += np.bincount(rows[valid], minlength=cl.num_arcs) * plan.nbytes
                sent += np.bincount(srcs, minlength=cl.size) * plan.nbytes
                received += np.bincount(dsts, minlength=cl.size) * plan.nbytes
                delay = self._delays(rows, srcs)
                wire = nbytes
            crossed = self.trim(rows)
            # group by (delay, wire): each column on its own (np.unique over rows sorts far slower)
            delays, d = np.unique(np.asarray(delay, dtype=float), return_inverse=True)
            wires, w = np.unique(np.asarray(wire, dtype=float), return_inverse=True)
            codes, inverse = np.unique(d.reshape(-1) * len(wires) + w.reshape(-1), return_inverse=True)
            inverse = inverse.reshape(-1)
            for i, code in enumerate(codes.tolist()):
                key = (float(delays[code // len(wires)]), float(wires[code % len(wires)]))
                pick = inverse == i
                members, entries = groups.setdefault(key, ([], _Entries(cl.num_arcs)))
                members.append(idx[pick])
                entries.add(crossed[pick])
        if self.bulk is not None and not self.intern:
            self._booked.append(("account_arcs", (arc_bytes, sent, received, len(phase))))
        return [
            self._add(phase, np.concatenate(members), t + key[0], key[1], entries)
            for key, (members, entries) in sorted(groups.items())
        ]

    def _phase_blocks(self, phase: _Phase, t: float) -> list[_Class] | None:
        """:meth:`_phase` without listing the pairs (:mod:`sim.fanblocks`): the near pairs routed as
        any pair, the far ones counted by shape; the same classes, crossings and bookings as the pairs
        give, members not listed (:class:`_Counts`). None where the fabric lacks the structure."""
        plan, cl = self.plan, self.cluster
        s = len(plan.servers)
        ends = self.ends[phase.servers]
        ranks = np.arange(plan.ranks, dtype=np.int64)
        srcs, dsts = (ranks, ends) if phase.push else (ends, ranks)
        node = cl.rank_node
        blocks = phase_blocks(self.bulk, self._dom, node[srcs], node[dsts], cl.overhead[srcs])
        if blocks is None:
            return None
        width = self.bulk.width
        a, b = srcs[blocks.near_src], dsts[blocks.near_dst]
        rows = self.routes(a, b, ids=False)[0]
        crossed = self.trim(rows)
        valid = rows >= 0
        nbytes = float(plan.nbytes)
        # the bookings: every arc and rank by how many pairs cross or send or receive
        arc_bytes = np.bincount(rows[valid], minlength=cl.num_arcs).astype(float)
        sent = np.bincount(a, minlength=cl.size).astype(float)
        received = np.bincount(b, minlength=cl.size).astype(float)
        for shape in blocks.shapes:
            arc_bytes += np.bincount(shape.arcs, weights=shape.arc_count, minlength=cl.num_arcs)
            sent[srcs] += shape.per_src
            received[dsts] += shape.per_dst
        if int(sent.sum()) != len(phase):  # pragma: no cover - the counts are built to add up
            raise AssertionError(f"{int(sent.sum())} pairs counted of a phase of {len(phase)}")
        self._booked.append(("account_arcs", (arc_bytes * nbytes, sent * nbytes, received * nbytes, len(phase))))
        # the classes: the near pairs grouped by start delay, each shape one delay
        delay = self._delays(rows, a)
        key = np.where(crossed >= 0, crossed * width + np.arange(width)[None, :], -1)
        groups: dict[float, list[Any]] = {}
        for d in np.unique(delay).tolist():
            pick = delay == d
            k = key[pick]
            groups.setdefault(d, []).append((k[k >= 0], np.ones(int((k >= 0).sum()), dtype=np.int64), pick, None))
        for shape in blocks.shapes:
            first = int(np.argmax(shape.per_src > 0))
            d = float(self._delays(shape.row[None, :], srcs[first : first + 1])[0])
            groups.setdefault(d, []).append((shape.key, shape.count, None, shape))
        out = []
        for d in sorted(groups):
            parts = groups[d]
            keys, counts = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
            total = np.bincount(counts.reshape(-1), weights=np.concatenate([p[1] for p in parts]), minlength=len(keys))
            size = 0
            per_server = np.zeros(s, dtype=np.int64) if phase.push else None
            for _, _, pick, shape in parts:
                if shape is None:
                    size += int(pick.sum())
                    if per_server is not None:
                        per_server += np.bincount(phase.servers[blocks.near_dst[pick]], minlength=s)
                else:
                    size += shape.size
                    if per_server is not None:
                        per_server[phase.servers] += shape.per_dst
            entries = _Counted(keys // width, keys % width, total, width)
            out.append(self._tab.add(phase, _Counts(size, per_server), t + d, nbytes, entries))
        return out

    # ------------------------------------------------------------------ rates
    def _promote(self, arcs: np.ndarray) -> bool:
        """Keep ``arcs`` (indices) from now on; whether any was not kept yet."""
        arcs = arcs[~self._keep[arcs]]
        if not len(arcs):
            return False
        self._keep[arcs] = True
        self._kept_new.append(arcs)
        first = np.unique(arcs[~self._hot[arcs]])
        if len(first):  # kept for the first time: their loads followed exactly from now on
            self._book_all()  # (every class booked at its rate)
            self._heat(first[~self._hot[first]])
        self._kept_version += 1
        return True

    def _active(self) -> np.ndarray:
        """The ids of the active (draining) classes."""
        return np.flatnonzero(self._tab.alive[: self._tab.n])

    def _full(self, solved: np.ndarray, hot: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """The arcs not kept that the active classes fill at their rates (indices), once the classes
        ``solved`` have new rates; ``hot``: their crossings of the arcs followed exactly (:meth:`_Table.kept`).

        The arcs ever kept or found half full (``_hot``: the few that fill, a leaf's spine downlinks and
        NICs) have their loads followed exactly: a solve books its classes' crossings of them
        (``hbooked``). The other
        arcs' loads (``_loads``) are booked at each class's rate as of its last booking (``booked``),
        and an arc's load is at most that plus its crossing members times the largest rise of a rate
        since: only when that rise reaches the least room per member of any such arc (``_room``) are
        the classes solved since booked again -- a pass over their crossings -- and the loads they
        touch compared exactly. A re-solve costs its classes' crossings of the arcs that fill, not
        their routes (a push crosses its sender's NIC and leaf uplink too)."""
        tab, cap = self._tab, self.cluster.capacity
        row, idx = hot
        core = getattr(_maxmin._CORE, "full_loads", None)
        if core is not None:  # in C: the same loads, bookings, arcs and rise
            out = np.empty(len(idx), dtype=np.int64)
            n, rise = core(solved, tab.rate, tab.hbooked, tab.booked, row, idx, tab.k_arc, tab.k_cnt, self._hot_loads,
                           self._keep, cap, out)  # fmt: skip
            self._unbooked.append(solved)
            self._rise = max(self._rise, rise)
            return self._full_booked(out[:n])
        rate = tab.rate[solved]
        finite = np.isfinite(rate)
        arcs = tab.k_arc[idx]
        rise = np.where(finite, rate - tab.hbooked[solved], 0.0)
        np.add.at(self._hot_loads, arcs, tab.k_cnt[idx] * rise[row])
        tab.hbooked[solved] = np.where(finite, rate, 0.0)
        full = arcs[~self._keep[arcs] & (self._hot_loads[arcs] >= cap[arcs] * (1 - _TOL))]
        self._unbooked.append(solved)
        rise = np.where(finite, rate - tab.booked[solved], 0.0)
        self._rise = max(self._rise, float(rise.max(initial=0.0)))
        return self._full_booked(full)

    def _full_booked(self, full: np.ndarray) -> np.ndarray:
        """:meth:`_full`'s ``full`` arcs, with those the classes fill once booked again where the largest rise
        since the last booking reaches the least room."""
        cap = self.cluster.capacity
        if self._rise >= self._room:
            arcs = self._book_all()
            # every load exact now (arcs it makes followed included)
            full = np.concatenate([full, arcs[~self._keep[arcs] & (self._loads[arcs] >= cap[arcs] * (1 - _TOL))]])
        return full

    def _book_all(self) -> np.ndarray:
        """Book every class solved since the last booking at its rate on every arc it crosses (the
        loads exact again), and renew the least room per member of the arcs never kept; returns the
        arcs whose loads moved."""
        tab, cap = self._tab, self.cluster.capacity
        ids = np.unique(np.concatenate(self._unbooked)) if self._unbooked else np.zeros(0, dtype=np.int64)
        self._unbooked, self._rise = [], 0.0
        self.bookings += 1
        ids = ids[tab.alive[ids]]  # the others left the loads at their booked rates
        rate = tab.rate[ids]
        rise = np.where(np.isfinite(rate), rate - tab.booked[ids], 0.0)
        ids, rise = ids[rise != 0], rise[rise != 0]
        row, idx = tab.entries(ids)
        arcs = tab.e_arc[idx]
        np.add.at(self._loads, arcs, tab.e_cnt[idx] * rise[row])
        tab.booked[ids] = tab.rate[ids]
        crossed = np.flatnonzero((self._crossers > 0) & ~self._hot)
        warm = crossed[self._loads[crossed] >= cap[crossed] * _WARM]
        if len(warm):
            self._heat(warm)
        self._room = self._room_of(crossed)
        return arcs

    def _heat(self, arcs: np.ndarray) -> None:
        """Follow the loads of ``arcs`` (distinct, not yet followed, every class booked at its rate)
        exactly from now on: the classes copy their crossings of them."""
        self._hot[arcs] = True
        self._hot_loads[arcs] = self._loads[arcs]
        self._hot_version += 1

    def _room_of(self, arcs: np.ndarray) -> float:
        """The least room per crossing member (bytes/s) of ``arcs`` at their booked loads."""
        cap = self.cluster.capacity
        arcs = arcs[(self._crossers[arcs] > 0) & ~self._hot[arcs]]
        room = (cap[arcs] * (1 - _TOL) - self._loads[arcs]) / self._crossers[arcs]
        return float(room.min(initial=np.inf))

    def _solve(self, region: np.ndarray, everything: bool, others: bool = False) -> np.ndarray | None:
        """Set the rates of ``region`` (class ids: whole components of classes joined by kept arcs) to
        the max-min fair ones, splitting classes until each is verified; returns the refined region, or
        None when an arc had to be kept anew (components may join: the caller solves the region again
        with the components the new arcs join to it, :meth:`_joined`). ``everything``: the region is
        every active class, or was just so joined (kept arcs it leaves slack are then left out).

        Only kept arcs enter the max-min problem; the result is the fair one of the whole network when
        no other arc is full (an allocation is max-min fair iff it is feasible and every flow crosses a
        saturated arc on which no flow is faster): an arc found full is kept from then on.

        ``others``: ``region`` is only part of its components, the others' rates stand (:meth:`_solve_above`):
        their loads on the kept arcs -- the arcs' loads less the region's -- are taken off the capacities
        and count in the verification."""
        cap = self.cluster.capacity
        tab = self._tab
        version = self._kept_version
        while True:
            check_deadline()
            lens = tab.hi[region] - tab.lo[region]
            live, empty = region[lens > 0], region[lens == 0]
            # their crossings of the arcs followed exactly (every kept arc is one), read once for the
            # solve (the kept ones) and for the loads (_full)
            hot = tab.kept(live, self._hot, self._hot, self._hot_version)
            on = self._keep[tab.k_arc[hot[1]]]
            cls, kidx = hot[0][on], hot[1][on]
            bare = live[np.bincount(cls, minlength=len(live)) == 0]
            if len(bare):
                # nothing kept on their routes yet: keep their tightest arcs
                row, idx = tab.entries(bare)
                e_arc = tab.e_arc[idx]
                share = cap[e_arc] / tab.e_cnt[idx]
                lens = tab.hi[bare] - tab.lo[bare]
                tightest = np.minimum.reduceat(share, np.cumsum(lens) - lens)
                self._promote(e_arc[share <= tightest[row] * (1 + _TOL)])
            if self._kept_version != version:
                return None
            self.solves += 1
            tab.rate[empty] = np.inf  # an empty path: drains at once
            arc = tab.k_arc[kidx]
            if not len(live):
                self._last = (live, cls, arc)
                return region
            hop, count = tab.k_hop[kidx], tab.k_cnt[kidx]
            where, local = self._numbered(arc)  # the arcs crossed, numbered locally
            taken = np.zeros(len(where))
            if others:  # the arcs' loads (every class at its rate: ``hbooked``) less the region's
                mine = np.bincount(local, weights=count * tab.hbooked[live][cls], minlength=len(where))
                taken = np.maximum(self._hot_loads[where] - mine, 0.0)
            rate = maxmin_rates(cls, local, len(live), np.maximum(cap[where] - taken, 0.0), weight=count)
            tab.rate[live] = rate
            if self._promote(self._full(live, hot)):
                return None
            bad, saturated, slack = self._unverified(live, cls, (where, local), hop, count, rate, taken)
            if not len(bad):
                # kept arcs of the region that carry less than their capacity bind nobody: leave them
                # out (they only join components) until their load fills them again (after solving
                # everything only: it makes every class read its kept arcs again)
                if everything and len(slack):
                    self._keep[slack] = False
                    self._kept_version += 1
                self._last = (live, cls, arc)
                return region
            if self._nactive + len(bad) > self.max_classes:
                raise Fragmented(f"{self._nactive} flow classes")
            good = np.ones(len(live), dtype=bool)
            good[bad] = False
            parts = self._split([tab.obj(i) for i in live[bad].tolist()], saturated)
            region = np.concatenate([live[good], parts, empty])

    def _numbered(self, arcs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``np.unique(arcs, return_inverse=True)`` for arc indices: the distinct arcs in order, and each
        one's index among them -- by marking them in a table of every arc rather than sorting."""
        mark = self._mark
        mark[arcs] = True
        where = np.flatnonzero(mark)
        mark[where] = False
        index = self._index_of
        index[where] = np.arange(len(where))
        return where, index[arcs]

    def _unverified(
        self,
        live: np.ndarray,
        cls: np.ndarray,
        arcs: tuple[np.ndarray, np.ndarray],
        hop: np.ndarray,
        count: np.ndarray,
        rate: np.ndarray,
        taken: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of ``live`` some member of which has no bottleneck, the saturated arcs (a mask) and
        the arcs crossed that are not saturated (indices); ``arcs``: the arcs crossed, and each
        crossing's index among them; ``taken``: the load of the classes whose rates stand on each of
        those arcs (all slower than every class solved: :meth:`_solve_above`)."""
        cap = self.cluster.capacity
        where, local = arcs
        arc = where[local]
        width = int(self._tab.width[live].max())
        full, neck, quick = _necks(cls, local, count, hop, rate, taken, cap[where], self._tab.size[live], width)
        saturated = np.zeros(len(cap), dtype=bool)
        saturated[where[full]] = True
        bad = []
        offsets = np.searchsorted(cls, np.arange(len(live) + 1))  # cls is sorted
        for i in np.flatnonzero(~quick).tolist():
            necks = np.zeros(len(cap), dtype=bool)
            a, b = offsets[i], offsets[i + 1]
            necks[arc[a:b][neck[a:b]]] = True
            if not self._every_member_crosses(self._tab.obj(int(live[i])), necks):  # some member has no bottleneck
                bad.append(i)
        return np.array(bad, dtype=np.int64), saturated, where[~full]

    def _every_member_crosses(self, c: _Class, arcs_mask: np.ndarray) -> bool:
        """Whether every member of ``c`` crosses an arc of ``arcs_mask`` (large classes by chunks)."""
        if c.size > _CHUNK:
            for lo in range(0, c.size, _CHUNK):
                rows = c.phase.crossed(c.members[lo : lo + _CHUNK])
                if not np.where(rows >= 0, arcs_mask[np.maximum(rows, 0)], False).any(axis=1).all():
                    return False
            return True
        which, arcs, _ = self._crossings(c)
        hit = np.zeros(c.size, dtype=bool)
        hit[which[arcs_mask[arcs]]] = True
        return bool(hit.all())

    @staticmethod
    def _crossings(c: _Class) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(member index, arc, hop) of every arc every member of ``c`` crosses (kept for classes of up
        to a chunk of members: verification asks again after every change)."""
        if c.cross is not None:
            return c.cross
        rows = c.phase.crossed(c.members)
        which, hop = np.nonzero(rows >= 0)
        cross = which, rows[rows >= 0], hop
        if c.size <= _CHUNK:
            c.cross = cross
        return cross

    def _add(
        self, phase: _Phase, members: np.ndarray, start: float, remaining: float, entries: _Entries | None = None
    ) -> _Class:
        """A new class in the table (its crossings counted from its routes unless ``entries`` has them)."""
        if entries is None:
            entries = _Entries(self.cluster.num_arcs)
            for a in range(0, len(members), _CHUNK):
                entries.add(phase.crossed(members[a : a + _CHUNK]))
        return self._tab.add(phase, members, start, remaining, entries)

    def _split(self, cs: list[_Class], saturated: np.ndarray) -> np.ndarray:
        """The classes ``cs`` cut by which saturated arcs their members cross (members on the same ones
        stay together); the parts (their ids) take their places among the active classes."""
        tab = self._tab
        self.splits += len(cs)
        if len(self._arc_hash) != len(saturated):
            x = (np.arange(len(saturated), dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            x ^= x >> np.uint64(29)
            self._arc_hash = x * np.uint64(0xBF58476D1CE4E5B9)
        parts: list[int] = []
        parents: list[int] = []
        for c in cs:
            if c.size > _CHUNK:
                got = self._cut_large(c, saturated)
                parts += [part.id for part in got]
                parents += [c.id] * len(got)
        small = [c for c in cs if c.size <= _CHUNK]
        if small:
            ids, per = self._cut(small, saturated)
            parts += ids.tolist()
            parents += np.repeat([c.id for c in small], per).tolist()
        ids, parent = np.array(parts, dtype=np.int64), np.array(parents, dtype=np.int64)
        tab.since[ids] = tab.since[parent]
        tab.rate[ids] = tab.rate[parent]
        tab.booked[ids] = tab.booked[parent]
        tab.hbooked[ids] = tab.hbooked[parent]
        self._unbooked.append(ids)  # the parts carry their parents' rise since their booking
        tab.alive[ids] = True
        tab.alive[[c.id for c in cs]] = False
        self._nactive += len(ids) - len(cs)
        tab.drop([c.id for c in cs])
        return ids

    def _cut_large(self, c: _Class, saturated: np.ndarray) -> list[_Class]:
        """A class of more than a chunk of members cut as :meth:`_cut` does, its signatures computed by
        chunks of routes (the parts route their members again)."""
        tab = self._tab
        sig = np.zeros(c.size, dtype=np.uint64)
        mark = np.where(saturated, self._arc_hash, np.uint64(0))
        for lo in range(0, c.size, _CHUNK):
            rows = c.phase.crossed(c.members[lo : lo + _CHUNK])
            sig[lo : lo + len(rows)] = np.where(rows >= 0, mark[np.maximum(rows, 0)], np.uint64(0)).sum(
                axis=1, dtype=np.uint64
            )
        _, part = np.unique(sig, return_inverse=True)
        part = part.reshape(-1)
        order = np.argsort(part, kind="stable")
        cuts = np.searchsorted(part[order], np.arange(int(part.max()) + 2))
        start, remaining = float(tab.start[c.id]), float(tab.rem[c.id])
        return [
            self._add(c.phase, c.members[order[a:b]], start, remaining)
            for a, b in zip(cuts[:-1], cuts[1:], strict=True)
        ]

    def _cut(self, cs: list[_Class], saturated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The classes ``cs`` (of up to a chunk of members each) cut all at once: each one's members
        grouped by which saturated arcs they cross (a sum of per-arc hashes), the parts' crossings
        counted from their parents' (no route is computed again: :func:`_parts`). Returns the parts'
        ids, class by class, and how many parts each class has."""
        tab = self._tab
        cross = [self._crossings(c) for c in cs]
        counts = np.array([len(x[0]) for x in cross], dtype=np.int64)
        need = 6 * int(counts.sum())
        if len(self._cut_room) < need <= _CUT_ROOM:  # (the rare larger splits: arrays of their own)
            self._cut_room = np.empty(min(2 * need, _CUT_ROOM), dtype=np.int64)
        per, cuts, members, lens, entries, edges, listed = _parts(
            np.array([c.size for c in cs], dtype=np.int64),
            counts,
            *(np.concatenate([x[k] for x in cross]) for k in range(3)),
            np.concatenate([c.members for c in cs]),
            saturated,
            self._arc_hash,
            self._cut_room,
        )
        if (per < 2).any():  # pragma: no cover - then every member crosses the same bottlenecks
            raise AssertionError("flow class failed verification but its members are alike")
        parent = np.repeat(np.array([c.id for c in cs], dtype=np.int64), per)
        ids = tab.add_many(
            [c.phase for c, k in zip(cs, per.tolist(), strict=True) for _ in range(k)],
            [members[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)],
            tab.start[parent],
            tab.rem[parent],
            tab.width[parent],
            lens,
            entries,
        )
        for cid, a, b in zip(ids.tolist(), edges[:-1].tolist(), edges[1:].tolist(), strict=True):
            block = listed[:, a:b].copy()  # (the split's arrays are used again: each part's own copy)
            tab.obj(cid).cross = (block[0], block[1], block[2])
        return ids, per

    # ------------------------------------------------------------------ components and the event loop
    def _components(self, region: np.ndarray) -> None:
        """Number the components of ``region`` (class ids): classes joined by the kept arcs they cross.
        Classes of different components share no kept arc, so each component's max-min problem is its
        own."""
        tab = self._tab
        live, cls, arc = self._last  # the kept crossings of the region's last solve
        empty = region[tab.hi[region] == tab.lo[region]]
        tab.comp[empty] = self._next_comp + np.arange(len(empty))
        self._next_comp += len(empty)
        if not len(live):
            return
        on = self._keep[arc]  # arcs left out after the solve join nothing
        cls = cls[on]
        arcs, where = self._numbered(arc[on])
        label = np.arange(len(live))
        while True:  # smallest class index of each component, spread over the kept arcs
            at_arc = np.full(len(arcs), len(live))
            np.minimum.at(at_arc, where, label[cls])
            new = label.copy()
            np.minimum.at(new, cls, at_arc[where])
            new = new[new]
            if np.array_equal(new, label):
                break
            label = new
        labels, comp = np.unique(label, return_inverse=True)
        tab.comp[live] = self._next_comp + comp.reshape(-1)
        number = np.zeros(len(live), dtype=np.int64)
        number[labels] = self._next_comp + np.arange(len(labels))
        self._next_comp += len(labels)
        self._arc_comp[arcs] = number[at_arc]

    def _members_of(self, comps: np.ndarray) -> np.ndarray:
        """The active classes of the components ``comps``."""
        found = [self._comps[c] for c in comps.tolist() if c in self._comps]
        if not found:
            return np.zeros(0, dtype=np.int64)
        return self._alive(found[0] if len(found) == 1 else np.concatenate(found))

    def _alive(self, members: np.ndarray, t: float = np.nan, near: float = np.nan) -> np.ndarray:
        """The active classes of ``members`` (ids), in order; those due by ``t + near`` where ``near`` is given.
        In C where ``sim._classcore`` is built (``due_at``)."""
        tab = self._tab
        core = getattr(_maxmin._CORE, "due_at", None)
        if core is not None:
            out = np.empty(len(members), dtype=np.int64)
            return out[: core(members, tab.alive, tab.due, t, near, out)]
        members = members[tab.alive[members]]
        return members if np.isnan(near) else members[tab.due[members] - t <= near]

    def _due_split(self, members: np.ndarray, t: float, near: float) -> tuple[np.ndarray, np.ndarray]:
        """The active classes of ``members`` due by ``t + near`` and the other active ones, each in order
        (:meth:`_alive`, both at once). In C where ``sim._classcore`` is built (``due_split``)."""
        tab = self._tab
        core = getattr(_maxmin._CORE, "due_split", None)
        if core is not None:
            n = len(members)
            out = np.empty(2 * n, dtype=np.int64)
            k, m = core(members, tab.alive, tab.due, t, near, out)
            return out[:k], out[n : n + m]
        members = members[tab.alive[members]]
        due = tab.due[members] - t <= near
        return members[due], members[~due]

    def _due_split_comp(self, c: int, t: float, near: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_due_split` of component ``c``'s classes. Where its last settle was in C above the cut
        (:meth:`_settle_core`) and nothing touched it since, its classes end with the slow ones of its last
        settles (``_tails``), in segments -- the slow ones of one settle each, or several such joined --
        whose rates and completion times stand, each with its largest rate and first completion: only
        the classes before them, and the segments with a class due, are read (``due_split_tail`` in C);
        the next settle in C is told (``_tail_given``) that the classes it settles end with them."""
        members = self._comps[c]
        tail = self._tails.pop(c, None)
        core = getattr(_maxmin._CORE, "due_split_tail", None)
        if tail is None or tail[0] is not members or core is None:
            return self._due_split(members, t, near)
        tab, n, head, segs = self._tab, len(members), tail[2], tail[3]
        out = np.empty(2 * n, dtype=np.int64)
        segs_out = np.empty(len(segs) + 5)
        got = core(members, tail[1], head, segs, tab.alive, tab.due, tab.rate, t, near, _SEGMENTS - 1, out, segs_out)
        k, m, ns, q, *stats = got
        if not k:  # (nothing due: an older entry of the heap; the tail stands)
            self._tails[c] = tail
        rest = out[n : n + m]
        if ns:
            self._tail_given = (rest, (q, *stats), segs_out[: 5 * ns])
        return out[:k], rest

    def _index(self, solved: np.ndarray) -> None:
        """Index the components of ``solved`` (just numbered, their completion times set): their
        classes, and their first completions on the heap."""
        tab = self._tab
        comp = tab.comp[solved]
        order = np.argsort(comp, kind="stable")
        comp, ids = comp[order], solved[order]
        if not len(ids):
            return
        cuts = np.flatnonzero(np.concatenate(([True], comp[1:] != comp[:-1])))
        first = np.minimum.reduceat(tab.due[ids], cuts)
        ends = [*cuts[1:].tolist(), len(ids)]
        for c, a, b, d in zip(comp[cuts].tolist(), cuts.tolist(), ends, first.tolist(), strict=True):
            self._comps[c] = ids[a:b]
            if d < np.inf:
                heapq.heappush(self._due, (d, c))

    def _joined(self, region: np.ndarray) -> np.ndarray:
        """The active classes to solve again once arcs were kept anew while solving ``region`` (whole
        components): the region's live classes (split parts included: new rows, in no component yet)
        and every component with a class that crosses an arc kept anew -- the kept arcs join nothing
        else, so the rest of the classes keep their components and their rates."""
        tab = self._tab
        active = self._active()
        new = np.concatenate(self._kept_new) if self._kept_new else np.zeros(0, dtype=np.int64)
        self._kept_new = []
        comp = tab.comp[active]
        inside = np.zeros(tab.n, dtype=bool)
        inside[region] = True
        if (inside[active] | (comp < 0)).all():  # the region and its parts are every active class
            return active
        mark = np.zeros(len(self._keep), dtype=bool)
        mark[new] = True
        core = getattr(_maxmin._CORE, "crossing", None)
        if core is not None:  # in C: the same classes, in order
            crossers = np.empty(len(active), dtype=np.int64)
            crossers = crossers[: core(active, tab.lo, tab.hi, tab.e_arc, mark, crossers)]
        else:
            row, idx = tab.entries(active)
            crossers = active[np.unique(row[mark[tab.e_arc[idx]]])]
        seed = np.concatenate([region[tab.alive[region]], active[comp < 0], crossers])
        comps = np.unique(tab.comp[seed])
        return np.union1d(seed, self._members_of(comps[comps >= 0]))

    def _settle(self, region: np.ndarray, t: float, floor: float | None = None) -> None:
        """Re-solve ``region`` (class ids) at ``t`` (every active class where arcs had to be kept anew),
        renumber its components and set its classes' completion times.

        ``floor``: where ``region`` is one component that lost classes and nothing else changed, the
        least rate of the classes that left it; the classes below a gap under it keep their rates and
        only the others are solved again (:meth:`_solve_above`)."""
        tab = self._tab
        if len(self._before) < tab.n:  # rates before the solve by id (NaN: not in the region)
            self._before = np.full(2 * tab.n, np.nan)
        before, asked = self._before, region
        core = floor is not None and _SETTLE_CORE
        how = self._settle_core(region, t, floor) if core else _NOT
        if how == _DONE:
            return
        joined = anew = how == _ANEW  # (the first solve done in C: ``before`` holds the rates before it)
        cut = -np.inf
        if not anew:
            cut = -np.inf if floor is None else self._cut_below(tab.rate[region], floor)
            tab.advance(region[tab.rate[region] > cut], t)  # (the slow classes' rates stand)
            self.partial += len(region) < self._nactive
            before[asked] = tab.rate[asked]
            self._kept_new = []
        while True:
            if anew:  # arcs kept anew: components may join
                region = self._joined(region)
                joined = True
                how = self._settle_core(region, t, floor, joined) if core else _NOT  # (it advances them to t)
                if how == _DONE:
                    before[asked] = np.nan
                    return
                if how == _ANEW:
                    continue
                if not core:
                    tab.advance(region, t)
                cut = -np.inf if floor is None else self._cut_below(tab.rate[region], floor)
            anew = True
            if cut > -np.inf:
                got = self._solve_above(region, cut, joined)
                if got is not None and not len(got[0]):  # (no class above the cut: the region whole)
                    region, cut = got[1], -np.inf
                    tab.advance(region, t)
                    anew = False
                    continue
                solved, members = got if got is not None else (None, None)
            else:
                solved = members = self._solve(region, joined or len(region) == self._nactive)
                if solved is not None:
                    for c in np.unique(tab.comp[solved]).tolist():  # renumbered below
                        self._comps.pop(c, None)
                    self._components(solved)
            if solved is not None:
                break
        old = np.full(len(solved), np.nan)
        known = solved < len(before)  # split parts are new: their rates are set anew
        old[known] = before[solved[known]]
        before[asked] = np.nan
        changed = solved[tab.rate[solved] != old]  # the same rate: the same completion time stands
        rate = tab.rate[changed]
        with np.errstate(divide="ignore", invalid="ignore"):
            tab.due[changed] = np.where(np.isinf(rate), t, t + tab.rem[changed] / rate)
        if members is solved:
            self._index(solved)
        else:  # one component, under its number: its first completion on the heap
            first = float(tab.due[members].min(initial=np.inf))
            if first < np.inf:
                heapq.heappush(self._due, (first, int(tab.comp[members[0]])))

    def _settle_core(self, region: np.ndarray, t: float, floor: float, joined: bool = False) -> int:
        """:meth:`_settle` of ``region`` with ``floor`` in C (``settle_above`` in sim/_classcore.c), down the
        paths it takes nearly always: the one solve -- above the cut :meth:`_cut_below` finds (:meth:`_solve_above`),
        or of the whole component where it finds none or no class above it -- books nothing and verifies
        every class by its quick test -- the same operations in the same order, so the same rates, loads,
        completion times and components to the bit. ``joined``: ``region`` was joined (:meth:`_joined`) after
        arcs were kept anew; it advances them to ``t`` first, whatever it returns. Returns ``_DONE``; ``_ANEW`` where the solve above the cut filled an arc not
        kept (or the whole component's: how 3): C left the state as :meth:`_solve` leaves it when it returns None,
        and the arcs are kept here (the caller joins and goes on); ``_NOT`` where the path leaves those (or the
        core is not built): it changed nothing and the Python lines run. Where ``region`` is what
        :meth:`_due_split_comp` left of a component with a tail (``_tail_given``), C reads only the classes before
        the tail; a settle above the cut keeps the component's new tail (its slow classes) in ``_tails``."""
        settle = getattr(_maxmin._CORE, "settle_above", None)
        if settle is None or not len(region):
            if joined:
                self._tab.advance(region, t)
            return _NOT
        check_deadline()
        tab = self._tab
        n = len(region)
        if len(self._out_live) < n:
            self._out_live = np.zeros(2 * n, dtype=np.int64)
        comp0 = int(tab.comp[region[0]])  # (how 2: renumbered below)
        given, self._tail_given = self._tail_given, None
        if given is not None and (given[0] is not region or joined):
            given = None
        tail = None if given is None else given[1]
        # (kept as the component's classes; where it has a tail, written over ``region`` -- _due_split_comp's
        # array, read nowhere after -- so that the tail stays in its places)
        members = np.empty(n, dtype=np.int64) if given is None else region
        got = settle(
            np.ascontiguousarray(region, dtype=np.int64),
            float(t),
            float(floor),
            tab.rate,
            tab.rem,
            tab.since,
            tab.due,
            tab.comp,
            tab.lo,
            tab.hi,
            tab.k_lo,
            tab.k_hi,
            tab.k_ver,
            self._hot_version,
            tab.k_arc,
            tab.k_hop,
            tab.k_cnt,
            tab.width,
            tab.size,
            tab.hbooked,
            tab.booked,
            self._keep,
            self._hot,
            self._hot_loads,
            self.cluster.capacity,
            float(self._rise),
            float(self._room),
            members,
            self._out_live,
            self._before,
            self._nactive,
            self._arc_comp,
            self._next_comp,
            self._out_arcs,
            tail,
            joined,
        )
        if got is None:
            return _NOT
        how, nlive, k, self._rise, first, comp, slack, through, was, kept = got
        if not joined:
            self.partial += n < self._nactive
            self._kept_new = []
        self.above += how < 2 or through
        self.solves += 1 + through
        self._unbooked.append(self._out_live[:nlive].copy())
        if how == 1 or how == 3:  # (3: the whole component solved, no class above the cut or no gap)
            self._promote(self._out_arcs[:k].copy())
            return _ANEW
        if how == 2 or joined:  # numbered anew from _next_comp (how 2: up to ``comp``; joined: ``was`` renumbered)
            for c in was if joined else [comp0]:
                self._comps.pop(c, None)
            self._next_comp = comp if how == 2 else comp + 1
        if how == 2:
            self._kept_version += slack > 0
            if k > 1:
                self._index(region)
            else:  # one component (_index's lines for it)
                self._comps[comp - 1] = region
                if first < np.inf:
                    heapq.heappush(self._due, (first, comp - 1))
            return _DONE
        self._comps[comp] = members
        ns, q = kept[0], kept[1]  # the slow classes before the tail given (or all): the tail's first segment
        head = kept if ns < q else None
        segs = given[2] if q < n else _NO_SEGMENTS  # the tail given, in its places (at most _SEGMENTS - 1)
        if head is not None or len(segs):
            self._tails[comp] = (members, ns, head, segs)
        if first < np.inf:
            heapq.heappush(self._due, (first, comp))
        return _DONE

    @staticmethod
    def _cut_below(rates: np.ndarray, floor: float) -> float:
        """The highest of ``rates`` below ``floor`` that the next higher one (or ``floor``) exceeds by
        more than ``_TOL`` (relative); -inf where there is none. ``settle_above`` (sim/_classcore.c) cuts the
        same way: a change here is a change there, or ``_SETTLE_CORE`` off (as tests/test_ps16k_above.py does
        where it replaces this)."""
        below = rates[rates < floor]
        if not len(below):
            return -np.inf

        def first_gap(desc: np.ndarray) -> float | None:  # ``desc``: rates below the floor, descending
            gap = np.flatnonzero(desc < np.concatenate(([floor], desc[:-1])) * (1 - _TOL))
            return float(desc[gap[0]]) if len(gap) else None

        near = floor * (1 - _NEAR)
        top = np.sort(below[below >= near])[::-1]  # the few rates just below the floor, if any
        if len(top) < len(below):  # and the highest rate under them
            top = np.append(top, below[below < near].max())
        cut = first_gap(top)
        if cut is None and len(top) < len(below):  # rates crowd down to the floor's neighbourhood: all of them
            cut = first_gap(np.sort(below)[::-1])
        return -np.inf if cut is None else cut

    def _solve_above(self, region: np.ndarray, cut: float, joined: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """Solve again only the classes of ``region`` -- one component that lost classes and saw no
        other change (``joined``: or such joined to the components that arcs kept anew meet) -- faster
        than ``cut`` (:meth:`_cut_below`): the others keep their rates. Returns the classes solved
        (split parts included) and every class of the region, which stays one component (under a new
        number where ``joined``); None where an arc had to be kept anew (:meth:`_settle` joins the
        components it meets and asks again); no class solved where one fell to ``cut`` or below (not
        seen: then the region is solved whole).

        Exact: every class has a bottleneck, a full arc on which no class is faster than it by
        ``_TOL`` (the verification holds every solve to that). The slow classes are those at or below
        ``cut``, a rate under the least rate of the classes that left with no rate in between and the
        next one above it more than ``_TOL`` faster: a slow class's bottleneck then carries slow classes
        only -- neither those that left nor those solved again cross it -- so it stays full, with the
        slow class among its fastest, and its rate stands. Given those rates, the other classes' max-min
        fair ones are those of the network with the slow classes' loads taken off the capacities: what
        is solved, and verified with those loads counted (every class solved is faster than every slow
        one, so none of these is the fastest on an arc)."""
        tab = self._tab
        self.above += 1
        slow = tab.rate[region] <= cut
        fixed = region[slow]
        solved = self._solve(region[~slow], False, others=True)
        if solved is None:
            return None
        members = np.concatenate([solved, fixed])
        if (tab.rate[solved] <= cut).any():  # pragma: no cover - the argument above says impossible
            return np.zeros(0, dtype=np.int64), members
        comps = tab.comp[region]
        if joined or (comps != comps[0]).any():
            for c in np.unique(comps).tolist():
                self._comps.pop(c, None)
            comp = self._next_comp
            self._next_comp += 1
            tab.comp[members] = comp
            self._arc_comp[tab.k_arc[tab.kept(members, self._keep, self._hot, self._hot_version)[1]]] = comp
        else:  # its number and its arcs' stand (a split class's parts cross its arcs)
            tab.comp[members] = comps[0]
        self._comps[int(tab.comp[members[0]])] = members
        return solved, members

    def _start(self, fresh: np.ndarray) -> np.ndarray:
        """A phase's new classes (ids) join the active ones: they and the classes of the components
        they meet (on kept arcs)."""
        tab = self._tab
        tab.alive[fresh] = True
        self._nactive += len(fresh)
        idx = tab.entries(fresh)[1]
        arcs = tab.e_arc[idx]
        np.add.at(self._crossers, arcs, tab.e_cnt[idx])
        self._room = min(self._room, self._room_of(np.unique(arcs)))  # drain from rate 0 (booked)
        return np.union1d(fresh, self._members_of(np.unique(self._arc_comp[arcs[self._keep[arcs]]])))

    def _finish(self, done: np.ndarray) -> None:
        """The classes ``done`` have drained: they leave the active classes and the arcs' loads."""
        tab = self._tab
        tab.alive[done] = False
        self._nactive -= len(done)
        core = getattr(_maxmin._CORE, "finish", None)
        if core is not None:
            loads = (self._loads, self._crossers, self._hot_loads)
            core(done, tab.lo, tab.hi, tab.e_arc, tab.e_cnt, tab.booked, tab.hbooked, self._hot, *loads)
            return
        row, idx = tab.entries(done)
        arcs, count = tab.e_arc[idx], tab.e_cnt[idx]
        np.add.at(self._loads, arcs, -count * tab.booked[done][row])
        np.add.at(self._crossers, arcs, -count)
        hot = self._hot[arcs]
        np.add.at(self._hot_loads, arcs[hot], -count[hot] * tab.hbooked[done][row[hot]])

    def simulate(self, t0: float) -> float:
        """Run the plan from ``t0``; returns the time the last pull arrives. Phases are built from the
        fabric's structure where it has one; where a class so built has to list its members (it splits,
        or its verification asks member by member), the run starts again pair by pair."""
        if self.structured:
            try:
                return self._simulate(t0)
            except _Implicit:
                self.structured = False
                self._booked = []
                self.solves = self.splits = self.partial = self.above = self.bookings = 0
        return self._simulate(t0)

    def _simulate(self, t0: float) -> float:
        """:meth:`simulate`, once.

        Only what changes is solved again: when classes complete, their components; when classes
        start, they and the components they meet. Only arcs that fill (kept arcs) enter the max-min
        problem and join classes into components -- an arc that does not fill binds nobody -- so a
        parameter server's pushes fall into one component per leaf above the servers, not one for
        the whole fabric; every arc's exact load is followed, and an arc left out that fills is kept
        (and everything solved again). Every class that completes at one instant completes in one
        event."""
        s = len(self.plan.servers)
        cl = self.cluster
        self._tab = tab = _Table()
        self._nactive = 0
        self._keep = np.zeros(cl.num_arcs, dtype=bool)
        self._kept_version = 0
        self._hot = np.zeros(cl.num_arcs, dtype=bool)  # loads followed exactly: arcs ever kept, or half full
        self._hot_version = 0
        self._loads = np.zeros(cl.num_arcs)  # every active class's bytes/s on every arc, at its booked rate
        self._hot_loads = np.zeros(cl.num_arcs)  # ... on the arcs ever kept, at its rate
        self._crossers = np.zeros(cl.num_arcs)  # the members of active classes crossing every arc
        self._unbooked: list[np.ndarray] = []  # classes solved since the last booking
        self._rise = 0.0  # the largest rise of their rates since
        self._room = np.inf  # the least room per member on the arcs never kept (bytes/s)
        self._arc_comp = np.full(cl.num_arcs, -1, dtype=np.int64)
        self._mark = np.zeros(cl.num_arcs, dtype=bool)  # scratch of _numbered
        self._index_of = np.zeros(cl.num_arcs, dtype=np.int64)
        self._kept_new: list[np.ndarray] = []  # arcs kept since the settle began
        self._next_comp = 0
        self._comps: dict[int, np.ndarray] = {}  # every live component's classes (some completed since)
        self._due: list[tuple[float, int]] = []  # a heap of (first completion, component) by component
        self._before = np.zeros(0)
        self._out_live = np.zeros(0, dtype=np.int64)  # what _settle_core writes
        self._out_arcs = np.empty(cl.num_arcs, dtype=np.int64)  # (written by settle_above before read)
        self._tails: dict[int, tuple] = {}  # by component: its classes, its tail (_due_split_comp)
        self._tail_given: tuple | None = None  # (the region, its tail) for the next _settle_core
        received = np.zeros(s, dtype=np.int64)
        ready = np.full(s, t0)  # each server's processor is free from then on
        waiting = [c.id for c in self._phase(np.arange(s), t0, push=True)]  # not yet draining
        end = t0
        # servers with nothing to receive serve at once
        idle = np.flatnonzero(self.expected == 0)
        waiting += [c.id for c in self._phase(idle, t0, push=False)] if len(idle) else []
        pending = np.array(waiting, dtype=np.int64)
        compacted = tab.ne
        stalled = allowed = 0  # iterations in a row that completed and started no class, and the most allowed
        while len(pending) or self._nactive:
            check_deadline()
            if tab.ne > 4 * max(compacted, _COMPACT_MIN):  # mostly crossings of split or completed classes
                tab.compact(np.union1d(self._active(), pending))
                compacted = tab.ne
            # the next change: a class starts draining, or classes complete
            heap, comps = self._due, self._comps
            while heap and heap[0][1] not in comps:  # renumbered since
                heapq.heappop(heap)
            t = min(tab.start[pending].min(initial=np.inf), heap[0][0] if heap else np.inf)
            near = _TIME_RTOL * t + 1e-300
            due: list[int] = []  # the components with classes due (once each)
            while heap and heap[0][0] - t <= near:
                c = heapq.heappop(heap)[1]
                if c in comps and c not in due:
                    due.append(c)
            # (a component solved above a completion keeps its number: its older entries may be due too)
            rest = None  # one component due: its other active classes
            if len(due) == 1:
                done, rest = self._due_split_comp(due[0], t, near)
                done = np.sort(done)  # (np.unique: a component lists each class once)
            elif due:
                done = np.unique(np.concatenate([self._alive(comps[c], t, near) for c in due]))
                for c in due:  # (their classes complete outside _due_split_comp)
                    self._tails.pop(c, None)
            else:
                done = np.zeros(0, dtype=np.int64)
            starting = pending[tab.start[pending] <= t]
            pending = pending[tab.start[pending] > t]
            if len(done) or len(starting):
                stalled = 0
            else:  # (only older entries of the heap were popped: none is pushed until a class completes or starts)
                stalled += 1
                if stalled == 1:
                    allowed = len(heap) + _STALLED
                elif stalled > allowed:
                    raise Stalled.at("the classes engine (sim.classes.FanExecutor)", t, self._nactive, "flow classes")
            touched = tab.comp[done]
            touched = touched[:1] if (touched == touched[:1]).all() else np.unique(touched)  # (np.unique)
            # one component lost classes and nothing else changed: those slower than all of them stand
            floor = float(tab.rate[done].min()) if len(touched) == 1 and not len(starting) else None
            self._finish(done)
            if rest is not None and len(touched) == 1 and touched[0] == due[0]:
                region = rest  # (_members_of: its classes still active)
            else:
                region = self._members_of(touched)
            if len(starting):
                region = np.union1d(region, self._start(starting))
            pulls = np.zeros(0, dtype=np.int64)
            if len(done):
                end = max(end, float(t))
                pushed = [c for c in map(tab.obj, done.tolist()) if c.phase.push]
                if pushed:
                    got = np.sum([c.per_server(s) for c in pushed], axis=0)
                    at = np.flatnonzero(got)
                    cost = got[at] * self.fold[at]
                    if self.plan.first_free:  # the first push a server receives is a copy
                        cost = cost - np.where(received[at] == 0, self.fold[at], 0.0)
                    ready[at] = np.maximum(ready[at], t) + cost
                    received[at] += got[at]
                    pulls = at[received[at] == self.expected[at]]
                tab.drop(done.tolist())
            if len(region):
                self._settle(region, t, floor)
            if len(pulls):
                # servers done reducing at the same instant send their pulls together
                for when in np.unique(ready[pulls]).tolist():
                    fresh = self._phase(pulls[ready[pulls] == when], when, push=False)
                    pending = np.concatenate([pending, [c.id for c in fresh]]).astype(np.int64)
                    end = max(end, float(when))
        return end
