"""Dataflow programs: messages with explicit dependencies (a rank forwards chunk c once it has it).

A step program (:mod:`sim.program`) moves every rank in lock-step; pipelined trees do not: a rank
forwards chunk c to its parent as soon as its children's copies of c have arrived and been reduced,
while c+1 is still on its way. A :class:`Dataflow` says that per message:

* ``src -> dst``, ``nbytes`` on the wire, ``reduce`` bytes the receiver reduces (γ per byte, scaled by the
  receiver's ``compute_scale``) on processor ``proc`` (an actor: work on one processor runs one piece
  at a time, first come first served; ties in message order), and the data-check segments
  ``[seg_lo, seg_hi)`` it carries, added (``combine``) or stored at the receiver;
* **start**: the message is sent once every one of its dependencies has happened -- ``(u, ARRIVED)``:
  message u's last byte has arrived (a sender waiting for its previous send to land), or ``(u, HELD)``:
  message u has arrived *and* been reduced by its receiver (a rank forwarding what it holds);
* **gate**: a reduction starts once the message has arrived, its gate dependencies have happened (the
  receiver has reached the point of its schedule where it folds that message) and its processor is free.
  A message that reduces nothing is held when it arrives (and its gate has passed).

The same program runs two ways over :class:`~sim.network.Network`, and the tests hold them to the same
times (``tests/test_dataflow.py``):

* message level (:func:`run_dataflow`, the algorithm's SimPy process): every message a flow of its own
  with its own event and payload, so the symbolic data check (``job.data``) proves the program delivers
  every contribution exactly once;
* vectorized (:class:`DataflowExecutor`, the fast path ``fast:dataflow``): the same rules over numpy
  arrays, messages whose dependencies complete at the same instant launched together, flows that end
  together handled together, no SimPy process or event per message.

The run ends when the last message is held.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._arrays import distinct
from .errors import RunError
from .network import Network, batch_at
from .rates import _CORE

__all__ = ["ARRIVED", "HELD", "MAX_MESSAGES", "Dataflow", "DataflowBuilder", "DataflowExecutor", "run_dataflow"]

ARRIVED = 0
HELD = 1
#: the most messages one dataflow may hold (~450 bytes each while it is built: 1.8 GiB at the limit,
#: which the 64-chunk double binary tree on 16,384 GPUs, 4,194,048 messages, just fits)
MAX_MESSAGES = 1 << 22
_SMALL = 16  # batches up to this size are handled in scalar operations (numpy's per-call cost dominates)
#: completed flows heard through the compiled core's DfDone where it is built (DataflowExecutor._bind_core);
#: tests turn it off to compare
_DF_CORE = True
_ID = np.int32  # message ids in the dependency tables (MAX_MESSAGES and the edges fit)
MAX_EDGES = (1 << 31) - 1  # (the most a table's 32-bit pointers reach)


def _csr(owner: np.ndarray, values: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Group ``values`` (parallel arrays) by ``owner`` in 0..n-1, in their order within a group:
    (pointers, the grouped arrays). Message ids and pointers are held in 32 bits (a dataflow holds at
    most :data:`MAX_MESSAGES` messages and a few edges each): half the memory to build and walk."""
    if _CORE is not None and len(values) == 1 and len(owner) <= MAX_EDGES:  # the same, a counting sort in C
        ptr, grouped = np.empty(n + 1, dtype=_ID), np.empty(len(owner), dtype=_ID)
        _CORE.group(owner, values[0], ptr, grouped)
        return ptr, [grouped]
    order = np.argsort(owner, kind="stable")
    ptr = np.zeros(n + 1, dtype=_ID)
    np.cumsum(np.bincount(owner, minlength=n), out=ptr[1:])
    return ptr, [v[order].astype(_ID, copy=False) for v in values]


