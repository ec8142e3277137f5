"""The network's state in C (``sim._ratecore``) against the Python lines it stands for.

* ``Dues``: the due-time heap (distinct due times in heapq's layout, the slots due at each) held in C arrays
  once the private lane closes (``sim.network._DUE_CORE``) -- ``drain_due``, ``next_due``, ``set_due`` and
  ``rebuild`` leave the same heap, the same buckets in the same order and the same per-slot arrays as the
  Python list and dict (:class:`sim.network._PyDue`, :meth:`Network._rebuild_due`).
* ``NetBase`` / ``RatesBase``: the attributes the wake-up reads and writes every time held in C fields,
  read and written by Python as ever (and collected as ever).
* ``Gone``: an ended batch's (pids, rates) held in C, read by Python as the two arrays.
* Rates.compute's outcomes in C (the user counts moved or taken anew, the sets rebuilt, the loads taken
  anew, a solve of all the flows with its cache entry, a cache hit's rates): whole runs, wake-up by
  wake-up (``sim.network._WAKE_LOG``), the same as the Python lines, and the Python lines not called.

(Skipped where the extension is not built, or COLLSIM_PURE=1: the Python lines are then the only ones.)
"""

from __future__ import annotations

import gc
import heapq
import random
import weakref
from typing import Any

import numpy as np
import pytest

import sim.network as network
import sim.rates as rates
from sim import simulate
from sim.cluster import Cluster
from sim.topology import dgx

from .test_engine_core import _state
from .test_message_engine import _same
from .test_wake_core import DATAFLOW, _run

C = rates._CORE
pytestmark = pytest.mark.skipif(C is None, reason="the compiled core is not built (or COLLSIM_PURE=1)")
PY = network._PyDue


def _py_rebuild(due: np.ndarray, active: np.ndarray) -> tuple[list[float], dict[float, list[int]]]:
    """:meth:`Network._rebuild_due`'s lines."""
    due_at: dict[float, list[int]] = {}
    for when, slot in zip(due[active].tolist(), active.tolist(), strict=True):
        due_at.setdefault(when, []).append(slot)
    heap = list(due_at)
    heapq.heapify(heap)
    return heap, due_at


@pytest.mark.parametrize("seed", range(40))
def test_dues_is_the_python_heap(seed):
    """Random runs of set_due / drain_due / next_due / rebuild on a Python heap and dict and on a ``Dues``
    made from them: the same results, per-slot arrays, heap (heapq's layout) and buckets (the dict's
    order), with due times shared by several slots, stale entries, rates of 0 (due at inf) and repeats."""
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    ref = _state(rng, n)
    got = {k: (v.copy() if isinstance(v, np.ndarray) else None) for k, v in ref.items()}
    dues = C.Dues(ref["heap"], ref["due_at"])
    for step in range(60):
        op = rng.random()
        args_ref = [ref[k] for k in ("rate", "left", "t_set", "due")]
        args_got = [got[k] for k in ("rate", "left", "t_set", "due")]
        if op < 0.4:
            slots = rng.sample(range(n), rng.randint(0, n))
            new = [rng.choice([0.0, 1e9, 2e9, rng.uniform(1e8, 1e10)]) for _ in slots]
            now = 1e-3 + step * 1e-5
            want = PY.set_due(slots, new, now, *args_ref, ref["heap"], ref["due_at"])
            assert C.set_due(list(slots), list(new), now, *args_got, dues, None) == want
        elif op < 0.7:
            cut = rng.uniform(1e-3, 2.2e-3)
            want = PY.drain_due(ref["heap"], ref["due_at"], cut, ref["active"], ref["due"])
            assert C.drain_due(dues, None, cut, got["active"], got["due"]) == (list(want[0]), want[1])
        elif op < 0.9:
            want = PY.next_due(ref["heap"], ref["due_at"], ref["active"], ref["due"])
            assert C.next_due(dues, None, got["active"], got["due"]) == want
        else:
            active = np.flatnonzero(ref["active"])
            ref["heap"], ref["due_at"] = _py_rebuild(ref["due"], active)
            assert dues.rebuild(got["due"], active) == len(active)
        assert list(dues) == ref["heap"], step
        assert list(dues.buckets().items()) == list(ref["due_at"].items()), step
        for k in ("rate", "left", "t_set", "due", "active"):
            assert np.array_equal(got[k], ref[k]), (step, k)
    assert len(dues) == len(ref["heap"])


