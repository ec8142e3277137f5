"""The network's wake-up in the compiled core (``sim._ratecore``: ``wake_next``, ``hit_rates``) gives the
Python lines' results bit for bit.

Where the core is built, a wake-up schedules the next one in C (:meth:`sim.network.Network._schedule_next`:
the earliest live due time, not before now, or the earliest pending start, then the timeout event queued as
:meth:`~sim.network.Network._schedule` queues it), and a max-min computation answered from the cache looks
the flows' rates up in C (:meth:`sim.rates.Rates._hit_rates`). Every case here runs with
``sim.network._WAKE_CORE`` and ``sim.rates._HIT_CORE`` on and off -- uniform, congested, straggler and
slow-link fabrics, every engine (message, fast:events, fast:dataflow), rate bounds, random clusters -- and
must agree in every result (the simulated time's repr included), in the events scheduled, and in every
wake-up: its time, the next wake-up it left, the flows draining, the due heap's entries, the solves and
the cache hits.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest
import simpy

import sim.dataflow as dataflow
import sim.network as network
import sim.rates as rates
from sim import simulate
from sim.cluster import Cluster
from sim.rates import _CORE
from sim.topology import dgx

from .random_cases import case
from .test_fast_core import CONGESTED as FAST_CONGESTED
from .test_fast_core import UNIFORM, straggler_graph
from .test_message_engine import _same

pytestmark = pytest.mark.skipif(
    _CORE is None or network._ops is network._PyDue, reason="the compiled core is not built (or COLLSIM_PURE=1)"
)


def _run(
    monkeypatch: pytest.MonkeyPatch, core: bool, *args: Any, pump: bool = True, **kw: Any
) -> tuple[Any, list[Any]]:
    """The run, and every wake-up of every network it made (``sim.network._WAKE_LOG``, written by the Python
    lines and by ``net_run`` alike): (its time, the next wake-up it left, the flows draining, the due heap's
    entries, solves, cache hits)."""
    woken: list[Any] = []
    with monkeypatch.context() as m:
        m.setattr(network, "_WAKE_CORE", core)
        m.setattr(network, "_DUE_CORE", core)
        m.setattr(rates, "_HIT_CORE", core)
        m.setattr(dataflow, "_DF_CORE", core)
        m.setattr(network, "_PUMP", pump)
        m.setattr(network, "_WAKE_LOG", woken)
        result = simulate(*args, **kw)
    return result, woken


def _both(monkeypatch: pytest.MonkeyPatch, *args: Any, pump: bool = True, **kw: Any) -> tuple[Any, list[Any]]:
    """The run with the core's wake-up lines and with the Python lines: the same in everything."""
    fast, woken = _run(monkeypatch, True, *args, pump=pump, **kw)
    ref, ref_woken = _run(monkeypatch, False, *args, **kw)
    assert woken == ref_woken
    _same(fast, ref)
    assert repr(fast.time_s) == repr(ref.time_s)
    assert (fast.events, fast.engine) == (ref.events, ref.engine)
    return fast, woken


# the fast core's cases, and a double binary tree (fast:dataflow) on a congested fabric
CONGESTED = [
    *FAST_CONGESTED,
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "double-binary-tree:chunks=8"),
]


@pytest.mark.parametrize("graph, algorithm", UNIFORM + CONGESTED)
@pytest.mark.parametrize("engine", ["message", "fast"])
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_the_core_gives_the_python_lines_results(monkeypatch, graph, algorithm, engine, gamma):
    _both(monkeypatch, graph, "allreduce", algorithm, 2**22 + 7, engine=engine, gamma=gamma)


def test_the_cache_hits_and_the_wake_ups_are_exercised(monkeypatch):
    """A congested rank-order ring on the fast path: half its computations are cache hits, and the next
    wake-up is set by a due time and by a pending start."""
    graph = dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1)
    fast, woken = _both(monkeypatch, graph, "allreduce", "ring:order=rank", 2**24, engine="fast")
    assert fast.engine == "fast:events"
    assert woken[-1][5] > 0  # cache hits
    assert any(w[1] == np.inf for w in woken) and any(np.inf > w[1] > w[0] for w in woken)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("algorithm", ["ring:order=rank", "halving-doubling", "double-binary-tree:chunks=4"])