def _by_kind(edges: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """An edge list's (message, on) pairs for each kind (slices where the kinds are in order, as
    :class:`DataflowBuilder` writes them)."""
    m, on, kind = edges
    if len(kind) < 2 or (kind[1:] >= kind[:-1]).all():
        cut = int(np.searchsorted(kind, HELD))
        return {ARRIVED: (m[:cut], on[:cut]), HELD: (m[cut:], on[cut:])}
    return {k: (m[kind == k], on[kind == k]) for k in (ARRIVED, HELD)}


Table = tuple[np.ndarray, list[np.ndarray]]  # (pointers, [grouped messages]): _csr's


def _tables(name: str, edges: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> tuple[np.ndarray, Table, Table]:
    """An edge list's (``name``: deps or gates) tables over ``n`` messages, its edges checked: each message's edge
    count, and per kind (ARRIVED, HELD) the waiting messages grouped by what they wait on -- in one compiled pass
    each where the core is built and the kinds are int8 (as :class:`DataflowBuilder` makes them)."""
    m, on, kind = edges
    if (
        _CORE is not None
        and kind.dtype == np.int8
        and m.dtype.kind == on.dtype.kind == "i"
        and m.dtype.itemsize in (4, 8)
        and on.dtype.itemsize in (4, 8)
        and m.ndim == on.ndim == kind.ndim == 1
        and len(m) <= MAX_EDGES
        and n <= MAX_EDGES
    ):
        status, arrived, held = _CORE.df_tables(m, on, kind, n, None, None, None, None, None)
        if status == 1:
            raise ValueError(f"dataflow: {name} name messages outside 0..{n - 1}")
        if status == 2:
            raise ValueError(f"dataflow: {name} kinds must be ARRIVED or HELD")
        count = np.empty(n, dtype=np.int64)
        a_ptr, h_ptr = np.empty(n + 1, dtype=_ID), np.empty(n + 1, dtype=_ID)
        a_out, h_out = np.empty(arrived, dtype=_ID), np.empty(held, dtype=_ID)
        _CORE.df_tables(m, on, kind, n, count, a_ptr, a_out, h_ptr, h_out)
        return count, (a_ptr, [a_out]), (h_ptr, [h_out])
    if len(m) and (m.min() < 0 or m.max() >= n or on.min() < 0 or on.max() >= n):
        raise ValueError(f"dataflow: {name} name messages outside 0..{n - 1}")
    if len(m) and not ((kind == ARRIVED) | (kind == HELD)).all():
        raise ValueError(f"dataflow: {name} kinds must be ARRIVED or HELD")
    count = np.bincount(m, minlength=n).astype(np.int64, copy=False)
    by = _by_kind(edges)
    return count, _csr(by[ARRIVED][1], [by[ARRIVED][0]], n), _csr(by[HELD][1], [by[HELD][0]], n)


def _pairs(keys: np.ndarray, endpoints: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of ``keys`` (src * endpoints + dst) and where each key is among them
    (``np.unique``'s values and inverse). By a table over every pair where it is no larger than a few
    times the keys (a pass over the keys; a tree's 130,816 messages on 512 ranks: 0.3 ms against 7 ms),
    else by a sort and a search."""
    size = endpoints * endpoints
    if size > (1 << 24) or size > 8 * len(keys) + (1 << 16):
        pairs = distinct(keys)  # (a sort, then a search: np.unique's inverse, at a fraction of the cost)
        return pairs, np.searchsorted(pairs, keys)
    seen = np.zeros(size, dtype=bool)
    seen[keys] = True
    pairs = np.flatnonzero(seen)
    index = np.zeros(size, dtype=_ID)
    index[pairs] = np.arange(len(pairs), dtype=_ID)
    return pairs, index[keys]


def _gather(ptr: np.ndarray, idx: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The concatenation of ``idx[ptr[r]:ptr[r+1]]`` over ``rows``."""
    if len(rows) <= _SMALL:  # a few rows: slices beat numpy's per-call cost of the vectorized form
        parts = [idx[a:b] for a, b in zip(ptr[rows].tolist(), ptr[rows + 1].tolist(), strict=True) if b > a]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    lo = ptr[rows]
    counts = ptr[rows + 1] - lo
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return idx[np.repeat(lo, counts) + offsets]


@dataclass(eq=False)
class Dataflow:
    """Messages with dependencies (see the module docstring); build one with :class:`DataflowBuilder`.

    ``deps`` and ``gates`` are edge lists ``(message, on, kind)``: ``message`` waits for ``on`` to have
    ``kind`` (:data:`ARRIVED` or :data:`HELD`), to start (``deps``) or to reduce (``gates``)."""

    endpoints: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    reduce: np.ndarray
    proc: np.ndarray
    combine: np.ndarray
    seg_lo: np.ndarray
    seg_hi: np.ndarray
    deps: tuple[np.ndarray, np.ndarray, np.ndarray]
    gates: tuple[np.ndarray, np.ndarray, np.ndarray]
    _pids: dict[int, np.ndarray] = field(init=False, repr=False, default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)

    def __post_init__(self) -> None:
        n = len(self.src)
        # how many dependencies each message waits for, and who waits on each message
        self.dep_count, self.on_arrived, self.on_held = _tables("deps", self.deps, n)
        self.gate_count, self.gate_on_arrived, self.gate_on_held = _tables("gates", self.gates, n)
        # a message goes through its receiver's processor when it reduces or has a gate
        self.processed = (self.reduce > 0) | (self.gate_count > 0)

    @property
    def procs(self) -> int:
        return int(self.proc.max()) + 1 if len(self.proc) else 0

    def pids(self, network: Any) -> np.ndarray:
        """Interned routes of the messages on ``network``'s cluster (computed once per cluster)."""
        key = id(network.cluster)
        got = self._pids.get(key)
        if got is None:
            keys = self.src * self.endpoints + self.dst
            pairs, where = _pairs(keys, self.endpoints)
            unique = network.cluster.path_ids(pairs // self.endpoints, pairs % self.endpoints)
            self._pids[key] = got = unique[where]
        return got


class DataflowBuilder:
    """Collects messages and their dependencies in bulk (numpy arrays), then :meth:`build`."""

    def __init__(self, endpoints: int) -> None:
        self.endpoints = endpoints
        self.count = 0
        #: per call of :meth:`messages`, the columns that vary (src, dst, proc, seg) ...
        self._cols: list[list[np.ndarray]] = [[] for _ in range(4)]
        #: ... and those that do not (count, bytes, bytes reduced, reduce, width), spread out in :meth:`build`
        self._each: list[tuple[int, float, float, bool, int]] = []
        #: edges by kind (ARRIVED, HELD): lists of (message, on) parts, in the order they were added, -1s
        #: (no edge) still in them: taken out in :meth:`build`
        self._deps: tuple[list[np.ndarray], ...] = ([], [], [], [])
        self._gates: tuple[list[np.ndarray], ...] = ([], [], [], [])

    def messages(
        self,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        nbytes: float,
        *,
        reduce: bool,
        proc: Sequence[int] | np.ndarray,
        seg: int | np.ndarray,
        width: int = 1,
    ) -> np.ndarray:
        """Add messages ``src[i] -> dst[i]`` of ``nbytes`` each; the receiver's processor ``proc[i]``
        reduces them (``reduce``: adds segments ``[seg, seg + width)``) or stores them. Returns their ids."""
        src = np.asarray(src, dtype=np.int64).ravel()
        n = len(src)
        if self.count + n > MAX_MESSAGES:
            raise RunError(
                f"a dataflow of more than {MAX_MESSAGES:,} messages is too large to hold; use fewer chunks or ranks"
            )
        ids = np.arange(self.count, self.count + n, dtype=np.int64)
        self.count += n
        cols = (
            src,
            np.broadcast_to(np.asarray(dst, dtype=np.int64).ravel(), (n,)),
            np.broadcast_to(np.asarray(proc, dtype=np.int64).ravel(), (n,)),
            np.broadcast_to(np.asarray(seg, dtype=np.int64), (n,)),
        )
        for store, col in zip(self._cols, cols, strict=True):
            store.append(col)
        self._each.append((n, float(nbytes), float(nbytes) if reduce else 0.0, bool(reduce), int(width)))
        return ids

    @staticmethod
    def _edges(store: tuple[list[np.ndarray], ...], m: np.ndarray, on: np.ndarray, kind: int) -> None:
        if kind not in (ARRIVED, HELD):
            raise ValueError("dataflow: kinds must be ARRIVED or HELD")
        m, on = np.array(m, dtype=np.int64), np.array(on, dtype=np.int64)  # (copies: the caller's may change)
        if m.shape != on.shape:
            m, on = np.broadcast_arrays(m, on)
        store[2 * kind].append(m.ravel())
        store[2 * kind + 1].append(on.ravel())

    @staticmethod
    def _take(store: tuple[list[np.ndarray], ...], m: np.ndarray, on: np.ndarray, kind: int) -> None:
        """:meth:`_edges` for arrays handed over: 1-d integer arrays of one length kept as they are."""
        if kind not in (ARRIVED, HELD):
            raise ValueError("dataflow: kinds must be ARRIVED or HELD")
        if m.ndim != 1 or m.shape != on.shape or m.dtype.kind != "i" or on.dtype.kind != "i":
            raise ValueError("dataflow: edges handed over must be 1-d integer arrays of one length")
        store[2 * kind].append(m)
        store[2 * kind + 1].append(on)

    def after(self, m: np.ndarray, on: np.ndarray, kind: int, *, copy: bool = True) -> None:
        """Messages ``m`` start after messages ``on`` (elementwise, broadcast) reach ``kind``. ``copy=False``:
        ``m`` and ``on`` (1-d integer arrays of one length) are handed over, kept as they are (the caller
        does not change them afterwards)."""
        (self._edges if copy else self._take)(self._deps, m, on, kind)

    def gate(self, m: np.ndarray, on: np.ndarray, kind: int, *, copy: bool = True) -> None:
        """Messages ``m`` are reduced only after messages ``on`` reach ``kind`` (``copy``: as in :meth:`after`)."""
        (self._edges if copy else self._take)(self._gates, m, on, kind)

    def build(self) -> Dataflow:
        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

        src, dst, proc, lo = (cat(c, np.int64) for c in self._cols)
        each = list(zip(*self._each, strict=True)) or [()] * 5
        counts = np.array(each[0], dtype=np.int64)
        size, red, comb, width = (
            np.repeat(np.array(col, dtype=t), counts)
            for col, t in zip(each[1:], (float, float, bool, np.int64), strict=True)
        )
        hi = lo + width
        if len(src) and ((src < 0).any() or (dst < 0).any() or (src >= self.endpoints).any()):
            raise ValueError("dataflow: every endpoint must be in 0..endpoints-1")

        def edges(store: tuple[list[np.ndarray], ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """(message, on, kind), the ARRIVED edges first, then the HELD ones (each in order added): both
            kinds' parts put together in 32 bits at once (ids and -1 fit), then the missing edges dropped."""
            sizes = [sum(len(part) for part in store[k]) for k in (0, 2)]
            m, on = (
                np.concatenate(parts, dtype=_ID, casting="same_kind") if parts else np.zeros(0, dtype=_ID)
                for parts in (store[0] + store[2], store[1] + store[3])
            )
            kind = np.repeat(np.array([ARRIVED, HELD], dtype=np.int8), sizes)
            keep = (m >= 0) & (on >= 0)  # -1 on either side: no edge (a missing parent, chunk -1)
            if keep.all():
                return m, on, kind
            return m[keep], on[keep], kind[keep]

        deps, gates = edges(self._deps), edges(self._gates)
        return Dataflow(self.endpoints, src, dst, size, red, proc, comb, lo, hi, deps, gates)


class _State:
    """Dependency counters, shared by both ways of running a program."""

    def __init__(self, flow: Dataflow, gamma: float, scale: np.ndarray) -> None:
        self.flow = flow
        self.gamma = float(gamma)
        self.dep_left = flow.dep_count.copy()
        self.gate_left = flow.gate_count.copy()
        self.arrived = np.zeros(len(flow), dtype=bool)
        self.busy = np.zeros(max(flow.procs, 1))
        scale = np.asarray(scale, dtype=float)
        self.cost = np.zeros(len(flow))
        if self.gamma > 0:
            self.cost = flow.reduce * self.gamma * scale[flow.dst]
        self.held = 0
        self.end = 0.0


def run_dataflow(job: Any, flow: Dataflow) -> Generator[Any, Any, None]:
    """Run ``flow`` message-level over ``job``: every message sent with ``job.send`` (tag: its index)
    and received with ``job.recv``, its payload (``job.data``) taken from the sender when it is sent and
    added or stored at the receiver when its reduction starts; reductions timed by SimPy timeouts. Ends
    when every message is held."""
    env, data = job.env, job.data
    scale = job.net.cluster.compute_scale
    st = _State(flow, job.gamma, scale)
    done = env.event()
    if not len(flow):
        return
    src, dst, nbytes = flow.src.tolist(), flow.dst.tolist(), flow.nbytes.tolist()
    lo, hi, combine = flow.seg_lo.tolist(), flow.seg_hi.tolist(), flow.combine.tolist()
    processed, proc, cost = flow.processed.tolist(), flow.proc.tolist(), st.cost.tolist()
    payloads: dict[int, Any] = {}

    def ready(ms: list[int], counter: np.ndarray) -> list[int]:
        out = []
        for m in ms:
            counter[m] -= 1
            if counter[m] == 0:
                out.append(m)
        return out

    def send(m: int) -> None:
        job.send(src[m], dst[m], nbytes[m], data.take(src[m], slice(lo[m], hi[m])), m)
        got = job.recv(dst[m], src[m], m)
        if got.callbacks is None:  # arrived already (Job.recv hands it over processed)
            arrive(m, got.value)
        else:
            got.callbacks.append(lambda event, m=m: arrive(m, event.value))

    def release(m: int, starts: Any, gates: Any) -> None:
        """``m`` has arrived or is held: send and reduce what waited only for that."""
        ptr, (waiting,) = starts
        for w in ready(waiting[ptr[m] : ptr[m + 1]].tolist(), st.dep_left):
            send(w)
        ptr, (gated,) = gates
        for g in ready(gated[ptr[m] : ptr[m + 1]].tolist(), st.gate_left):
            if st.arrived[g]:
                reduce(g)

    def arrive(m: int, payload: Any) -> None:
        st.arrived[m] = True
        payloads[m] = payload
        release(m, flow.on_arrived, flow.gate_on_arrived)
        if not processed[m] or st.gate_left[m] == 0:
            reduce(m)

    def reduce(m: int) -> None:
        now = env.now
        seg = slice(lo[m], hi[m])
        payload = payloads.pop(m)
        if combine[m]:
            data.add(dst[m], seg, payload)
        else:
            data.put(dst[m], seg, payload)
        if not processed[m]:
            hold(m)
            return
        p = proc[m]
        start = max(now, st.busy[p])
        end = start + cost[m]
        st.busy[p] = end
        if end > now:
            env.timeout(end - now).callbacks.append(lambda _e, m=m: hold(m))
        else:
            hold(m)

    def hold(m: int) -> None:
        st.held += 1
        st.end = env.now
        release(m, flow.on_held, flow.gate_on_held)
        if st.held == len(flow):
            done.succeed()

    for m in np.flatnonzero(st.dep_left == 0).tolist():
        send(m)
    yield done


class DataflowExecutor:
    """Runs a :class:`Dataflow` on a :class:`~sim.network.Network` with :func:`run_dataflow`'s
    meaning, vectorized: everything that happens at one instant is handled as one batch of arrays.

    ``done`` fires when the last message is held; ``mode`` is ``dataflow``."""

    mode = "dataflow"

    def __init__(self, net: Network, flow: Dataflow, gamma: float, compute_scale: np.ndarray) -> None:
        self.net = net
        self.env = net.env
        self.flow = flow
        self.st = _State(flow, gamma, compute_scale)
        self.done = self.env.event()
        self.owner = net.add_owner(self._on_flows_done)
        self.f_msg = np.zeros(0, dtype=np.int64)
        self._timers: dict[float, list[np.ndarray]] = {}
        self._stamp = np.zeros(len(flow), dtype=np.int64)  # scratch for _distinct
        self._proc_stamp = np.zeros(max(flow.procs, 1), dtype=np.int64)
        #: no reduction takes time: an instant's arrivals are settled in one compiled pass (the core's
        #: ``settle``: _release, _reduce and _hold's loop, the messages to start written to ``_out``)
        self._fused = _CORE is not None and self.st.gamma == 0
        if self._fused:
            self._tables = tuple(
                a
                for t in (flow.on_arrived, flow.gate_on_arrived, flow.on_held, flow.gate_on_held)
                for a in (t[0], *t[1])
            )
            self._out = np.empty(len(flow), dtype=np.int64)

    @staticmethod
    def _distinct(values: np.ndarray, stamp: np.ndarray) -> np.ndarray:
        """``values`` without repeats (the last of each kept, in place), in time linear in their number."""
        if len(values) <= 1:
            return values
        at = np.arange(len(values))
        stamp[values] = at
        return values[stamp[values] == at]

    def run(self) -> Generator[Any, Any, None]:
        """The SimPy process body: send what depends on nothing, then wait for the last message."""
        if not len(self.flow):
            return
        self._send(np.flatnonzero(self.st.dep_left == 0))
        self._bind_core()
        yield self.done

    def _bind_core(self) -> None:
        """Hear of completed flows through the compiled core's ``DfDone`` (:meth:`_on_flows_done`'s fused
        lines, and :meth:`_send`'s launch, in C) where the network's whole wake-up runs there and the
        message model is the nominal one (tests/test_wake_core.py holds it to the Python lines)."""
        net = self.net
        if not (self._fused and _DF_CORE and net._whole_ctx is not None and not getattr(net._model, "_models", True)):
            return
        flow = self.flow
        wctx = (net._whole_ctx, flow.pids(net), flow.src, flow.nbytes, self.owner, net.cluster, None)
        net.set_owner(self.owner, _CORE.DfDone(self, wctx))

    # ------------------------------------------------------------------ one instant
    def _send(self, ms: np.ndarray) -> None:
        if not len(ms):
            return
        flow = self.flow
        slots = self.net.launch_rows(ms, flow.pids(self.net), flow.src, flow.nbytes, owner=self.owner)
        if len(self.f_msg) < self.net.slots:
            grown = np.zeros(self.net.slots, dtype=np.int64)
            grown[: len(self.f_msg)] = self.f_msg
            self.f_msg = grown
        self.f_msg[slots] = ms

    def _on_flows_done(self, slots: np.ndarray, now: float) -> None:
        ms = self.f_msg[slots]
        st, flow = self.st, self.flow
        if self._fused:  # what the lines below do, in C (tests/test_engine_core.py holds them equal)
            started, held = _CORE.settle(
                self._tables, ms, st.dep_left, st.gate_left, st.arrived, self._stamp, self._out
            )
            if held:
                st.held += held
                st.end = now
            self._send(self._out[:started].copy())
            if st.held == len(flow) and not self.done.triggered:
                self.done.succeed()
            return
        st.arrived[ms] = True
        starts = [self._release(flow.on_arrived, ms, st.dep_left)]
        gated = self._release(flow.gate_on_arrived, ms, st.gate_left)
        # reductions that can start now: arrived messages whose gates have passed
        ready = np.concatenate([ms[(st.gate_left[ms] == 0)], gated[st.arrived[gated]]])
        self._settle(ready, now, starts)

    def _release(self, table: tuple[np.ndarray, list[np.ndarray]], ms: np.ndarray, counter: np.ndarray) -> np.ndarray:
        """Count ``ms`` off the messages waiting on them; returns the ones with nothing left to wait for."""
        ptr, (waiting,) = table
        if _CORE is not None:  # the same loop as the scalar one below, in C
            return np.array(_CORE.release(ptr, waiting, ms, counter), dtype=np.int64)
        if len(ms) == 1:
            m = int(ms[0])
            targets = waiting[ptr[m] : ptr[m + 1]]
        else:
            targets = _gather(ptr, waiting, ms)
        if len(targets) <= _SMALL:  # a few at a time (ranks drifted apart): scalar operations
            out = []
            for t in targets.tolist():
                counter[t] -= 1
                if counter[t] == 0:
                    out.append(t)
            return np.array(out, dtype=np.int64)
        np.subtract.at(counter, targets, 1)  # a message may wait on several of ``ms``
        return self._distinct(targets[counter[targets] == 0], self._stamp)

    def _settle(self, ready: np.ndarray, now: float, starts: list[np.ndarray]) -> None:
        """Reduce ``ready`` (first come first served on each processor), hold what is done now and
        follow the consequences through this instant; launch everything that can start."""
        st, flow = self.st, self.flow
        while len(ready):
            held, later, ends = self._reduce(ready, now)
            for when in distinct(ends).tolist():
                self._timer(when, later[ends == when])
            if not len(held):
                break
            ready = self._hold(held, now, starts)
        self._send(np.concatenate(starts) if len(starts) > 1 else starts[0])
        if st.held == len(flow) and not self.done.triggered:
            self.done.succeed()

    def _reduce(self, ready: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start the reductions of ``ready`` at ``now``: (held now, held later, when). A message that
        reduces nothing and has no gate is held at once; the others queue on their processor."""
        st, flow = self.st, self.flow
        # message order: ties on a processor go in that order
        if len(ready) <= _SMALL:
            ready = np.array(sorted(set(ready.tolist())), dtype=np.int64)
        else:
            ready = self._distinct(ready, self._stamp)
            if st.gamma == 0:  # no reduction takes time: every processor is free whenever asked
                return ready, ready[:0], np.zeros(0)
            ready = np.sort(ready)
        if st.gamma == 0:
            return ready, ready[:0], np.zeros(0)
        queued = ready[flow.processed[ready]]
        held = [ready[~flow.processed[ready]]]
        procs, cost = flow.proc[queued], st.cost[queued]
        end = np.empty(len(queued))
        if len(self._distinct(procs, self._proc_stamp)) == len(procs):
            end[:] = np.maximum(now, st.busy[procs]) + cost
            st.busy[procs] = end
        else:
            busy = st.busy
            for i, (p, c) in enumerate(zip(procs.tolist(), cost.tolist(), strict=True)):
                busy[p] = end[i] = max(now, busy[p]) + c
        at_now = end <= now
        held.append(queued[at_now])
        return np.concatenate(held), queued[~at_now], end[~at_now]

    def _hold(self, held: np.ndarray, now: float, starts: list[np.ndarray]) -> np.ndarray:
        """``held`` are done: release what waits on them; returns reductions that can start now."""
        st, flow = self.st, self.flow
        st.held += len(held)
        st.end = now
        starts.append(self._release(flow.on_held, held, st.dep_left))
        gated = self._release(flow.gate_on_held, held, st.gate_left)
        return gated[st.arrived[gated]]

    # ------------------------------------------------------------------ reductions that end later
    def _timer(self, when: float, ms: np.ndarray) -> None:
        batch_at(self.env, self._timers, when, ms, self._fire)

    def _fire(self, when: float) -> None:
        held = np.concatenate(self._timers.pop(when))
        now = self.env.now
        starts: list[np.ndarray] = []
        ready = self._hold(held, now, starts)
        self._settle(ready, now, starts)
