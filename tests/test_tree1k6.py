"""tree1k6: the ``dgx`` fabric's arrays and names in one compiled pass each (``dgx_arcs``, ``dgx_names``) --
every array, dtype and name the numpy lines' (``COLLSIM_PURE``'s path), on fabrics of one, two, four and eight
GPUs a host, leaves not full, spines given, either routing."""

from __future__ import annotations

import numpy as np
import pytest

from sim.schema import validate_spec
from sim.topology import fabric as fabric_mod
from sim.topology.builders import DgxParams
from sim.topology.load import inline_params

_CORE = fabric_mod._CORE

SPECS = [
    "dgx:hosts=128,ecmp=hash",  # tree-1k's
    "dgx:hosts=2",
    "dgx:hosts=1,gpus_per_host=1",
    "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash",
    "dgx:hosts=3,gpus_per_host=1,hosts_per_leaf=2,ecmp=hash",
    "dgx:hosts=7,gpus_per_host=2,hosts_per_leaf=3,spines=5",
    "dgx:hosts=70,hosts_per_leaf=16,uplink_bandwidth=100Gbps,overhead=1us,pcie_bandwidth=32GB/s,ecmp=hash",
    "dgx:hosts=33,hosts_per_leaf=32,nvlink_latency=0.7us,latency=2us",
    "dgx:hosts=1100,hosts_per_leaf=32,spines=12,ecmp=hash",  # names past three digits
]


def _fabric(spec: str, core: object, monkeypatch: pytest.MonkeyPatch) -> fabric_mod.Fabric:
    monkeypatch.setattr(fabric_mod, "_CORE", core)
    kind, params = inline_params(spec)
    got = fabric_mod.dgx_fabric(validate_spec(DgxParams, params, kind))
    assert got is not None
    return got


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("spec", SPECS)
def test_dgx_fabric_compiled_equals_numpy(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, ref = _fabric(spec, _CORE, monkeypatch), _fabric(spec, None, monkeypatch)
    for name in (
        "is_gpu",
        "endpoint_only",
        "arc_u",
        "arc_v",
        "capacity",
        "latency",
        "weight",
        "rank_node",
        "rank_host",
    ):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name  # (to the bit: -0.0 and NaN told apart)
    assert (fast.dest_key is None) == (ref.dest_key is None)
    if fast.dest_key is not None:
        assert fast.dest_key.dtype == ref.dest_key.dtype and np.array_equal(fast.dest_key, ref.dest_key)
    assert fast.nodes == ref.nodes and all(type(s) is str for s in fast.nodes)
    assert fast.hosts == ref.hosts and all(type(s) is str for s in fast.hosts)
    for name in ("name", "spec", "routing", "overhead", "builder", "params"):
        assert getattr(fast, name) == getattr(ref, name), name


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
def test_dgx_arcs_refuses_wrong_arrays() -> None:
    m = 2 * 1 * 8 + 8 + 40  # one host of 8 GPUs, one spine
    tail, head, cap, lat = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m), np.empty(m)
    rank, gpu = np.empty(8, dtype=np.int64), np.empty(1 + 8 + 17, dtype=bool)
    bands = (1.0, 1.0, 0.0, 1.0, 0.0, 1.0)
    assert _CORE.dgx_arcs(1, 1, 32, 1, 8, *bands, tail, head, cap, lat, rank, gpu) == m
    with pytest.raises(ValueError):
        _CORE.dgx_arcs(1, 1, 32, 1, 8, *bands, tail[:-1], head, cap, lat, rank, gpu)
    with pytest.raises(ValueError):
        _CORE.dgx_arcs(1, 1, 32, 1, 8, *bands, tail, head[::2], cap, lat, rank, gpu)
    with pytest.raises(ValueError):
        _CORE.dgx_arcs(0, 1, 32, 1, 8, *bands, tail, head, cap, lat, rank, gpu)
    with pytest.raises(ValueError):
        _CORE.dgx_names(1, 0, 1, 1)


def _forests() -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    out = [np.zeros(0, dtype=np.int64), np.array([-1]), np.array([-1, 0, 0, 1, 1, 2, 2, 3])]
    for n in (2, 5, 17, 300, 1024):
        for roots in (1, 3):
            parent = np.array([-1 if v < roots else int(rng.integers(0, v)) for v in range(n)], dtype=np.int64)
            perm = rng.permutation(n)  # nodes numbered out of order: parents after their children too
            relabel = np.empty(n, dtype=np.int64)
            relabel[perm] = np.arange(n)
            shuffled = np.full(n, -1, dtype=np.int64)
            shuffled[relabel] = np.where(parent >= 0, relabel[np.maximum(parent, 0)], -1)
            out += [parent, shuffled]
    out.append(np.array([-3, 0, -1, 2, 0], dtype=np.int64))  # any negative a root
    return out


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("case", range(len(_forests())))
def test_tree_pairs_compiled_equals_numpy(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from sim.algorithms import tree as tree_mod

    parent = _forests()[case]
    got = tree_mod.tree_pairs(parent)
    monkeypatch.setattr(tree_mod, "_CORE", None)
    want = tree_mod.tree_pairs(parent)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)