def test_the_core_with_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    graph = straggler_graph(seed)
    engine = ("message", "fast")[seed % 2]
    _both(monkeypatch, graph, "allreduce", algorithm, float(2**20 + 17 * seed), engine=engine, gamma=1e-11)


@pytest.mark.parametrize("seed", range(16))
def test_the_core_on_random_clusters(monkeypatch, seed):
    c = case(seed)
    engine = ("message", "auto")[seed % 2]
    _both(monkeypatch, Cluster(c.graph), c.collective, c.algorithm, c.size, ranks=c.ranks, gamma=c.gamma, engine=engine)


def test_hit_rates_is_the_python_lookup():
    """``hit_rates`` against :meth:`Rates._hit_rates` on random keys, with paths found and missing, slots in
    any order, no keys, no flows."""
    rng = random.Random(7)
    for trial in range(300):
        keys = np.array(sorted(rng.sample(range(40), rng.randint(0, 12))), dtype=np.int64)
        values = np.array([rng.random() for _ in keys])
        path = np.array([rng.randrange(40) for _ in range(30)], dtype=np.int64)
        if len(keys) and trial % 2:  # every flow on a cached path
            path = np.array([int(keys[rng.randrange(len(keys))]) for _ in range(30)], dtype=np.int64)
        active = np.array(rng.sample(range(30), rng.randint(0, 30)), dtype=np.int64)
        mask = np.zeros(len(path), dtype=bool)
        mask[active] = True
        ref = rates.Rates._hit_rates(keys, values, active, path)
        in_order = rates.Rates._hit_rates(keys, values, np.flatnonzero(mask), path)
        for got, want in (
            (_CORE.hit_rates(keys, values, active, path, False), ref),
            (_CORE.hit_rates(keys, values, mask, path, True), in_order),
        ):
            if want is None:
                assert got is None
            else:
                assert got == (want[0].tolist(), want[1].tolist())
    with pytest.raises(IndexError):
        _CORE.hit_rates(
            np.array([1], dtype=np.int64), np.ones(1), np.array([5], dtype=np.int64), np.ones(3, np.int64), False
        )
    with pytest.raises(ValueError):
        _CORE.hit_rates(np.array([1], dtype=np.int64), np.ones(2), np.zeros(0, np.int64), np.ones(3, np.int64), False)


@pytest.mark.parametrize(
    "dues, stale, pending, now",
    [
        ([2.0], [], [], 3.0),  # a due time before now (rounding): the wake-up at now
        ([5.0, 7.0], [4.0], [], 3.0),  # a stale due time popped first
        ([5.0], [], [4.5], 3.0),  # a pending start first
        ([], [4.0], [], 3.0),  # nothing due: no wake-up
        ([], [], [6.0], 3.0),
        ([5.0], [5.0], [9.0], 3.0),  # a due time shared with a stale entry
    ],
)
def test_wake_next_is_the_python_lines(monkeypatch, dues, stale, pending, now):
    """``wake_next`` against :meth:`Network._schedule_next` on states set by hand: the next wake-up's
    time, the event queued for it, the due heap and its entries' count."""

    def state(core: bool) -> tuple[Any, ...]:
        with monkeypatch.context() as m:
            m.setattr(network, "_WAKE_CORE", core)
            env = simpy.Environment(initial_time=now)
            net = network.Network(env, Cluster("star:hosts=4,bandwidth=1GB/s,latency=1us"))
        assert (net._wake_ctx is not None) is core
        net._lane = False
        for slot, when in enumerate(dues + stale):
            net._due_at.setdefault(when, []).append(slot)
            net._due[slot] = when if slot < len(dues) else when + 1.0  # (a stale entry's slot is due later)
            net._is_active[slot] = True
        net._heap[:] = sorted(net._due_at)
        net._due_entries = len(dues) + len(stale)
        net._pending[:] = pending
        net._schedule_next(now)
        queued = [(t, p) for t, p, _, e in env._queue if e is net._wake_event]
        return net._wake_at, queued, list(net._heap), dict(net._due_at), net._due_entries

    assert state(True) == state(False)


