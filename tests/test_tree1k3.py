"""The congested fast path's fixed costs on tree-1k, third round (docs/performance-log.md, "tree1k3"): the
compiled up-down routes (``updown_routes``) replay a destination's search for its ancestors from a node left
alone on its level (the steps recorded for the first destination that reaches that state), and keep the
climbs of a node with many arcs up (a leaf under its spines) per such node and its distance -- held to the
router's Python lines pair by pair, on fabrics where the replays are taken: DGX rails (hashed and by
destination), fat-trees, and weighted trees of three levels whose distances are sums of fractions (a
replay that summed in another order would give other bits, other ties, other routes)."""

from __future__ import annotations

import numpy as np
import pytest

import sim.routing as routing
from sim.cluster import Cluster
from sim.topology.graph import ClusterBuilder

from .test_routing_bulk import _check

pytestmark = pytest.mark.skipif(routing._CORE is None, reason="the compiled core is not built (or COLLSIM_PURE=1)")


def _weighted_fat_tree(seed: int) -> object:
    """Single-GPU hosts under one or two of six leaves, each leaf under eight of nine aggregation switches
    (enough for its climbs to be kept), each of those under two of three cores; weights 0.1 to 0.7, so
    that distances are sums of fractions whose bits depend on the order they are added in, with ties
    between ways of equal sums."""
    rng = np.random.default_rng(seed)
    b = ClusterBuilder(f"weighted-fat-tree-{seed}")
    leaves, aggs, cores = [f"leaf{i}" for i in range(6)], [f"agg{i}" for i in range(9)], [f"core{i}" for i in range(3)]
    for s in [*leaves, *aggs, *cores]:
        b.add_switch(s)
    weights = [0.1, 0.2, 0.3, 0.3, 0.7]
    for a in aggs:
        for c in rng.choice(cores, size=2, replace=False):
            b.add_link(a, str(c), bandwidth=1e9, weight=float(rng.choice(weights)))
    for leaf in leaves:
        for a in rng.choice(aggs, size=8, replace=False):
            b.add_link(leaf, str(a), bandwidth=1e9, weight=float(rng.choice(weights)))
    for h in range(12):
        (gpu,) = b.add_host(f"h{h}", gpus=1)
        for leaf in rng.choice(leaves, size=int(rng.integers(1, 3)), replace=False):
            b.add_link(gpu, str(leaf), bandwidth=1e9, weight=float(rng.choice(weights)))
    return b.build(routing="updown")


@pytest.mark.parametrize(
    "spec",
    [
        "dgx:hosts=12,ecmp=hash,hosts_per_leaf=4",
        "dgx:hosts=24,ecmp=hash,hosts_per_leaf=8",
        "dgx:hosts=24,ecmp=destination,hosts_per_leaf=8",
        "dgx:hosts=6,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash",
        "hgx:hosts=6,preset=hgx-a100-200g,fabric=fat-tree,hosts_per_leaf=2,ecmp=hash",
        "leaf-spine:leaves=4,hosts_per_leaf=3,spines=3,bandwidth=100Gbps",
        "leaf-spine:leaves=6,hosts_per_leaf=4,spines=9,bandwidth=100Gbps",
    ],
)
def test_replayed_searches_route_as_the_router(spec):
    """Every pair of ranks' GPUs in one call (the destinations under one leaf: the leaf's search replayed
    for all but the first), then random pairs of any nodes, then every pair again in a second call (the
    steps of the first call not replayed for the second's tables)."""
    cl = Cluster(spec)
    node = cl.rank_node[: cl.size].astype(np.int64)
    a, b = np.meshgrid(node, node, indexing="ij")
    assert _check(cl.router, a.ravel(), b.ravel()) == len(node) * (len(node) - 1) + len(node)
    rng = np.random.default_rng(3)
    n = len(cl.nodes)
    _check(cl.router, rng.integers(0, n, 2000), rng.integers(0, n, 2000))
    _check(cl.router, b.ravel(), a.ravel())


@pytest.mark.parametrize("seed", range(10))
def test_weighted_fat_trees(seed):
    """Every pair of nodes of a weighted three-level fabric, in one call and in a shuffled one."""
    router = Cluster(_weighted_fat_tree(seed)).router
    assert router.mode == "updown" and not router._unit
    srcs, dsts = (x.ravel() for x in np.meshgrid(np.arange(router._n), np.arange(router._n), indexing="ij"))
    for order in (np.arange(len(srcs)), np.random.default_rng(seed).permutation(len(srcs))):
        _check(router, srcs[order], dsts[order])


def test_two_routers_one_after_the_other():
    """Two clusters' routers called in turn: a replay never takes steps recorded on the other's tables."""
    one, two = Cluster("dgx:hosts=8,ecmp=hash,hosts_per_leaf=2"), Cluster("dgx:hosts=8,ecmp=hash,hosts_per_leaf=4")
    for cl in (one, two, one, two):
        node = cl.rank_node[: cl.size].astype(np.int64)
        a, b = np.meshgrid(node, node, indexing="ij")
        _check(cl.router, a.ravel(), b.ravel())
