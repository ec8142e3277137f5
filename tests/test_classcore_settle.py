"""The flow classes' settle in C (sim/_classcore.c ``settle_above``, :meth:`sim.classes.FanExecutor._settle_core`)
and the C lines beside it (``due_at``, ``finish``, ``kept_rows``, ``full_loads``) against the Python lines they
stand for: whole parameter-server runs on hashed fabrics -- where completions re-solve the classes above them
thousands of times -- end at the same time to the bit, with the same solves, splits and bookings and every
class's rate, bytes left and completion time the same, with the C settle off (``sim.classes._SETTLE_CORE``)
and with no C at all; and each C line gives its numpy lines' arrays on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

import sim.classes as classes
from sim import maxmin
from sim.topology import dgx

from .test_classes import executor
from .test_fastpath import perturb

core = pytest.importorskip("sim._classcore")

CASES = [
    ("dgx:hosts=4,ecmp=hash", "ps", {}, 25 * 2**20),
    ("dgx:hosts=6,gpus_per_host=2,hosts_per_leaf=3,spines=2,ecmp=hash", "ps", {"gamma": 1e-11}, 2**20),
    ("dgx:hosts=8,gpus_per_host=2,hosts_per_leaf=4,spines=3,ecmp=hash", "ps", {}, 3 * 2**22 + 7),
    ("dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=4,spines=2,ecmp=hash", "ps:shards=8", {}, 2**24),
    ("dgx:hosts=12,gpus_per_host=2,hosts_per_leaf=4,spines=2,ecmp=hash", "ps:placement=dedicated", {"ranks": 8}, 2**22),
    (perturb(dgx(hosts=8, gpus_per_host=2, hosts_per_leaf=4, spines=2, ecmp="hash"), 3), "ps", {}, 2**22),
]


def _run(case):
    topology, spec, kw, size = case
    ex, t = executor(topology, spec, size, **kw)
    tab = ex._tab
    state = tuple(getattr(tab, name)[: tab.n].copy() for name in ("rate", "rem", "since", "due", "booked", "hbooked"))
    counts = (ex.solves, ex.splits, ex.partial, ex.above, ex.bookings, ex.compactions)
    return t, counts, state


def _same(got, want):
    assert repr(got[0]) == repr(want[0])
    assert got[1] == want[1]
    for a, b in zip(got[2], want[2], strict=True):
        np.testing.assert_array_equal(a, b)


class _Counting:
    """``sim._classcore`` with its settles counted: whether each took the usual path (in C)."""

    def __init__(self, taken: list[bool], paths: list | None = None) -> None:
        self.taken = taken
        self.paths = [] if paths is None else paths
        self.tails = 0  # settles told that the classes end with a tail (FanExecutor._due_split_comp)

    def __getattr__(self, name):
        return getattr(core, name)

    def settle_above(self, *args):
        got = core.settle_above(*args)
        self.taken.append(got is not None)
        self.paths.append(None if got is None else (got[0], bool(args[-1]), got[7]))
        self.tails += args[-2] is not None
        return got


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_the_c_settle_is_the_python_settle(monkeypatch, case):
    """The run with the C settle is the Python lines' to the bit: the end, the counts, every class's
    numbers -- with the C settle off, and with no C at all."""
    got = _run(case)
    with monkeypatch.context() as m:
        m.setattr(classes, "_SETTLE_CORE", False)
        _same(_run(case), got)
    with monkeypatch.context() as m:  # no C at all: the numpy lines throughout
        m.setattr(maxmin, "_CORE", None)
        _same(_run(case), got)


def test_the_c_settle_takes_most_settles(monkeypatch):
    """One shard per rank on 64 GPUs, hashed: nearly every completion settles in C -- above the cut, the
    whole component (no gap, or no class above it), the solve that fills an arc not kept (committed; the
    Python lines keep it and join) and the joined region, each many times -- and the run is the Python
    lines'."""
    case = ("dgx:hosts=8,ecmp=hash", "ps", {}, 25 * 2**20)
    taken: list[bool] = []
    paths: list = []
    counting = _Counting(taken, paths)
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_CORE", counting)
        got = _run(case)
    assert sum(taken) > 0.95 * len(taken) > 1000
    assert counting.tails > 0.5 * len(taken)  # most settles read only the classes before the component's tail
    seen = {p: paths.count(p) for p in set(paths)}
    for path in [(0, False, 0), (0, True, 0), (1, False, 0), (2, False, 0), (2, False, 1)]:
        assert seen.get(path, 0) > 10, (path, seen)
    with monkeypatch.context() as m:
        m.setattr(classes, "_SETTLE_CORE", False)
        _same(_run(case), got)


