"""tree1k8: an up-down router's bulk routes (the compiled ``updown_routes``) take the destinations regrouped by
the node below the top level a climb by each one's last arc up reaches, and where a destination meets the same
node alone at the same distance as the one before, the steps above it as that one left them (no replay); the
solve of every flow calls the max-min rounds without looking the crossings over (``_maxmin_core_sorted``: the
caller made them sorted); ``DfDone`` takes the settle's arrays (and ex.f_msg, ex._out) as it opened them while
its memo of the executor's dicts stands, not opened anew per completion; a partial solve's lists and arrays are
kept from call to call. Every route is still :meth:`Router.route`'s, in any pair order; the rounds give the same
rates to the bit; congested runs are as before, and where the executor's arrays are replaced during a run, the
new ones are the ones written."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

import sim.dataflow as dataflow
import sim.network as network
import sim.routing as routing
from sim.cluster import Cluster
from sim.simulate import simulate

from .test_message_engine import _same
from .test_routing_bulk import _check
from .test_tree1k7 import _three_levels
from .test_wake_core import DATAFLOW, _run

pytestmark = pytest.mark.skipif(routing._CORE is None, reason="the compiled core is not built (or COLLSIM_PURE=1)")


def _heap_pairs(gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A binary heap tree's pairs over ``gpus``, up and down (the tree algorithm's)."""
    kid = np.arange(1, len(gpus))
    up = (kid - 1) // 2
    return gpus[np.concatenate([kid, up])], gpus[np.concatenate([up, kid])]


@pytest.mark.parametrize("spec", ["dgx:hosts=16,ecmp=hash", "dgx:hosts=8,ecmp=hash,hosts_per_leaf=2", "dgx:hosts=12"])
def test_dgx_destinations_regrouped(spec):
    """A DGX fabric's tree pairs (a destination's leaf changes from one to the next: regrouped), every pair of
    GPUs, and the same shuffled: each route the router's, twice in a row (the second call its own)."""
    cl = Cluster(spec)
    gpus = cl.rank_node[: cl.size].astype(np.int64)
    a, b = _heap_pairs(gpus)
    assert _check(cl.router, a, b) == len(a)
    a, b = np.meshgrid(gpus, gpus, indexing="ij")
    a, b = a.ravel(), b.ravel()
    for order in (np.arange(len(a)), np.random.default_rng(3).permutation(len(a))):
        for _ in range(2):
            assert _check(cl.router, a[order], b[order]) == a.size


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_three_levels_shuffled(seed, weighted):
    """Three-level trees (several arcs down within a replayed block; weighted: the distances of the node left
    alone differ between its destinations), every pair of nodes shuffled, then the GPUs' pairs: the router's."""
    cl = Cluster(_three_levels(seed, weighted))
    n = len(cl.nodes)
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    order = np.random.default_rng(seed).permutation(a.size)
    assert _check(cl.router, a.ravel()[order], b.ravel()[order]) > 0
    gpus = cl.rank_node[: cl.size].astype(np.int64)
    a, b = np.meshgrid(gpus, gpus, indexing="ij")
    assert _check(cl.router, a.ravel(), b.ravel()) == a.size


def test_order_out_of_range_still_raises():
    """An order naming a pair that is not there: the pairs are not regrouped, the loop raises as before."""
    cl = Cluster("dgx:hosts=2")
    r = cl.router
    a = r.arrays
    gpus = cl.rank_node[: cl.size].astype(np.int64)
    srcs, dsts = np.ascontiguousarray(gpus[:4]), np.ascontiguousarray(gpus[4:8])
    rows = np.full((4, 8), -1, dtype=np.int64)
    status = np.zeros(4, dtype=np.int64)
    args = [a[k] for k in ("out_ptr", "out_v", "out_arc")]
    rest = [a[k] for k in ("level", "up_ptr", "up_v", "up_arc", "above_ptr", "above_u", "above_arc")]
    with pytest.raises(IndexError):
        routing._CORE.updown_routes(
            srcs,
            dsts,
            np.array([0, 1, 2, 9], dtype=np.int64),
            *args,
            r._endpoint_only_array,
            *rest,
            r._arc_w_array,
            r._dest_key_array,
            r._top,
            r._unit,
            rows.reshape(-1),
            status,
        )


def _capsule(name: str) -> ctypes._CFuncPtr:
    """sim._classcore's capsule ``name`` as a C function of maxmin_core's arguments."""
    import sim._classcore as cc

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    p = ctypes.POINTER
    kind = ctypes.CFUNCTYPE(
        ctypes.c_int,
        p(ctypes.c_int64),
        p(ctypes.c_int64),
        ctypes.c_ssize_t,
        p(ctypes.c_double),
        ctypes.c_ssize_t,
        p(ctypes.c_double),
        p(ctypes.c_double),
        ctypes.c_ssize_t,
        p(ctypes.c_double),
    )
    return kind(get(getattr(cc, name), f"sim._classcore.{name}".encode()))


