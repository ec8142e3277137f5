"""An up-down router's routes of many pairs at once (``Router.routes``: the compiled ``updown_routes``) are
:meth:`Router.route`'s, pair by pair: every pair's arcs the same, in the same order, on every builder and
ECMP mode (``hash`` and ``destination`` on ``dgx``, ``leaf-spine``, ``hgx``'s presets and fat-tree, SHARP,
the YAML topologies in topologies/), and the pairs it leaves out are those the router refuses. Whole runs
that route through it give the same results with it on and off (``sim.routing._BULK``), bit for bit, and
the fast path stays within 1e-9 of the message level."""

from __future__ import annotations

import glob
import os
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sim.routing as routing
from sim import simulate
from sim.cluster import Cluster
from sim.errors import RoutingError
from sim.topology import dgx
from sim.topology.graph import ClusterBuilder

from .random_cases import case
from .test_fastpath import perturb
from .test_message_engine import _same

pytestmark = pytest.mark.skipif(routing._CORE is None, reason="the compiled core is not built (or COLLSIM_PURE=1)")

ROOT = os.path.join(os.path.dirname(__file__), "..")
SPECS = [
    "dgx:hosts=12,ecmp=hash,hosts_per_leaf=4",
    "dgx:hosts=12,ecmp=destination,hosts_per_leaf=4",
    "dgx:hosts=6,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash",
    "leaf-spine:leaves=4,hosts_per_leaf=3,spines=2,bandwidth=100Gbps",
    "leaf-spine:leaves=4,hosts_per_leaf=3,spines=3,bandwidth=100Gbps,ecmp=destination",
    "hgx:hosts=4,preset=dgx-h100",
    "hgx:hosts=6,preset=dgx-h100,ecmp=hash,hosts_per_leaf=2",
    "hgx:hosts=6,preset=hgx-a100-200g,fabric=fat-tree,hosts_per_leaf=2",
    "hgx:hosts=6,preset=hgx-a100-200g,fabric=fat-tree,hosts_per_leaf=2,ecmp=hash",
    "hgx:hosts=4,preset=dgx-h100,sharp=true,ecmp=hash",
    "torus:dims=3x4,bandwidth=100Gbps",  # (Dijkstra routing: pair by pair)
    *sorted(glob.glob(os.path.join(ROOT, "topologies", "*.yaml"))),
]


@cache
def _cluster(spec: str) -> Cluster:
    return Cluster(spec)


def _reference(router: routing.Router, src: int, dst: int) -> list[int] | None:
    """The router's route by its Python lines (None: refused)."""
    try:
        return routing.Router._route_lines(router, src, dst)
    except RoutingError:
        return None


def _check(router: routing.Router, srcs: np.ndarray, dsts: np.ndarray) -> int:
    """Every pair's bulk route is the router's (a pair left out: one the router refuses); returns how many
    pairs were routed."""
    rows, left = router.routes(srcs, dsts)
    for i, (s, d) in enumerate(zip(srcs.tolist(), dsts.tolist(), strict=True)):
        want = _reference(router, s, d)
        got = None if left[i] else [a for a in rows[i].tolist() if a >= 0]
        assert got == want, f"route {s} -> {d}: bulk {got}, router {want}"
    return int((~left).sum())


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: os.path.basename(s))
def test_bulk_routes_are_the_routers(spec):
    """Every pair of ranks' GPUs, and random pairs of any nodes (switches, NICs: some refused)."""
    cl = _cluster(spec)
    node = cl.rank_node[: cl.size].astype(np.int64)
    rng = np.random.default_rng(7)
    a, b = np.meshgrid(node, node, indexing="ij")
    srcs = np.concatenate([a.ravel(), rng.integers(0, len(cl.nodes), 1500)])
    dsts = np.concatenate([b.ravel(), rng.integers(0, len(cl.nodes), 1500)])
    assert _check(cl.router, srcs, dsts) >= len(node) ** 2


def _weighted_tree(seed: int) -> Any:
    """Single-GPU hosts under one to three of four leaves each, and leaves under two tops, by links of
    weights 1 to 3: ancestors with ways down of different lengths (and of equal ones), climbs likewise."""
    rng = np.random.default_rng(seed)
    b = ClusterBuilder(f"weighted-tree-{seed}")
    leaves = [f"leaf{i}" for i in range(4)]
    for s in [*leaves, "top0", "top1"]:
        b.add_switch(s)
    for leaf in leaves:
        for top in ("top0", "top1"):
            b.add_link(leaf, top, bandwidth=1e9, weight=float(rng.choice([1.0, 1.0, 2.0])))
    for h in range(8):
        (gpu,) = b.add_host(f"h{h}", gpus=1)
        for leaf in rng.choice(leaves, size=int(rng.integers(1, 4)), replace=False):
            b.add_link(gpu, str(leaf), bandwidth=1e9, weight=float(rng.choice([1.0, 2.0, 3.0])))
    return b.build(routing="updown")


@pytest.mark.parametrize("seed", range(8))
def test_weighted_trees(seed):
    """Every pair of nodes of a weighted up-down fabric (the shortest ways down picked among longer ones)."""
    cl = Cluster(_weighted_tree(seed))
    assert cl.router.mode == "updown" and not cl.router._unit
    n = len(cl.nodes)
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    _check(cl.router, a.ravel(), b.ravel())


