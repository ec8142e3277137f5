"""Hierarchical all-reduce on multi-GPU hosts: the data check, the two-level closed form on DGX rails,
and clear errors."""

from __future__ import annotations

import random

import pytest

from sim.algorithms.hierarchical import host_groups, two_level_cost
from sim.cluster import Cluster
from sim.errors import AlgorithmError
from sim.simulate import simulate
from sim.topology import dgx, star

OUTERS = ["ring", "tree", "halving-doubling"]


@pytest.mark.parametrize("outer", OUTERS)
@pytest.mark.parametrize(
    "graph",
    [
        dgx(hosts=4, gpus_per_host=4),
        dgx(hosts=3, gpus_per_host=2),
        star(5, "100Gbps", "1us", gpus_per_host=3, intra_bandwidth="300GB/s"),
    ],
    ids=["dgx-4x4", "dgx-3x2", "star-5x3"],
)
def test_every_contribution_exactly_once(graph, outer):
    r = simulate(graph, "allreduce", f"hierarchical:outer={outer}", 6 * 2**20 + 5, check=True, gamma=1e-11)
    assert r.wrong == 0 and r.engine == "message"


@pytest.mark.parametrize("outer, hosts", [("ring", 4), ("halving-doubling", 4), ("tree", 3), ("tree", 2)])
@pytest.mark.parametrize("gamma", [0.0, 2e-11])
def test_two_level_closed_form_on_dgx_rails(outer, hosts, gamma):
    """Hosts on one leaf per rail: intra-host messages cross GPU->NVSwitch->GPU (α_i = 2 x NVLink
    latency, β_i = 1/(450 GB/s)); inter-host ones GPU->NIC->leaf->NIC->GPU on one rail (α_o = 2 x 1 us,
    β_o = 1/(50 GB/s)). Every phase is contention-free and in lock-step, so the closed form is exact."""
    g = 8
    n = 64 * 2**20
    r = simulate(dgx(hosts=hosts), "allreduce", f"hierarchical:outer={outer}", n, gamma=gamma)
    expected = two_level_cost(outer, g, hosts, n, 2 * 0.6e-6, 1 / 450e9, 2 * 1e-6, 1 / 50e9, gamma)
    assert r.time_s == pytest.approx(expected, rel=1e-9)
    # ring phases are contention-free (closed form); a tree's two children share their parent's link
    # and halving-doubling partners take turns on a rank's link: the event-driven executor
    contention_free = outer == "ring" or (outer == "tree" and hosts == 2)
    assert r.engine == ("fast:maxplus" if contention_free else "fast:events")


def test_hierarchical_beats_the_flat_ring_on_many_hosts():
    """With 8 GPUs per host, the flat ring pays 2(p-1) network latencies, hierarchical 2(H-1)."""
    graph = dgx(hosts=16)
    flat = simulate(graph, "allreduce", "ring", "1MiB")
    hier = simulate(graph, "allreduce", "hierarchical", "1MiB")
    assert hier.time_s < flat.time_s


def test_hosts_must_hold_the_same_number_of_ranks():
    with pytest.raises(AlgorithmError, match="same number of ranks"):
        simulate(dgx(hosts=2, gpus_per_host=4), "allreduce", "hierarchical", 2**20, ranks=6)


def _groups_by_name(cluster, p):
    """host_groups's rule spelled out: ranks by host name, hosts in order of their first rank."""
    groups: dict[str, list[int]] = {}
    for r in range(p):
        groups.setdefault(cluster.host_of(r), []).append(r)
    return list(groups.values())


def test_host_groups_follow_the_hosts_in_rank_order():
    g = dgx(4, gpus_per_host=3)
    order = list(g.graph["ranks"])
    random.Random(3).shuffle(order)  # a placement that interleaves the hosts
    g.graph["ranks"] = order
    for cluster in (Cluster(g), Cluster("dgx:hosts=3,gpus_per_host=4"), Cluster(star(5, "1Gbps"))):
        for p in range(1, cluster.size + 1):
            want = _groups_by_name(cluster, p)
            if len({len(x) for x in want}) > 1:
                with pytest.raises(AlgorithmError):
                    host_groups(cluster, p)
            else:
                assert host_groups(cluster, p) == want
    assert host_groups(None, 3) == [[0], [1], [2]]
