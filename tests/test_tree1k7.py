"""tree1k7: an up-down router's bulk routes (the compiled ``updown_routes``) replay a recorded search above a
node left alone on its level without copying its steps: the descent reads a node's arcs down from the
recorded steps themselves (a list of several where a node above has more than one arc down within the
block). Every pair's route is still :meth:`Router.route`'s, on three-level trees whose cores have two or
more aggregation switches below them (the lists of several), weighted and not, in any pair order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sim.routing as routing
from sim.cluster import Cluster
from sim.topology.graph import ClusterBuilder

from .test_routing_bulk import _check

pytestmark = pytest.mark.skipif(routing._CORE is None, reason="the compiled core is not built (or COLLSIM_PURE=1)")


def _three_levels(seed: int, weighted: bool) -> Any:
    """Single-GPU hosts, two or three under each of four leaves (one leaf each), every leaf under both
    aggregation switches of its pod (two pods), every aggregation switch under two or three cores."""
    rng = np.random.default_rng(seed)
    b = ClusterBuilder(f"three-levels-{seed}-{int(weighted)}")
    cores = [f"core{i}" for i in range(3)]
    for s in cores:
        b.add_switch(s)

    def weight() -> float:
        return float(rng.choice([1.0, 1.0, 2.0])) if weighted else 1.0

    h = 0
    for pod in range(2):
        aggs = [f"agg{pod}{i}" for i in range(2)]
        for agg in aggs:
            b.add_switch(agg)
            for core in rng.choice(cores, size=int(rng.integers(2, 4)), replace=False):
                b.add_link(agg, str(core), bandwidth=1e9, weight=weight())
        for leaf in (f"leaf{pod}{i}" for i in range(2)):
            b.add_switch(leaf)
            for agg in aggs:
                b.add_link(leaf, agg, bandwidth=1e9, weight=weight())
            for _ in range(int(rng.integers(2, 4))):
                (gpu,) = b.add_host(f"h{h}", gpus=1)
                b.add_link(gpu, leaf, bandwidth=1e9, weight=weight())
                h += 1
    return b.build(routing="updown")


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_three_level_trees(seed, weighted):
    """Every pair of nodes (destinations together, as the router groups them), then the GPUs' pairs in a
    shuffled order (destinations apart): each route the router's."""
    cl = Cluster(_three_levels(seed, weighted))
    assert cl.router.mode == "updown"
    n = len(cl.nodes)
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    assert _check(cl.router, a.ravel(), b.ravel()) > 0
    gpus = cl.rank_node[: cl.size].astype(np.int64)
    a, b = np.meshgrid(gpus, gpus, indexing="ij")
    order = np.random.default_rng(seed).permutation(a.size)
    assert _check(cl.router, a.ravel()[order], b.ravel()[order]) == a.size


def test_dgx_many_destinations_one_call():
    """A DGX fabric's GPUs to every other GPU in one call (each leaf's spines replayed for every destination
    under it after the first), and a second call after it (its own recordings)."""
    cl = Cluster("dgx:hosts=8,ecmp=hash,hosts_per_leaf=2")
    gpus = cl.rank_node[: cl.size].astype(np.int64)
    a, b = np.meshgrid(gpus, gpus, indexing="ij")
    for _ in range(2):
        assert _check(cl.router, a.ravel(), b.ravel()) == a.size
