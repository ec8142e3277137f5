"""The fast path: a step program (:mod:`sim.program`) run by a vectorized executor.

The executor gives a program exactly the meaning :func:`sim.program.run_messages` gives it -- a rank
posts the sends of its step, waits until they have left and its receives have arrived, reduces, then
starts its next step; a message that arrives before its receiver reaches its step is counted for that
step -- but keeps that state for every rank in numpy arrays.

The :class:`FastExecutor` keeps that state for every rank in numpy arrays and hands the network whole
groups of flows at once: all ranks that start a step at the same instant launch together, and all flows
that complete at the same instant are accounted together. Where ranks stay in lock-step (a ring on a
uniform fabric) a step costs one batch and one cached max-min solution, whatever the number of ranks.
When the whole state repeats from one step to the next, shifted in time (the periodic steady state of a
long ring), the executor jumps over the identical steps in one move (:meth:`FastExecutor._extrapolate`);
the times it gives are the message-level ones, to rounding. A message whose every link direction is
crossed by no other sender's message and by one message a step (a rank-order ring's NVLink hops) is
*private*: it never shares a link, so it arrives at its time alone on its path, without a flow in the
network or a rate computation (:meth:`FastExecutor._private_masks`). Where the compiled core is built,
the per-event lines -- messages counted as done, ranks completing and beginning steps, private messages
sent and their arrivals -- run in C (``sim._ratecore.Fast``, :meth:`FastExecutor._bind_core`), the lines
here staying the reference (``COLLSIM_PURE=1``; tests/test_fast_core.py holds the two equal).

Tests (tests/test_fastpath.py) run both paths on uniform, heterogeneous, congested and straggler cases
and require the same times to 1e-9.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy
from simpy.events import NORMAL, Event

from ._arrays import distinct
from .maxplus import contention_free, run_maxplus
from .network import Network, batch_at, call_at
from .program import Step, StepProgram, share_routes
from .rates import _CORE, gather_arcs

__all__ = ["FastExecutor", "Step", "StepProgram", "run_program"]

_MAX_PERIOD = 8  # steady states that repeat every 1..8 steps are recognised
_FEW = 8  # messages arriving together up to this many are counted in plain Python (_few_done)
#: _private_masks counts each step's messages per link direction (an array as long as the links, per distinct step)
#: where that is at most this many entries per crossing, else sorts the crossings once
_COUNT_SPAN = 4
_FINISHED = -(1 << 62)  # a finished endpoint's step in a snapshot (no live endpoint's relative step)
#: the per-message lines (_arrived, _one_done, _begin_one) in the compiled core where it is built (see
#: FastExecutor._bind_core); tests turn it off to compare
_FAST_CORE = True
#: the flows of a phase without bounds launched by the compiled core too (``launch``, see _bind_core), where
#: the network's whole wake-up runs there; off: the core calls _launch_flows / _launch_flow_one
_FAST_LAUNCH = True
#: the compiled core's pump (its own queue's arrivals, taken in order with SimPy's) runs a network's wake-up at
#: the head of SimPy's queue itself, as SimPy's next step would, and goes on with the arrivals after it (no event
#: and no step for the next arrival); off: it returns to SimPy's loop there
_STEP_WAKES = True


class FastExecutor:
    """Runs a :class:`StepProgram` on a :class:`~sim.network.Network` with the message-level
    semantics (see the module docstring), vectorized over ranks.

    Parameters
    ----------
    net : Network
    program : StepProgram
    gamma : float
        Seconds per reduced byte.
    compute_scale : numpy.ndarray
        Per-rank factor on reduction time (stragglers).
    alone : bool
        The program is the only traffic on the network: contention-free programs are then evaluated
        in closed form (:mod:`sim.maxplus`), and periodic steady states are jumped over. Both would be
        wrong with other flows around, so the training model, which runs buckets side by side, leaves
        this off.

    Attributes
    ----------
    mode : str
        ``maxplus`` or ``events``: how the program was run.
    """

    def __init__(
        self,
        net: Network,
        program: StepProgram,
        gamma: float,
        compute_scale: np.ndarray | None = None,
        *,
        alone: bool = False,
    ) -> None:
        self.net = net
        self.env = net.env
        self.program = program
        self.gamma = float(gamma)
        e = program.endpoints
        self.scale = np.ones(e) if compute_scale is None else np.asarray(compute_scale[:e], dtype=float)
        self.steps = [step for step, _ in program.phases]
        self.bounds = np.cumsum([0] + [times for _, times in program.phases])  # phase k: steps [b_k, b_k+1)
        self._bounds = self.bounds.tolist()
        self.total = int(self.bounds[-1])
        self.step = np.zeros(e, dtype=np.int64)
        self.began = np.zeros(e)  # when each rank began its current step
        self.timer_at = np.full(e, np.nan)  # when a reducing rank's reduction ends
        self.last = np.zeros(e)
        self.send_left = np.zeros(e, dtype=np.int64)
        self.recv_left = np.zeros(e, dtype=np.int64)
        self.window = 8
        self.early_count = np.zeros((e, self.window), dtype=np.int64)
        self.early_last = np.full((e, self.window), -np.inf)
        self.f_src = np.zeros(0, dtype=np.int64)
        self.f_dst = np.zeros(0, dtype=np.int64)
        self.f_step = np.zeros(0, dtype=np.int64)
        self.finished = 0
        self.end_time = 0.0
        self.done = self.env.event()
        self.owner = net.add_owner(self._on_flows_done)
        self._timers: dict[float, list[np.ndarray]] = {}
        self.extrapolated_steps = 0
        self.extrapolate = alone
        self.alone = alone
        self.mode = "events"
        self._seen0 = -1
        self.ref = _reference(program)  # the endpoint whose steps the steady-state detection follows
        #: the last steps' states: (step, a digest of every endpoint's relative step and counts, the
        #: whole snapshot -- taken only once the digest has been seen before, see _after)
        self._history: list[tuple[int, int, _Snapshot | None]] = []
        self._misses = 0
        #: per step (by id): which of its messages are private -- every link direction on their path is
        #: crossed by no other sender's message and by one message a step (see _private_masks)
        self._private_of: dict[int, np.ndarray] = {}
        #: private messages in flight, by arrival time: [(src, dst, step, path, bytes), ...]
        self._arrivals: dict[float, list[tuple[Any, ...]]] = {}
        self._private = 0  # messages that took the private path here (see private)
        self._core: Any = None  # sim._ratecore.Fast where the compiled core runs the per-message lines
        if alone:
            net.after_wake.append(self._after)

    @property
    def private(self) -> int:
        """How many messages took the private path: the Python lines' and the compiled core's (which
        counts its own, so that no attribute is written per message)."""
        return self._private if self._core is None else self._private + self._core.private()

    # ------------------------------------------------------------------ driving
    def run(self) -> Generator[Any, Any, None]:
        """The SimPy process body: start every rank at step 0 and wait for the last one."""
        if self.total == 0:
            return
        share_routes([step for step, _ in self.program.phases])
        if self.alone and contention_free(self.program, self.net):
            self.mode = "maxplus"
            end = run_maxplus(self.net, self.program, self.gamma, self.scale, self.env.now)
            yield self.env.timeout(end - self.env.now)
            return
        if self.alone and not self.net.cluster.message_model.shares:
            self._private_of = self._private_masks()
            self._bind_core()
        # an endpoint without a message in any step (a rank whose channels act for it, or one a
        # symmetric run leaves out) goes through its steps at once and touches no one: finished now
        busy = np.zeros(self.program.endpoints, dtype=bool)
        for step in self.steps:
            busy[step.src] = True
            busy[step.dst] = True
        idle = np.flatnonzero(~busy)
        if len(idle) and len(idle) < self.program.endpoints:
            self.step[idle] = self.total
            self.finished += len(idle)
            self.end_time = self.env.now
            self._begin(np.flatnonzero(busy), self.env.now)
        else:
            self._begin(np.arange(self.program.endpoints), self.env.now)
        yield self.done

    def _phase_of(self, steps: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bounds, steps, side="right") - 1

    def _begin(self, ranks: np.ndarray, now: float) -> None:
        """``ranks`` (distinct) start the step ``self.step[ranks]`` at ``now``."""
        if len(ranks) == 1:
            self._begin_one(int(ranks[0]), now)
            return
        while len(ranks):
            if len(ranks) <= _FEW:
                ranks = self._begin_few(ranks.tolist(), now)
                continue
            over = self.step[ranks] >= self.total
            if over.any():
                self.finished += int(over.sum())
                self.end_time = max(self.end_time, now)
                ranks = ranks[~over]
                if self.finished == self.program.endpoints:
                    self.done.succeed(now)
                if not len(ranks):
                    return
            steps = self.step[ranks]
            slot = steps % self.window
            self.began[ranks] = now
            self.send_left[ranks] = 0
            self.recv_left[ranks] = -self.early_count[ranks, slot]
            self.last[ranks] = np.maximum(now, self.early_last[ranks, slot])
            self.early_count[ranks, slot] = 0
            self.early_last[ranks, slot] = -np.inf
            phases = self._phase_of(steps)
            if len(ranks) == 1 or phases.min() == phases.max():
                self._launch(self.steps[int(phases[0])], ranks)
            else:
                for k in distinct(phases).tolist():
                    self._launch(self.steps[k], ranks[phases == k])
            idle = ranks[(self.send_left[ranks] == 0) & (self.recv_left[ranks] == 0)]
            ranks = self._complete(idle, now)

    def _begin_few(self, ranks: list[int], now: float) -> np.ndarray:
        """One round of :meth:`_begin`'s loop for a few ranks, the bookkeeping in scalar operations (the
        same updates, each phase's messages launched together in the ranks' order): returns the ranks
        that start their next step right now."""
        step, total = self.step, self.total
        live = [r for r in ranks if step[r] < total]
        if len(live) < len(ranks):
            self.finished += len(ranks) - len(live)
            self.end_time = max(self.end_time, now)
            if self.finished == self.program.endpoints:
                self.done.succeed(now)
            if not live:
                return np.zeros(0, dtype=np.int64)
        window, bounds = self.window, self._bounds
        early_count, early_last, last = self.early_count, self.early_last, self.last
        phases = []
        for r in live:
            s = int(step[r])
            slot = s % window
            self.began[r] = now
            self.send_left[r] = 0
            self.recv_left[r] = -early_count[r, slot]
            early = float(early_last[r, slot])
            last[r] = now if now >= early else early
            early_count[r, slot] = 0
            early_last[r, slot] = -np.inf
            phases.append(bisect.bisect_right(bounds, s) - 1)
        group = np.array(live, dtype=np.int64)
        if min(phases) == max(phases):
            self._launch(self.steps[phases[0]], group)
        else:
            for k in sorted(set(phases)):
                self._launch(self.steps[k], group[[i for i, p in enumerate(phases) if p == k]])
        send_left, recv_left = self.send_left, self.recv_left
        return self._complete(
            np.array([r for r in live if send_left[r] == 0 and recv_left[r] == 0], dtype=np.int64), now
        )

    def _begin_one(self, r: int, now: float) -> None:
        """:meth:`_begin` for one rank, in scalar operations (ranks that have drifted apart start their
        steps one at a time, and numpy's per-call cost would dominate)."""
        while True:
            s = int(self.step[r])
            if s >= self.total:
                self._finished_one(now)
                return
            slot = s % self.window
            self.began[r] = now
            early_last = float(self.early_last[r, slot])
            self.last[r] = now if now >= early_last else early_last
            step = self.steps[bisect.bisect_right(self._bounds, s) - 1]
            sends = int(step.out_count[r])
            recvs = int(step.in_count[r]) - int(self.early_count[r, slot])
            self.early_count[r, slot] = 0
            self.early_last[r, slot] = -np.inf
            self.send_left[r] = sends
            self.recv_left[r] = recvs
            if sends:
                self._send(step, step.sends_of(r))
            if sends or recvs or not self._complete_one(r, now):
                return

    def _complete_one(self, r: int, now: float) -> bool:
        """:meth:`_complete` for one rank: True when it starts its next step right now."""
        finish = float(self.last[r])
        if self.gamma > 0:
            step = self.steps[bisect.bisect_right(self._bounds, int(self.step[r])) - 1]
            finish += self.gamma * float(self.scale[r]) * float(step.reduce_at[r])
        if finish > now:
            self._timer_one(finish, r)
            return False
        self.step[r] += 1
        return True

    def _finished_one(self, now: float) -> None:
        """An endpoint has gone through its last step at ``now``."""
        self.finished += 1
        self.end_time = max(self.end_time, now)
        if self.finished == self.program.endpoints:
            self.done.succeed(now)

    def _timer_one(self, finish: float, r: int) -> None:
        self._timer(finish, np.array([r], dtype=np.int64))

    def _early_one(self, dst: int, fstep: int, now: float) -> None:
        self._early(np.array([dst]), np.array([fstep]), now)

    def _early_many(self, dst: list[int], fstep: list[int], now: float) -> None:
        self._early(np.array(dst, dtype=np.int64), np.array(fstep, dtype=np.int64), now)

    def _bind_core(self) -> None:
        """Hand the per-message lines -- :meth:`_arrived` for a lone private message, :meth:`_one_done`,
        :meth:`_begin_one` with :meth:`_complete_one` and a lone private send -- to the compiled core
        (``sim._ratecore.Fast``, the same operations on these arrays in the same order; anything else it
        hands back to the lines here). Only once :meth:`_private_masks` has interned every step's routes.
        The network's completions of this executor's flows (:meth:`_on_flows_done`) and its call after
        each wake-up (:meth:`_after`'s first test) go to the core directly. With its own queue the core
        also keeps the private messages in flight itself, handing them over into :attr:`_arrivals`
        before the lines here read or write it (:meth:`_all_arrivals`), adds up the network's ``flows``
        until a Python line runs, and counts its private messages itself (:attr:`private`)."""
        if _CORE is None or not _FAST_CORE:
            return
        net = self.net
        phases = []
        for step in self.steps:
            pids = step.pids(net)
            private = self._private_of.get(id(step))
            delay = wire = rate = None
            if private is not None:  # _send_private's arithmetic, per message of the step
                delay, wire = net.cluster.message_model.many(pids, step.src, step.nbytes)
                rate = net.cluster.paths.bottleneck[pids]
                if step.bound is not None:
                    rate = np.minimum(rate, step.bound)
            reduce_at = step.reduce_at if self.gamma > 0 else None
            # (the int arrays as int64, which the core reads without a width test: the same values)
            out, inc, ptr, order, dst, pids, src = (
                np.asarray(a, dtype=np.int64)
                for a in (step.out_count, step.in_count, step._ptr, step._order, step.dst, pids, step.src)
            )
            phases.append((out, inc, reduce_at, ptr, order, dst, pids, step.nbytes) + (private, delay, wire, rate, src))
        bounds = np.asarray(self.bounds, dtype=np.int64)
        own_queue = type(self.env).step is simpy.Environment.step  # (a step that looks at a deadline: one per event)
        launch = None  # _launch_flows' and _launch_flow_one's lines in C (Network.launch_rows' and launch_one's)
        if _FAST_LAUNCH and net._whole_ctx is not None and not getattr(net._model, "_models", True):
            launch = (net._whole_ctx, net.cluster, self.owner, tuple(step.bound is not None for step in self.steps))
        core = _CORE.Fast(
            self, self.env, Event, heapq.heappush, NORMAL, functools.partial, bounds, tuple(phases), own_queue, launch
        )
        self._core = core
        self._arrived = core.arrived  # type: ignore[method-assign]
        self._one_done = core.one_done  # type: ignore[method-assign]
        self._begin_one = core.begin_one  # type: ignore[method-assign]
        self._done = core.done  # type: ignore[method-assign]
        self._begin = core.begin  # type: ignore[method-assign]
        # the network's calls: flows completed (_on_flows_done) and, alone, after each wake-up (_after,
        # whose first test the core makes)
        net.set_owner(self.owner, core.flows_done)
        if self.alone:
            hooks = net.after_wake
            hooks[hooks.index(self._after)] = core.after

    def _launch(self, step: Step, group: np.ndarray) -> None:
        self.send_left[group] += step.out_count[group]
        self.recv_left[group] += step.in_count[group]
        msgs = step.sends_of(int(group[0])) if len(group) == 1 else step.sent_by(group)
        if len(msgs):
            self._send(step, msgs)

    def _send(self, step: Step, msgs: np.ndarray) -> None:
        """Start the messages ``msgs`` of ``step`` (their senders are at that step)."""
        if len(msgs) == 1:
            self._send_one(step, msgs)
            return
        private = self._private_of.get(id(step))
        if private is not None:
            mine = private[msgs]
            if mine.all():
                self._send_private(step, msgs)
                return
            if mine.any():
                self._send_private(step, msgs[mine])
                msgs = msgs[~mine]
        self._launch_flows(step, msgs)

    def _launch_flows(self, step: Step | int, msgs: np.ndarray | list[int]) -> None:
        """Messages ``msgs`` of ``step`` (or of phase ``step``'s) start as flows in the network."""
        if isinstance(step, int):
            step, msgs = self.steps[step], np.array(msgs, dtype=np.int64)
        pids = step.pids(self.net)[msgs]
        bounds = None if step.bound is None else step.bound[msgs]
        slots = self.net.launch(pids, step.src[msgs], step.nbytes[msgs], owner=self.owner, bounds=bounds)
        self._grow_flows()
        self.f_src[slots] = step.src[msgs]
        self.f_dst[slots] = step.dst[msgs]
        self.f_step[slots] = self.step[step.src[msgs]]

    def _send_one(self, step: Step, msgs: np.ndarray) -> None:
        """:meth:`_send` for one message, in scalar operations."""
        m = int(msgs[0])
        private = self._private_of.get(id(step))
        if private is not None and private[m]:
            self._send_private(step, msgs)
            return
        self._launch_flow_one(step, m)

    def _launch_flow_one(self, step: Step | int, m: int) -> None:
        """Message ``m`` of ``step`` (or of phase ``step``'s) starts as a flow in the network."""
        if isinstance(step, int):
            step = self.steps[step]
        net = self.net
        src = int(step.src[m])
        bound = None if step.bound is None else float(step.bound[m])
        slot = int(net.launch_one(int(step.pids(net)[m]), src, float(step.nbytes[m]), self.owner, bound)[0])
        self._grow_flows()
        self.f_src[slot] = src
        self.f_dst[slot] = step.dst[m]
        self.f_step[slot] = self.step[src]

    def _grow_flows(self) -> None:
        """The per-slot message arrays, grown to the network's slots."""
        size = self.net.slots
        if len(self.f_src) < size:
            for name in ("f_src", "f_dst", "f_step"):
                grown = np.zeros(size, dtype=np.int64)
                old = getattr(self, name)
                grown[: len(old)] = old
                setattr(self, name, grown)

    # ------------------------------------------------------------------ private messages
    def _private_masks(self) -> dict[int, np.ndarray]:
        """Per step of the program (by id), which messages are *private*: every link direction on their
        path is crossed, over the whole program, only by messages of their sender and by at most one
        message a step. A rank starts a step once its sends of the previous one have left, so a private
        message never shares a link: it drains at its path's narrowest capacity (or its bound) from
        its start delay on, and its arrival is known when it is sent -- no flow, no rate computation.
        (Only for a program alone on the network, under a link model whose capacities do not depend
        on the traffic around them; the max-min rate of a flow alone on its links is that rate.)"""
        net = self.net
        paths = net.cluster.paths
        steps = [step for step, _ in self.program.phases]
        # a step with a twin (sim.program.share_routes: the same messages' ends, so the same routes) crosses
        # its twin's links in its twin's order: the same mask, and nothing its twin does not find
        mine = {id(step) for step in steps}
        lead: dict[int, Step] = {}
        for step in steps:
            first = step
            while first.twin is not None and id(first.twin) in mine:
                first = first.twin
            lead[id(step)] = first
        entries = []
        for step in steps:
            if len(step) and lead[id(step)] is step:
                flow, arcs = gather_arcs(paths, step.pids(net))
                entries.append((step, flow, arcs, step.src[flow]))
        if not entries:
            return {}
        arcs = np.concatenate([e[2] for e in entries])
        src = np.concatenate([e[3] for e in entries])
        num_arcs = net.cluster.num_arcs
        bad = np.zeros(num_arcs, dtype=bool)
        if num_arcs * len(entries) <= _COUNT_SPAN * len(arcs):  # two messages of one step: counted step by step
            for _, _, flow_arcs, _ in entries:
                bad |= np.bincount(flow_arcs, minlength=num_arcs) > 1
        else:  # (many steps over a wide fabric: one sort)
            phase = np.repeat(np.arange(len(entries)), [len(e[2]) for e in entries])
            pair, count = np.unique(arcs * len(entries) + phase, return_counts=True)
            bad[pair[count > 1] // len(entries)] = True
        first = np.full(num_arcs, -1, dtype=np.int64)
        first[arcs] = src
        bad[arcs[first[arcs] != src]] = True  # two senders
        of_step: dict[int, np.ndarray] = {}
        for step, flow, flow_arcs, _ in entries:
            shared = np.zeros(len(step), dtype=bool)
            shared[flow[bad[flow_arcs]]] = True
            mask = ~shared & (paths.length[step.pids(net)] > 0)
            if mask.any():
                of_step[id(step)] = mask
        masks: dict[int, np.ndarray] = {}
        for step in steps:
            got = of_step.get(id(lead[id(step)]))
            if got is not None:
                masks[id(step)] = got
        return masks

    def _send_private(self, step: Step, msgs: np.ndarray) -> None:
        """Send private messages (see :meth:`_private_masks`): each arrives after its start delay and
        its wire bytes at its path's narrowest capacity (or its bound), the engine's arithmetic."""
        net = self.net
        now = self.env.now
        if len(msgs) == 1:  # in scalar operations
            m = int(msgs[0])
            pid, r, nb = int(step.pids(net)[m]), int(step.src[m]), float(step.nbytes[m])
            rate1 = float(net.cluster.paths.bottleneck[pid])
            if step.bound is not None:
                rate1 = min(rate1, float(step.bound[m]))
            delay1, wire1 = net.cluster.message_model.one(pid, r, nb)
            start1 = now + delay1
            self._arrive_at(
                start1 + wire1 / rate1 if wire1 > 0 else start1, (r, int(step.dst[m]), int(self.step[r]), pid, nb)
            )
            self._private += 1
            return
        pids = step.pids(net)[msgs]
        src = step.src[msgs]
        nbytes = step.nbytes[msgs]
        rate = net.cluster.paths.bottleneck[pids]
        if step.bound is not None:
            rate = np.minimum(rate, step.bound[msgs])
        delay, wire = net.cluster.message_model.many(pids, src, nbytes)
        start = now + delay
        with np.errstate(divide="ignore", invalid="ignore"):
            arrival = np.where(wire > 0, start + wire / rate, start)
        dst = step.dst[msgs]
        fstep = self.step[src]
        for when in distinct(arrival).tolist():
            at = arrival == when
            self._arrive_at(when, (src[at], dst[at], fstep[at], pids[at], nbytes[at]))
        self._private += len(msgs)

    def _arrive_at(self, when: float, batch: tuple[Any, ...]) -> None:
        """``batch`` = (src, dst, step, path, bytes) arrives at ``when``: arrays, or ints (one message)."""
        batch_at(self.env, self._all_arrivals(), when, batch, self._arrived)

    def _all_arrivals(self) -> dict[float, list[tuple[Any, ...]]]:
        """:attr:`_arrivals` with the private messages the compiled core holds in flight handed over into
        it (``Fast.export``: the same buckets in the order they were made), for the lines that read or
        write it."""
        if self._core is not None:
            self._core.export()
        return self._arrivals

    def _arrived(self, when: float) -> None:
        bucket = self._arrivals.pop(when, None)
        if bucket is None:
            return  # moved by an extrapolation
        now = self.env.now
        if len(bucket) == 1 and isinstance(bucket[0][0], int):
            src1, dst1, fstep1, pid1, nbytes1 = bucket[0]
            self.net.account_one(pid1, nbytes1)
            self._one_done(src1, dst1, fstep1, now)
        else:
            self._arrived_many(bucket, now)
        if self.extrapolate:
            self._after()

    def _arrived_many(self, bucket: list[tuple[Any, ...]], now: float) -> None:
        """:meth:`_arrived` for a bucket other than one lone message."""
        src, dst, fstep, pids, nbytes = (
            np.concatenate([np.atleast_1d(p) for p in parts]) for parts in zip(*bucket, strict=True)
        )
        self.net.account(pids, nbytes, len(pids))
        self._done(src, dst, fstep, now)

    def _in_flight_private(self) -> tuple[np.ndarray, ...]:
        """(arrival, src, step, path) of the private messages in flight, in the buckets' order (their values
        gathered into lists, a message of Python ints as it is, a batch's columns by their lists: one array of
        each at the end, not four small arrays per message)."""
        whens: list[float] = []
        srcs: list[int] = []
        steps: list[int] = []
        pids: list[int] = []
        for when, bucket in self._all_arrivals().items():
            for src, _dst, fstep, pid, _nbytes in bucket:
                if type(src) is int and type(fstep) is int and type(pid) is int:
                    whens.append(when)
                    srcs.append(src)
                    steps.append(fstep)
                    pids.append(pid)
                    continue
                whens.extend([when] * np.size(src))
                srcs.extend(np.atleast_1d(src).tolist())
                steps.extend(np.atleast_1d(fstep).tolist())
                pids.extend(np.atleast_1d(pid).tolist())
        if not whens:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(0), empty, empty, empty
        ints = (np.array(column, dtype=np.int64) for column in (srcs, steps, pids))
        return (np.array(whens, dtype=np.float64), *ints)

    def _complete(self, ranks: np.ndarray, now: float) -> np.ndarray:
        """``ranks`` have all their sends and receives of the current step: reduce, then either return
        the ones that start their next step right now, or set a timer for the others."""
        if len(ranks) <= _FEW:  # a rank at a time, in order (timers at one instant share a bucket either way)
            return np.array([r for r in ranks.tolist() if self._complete_one(r, now)], dtype=np.int64)
        if self.gamma > 0:
            phases = self._phase_of(self.step[ranks])
            reduce = np.zeros(len(ranks))
            for k in distinct(phases).tolist():
                sel = phases == k
                reduce[sel] = self.steps[k].reduce_at[ranks[sel]]
            finish = self.last[ranks] + self.gamma * self.scale[ranks] * reduce
        else:
            finish = self.last[ranks]
        now_ready = finish <= now
        later = ~now_ready
        if later.any():
            # still in this step while reducing: a message of the next step that arrives meanwhile
            # is early, and the step counter moves when the timer fires
            for when in distinct(finish[later]).tolist():
                self._timer(when, ranks[later & (finish == when)])
        ready = ranks[now_ready]
        self.step[ready] += 1
        return ready

    def _timer(self, when: float, ranks: np.ndarray) -> None:
        batch_at(self.env, self._timers, when, ranks, self._fire)
        self.timer_at[ranks] = when

    def _fire(self, when: float) -> None:
        bucket = self._timers.pop(when, None)
        if bucket is None:
            return  # moved by an extrapolation
        ranks = np.concatenate(bucket)
        self.timer_at[ranks] = np.nan
        self.step[ranks] += 1
        self._begin(ranks, self.env.now)
        if self.extrapolate:
            self._after()

    # ------------------------------------------------------------------ completions
    def _on_flows_done(self, slots: np.ndarray, now: float) -> None:
        if len(slots) == 1:
            slot = int(slots[0])
            self._one_done(int(self.f_src[slot]), int(self.f_dst[slot]), int(self.f_step[slot]), now)
            return
        self._done(self.f_src[slots], self.f_dst[slots], self.f_step[slots], now)

    def _done(self, src: np.ndarray, dst: np.ndarray, fstep: np.ndarray, now: float) -> None:
        """Messages from ``src`` to ``dst`` sent at steps ``fstep`` have arrived."""
        if len(src) <= _FEW:
            self._few_done(src.tolist(), dst.tolist(), fstep.tolist(), now)
            return
        senders, counts = np.unique(src, return_counts=True)
        self.send_left[senders] -= counts
        self.last[senders] = now
        current = self.step[dst] == fstep
        if current.all():
            receivers, counts = np.unique(dst, return_counts=True)
        else:
            receivers, counts = np.unique(dst[current], return_counts=True)
            self._early(dst[~current], fstep[~current], now)
        self.recv_left[receivers] -= counts
        self.last[receivers] = now
        touched = distinct(np.concatenate((senders, receivers)))  # (np.union1d's, by a sort: see sim._arrays)
        ready = touched[(self.send_left[touched] == 0) & (self.recv_left[touched] == 0)]
        start_now = self._complete(ready, now)
        if len(start_now):
            self._begin(start_now, now)

    def _few_done(self, src: list[int], dst: list[int], fstep: list[int], now: float) -> None:
        """:meth:`_done` for a few messages, counted in plain Python (numpy's per-call cost dominates);
        the same updates, and the ranks that complete taken in the same (ascending) order."""
        send_left, recv_left, last, step = self.send_left, self.recv_left, self.last, self.step
        sent: dict[int, int] = {}
        for r in src:
            sent[r] = sent.get(r, 0) + 1
        for r, k in sent.items():
            send_left[r] -= k
            last[r] = now
        got: dict[int, int] = {}
        early_dst, early_step = [], []
        for r, f in zip(dst, fstep, strict=True):
            if step[r] == f:
                got[r] = got.get(r, 0) + 1
            else:
                early_dst.append(r)
                early_step.append(f)
        if early_dst:
            self._early(np.array(early_dst, dtype=np.int64), np.array(early_step, dtype=np.int64), now)
        for r, k in got.items():
            recv_left[r] -= k
            last[r] = now
        ready = [r for r in sorted(sent.keys() | got.keys()) if send_left[r] == 0 and recv_left[r] == 0]
        if ready:
            start_now = self._complete(np.array(ready, dtype=np.int64), now)
            if len(start_now):
                self._begin(start_now, now)

    def _one_done(self, src: int, dst: int, fstep: int, now: float) -> None:
        """:meth:`_done` for one message, in scalar operations (numpy's per-call cost dominates when
        ranks have drifted apart and messages arrive one at a time)."""
        send_left, recv_left, last = self.send_left, self.recv_left, self.last
        send_left[src] -= 1
        last[src] = now
        touched = [src]
        if self.step[dst] == fstep:
            recv_left[dst] -= 1
            last[dst] = now
            if dst != src:
                touched.append(dst)
        else:  # the receiver has not reached this step (or is still reducing the previous one)
            self._early_one(dst, fstep, now)
        for r in touched:
            if send_left[r] == 0 and recv_left[r] == 0 and self._complete_one(r, now):
                self._begin_one(r, now)

    def _early(self, dst: np.ndarray, fstep: np.ndarray, now: float) -> None:
        """Messages that arrived before their receiver reached their step."""
        lead = fstep - self.step[dst]
        while lead.max() >= self.window:
            self._widen()
        slot = fstep % self.window
        np.add.at(self.early_count, (dst, slot), 1)
        np.maximum.at(self.early_last, (dst, slot), now)

    def _widen(self) -> None:
        """Double the window of steps an early message may lead its receiver by."""
        old = self.window
        new = old * 2
        if _CORE is not None and _FAST_CORE:  # (the same values, each row's in runs: _ratecore.fast_widen)
            count = np.empty((len(self.early_count), new), dtype=self.early_count.dtype)
            last = np.empty((len(self.early_last), new))
            if _CORE.fast_widen(self.step, self.early_count, self.early_last, count, last):
                self.early_count, self.early_last, self.window = count, last, new
                return
        # row r's new column k holds step (step[r] + j) with k = (step[r] + j) % new, j < old: its old column
        # k % old (old divides new), so the old columns twice over where (k - step[r]) % new < old -- d = k -
        # step[r] % new in [0, old), or below old - new -- and empty elsewhere: whole rows by vector operations,
        # not a gather and scatter by element (nor a remainder per element)
        d = np.arange(new)[None, :] - (self.step % new)[:, None]
        inside = ((d >= 0) & (d < old)) | (d < old - new)
        count = np.tile(self.early_count, 2)
        count *= inside
        last = np.where(inside, np.tile(self.early_last, 2), -np.inf)
        self.early_count, self.early_last, self.window = count, last, new

    # ------------------------------------------------------------------ steady states
    def _after(self) -> None:
        """At the end of a consistent instant: if the reference endpoint began a new step, compare the
        whole state with the ones at its last few steps; when it matches the one q steps back shifted by
        q steps and Δ seconds, the run is periodic: jump over whole periods."""
        s0 = int(self.step[self.ref])
        if s0 == self._seen0 or s0 >= self.total or self.done.triggered:
            return
        self._seen0 = s0
        if self._misses > 64 and s0 % 64 > _MAX_PERIOD:
            return  # a state that keeps changing: look less often (runs of consecutive steps, to see periods)
        # every snapshot the state could match has the same endpoints' steps relative to the reference,
        # the same counts left and as many flows and private messages in flight (its shape): a digest of
        # them, cheap, rules most states out before a snapshot (the compiled core makes the same value from
        # the arrays in place, without numpy's temporaries: Fast.digest)
        digest = None if self._core is None else self._core.digest(s0, _FINISHED)
        if digest is None:
            live = self.step < self.total
            relative = np.where(live, self.step - s0, _FINISHED)
            active, waiting = self.net.in_flight(self.owner)
            private = sum(np.size(batch[0]) for bucket in self._arrivals.values() for batch in bucket)
            if self._core is not None:
                private += self._core.held()  # (what the core holds: a count, none handed over)
            shape = (len(active), len(waiting), private)
            digest = hash((relative.tobytes(), self.send_left.tobytes(), self.recv_left.tobytes(), shape))
        history = self._history
        seen = [snap for s, d, snap in history if d == digest and 1 <= s0 - s <= _MAX_PERIOD]
        snap = self._snapshot(s0) if seen else None
        history.append((s0, digest, snap))
        if len(history) > _MAX_PERIOD + 1:
            history.pop(0)
        for prev in reversed(seen):
            if prev is None or not snap.matches(prev):  # (a digest seen before: the next period compares)
                continue
            period = snap.s0 - prev.s0
            if len(snap.path_bytes) != len(prev.path_bytes):
                continue  # routes first used in between: not yet a repeating state
            phase = int(self._phase_of(np.array([s0]))[0])
            lo, hi = int(self.bounds[phase]), int(self.bounds[phase + 1])
            if prev.s_lo < lo:
                return  # the period must be measured on steps of this phase only
            periods = (hi - 2 - snap.s_hi) // period
            delta = snap.t0 - prev.t0
            if periods < 1 or delta <= 0:
                return
            self._misses = 0
            self._jump(
                periods * period,
                periods * delta,
                (snap.path_bytes - prev.path_bytes) * periods,
                (snap.flows - prev.flows) * periods,
            )
            return
        self._misses += 1

    def snapshot(self) -> _Snapshot:
        """The whole state now (the executor's and its flows'), relative to the reference endpoint's step
        and the time it began it: two executors in equal snapshots, shifted in time, go on the same way."""
        return self._snapshot(int(self.step[self.ref]))

    def _snapshot(self, s0: int) -> _Snapshot:
        t0 = float(self.began[self.ref])
        live = self.step < self.total  # an endpoint that has finished stays as it is
        net = self.net
        active, waiting = net.in_flight(self.owner)
        a_path, a_left, a_rate = net.flow_state(active)
        a_order = np.lexsort((self.f_src[active], a_path, self.f_step[active]))
        active, a_path, a_left, a_rate = active[a_order], a_path[a_order], a_left[a_order], a_rate[a_order]
        w_start = net.pending_starts(waiting)
        w_path, w_left, _ = net.flow_state(waiting)
        w_order = np.lexsort((self.f_src[waiting], w_path, self.f_step[waiting], w_start))
        waiting, w_start, w_path, w_left = waiting[w_order], w_start[w_order], w_path[w_order], w_left[w_order]
        early_pos, early_count, early_times, early_top = self._early_window(t0)
        p_when, p_src, p_step, p_path = self._in_flight_private()
        p_order = np.lexsort((p_when, p_path, p_step, p_src))
        p_when, p_src, p_step, p_path = p_when[p_order], p_src[p_order], p_step[p_order], p_path[p_order]
        in_flight = np.concatenate([self.f_step[active], self.f_step[waiting], p_step])
        s_hi = max(int(self.step[live].max(initial=s0)), int(in_flight.max()) if len(in_flight) else 0)
        if early_top is not None:
            s_hi = max(s_hi, early_top)
        ints = np.concatenate(
            [
                np.where(live, self.step - s0, _FINISHED),
                self.send_left,
                self.recv_left,
                [self.window],
                early_pos,
                early_count,
                self.f_src[active],
                self.f_step[active] - s0,
                a_path,
                self.f_src[waiting],
                self.f_step[waiting] - s0,
                w_path,
                p_src,
                p_step - s0,
                p_path,
            ]
        )
        times = np.concatenate(
            [
                np.where(live, self.began - t0, 0.0),
                np.where(live, self.last - t0, 0.0),
                np.nan_to_num(self.timer_at - t0, nan=-1.0),
                early_times,
                w_start - t0,
                p_when - t0,
                [net.updated_at - t0],
            ]
        )
        amounts = np.concatenate([a_left, a_rate, w_left])
        return _Snapshot(
            s0=s0,
            t0=t0,
            shape=(len(active), len(waiting), len(p_when)),
            ints=ints,
            times=times,
            amounts=amounts,
            s_lo=int(self.step.min()),
            s_hi=s_hi,
            path_bytes=net.path_bytes(),
            flows=net.flows,
        )

    def _early_window(self, t0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
        """The early arrays as a snapshot holds them: each endpoint's window from its own step on (row r's
        columns (step[r] + j) % window, j < window), its entries with a count -- their flat positions
        r * window + j in order, their counts, their last arrival times less ``t0`` (-1 where not finite)
        -- and the furthest step an early message is counted for (None: none is). (The entries without a
        count are left out: a count and a last arrival are set together and cleared together, so there
        the last arrival is always -inf, -1 less ``t0``, the same in every snapshot.)"""
        if self._core is not None:  # (the same values, in one pass over the arrays: Fast.early_window)
            pos, count, times, top = self._core.early_window(t0)
            return np.frombuffer(pos, np.int64), np.frombuffer(count, np.int64), np.frombuffer(times), top
        # a run of columns of each row written twice over (whole rows copied, not element by element)
        start = self.step % self.window
        count = _rotated(self.early_count, start)
        rows, cols = np.nonzero(count)
        last = _rotated(self.early_last, start)[rows, cols] - t0
        top = int((self.step[rows] + cols).max()) if len(rows) else None
        return rows * self.window + cols, count[rows, cols], np.where(np.isfinite(last), last, -1.0), top

    def _jump(self, steps: int, shift: float, path_bytes: np.ndarray, flows: int) -> None:
        """Skip ``steps`` steps lasting ``shift`` seconds in all: every step counter moves on by
        ``steps``, every time by ``shift``, and the network carries the skipped bytes and flows."""
        net = self.net
        active, waiting = net.in_flight(self.owner)
        self.f_step[active] += steps
        self.f_step[waiting] += steps
        live = self.step < self.total
        self.step[live] += steps
        self.began[live] += shift
        self.last[live] += shift
        self.timer_at += shift
        self.early_count = np.roll(self.early_count, steps % self.window, axis=1)
        self.early_last = np.roll(self.early_last, steps % self.window, axis=1) + shift
        timers: dict[float, list[np.ndarray]] = {}
        for when, bucket in self._timers.items():
            timers.setdefault(when + shift, []).extend(bucket)  # times an ulp apart may meet: keep both
        self._timers = timers
        for when in timers:
            call_at(self.env, when, self._fire)
        arrivals: dict[float, list[tuple[Any, ...]]] = {}
        for when, bucket in self._all_arrivals().items():
            moved = [(src, dst, _plus(fstep, steps), pids, nbytes) for src, dst, fstep, pids, nbytes in bucket]
            arrivals.setdefault(when + shift, []).extend(moved)
        self._arrivals = {}
        for when, bucket in arrivals.items():
            for batch in bucket:
                self._arrive_at(when, batch)
        net.suspend()
        n = len(path_bytes)
        full = np.zeros(max(n, net.cluster.paths.count))
        full[:n] = path_bytes
        net.shift(shift, full, flows)
        self.env.timeout(shift).callbacks.append(lambda _e: net.resume())
        self.extrapolated_steps += steps
        self._seen0 = int(self.step[self.ref])
        self._history.clear()


def _rotated(a: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``a[r, (start[r] + j) % n]`` for every row r and j < n (n the rows' length, 0 <= start < n): each
    row's n columns from its start on, round the end."""
    n = a.shape[1]
    twice = np.concatenate([a, a[:, : n - 1]], axis=1)
    return np.lib.stride_tricks.sliding_window_view(twice, n, axis=1)[np.arange(len(a)), start]


def _plus(fstep: Any, steps: int) -> Any:
    """A batch's steps moved on by ``steps``: an int, an array, or (the compiled core's batches) a list."""
    return [f + steps for f in fstep] if isinstance(fstep, list) else fstep + steps


def _reference(program: StepProgram) -> int:
    """The first endpoint with messages in the program's longest phase (rank 0 may have none: NCCL's
    channels are endpoints of their own, and a rank that has finished cannot show a steady state)."""
    best, ref = -1, 0
    for step, times in program.phases:
        if len(step) and times > best:
            best, ref = times, int(min(step.src.min(), step.dst.min()))
    return ref


@dataclass
class _Snapshot:
    """The executor's and its flows' state relative to (the reference endpoint's step s0, the
    time t0 it began it); finished endpoints are left as they are."""

    s0: int
    t0: float
    shape: tuple[int, int, int]
    ints: np.ndarray
    times: np.ndarray
    amounts: np.ndarray
    s_lo: int
    s_hi: int
    path_bytes: np.ndarray
    flows: int

    def matches(self, other: _Snapshot) -> bool:
        """Equal up to rounding: the same integers, times within 1e-9 of the period, amounts to 1e-9."""
        if self.shape != other.shape or len(self.ints) != len(other.ints):
            return False
        if not np.array_equal(self.ints, other.ints):
            return False
        period = self.t0 - other.t0
        if period <= 0 or not np.allclose(self.times, other.times, rtol=0.0, atol=1e-9 * period):
            return False
        return bool(np.allclose(self.amounts, other.amounts, rtol=1e-9, atol=0.0))


def run_program(
    env: simpy.Environment, net: Network, program: StepProgram, gamma: float, compute_scale: np.ndarray
) -> FastExecutor:
    """Start ``program`` as a SimPy process; returns the executor (``executor.done`` fires at the end)."""
    executor = FastExecutor(net, program, gamma, compute_scale)
    env.process(executor.run())
    return executor