def test_heap_parents_every_root() -> None:
    from sim.algorithms.tree import heap_parents

    for p in (1, 2, 3, 7, 8, 1024):
        for root in {0, 1, p - 1}:
            i = np.arange(1, p)
            want = np.full(p, -1, dtype=np.int64)
            want[(i + root) % p] = ((i - 1) // 2 + root) % p
            got = heap_parents(p, root)
            assert got.dtype == np.int64 and np.array_equal(got, want)


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
def test_tree_dataflow_compiled_equals_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole tree dataflow (chunks 1 and 3, roots 0 and 5) array for array as the numpy lines build it."""
    from sim.algorithms import tree as tree_mod

    def arrays(flow: object) -> list[np.ndarray]:
        names = ("src", "dst", "nbytes", "reduce", "proc", "combine", "seg_lo", "seg_hi")
        return [getattr(flow, k) for k in names] + list(flow.deps) + list(flow.gates)  # type: ignore[attr-defined]

    for p, chunks, root in ((1024, 1, 0), (37, 3, 5), (2, 1, 0)):
        got = arrays(tree_mod.tree_dataflow(p, 2**30, chunks, root))
        monkeypatch.setattr(tree_mod, "_CORE", None)
        want = arrays(tree_mod.tree_dataflow(p, 2**30, chunks, root))
        monkeypatch.setattr(tree_mod, "_CORE", _CORE)
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _edge_lists() -> list[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
    rng = np.random.default_rng(16)
    out = [(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int8), 5)]
    for n, edges in ((1, 3), (7, 20), (300, 1000), (2046, 5108)):
        for dtype in (np.int32, np.int64):
            m = rng.integers(0, n, edges).astype(dtype)
            on = rng.integers(0, n, edges).astype(dtype)
            kind = rng.integers(0, 2, edges).astype(np.int8)
            out += [(m, on, kind, n), (m, on, np.sort(kind), n)]  # kinds mixed, and in order (slices)
    return out


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("case", range(len(_edge_lists())))
def test_dataflow_tables_compiled_equal_numpy(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from sim import dataflow as df

    m, on, kind, n = _edge_lists()[case]
    got = df._tables("deps", (m, on, kind), n)
    monkeypatch.setattr(df, "_CORE", None)
    want = df._tables("deps", (m, on, kind), n)
    assert got[0].dtype == want[0].dtype == np.int64 and np.array_equal(got[0], want[0])
    for (gp, [go]), (wp, [wo]) in zip(got[1:], want[1:], strict=True):
        assert gp.dtype == wp.dtype == go.dtype == wo.dtype == np.int32
        assert np.array_equal(gp, wp) and np.array_equal(go, wo)


@pytest.mark.parametrize("core", [True, False], ids=["compiled", "numpy"])
def test_dataflow_tables_refuse_as_before(core: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from sim import dataflow as df

    if not core:
        monkeypatch.setattr(df, "_CORE", None)
    ok = np.array([0, 1], dtype=np.int32)
    with pytest.raises(ValueError, match="gates name messages outside 0..2"):
        df._tables("gates", (np.array([0, 3], dtype=np.int32), ok, np.array([0, 2], dtype=np.int8)), 3)
    with pytest.raises(ValueError, match="deps name messages outside 0..2"):
        df._tables("deps", (ok, np.array([-1, 0], dtype=np.int32), np.array([0, 1], dtype=np.int8)), 3)
    with pytest.raises(ValueError, match="deps kinds must be ARRIVED or HELD"):
        df._tables("deps", (ok, ok, np.array([0, 2], dtype=np.int8)), 3)
    with pytest.raises(ValueError, match="deps kinds must be ARRIVED or HELD"):
        df._tables("deps", (ok, ok, np.array([-1, 0], dtype=np.int8)), 3)


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("seed", range(10))
def test_router_tables_of_tails_in_order_equal_numpy(seed: int) -> None:
    """``router_tables`` where the arcs come tail by tail (each tail's heads put in order by insertion): parallel
    arcs, loops, heads in any order within a tail, a tail of many arcs in reverse (the insertions given up for
    the counting sorts), nodes without arcs -- every table as the numpy lines make it."""
    from tests.test_tree1k2 import _same_tables

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    m = int(rng.integers(0, 5 * n + 1))
    arc_u, arc_v = np.sort(rng.integers(0, n, size=m)), rng.integers(0, n, size=m)
    if m > 4:
        arc_u[1], arc_v[1] = arc_u[0], arc_v[0]  # a parallel arc
    if seed % 3 == 0:  # one tail with many heads in reverse, first
        many = np.arange(n - 1, -1, -1).repeat(3)
        arc_u, arc_v = np.concatenate([np.zeros(len(many), dtype=np.int64), arc_u]), np.concatenate([many, arc_v])
        arc_u = np.sort(arc_u, kind="stable")
    is_gpu = rng.random(n) < 0.2
    _same_tables(arc_u, arc_v, n, is_gpu)
    _same_tables(arc_u, arc_v, n, None)


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
def test_router_tables_insertions_given_up_for_the_sorts() -> None:
    """One tail's 300 arcs with their heads in reverse: ~45,000 moves, past the insertions' allowance (4 an arc):
    the counting sorts make the tables, the same as numpy's."""
    from tests.test_tree1k2 import _same_tables

    n = 300
    arc_u = np.concatenate([np.zeros(n, dtype=np.int64), np.arange(1, n)])
    arc_v = np.concatenate([np.arange(n - 1, -1, -1), np.zeros(n - 1, dtype=np.int64)])
    is_gpu = np.zeros(n, dtype=bool)
    is_gpu[n // 2 :] = True
    _same_tables(arc_u, arc_v, n, is_gpu)
    _same_tables(arc_u, arc_v, n, None)


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("seed", range(4))
def test_row_arcs_plain_and_strided_agree(seed: int) -> None:
    """``row_arcs``' lines on plain arrays (the usual case) and its general ones (a strided capacity) alike."""
    from sim import cluster as cluster_mod

    rng = np.random.default_rng(seed)
    n, width, narcs = int(rng.integers(1, 300)), int(rng.integers(1, 12)), int(rng.integers(1, 500))
    arcs = rng.integers(0, narcs, size=(n, width))
    arcs[rng.random((n, width)) < 0.4] = -1
    spread = rng.choice([1e9, 2.5e10, np.inf, np.nan], size=2 * narcs)
    plain = cluster_mod._row_arcs(arcs, np.ascontiguousarray(spread[::2]))
    strided = cluster_mod._row_arcs(arcs, spread[::2])
    for a, b in zip(plain, strided, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_bulk_keys_as_a_stable_sort_leaves_them() -> None:
    """Pairs interned in bulk in order (kept as they come) and out of order (sorted): the keys and ids as the
    stable sort of every batch so far, and every pair's id the one path_id gives it."""
    from sim.cluster import Cluster, _pair_keys

    cl = Cluster("dgx:hosts=4,ecmp=hash")
    want_keys, want_ids = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    batches = [
        (np.arange(0, 16), np.arange(16, 32)),
        (np.arange(31, 15, -1), np.arange(0, 16)),
        (np.array([2, 2]), np.array([5, 9])),
    ]
    for src, dst in batches:
        ids = cl.path_ids(src, dst)
        keys = np.concatenate([want_keys, _pair_keys(src, dst)])
        sort = np.argsort(keys, kind="stable")
        want_keys, want_ids = keys[sort], np.concatenate([want_ids, ids])[sort]
        assert np.array_equal(cl._bulk_keys, want_keys) and np.array_equal(cl._bulk_ids, want_ids)
        assert [cl.path_id(int(s), int(d)) for s, d in zip(src, dst, strict=True)] == ids.tolist()


def test_rows_without_rows_read_no_later_parts() -> None:
    """``_rows`` with no row writes ``first`` alone: the later chunks' parts (not gathered where no row follows,
    ``pipelined_tree``) change nothing."""
    from sim.algorithms.tree import _rows

    first = [(5, np.array([0, 2, 1], dtype=np.int32)), (40, np.array([3], dtype=np.int32))]
    rest = [(9, np.array([4, 4], dtype=np.int32))]
    got = _rows(first, [], 0, 7)
    assert got.tolist() == [5, 7, 6, 43] and got.tobytes() == _rows(first, rest, 0, 7).tobytes()
    assert _rows([], [], 0, 7).dtype == _rows([], rest, 0, 7).dtype and not len(_rows([], rest, 0, 7))