# the whole wake-up in C (net_run / net_wake), the dataflow's completions in C (DfDone), the pump


def _spied(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    """Every call of :meth:`Network._wake` (the event loop's steps into the network), and the executors
    whose completions the compiled core took over (DataflowExecutor._bind_core)."""
    steps: list[Any] = []
    bound: list[Any] = []
    wake, bind = network.Network._wake, dataflow.DataflowExecutor._bind_core

    def stepping(self: Any) -> None:
        steps.append(self.env.now)
        wake(self)

    def binding(self: Any) -> None:
        bind(self)
        if isinstance(self.net._owners[self.owner], _CORE.DfDone):
            bound.append(self)

    monkeypatch.setattr(network.Network, "_wake", stepping)
    monkeypatch.setattr(dataflow.DataflowExecutor, "_bind_core", binding)
    return steps, bound


DATAFLOW = [
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "double-binary-tree:chunks=8"),
    (dgx(hosts=4, gpus_per_host=8, hosts_per_leaf=1, spines=1), "double-binary-tree:chunks=16"),
    (dgx(hosts=6, gpus_per_host=2), "double-binary-tree:chunks=5"),
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "tree:chunks=8"),
]


@pytest.mark.parametrize("graph, algorithm", DATAFLOW)
@pytest.mark.parametrize("size", [2**20 + 3, 2**24])
def test_the_dataflow_core_gives_the_python_lines_results(monkeypatch, graph, algorithm, size):
    """``fast:dataflow`` with no reduction time (the executor's fused instants): its completions heard by
    the core's ``DfDone`` (settle, launch, the starts entered), the network's wake-ups in ``net_run`` -- the
    same wake-ups, one by one, as the Python lines', and the same results."""
    steps, bound = _spied(monkeypatch)
    fast, woken = _both(monkeypatch, graph, "allreduce", algorithm, size, engine="fast", gamma=0.0)
    assert fast.engine == "fast:dataflow"
    assert len(bound) == 1  # (the core's run, not the Python lines')
    assert len(woken) > 20


@pytest.mark.parametrize("graph, algorithm", DATAFLOW[:2] + CONGESTED[:2])
@pytest.mark.parametrize("engine", ["message", "fast"])
def test_the_pump_runs_the_wake_ups_the_event_loop_would_step_to(monkeypatch, graph, algorithm, engine):
    """With the pump, a wake-up that would be the event loop's next step runs right after the one before it
    (no event, no step): the same wake-ups at the same times, the same events counted, as without it and as
    the Python lines -- and the event loop steps into the network fewer times than it wakes."""
    steps, _ = _spied(monkeypatch)
    size = 2**22 + 7
    pumped, woken = _run(monkeypatch, True, graph, "allreduce", algorithm, size, engine=engine, gamma=0.0)
    stepped = len(steps)
    steps.clear()
    plain, plain_woken = _run(
        monkeypatch, True, graph, "allreduce", algorithm, size, engine=engine, gamma=0.0, pump=False
    )
    assert len(steps) == len(plain_woken)  # (without the pump, a step per wake-up)
    ref, ref_woken = _run(monkeypatch, False, graph, "allreduce", algorithm, size, engine=engine, gamma=0.0)
    assert woken == plain_woken == ref_woken
    for run in (pumped, plain):
        _same(run, ref)
        assert (repr(run.time_s), run.events) == (repr(ref.time_s), ref.events)
    assert stepped <= len(woken)
    if engine == "fast" and algorithm.startswith("double-binary-tree"):
        assert stepped < len(woken) // 2