def test_the_whole_solve_that_fills_an_arc_is_committed_in_c(monkeypatch):
    """A whole component solved in C that fills an arc not kept (how 3) is committed as the Python lines
    leave it, and the run is theirs."""
    paths: list = []
    with monkeypatch.context() as m:
        m.setattr(maxmin, "_CORE", _Counting([], paths))
        got = _run(CASES[1])
    assert paths.count((3, False, 0)) > 2, paths
    with monkeypatch.context() as m:
        m.setattr(classes, "_SETTLE_CORE", False)
        _same(_run(CASES[1]), got)


def _due_split_tail_numpy(members, p, segs, alive, due, rate, t, near, most):
    """due_split_tail's numbers by numpy: the classes due and the others, in order; the tail's segments of
    those (read anew where a class of it was due, dropped where left empty, the two adjacent fewest together
    joined while more than ``most``), their largest rate, first completion (NaN left out) and NaN."""
    am = members[alive[members]]
    is_due = due[am] - t <= near
    done, rest = am[is_due], am[~is_due]
    q = int(np.count_nonzero(~is_due[: int(np.count_nonzero(alive[members[:p]]))]))
    out, at = [], q
    for a, b, smax, sfirst, snan in segs:
        seg = members[int(a) : int(b)]
        if sfirst - t <= near:
            seg = seg[alive[seg] & ~(due[seg] - t <= near)]
            if not len(seg):
                continue
            d = due[seg]
            smax, snan = rate[seg].max(), np.isnan(d).any()
            sfirst = np.inf if np.isnan(d).all() else np.nanmin(d)
        out.append([at, at + len(seg), smax, sfirst, float(snan)])
        at += len(seg)
    while len(out) > most:
        sizes = [out[i + 1][1] - out[i][0] for i in range(len(out) - 1)]
        j = int(np.argmin(sizes))
        x, y = out[j], out[j + 1]
        out[j : j + 2] = [[x[0], y[1], max(x[2], y[2]), min(x[3], y[3]), float(bool(x[4]) or bool(y[4]))]]
    return done, rest, q, out


@pytest.mark.parametrize("seed", range(30))
def test_due_split_tail_is_numpys(seed):
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(5, 80))
    members = rng.permutation(rows)[: int(rng.integers(1, rows + 1))]
    n = len(members)
    p = int(rng.integers(0, n + 1))
    alive = rng.random(rows) < 0.9
    alive[members[p:]] = True  # the tail's classes are alive
    due = np.where(rng.random(rows) < 0.1, np.inf, rng.choice([1.0, 1.0 + 1e-13, 2.0, 3.0, np.nan], rows))
    rate = rng.random(rows) * 1e9
    cuts = np.unique(np.concatenate(([p, n], rng.integers(p, n + 1, int(rng.integers(0, 6))))))
    segs = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        if a == b:
            continue
        d = due[members[a:b]]
        first = np.inf if np.isnan(d).all() else np.nanmin(d)
        segs.append([a, b, rate[members[a:b]].max(), first, float(np.isnan(d).any())])
    t, near, most = 1.0, 1e-12 + 1e-300, int(rng.integers(1, 4))
    for head in [None, tuple(segs[0])] if segs else [None]:
        given = np.array(segs[1:] if head is not None else segs, dtype=float).reshape(-1)
        out = np.empty(2 * n, dtype=np.int64)
        segs_out = np.empty(len(given) + 5)
        k, m, ns, q, top, first, nan = core.due_split_tail(
            members, p, head, given, alive, due, rate, t, near, most, out, segs_out
        )
        done, rest, want_q, want = _due_split_tail_numpy(members, p, segs, alive, due, rate, t, near, most)
        np.testing.assert_array_equal(out[:k], done)
        np.testing.assert_array_equal(out[n : n + m], rest)
        assert q == want_q and ns == len(want)
        np.testing.assert_array_equal(segs_out[: 5 * ns].reshape(-1, 5), np.array(want).reshape(-1, 5))
        w = np.array(want).reshape(-1, 5)
        assert top == w[:, 2].max(initial=-np.inf) and first == w[:, 3].min(initial=np.inf)
        assert nan == bool(w[:, 4].any())


