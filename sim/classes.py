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

Only for an algorithm alone on the network (a class assumes nothing else shares its links) and without
the data check (which needs every message's payload: ``--check`` runs the messages).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .bulkroute import bulk_router
from .deadline import check as check_deadline
from .maxmin import maxmin_rates
from .rates import gather_arcs

__all__ = ["FanExecutor", "FanPlan", "Fragmented", "fan_plan"]

_TIME_RTOL = 1e-12  # classes due within this fraction of "now" complete together (as in sim.network)
_TOL = 1e-9  # saturation and rate ties in the verification
_MIN_CLASSES = 128  # classes a plan may always split into before the message level takes over
_FLOWS_PER_CLASS = 256  # ... and beyond that, at least this many messages per class on average


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


class _Class:
    """Equivalent flows: pairs ``members`` of ``phase``, all draining from ``start`` with ``remaining``
    wire bytes each; ``arc``, ``hop``, ``count``: how many members cross each arc at each hop."""

    __slots__ = (
        "arc",
        "comp",
        "count",
        "cross",
        "hop",
        "kept",
        "members",
        "phase",
        "rate",
        "remaining",
        "start",
        "since",
        "version",
        "width",
    )

    def __init__(self, phase: _Phase, members: np.ndarray, start: float, remaining: float, entries: Any = None) -> None:
        self.phase = phase
        self.members = members
        self.start = start
        self.remaining = remaining  # wire bytes left at ``since``
        self.since = start
        self.rate = 0.0
        self.version = 0  # bumped at every rate change (stale completion times in the heap)
        self.comp = -1  # the component (of classes joined by kept arcs) it was last solved in
        self.kept: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None  # (kept version, arc, hop, count)
        self.cross: tuple[np.ndarray, np.ndarray] | None = None  # (member, arc) crossings, once asked for
        if entries is None:
            entries = _Entries(phase.ex.cluster.num_arcs)
            for a in range(0, len(members), _CHUNK):
                entries.add(phase.routes(members[a : a + _CHUNK], ids=False)[0])
        self.arc, self.hop, self.count, self.width = entries.result()

    @property
    def size(self) -> int:
        return len(self.members)


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


class FanExecutor:
    """Runs a :class:`FanPlan` alone on ``net`` with flow classes (see the module docstring); the same
    times as the algorithm's SimPy process. ``run()`` is the process body.

    ``fallback`` (the algorithm's own process) runs instead when the classes fragment past
    ``max_classes`` (default ``max(128, messages / 256)``); ``paths`` interns every route as a path even
    for plans of more than 4 M messages (the training model books an all-reduce's bytes by path).

    Attributes
    ----------
    mode : str
        ``classes``.
    solves, splits : int
        Max-min computations, and classes split because their members were not equivalent.
    partial : int
        Changes that re-solved only some of the active classes (the components they touch).
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
        self._arc_hash = np.zeros(0, dtype=np.uint64)
        self.nominal = not cl.link_model.classes
        self.bulk = bulk_router(cl) if self.nominal and (servers < cl.size).all() else None
        # routes interned as paths (Network.path_bytes sees the bytes): asked for, or small enough
        self.intern = paths or 2 * s * self.per <= _INTERN_MAX or self.bulk is None

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

    def _phase(self, servers: np.ndarray, t: float, push: bool) -> list[_Class]:
        """The classes of the pushes to (``push``) or the pulls from ``servers`` (indices), sent at
        ``t``: messages with the same start delay and wire bytes, and their crossing counts."""
        plan, cl = self.plan, self.cluster
        phase = _Phase(self, servers, push)
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
                delay = np.where(valid, cl.latency[np.maximum(rows, 0)], 0.0).sum(axis=1) + cl.overhead[srcs]
                wire = nbytes
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
                entries.add(rows[pick])
        if self.bulk is not None and not self.intern:
            self._booked.append(("account_arcs", (arc_bytes, sent, received, len(phase))))
        return [
            _Class(phase, np.concatenate(members), t + key[0], key[1], entries)
            for key, (members, entries) in sorted(groups.items())
        ]

    # ------------------------------------------------------------------ rates
    def _kept(self, c: _Class) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``c``'s (arc, hop, count) entries on the kept arcs (those that may saturate)."""
        if c.kept is None or c.kept[0] != self._kept_version:
            on = self._keep[c.arc]
            c.kept = (self._kept_version, c.arc[on], c.hop[on], c.count[on])
        return c.kept[1], c.kept[2], c.kept[3]

    def _promote(self, arcs: np.ndarray) -> bool:
        """Keep ``arcs`` (a mask or indices) from now on; whether any was not kept yet."""
        new = np.zeros(len(self._keep), dtype=bool)
        new[arcs] = True
        new &= ~self._keep
        if not new.any():
            return False
        self._keep |= new
        self._kept_version += 1
        return True

    def _load(self, classes: list[_Class]) -> np.ndarray:
        """The bytes/s ``classes`` put on every arc at their rates."""
        live = [c for c in classes if len(c.arc)]
        if not live:
            return np.zeros(self.cluster.num_arcs)
        arc = np.concatenate([c.arc for c in live])
        flow = np.concatenate([c.count for c in live]) * np.repeat([c.rate for c in live], [len(c.arc) for c in live])
        return np.bincount(arc, weights=flow, minlength=self.cluster.num_arcs)

    def _solve(self, region: list[_Class], base: np.ndarray, everything: bool) -> list[_Class] | None:
        """Set the rates of ``region`` (whole components of classes joined by kept arcs) to the max-min
        fair ones, splitting classes until each is verified; returns the refined region, or None when
        an arc had to be kept anew (components may join: the caller solves every class). ``base``: the
        load of every other class on every arc; ``everything``: the region is every active class.

        Only kept arcs enter the max-min problem; the result is the fair one of the whole network when
        no other arc is full (an allocation is max-min fair iff it is feasible and every flow crosses a
        saturated arc on which no flow is faster): an arc found full is kept from then on."""
        cap = self.cluster.capacity
        version = self._kept_version
        while True:
            check_deadline()
            live = [c for c in region if len(c.arc)]
            kept = [self._kept(c) for c in live]
            for c, k in zip(live, kept, strict=True):
                if not len(k[0]):
                    # nothing kept on its route yet: keep its tightest arcs
                    share = cap[c.arc] / c.count
                    self._promote(c.arc[share <= share.min() * (1 + _TOL)])
            if self._kept_version != version:
                return None
            self.solves += 1
            for c in region:
                if not len(c.arc):
                    c.rate = np.inf  # an empty path: drains at once
            if not live:
                self._region_load = np.zeros(len(cap))
                return region
            cls = np.repeat(np.arange(len(live)), [len(k[0]) for k in kept])
            arc = np.concatenate([k[0] for k in kept])
            hop = np.concatenate([k[1] for k in kept])
            count = np.concatenate([k[2] for k in kept])
            rate = maxmin_rates(cls, arc, len(live), cap, weight=count)
            for c, r in zip(live, rate.tolist(), strict=True):
                c.rate = r
            load = self._load(live)
            full = ~self._keep & (base + load >= cap * (1 - _TOL))
            if self._promote(full):
                return None
            bad, saturated = self._unverified(live, cls, arc, hop, count, rate)
            if not bad:
                # kept arcs of the region that carry less than their capacity bind nobody: leave them
                # out (they only join components) until their load fills them again (after solving
                # everything only: it makes every class read its kept arcs again)
                slack = np.zeros(len(cap), dtype=bool)
                slack[arc] = everything
                slack &= ~saturated
                if slack.any():
                    self._keep &= ~slack
                    self._kept_version += 1
                self._region_load = load
                return region
            if len(self.active) + len(bad) > self.max_classes:
                raise Fragmented(f"{len(self.active)} flow classes")
            refined = []
            bad_set = set(bad)
            for i, c in enumerate(live):
                refined.extend(self._split(c, saturated) if i in bad_set else [c])
            region = refined + [c for c in region if not len(c.arc)]

    def _unverified(
        self,
        live: list[_Class],
        cls: np.ndarray,
        arc: np.ndarray,
        hop: np.ndarray,
        count: np.ndarray,
        rate: np.ndarray,
    ) -> tuple[list[int], np.ndarray]:
        """The classes some member of which has no bottleneck, and the saturated arcs (a mask)."""
        cap = self.cluster.capacity
        load = np.bincount(arc, weights=count * rate[cls], minlength=len(cap))
        fastest = np.zeros(len(cap))
        np.maximum.at(fastest, arc, rate[cls])
        saturated = load >= cap * (1 - _TOL)
        neck = saturated[arc] & (rate[cls] >= fastest[arc] * (1 - _TOL))
        # quick test: the bottleneck crossings at one hop position account for every member
        width = max(c.width for c in live)
        cover = np.bincount(cls[neck] * width + hop[neck], weights=count[neck], minlength=len(live) * width)
        quick = (cover.reshape(len(live), width) >= np.array([c.size for c in live])[:, None]).any(axis=1)
        bad = []
        offsets = np.searchsorted(cls, np.arange(len(live) + 1))  # cls is sorted
        for i in np.flatnonzero(~quick).tolist():
            necks = np.zeros(len(cap), dtype=bool)
            a, b = offsets[i], offsets[i + 1]
            necks[arc[a:b][neck[a:b]]] = True
            if not self._every_member_crosses(live[i], necks):  # some member has no bottleneck
                bad.append(i)
        return bad, saturated

    def _every_member_crosses(self, c: _Class, arcs_mask: np.ndarray) -> bool:
        """Whether every member of ``c`` crosses an arc of ``arcs_mask`` (large classes by chunks)."""
        if c.size > _CHUNK:
            for lo in range(0, c.size, _CHUNK):
                rows = c.phase.routes(c.members[lo : lo + _CHUNK], ids=False)[0]
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
        rows = c.phase.routes(c.members, ids=False)[0]
        which, hop = np.nonzero(rows >= 0)
        cross = which, rows[rows >= 0], hop
        if c.size <= _CHUNK:
            c.cross = cross
        return cross

    def _split(self, c: _Class, saturated: np.ndarray) -> list[_Class]:
        """``c`` cut by which saturated arcs its members cross (members on the same ones stay together);
        the parts take its place among the active classes."""
        parts = self._cut(c, saturated)
        for part in parts:
            part.since = c.since
            part.rate = c.rate
        self.active.discard(c)
        self.active.update(parts)
        return parts

    def _cut(self, c: _Class, saturated: np.ndarray) -> list[_Class]:
        """``c``'s members grouped by which saturated arcs they cross."""
        self.splits += 1
        if len(self._arc_hash) != len(saturated):
            x = (np.arange(len(saturated), dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            x ^= x >> np.uint64(29)
            self._arc_hash = x * np.uint64(0xBF58476D1CE4E5B9)
        sig = np.zeros(c.size, dtype=np.uint64)
        if c.size > _CHUNK:  # a large class: signatures by chunks, the parts route their members again
            mark = np.where(saturated, self._arc_hash, np.uint64(0))
            for lo in range(0, c.size, _CHUNK):
                rows = c.phase.routes(c.members[lo : lo + _CHUNK], ids=False)[0]
                sig[lo : lo + len(rows)] = np.where(rows >= 0, mark[np.maximum(rows, 0)], np.uint64(0)).sum(
                    axis=1, dtype=np.uint64
                )
            _, part = np.unique(sig, return_inverse=True)
            part = part.reshape(-1)
            order = np.argsort(part, kind="stable")
            cuts = np.searchsorted(part[order], np.arange(int(part.max()) + 2))
            return [
                _Class(c.phase, c.members[order[a:b]], c.start, c.remaining)
                for a, b in zip(cuts[:-1], cuts[1:], strict=True)
            ]
        which, arcs, hop = self._crossings(c)
        on = saturated[arcs]
        np.add.at(sig, which[on], self._arc_hash[arcs[on]])
        _, part = np.unique(sig, return_inverse=True)
        part = part.reshape(-1)
        if part.max(initial=0) == 0:  # pragma: no cover - then every member crosses the same bottlenecks
            raise AssertionError("flow class failed verification but its members are alike")
        order = np.argsort(part, kind="stable")
        cuts = np.searchsorted(part[order], np.arange(int(part.max()) + 2))
        # the parts' crossings, from the parent's: no route is computed again
        where = np.empty(c.size, dtype=np.int64)
        where[order] = np.arange(c.size)
        by = np.argsort(part[which], kind="stable")
        edges = np.searchsorted(part[which][by], np.arange(int(part.max()) + 2))
        parts = []
        for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
            sel = by[edges[k] : edges[k + 1]]
            entries = _Entries(self.cluster.num_arcs)
            entries.width = c.width
            entries.keys.append(arcs[sel] * c.width + hop[sel])
            part_c = _Class(c.phase, c.members[order[a:b]], c.start, c.remaining, entries)
            part_c.cross = (where[which[sel]] - a, arcs[sel], hop[sel])
            parts.append(part_c)
        return parts

    # ------------------------------------------------------------------ components and the event loop
    def _components(self, region: list[_Class]) -> None:
        """Number the components of ``region``: classes joined by the kept arcs they cross. Classes of
        different components share no kept arc, so each component's max-min problem is its own."""
        live = [c for c in region if len(c.arc)]
        for c in region:
            if not len(c.arc):
                c.comp = self._new_comp([c])
        if not live:
            return
        kept = [self._kept(c)[0] for c in live]
        cls = np.repeat(np.arange(len(live)), [len(k) for k in kept])
        arcs, where = np.unique(np.concatenate(kept), return_inverse=True)
        where = where.reshape(-1)
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
        order = np.argsort(label, kind="stable")
        cuts = np.flatnonzero(np.diff(label[order])) + 1
        first = {}
        for group in np.split(order, cuts):
            comp = self._new_comp([live[i] for i in group.tolist()])
            first[int(label[group[0]])] = comp
        self._arc_comp[arcs] = [first[int(x)] for x in at_arc.tolist()]

    def _new_comp(self, members: list[_Class]) -> int:
        comp = self._next_comp
        self._next_comp += 1
        self._comps[comp] = set(members)
        for c in members:
            c.comp = comp
        return comp

    def _advance(self, c: _Class, t: float) -> None:
        """Drain ``c`` at its rate up to ``t``."""
        if t > c.since:
            c.remaining = 0.0 if np.isinf(c.rate) else c.remaining - c.rate * (t - c.since)
        c.since = t

    def _settle(self, region: list[_Class], t: float) -> None:
        """Re-solve ``region`` at ``t`` (every active class where arcs had to be kept anew), renumber
        its components and queue its classes' completions."""
        for c in region:
            self._advance(c, t)
        self.partial += len(region) < len(self.active)
        before = {id(c): c.rate for c in region}
        base = self._loads - self._load(region)
        while True:
            for comp in {c.comp for c in region}:
                self._comps.pop(comp, None)
            solved = self._solve(region, base, len(region) == len(self.active))
            if solved is not None:
                break
            region = list(self.active)  # arcs kept anew: components may join
            base = np.zeros(len(base))
            for c in region:
                self._advance(c, t)
        self._loads = base + self._region_load
        self._components(solved)
        for c in solved:
            if before.get(id(c)) == c.rate:
                continue  # the same rate: the same completion time, already queued
            c.version += 1
            if np.isinf(c.rate):
                due = t
            elif c.rate > 0:
                due = t + c.remaining / c.rate
            else:  # pragma: no cover - max-min gives every flow a positive rate
                continue
            heapq.heappush(self._due, (due, self._seq, c.version, c))
            self._seq += 1

    def _start(self, fresh: list[_Class]) -> list[_Class]:
        """A phase's new classes join the active ones: they and the classes of the components they
        meet (on kept arcs)."""
        self.active.update(fresh)
        arcs = np.concatenate([c.arc for c in fresh])
        arcs = arcs[self._keep[arcs]]
        region = set(fresh)
        for comp in np.unique(self._arc_comp[arcs]).tolist():
            region.update(self._comps.get(comp, ()))
        return list(region)

    def _finish(self, c: _Class) -> None:
        """``c`` has drained: it leaves its component and the arcs' loads."""
        self.active.discard(c)
        self._comps.get(c.comp, set()).discard(c)
        if len(c.arc) and np.isfinite(c.rate):
            np.add.at(self._loads, c.arc, -c.count * c.rate)

    def simulate(self, t0: float) -> float:
        """Run the plan from ``t0``; returns the time the last pull arrives.

        Only what changes is solved again: when classes complete, their components; when classes
        start, they and the components they meet. Only arcs that fill (kept arcs) enter the max-min
        problem and join classes into components -- an arc that does not fill binds nobody -- so a
        parameter server's pushes fall into one component per leaf above the servers, not one for
        the whole fabric; every arc's exact load is followed, and an arc left out that fills is kept
        (and everything solved again)."""
        s = len(self.plan.servers)
        cl = self.cluster
        self.active: set[_Class] = set()
        self._keep = np.zeros(cl.num_arcs, dtype=bool)
        self._kept_version = 0
        self._loads = np.zeros(cl.num_arcs)  # every active class's bytes/s on every arc
        self._arc_comp = np.full(cl.num_arcs, -1, dtype=np.int64)
        self._comps: dict[int, set[_Class]] = {}
        self._next_comp = 0
        self._due: list[tuple[float, int, int, _Class]] = []
        self._seq = 0
        received = np.zeros(s, dtype=np.int64)
        ready = np.full(s, t0)  # each server's processor is free from then on
        waiting = self._phase(np.arange(s), t0, push=True)  # not yet draining
        end = t0
        # servers with nothing to receive serve at once
        idle = np.flatnonzero(self.expected == 0)
        waiting += self._phase(idle, t0, push=False) if len(idle) else []
        while waiting or self.active:
            check_deadline()
            # the next change: a class starts draining, or one completes
            while self._due and (self._due[0][3].version != self._due[0][2] or self._due[0][3] not in self.active):
                heapq.heappop(self._due)
            t = min(min((c.start for c in waiting), default=np.inf), self._due[0][0] if self._due else np.inf)
            done: list[_Class] = []
            while self._due and self._due[0][0] - t <= _TIME_RTOL * t + 1e-300:
                _, _, version, c = heapq.heappop(self._due)
                if version == c.version and c in self.active:
                    done.append(c)
            starting = [c for c in waiting if c.start <= t]
            waiting = [c for c in waiting if c.start > t]
            region: set[_Class] = set()
            for c in done:
                self._finish(c)
            for c in done:
                region.update(self._comps.get(c.comp, ()))
            if starting:
                region.update(self._start(starting))
            pulls = []
            for c in done:
                end = max(end, t)
                if not c.phase.push:
                    continue
                got = np.bincount(c.phase.server(c.members), minlength=s)
                at = np.flatnonzero(got)
                first = received[at] == 0
                cost = got[at] * self.fold[at]
                if self.plan.first_free:
                    cost = cost - np.where(first, self.fold[at], 0.0)
                ready[at] = np.maximum(ready[at], t) + cost
                received[at] += got[at]
                pulls.extend(at[received[at] == self.expected[at]].tolist())
            if region:
                self._settle(list(region), t)
            if pulls:
                # servers done reducing at the same instant send their pulls together
                full = np.array(pulls, dtype=np.int64)
                for when in np.unique(ready[full]).tolist():
                    waiting += self._phase(full[ready[full] == when], when, push=False)
                    end = max(end, when)
        return end
