"""The flow-level network: messages as flows on routed paths, sharing every link direction by
max-min fairness, on a SimPy :class:`simpy.Environment`.

A flow of ``n`` bytes sent at ``t0`` first waits its path latency plus the sender's per-message overhead,
then drains at its current rate; it completes when its last byte is drained (the cut-through fluid model
of docs/model.md). Rates are recomputed whenever a flow starts draining or completes; every
change that happens at the same simulated instant is folded into one recomputation.

Use it from a SimPy process::

    env = simpy.Environment()
    net = Network(env, Cluster("star:hosts=4,bandwidth=100Gbps,latency=1us"))

    def rank0(env):
        yield net.send(0, 1, 64 * 2**20)          # one message, rank 0 -> rank 1
        yield net.transfer([0, 1], [2, 3], 2**20)  # two flows started together, one event for both

    env.process(rank0(env))
    env.run()

The engine keeps every flow in numpy arrays (slots reused through a free stack) and schedules a single
SimPy timeout for its next change, so a step in which thousands of flows start together costs one
rate computation. Rates themselves come from :mod:`sim.rates` (max-min fairness, skipped while no link
is shared, cached by the multiset of active paths).
"""

from __future__ import annotations

import bisect
import heapq
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import simpy
from simpy.events import NORMAL, Event

from . import rates as _rates_module
from ._arrays import distinct, floats
from .cluster import Cluster
from .errors import RunError, Stalled
from .rates import _CORE, _NET_BASE, Rates, gather_arcs
from .rates import SMALL_BATCH as _SMALL
from .results import LinkUse

#: rates handed over as lists beyond this many are set in numpy (its per-call cost pays there)
_SET_MANY = 64

__all__ = ["Network", "batch_at", "call_at", "settle"]


def call_at(env: Any, when: float, fire: Any) -> None:
    """Call ``fire(when)`` at simulated time ``when`` (a SimPy timeout's callback: no process)."""
    timeout = env.timeout(when - env.now)
    timeout.callbacks.append(lambda _e: fire(when))


def batch_at(env: Any, buckets: dict[float, list[Any]], when: float, item: Any, fire: Any) -> None:
    """Add ``item`` to ``buckets[when]``; the first item of an instant arms one ``fire(when)`` for them all."""
    bucket = buckets.get(when)
    if bucket is None:
        buckets[when] = bucket = []
        call_at(env, when, fire)
    bucket.append(item)


def settle(event: Event, value: Any) -> None:
    """Trigger ``event`` with ``value``. One nobody waits on yet is marked processed on the spot rather
    than scheduled: a process that yields it later goes on at once, as it would have after the event's
    step at this same instant, and the event costs no step of the event loop (a send whose sender is
    still waiting for its receive, in every lock-step algorithm). It sets what ``Event.succeed`` and
    the event's step would (``_ok``, ``_value``, ``callbacks = None``: SimPy's Event internals, the same
    since SimPy 3; pyproject keeps SimPy below 5, and tests/test_message_engine.py holds every result
    to the runs without it)."""
    if event.callbacks:
        event.succeed(value)
    else:
        _succeeded(event, value)
        event.callbacks = None  # type: ignore[assignment]


_SETTLE = settle  # (the compiled core's sent_many settles events as this does; a test's stand-in goes the Python way)


def _take(events: list[Any], slot: int) -> Any:
    """A single send's record (event, hook) taken off ``events`` (Network._event) at ``slot``."""
    sent = events[slot]
    if sent is None:
        raise KeyError(slot)
    events[slot] = None
    return sent


def _succeeded(event: Event, value: Any) -> None:
    """Mark ``event`` triggered with ``value``, as ``Event.succeed`` does, without scheduling it (SimPy's
    Event internals; see :func:`settle`)."""
    event._ok = True
    event._value = value


_TIME_RTOL = 1e-12  # flows due within this fraction of "now" complete together
_IDLE_WAKES = 1000  # Network._wake_py's wake-ups in a row at one instant that drain and start nothing (Stalled)
#: processes resumed by a wake-up's arrivals run at the end of the wake-up itself when no other event
#: is due at that instant (see Network._resume_held); tests turn it off to compare
_RESUME_IN_WAKE = True
#: single sends whose links no other flow holds take the private lane (see Network._lane_pair);
#: tests turn it off to compare
_PRIVATE = True
#: the private lane's sends and completions in the compiled core where it is built (see Network._lane_send_py);
#: tests turn it off to compare
_LANE_CORE = True
#: the wake-up's steps in the compiled core where it is built -- the next wake-up (Network._schedule_next), a
#: few single sends started (Network._start_few) and a nominal unbounded batch launched (Network.launch);
#: tests turn it off to compare (tests/test_wake_core.py)
_WAKE_CORE = True
#: the whole wake-up (Network._wake_py) in the compiled core where it is built (net_wake), with _WAKE_CORE;
#: tests turn it off to compare (tests/test_wake_core.py)
_WHOLE_CORE = True
#: single sends on the closed lane (Network.send's engine lines) and their arrivals (Network._sent) in the
#: compiled core where it is built, for the nominal message model; tests turn it off to compare
_SEND_CORE = True
#: with it, a wake-up that would be the event loop's next step runs right after the one before it, with no
#: event of its own (sim._ratecore.net_run); tests turn it off to compare
_PUMP = True
#: the due-time heap held in C (``sim._ratecore.Dues``) in place of the heap list and its dict once the private
#: lane is closed, where the core is built; tests turn it off to compare (tests/test_net_state.py)
_DUE_CORE = True
#: per message without Python where the core is built: the compiled ranks' routes, start delays and send records
#: found once per send (sim._ratecore.Crank), the staged sends written into the per-slot arrays (Network._flush's
#: lines) and, with _SEND_CORE, the arrivals of single sends of no owner and no transfer group (Network._finish /
#: _finish_few's lines) in net_run; tests turn it off to compare (tests/test_eng_send.py)
_MSG_CORE = True
#: a list to record every wake-up in (Network._wake_record), or None (tests/test_wake_core.py)
_WAKE_LOG: list[tuple[float, float, int, int, int, int, int, int]] | None = None


class _PyDue:
    """The due-time heap's loops in Python (the reference; ``sim._ratecore`` has the same three in C,
    used where it is built: see :data:`_ops`). The heap holds distinct due times (heapq's layout), and
    ``due_at`` the slots due at each; a slot is stale there once its due time differs or it no longer
    drains."""

    @staticmethod
    def drain_due(
        heap: list[float], due_at: dict[float, list[int]], cut: float, is_active: np.ndarray, due: np.ndarray
    ) -> tuple[list[int], int]:
        """Pop every due time up to ``cut``: (the slots done, sorted -- still draining and due then, and
        no longer active -- and the entries taken off)."""
        done = []
        taken = 0
        while heap and heap[0] <= cut:
            when = heapq.heappop(heap)
            bucket = due_at.pop(when)
            taken += len(bucket)
            for slot in bucket:
                if is_active[slot] and due[slot] == when:
                    is_active[slot] = False  # an entry pushed twice completes its flow once
                    done.append(slot)
        done.sort()
        return done, taken

    @staticmethod
    def next_due(
        heap: list[float], due_at: dict[float, list[int]], is_active: np.ndarray, due: np.ndarray
    ) -> tuple[float, int]:
        """(The earliest due time of a draining flow, or inf; the entries taken off): due times whose
        every slot is stale are popped."""
        taken = 0
        while heap:
            top = heap[0]
            bucket = due_at[top]
            for slot in bucket:
                if is_active[slot] and due[slot] == top:
                    return top, taken
            heapq.heappop(heap)  # every slot due then is stale
            del due_at[top]
            taken += len(bucket)
        return np.inf, taken

    @staticmethod
    def set_due(
        slots: list[int],
        rates: list[float],
        now: float,
        rate: np.ndarray,
        left: np.ndarray,
        t_set: np.ndarray,
        due: np.ndarray,
        heap: list[float],
        due_at: dict[float, list[int]],
    ) -> int:
        """New rates from ``now`` on: a slot whose rate changes has its bytes ``left`` brought up to date
        and its new due time entered; returns the entries added."""
        added = 0
        for slot, new in zip(slots, rates, strict=True):
            old = float(rate[slot])
            if old == new:
                continue
            remaining = float(left[slot]) - old * (now - float(t_set[slot]))
            left[slot] = remaining
            t_set[slot] = now
            rate[slot] = new
            when = now + remaining / new if new > 0 else np.inf
            due[slot] = when
            bucket = due_at.get(when)
            if bucket is None:
                due_at[when] = [slot]
                heapq.heappush(heap, when)
            else:
                bucket.append(slot)
            added += 1
        return added


