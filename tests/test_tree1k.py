"""The congested fast path's fixed costs on tree-1k (docs/performance-log.md, "tree1k"): the compiled
``row_arcs`` behind ``_PathTable.add_many``, ``_static_dominators`` without a sort of the whole fabric, and
the solves of every flow over the arcs they cross -- each held to the plain lines it stands for."""

from __future__ import annotations

import numpy as np
import pytest

from sim import cluster as cluster_mod
from sim import rates as rates_mod
from sim.cluster import Cluster
from sim.simulate import simulate

_CORE = cluster_mod._CORE


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("seed", range(6))
def test_row_arcs_equal_numpy(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled pass against ``_row_arcs``' own numpy lines (the core set aside)."""
    rng = np.random.default_rng(seed)
    n, width, narcs = int(rng.integers(1, 300)), int(rng.integers(1, 12)), int(rng.integers(1, 500))
    arcs = rng.integers(0, narcs, size=(n, width))
    arcs[rng.random((n, width)) < 0.4] = -1  # padding, also between arcs and whole rows of it
    capacity = rng.choice([1e9, 2.5e10, 5e10, np.inf], size=narcs)
    if seed % 2:
        capacity[rng.integers(0, narcs)] = np.nan  # numpy's min gives NaN for a row that crosses it
    got = cluster_mod._row_arcs(arcs, capacity)
    monkeypatch.setattr(cluster_mod, "_CORE", None)
    want = cluster_mod._row_arcs(arcs, capacity)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def _dominators_reference(cl: Cluster) -> np.ndarray:
    """_static_dominators by plain loops: around a node that is no rank's, with exactly two arcs out and two
    in, an arc into it is dominated by the arc out to its other neighbour (and an arc out by the arc in from its
    other neighbour) where that one is narrower (capacity, then arc id), the narrower of two candidates kept."""
    u, v, cap = cl.arc_u.tolist(), cl.arc_v.tolist(), cl.capacity.tolist()
    m = len(u)
    outs: dict[int, list[int]] = {}
    ins: dict[int, list[int]] = {}
    for a in range(m):
        outs.setdefault(u[a], []).append(a)
        ins.setdefault(v[a], []).append(a)
    ranks = set(np.asarray(cl.rank_node).tolist())
    through = {w for w in outs if len(outs[w]) == 2 and len(ins.get(w, [])) == 2 and w not in ranks}

    def narrower(c: int, a: int) -> bool:
        return cap[c] < cap[a] or (cap[c] == cap[a] and c < a)

    dom = [-1] * m
    # into a through node (the other one of its two arcs out goes on), then out of one (the other arc in)
    for near, other, table in ((v, u, outs), (u, v, ins)):
        for a in range(m):
            w = near[a]
            if w in through:
                x1, x2 = table[w]  # (their far ends are near[x]: an arc out's head, an arc in's tail)
                back1, back2 = near[x1] == other[a], near[x2] == other[a]
                pick = x2 if back1 else x1
                if back1 != back2 and narrower(pick, a) and (dom[a] < 0 or narrower(pick, dom[a])):
                    dom[a] = pick
    return np.array(dom, dtype=np.int64)


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=4",
        "dgx:hosts=8,ecmp=hash",
        "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,bandwidth=100Gbps,gpus_per_host=2,intra_bandwidth=900Gbps",
        "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,bandwidth=100Gbps,uplink_bandwidth=400Gbps",
        "star:hosts=6,bandwidth=100Gbps",
    ],
)
def test_static_dominators_equal_reference(spec: str) -> None:
    cl = Cluster(spec)
    np.testing.assert_array_equal(rates_mod._static_dominators(cl), _dominators_reference(cl))


def test_static_dominators_found_on_dgx() -> None:
    """(The reference is not vacuous: on DGX hosts the NICs are through nodes and their links dominate.)"""
    dom = rates_mod._static_dominators(Cluster("dgx:hosts=4"))
    assert (dom >= 0).sum() > 0


_LS = "leaf-spine:leaves=8,hosts_per_leaf=16,spines=2,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"


@pytest.mark.parametrize(
    ("spec", "algorithm", "size", "want"),
    [
        ("dgx:hosts=16,ecmp=hash", "tree", "64MiB", (0.022622717546666664, 129, 567, 254)),
        (_LS, "tree:chunks=8", "16MiB", (0.016141709784023107, 844, 2551, 2032)),
        (_LS, "halving-doubling", "16MiB", (0.006943351903850689, 704, 1062, 1792)),
    ],
)
def test_congested_results_unchanged(spec: str, algorithm: str, size: str, want: tuple) -> None:
    """The solves of every flow over the arcs they cross only: the times, event and flow counts of main
    3837090 to the bit, on both engines (time, fast events, message events, flows)."""
    fast = simulate(Cluster(spec), "allreduce", algorithm, size, engine="fast")
    message = simulate(Cluster(spec), "allreduce", algorithm, size, engine="message")
    assert (fast.time_s, fast.events, message.events, fast.flows) == want
    assert (message.time_s, message.flows) == (want[0], want[3])


@pytest.mark.parametrize("seed", range(8))
def test_top_stable_equal_argsort(seed: int) -> None:
    """busiest's top links: the stable sort's first ``top``, ties (many links carry the same bytes) and all."""
    from sim.network import _top_stable

    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 1.0, 2.5, 3.0, np.inf], size=int(rng.integers(1, 60)))
    if seed == 7:
        values[0] = np.nan  # (the whole sort then: NaN goes last)
    for top in (0, 1, 3, 5, len(values), len(values) + 2):
        assert _top_stable(values, top) == np.argsort(-values, kind="stable")[:top].tolist()


@pytest.mark.parametrize("bring_back", [False, True])
def test_verify_in_c_equal_python(monkeypatch: pytest.MonkeyPatch, bring_back: bool) -> None:
    """_Dominance.verify of many new paths: the compiled check (where they bring no link back) and the numpy
    lines leave the same links out, checked to the same path."""

    def run(compiled: bool) -> tuple[list[int], int, int]:
        monkeypatch.setattr(rates_mod, "_CORE", rates_mod._CORE if compiled else None)
        cl = Cluster("dgx:hosts=4")
        dom = rates_mod._Dominance(cl)
        ranks = np.arange(cl.size)
        cl.path_ids(np.repeat(ranks, 3), np.concatenate([np.roll(ranks, k) for k in (1, 9, 17)]))
        if bring_back:  # a path that crosses a left-out link alone (its dominator not beside it)
            arc = int(np.flatnonzero(dom.dom >= 0)[0])
            cl.paths.add_many(
                np.array([[arc] * 6]), np.zeros(1), np.zeros(1, np.int64), np.ones(1, np.int64), cl.capacity
            )
        dom.verify()
        return dom.dom.tolist(), dom.checked, dom.version

    monkeypatch.setattr(rates_mod, "_CORE", rates_mod._CORE)
    if rates_mod._CORE is None:
        pytest.skip("the compiled core is not built")
    compiled, plain = run(True), run(False)
    assert compiled == plain
    assert plain[2] == (1 if bring_back else 0)
