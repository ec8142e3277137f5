"""The congested fast path's per-instant work on tree-1k (docs/performance-log.md, "tree1k4"): the routes'
latencies in one compiled pass (``row_latency``, numpy's row sums to the bit), a one-chunk tree's dataflow
without its empty rows, and the core's reloads and per-link sets (results pinned to main 6d04641)."""

from __future__ import annotations

import numpy as np
import pytest

from sim import cluster as cluster_mod
from sim.algorithms import tree as tree_mod
from sim.cluster import Cluster
from sim.simulate import simulate

_CORE = cluster_mod._CORE


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("seed", range(4))
def test_row_latency_equal_numpy(seed: int) -> None:
    """Each row's sum as numpy's ``sum(axis=1)`` makes it, bit for bit: rows of 1 to 300 arcs (numpy's
    pairwise sum: one by one under 8, eight running sums up to 128, halves beyond), -0.0 and 0.0 latencies,
    arcs beyond the table (take's wrap) and the padding."""
    rng = np.random.default_rng(seed)
    for width in [*range(1, 40), 63, 64, 65, 127, 128, 129, 136, 255, 256, 257, 300]:
        lat = rng.random(50) * 10.0 ** rng.integers(-9, 2, size=50)
        lat[rng.random(50) < 0.2] = 0.0
        lat[rng.random(50) < 0.1] = -0.0
        rows = rng.integers(-1, 70, size=(20, width))
        rows[0] = -1
        want = np.where(rows >= 0, lat.take(rows, mode="wrap"), 0.0).sum(axis=1)
        got = np.empty(len(rows))
        _CORE.row_latency(rows.reshape(-1), width, lat, got)
        assert got.tobytes() == want.tobytes(), width


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("spec", ["dgx:hosts=4,ecmp=hash", "two-rack-2to1", "torus:dims=4x4,bandwidth=1Gbps"])
def test_latencies_of_routes_equal_numpy(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cluster._latencies of every pair's route: the compiled pass and the numpy lines, to the bit."""
    c = Cluster(spec)
    n = c.size
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    c.path_ids(src[keep], dst[keep])
    p = c.paths
    rows = np.full((p.count, int(p.length[: p.count].max())), -1, dtype=np.int64)
    for pid in range(p.count):
        arcs = p.arcs_of(pid)
        rows[pid, : len(arcs)] = arcs
    got = c._latencies(rows)
    monkeypatch.setattr(cluster_mod, "_CORE", None)
    want = c._latencies(rows)
    assert got.tobytes() == want.tobytes()
    assert got.tobytes() == p.latency[: p.count].tobytes()


def test_rows_without_rows_are_the_first_parts() -> None:
    """_rows with no row to write (a one-chunk tree): the first parts alone, as the general lines give them."""
    places = [np.arange(5, dtype=np.int32), np.array([3, 0, 7], dtype=np.int32)]
    first = [(10, places[0]), (100, places[1])]
    rest = [(1, places[1]), (2, places[0])]
    want = np.concatenate([10 + places[0], 100 + places[1]]).astype(np.int32)
    got = tree_mod._rows(first, rest, 0, 9)
    assert got.dtype == np.int32
    assert got.tolist() == want.tolist()
    rows = [[4, 1, 8, 2, 3, 4, 5, 6], [13, 10, 17, 11, 12, 13, 14, 15]]  # (rows to write: after the first parts)
    for k in (1, 2):
        got = tree_mod._rows(first, rest, k, 9)
        assert got.tolist() == want.tolist() + sum(rows[:k], [])


_LS = "leaf-spine:leaves=8,hosts_per_leaf=16,spines=2,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"


@pytest.mark.parametrize(
    ("spec", "algorithm", "size", "want"),
    [
        ("dgx:hosts=32,ecmp=hash", "tree", "256MiB", (0.1169583541688889, 215, 1082, 510)),
        ("dgx:hosts=16,ecmp=hash", "tree:chunks=4", "64MiB", (0.012571887946666664, 646, 1646, 1016)),
        (_LS, "double-binary-tree:chunks=4", "16MiB", (0.006442342079999998, 101, 109, 2032)),
        (_LS, "halving-doubling", "16MiB", (0.006943351903850689, 704, 1062, 1792)),
    ],
)
def test_congested_results_unchanged(spec: str, algorithm: str, size: str, want: tuple) -> None:
    """The reloads from each link's flag at no load, the per-link sets' rooms cut from blocks and the one-chunk
    dataflow: the times, event and flow counts of main 6d04641 to the bit, on both engines (time, fast events,
    message events, flows)."""
    fast = simulate(Cluster(spec), "allreduce", algorithm, size, engine="fast")
    message = simulate(Cluster(spec), "allreduce", algorithm, size, engine="message")
    assert (fast.time_s, fast.events, message.events, fast.flows) == want
    assert (message.time_s, message.flows) == (want[0], want[3])
