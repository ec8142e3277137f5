"""The congested fast path's per-instant work on tree-1k, second round (docs/performance-log.md, "tree1k5"):
the path table's columns grown without zeroing what is copied, one block of routes taken as the router gave
it, the solve of every flow's table of paths kept from call to call, the executor's ``st.held`` not read back
and the per-link rooms zeroed by eight-byte stores (results pinned to main 83ac2b7)."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from sim import cluster as cluster_mod
from sim import dataflow as dataflow_mod
from sim.cluster import Cluster
from sim.network import Network
from sim.simulate import simulate


@pytest.mark.parametrize("dtype", [np.int64, np.float64, bool])
def test_grown_values_then_zeros(dtype: type) -> None:
    """_grown: the values, then zeros to the size asked (the dtype kept; -0.0 copied as it is)."""
    values = np.array([3, -1, 5], dtype=dtype)
    for size in (3, 4, 64, 1000):
        got = cluster_mod._grown(values, size)
        want = np.zeros(size, dtype=dtype)
        want[:3] = values
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
    f = cluster_mod._grown(np.array([-0.0, 1.0]), 5)
    assert np.signbit(f).tolist() == [True, False, False, False, False]


@pytest.mark.parametrize("spec", ["dgx:hosts=4,ecmp=hash", "two-rack-2to1"])
def test_routes_of_all_pairs_are_the_routers(spec: str) -> None:
    """Every pair's interned route (one block of the router's routes, taken as it is) is the router's route of
    its pair, arc for arc, and every id its pair's."""
    c = Cluster(spec)
    n = c.size
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    ids = c.path_ids(src[keep], dst[keep])
    node = c.rank_node
    for pid, s, d in zip(ids.tolist(), src[keep].tolist(), dst[keep].tolist(), strict=True):
        assert c.paths.arcs_of(pid).tolist() == list(c._node_route(int(node[s]), int(node[d])))
        assert c.path_id(s, d) == pid


def test_arc_bytes_sums() -> None:
    """Network.arc_bytes: each arc's bytes as np.add.at sums them over the paths that carried any, and zeros
    (float64, one per arc) before any path carried a byte."""
    r = simulate(Cluster("dgx:hosts=4,ecmp=hash"), "allreduce", "tree", "16MiB", engine="fast")
    assert r.link_bytes > 0
    c = Cluster("dgx:hosts=2,ecmp=hash")
    net = Network(simpy.Environment(), c)
    got = net.arc_bytes
    assert got.dtype == np.float64 and got.shape == (c.num_arcs,) and not got.any()


_LS = "leaf-spine:leaves=8,hosts_per_leaf=16,spines=2,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"

# (spec, algorithm, size): time, fast events, message events, flows on main 83ac2b7
_PINNED = [
    ("dgx:hosts=32,ecmp=hash", "tree", "256MiB", (0.1169583541688889, 215, 1082, 510)),
    ("dgx:hosts=8,ecmp=hash", "tree", "64MiB", (0.01717684302222222, 87, 314, 126)),
    ("dgx:hosts=16,ecmp=hash", "tree:chunks=4", "64MiB", (0.012571887946666664, 646, 1646, 1016)),
    (_LS, "double-binary-tree:chunks=4", "16MiB", (0.006442342079999998, 101, 109, 2032)),
    (_LS, "halving-doubling", "16MiB", (0.006943351903850689, 704, 1062, 1792)),
]


def test_congested_results_unchanged_in_turn() -> None:
    """Runs of several sizes one after another in one process (the solve's table of paths kept from call to
    call, a bigger one before a smaller and after it): the times, event and flow counts of main 83ac2b7 to the
    bit on both engines, and a run repeated at the end equal to its first."""
    seen = {}
    for spec, algorithm, size, want in [*_PINNED, _PINNED[0], _PINNED[1]]:
        fast = simulate(Cluster(spec), "allreduce", algorithm, size, engine="fast")
        message = simulate(Cluster(spec), "allreduce", algorithm, size, engine="message")
        got = (fast.time_s, fast.events, message.events, fast.flows)
        assert (message.time_s, message.flows) == (got[0], got[3])
        assert got == want
        assert seen.setdefault((spec, algorithm, size), got) == got


@pytest.mark.parametrize(
    ("spec", "algorithm"), [("dgx:hosts=8,ecmp=hash", "tree"), ("dgx:hosts=4,ecmp=hash", "tree:chunks=4")]
)
def test_executor_state_as_the_python_lines(spec: str, algorithm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor's ``st.held`` and ``st.end`` after a run with DfDone (its held sum not read back, its end
    not stored again where it is now's object) as the Python lines of ``_on_flows_done`` leave them."""
    made: list[dataflow_mod.DataflowExecutor] = []
    init = dataflow_mod.DataflowExecutor.__init__

    def spy(self: dataflow_mod.DataflowExecutor, *args: object) -> None:
        init(self, *args)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(dataflow_mod.DataflowExecutor, "__init__", spy)
    got = []
    for core in (True, False):
        monkeypatch.setattr(dataflow_mod, "_DF_CORE", core and dataflow_mod._DF_CORE)
        made.clear()
        r = simulate(Cluster(spec), "allreduce", algorithm, "16MiB", engine="fast")
        assert len(made) == 1
        st = made[0].st
        got.append((r.time_s, r.events, st.held, type(st.held), st.end, type(st.end)))
    assert got[0] == got[1]
    assert got[0][2] == len(made[0].flow)