#: the due-time heap's loops: the compiled core's where it is built (COLLSIM_PURE=1: the Python ones)
_ops: Any = _PyDue if _CORE is None else _CORE


class _Group:
    """The flows of one transfer call and the event that fires when all of them are done."""

    __slots__ = ("event", "left")

    def __init__(self, event: simpy.Event, left: int) -> None:
        self.event = event
        self.left = left


def _top_stable(values: np.ndarray, top: int) -> list[int]:
    """``np.argsort(-values, kind="stable")[:top]``: the ``top`` largest first, ties in index order -- the
    entries at least the ``top``-th largest put in order, not the whole array (a fabric's arcs)."""
    if 0 < top < len(values) and not np.isnan(values).any():
        kth = np.partition(values, len(values) - top)[len(values) - top]
        at = np.flatnonzero(values >= kth)
        return at[np.argsort(-values[at], kind="stable")][:top].tolist()
    return np.argsort(-values, kind="stable")[:top].tolist()


class Network(_NET_BASE):
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
    flows : int
        Flows started so far.
    solves, cache_hits : int
        Max-min computations so far, and how many were answered from the cache.
    peak_load : numpy.ndarray or None
        With ``check``: the highest rate sum seen on every link direction.
    """

    def __init__(self, env: simpy.Environment, cluster: Cluster, *, check: bool = False) -> None:
        self.env = env
        self.cluster = cluster
        self.check = check
        self.peak_load = np.zeros(cluster.num_arcs) if check else None
        self.flows = 0
        self.rates = Rates(cluster)
        self.wakeups = 0
        size = 64
        self._remaining = np.zeros(size)  # wire bytes left as of _t_set (rates change only there)
        self._t_set = np.zeros(size)  # when each flow's rate was last set
        self._due = np.full(size, np.inf)  # when each flow ends at its current rate
        self._rate = np.zeros(size)
        self._bytes = np.zeros(size)
        self._path = np.zeros(size, dtype=np.int64)
        self._bound = np.full(size, np.inf)
        self._gid = np.full(size, -1, dtype=np.int64)  # transfer group, -1 for none
        self._owner = np.full(size, -1, dtype=np.int64)  # completion owner, -1 for none
        #: single sends' events and arrival hooks, by slot (None: no single send there)
        self._event: list[tuple[Event, tuple[Callable[..., None], Any, Any] | None] | None] = [None] * size
        self._free: list[int] = list(range(size - 1, -1, -1))  # free slots, a stack: top is the last
        self._groups: list[_Group | None] = []
        self._free_gids: list[int] = []
        self._owners: list[Callable[[np.ndarray, float], None]] = []
        #: called at the end of every wake-up, when the network state is consistent
        self.after_wake: list[Callable[[], None]] = []
        # the draining flows: a mask over slots, and their slots as an array (built when asked for)
        self._is_active = np.zeros(size, dtype=bool)
        self._nactive = 0
        self._active_arr: np.ndarray | None = np.zeros(0, dtype=np.int64)
        # due times of the draining flows, a heap of distinct times, and the slots due at each (flows
        # that end together share one entry); a slot is stale there once its due time differs or it no
        # longer drains (dropped when its time reaches the top)
        self._heap: Any = []  # (a list, or the Dues holding both: see _hold_dues)
        self._due_at: Any = {}
        self._due_entries = 0  # slots held in _due_at, stale ones included (set when the lane closes)
        self._entries: tuple[np.ndarray, np.ndarray] | None = None
        self._pending: list[float] = []  # distinct start times (a heap)
        self._pending_at: dict[float, list[Any]] = {}  # start time -> slots (ints or arrays)
        self._stage: list[tuple[int, float, float, int, float]] = []
        self._model = cluster.message_model  # start delays and wire bytes (sim.msgmodel)
        self._path_bytes = np.zeros(64)
        self._unpathed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see account_arcs
        self._t_last = 0.0
        self._wake_at = np.inf
        self._wake_event: Event | None = None  # the timeout of the next wake-up
        #: during a wake-up: the events its arrivals triggered that processes wait on, in order
        self._held: list[Event] | None = None
        # the private lane (Network._lane_pair): on until two flows meet on a link direction
        self._lane = _PRIVATE and not check and self.rates._capacity is None
        #: private slot -> (start, due, path, its arcs, bytes, wire bytes, rate, bound, event, arrival
        #: hook), in the order sent (the per-slot arrays are written when the lane closes)
        self._lane_flows: dict[int, tuple[Any, ...]] = {}
        self._lane_busy: set[int] = set()  # the link directions the private flows hold
        self._lane_pairs: dict[tuple[int, int], tuple[int, tuple[int, ...], float, float | None]] = {}  # _lane_pair
        self._lane_starts: list[float] = []  # start times of private flows, sorted (see _due_wake)
        #: the lane's objects for the compiled core's lane_send / lane_wake (None: the Python path)
        self._lane_ctx: tuple[Any, ...] | None = None
        #: the same tuple for the compiled core's wake_next (None: the Python path; see _schedule_next)
        self._wake_ctx: tuple[Any, ...] | None = None
        #: (that tuple, the nominal message model, inf) for the compiled core's eng_send and sent_many: a
        #: single send once the lane is closed, and single sends' arrivals (None: the Python lines)
        self._send_ctx: tuple[Any, ...] | None = None
        if _ops is not _PyDue and ((self._lane and _LANE_CORE) or _WAKE_CORE):
            ctx = (
                self,
                env,
                Event,
                self._free,
                self._lane_busy,
                self._lane_flows,
                self._heap,
                self._due_at,
                self._lane_starts,
                self.after_wake,
                1 + _TIME_RTOL,
                self._lane_pairs,
                NORMAL,
                heapq.heappush,
            )
            self._lane_ctx = ctx if self._lane and _LANE_CORE else None
            self._wake_ctx = ctx if _WAKE_CORE else None
            if _SEND_CORE and not getattr(self._model, "_models", True):
                self._send_ctx = (ctx, self._model, np.inf)
        #: the whole wake-up's context for the compiled core's net_wake (None: Network._wake_py)
        #: (SimPy's own step: no look at the clock between events, so a wake-up may run the next one itself)
        if not self._lane:
            self._hold_dues()
        plain = type(env).step is simpy.Environment.step
        self._whole_ctx = (
            (self._wake_ctx, np.empty, np.int64, _rates_module, sys.modules[__name__], plain)
            if self._wake_ctx is not None and _WHOLE_CORE
            else None
        )

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

        ``bound`` caps the flow's rate (a NIC or host limit). ``on_arrival = (func, a, b)`` calls
        ``func(a, b)`` the moment the last byte arrives, before any process waiting on the event
        resumes (this is how a :class:`~sim.runtime.Job` delivers payloads without another event).
        """
        ctx = self._lane_ctx
        if ctx is not None:  # the private lane's lines below, in C (tests/test_lane_core.py holds them equal)
            event = _ops.lane_send(ctx, src, dst, nbytes, bound, on_arrival)
            if event is not None and event is not NotImplemented:
                return event
        elif self._send_ctx is not None:  # the engine's lines below, in C (tests/test_msg_nccl.py holds them equal)
            event = _ops.eng_send(self._send_ctx, src, dst, nbytes, bound, on_arrival)
            if event is not NotImplemented:
                return event
        if not nbytes >= 0:
            raise RunError(f"send {src}->{dst}: size must be >= 0 bytes, got {nbytes}")
        free = self._free
        if not free:
            self._grow(len(self._remaining) * 2)
        if self._lane:
            # the private lane (see _lane_pair): no other flow holds a link direction of the path
            pair = self._lane_pairs.get((src, dst))
            if pair is None:
                pair = self._lane_pair(src, dst)
            event = self._lane_send_py(pair, src, nbytes, bound, on_arrival)
            if event is not None:
                return event
            self._end_lane()  # (an instant flow, or a flow that would meet another: the engine's)
        cl = self.cluster
        pid = cl._pid.get((src, dst))
        if pid is None:
            pid = cl.path_id(src, dst)
        event = Event(self.env)
        slot = free.pop()
        delay, wire = self._model.one(pid, src, nbytes)
        # per-flow numbers are staged in lists and written to the arrays in bulk at the next wake-up
        self._stage.append((slot, nbytes, wire, pid, np.inf if bound is None else bound))
        self._event[slot] = (event, on_arrival)
        self.flows += 1
        start = self.env._now + delay  # (_enqueue, inline)
        bucket = self._pending_at.get(start)
        if bucket is None:
            self._pending_at[start] = [slot]
            heapq.heappush(self._pending, start)
            if start < self._wake_at:
                self._schedule(start)
        else:
            bucket.append(slot)
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
        if srcs.shape != dsts.shape or srcs.ndim != 1:
            raise RunError("transfer: srcs and dsts must be 1-D and of the same length")
        event = self.env.event()
        if len(srcs) == 0:
            return event.succeed(self.env.now)
        cl = self.cluster
        pids = np.fromiter(
            (cl.path_id(int(s), int(d)) for s, d in zip(srcs, dsts, strict=True)), dtype=np.int64, count=len(srcs)
        )
        if self._free_gids:
            gid = self._free_gids.pop()
            self._groups[gid] = _Group(event, len(srcs))
        else:
            gid = len(self._groups)
            self._groups.append(_Group(event, len(srcs)))
        slots = self.launch(pids, srcs, nbytes)
        self._gid[slots] = gid
        return event

    def intern(self, srcs: Sequence[int] | np.ndarray, dsts: Sequence[int] | np.ndarray) -> np.ndarray:
        """Intern the routes of many pairs at once (:meth:`Cluster.path_ids`: on two-level fabrics in
        bulk), so that :meth:`send` finds them as it finds a route it has used; new routes are numbered
        in the order their pairs first appear, as sending in that order would number them. Returns the
        pairs' route ids (what :meth:`sim.runtime.Job.post` can be given)."""
        srcs = np.asarray(srcs, dtype=np.int64)
        dsts = np.asarray(dsts, dtype=np.int64)
        if not len(srcs):
            return np.zeros(0, dtype=np.int64)
        cl = self.cluster
        pids = cl.path_ids(srcs, dsts)
        cl._pid.update(zip(zip(srcs.tolist(), dsts.tolist(), strict=True), pids.tolist(), strict=True))
        return pids

    def add_owner(self, callback: Callable[[np.ndarray, float], None]) -> int:
        """Register ``callback(slots, now)``, called with the slots of an owner's flows as they
        complete (before the slots are reused); returns the owner id for :meth:`launch`."""
        self._end_lane()
        self._owners.append(callback)
        return len(self._owners) - 1

    def set_owner(self, owner: int, callback: Callable[[np.ndarray, float], None]) -> None:
        """Call ``callback(slots, now)`` from now on for ``owner``'s completed flows (an owner id from
        :meth:`add_owner`), e.g. an executor's compiled core in place of its Python method."""
        self._owners[owner] = callback

    def launch(
        self,
        pids: np.ndarray,
        srcs: np.ndarray,
        nbytes: float | np.ndarray,
        owner: int = -1,
        bounds: np.ndarray | None = None,
    ) -> np.ndarray:
        """Start flows on interned paths ``pids`` (from ranks ``srcs``) now; returns their slots.

        The batch primitive under :meth:`transfer` and the fast path: no event per flow; an
        ``owner`` (see :meth:`add_owner`) hears of completions in bulk. ``bounds`` caps the flows'
        rates (as ``bound`` does in :meth:`send`).
        """
        count = len(pids)
        if count == 1:
            bound = None if bounds is None else bounds[0]
            return self.launch_one(int(pids[0]), int(srcs[0]), float(np.asarray(nbytes).reshape(-1)[0]), owner, bound)
        self._end_lane()
        sizes = floats(nbytes, (count,))
        if _WAKE_CORE and bounds is None and _ops is not _PyDue and not getattr(self._model, "_models", True):
            # the nominal message model, no bounds: the same slots, arrays and start times in one compiled
            # pass (launch_rows; tests/test_wake_core.py holds them equal)
            return self.launch_rows(np.arange(count), pids, srcs, sizes, owner)
        if count and not (sizes >= 0).all():
            raise RunError("launch: sizes must be >= 0 bytes")
        self._flush()
        slots = self._alloc_many(count)
        delays, wire = self._model.many(pids, srcs, sizes)
        self._remaining[slots] = wire
        self._bytes[slots] = sizes
        self._path[slots] = pids
        self._bound[slots] = np.inf if bounds is None else bounds
        self._owner[slots] = owner
        self.flows += count
        self._enqueue_all(self.env.now + delays, slots)
        return slots

    def _enqueue_all(self, starts: np.ndarray, slots: np.ndarray) -> None:
        """Flows ``slots`` pending until ``starts`` (grouped by start time, in time order)."""
        first = starts[0] if len(starts) else 0.0
        if len(starts) and (starts == first).all():
            self._enqueue(float(first), slots)
        else:
            for start in distinct(starts):  # (np.unique's first call imports numpy.ma: milliseconds)
                self._enqueue(float(start), slots[starts == start])

    def launch_rows(
        self, rows: np.ndarray, pids: np.ndarray, srcs: np.ndarray, nbytes: np.ndarray, owner: int = -1
    ) -> np.ndarray:
        """:meth:`launch` of flows on paths ``pids[rows]`` from ``srcs[rows]`` of ``nbytes[rows]`` bytes, no
        rate bound (a dataflow's messages ``rows``): the same slots, arrays and start times, the rows read
        and the arrays written in one compiled pass where the message model is the nominal one."""
        count = len(rows)
        if count <= 1 or _ops is _PyDue or getattr(self._model, "_models", True):
            return self.launch(pids[rows], srcs[rows], nbytes[rows], owner=owner)
        self._end_lane()
        self._flush()
        slots = self._alloc_many(count)
        starts = np.empty(count)
        cl = self.cluster
        fields = (self._remaining, self._bytes, self._path, self._bound, self._owner)
        if not _ops.launch_rows(
            rows, pids, srcs, nbytes, slots, *fields, owner, cl.paths.latency, cl.overhead, self.env.now, starts
        ):
            self._free.extend(slots[::-1].tolist())  # (the slots taken back, as they were)
            raise RunError("launch: sizes must be >= 0 bytes")
        self.flows += count
        self._enqueue_all(starts, slots)
        return slots

    def launch_one(self, pid: int, src: int, nbytes: float, owner: int = -1, bound: float | None = None) -> np.ndarray:
        """:meth:`launch` for one flow, in scalar operations (ranks that drift apart launch one flow
        at a time, and numpy's per-call cost would dominate); returns its slot as an array of one."""
        self._end_lane()
        if not nbytes >= 0:
            raise RunError("launch: sizes must be >= 0 bytes")
        if not self._free:
            self._grow(len(self._remaining) * 2)
        slot = self._free.pop()
        delay, wire = self._model.one(pid, src, nbytes)
        self._remaining[slot] = wire
        self._bytes[slot] = nbytes
        self._path[slot] = pid
        self._bound[slot] = np.inf if bound is None else bound
        self._owner[slot] = owner
        self._gid[slot] = -1
        self.flows += 1
        slots = np.array([slot], dtype=np.int64)
        self._enqueue(self.env.now + delay, slots)
        return slots

    @property
    def active_flows(self) -> int:
        return self._nactive

    @property
    def _active(self) -> np.ndarray:
        """Slots of the draining flows, in slot order."""
        if self._active_arr is None:
            self._active_arr = np.flatnonzero(self._is_active)
        return self._active_arr

    def busiest(self, span: float, top: int = 5, arc_bytes: np.ndarray | None = None) -> tuple[LinkUse, ...]:
        """The ``top`` link directions by bytes carried / capacity (the time they were busy), with their
        utilization over ``span`` seconds; directions that carried nothing are left out. ``arc_bytes``:
        :attr:`arc_bytes` where the caller has it already (it is summed over every route)."""
        if arc_bytes is None:
            arc_bytes = self.arc_bytes
        with np.errstate(divide="ignore", invalid="ignore"):
            drain = arc_bytes / self.cluster.capacity
        order = _top_stable(drain, top)
        cl = self.cluster
        return tuple(
            LinkUse(cl.arc_name(a), float(arc_bytes[a]), float(drain[a] / span) if span > 0 else 0.0)
            for a in order
            if arc_bytes[a] > 0
        )

    @property
    def arc_bytes(self) -> np.ndarray:
        """Bytes carried so far by every link direction (indexed like the cluster's arcs)."""
        paths = self.cluster.paths
        n = min(paths.count, len(self._path_bytes))  # routes interned after the last booking carried nothing
        if not n:
            out = np.zeros(self.cluster.num_arcs)
        else:
            lens = paths.length[:n]
            reps = np.repeat(self._path_bytes[:n], lens)
            # the first n paths' arcs lie one after another from the table's start (paths are only ever
            # appended); each arc's bytes summed in that order, as np.add.at sums them
            end = int(paths.start[n - 1] + lens[n - 1])
            out = np.bincount(paths.arcs[:end], weights=reps, minlength=self.cluster.num_arcs)
        if self._unpathed is not None:
            out += self._unpathed[0]
        return out

    def rank_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """Bytes each rank has sent and received so far (delivered messages)."""
        paths = self.cluster.paths
        n = paths.count
        size = self.cluster.size
        done = np.zeros(n)
        m = min(n, len(self._path_bytes))
        done[:m] = self._path_bytes[:m]
        sent = np.bincount(paths.src[:n], weights=done, minlength=size)
        received = np.bincount(paths.dst[:n], weights=done, minlength=size)
        if self._unpathed is not None:
            sent = sent + self._unpathed[1][:size]
            received = received + self._unpathed[2][:size]
        return sent, received

    def link_load(self) -> np.ndarray:
        """Current rate sum on every link direction (bytes/s)."""
        load = np.zeros(self.cluster.num_arcs)
        if len(self._active):
            flow, arc = self._entries_now()
            np.add.at(load, arc, self._rate[self._active][flow])
        return load

    # ------------------------------------------------------------------ state, for the fast path
    @property
    def slots(self) -> int:
        """How many flow slots exist (every slot :meth:`launch` returns is below this)."""
        return len(self._remaining)

    @property
    def updated_at(self) -> float:
        """The simulated time the flows' remaining bytes were last brought up to date."""
        return self._t_last

    def flow_state(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(path id, remaining wire bytes as of :attr:`updated_at`, current rate) of each slot in
        ``slots`` (copies: the network's own arrays are not exposed)."""
        rate = self._rate[slots]
        left = self._remaining[slots] - rate * (self._t_last - self._t_set[slots])
        return self._path[slots], left, rate

    def in_flight(self, owner: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots of ``owner``'s flows: the draining ones, and the ones still paying latency."""
        active = self._active[self._owner[self._active] == owner]
        pending = [s for bucket in self._pending_at.values() for s in bucket if not isinstance(s, int)]
        waiting = np.concatenate(pending) if pending else np.zeros(0, dtype=np.int64)
        return active, waiting[self._owner[waiting] == owner]

    def pending_starts(self, slots: np.ndarray) -> np.ndarray:
        """Start time of each given pending slot."""
        starts = np.zeros(len(slots))
        where = {int(s): i for i, s in enumerate(slots.tolist())}
        for t, bucket in self._pending_at.items():
            for item in bucket:
                for s in np.atleast_1d(item).tolist():
                    i = where.get(s)
                    if i is not None:
                        starts[i] = t
        return starts

    def suspend(self) -> None:
        """Cancel the scheduled wake-up (the fast path is about to move time on by itself)."""
        self._end_lane()
        self._wake_event = None
        self._wake_at = np.inf

    def shift(self, delta: float, path_bytes: np.ndarray, flows: int) -> None:
        """Move every pending start and the drain clock ``delta`` later and add the bytes and flows of
        the skipped time; call :meth:`resume` once simulated time has moved on by ``delta``."""
        shifted: dict[float, list[Any]] = {}
        for t, bucket in self._pending_at.items():
            # two start times an ulp apart can round to one after the shift: keep both buckets
            shifted.setdefault(t + delta, []).extend(bucket)
        self._pending_at = shifted
        self._pending = sorted(shifted)
        self._t_last += delta
        active = self._active
        self._t_set[active] += delta
        self._due[active] += delta
        self._rebuild_due()
        n = len(path_bytes)
        self._path_bytes_for(n)[:n] += path_bytes
        self.flows += flows

    def resume(self) -> None:
        """Schedule the next wake-up from the current flow state (after :meth:`suspend`)."""
        self._schedule_next(self.env.now)

    def account(self, pids: np.ndarray, nbytes: np.ndarray, flows: int) -> None:
        """Book bytes delivered on paths, and flows, that were simulated outside the event loop
        (the fast path's closed-form evaluation)."""
        self._path_bytes_for(self.cluster.paths.count)
        np.add.at(self._path_bytes, pids, nbytes)
        self.flows += flows

    def account_one(self, pid: int, nbytes: float) -> None:
        """:meth:`account` for one message, in scalar operations."""
        if pid >= len(self._path_bytes):
            self.account(np.array([pid]), np.array([nbytes]), 1)
            return
        self._path_bytes[pid] += nbytes
        self.flows += 1

    def _path_bytes_for(self, need: int) -> np.ndarray:
        """The per-path bytes delivered, grown (doubling) to hold at least ``need`` paths."""
        have = len(self._path_bytes)
        if have < need:
            grown = np.zeros(max(need, 2 * have))
            grown[:have] = self._path_bytes
            self._path_bytes = grown
        return self._path_bytes

    def account_arcs(self, arc_bytes: np.ndarray, sent: np.ndarray, received: np.ndarray, flows: int) -> None:
        """Book bytes delivered on link directions and by ranks, and flows, for messages whose routes
        were never interned as paths (:mod:`sim.classes` at scale); :meth:`path_bytes` leaves them out."""
        size = self.cluster.size
        if self._unpathed is None:
            self._unpathed = (np.zeros(self.cluster.num_arcs), np.zeros(size), np.zeros(size))
        self._unpathed[0][:] += arc_bytes
        self._unpathed[1][:] += sent[:size]
        self._unpathed[2][:] += received[:size]
        self.flows += flows

    def rebook(self, cluster: Any, path_bytes: np.ndarray, flows: int) -> None:
        """After a run over a view of ``cluster`` with routes of its own (:mod:`sim.symmetry`): the
        network is ``cluster``'s again, with ``path_bytes`` delivered on its routes and ``flows`` in all."""
        self.cluster = cluster
        self._path_bytes = np.array(path_bytes, dtype=float)
        self.flows = flows

    def path_bytes(self) -> np.ndarray:
        """Bytes delivered so far per interned path."""
        return self._path_bytes[: self.cluster.paths.count].copy()

    # ------------------------------------------------------------------ slots
    def _alloc_many(self, count: int) -> np.ndarray:
        free = self._free
        if len(free) < count:
            self._grow(max(len(self._remaining) * 2, len(self._remaining) + count))
        taken = free[len(free) - count :]
        del free[len(free) - count :]
        return np.array(taken[::-1], dtype=np.int64)

    def _release(self, slots: np.ndarray) -> None:
        self._free.extend(slots.tolist())

    def _grow(self, size: int) -> None:
        old = len(self._remaining)
        for name in (
            "_remaining",
            "_t_set",
            "_due",
            "_rate",
            "_bytes",
            "_path",
            "_bound",
            "_gid",
            "_owner",
            "_is_active",
        ):
            setattr(self, name, np.resize(getattr(self, name), size))
        self._event.extend([None] * (size - old))
        self._bound[old:] = np.inf
        self._rate[old:] = 0.0  # np.resize repeats the old contents
        self._due[old:] = np.inf
        self._gid[old:] = -1
        self._owner[old:] = -1
        self._is_active[old:] = False
        self._free[:0] = range(size - 1, old - 1, -1)  # new slots go under the existing free ones

    def _flush(self) -> None:
        """Write the staged per-flow numbers of single sends into the arrays (a free slot's transfer
        group and owner are -1 already)."""
        stage = self._stage
        if not stage:
            return
        if len(stage) <= _SMALL:  # numpy's per-call cost beats its per-element gain
            remaining, nbytes_of, path, bound = self._remaining, self._bytes, self._path, self._bound
            for slot, nbytes, wire, pid, limit in stage:
                remaining[slot] = wire
                nbytes_of[slot] = nbytes
                path[slot] = pid
                bound[slot] = limit
            stage.clear()
            return
        slots, nbytes, wire, pids, bounds = zip(*stage, strict=True)
        idx = np.array(slots, dtype=np.int64)
        self._remaining[idx] = wire
        self._bytes[idx] = nbytes
        self._path[idx] = pids
        self._bound[idx] = bounds
        stage.clear()

    # ------------------------------------------------------------------ the private lane
    def _lane_pair(self, src: int, dst: int) -> tuple[int, tuple[int, ...], float, float | None]:
        """(route, its link directions, its narrowest capacity, its messages' start delay -- None where
        the message model's depends on the size) of a pair, for the private lane.

        While no two flows ever meet on a link direction, every flow drains at its path's narrowest
        capacity (or its bound) from its start to its end: what :mod:`sim.rates` gives a flow alone on
        its links. A single send whose links no other flow holds is therefore *private*: due at
        ``start + wire / rate`` -- the arithmetic the engine does at its start -- it goes straight into
        the heap of due times, kept as a record (:attr:`_lane_flows`): no start wake-up, no rate
        computation, no per-link counts in :mod:`sim.rates`, no per-slot arrays. It holds its links from
        its send to its end (:attr:`_lane_busy`), so a flow whose links are free cannot meet it. The
        engine wakes at a start only to complete the flows due within ``_TIME_RTOL`` of it, as its
        wake-up there would (:meth:`_due_wake`), and wake-ups come at their exact times
        (:meth:`_schedule`), so the times are the engine's bit for bit (tests/test_message_engine.py).
        The first send that is not private closes the lane for good (:meth:`_end_lane`)."""
        cl = self.cluster
        pid = cl._pid.get((src, dst))
        if pid is None:
            pid = cl.path_id(src, dst)
        paths = cl.paths
        first = int(paths.start[pid])
        arcs = tuple(paths.arcs[first : first + int(paths.length[pid])].tolist())
        narrow = float(paths.bottleneck[pid]) if arcs else 0.0  # (no links: an instant flow, not private)
        model = self._model
        # the nominal model's delay is the pair's for good (its route's latency plus the sender's overhead)
        delay = None if model._models else model.one(pid, src, 0.0)[0]
        pair = self._lane_pairs[(src, dst)] = (pid, arcs, narrow, delay)
        return pair

    def _lane_send_py(
        self,
        pair: tuple[int, tuple[int, ...], float, float | None],
        src: int,
        nbytes: float,
        bound: float | None,
        on_arrival: tuple[Callable[..., None], Any, Any] | None,
    ) -> Event | None:
        """:meth:`send` on the private lane: the send's event, or None where it is not private (an
        instant flow, or a flow that would meet another). ``sim._ratecore.lane_send`` does the same in C
        for the nominal message model (its delay in ``pair``)."""
        pid, arcs, narrow, delay = pair
        if delay is None:  # (a link model's: by size)
            delay, wire = self._model.one(pid, src, nbytes)
        else:
            wire = nbytes  # (the nominal model's, its delay the pair's)
        rate = narrow if bound is None or narrow <= bound else float(bound)
        busy = self._lane_busy
        start = self.env._now + delay
        due = start + wire / rate if rate > 0 else np.inf  # the engine's (_set_rates: start + remaining / rate)
        # (a flow due within _TIME_RTOL of its start is not private: see _due_wake)
        if not (wire > 0 and due > start * (1 + _TIME_RTOL) + 1e-300 and busy.isdisjoint(arcs) and not self.after_wake):
            return None
        event = Event(self.env)
        slot = self._free.pop()
        self.flows += 1
        busy.update(arcs)
        self._lane_flows[slot] = (start, due, pid, arcs, nbytes, wire, rate, bound, event, on_arrival)
        heap = self._heap
        bucket = self._due_at.get(due)
        if bucket is None:
            self._due_at[due] = [slot]
            heapq.heappush(heap, due)
        else:
            bucket.append(slot)
        bisect.insort(self._lane_starts, start)
        wake_at = self._wake_at
        if due < wake_at:
            self._schedule(self._due_wake(due, self.env._now))
        elif start < wake_at and start < heap[0] <= start * (1 + _TIME_RTOL) + 1e-300:
            self._schedule(start)  # a wake-up at the start completes a flow due just after it
        return event

    def _due_wake(self, due: float, now: float) -> float:
        """When to wake for the first flows due, at ``due``: the engine woke at every start, and a
        wake-up completes the started flows due within ``_TIME_RTOL`` of its time, so the earliest
        private start from ``now`` on whose wake-up would complete them, else ``due`` itself. (A
        private flow is due later than ``_TIME_RTOL`` after its own start, so a start that close
        before ``due`` comes after the start of the flows due then, and no flow due later can be
        completed by a wake-up these would not be completed by.)"""
        starts = self._lane_starts
        j = bisect.bisect_left(starts, due) - 1
        if j < 0 or starts[j] < now or due > starts[j] * (1 + _TIME_RTOL) + 1e-300:
            return due
        while j > 0 and starts[j - 1] >= now and due <= starts[j - 1] * (1 + _TIME_RTOL) + 1e-300:
            j -= 1
        return starts[j]

    def _end_lane(self) -> None:
        """Close the private lane for good: its flows become the engine's, as they would be had they
        never left it -- started ones (start before now) active at their rate since their start, the
        others pending -- and :mod:`sim.rates` hears of the started ones (every one alone on its
        links: its isolated case leaves their rates as they are)."""
        if not self._lane:
            return
        self._lane = False
        self._lane_ctx = None
        lane = self._lane_flows
        self._due_entries = len(lane)  # (the lane's flows are the heap's entries: it keeps no count)
        now = self.env._now
        started = []
        for slot, (start, due, pid, _, nbytes, wire, rate, bound, event, hook) in lane.items():
            self._event[slot] = (event, hook)
            self._remaining[slot] = wire
            self._bytes[slot] = nbytes
            self._path[slot] = pid
            self._bound[slot] = np.inf if bound is None else bound
            if start < now:
                started.append(slot)
                self._rate[slot] = rate
                self._t_set[slot] = start
                self._due[slot] = due
                self._is_active[slot] = True
                continue
            self._due[slot] = np.inf  # (its entry in the due heap is stale now)
            self._rate[slot] = 0.0
            bucket = self._pending_at.get(start)
            if bucket is None:
                self._pending_at[start] = [slot]
                heapq.heappush(self._pending, start)
            else:
                bucket.append(slot)
        lane.clear()
        self._lane_busy.clear()
        self._lane_starts.clear()
        self._hold_dues()
        if started:
            slots = np.array(started, dtype=np.int64)
            self._nactive += len(started)
            self._active_arr = None
            self._entries = None
            self.rates.added(slots, self._path[slots], self._bound[slots])
            self._solve()
        if self._pending and self._pending[0] < self._wake_at:
            self._schedule(self._pending[0])

    def _wake_lane(self, now: float) -> None:
        """A wake-up while the lane is open (every flow is private): complete the flows due by now,
        as :meth:`_drain` and :meth:`_finish_few` would (bytes booked slot by slot, then each send's
        arrival, then the slots freed), and wake up next for the next flows due."""
        heap = self._heap
        cut = now * (1 + _TIME_RTOL) + 1e-300
        path_bytes = self._path_bytes_for(self.cluster.paths.count) if heap and heap[0] <= cut else None
        if self._lane_ctx is not None:  # the lines below, in C (tests/test_lane_core.py holds them equal)
            _ops.lane_wake(self._lane_ctx, now, path_bytes, self._held)
            return
        if path_bytes is not None:
            self._lane_done_py(cut, now, path_bytes)
        starts = self._lane_starts
        del starts[: bisect.bisect_left(starts, now)]
        if heap:
            self._schedule(self._due_wake(heap[0], now))

    def _lane_done_py(self, cut: float, now: float, path_bytes: np.ndarray) -> None:
        """Complete the private flows due by ``cut`` (at ``now``), as :meth:`_drain` and
        :meth:`_finish_few` would: bytes booked slot by slot, then each send's arrival hook and event
        (:meth:`trigger`), then the slots freed. ``sim._ratecore.lane_wake`` does the same in C."""
        heap, due_at = self._heap, self._due_at
        done: list[int] = []
        while heap and heap[0] <= cut:
            done += due_at.pop(heapq.heappop(heap))
        done.sort()
        lane, busy = self._lane_flows, self._lane_busy
        ended = [lane.pop(slot) for slot in done]
        for flow in ended:
            path_bytes[flow[2]] += flow[4]
            busy.difference_update(flow[3])
        trigger = self.trigger
        for flow in ended:  # (_sent, inline)
            hook = flow[9]
            if hook is not None:
                hook[0](hook[1], hook[2])
            trigger(flow[8], now)
        self._free.extend(done)

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
        """Wake up at ``when`` exactly (not ``now + (when - now)``, which may differ in the last
        bit): an event triggered and queued as a timeout is (SimPy's Event internals, as in
        :func:`settle`)."""
        env = self.env
        self._wake_at = when
        event = Event(env)
        event._ok = True  # (_succeeded, inline)
        event._value = None
        event.callbacks.append(self._on_timeout)  # type: ignore[union-attr]
        heapq.heappush(env._queue, (max(float(when), env._now), NORMAL, next(env._eid), event))  # type: ignore[attr-defined]
        self._wake_event = event

    def _on_timeout(self, event: Event) -> None:
        if event is self._wake_event:  # else superseded by an earlier wake-up (or suspended)
            self._wake()

    def _wake(self) -> None:
        whole = self._whole_ctx
        if whole is not None and _RESUME_IN_WAKE and not self._lane:
            # the lines below, and every wake-up after it that would be SimPy's next step, in C
            # (tests/test_wake_core.py holds them equal wake-up by wake-up)
            _ops.net_run(whole, self.env._now)
            return
        self.wakeups += 1
        now = self.env._now  # (env.now, without its property's call)
        self._wake_at = np.inf
        self._wake_event = None
        if _RESUME_IN_WAKE:
            self._held = []
        if self._lane:
            self._wake_lane(now)
        else:
            self._wake_py(now)
            for hook in self.after_wake:
                hook()
        held, self._held = self._held, None
        if held:
            self._resume_held(held, now)
        if _WAKE_LOG is not None:
            _WAKE_LOG.append(self._wake_record(now))

    def _wake_record(self, now: float) -> tuple[float, float, int, int, int, int, int, int]:
        """What a wake-up left (``_WAKE_LOG``'s record; net_run writes the same): its time, the next
        wake-up, the flows draining, the due heap's entries, solves, cache hits, and the draining flows'
        slots summed, unweighted and weighted by their paths."""
        active = np.flatnonzero(self._is_active)
        by_path = int((active * self._path[active]).sum())
        rates = self.rates
        return (
            now,
            self._wake_at,
            self._nactive,
            self._due_entries,
            rates.solves,
            rates.cache_hits,
            int(active.sum()),
            by_path,
        )

    def _wake_py(self, now: float) -> None:
        """A wake-up's work once the lane is closed: drain, start, solve, and the next wake-up scheduled
        (``sim._ratecore.net_wake`` does the same, and ``net_run`` for :meth:`_wake` as a whole, calling
        back the methods below where a step is not the common one)."""
        # nothing is scheduled while the wake-up runs (flows launched by its callbacks would each
        # schedule a wake-up that the one _schedule_next makes at its end supersedes)
        self._wake_at = -np.inf
        self._flush()
        changed = self._drain(now)
        pending = self._pending
        idle = not changed and not (pending and pending[0] <= now)
        while pending and pending[0] <= now:
            starting = self._pending_at.pop(heapq.heappop(pending))
            changed = self._start(starting, now) or changed
            # owners called back during _drain may have launched flows that start right now
        if changed:
            self._solve()
        if idle or self._idle[1]:
            self._idled(now, idle)
        self._schedule_next(now)

    #: Network._wake_py's wake-ups in a row at one instant that drained and started nothing: when, how many (the
    #: class's until the first: nothing more is made per network)
    _idle: tuple[float, int] = (np.nan, 0)

    def _idled(self, now: float, idle: bool) -> None:
        """Count the wake-ups in a row at ``now`` that drained and started nothing (``idle``; the count is reset by
        one that did): a wake-up is scheduled for a flow due or a start, and drains or starts it, so a correct
        run has hardly any; more than ``_IDLE_WAKES`` is a wake-up that comes round at one instant forever."""
        if not idle:
            self._idle = (np.nan, 0)
            return
        at, count = self._idle
        count = count + 1 if at == now else 1
        self._idle = (now, count)
        if count > _IDLE_WAKES:
            raise _stalled(now, self._nactive)

    def _added(self, slots: np.ndarray) -> None:
        """:mod:`sim.rates` hears that flows ``slots`` started draining (``net_wake``'s call)."""
        self.rates.added(slots, self._path[slots], self._bound[slots])

    def _removed(self, slots: np.ndarray) -> None:
        """:mod:`sim.rates` hears that flows ``slots`` ended (``net_wake``'s call)."""
        self.rates.removed(slots, self._path[slots], self._bound[slots], self._rate[slots])

    def trigger(self, event: Event, value: Any) -> None:
        """Trigger ``event`` with ``value`` (:func:`settle`); during a wake-up, an event a process waits
        on is held and its waiters resumed at the end of the wake-up (:meth:`_resume_held`)."""
        held = self._held
        if held is None or not event.callbacks:
            settle(event, value)
        else:
            _succeeded(event, value)
            held.append(event)  # scheduled or stepped at the end of the wake-up

    def _resume_held(self, held: list[Event], now: float) -> None:
        """The events a wake-up triggered, in the order it triggered them. Scheduled, they would be the
        next steps of the event loop, in this order, unless another event is due at this instant already
        (it was scheduled before them): then they are scheduled; otherwise their callbacks run here, as
        those steps would run them (``callbacks = None``, then each callback; SimPy's Event internals,
        as in :func:`settle`), and the event loop is spared a step per resumed process. Whatever they
        schedule at this instant comes after them either way."""
        env = self.env
        queue = env._queue  # type: ignore[attr-defined]
        if queue and queue[0][0] <= now:
            for event in held:
                env.schedule(event)
            return
        if _LANE_CORE and _ops is not _PyDue:  # (the loop below, in C)
            _ops.run_callbacks(held)
            return
        for event in held:
            callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
            for callback in callbacks:
                callback(event)

    def _drain(self, now: float) -> bool:
        """Complete the active flows due by ``now`` (a flow's remaining bytes are brought up to date
        only when its rate changes: the others' due times stand)."""
        self._t_last = now
        heap = self._heap
        cut = now * (1 + _TIME_RTOL) + 1e-300
        if not heap or heap[0] > cut:
            return False
        done, taken = _ops.drain_due(heap, self._due_at, cut, self._is_active, self._due)
        self._due_entries -= taken
        if not done:
            return False
        finished = np.array(done, dtype=np.int64)
        self._nactive -= len(done)
        self._active_arr = None
        self._entries = None
        self.rates.removed(finished, self._path[finished], self._bound[finished], self._rate[finished])
        if len(done) <= _SMALL:
            self._finish_few(done, now, finished)
        else:
            self._finish(finished, now)
        return True

    def _start(self, starting: list[Any], now: float) -> bool:
        self._flush()  # sends staged by arrival hooks during this wake-up may start right now
        if len(starting) <= _SMALL:
            # single sends and flows launched one at a time: scalar operations, the slots in the order
            # below (launched ones first, then single sends)
            launched = [s for s in starting if type(s) is not int]
            if not launched:
                return self._start_few(starting, now)
            if all(len(s) == 1 for s in launched):
                return self._start_few([int(s[0]) for s in launched] + [s for s in starting if type(s) is int], now)
        singles = [s for s in starting if isinstance(s, int)]
        parts = [s for s in starting if not isinstance(s, int)]
        if singles:
            parts.append(np.array(singles, dtype=np.int64))
        slots = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if len(slots) == 1:  # one flow: is it instant, in scalar operations
            slot = int(slots[0])
            if self._remaining[slot] <= 0 or self.cluster.paths.length[int(self._path[slot])] == 0:
                self._finish(slots, now)
                return False
        elif self._start_core(slots, now):  # none is instant (tests/test_engine_core.py holds it equal)
            return True
        else:
            instant = (self._remaining[slots] <= 0) | (self.cluster.paths.length[self._path[slots]] == 0)
            if instant.any():
                self._finish(slots[instant], now)
                slots = slots[~instant]
            if not len(slots):
                return False
        self._is_active[slots] = True
        self._nactive += len(slots)
        self._active_arr = None
        self._entries = None
        self._rate[slots] = 0.0
        self._t_set[slots] = now
        self._due[slots] = np.inf
        self.rates.added(slots, self._path[slots], self._bound[slots])
        return True

    def _start_core(self, slots: np.ndarray, now: float) -> bool:
        """Start flows ``slots`` in C (``start_flows``, then the lines of :meth:`_start` that follow it) where
        the core is built and none of them is instant; False where nothing was done (the Python lines start
        them)."""
        if _ops is _PyDue or not _ops.start_flows(
            slots,
            self._remaining,
            self._path,
            self.cluster.paths.length,
            self._is_active,
            self._rate,
            self._t_set,
            self._due,
            now,
        ):
            return False
        self._nactive += len(slots)
        self._active_arr = None
        self._entries = None
        self.rates.added(slots, self._path[slots], self._bound[slots])
        return True

    def _start_few(self, starting: list[int], now: float) -> bool:
        """:meth:`_start` for a few single sends, in scalar operations."""
        remaining, path, length = self._remaining, self._path, self.cluster.paths.length
        if _WAKE_CORE and self._start_core(np.array(starting, dtype=np.int64), now):
            return True  # none is instant: the lines below, in C (tests/test_wake_core.py holds them equal)
        instant = [slot for slot in starting if remaining[slot] <= 0 or length[path[slot]] == 0]
        if instant:
            self._finish_few(instant, now)
            starting = [slot for slot in starting if slot not in instant]
            if not starting:
                return False
        is_active, rate, t_set, due = self._is_active, self._rate, self._t_set, self._due
        for slot in starting:
            is_active[slot] = True
            rate[slot] = 0.0
            t_set[slot] = now
            due[slot] = np.inf
        self._nactive += len(starting)
        self._active_arr = None
        self._entries = None
        slots = np.array(starting, dtype=np.int64)
        self.rates.added(slots, path[slots], self._bound[slots])
        return True

    def _entries_now(self) -> tuple[np.ndarray, np.ndarray]:
        if self._entries is None:
            self._entries = gather_arcs(self.cluster.paths, self._path[self._active])
        return self._entries

    def _solve(self) -> None:
        self.rates.compute(
            self._nactive,
            self._active_slots,
            self._path,
            self._bound,
            self._rate,
            self._entries_now,
            self._set_rates,
            self._is_active,
        )
        if self.check:
            self._check_load()

    def _active_slots(self) -> np.ndarray:
        return self._active

    def _set_rates(self, slots: np.ndarray | list[int], rates: np.ndarray | list[float]) -> None:
        """New rates for ``slots`` from now on: their remaining bytes are brought up to date and their
        due times recomputed (flows whose rate did not change keep theirs)."""
        now = self._t_last
        compiled = _ops is not _PyDue
        if not isinstance(slots, list) and (compiled or len(slots) <= _SMALL):
            slots, rates = slots.tolist(), rates.tolist()  # type: ignore[union-attr]
        elif isinstance(slots, list) and not compiled and len(slots) > _SET_MANY:  # (the core hands over lists)
            slots, rates = np.array(slots, dtype=np.int64), np.array(rates, dtype=float)
        if isinstance(slots, list):
            self._due_entries += _ops.set_due(
                slots, rates, now, self._rate, self._remaining, self._t_set, self._due, self._heap, self._due_at
            )
            if self._due_entries > 4 * self._nactive + 1024:
                self._rebuild_due()
            return
        old = self._rate[slots]
        moved = old != rates
        if not moved.all():
            slots, old, rates = slots[moved], old[moved], rates[moved]
        remaining = self._remaining[slots] - old * (now - self._t_set[slots])
        self._remaining[slots] = remaining
        self._t_set[slots] = now
        self._rate[slots] = rates
        with np.errstate(divide="ignore", invalid="ignore"):
            due = np.where(rates > 0, now + remaining / rates, np.inf)  # (as the scalar path: no rate, never)
        self._due[slots] = due
        self._push(due, slots)

    def _push(self, due: np.ndarray, slots: np.ndarray) -> None:
        """Heap entries for new due times (rebuilt from the draining flows when the stale entries
        outnumber them)."""
        if self._due_entries + len(slots) > 4 * self._nactive + 1024:
            self._rebuild_due()
            return
        heap, due_at = self._heap, self._due_at
        times = []
        for when, slot in zip(due.tolist(), slots.tolist(), strict=True):
            bucket = due_at.get(when)
            if bucket is None:
                due_at[when] = [slot]
                times.append(when)
            else:
                bucket.append(slot)
        self._due_entries += len(slots)
        if len(times) > len(heap):
            heap.extend(times)
            heapq.heapify(heap)
        else:
            push = heapq.heappush
            for when in times:
                push(heap, when)

    def _hold_dues(self) -> None:
        """The due-time heap and its dict held in C from now on (one ``sim._ratecore.Dues`` as both, the same
        times, slots and order), where the core is built and ``_DUE_CORE`` is on; the private lane, closed
        for good by now, keeps its list and dict."""
        if _DUE_CORE and _ops is not _PyDue and type(self._heap) is list:
            self._heap = self._due_at = _ops.Dues(self._heap, self._due_at)

    def _rebuild_due(self) -> None:
        """The due-time heap from the draining flows' due times (no stale entries)."""
        active = self._active
        if type(self._heap) is not list:  # (held in C: the same buckets and heap, made the same way)
            self._due_entries = self._heap.rebuild(self._due, active)
            return
        due_at: dict[float, list[int]] = {}
        for when, slot in zip(self._due[active].tolist(), active.tolist(), strict=True):
            bucket = due_at.get(when)
            if bucket is None:
                due_at[when] = [slot]
            else:
                bucket.append(slot)
        self._due_at = due_at
        self._heap = list(due_at)
        heapq.heapify(self._heap)
        self._due_entries = len(active)

    @property
    def solves(self) -> int:
        return self.rates.solves

    @property
    def cache_hits(self) -> int:
        return self.rates.cache_hits

    def _check_load(self) -> None:
        if not self.check:
            return
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
        ctx = self._wake_ctx
        if ctx is not None:  # the lines below, in C (tests/test_wake_core.py holds them equal)
            self._due_entries -= _ops.wake_next(
                ctx, self._heap, self._due_at, self._is_active, self._due, self._pending, now
            )
            if self._wake_at == np.inf and self._nactive:  # none to come with flows draining (as below)
                raise _stalled(now, self._nactive)
            return
        when, taken = _ops.next_due(self._heap, self._due_at, self._is_active, self._due)
        self._due_entries -= taken
        if when < np.inf:
            when = max(now, when)
        if self._pending:
            when = min(when, self._pending[0])
        if when < np.inf:
            self._schedule(when)
        else:
            self._wake_at = np.inf
            if self._nactive:
                raise _stalled(now, self._nactive)

    def _finish(self, slots: np.ndarray, now: float) -> None:
        self._path_bytes_for(self.cluster.paths.count)
        if len(slots) == 1:
            self._finish_one(slots, now)
            return
        if _ops is not _PyDue:  # the bytes booked, the rates zeroed and the one owner found in C
            first = _ops.finish_flows(slots, self._path, self._bytes, self._path_bytes, self._rate, self._owner)
            owners = None
        else:
            np.add.at(self._path_bytes, self._path[slots], self._bytes[slots])
            self._rate[slots] = 0.0
            owners = self._owner[slots]
            first = int(owners[0]) if (owners == owners[0]).all() else -1
        if first >= 0:  # one owner's flows (a fast-path executor's)
            self._owners[first](slots, now)
            self._owner[slots] = -1
            self._release(slots)
            return
        if owners is None:
            owners = self._owner[slots]
        owned = owners >= 0
        if owned.any():
            for owner in distinct(owners[owned]).tolist():
                self._owners[owner](slots[owners == owner], now)
            self._owner[slots] = -1
        gids = self._gid[slots]
        grouped = gids >= 0
        if grouped.any():
            ids, counts = np.unique(gids[grouped], return_counts=True)
            for gid, count in zip(ids.tolist(), counts.tolist(), strict=True):
                self._group_done(gid, count, now)
            self._gid[slots] = -1
        singles = ~(owned | grouped)
        if singles.any():
            events = self._event
            if self._send_ctx is not None and settle is _SETTLE:  # (the loop below, in C)
                _ops.sent_many(self, events, slots[singles].tolist(), now, False)
            else:
                for slot in slots[singles].tolist():
                    self._sent(_take(events, slot), now)
        self._release(slots)

    def _group_done(self, gid: int, count: int, now: float) -> None:
        """``count`` flows of transfer group ``gid`` have completed; the last one triggers its event."""
        group = self._groups[gid]
        assert group is not None
        group.left -= count
        if group.left == 0:
            self._groups[gid] = None
            self._free_gids.append(gid)
            group.event.succeed(now)

    def _sent(self, sent: tuple[Event, tuple[Callable[..., None], Any, Any] | None], now: float) -> None:
        """A single send has arrived: its arrival hook runs, then its event is triggered."""
        event, hook = sent
        if hook is not None:
            hook[0](hook[1], hook[2])
        self.trigger(event, now)

    def _finish_few(self, slots: list[int], now: float, as_array: np.ndarray | None = None) -> None:
        """:meth:`_finish` for a few flows of no owner, in scalar operations, in the same order (bytes
        booked slot by slot, transfer groups by id, then single sends slot by slot). (``as_array``: the
        slots as an array, where the caller has it.)"""
        owner = self._owner
        if self._owners and any(owner[slot] >= 0 for slot in slots):
            self._finish(np.array(slots, dtype=np.int64) if as_array is None else as_array, now)
            return
        path, nbytes, rate, gid_of = self._path, self._bytes, self._rate, self._gid
        path_bytes = self._path_bytes_for(self.cluster.paths.count)
        grouped: dict[int, int] = {}
        for slot in slots:
            path_bytes[path[slot]] += nbytes[slot]
            rate[slot] = 0.0
            gid = int(gid_of[slot])
            if gid >= 0:
                grouped[gid] = grouped.get(gid, 0) + 1
                gid_of[slot] = -1
        for gid in sorted(grouped):
            self._group_done(gid, grouped[gid], now)
        events = self._event
        if self._send_ctx is not None and settle is _SETTLE:  # (the loop below, in C)
            _ops.sent_many(self, events, slots if type(slots) is list else list(slots), now, True)
        else:
            for slot in slots:
                sent = events[slot]
                if sent is None:
                    continue  # a transfer group's
                events[slot] = None
                self._sent(sent, now)
        self._free.extend(slots)

    def _finish_one(self, slots: np.ndarray, now: float) -> None:
        """:meth:`_finish` for one flow, in scalar operations (its path-bytes array is already big
        enough)."""
        slot = int(slots[0])
        self._path_bytes[int(self._path[slot])] += self._bytes[slot]
        self._rate[slot] = 0.0
        owner = int(self._owner[slot])
        gid = int(self._gid[slot])
        if owner >= 0:
            self._owners[owner](slots, now)
            self._owner[slot] = -1
        if gid >= 0:
            self._group_done(gid, 1, now)
            self._gid[slot] = -1
        if owner < 0 and gid < 0:
            self._sent(_take(self._event, slot), now)
        self._free.append(slot)


def _stalled(now: float, flows: int) -> Stalled:
    """The error where a wake-up leaves ``flows`` draining and none due ever (a rate of 0, or a completion that
    was never scheduled): SimPy's queue would empty with them unfinished (``w_stalled`` in sim/_ratecore.c)."""
    return Stalled.at("the network's wake-up (sim.network.Network)", now, flows, "flows")


#: Network._resume_held as defined above: ``net_run`` runs its lines in C (``run_callbacks``) only while a
#: network's ``_resume_held`` is this one (a subclass's, an instance's or one patched in runs as Python)
_RESUME_HELD = Network._resume_held
#: Network._solve as defined above: ``net_run`` takes Rates.compute's lines for no shared link in C only while a
#: network's ``_solve`` is this one (a subclass's, an instance's or one patched in is called, as before)
_SOLVE = Network._solve
