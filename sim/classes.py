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

Only for an algorithm alone on the network (a class assumes nothing else shares its links) and without
the data check (which needs every message's payload: ``--check`` runs the messages).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .deadline import check as check_deadline
from .maxmin import maxmin_rates
from .rates import gather_arcs

__all__ = ["FanExecutor", "FanPlan", "fan_plan"]

_TIME_RTOL = 1e-12  # classes due within this fraction of "now" complete together (as in sim.network)
_TOL = 1e-9  # saturation and rate ties in the verification


@dataclass(frozen=True)
class FanPlan:
    """A push / reduce / pull algorithm: ``servers[k]`` (an endpoint) serves every rank ``0..ranks-1``
    other than itself; each message is ``nbytes``."""

    ranks: int
    servers: tuple[int, ...]
    nbytes: float
    first_free: bool = False

    def workers(self, k: int) -> np.ndarray:
        server = self.servers[k]
        everyone = np.arange(self.ranks, dtype=np.int64)
        return everyone[everyone != server]


def fan_plan(algorithm: Any, p: int, nbytes: float, cluster: Any, root: int = 0) -> FanPlan | None:
    """``algorithm``'s :class:`FanPlan` on ``cluster``, or None: it has none, or the link model makes a
    link's capacity depend on the flows on it (a class's members would then change it one by one)."""
    plan = algorithm.fan(p, nbytes, cluster, root)
    if plan is None or cluster.message_model.shares:
        return None
    return plan


class _Class:
    """Equivalent flows: ``members`` index the phase's pair arrays; all start draining at ``start``."""

    __slots__ = ("arc", "count", "hop", "members", "phase", "rate", "remaining", "start", "width")

    def __init__(self, phase: _Phase, members: np.ndarray, start: float, remaining: float) -> None:
        self.phase = phase
        self.members = members
        self.start = start
        self.remaining = remaining
        self.rate = 0.0
        paths = phase.paths
        which, arcs = gather_arcs(paths, phase.pids[members])
        lens = paths.length[phase.pids[members]]
        hop = np.arange(len(arcs)) - np.repeat(np.cumsum(lens) - lens, lens)
        width = int(lens.max()) + 1 if len(lens) else 1
        key, count = np.unique(arcs * width + hop, return_counts=True)
        self.arc = key // width
        self.hop = key % width
        self.count = count.astype(float)
        self.width = width
        del which

    @property
    def size(self) -> int:
        return len(self.members)


class _Phase:
    """The messages of one phase (pushes, or the pulls of some servers), as pair arrays."""

    __slots__ = ("pids", "push", "server", "paths")

    def __init__(self, paths: Any, pids: np.ndarray, server: np.ndarray, push: bool) -> None:
        self.paths = paths
        self.pids = pids
        self.server = server  # the server index each pair talks to
        self.push = push


class FanExecutor:
    """Runs a :class:`FanPlan` alone on ``net`` with flow classes (see the module docstring); the same
    times as the algorithm's SimPy process. ``run()`` is the process body.

    Attributes
    ----------
    mode : str
        ``classes``.
    solves, splits : int
        Max-min computations, and classes split because their members were not equivalent.
    """

    mode = "classes"

    def __init__(self, net: Any, plan: FanPlan, gamma: float, compute_scale: np.ndarray | None = None) -> None:
        self.net = net
        self.env = net.env
        self.plan = plan
        self.cluster = net.cluster
        s = len(plan.servers)
        servers = np.asarray(plan.servers, dtype=np.int64)
        scale = np.ones(self.cluster.size) if compute_scale is None else np.asarray(compute_scale)
        scale = np.concatenate([scale, np.ones(max(0, int(servers.max(initial=0)) + 1 - len(scale)))])
        # the reduction of one push on each server (job.combine / job.compute: only when γ > 0)
        self.fold = plan.nbytes * gamma * scale[servers] if gamma > 0 else np.zeros(s)
        self.expected = np.array([len(plan.workers(k)) for k in range(s)], dtype=np.int64)
        self.solves = 0
        self.splits = 0
        self._arc_hash = np.zeros(0, dtype=np.uint64)

    def run(self) -> Generator[Any, Any, None]:
        end = self.simulate(float(self.env.now))
        yield self.env.timeout(end - self.env.now)

    # ------------------------------------------------------------------ building phases
    def _pairs(self, srcs: np.ndarray, dsts: np.ndarray) -> np.ndarray:
        cl = self.cluster
        return np.fromiter(
            (cl.path_id(s, d) for s, d in zip(srcs.tolist(), dsts.tolist(), strict=True)),
            dtype=np.int64,
            count=len(srcs),
        )

    def _phase(self, servers: np.ndarray, t: float, push: bool) -> list[_Class]:
        """The classes of the pushes to (``push``) or the pulls from ``servers`` (indices), sent at ``t``."""
        plan = self.plan
        groups = [plan.workers(int(k)) for k in servers.tolist()]
        workers = np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64)
        server = np.repeat(servers, [len(g) for g in groups]).astype(np.int64)
        ends = np.asarray(plan.servers, dtype=np.int64)[server]
        srcs, dsts = (workers, ends) if push else (ends, workers)
        pids = self._pairs(srcs, dsts)
        self.net.account(pids, np.full(len(pids), plan.nbytes), len(pids))
        if not len(pids):
            return []
        delay, wire = self.cluster.message_model.many(pids, srcs, np.full(len(pids), plan.nbytes))
        phase = _Phase(self.cluster.paths, pids, server, push)
        keys = np.stack([np.asarray(delay, dtype=float), np.asarray(wire, dtype=float)], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
        return [
            _Class(phase, order[bounds[i] : bounds[i + 1]], t + float(uniq[i, 0]), float(uniq[i, 1]))
            for i in range(len(uniq))
        ]

    # ------------------------------------------------------------------ rates
    def _solve(self, active: list[_Class]) -> list[_Class]:
        """Set every active class's rate to the max-min fair one, splitting classes until each is
        verified; returns the (possibly refined) active classes."""
        cl = self.cluster
        while True:
            check_deadline()
            self.solves += 1
            live = [c for c in active if len(c.arc)]
            for c in active:
                if not len(c.arc):
                    c.rate = np.inf  # an empty path: drains at once
            if not live:
                return active
            sizes = [len(c.arc) for c in live]
            cls = np.repeat(np.arange(len(live)), sizes)
            arc = np.concatenate([c.arc for c in live])
            count = np.concatenate([c.count for c in live])
            rate = maxmin_rates(cls, arc, len(live), cl.capacity, weight=count)
            for c, r in zip(live, rate.tolist(), strict=True):
                c.rate = r
            bad, saturated = self._unverified(live, cls, arc, count, rate)
            if not bad:
                return active
            refined = []
            for i, c in enumerate(live):
                refined.extend(self._split(c, saturated) if i in bad else [c])
            active = refined + [c for c in active if not len(c.arc)]

    def _unverified(
        self, live: list[_Class], cls: np.ndarray, arc: np.ndarray, count: np.ndarray, rate: np.ndarray
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
        hop = np.concatenate([c.hop for c in live])
        cover = np.bincount(cls[neck] * width + hop[neck], weights=count[neck], minlength=len(live) * width)
        quick = (cover.reshape(len(live), width) >= np.array([c.size for c in live])[:, None]).any(axis=1)
        bad = []
        for i in np.flatnonzero(~quick).tolist():
            necks = np.zeros(len(cap), dtype=bool)
            necks[arc[(cls == i) & neck]] = True
            which, arcs = self._crossings(live[i])
            hit = np.zeros(live[i].size, dtype=bool)
            hit[which[necks[arcs]]] = True
            if not hit.all():
                bad.append(i)
        return bad, saturated

    @staticmethod
    def _crossings(c: _Class) -> tuple[np.ndarray, np.ndarray]:
        """(member index, arc) of every arc every member of ``c`` crosses."""
        return gather_arcs(c.phase.paths, c.phase.pids[c.members])

    def _split(self, c: _Class, saturated: np.ndarray) -> list[_Class]:
        """``c`` cut by which saturated arcs its members cross (members on the same ones stay together)."""
        self.splits += 1
        which, arcs = self._crossings(c)
        if len(self._arc_hash) != len(saturated):
            x = (np.arange(len(saturated), dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            x ^= x >> np.uint64(29)
            self._arc_hash = x * np.uint64(0xBF58476D1CE4E5B9)
        on = saturated[arcs]
        sig = np.zeros(c.size, dtype=np.uint64)
        np.add.at(sig, which[on], self._arc_hash[arcs[on]])
        _, part = np.unique(sig, return_inverse=True)
        part = part.reshape(-1)
        if part.max(initial=0) == 0:  # pragma: no cover - then every member crosses the same bottlenecks
            raise AssertionError("flow class failed verification but its members are alike")
        order = np.argsort(part, kind="stable")
        cuts = np.searchsorted(part[order], np.arange(int(part.max()) + 2))
        return [
            _Class(c.phase, c.members[order[a:b]], c.start, c.remaining)
            for a, b in zip(cuts[:-1], cuts[1:], strict=True)
        ]

    # ------------------------------------------------------------------ the event loop
    def simulate(self, t0: float) -> float:
        """Run the plan from ``t0``; returns the time the last pull arrives."""
        s = len(self.plan.servers)
        received = np.zeros(s, dtype=np.int64)
        ready = np.full(s, t0)  # each server's processor is free from then on
        waiting = self._phase(np.arange(s), t0, push=True)  # not yet draining
        active: list[_Class] = []
        end = t0
        # servers with nothing to receive serve at once
        idle = np.flatnonzero(self.expected == 0)
        waiting += self._phase(idle, t0, push=False) if len(idle) else []
        t = t0
        changed = True
        while waiting or active:
            check_deadline()
            if changed:
                active = self._solve(active)
                changed = False
            # the next change: a class starts draining, or one completes
            nxt = min((c.start for c in waiting), default=np.inf)
            for c in active:
                due = t + c.remaining / c.rate if c.rate > 0 else np.inf
                nxt = min(nxt, due)
            dt = nxt - t
            t = nxt
            done: list[_Class] = []
            still: list[_Class] = []
            for c in active:
                c.remaining -= c.rate * dt if np.isfinite(c.rate) else c.remaining
                (done if c.remaining <= c.rate * (_TIME_RTOL * t + 1e-300) else still).append(c)
            starting = [c for c in waiting if c.start <= t]
            waiting = [c for c in waiting if c.start > t]
            active = still + starting
            changed = bool(done or starting)
            pulls = []
            for c in done:
                end = max(end, t)
                if not c.phase.push:
                    continue
                got = np.bincount(c.phase.server[c.members], minlength=s)
                at = np.flatnonzero(got)
                first = received[at] == 0
                cost = got[at] * self.fold[at]
                if self.plan.first_free:
                    cost = cost - np.where(first, self.fold[at], 0.0)
                ready[at] = np.maximum(ready[at], t) + cost
                received[at] += got[at]
                pulls.extend(at[received[at] == self.expected[at]].tolist())
            if pulls:
                # servers done reducing at the same instant send their pulls together
                full = np.array(pulls, dtype=np.int64)
                for when in np.unique(ready[full]).tolist():
                    waiting += self._phase(full[ready[full] == when], when, push=False)
                    end = max(end, when)
        return end