@pytest.mark.parametrize("graph, algorithm", DATAFLOW[:1] + CONGESTED[:1])
def test_under_a_deadline_every_wake_up_keeps_its_event(monkeypatch, graph, algorithm):
    """A deadline's environment looks at the clock at every step: the pump then leaves every wake-up to the
    event loop, and the results are the Python lines'."""
    from sim.deadline import deadline

    steps, _ = _spied(monkeypatch)
    with deadline(600):
        _, woken = _both(monkeypatch, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    assert len(steps) == 2 * len(woken)  # (both runs: each wake-up a step of its own)


def test_arrays_are_read_as_they_are_now():
    """The core remembers what a buffer request on an array gave (by the array's identity): arrays made and
    dropped one after another (the same addresses reused) are read as they are, and an array remembered as
    read-only is not written."""
    rng = np.random.default_rng(5)
    for trial in range(400):
        n = int(rng.integers(1, 9))
        table = rng.integers(0, 2**62, size=12, dtype=np.int64).astype(np.uint64)
        pids = rng.integers(0, 12, size=n).astype(np.int64)
        bounds = np.where(rng.random(n) < 0.5, np.inf, rng.random(n))
        got = _CORE.hash_finite(table, pids, bounds)
        want = (int(table[pids].sum(dtype=np.uint64)), int(np.isfinite(bounds).sum()))
        assert got == want, trial
        del table, pids, bounds
    rate = np.ones(4)
    rate.flags.writeable = False
    assert _CORE.fsum(rate) == 4.0  # (read: remembered as read-only)
    one = np.array([1], dtype=np.int64)
    with pytest.raises((ValueError, BufferError)):
        _CORE.finish_flows(one, np.zeros(4, np.int64), np.ones(4), np.zeros(2), rate, np.zeros(4, np.int64))
    assert (rate == 1.0).all()


def test_dfdone_from_python_is_the_executors_lines(monkeypatch):
    """``DfDone`` called from Python (the network's Python lines call an owner with an array of slots): a
    run whose every completion goes through the Python ``_finish`` and ``_finish_few`` gives the Python
    lines' results."""
    graph, algorithm = DATAFLOW[0]
    ref, _ = _run(monkeypatch, False, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    with monkeypatch.context() as m:
        m.setattr(network, "_WHOLE_CORE", False)  # (the wake-up in Python, the completions in DfDone)
        m.setattr(dataflow.DataflowExecutor, "_bind_core", _bind_anyway)
        m.setattr(dataflow.DataflowExecutor, "_on_flows_done", _never)
        got = simulate(graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    _same(got, ref)
    assert (repr(got.time_s), got.events) == (repr(ref.time_s), ref.events)


def _never(self: Any, slots: Any, now: float) -> None:
    raise AssertionError("the executor's Python lines heard of completed flows")


def _bind_anyway(self: Any) -> None:
    """DataflowExecutor._bind_core without the whole wake-up in C: a context made for DfDone alone."""
    net = self.net
    whole = (net._wake_ctx, np.empty, np.int64, rates, network, False)
    flow = self.flow
    net.set_owner(
        self.owner, _CORE.DfDone(self, (whole, flow.pids(net), flow.src, flow.nbytes, self.owner, net.cluster, None))
    )


def test_dfdone_takes_the_length_of_the_program_the_executor_holds(monkeypatch):
    """``DfDone`` takes the program's length once per program (no Python frame per completion), and anew
    for another program: an executor whose program says it is one message longer from the run's first solve
    on (the run cannot end while DfDone believes it) and is replaced after a few solves by a copy that says
    its true length ends as the Python lines' run ends."""
    graph, algorithm = DATAFLOW[0]
    ref, _ = _run(monkeypatch, False, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    executors: list[Any] = []
    lengths: list[int] = []
    solves: list[int] = []
    lying: set[int] = set()
    bind, solve, length = dataflow.DataflowExecutor._bind_core, network.Network._solve, dataflow.Dataflow.__len__

    def bound(self: Any) -> Any:
        executors.append(self)
        return bind(self)

    def solving(self: Any) -> None:
        solves.append(len(solves))
        if len(solves) == 1:
            lying.add(id(executors[0].flow))
        elif len(solves) == 6:  # (after the first completions)
            executors[0].flow = copy.copy(executors[0].flow)
        solve(self)

    def counted(self: Any) -> int:
        lengths.append(id(self))
        return length(self) + (id(self) in lying)

    with monkeypatch.context() as m:
        m.setattr(dataflow.DataflowExecutor, "_bind_core", bound)
        m.setattr(network.Network, "_solve", solving)
        m.setattr(dataflow.Dataflow, "__len__", counted)
        got = simulate(graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    _same(got, ref)
    assert (repr(got.time_s), got.events) == (repr(ref.time_s), ref.events)
    assert len(solves) > 6 and len(lengths) < 20  # (taken once per program, not once per completion)


# ---- what net_run holds in C from one wake-up to the next (the modules' switches, the held list) must follow
# what the Python lines read every time

RING = (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "allreduce", "ring:order=rank", 2**22 + 7)


def _flipping(monkeypatch: pytest.MonkeyPatch, at: int, flip: Any) -> list[Any]:
    """A wake-up log (``_WAKE_LOG``, set here) whose ``at``-th record -- made inside ``net_run``, between two
    wake-ups it runs, or by the Python lines -- calls ``flip`` (``Network._wake_record`` wrapped: both call it)."""
    log: list[Any] = []
    record = network.Network._wake_record

    def flipping(self: Any, now: float) -> Any:
        if len(log) + 1 == at:
            flip()
        return record(self, now)

    monkeypatch.setattr(network.Network, "_wake_record", flipping)
    monkeypatch.setattr(network, "_WAKE_LOG", log)
    return log


@pytest.mark.parametrize("core", [True, False])
def test_a_wake_log_unset_during_a_run_stops_at_once(monkeypatch, core):
    """``_WAKE_LOG`` set to None as its 25th record is made: no record after it, in the core's run
    (which holds the switch while sim.network's globals stand) as in the Python lines' (which read it every
    wake-up)."""
    with monkeypatch.context() as m:
        m.setattr(network, "_WAKE_CORE", core)
        log = _flipping(m, 25, lambda: setattr(network, "_WAKE_LOG", None))
        simulate(*RING, engine="message")
    assert len(log) == 25


def test_a_switch_flipped_during_a_run_is_seen_at_the_next_wake_up(monkeypatch):
    """``_MSG_CORE`` turned off between two wake-ups of one ``net_run`` call: the arrivals after it are the
    Python lines' (``Network._finish_few`` / ``_finish`` called, none before it); ``sim.rates``' limits
    changed then too (``_INCREMENTAL_MIN``, ``_HIT_CORE``) -- and the results are the same as with none
    flipped (both lines give the same results)."""
    calls: list[int] = []
    few, many = network.Network._finish_few, network.Network._finish
    monkeypatch.setattr(network.Network, "_finish_few", lambda self, *a: (calls.append(len(log)), few(self, *a))[1])
    monkeypatch.setattr(network.Network, "_finish", lambda self, *a: (calls.append(len(log)), many(self, *a))[1])

    def flip() -> None:
        network._MSG_CORE = False
        rates._INCREMENTAL_MIN = 10**9
        rates._HIT_CORE = False

    ref = simulate(*RING, engine="message")
    assert calls == []  # (every arrival in C)
    with monkeypatch.context() as m:
        m.setattr(network, "_MSG_CORE", True)
        m.setattr(rates, "_INCREMENTAL_MIN", rates._INCREMENTAL_MIN)
        m.setattr(rates, "_HIT_CORE", True)
        log = _flipping(m, 40, flip)
        flipped = simulate(*RING, engine="message")
    assert calls and min(calls) >= 40  # (the first wake-up after the flip on)
    _same(flipped, ref)
    assert (repr(flipped.time_s), flipped.events) == (repr(ref.time_s), ref.events)


def test_a_resume_held_patched_in_is_called(monkeypatch):
    """``Network._resume_held`` patched on the class, or on one network: ``net_run`` calls it (its lines in C
    are only for the method sim.network defines) -- with the same results."""
    ref = simulate(*RING, engine="message")
    seen: list[int] = []
    resume = network.Network._resume_held

    def spying(self: Any, held: list[Any], now: float) -> None:
        seen.append(len(held))
        resume(self, held, now)

    with monkeypatch.context() as m:
        m.setattr(network.Network, "_resume_held", spying)
        patched = simulate(*RING, engine="message")
    assert len(seen) > 100 and min(seen) > 0
    _same(patched, ref)
    assert (repr(patched.time_s), patched.events) == (repr(ref.time_s), ref.events)

    mine: list[int] = []
    init = network.Network.__init__

    def own(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        self._resume_held = lambda held, now: (mine.append(len(held)), resume(self, held, now))[1]

    with monkeypatch.context() as m:
        m.setattr(network.Network, "__init__", own)
        one = simulate(*RING, engine="message")
    assert mine == seen
    assert (repr(one.time_s), one.events) == (repr(ref.time_s), ref.events)


def _ring_looked_at(monkeypatch, core: bool, look: Any) -> None:
    """The message-level ring (``RING``) with the wake-up in C or not (``core``), ``look(net)`` called as every
    network's after-wake hook."""
    init = network.Network.__init__

    def hooked(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        self.after_wake.append(lambda: look(self))

    with monkeypatch.context() as m:
        m.setattr(network, "_WAKE_CORE", core)
        m.setattr(network.Network, "__init__", hooked)
        simulate(*RING, engine="message")


def test_held_lists_kept_by_a_hook_stay_as_they_were(monkeypatch):
    """An after-wake hook that keeps every wake-up's held list: each is a list of its own, holding the events
    that wake-up held (net_run reuses a held list only where no one else holds it) -- the same lists as the
    Python lines'."""
    shapes = []
    for core in (True, False):
        kept: list[Any] = []
        _ring_looked_at(monkeypatch, core, lambda net: kept.append(net._held))
        lists = [h for h in kept if h is not None]
        assert len({id(h) for h in lists}) == len(lists) > 100
        shapes.append([len(h) for h in lists])
    assert shapes[0] == shapes[1] and sum(shapes[0]) > 0


def test_the_events_the_core_makes_are_as_new_ones(monkeypatch):
    """The events the compiled core makes on the message level -- a rank's, held to the end of its wake-up, and the
    wake-up's own, queued -- have what a new SimPy event marked ok has, as the Python lines make them: ``env``,
    ``callbacks``, ``_ok``, ``_value`` in that order, with the same values, whether the core made one anew or took a
    spare one (sim/_ratecore.c, ev_make); an after-wake hook looks at every wake-up's."""
    looks = []
    for core in (True, False):
        seen: list[Any] = []

        def look(net: Any) -> None:
            for e in net._held or []:
                seen.append((list(vars(e)), e.env is net.env, [type(c).__name__ for c in e.callbacks], e._ok))
                seen.append(e._value if e._value is None else type(e._value).__name__)
            w = net._wake_event
            if w is not None:
                cbs = [getattr(c, "__func__", c) is network.Network._on_timeout for c in w.callbacks]
                seen.append((list(vars(w)), w.env is net.env, cbs, w._ok, w._value, type(w).__name__))

        _ring_looked_at(monkeypatch, core, look)
        looks.append(seen)
    assert looks[0] == looks[1] and len(looks[0]) > 200
    assert {tuple(x[0]) for x in looks[0] if isinstance(x, tuple)} == {("env", "callbacks", "_ok", "_value")}


def test_a_resume_held_patched_in_during_a_run_is_called_from_the_next_wake_up_on(monkeypatch):
    """``Network._resume_held`` patched between two wake-ups of one ``net_run`` call: every wake-up after it that
    holds events calls it -- the same wake-ups as with it patched from the start."""
    resume = network.Network._resume_held
    at: list[int] = []

    def spying(self: Any, held: list[Any], now: float) -> None:
        at.append(len(network._WAKE_LOG))  # (the wake-ups logged before this one)
        resume(self, held, now)

    with monkeypatch.context() as m:
        m.setattr(network.Network, "_resume_held", spying)
        _flipping(m, 10**9, lambda: None)
        whole = simulate(*RING, engine="message")
    every = list(at)
    for flip in range(30, 38):  # (a patch made after each of several wake-ups)
        at.clear()
        with monkeypatch.context() as m:
            _flipping(m, flip, lambda: setattr(network.Network, "_resume_held", spying))
            try:
                late = simulate(*RING, engine="message")
            finally:
                network.Network._resume_held = resume
        assert at == [k for k in every if k >= flip] and len(at) > 50
        assert (repr(late.time_s), late.events) == (repr(whole.time_s), whole.events)