@given(
    spec=st.sampled_from(SPECS[:10]),
    pairs=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=60),
)
def test_random_pairs_in_any_order(spec, pairs):
    """Pairs in any order, repeated, destinations interleaved: the per-destination tables are found again."""
    cl = _cluster(spec)
    n = len(cl.nodes)
    srcs = np.array([p[0] % n for p in pairs], dtype=np.int64)
    dsts = np.array([p[1] % n for p in pairs], dtype=np.int64)
    _check(cl.router, srcs, dsts)


def test_off_routes_pair_by_pair(monkeypatch):
    cl = Cluster("dgx:hosts=4,ecmp=hash")
    node = cl.rank_node[: cl.size]
    srcs, dsts = np.repeat(node, len(node)), np.tile(node, len(node))
    calls: list[Any] = []
    route = routing.Router.route
    monkeypatch.setattr(routing.Router, "route", lambda self, s, d: calls.append((s, d)) or route(self, s, d))
    rows_on, left_on = cl.router.routes(srcs, dsts)
    assert not calls
    monkeypatch.setattr(routing, "_BULK", False)
    rows_off, left_off = cl.router.routes(srcs, dsts)
    assert len(calls) == len(srcs)
    assert not left_on.any() and not left_off.any()
    width = max(rows_on.shape[1], rows_off.shape[1])
    pad = [np.pad(r, ((0, 0), (0, width - r.shape[1])), constant_values=-1) for r in (rows_on, rows_off)]
    assert (pad[0] == pad[1]).all()


def _both(monkeypatch: pytest.MonkeyPatch, *args: Any, **kw: Any) -> Any:
    """The run with the bulk routes and with the router pair by pair: the same results, bit for bit; the
    bulk run asks the router for no route of its own where the fabric routes up and down."""
    out = []
    for bulk in (True, False):
        calls: list[Any] = []
        with monkeypatch.context() as m:
            m.setattr(routing, "_BULK", bulk)
            route = routing.Router.route
            m.setattr(routing.Router, "route", lambda self, s, d, c=calls: c.append((s, d)) or route(self, s, d))
            out.append((simulate(*args, **kw), len(calls)))
    (on, on_calls), (off, off_calls) = out
    _same(on, off)
    assert (on.events, on.engine, repr(on.time_s)) == (off.events, off.engine, repr(off.time_s))
    return on, on_calls, off_calls


RUNS = [
    ("dgx:hosts=8,ecmp=hash", "allreduce", "double-binary-tree:chunks=8", "16MiB"),
    ("dgx:hosts=8,ecmp=hash", "allreduce", "ring:order=rank", "4MiB"),
    ("dgx:hosts=6,gpus_per_host=4,hosts_per_leaf=2,ecmp=destination", "allreduce", "halving-doubling", "4MiB"),
    ("hgx:hosts=4,preset=dgx-h100,ecmp=hash,hosts_per_leaf=2", "allreduce", "tree:chunks=4", "8MiB"),
    ("hgx:hosts=2,preset=dgx-h100", "allreduce", "nccl", "64MiB"),
    ("hgx:hosts=3,preset=dgx-h100", "allreduce", "ring:channels=16", "16MiB"),
    ("leaf-spine:leaves=4,hosts_per_leaf=3,spines=2,bandwidth=100Gbps", "allgather", "ring:order=rank", "4MiB"),
]


@pytest.mark.parametrize("topology, collective, algorithm, size", RUNS)
def test_whole_runs_the_same_and_the_fast_path_at_the_message_level(monkeypatch, topology, collective, algorithm, size):
    fast, on_calls, off_calls = _both(monkeypatch, topology, collective, algorithm, size, engine="auto")
    message, _, _ = _both(monkeypatch, topology, collective, algorithm, size, engine="message")
    assert fast.time_s == pytest.approx(message.time_s, rel=1e-9)
    assert on_calls < off_calls


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("algorithm", ["ring:order=rank", "double-binary-tree:chunks=4", "halving-doubling"])
def test_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    graph = perturb(dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=2, ecmp="hash"), seed, stragglers=3)
    fast, _, _ = _both(monkeypatch, graph, "allreduce", algorithm, 2**20 + 17 * seed, engine="auto", gamma=1e-11)
    message, _, _ = _both(monkeypatch, graph, "allreduce", algorithm, 2**20 + 17 * seed, engine="message", gamma=1e-11)
    assert fast.time_s == pytest.approx(message.time_s, rel=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_random_cases(monkeypatch, seed):
    """Random clusters (shortest paths by Dijkstra: :meth:`Router.routes` pair by pair) against the
    message level, which routes each pair with :meth:`Router.route` as it first sends on it."""
    c = case(seed)
    kw = {"ranks": c.ranks, "gamma": c.gamma}
    fast, _, _ = _both(monkeypatch, c.graph, c.collective, c.algorithm, c.size, engine="auto", **kw)
    message = simulate(c.graph, c.collective, c.algorithm, c.size, engine="message", **kw)
    assert fast.time_s == pytest.approx(message.time_s, rel=1e-9)
    assert fast.link_bytes == pytest.approx(message.link_bytes, rel=1e-9)