def test_dues_refuses_what_is_no_due_heap():
    with pytest.raises(ValueError):
        C.Dues([1.0, 2.0], {1.0: [0]})  # a heap's time without its slots
    with pytest.raises(TypeError):
        C.Dues([1.0], {1.0: (0,)})
    with pytest.raises(IndexError):
        C.drain_due(C.Dues([1.0], {1.0: [5]}), None, 2.0, np.ones(3, dtype=bool), np.ones(3))
    with pytest.raises(IndexError):
        C.Dues()[0]


def _net(**kw: Any) -> network.Network:
    import simpy

    return network.Network(simpy.Environment(), Cluster("star:hosts=4,bandwidth=1GB/s,latency=1us"), **kw)


def test_the_network_holds_its_dues_in_c_once_the_lane_closes(monkeypatch):
    """The lane keeps its Python list and dict; closing it moves them into a ``Dues``, the same times and
    slots; with ``_DUE_CORE`` off (and in the Python lines) they stay a list and a dict."""
    net = _net()
    assert net._lane and type(net._heap) is list
    net.send(0, 1, 1e6)
    net.send(2, 3, 1e6)
    heap, due_at = list(net._heap), dict(net._due_at)
    assert heap
    net._end_lane()
    assert isinstance(net._heap, C.Dues) and net._due_at is net._heap
    assert list(net._heap) == heap and net._heap.buckets() == due_at
    assert isinstance(_net(check=True)._heap, C.Dues)  # (no lane: held from the start)
    monkeypatch.setattr(network, "_DUE_CORE", False)
    net = _net()
    net._end_lane()
    assert type(net._heap) is list and type(net._due_at) is dict


def test_the_state_fields_are_attributes():
    """The fields held in C read and write as attributes: any object, deleted, absent from ``vars``, and
    a cycle through them collected."""
    net = _net()
    assert isinstance(net, C.NetBase) and isinstance(net.rates, C.RatesBase)
    for name in ("_t_last", "_nactive", "flows", "_pending", "cluster"):
        assert name not in vars(net)
    for obj, name in ((net, "_nactive"), (net, "flows"), (net.rates, "_key"), (net.rates, "solves")):
        marker = object()
        setattr(obj, name, marker)
        assert getattr(obj, name) is marker
        delattr(obj, name)
        with pytest.raises(AttributeError):
            getattr(obj, name)
    for base, owner in ((C.NetBase, lambda n: n), (C.RatesBase, lambda n: n.rates)):
        fields = [k for k, v in vars(base).items() if type(v).__name__ == "member_descriptor"]
        assert len(fields) > 20
        for name in fields:  # a cycle through each field: collected once nothing else holds it
            net = _net()
            setattr(owner(net), name, [net])
            ref = weakref.ref(net)
            del net
            gc.collect()
            assert ref() is None, name


def test_gone_reads_as_its_two_arrays():
    """An ended batch held in C unpacks as (pids, rates): the same numbers, int64 and float64, each array
    made once; the core reads it as it reads the tuple."""
    pids, rts = np.array([4, 1, 4, 0], dtype=np.int64), np.array([1.5, 2.0, 0.25, 3.0])
    g = C.Gone(pids, rts)
    a, b = g
    assert a.dtype == np.int64 and b.dtype == np.float64
    assert np.array_equal(a, pids) and np.array_equal(b, rts)
    assert g[0] is a and len(g) == 2
    with pytest.raises(ValueError):
        C.Gone(pids, rts[:2])
    cl = Cluster("dgx:hosts=2,gpus_per_host=4")
    for s, d in ((0, 5), (1, 6), (2, 7), (3, 4), (4, 0)):
        cl.path_id(s, d)
    capacity = cl.capacity
    cores = [C.Core(cl, capacity, *rates._thresholds(capacity)) for _ in range(2)]
    for core in cores:
        core.reset(None)
        core.enter(np.arange(5, dtype=np.int64), np.arange(5, dtype=np.int64))
        core.set_load(np.full(cl.num_arcs, 1e9))
    seeds = [core.unload(gone) for core, gone in zip(cores, ([g], [(pids, rts)]), strict=True)]
    assert seeds[0] == seeds[1]
    assert cores[0].solve_component(np.arange(5, dtype=np.int64), np.full(5, np.inf), [0], [g], 10, 48, 1e-12) == cores[
        1
    ].solve_component(np.arange(5, dtype=np.int64), np.full(5, np.inf), [0], [(pids, rts)], 10, 48, 1e-12)


