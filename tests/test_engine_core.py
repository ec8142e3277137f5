"""The engine's loops in the compiled core (sim/_ratecore.c) against their Python reference: the network's
due-time heap (``drain_due``, ``next_due``, ``set_due`` against sim.network._PyDue) and the dataflow's
dependency count-down (``release`` against DataflowExecutor._release's Python loop, ``settle`` against
_on_flows_done's with no reduction time, ``start_flows``, ``finish_flows`` and ``launch_rows`` against Network._start's, _finish's and launch's lines)
leave the same lists,
dicts and arrays on random inputs, and whole runs give the same times to the bit with and without them.
(Skipped where the extension is not built: the Python loops are then the only ones.)"""

from __future__ import annotations

import copy
import heapq
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import sim.dataflow as dataflow
import sim.network as network
import sim.rates as rates
from sim.errors import RunError
from sim.simulate import simulate
from sim.topology import dgx

from .test_engine import run_flows
from .test_fastpath import perturb
from .test_ratecore import DGX, OVERSUBSCRIBED, _flows

C = rates._ratecore
core = pytest.mark.skipif(C is None, reason="sim._ratecore is not built (no C compiler)")
PY = network._PyDue


def _state(rng: random.Random, n: int) -> dict:
    """Per-slot arrays and a due-time heap of ``n`` slots, about half of them draining, some stale entries."""
    state = {
        "rate": np.array([rng.choice([0.0, 1e9, 2.5e9, rng.uniform(1e8, 1e10)]) for _ in range(n)]),
        "left": np.array([rng.uniform(0, 1e6) for _ in range(n)]),
        "t_set": np.array([rng.uniform(0, 1e-3) for _ in range(n)]),
        "due": np.full(n, np.inf),
        "active": np.array([rng.random() < 0.6 for _ in range(n)]),
        "heap": [],
        "due_at": {},
    }
    times = [rng.uniform(1e-3, 2e-3) for _ in range(max(1, n // 3))]  # slots sharing due times
    for slot in range(n):
        when = rng.choice(times)
        if rng.random() < 0.8:
            state["due"][slot] = when
        elif rng.random() < 0.5:
            continue
        bucket = state["due_at"].setdefault(when, [])
        if not bucket:
            heapq.heappush(state["heap"], when)
        bucket.append(slot)  # (a slot whose due time differs is a stale entry)
    return state


def _apply(impl, state: dict, ops: list[tuple]) -> list:
    out = []
    for op in ops:
        if op[0] == "set":
            _, slots, new, now = op
            args = (state["rate"], state["left"], state["t_set"], state["due"], state["heap"], state["due_at"])
            out.append(impl.set_due(list(slots), list(new), now, *args))
        elif op[0] == "drain":
            out.append(impl.drain_due(state["heap"], state["due_at"], op[1], state["active"], state["due"]))
        else:
            out.append(impl.next_due(state["heap"], state["due_at"], state["active"], state["due"]))
    return out


@core
@pytest.mark.parametrize("seed", range(20))
def test_the_cores_due_time_heap_is_the_python_one(seed):
    rng = random.Random(seed)
    n = rng.choice([5, 40, 300])
    state = _state(rng, n)
    ops: list[tuple] = []
    now = 1e-3
    for _ in range(60):
        kind = rng.random()
        if kind < 0.45:
            slots = rng.sample(range(n), rng.randint(0, min(n, 30)))
            new = [rng.choice([0.0, 1e9, 2.5e9, rng.uniform(1e8, 1e10)]) for _ in slots]
            ops.append(("set", slots, new, now))
        elif kind < 0.8:
            now += rng.uniform(0, 3e-4)
            ops.append(("drain", now * (1 + 1e-12) + 1e-300))
        else:
            ops.append(("next",))
    mine, theirs = copy.deepcopy(state), copy.deepcopy(state)
    assert _apply(C, mine, ops) == _apply(PY, theirs, ops)
    assert mine["heap"] == theirs["heap"]  # heapq's layout, entry for entry
    assert mine["due_at"] == theirs["due_at"] and list(mine["due_at"]) == list(theirs["due_at"])
    for name in ("rate", "left", "t_set", "due", "active"):
        assert mine[name].tobytes() == theirs[name].tobytes(), name


@core
def test_the_core_refuses_what_the_heap_cannot_hold():
    state = _state(random.Random(1), 10)
    args = (state["rate"], state["left"], state["t_set"], state["due"], state["heap"], state["due_at"])
    with pytest.raises(IndexError):
        C.set_due([10], [1e9], 1e-3, *args)
    with pytest.raises(TypeError):
        C.set_due([1], [1e9], 1e-3, *args[:4], (), state["due_at"])
    with pytest.raises(TypeError):
        C.drain_due(state["heap"], state["due_at"], 1.0, state["active"].astype(float), state["due"])
    readonly = state["active"].copy()
    readonly.flags.writeable = False
    with pytest.raises((BufferError, ValueError, TypeError)):
        C.drain_due(state["heap"], state["due_at"], 1.0, readonly, state["due"])


def _release_py(ptr, targets, ms, counter):
    """DataflowExecutor._release's Python path (the core off)."""
    ex = dataflow.DataflowExecutor.__new__(dataflow.DataflowExecutor)
    ex._stamp = np.zeros(len(counter), dtype=np.int64)
    return dataflow.DataflowExecutor._release(ex, (ptr, (targets,)), ms, counter)


@core
@pytest.mark.parametrize("seed", range(10))
def test_the_cores_count_down_is_the_dataflows(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    owner = rng.integers(0, n, size=int(rng.integers(0, 4 * n)))  # message -> the messages waiting on it
    waiting = rng.integers(0, n, size=len(owner))
    ptr, (targets,) = dataflow._csr(owner, [waiting], n)
    counter = np.bincount(waiting, minlength=n).astype(np.int64)
    mine = counter.copy()
    monkeypatch.setattr(dataflow, "_CORE", None)
    for ms in np.array_split(rng.permutation(n), int(rng.integers(1, 12))):
        want = _release_py(ptr, targets, ms.astype(np.int64), counter)
        got = np.array(C.release(ptr, targets, ms.astype(np.int64), mine), dtype=np.int64)
        assert got.tolist() == want.tolist()
        assert mine.tolist() == counter.tolist()
    assert not mine.any()


def _random_flow(rng: np.random.Generator) -> dataflow.Dataflow:
    """A dataflow of random messages whose start and gate edges (both kinds) name random messages."""
    n = int(rng.integers(5, 300))
    ints = np.zeros(n, dtype=np.int64)

    def edges() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = int(rng.integers(0, 3 * n))
        kind = np.sort(rng.integers(0, 2, size=k)).astype(np.int8)
        return rng.integers(0, n, size=k), rng.integers(0, n, size=k), kind

    reduce = np.where(rng.random(n) < 0.5, 1.0, 0.0)
    return dataflow.Dataflow(n, ints, ints, np.ones(n), reduce, ints, reduce > 0, ints, ints + 1, edges(), edges())


def _settle_py(flow, st, stamp, ms):
    """DataflowExecutor._on_flows_done's Python path (gamma 0): the messages it starts, in order."""
    ex = dataflow.DataflowExecutor.__new__(dataflow.DataflowExecutor)
    ex.flow, ex.st, ex._stamp, ex._fused = flow, st, stamp, False
    ex.f_msg = np.arange(len(flow), dtype=np.int64)
    ex.done = type("Done", (), {"triggered": True})()
    sent = []
    ex._send = lambda started: sent.append(np.asarray(started, dtype=np.int64).copy())
    ex._on_flows_done(ms, 0.0)
    return np.concatenate(sent) if sent else np.zeros(0, dtype=np.int64)


@core
@pytest.mark.parametrize("seed", range(12))
def test_the_cores_settle_is_the_dataflows_python_loop(seed, monkeypatch):
    """``settle`` (an instant's arrivals, count-downs and holds in one pass) against _on_flows_done's
    Python loop on random dependency tables, batches of a few (sorted holds) and many (_distinct's)."""
    rng = np.random.default_rng(seed)
    flow = _random_flow(rng)
    n = len(flow)
    scale = np.ones(1)
    st_py, st_c = dataflow._State(flow, 0.0, scale), dataflow._State(flow, 0.0, scale)
    stamp_py, stamp_c = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    tables = tuple(
        a for t in (flow.on_arrived, flow.gate_on_arrived, flow.on_held, flow.gate_on_held) for a in (t[0], *t[1])
    )
    out = np.empty(n, dtype=np.int64)
    monkeypatch.setattr(dataflow, "_CORE", None)
    for ms in np.array_split(rng.permutation(n), int(rng.integers(1, 10))):
        want = _settle_py(flow, st_py, stamp_py, ms.astype(np.int64))
        started, held = C.settle(tables, ms.astype(np.int64), st_c.dep_left, st_c.gate_left, st_c.arrived, stamp_c, out)
        assert out[:started].tolist() == want.tolist()
        assert held == st_py.held - st_c.held
        st_c.held += held
        for name in ("dep_left", "gate_left", "arrived"):
            assert getattr(st_c, name).tolist() == getattr(st_py, name).tolist(), name
        # (the stamps are scratch: the Python count-down writes its own there too)
    assert st_c.held == st_py.held > 0


@core
@pytest.mark.parametrize("seed", range(6))
def test_the_cores_start_is_the_networks(seed):
    """``start_flows`` marks a batch started as Network._start's lines do (active, rate 0, set now, due
    never), and writes nothing where one of the batch is instant (no bytes left, a route of no links)."""
    rng = np.random.default_rng(seed)
    n, paths = 200, 30
    length = rng.integers(0, 4, size=paths)
    state = {
        "remaining": np.where(rng.random(n) < 0.05, 0.0, rng.random(n) * 1e6),
        "path": rng.integers(0, paths, size=n),
        "is_active": rng.random(n) < 0.3,
        "rate": rng.random(n),
        "t_set": rng.random(n),
        "due": rng.random(n),
    }
    for _ in range(20):
        slots = rng.choice(n, size=int(rng.integers(2, 40)), replace=False)
        mine = {k: v.copy() for k, v in state.items()}
        started = C.start_flows(
            slots,
            mine["remaining"],
            mine["path"],
            length,
            mine["is_active"],
            mine["rate"],
            mine["t_set"],
            mine["due"],
            0.5,
        )
        instant = (state["remaining"][slots] <= 0) | (length[state["path"][slots]] == 0)
        assert started == (not instant.any())
        if started:
            state["is_active"][slots] = True
            state["rate"][slots] = 0.0
            state["t_set"][slots] = 0.5
            state["due"][slots] = np.inf
        for k, v in state.items():
            assert mine[k].tolist() == v.tolist(), k


@core
@pytest.mark.parametrize("seed", range(6))
def test_the_cores_finish_is_the_networks(seed):
    """``finish_flows`` books a batch's bytes on its paths (repeated paths added in slot order, as
    np.add.at adds them), zeroes its rates and finds its one owner, as Network._finish's lines do."""
    rng = np.random.default_rng(seed)
    n, paths = 300, 12
    path, nbytes = rng.integers(0, paths, size=n), rng.random(n) * 1e6
    owner = np.where(rng.random(n) < 0.2, -1, rng.integers(0, 2, size=n))
    for _ in range(20):
        slots = rng.choice(n, size=int(rng.integers(2, 60)), replace=False)
        if rng.random() < 0.4:
            owner[slots] = int(rng.integers(-1, 2))  # one owner (or none) for the whole batch
        want_bytes, got_bytes = rng.random(paths), None
        got_bytes = want_bytes.copy()
        want_rate = rng.random(n)
        got_rate = want_rate.copy()
        first = C.finish_flows(slots, path, nbytes, got_bytes, got_rate, owner)
        np.add.at(want_bytes, path[slots], nbytes[slots])
        want_rate[slots] = 0.0
        owners = owner[slots]
        assert first == (int(owners[0]) if (owners == owners[0]).all() and owners[0] >= 0 else -1)
        assert got_bytes.tolist() == want_bytes.tolist()
        assert got_rate.tolist() == want_rate.tolist()


@core
@pytest.mark.parametrize("seed", range(4))
def test_launching_rows_is_launching_them(seed, monkeypatch):
    """``Network.launch_rows`` (rows of a dataflow's messages, written in C) leaves the network as
    ``launch`` of the gathered rows does: slots, per-slot arrays, start times and their order; a size
    below zero is refused with nothing taken."""
    import simpy

    from sim.cluster import Cluster

    cluster = Cluster(DGX)
    rng = np.random.default_rng(seed)
    m = 400
    src, dst = rng.integers(0, cluster.size, m), rng.integers(0, cluster.size, m)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    pids = cluster.path_ids(src, dst)
    nbytes = rng.integers(1, 4, len(src)) * 1e6
    nets = [network.Network(simpy.Environment(), cluster) for _ in range(2)]
    for net in nets:
        net.add_owner(lambda slots, now: None)
    for _ in range(6):
        rows = rng.choice(len(src), size=int(rng.integers(2, 50)), replace=False)
        a = nets[0].launch(pids[rows], src[rows], nbytes[rows], owner=0)
        b = nets[1].launch_rows(rows, pids, src, nbytes, owner=0)
        assert a.tolist() == b.tolist()
    for name in ("_remaining", "_bytes", "_path", "_bound", "_owner", "_free", "_pending", "flows"):
        x, y = getattr(nets[0], name), getattr(nets[1], name)
        assert (x.tolist() if isinstance(x, np.ndarray) else x) == (y.tolist() if isinstance(y, np.ndarray) else y)
    assert {t: np.concatenate(v).tolist() for t, v in nets[0]._pending_at.items()} == {
        t: np.concatenate(v).tolist() for t, v in nets[1]._pending_at.items()
    }
    bad = nbytes.copy()
    bad[3] = -1.0
    free = list(nets[1]._free)
    with pytest.raises(RunError, match="sizes must be >= 0"):
        nets[1].launch_rows(np.array([2, 3]), pids, src, bad, owner=0)
    assert nets[1]._free == free


@core
@pytest.mark.parametrize("seed", range(4))
def test_the_cores_sums_are_the_rates(seed):
    """``hash_finite`` gives Rates._hash_sum (mod 2**64, as the key takes it) and _finite of a batch, few
    flows or many, bounds finite, infinite or NaN."""
    from sim.cluster import Cluster

    rng = np.random.default_rng(seed)
    cluster = Cluster(DGX)
    cluster.path_ids(rng.integers(0, cluster.size, 200), rng.integers(0, cluster.size, 200))
    r = rates.Rates(cluster)
    for size in (1, 5, 16, 17, 300):
        pids = rng.integers(0, cluster.paths.count, size)
        bounds = rng.choice([1e9, np.inf, np.nan, 3.5], size=size)
        numbers, finite = C.hash_finite(r._hashes(), pids, bounds)
        assert numbers == r._hash_sum(pids) % (1 << 64)
        assert finite == r._finite(bounds)


def test_the_path_numbers_do_not_depend_on_how_the_table_grew():
    """Rates._hashes grows its table as paths are interned, a few at a time or many (message by message, a
    path or two per start): every path's number is the closed form's, taken at once."""
    from sim.cluster import Cluster

    def closed(n):
        x = (np.arange(n, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(31)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        return x ^ (x >> np.uint64(29))

    rng = np.random.default_rng(5)
    cluster = Cluster(DGX)
    r = rates.Rates(cluster)
    for size in (1, 1, 2, 3, 1, 40, 1, 200):
        cluster.path_ids(rng.integers(0, cluster.size, size), rng.integers(0, cluster.size, size))
        got = r._hashes()
        n = cluster.paths.count
        assert got.dtype == np.uint64 and len(got) >= n
        assert got[:n].tolist() == closed(n).tolist()


def _both(monkeypatch, run):
    """``run()`` with the core's loops, then with the Python ones."""
    got = [run()]
    monkeypatch.setattr(network, "_ops", PY)
    monkeypatch.setattr(dataflow, "_CORE", None)
    got.append(run())
    return got


@core
@pytest.mark.parametrize("topology", [OVERSUBSCRIBED, DGX])
def test_flows_end_when_they_did_with_the_python_loops(topology, monkeypatch):
    from sim.cluster import Cluster

    cluster = Cluster(topology)
    flows = _flows(cluster, 3, 300)
    (ends, net), (ends_py, net_py) = _both(monkeypatch, lambda: run_flows(cluster, flows))
    assert ends == ends_py
    assert net.wakeups == net_py.wakeups


@core
@pytest.mark.parametrize(
    ("topology", "algorithm"),
    [
        (OVERSUBSCRIBED, "double-binary-tree:chunks=8"),
        (DGX, "double-binary-tree:chunks=4"),
        (OVERSUBSCRIBED, "halving-doubling"),
        (DGX, "tree:chunks=4"),
        ("perturbed", "recursive-doubling"),
        ("perturbed", "double-binary-tree:chunks=4"),
    ],
)
def test_fast_paths_give_the_same_times_with_the_python_loops(topology, algorithm, monkeypatch):
    if topology == "perturbed":  # stragglers and slow links: flows end at many instants
        topology = perturb(dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, ecmp="hash"), seed=2)

    def run():
        r = simulate(topology, "allreduce", algorithm, "4MiB")
        assert r.engine.startswith("fast:")
        return r.time_s, r.events, r.flows, r.link_bytes

    fast, fast_py = _both(monkeypatch, run)
    assert fast == fast_py
    message = simulate(topology, "allreduce", algorithm, "4MiB", engine="message").time_s
    assert fast[0] == pytest.approx(message, rel=1e-9)


def test_collsim_pure_turns_the_engines_loops_off_too():
    code = "import sim.network as n, sim.dataflow as d; print(n._ops is n._PyDue, d._CORE is None)"
    env = dict(os.environ, COLLSIM_PURE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


@core
@pytest.mark.parametrize(
    "spec, nics",
    [
        ("dgx:hosts=24,hosts_per_leaf=8,ecmp=hash", False),
        ("dgx:hosts=24,hosts_per_leaf=8,ecmp=destination", False),
        ("dgx:hosts=9,gpus_per_host=1,hosts_per_leaf=4,ecmp=hash", False),
        ("dgx:hosts=9,gpus_per_host=1,hosts_per_leaf=4", False),  # the default: by destination
        ("hgx:preset=dgx-h100,hosts=40,hosts_per_leaf=8", True),
        ("hgx:preset=dgx-h100,hosts=24,hosts_per_leaf=8,ecmp=hash", True),
        ("leaf-spine:leaves=4,hosts_per_leaf=4,spines=3,bandwidth=1Gbps,gpus_per_host=2,intra_bandwidth=10Gbps", False),
        ("star:hosts=8,bandwidth=1Gbps", False),
    ],
)
def test_the_cores_far_routes_are_the_bulk_routers(spec, nics):
    """``far_routes`` routes the pairs more than two hops apart in C: every row and every mask bit equal
    the numpy lines' (``BulkRouter._node_routes``) on random pairs of the origins -- GPUs, and NICs where
    NCCL's channels leave by them -- on hashed and destination-keyed fabrics, weighted DGX hosts, a
    single-GPU fabric and a star (where no pair is far)."""
    from sim.bulkroute import bulk_router
    from sim.cluster import Cluster

    cl = Cluster(spec)
    nodes = np.asarray(cl.rank_node[: cl.size], dtype=np.int64)
    if nics:
        nodes = np.concatenate([nodes, np.array([i for i, v in enumerate(cl.nodes) if ":nic" in v], dtype=np.int64)])
    bulk = bulk_router(cl, origins=nodes)
    assert bulk is not None
    rng = np.random.default_rng(7)
    srcs, dsts = nodes[rng.integers(0, len(nodes), 20000)], nodes[rng.integers(0, len(nodes), 20000)]
    got, odd = bulk.node_routes(srcs, dsts)
    want, want_odd = bulk._node_routes(srcs, dsts)
    assert np.array_equal(got, want) and np.array_equal(odd, want_odd)
    done = np.zeros(len(srcs), dtype=np.uint8)
    out = np.full(got.shape, -1, dtype=np.int64)
    far = C.far_routes(srcs, dsts, *bulk.far_tables(), out.ravel(), done)
    assert far == int(done.sum()) and (far > len(srcs) // 2) == (not spec.startswith("star"))


@core
def test_the_cores_trim_is_the_classes():
    """``trim_rows`` takes out the arcs whose dominator is beside them as FanExecutor.trim's numpy lines
    do, on every push of a parameter server on a DGX fabric (NICs between GPUs and leaves), and refuses
    a route that crosses a dominated arc without its dominator."""
    import sim.classes as classes

    from .test_classes import executor

    ex, _ = executor("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=2,spines=2,ecmp=hash", "ps:shards=4", 2**20)
    cl = ex.cluster
    srcs, dsts = np.divmod(np.arange(cl.size * cl.size), cl.size)
    rows = ex.routes(srcs[srcs != dsts], dsts[srcs != dsts], ids=False)[0]
    got = ex.trim(rows)
    try:
        classes._CORE = None
        want = ex.trim(rows)
    finally:
        classes._CORE = rates._CORE
    assert np.array_equal(got, want) and (got < 0).sum() > (rows < 0).sum()
    bad = rows.copy()
    hit = np.flatnonzero((ex._dom[np.maximum(rows[0], 0)] >= 0) & (rows[0] >= 0))[0]
    bad[0, :] = -1
    bad[0, 0] = rows[0, hit]  # a dominated arc alone
    with pytest.raises(ValueError, match="dominates"):
        C.trim_rows(bad.ravel(), ex._dom, bad.shape[1], np.empty_like(bad).ravel())
