"""The flow-level network: messages as flows on routed paths, sharing every link direction by
max-min fairness, on a SimPy :class:`simpy.Environment`.

A flow of ``n`` bytes sent at ``t0`` first waits its path latency plus the sender's per-message overhead,
then drains at its current rate; it completes when its last byte is drained (the cut-through fluid model
of ../shared/docs/model.md). Rates are recomputed whenever a flow starts draining or completes; every
change that happens at the same simulated instant is folded into one recomputation.

Use it from a SimPy process::

    env = simpy.Environment()
    net = Network(env, Cluster("star:hosts=4,bandwidth=100Gbps,latency=1us"))

    def rank0(env):
        yield net.send(0, 1, 64 * 2**20)          # one message, rank 0 -> rank 1
        yield net.transfer([0, 1], [2, 3], 2**20)  # two flows started together, one event for both

    env.process(rank0(env))
    env.run()

The engine keeps every flow in numpy arrays (slots reused through a free list) and schedules a single
SimPy timeout for its next change, so a step in which thousands of flows start together costs one
rate computation.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import simpy
from simpy.events import Event

from .cluster import Cluster
from .errors import RunError
from .maxmin import maxmin_rates

__all__ = ["Network"]

_TIME_RTOL = 1e-12  # flows due within this fraction of "now" complete together


class _Group:
    """The flows of one send/transfer call and the event that fires when all of them are done."""

    __slots__ = ("event", "left")

    def __init__(self, event: simpy.Event, left: int) -> None:
        self.event = event
        self.left = left


class Network:
    """Flows on a :class:`Cluster`, simulated in ``env``.

    Parameters
    ----------
    env : simpy.Environment
    cluster : Cluster
    check : bool
        Verify after every rate computation that no link direction carries more than its capacity
        (costs one pass over the flows; for tests).

    Attributes
    ----------
    arc_bytes : numpy.ndarray
        Bytes carried so far by every link direction (indexed like the cluster's arcs).
    flows : int
        Flows started so far.
    solves : int
        Rate computations so far.
    peak_load : numpy.ndarray or None
        With ``check``: the highest rate sum seen on every link direction.
    """

    def __init__(self, env: simpy.Environment, cluster: Cluster, *, check: bool = False) -> None:
        self.env = env
        self.cluster = cluster
        self.check = check
        self.arc_bytes = np.zeros(cluster.num_arcs)
        self.peak_load = np.zeros(cluster.num_arcs) if check else None
        self.flows = 0
        self.solves = 0
        self.wakeups = 0
        size = 64
        self._remaining = np.zeros(size)
        self._rate = np.zeros(size)
        self._bytes = np.zeros(size)
        self._path = np.zeros(size, dtype=np.int64)
        self._bound = np.full(size, np.inf)
        self._group: list[Any] = [None] * size  # a _Group, or a single send's event
        self._free: list[int] = list(range(size - 1, -1, -1))
        self._active = np.zeros(0, dtype=np.int64)
        self._entry_flow = np.zeros(0, dtype=np.int64)
        self._entry_arc = np.zeros(0, dtype=np.int64)
        self._pending: list[float] = []  # distinct start times (a heap)
        self._pending_at: dict[float, list[Any]] = {}  # start time -> slots (ints or arrays)
        self._stage: list[tuple[int, float, int, float]] = []
        self._arrival: dict[int, tuple[Callable[..., None], Any, Any]] = {}
        self._path_latency = cluster.paths.latency_list
        self._overhead = cluster.overhead.tolist()
        self._t_last = 0.0
        self._wake_at = np.inf
        self._wake_gen = 0
        self.on_flows_done: list[Callable[[np.ndarray, float], None]] = []

    # ------------------------------------------------------------------ public API
    def send(
        self,
        src: int,
        dst: int,
        nbytes: float,
        *,
        bound: float | None = None,
        on_arrival: tuple[Callable[..., None], Any, Any] | None = None,
    ) -> simpy.Event:
        """Send ``nbytes`` from rank ``src`` to rank ``dst``; the event fires when the last byte
        arrives (its value is the completion time).

        ``on_arrival = (func, a, b)`` calls ``func(a, b)`` the moment the last byte arrives, before any
        process waiting on the event resumes (this is how a :class:`~sim.runtime.Job` delivers
        payloads to mailboxes without another event per message).
        """
        if not nbytes >= 0:
            raise RunError(f"send {src}->{dst}: size must be >= 0 bytes, got {nbytes}")
        cl = self.cluster
        pid = cl._pid.get((src, dst))
        if pid is None:
            pid = cl.path_id(src, dst)
        event = Event(self.env)
        free = self._free
        if not free:
            self._grow(len(self._remaining) * 2)
        slot = free.pop()
        # per-flow numbers are staged in lists and written to the arrays in bulk at the next wake-up
        self._stage.append((slot, nbytes, pid, np.inf if bound is None else bound))
        self._group[slot] = event
        if on_arrival is not None:
            self._arrival[slot] = on_arrival
        self.flows += 1
        self._enqueue(self.env.now + self._path_latency[pid] + self._overhead[src], slot)
        return event

    def transfer(
        self,
        srcs: Sequence[int] | np.ndarray,
        dsts: Sequence[int] | np.ndarray,
        nbytes: float | Sequence[float] | np.ndarray,
    ) -> simpy.Event:
        """Start one flow per (src, dst) pair at once; the event fires when all of them are done."""
        srcs = np.asarray(srcs, dtype=np.int64)
        dsts = np.asarray(dsts, dtype=np.int64)
        sizes = np.broadcast_to(np.asarray(nbytes, dtype=float), srcs.shape)
        if srcs.shape != dsts.shape or srcs.ndim != 1:
            raise RunError("transfer: srcs and dsts must be 1-D and of the same length")
        if len(sizes) and not (sizes >= 0).all():
            raise RunError("transfer: sizes must be >= 0 bytes")
        event = self.env.event()
        count = len(srcs)
        if count == 0:
            return event.succeed(self.env.now)
        cl = self.cluster
        pids = np.fromiter(
            (cl.path_id(int(s), int(d)) for s, d in zip(srcs, dsts, strict=True)), dtype=np.int64, count=count
        )
        group = _Group(event, count)
        slots = self._alloc_many(count)
        self._flush()
        self._remaining[slots] = sizes
        self._bytes[slots] = sizes
        self._path[slots] = pids
        self._bound[slots] = np.inf
        for slot in slots:
            self._group[slot] = group
        self.flows += count
        starts = self.env.now + cl.paths.latency[pids] + cl.overhead[srcs]
        for start in np.unique(starts):
            self._enqueue(float(start), slots[starts == start])
        return event

    def _flush(self) -> None:
        """Write the staged per-flow numbers of single sends into the arrays."""
        stage = self._stage
        if not stage:
            return
        slots, nbytes, pids, bounds = zip(*stage, strict=True)
        idx = np.array(slots, dtype=np.int64)
        self._remaining[idx] = nbytes
        self._bytes[idx] = nbytes
        self._path[idx] = pids
        self._bound[idx] = bounds
        stage.clear()

    @property
    def active_flows(self) -> int:
        return len(self._active)

    def link_load(self) -> np.ndarray:
        """Current rate sum on every link direction (bytes/s)."""
        load = np.zeros(self.cluster.num_arcs)
        if len(self._active):
            np.add.at(load, self._entry_arc, self._rate[self._active][self._entry_flow])
        return load

    # ------------------------------------------------------------------ slots
    def _alloc_many(self, count: int) -> np.ndarray:
        if len(self._free) < count:
            self._grow(max(len(self._remaining) * 2, len(self._remaining) + count))
        slots = self._free[-count:]
        del self._free[-count:]
        return np.array(slots[::-1], dtype=np.int64)

    def _grow(self, size: int) -> None:
        old = len(self._remaining)
        for name in ("_remaining", "_rate", "_bytes", "_path", "_bound"):
            setattr(self, name, np.resize(getattr(self, name), size))
        self._bound[old:] = np.inf
        self._group.extend([None] * (size - old))
        self._free[:0] = range(size - 1, old - 1, -1)

    # ------------------------------------------------------------------ event loop
    def _enqueue(self, start: float, slots: Any) -> None:
        bucket = self._pending_at.get(start)
        if bucket is None:
            self._pending_at[start] = bucket = []
            heapq.heappush(self._pending, start)
            if start < self._wake_at:
                self._schedule(start)
        bucket.append(slots)

    def _schedule(self, when: float) -> None:
        self._wake_at = when
        self._wake_gen += 1
        gen = self._wake_gen
        timeout = self.env.timeout(max(0.0, float(when) - self.env.now))
        timeout.callbacks.append(lambda _event, gen=gen: self._wake(gen))

    def _wake(self, gen: int) -> None:
        if gen != self._wake_gen:
            return  # superseded by an earlier wake-up
        self.wakeups += 1
        now = self.env.now
        self._wake_at = np.inf
        self._flush()
        changed = self._drain(now)
        pending = self._pending
        starting: list[Any] = []
        while pending and pending[0] <= now:
            starting.extend(self._pending_at.pop(heapq.heappop(pending)))
        if starting:
            changed = self._start(starting, now) or changed
        if changed:
            self._solve()
        self._schedule_next(now)

    def _drain(self, now: float) -> bool:
        """Advance every active flow to ``now`` and complete the ones that are done."""
        active = self._active
        dt = now - self._t_last
        self._t_last = now
        if not len(active):
            return False
        rate = self._rate[active]
        remaining = self._remaining[active] - rate * dt
        self._remaining[active] = remaining
        done = remaining <= rate * (_TIME_RTOL * now + 1e-300)
        if not done.any():
            return False
        self._finish(active[done], now)
        keep = ~done
        self._active = active[keep]
        self._build_entries()
        return True

    def _start(self, starting: list[Any], now: float) -> bool:
        singles = [s for s in starting if isinstance(s, int)]
        parts = [s for s in starting if not isinstance(s, int)]
        if singles:
            parts.append(np.array(singles, dtype=np.int64))
        slots = parts[0] if len(parts) == 1 else np.concatenate(parts)
        cl = self.cluster
        instant = (self._remaining[slots] <= 0) | (cl.paths.length[self._path[slots]] == 0)
        if instant.any():
            self._finish(slots[instant], now)
            slots = slots[~instant]
        if not len(slots):
            return False
        self._active = np.concatenate([self._active, slots])
        self._build_entries()
        return True

    def _build_entries(self) -> None:
        paths = self.cluster.paths
        pids = self._path[self._active]
        lens = paths.length[pids]
        total = int(lens.sum())
        self._entry_flow = np.repeat(np.arange(len(pids)), lens)
        ends = np.cumsum(lens)
        offsets = np.arange(total) - np.repeat(ends - lens, lens)
        self._entry_arc = paths.arcs[np.repeat(paths.start[pids], lens) + offsets]

    def _solve(self) -> None:
        active = self._active
        if not len(active):
            return
        self.solves += 1
        rates = maxmin_rates(self._entry_flow, self._entry_arc, len(active), self.cluster.capacity, self._bound[active])
        self._rate[active] = rates
        if self.check:
            load = self.link_load()
            assert self.peak_load is not None
            np.maximum(self.peak_load, load, out=self.peak_load)
            over = load > self.cluster.capacity * (1 + 1e-9)
            if over.any():
                arc = int(np.argmax(over))
                raise RunError(
                    f"link {self.cluster.arc_name(arc)} over capacity: {load[arc]} > {self.cluster.capacity[arc]}"
                )

    def _schedule_next(self, now: float) -> None:
        when = np.inf
        active = self._active
        if len(active):
            when = now + float(np.min(self._remaining[active] / self._rate[active]))
        if self._pending:
            when = min(when, self._pending[0])
        if when < np.inf:
            self._schedule(when)

    def _finish(self, slots: np.ndarray, now: float) -> None:
        paths = self.cluster.paths
        pids = self._path[slots]
        lens = paths.length[pids]
        if lens.sum():
            offsets = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
            arcs = paths.arcs[np.repeat(paths.start[pids], lens) + offsets]
            np.add.at(self.arc_bytes, arcs, np.repeat(self._bytes[slots], lens))
        for hook in self.on_flows_done:
            hook(slots, now)
        groups = self._group
        free = self._free
        arrival = self._arrival
        for slot in slots.tolist():
            if arrival:
                hook = arrival.pop(slot, None)
                if hook is not None:
                    hook[0](hook[1], hook[2])
            group = groups[slot]
            groups[slot] = None
            free.append(slot)
            if type(group) is _Group:
                group.left -= 1
                if group.left == 0:
                    group.event.succeed(now)
            else:
                group.succeed(now)  # a single send's event
        self._rate[slots] = 0.0