def _solve(fn: ctypes._CFuncPtr, flow, arc, cap, nflows, bound) -> tuple[int, bytes]:
    p = ctypes.POINTER
    out = np.full(nflows, -7.0)
    got = fn(
        flow.ctypes.data_as(p(ctypes.c_int64)),
        arc.ctypes.data_as(p(ctypes.c_int64)),
        len(flow),
        cap.ctypes.data_as(p(ctypes.c_double)),
        len(cap),
        None,
        out.ctypes.data_as(p(ctypes.c_double)),
        nflows,
        None if bound is None else bound.ctypes.data_as(p(ctypes.c_double)),
    )
    return got, out.tobytes()


@pytest.mark.parametrize("seed", range(12))
def test_sorted_rounds_are_the_rounds(seed):
    """maxmin_core_sorted on crossings sorted by flow (every flow there, every arc in range): solved, the rates
    maxmin_core's to the bit, with bounds and without, capacities with ties and infinities."""
    rng = np.random.default_rng(seed)
    nflows, narcs = int(rng.integers(1, 60)), int(rng.integers(1, 80))
    lens = rng.integers(1, 7, nflows)
    flow = np.repeat(np.arange(nflows), lens).astype(np.int64)
    arc = rng.integers(0, narcs, len(flow)).astype(np.int64)
    cap = rng.choice([1e9, 2e9, 2.5e9, 1e10, np.inf], narcs)
    for bound in (None, rng.choice([3e8, 1e9, np.inf], nflows)):
        want = _solve(_capsule("_maxmin_core"), flow, arc, cap, nflows, bound)
        got = _solve(_capsule("_maxmin_core_sorted"), flow, arc, cap, nflows, bound)
        assert want[0] == 1
        assert got == want


@pytest.mark.parametrize(
    ("algorithm", "engine", "want"),
    [
        ("tree", "fast", (0.022622717546666664, 129, 254)),
        ("tree", "message", (0.022622717546666664, 567, 254)),
        ("tree:chunks=4", "fast", (0.012571887946666664, 646, 1016)),
        ("tree:chunks=4", "message", (0.012571887946666664, 1646, 1016)),
        ("double-binary-tree:chunks=4", "fast", (0.005732412088888886, 212, 2032)),
        ("double-binary-tree:chunks=4", "message", (0.005732412088888886, 275, 2032)),
    ],
)
def test_pinned_runs(algorithm, engine, want):
    """Congested runs on a DGX fabric with hashed ECMP: main's time, events and flows (f780ad3)."""
    r = simulate("dgx:hosts=16,ecmp=hash", "allreduce", algorithm, "64MiB", engine=engine)
    assert (repr(r.time_s), r.events, r.flows) == (repr(want[0]), want[1], want[2])


@pytest.mark.parametrize("replace", ["st", "ex", "both"])
@pytest.mark.parametrize("graph, algorithm", DATAFLOW[:2] + DATAFLOW[3:])
def test_dfdone_follows_arrays_replaced(monkeypatch, graph, algorithm, replace):
    """The executor's arrays replaced by copies after a few solves (its state's counters and flags, ``st``; its
    tables, stamps, out and message per slot, ``ex``; or both): ``DfDone`` reads and writes the new ones from
    then on (the arrays it kept are dropped with its memo), the run the Python lines' to the bit."""
    ref, ref_woken = _run(monkeypatch, False, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    executors: list[Any] = []
    solves: list[int] = []
    bind, solve = dataflow.DataflowExecutor._bind_core, network.Network._solve

    def bound(self: Any) -> Any:
        executors.append(self)
        return bind(self)

    def solving(self: Any) -> None:
        solves.append(len(solves))
        if len(solves) in (6, 11):  # (after the first completions, and again)
            ex = executors[0]
            if replace in ("st", "both"):
                st = ex.st
                st.dep_left, st.gate_left, st.arrived = st.dep_left.copy(), st.gate_left.copy(), st.arrived.copy()
            if replace in ("ex", "both"):
                ex._tables = tuple(t.copy() for t in ex._tables)
                ex._stamp, ex._out, ex.f_msg = ex._stamp.copy(), ex._out.copy(), ex.f_msg.copy()
        solve(self)

    with monkeypatch.context() as m:
        m.setattr(dataflow.DataflowExecutor, "_bind_core", bound)
        m.setattr(network.Network, "_solve", solving)
        got, woken = _run(m, True, graph, "allreduce", algorithm, 2**22, engine="fast", gamma=0.0)
    assert isinstance(executors[0].net._owners[executors[0].owner], routing._CORE.DfDone)  # (the core's completions)
    assert len(solves) > 11
    _same(got, ref)
    assert (repr(got.time_s), got.events) == (repr(ref.time_s), ref.events)
    assert woken == ref_woken