def _table(rng, n, arcs):
    """A class table's columns: ``n`` classes with a few crossings each over ``arcs`` arcs."""
    lens = rng.integers(0, 6, n)
    hi = np.cumsum(lens)
    lo = hi - lens
    ne = int(hi[-1]) if n else 0
    return lo, hi, rng.integers(0, arcs, ne), rng.integers(1, 4, ne).astype(float)


@pytest.mark.parametrize("seed", range(20))
def test_the_c_lines_beside_the_settle_are_numpys(seed):
    rng = np.random.default_rng(seed)
    n, arcs = int(rng.integers(1, 60)), int(rng.integers(1, 30))
    lo, hi, arc, cnt = _table(rng, n, arcs)
    alive = rng.random(n) < 0.7
    due = np.where(rng.random(n) < 0.2, np.inf, rng.choice([1.0, 1.0 + 1e-13, 2.0, 3.0], n))
    members = rng.permutation(n)[: int(rng.integers(1, n + 1))]
    t, near = 1.0, 1e-12 + 1e-300
    out = np.empty(len(members), dtype=np.int64)
    k = core.due_at(members, alive, due, t, near, out)
    alive_m = members[alive[members]]
    np.testing.assert_array_equal(out[:k], alive_m[due[alive_m] - t <= near])
    k = core.due_at(members, alive, due, t, np.nan, out)
    np.testing.assert_array_equal(out[:k], alive_m)
    # due_split: those due and the other alive ones, in order, in one pass
    both = np.empty(2 * len(members), dtype=np.int64)
    k, m = core.due_split(members, alive, due, t, near, both)
    np.testing.assert_array_equal(both[:k], alive_m[due[alive_m] - t <= near])
    np.testing.assert_array_equal(both[len(members) : len(members) + m], alive_m[~(due[alive_m] - t <= near)])
    # finish: the loads, crossers and followed loads less the classes done (np.add.at, in order)
    done = np.unique(members[: len(members) // 2 + 1])
    booked, hbooked = rng.random(n) * 1e9, rng.random(n) * 1e9
    hot = rng.random(arcs) < 0.5
    loads, crossers, hot_loads = (rng.random(arcs) * 1e10 for _ in range(3))
    want = [x.copy() for x in (loads, crossers, hot_loads)]
    rows = np.repeat(np.arange(len(done)), hi[done] - lo[done])
    idx = np.concatenate([np.arange(lo[c], hi[c]) for c in done]).astype(np.int64)
    a, c = arc[idx], cnt[idx]
    np.add.at(want[0], a, -c * booked[done][rows])
    np.add.at(want[1], a, -c)
    h = hot[a]
    np.add.at(want[2], a[h], -c[h] * hbooked[done][rows[h]])
    core.finish(done, lo, hi, arc, cnt, booked, hbooked, hot, loads, crossers, hot_loads)
    for got, exp in zip((loads, crossers, hot_loads), want, strict=True):
        np.testing.assert_array_equal(got, exp)
    # kept_rows: every crossing on a marked arc, class by class, and whether its arc is kept
    ids = rng.permutation(n)[: int(rng.integers(0, n + 1))]
    keep = rng.random(arcs) < 0.5
    lens = hi[ids] - lo[ids]
    r = np.repeat(np.arange(len(ids)), lens)
    i = np.concatenate([np.arange(lo[x], hi[x]) for x in ids]).astype(np.int64) if len(ids) else lens
    sel = hot[arc[i]]
    row, kidx, on = np.empty(len(arc) + 1, np.int64), np.empty(len(arc) + 1, np.int64), np.empty(len(arc) + 1, bool)
    m = core.kept_rows(ids.astype(np.int64), lo, hi, arc, hot, keep, row, kidx, on)
    np.testing.assert_array_equal(row[:m], r[sel])
    np.testing.assert_array_equal(kidx[:m], i[sel])
    np.testing.assert_array_equal(on[:m], keep[arc[i[sel]]])
    assert core.kept_rows(ids.astype(np.int64), lo, hi, arc, hot, keep, row[:0], kidx[:0], on[:0]) == -m
    # crossing: the classes crossing a marked arc, in order (FanExecutor._joined's numpy lines)
    crossers = np.empty(len(ids) + 1, np.int64)
    k = core.crossing(ids.astype(np.int64), lo, hi, arc, keep, crossers)
    np.testing.assert_array_equal(crossers[:k], ids[np.unique(r[keep[arc[i]]])] if len(ids) else ids)
    # full_loads: FanExecutor._full's lines before the booking
    live = ids.astype(np.int64)
    rate = np.where(rng.random(n) < 0.1, np.inf, rng.random(n) * 2e9)
    cap = rng.choice([1e9, 2e9, 5e9], arcs)
    hot_loads, hbooked2 = rng.random(arcs) * 3e9, hbooked.copy()
    want_loads, want_h = hot_loads.copy(), hbooked.copy()
    rr = rate[live]
    finite = np.isfinite(rr)
    rise = np.where(finite, rr - want_h[live], 0.0)
    arcs_h = arc[i[sel]]
    np.add.at(want_loads, arcs_h, cnt[i[sel]] * rise[r[sel]])
    want_h[live] = np.where(finite, rr, 0.0)
    want_full = arcs_h[~keep[arcs_h] & (want_loads[arcs_h] >= cap[arcs_h] * (1 - 1e-9))]
    want_rise = float(np.where(finite, rr - booked[live], 0.0).max(initial=0.0))
    out = np.empty(len(arcs_h) + 1, np.int64)
    k, got_rise = core.full_loads(live, rate, hbooked2, booked, r[sel], i[sel], arc, cnt, hot_loads, keep, cap, out)
    np.testing.assert_array_equal(out[:k], want_full)
    np.testing.assert_array_equal(hot_loads, want_loads)
    np.testing.assert_array_equal(hbooked2, want_h)
    assert got_rise == want_rise


def test_the_c_lines_refuse_arrays_out_of_shape():
    lo, hi = np.array([0, 2]), np.array([2, 3])
    arc, cnt = np.array([0, 1, 5]), np.ones(3)
    with pytest.raises(ValueError, match="out of shape"):
        core.due_at(np.array([0, 7]), np.ones(2, bool), np.zeros(2), 0.0, 0.0, np.empty(2, np.int64))
    with pytest.raises(ValueError, match="out of shape"):  # room for both lists: 2 x members
        core.due_split(np.array([0, 1]), np.ones(2, bool), np.zeros(2), 0.0, 0.0, np.empty(3, np.int64))
    with pytest.raises(ValueError, match="out of shape"):  # arc 5 of 2
        z = np.zeros(2)
        core.finish(np.array([1]), lo, hi, arc, cnt, z, z, np.ones(2, bool), z.copy(), z.copy(), z.copy())
    with pytest.raises(TypeError, match="36 arguments"):
        core.settle_above(np.array([0]))
    members, flags, z = np.array([0, 1, 2]), np.ones(3, bool), np.zeros(3)
    with pytest.raises(ValueError, match="out of shape"):  # the segments must run on from p
        segs = np.array([2.0, 3.0, 0.0, 1.0, 0.0])
        core.due_split_tail(members, 1, None, segs, flags, z, z, 0.0, 0.0, 1, np.empty(6, np.int64), np.empty(5))
