"""Routes of NCCL's actors interned many at once (``Cluster.path_ids`` -> ``_route_many``, each
(source node, NIC, destination node) routed once) are the routes ``path_id`` gives pair by pair."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cluster import Cluster
from sim.errors import RoutingError
from sim.nccl.layout import channel_endpoint, engine


def _endpoints(cluster: Cluster) -> list[int]:
    """Ranks and channel actors on both NICs of every GPU (two keys per NIC)."""
    ends = list(range(cluster.size))
    for r in range(cluster.size):
        for nic in range(2):
            for key in range(2):
                ends.append(channel_endpoint(cluster, r, ("test", nic, key), nic))
    return ends


def _pairs(cluster: Cluster, ends: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Random pairs of ``ends``, and every NVSwitch engine to and from its host's GPUs."""
    rng = np.random.default_rng(7)
    pick = np.array(ends)[rng.choice(len(ends), size=(2, 3000))]
    src, dst = pick[0].tolist(), pick[1].tolist()
    for r in range(cluster.size):
        e = engine(cluster, r, "reduce")
        src += [e, r]
        dst += [r, e]
    return np.array(src), np.array(dst)


def _route(cluster: Cluster, pid: int) -> tuple[list[int], float, int, int, float]:
    p = cluster.paths
    start, length = int(p.start[pid]), int(p.length[pid])
    return (
        p.arcs[start : start + length].tolist(),
        float(p.latency[pid]),
        int(p.src[pid]),
        int(p.dst[pid]),
        float(p.bottleneck[pid]),
    )


@pytest.mark.parametrize("spec", ["hgx:preset=dgx-h100,hosts=4", "hgx:preset=oci-bm-gpu-h100-8,hosts=4"])
def test_routes_many_at_once_equal_one_by_one(spec: str) -> None:
    many, one = Cluster(spec), Cluster(spec)
    ends = _endpoints(many)
    assert ends == _endpoints(one)
    src, dst = _pairs(many, ends)
    _pairs(one, ends)  # the engines, added to both in the same order
    pids = many.path_ids(src, dst)
    got = [_route(many, pid) for pid in pids.tolist()]
    want = [_route(one, one.path_id(s, d)) for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    assert got == want
    assert many.paths.count == one.paths.count
    crossing = [g for g, s, d in zip(got, src.tolist(), dst.tolist(), strict=True) if s >= many.size and g[0]]
    assert len({tuple(g[0]) for g in crossing}) > 100  # the NICs' own routes, many of them


def test_unroutable_pair_named_as_one_by_one() -> None:
    many, one = Cluster("hgx:preset=dgx-h100,hosts=2"), Cluster("hgx:preset=dgx-h100,hosts=2")
    e_many, e_one = engine(many, 0, "reduce"), engine(one, 0, "reduce")  # NVSwitch h0: no NIC of its own
    with pytest.raises(RoutingError) as one_by_one:
        one.path_id(e_one, 8)
    with pytest.raises(RoutingError, match="endpoint 16 .*rank 8") as at_once:
        many.path_ids(np.array([0, 1, e_many]), np.array([1, 2, 8]))
    assert str(at_once.value) == str(one_by_one.value)
