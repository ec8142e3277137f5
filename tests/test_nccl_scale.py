"""NCCL's schedules at scale: the fast path finds their steady state and jumps over it exactly, and the
layout of their channels (NICs, endpoints, routes) costs what it touches."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.fastpath import FastExecutor
from sim.maxplus import contention_free
from sim.nccl.layout import nics_of
from sim.nccl.pipeline import Streams
from sim.network import Network
from sim.program import Step, StepProgram
from sim.simulate import simulate
from sim.topology import dgx, hgx


def _fast(graph, spec, size, gamma):
    """The step program run by the fast path alone on the network: (time, steps jumped over)."""
    cluster = Cluster(graph)
    program = get_algorithm("allreduce", spec).program(cluster.size, size, cluster)
    env = simpy.Environment()
    executor = FastExecutor(Network(env, cluster), program, gamma, cluster.compute_scale, alone=True)
    env.run(env.process(executor.run()))
    assert executor.mode == "events"
    return env.now, executor.extrapolated_steps


@pytest.mark.parametrize(
    "fabric, spec, size",
    [
        ("dgx-h100", "ring:channels=8", 2**24),
        ("oci-bm-gpu-h100-8", "ring:channels=4", 2**28),
        ("oci-bm-gpu4-8", "ring:channels=8", 2**26),
        ("dgx", "ring:channels=8", 2**26),
        ("dgx-h100", "nvls-tree", 2**28),
        ("oci-bm-gpu-h100-8", "nvls-tree", 2**28),
        ("dgx-h100/fat-tree", "nvls-tree", 2**28),
        ("dgx-h100", "nccl", 2**28),
        # (the plugin's NCCL_BUFFSIZE of 8 MiB, v1.16.0 on, gives p4d's Tree/Simple 1 MiB steps: half the slices
        # of 256 MiB, too few to reach a steady state; 512 MiB has them)
        ("aws-p4d", "nccl", 2**29),
        ("aws-p5", "nccl", 2**28),
    ],
)
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_channels_reach_a_steady_state_that_is_jumped_over_exactly(fabric, spec, size, gamma):
    """NCCL's actors are endpoints of their own (rank 0 sends nothing): the steady-state detection follows
    an endpoint that has messages and leaves the idle, finished ones out of the state. The jump must
    happen, and give the message-level time to 1e-9 (rail fabrics, a fat-tree, the plain DGX builder)."""
    preset, _, tree = fabric.partition("/")
    if preset == "dgx":
        graph = dgx(2, gpus_per_host=4)
    else:
        graph = hgx(2, preset, gpus_per_host=4, fabric=tree or "rail")
    t, jumped = _fast(graph, spec, size, gamma)
    message = simulate(graph, "allreduce", spec, size, engine="message", gamma=gamma)
    assert jumped > 0
    assert abs(t - message.time_s) <= 1e-9 * message.time_s


@pytest.mark.parametrize(
    "graph",
    [hgx(2, "dgx-h100"), hgx(2, "oci-bm-gpu-h100-8"), hgx(2, "hgx-a100-200g"), hgx(1, "oci-bm-gpu4-8"), dgx(2)],
    ids=["dgx-h100", "oci-h100", "hgx-a100", "oci-a100", "dgx"],
)
def test_nic_table_equals_a_scan_of_the_graph(graph):
    """The per-graph NIC table gives what scanning the graph per rank gave: the NICs linked to the GPU,
    else those naming it (on its host) as their GPU."""
    cluster = Cluster(graph)
    g = cluster.graph
    for r in range(cluster.size):
        gpu = cluster.ranks[r]
        direct = sorted(v for v in g.successors(gpu) if g.nodes[v].get("kind") == "nic")
        host = g.nodes[gpu].get("host")
        owned = sorted(
            v for v, d in g.nodes(data=True) if d.get("kind") == "nic" and d.get("gpu") == gpu and d.get("host") == host
        )
        assert nics_of(cluster, r) == (direct or owned)
        assert nics_of(cluster, r)  # every GPU of these hosts owns a NIC


def test_endpoints_grow_past_their_buffers():
    """Endpoints added one at a time (NCCL's channels) land in doubling buffers: every one keeps its
    node, its rank's overhead and compute scale; an engine has no compute scale; routes work."""
    cluster = Cluster(hgx(1, "dgx-h100"))
    p = cluster.size
    added = [cluster.add_endpoint(rank=r % p, key=("t", i)) for i, r in enumerate(range(5 * p))]
    engine = cluster.add_endpoint(node="h0", key="engine")
    assert added == list(range(p, 6 * p)) and engine == 6 * p
    assert cluster.endpoints == 6 * p + 1
    assert len(cluster.rank_node) == len(cluster.overhead) == len(cluster.compute_scale) == cluster.endpoints
    for i, e in enumerate(added):
        r = i % p
        assert cluster.rank_node[e] == cluster.rank_node[r]
        assert cluster.overhead[e] == cluster.overhead[r]
        assert cluster.compute_scale[e] == cluster.compute_scale[r]
    assert cluster.compute_scale[engine] == 0.0
    assert cluster.add_endpoint(rank=3, key=("t", 3)) == added[3]  # idempotent
    assert cluster.alpha_beta(added[1], added[2])[0] == cluster.alpha_beta(1, 2)[0]


def test_pipeline_steps_borrow_their_routes():
    """A pipelined schedule's steps are subsets of one edge set: they look routes up through it, and
    find the ones a lookup per message finds."""
    cluster = Cluster(hgx(2, "dgx-h100", gpus_per_host=4))
    program = get_algorithm("allreduce", "nvls-tree").program(cluster.size, 2**24, cluster)
    net = Network(simpy.Environment(), cluster)
    shared = [step for step, _ in program.phases if step.routes_of is not None]
    assert len(shared) == len(program.phases)
    assert len({id(step.routes_of[0]) for step in shared}) == 1
    for step in shared:
        direct = [cluster.path_id(s, d) for s, d in zip(step.src.tolist(), step.dst.tolist(), strict=True)]
        assert step.pids(net).tolist() == direct
        assert step.from_repetition(2).pids(net).tolist() == direct


def test_repeated_pairs_are_still_refused_or_checked_per_step():
    """A pair that repeats among a pipeline's edges (in steps that do not overlap) is legal: the steps are
    then checked one by one and route themselves; in one step it is refused."""
    s = Streams(3, 2)
    s.add([0], [1], 10.0, lag=0, reduce=False, off=0, scale=1)
    s.add([0], [1], 10.0, lag=2, reduce=False, off=0, scale=1)
    program = s.program()
    assert all(step.routes_of is None for step, _ in program.phases)
    with pytest.raises(ValueError, match="once per step"):
        Step.make([0, 0], [1, 1], 1.0, endpoints=2)


def test_contention_check_stops_at_the_first_shared_link():
    """Two senders on one link direction in the first phase: not contention-free, whatever follows; one
    sender per direction in every phase: contention-free."""
    cluster = Cluster(dgx(2, gpus_per_host=2))
    net = Network(simpy.Environment(), cluster)
    fan_in = Step.make([0, 1], [2, 2], 1.0, endpoints=4)
    ring = Step.make([0, 1, 2, 3], [1, 2, 3, 0], 1.0, endpoints=4)
    assert not contention_free(StepProgram(4, ((fan_in, 1), (ring, 3))), net)
    assert contention_free(StepProgram(4, ((ring, 3),)), net) == contention_free(
        StepProgram(4, ((ring, 3), (ring, 2))), net
    )
    assert np.isfinite(simulate(dgx(2, gpus_per_host=2), "allreduce", "ring", 2**20).time_s)
