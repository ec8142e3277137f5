"""NCCL's schedules with every message a flow: the quick lines give the reference lines' results bit for bit.

Three pieces serve the message level of NCCL's schedules (channel endpoints, NVSwitch engines, caps and
lags: programs whose flows meet on the NICs at once, so the private lane closes at the first sends):

* :func:`sim.program._plain_rank` -- each rank's process without the data check, off Python lists
  (``sim.program._PLAIN_RANKS``; the reference is :func:`~sim.program.run_messages`'s own rank);
* the compiled core's ``eng_send`` and ``sent_many`` -- a single send on the closed lane and single sends'
  arrivals (``sim.network._SEND_CORE``; the reference is :meth:`sim.network.Network.send`'s engine lines
  and :meth:`~sim.network.Network._sent`);
* :meth:`sim.cluster.Cluster._extra_route` -- one channel endpoint's route without tables over every
  endpoint (the reference is :meth:`~sim.cluster.Cluster._vias` and :meth:`~sim.cluster.Cluster._owners`).

Every case runs with the quick lines and with the reference lines, and must agree in every result and in
the events scheduled; the fast path (``engine="fast"``) must agree to 1e-9.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sim.network as network
import sim.program as program
from sim import simulate
from sim.cluster import Cluster
from sim.errors import RoutingError
from sim.topology import hgx

from .test_fastpath import assert_same, perturb
from .test_message_engine import _same

SPECS = [
    "nccl",
    "nccl-tree",
    "nvls-tree",
    "collnet-direct",
    "collnet-chain",
    "ring:channels=2",
    "ring:channels=4",
    "nccl:algo=ring",
]


def _graph(hosts: int, seed: int | None, sharp: bool = False) -> Any:
    g = hgx(hosts, "dgx-h100", gpus_per_host=4, sharp=sharp)
    return g if seed is None else perturb(g, seed)


def _both(monkeypatch: pytest.MonkeyPatch, graph: Any, spec: str, size: float, **kw: Any) -> tuple[Any, Any]:
    """The message-level run with the quick lines, and with the reference lines."""

    def run() -> Any:
        return simulate(Cluster(graph), "allreduce", spec, size, engine="message", **kw)

    quick = run()
    with monkeypatch.context() as m:
        m.setattr(network, "_SEND_CORE", False)
        m.setattr(program, "_PLAIN_RANKS", False)
        ref = run()
    _same(quick, ref)
    assert quick.events == ref.events
    return quick, ref


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("hosts, seed", [(2, None), (3, 0), (4, 1)])
def test_quick_lines_give_the_reference_results(monkeypatch, spec, hosts, seed):
    graph = _graph(hosts, seed, sharp=spec.startswith("collnet"))
    size = float(2**22 + 4096 * hosts + 3)
    quick, _ = _both(monkeypatch, graph, spec, size)
    assert_same(quick, simulate(Cluster(graph), "allreduce", spec, size, engine="fast"))


@pytest.mark.parametrize("spec", ["nccl", "nccl-tree", "nvls-tree", "ring:channels=2"])
def test_quick_lines_with_reductions_and_the_data_check(monkeypatch, spec):
    """Reductions cost time (gamma): the plain ranks compute as the reference ranks do; with the data
    check the reference ranks run, and the compiled sends still give the same results."""
    graph = _graph(2, 3)
    quick, _ = _both(monkeypatch, graph, spec, 3e6 + 7, gamma=2e-11)
    assert_same(quick, simulate(Cluster(graph), "allreduce", spec, 3e6 + 7, engine="fast", gamma=2e-11))
    checked, _ = _both(monkeypatch, graph, spec, 3e6 + 7, gamma=2e-11, check=True)
    assert checked.wrong == 0
    assert_same(checked, quick)


def test_the_compiled_sends_are_taken():
    """The closed lane's sends go through eng_send (no Python send) on an NCCL schedule."""
    if network._ops is network._PyDue:
        pytest.skip("the compiled core is not built (or COLLSIM_PURE=1)")
    calls = []
    real = network.Network._send_py if hasattr(network.Network, "_send_py") else None
    assert real is None  # (the engine's Python lines are Network.send's own)
    cluster = Cluster(_graph(2, None))
    original = network.Network.send

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    network.Network.send = counting  # type: ignore[method-assign]
    try:
        r = simulate(cluster, "allreduce", "nccl", 2**26, engine="message")
    finally:
        network.Network.send = original  # type: ignore[method-assign]
    assert r.flows > 1000
    assert len(calls) < r.flows / 10  # the few sends the core hands back (a pair's first)


@pytest.mark.parametrize("hosts", [2, 3])
def test_one_pairs_route_is_the_tables(hosts):
    """Cluster._extra_route of every pair among ranks, channel endpoints and engines: the via and the
    owners the whole-table lines (_vias, _owners) give."""
    cluster = Cluster(hgx(hosts, "dgx-h100", gpus_per_host=4))
    simulate(cluster, "allreduce", "nccl", 2**20, engine="message")  # (adds the channels' endpoints)
    simulate(cluster, "allreduce", "nvls-tree", 2**20, engine="message")  # (and the NVSwitch engines)
    n = cluster.endpoints
    assert n > cluster.size
    rng = np.random.default_rng(hosts)
    src = rng.integers(cluster.size, n, 400)
    dst = rng.integers(0, n, 400)
    node = cluster.rank_node
    vias = cluster._vias(src, node[src].astype(np.int64), node[dst].astype(np.int64))
    assert (vias >= 0).any()  # (channels that leave their host by a NIC of their own)
    routed = 0
    for s, d, v in zip(src.tolist(), dst.tolist(), vias.tolist(), strict=True):
        try:
            want = cluster._route_via(int(node[s]), v, int(node[d]))
        except RoutingError:  # (an engine of another host, say)
            with pytest.raises(RoutingError):
                cluster._extra_route(s, d)
            continue
        arcs, a, b = cluster._extra_route(s, d)
        assert arcs == want
        assert [a, b] == cluster._owners(np.array([s, d])).tolist()
        routed += 1
    assert routed > 100