# whole runs: the compiled outcomes of Rates.compute held to the Python lines, and taken


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the Python lines of Rates.compute's outcomes that the core now takes run."""
    calls: dict[str, int] = {}
    for name in ("_count_users", "_rebuild", "_reload", "_solve_all", "_use"):
        orig = getattr(rates.Rates, name)

        def counting(self: Any, *a: Any, _orig: Any = orig, _name: str = name, **k: Any) -> Any:
            calls[_name] = calls.get(_name, 0) + 1
            return _orig(self, *a, **k)

        monkeypatch.setattr(rates.Rates, name, counting)
    return calls


CASES = [
    *DATAFLOW[:2],
    (dgx(hosts=8, gpus_per_host=8, hosts_per_leaf=2, spines=1), "double-binary-tree:chunks=16"),
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "ring:order=rank"),
    (dgx(hosts=4, gpus_per_host=8, hosts_per_leaf=1, spines=1), "halving-doubling"),
]


@pytest.mark.parametrize("graph, algorithm", CASES)
@pytest.mark.parametrize("engine", ["fast", "message"])
def test_the_compiled_outcomes_are_the_python_lines(monkeypatch, graph, algorithm, engine):
    """Congested runs whose computations recount, rebuild, reload and solve all the flows: every wake-up
    (time, next wake-up, flows draining, due entries, solves, cache hits, slots) and every result the
    Python lines', and -- for the dataflows' fast path, whose every wake-up is net_run's -- those lines
    (run by the reference) not run by the core's wake-up."""
    calls = _counted(monkeypatch)
    got, woken = _run(monkeypatch, True, graph, "allreduce", algorithm, 2**24 + 5, engine=engine, gamma=0.0)
    core_calls = dict(calls)
    calls.clear()
    ref, ref_woken = _run(monkeypatch, False, graph, "allreduce", algorithm, 2**24 + 5, engine=engine, gamma=0.0)
    assert woken == ref_woken
    _same(got, ref)
    assert (repr(got.time_s), got.events) == (repr(ref.time_s), ref.events)
    if algorithm.startswith("double-binary-tree") and engine == "fast":  # (the whole wake-up in C: net_run)
        assert calls.get("_rebuild", 0) > 0 and calls.get("_solve_all", 0) > 0
        for name, n in calls.items():  # (a few left to Python: before the core is made, as the lane closes)
            assert core_calls.get(name, 0) <= max(8, n // 4), (name, core_calls, calls)


def test_the_due_heap_in_c_alone_is_the_python_lists(monkeypatch):
    """Everything compiled but the due heap (``_DUE_CORE`` off: the list and dict), against everything
    compiled: the same wake-ups and results."""
    graph, algorithm = DATAFLOW[0]
    held, woken = _run(monkeypatch, True, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    with monkeypatch.context() as m:
        m.setattr(network, "_DUE_CORE", False)
        listed, listed_woken = _run(monkeypatch, True, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    assert woken == listed_woken
    assert (repr(held.time_s), held.events) == (repr(listed.time_s), listed.events)


@pytest.mark.parametrize("spread", [False, True])
def test_the_dbt_case_of_the_benchmark_is_the_python_lines(monkeypatch, spread):
    """``benchmarks/scale.py``'s dbt64-512 at a smaller size (16 hosts of 8, 16 chunks), and with changes
    spread along full links from the first computation (``rates._SPREAD``: the loads taken anew after every
    solve of all): the compiled state and the Python lines give the same wake-ups and results, and the
    loads are taken anew in C."""
    monkeypatch.setattr(rates, "_SPREAD", spread)
    calls = _counted(monkeypatch)
    args = (Cluster("dgx:hosts=16"), "allreduce", "double-binary-tree:chunks=16", 2**26)
    got, woken = _run(monkeypatch, True, *args, engine="fast")
    core_reloads = calls.get("_reload", 0)
    calls.clear()
    ref, ref_woken = _run(monkeypatch, False, *args, engine="fast")
    assert woken == ref_woken and len(woken) > 100
    _same(got, ref)
    assert (repr(got.time_s), got.events, got.engine) == (repr(ref.time_s), ref.events, "fast:dataflow")
    if spread:  # (Python's reloads left: the spill that turns whole components into spreading ones)
        assert core_reloads <= 4 and calls.get("_reload", 0) > 20
    message = simulate(*args, engine="message")
    assert abs(got.time_s - message.time_s) <= 1e-9 * message.time_s
