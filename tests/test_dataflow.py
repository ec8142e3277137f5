"""Dataflow programs (sim/dataflow.py): messages with dependencies, run message by message with the
data check and vectorized (``fast:dataflow``); the pipelined trees take the fast path this way.

tests/test_fastpath.py holds the fast path of every algorithm with a dataflow to its message-level run
(1e-9, every kind of fabric, stragglers and slow links); here: the rules themselves on hand-built
programs, the trees' dataflows against the hand-written tree processes, and the data check."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from sim.algorithms.double_binary_tree import dbt_dataflow
from sim.algorithms.tree import tree_dataflow
from sim.cluster import Cluster
from sim.dataflow import ARRIVED, HELD, DataflowBuilder, DataflowExecutor, run_dataflow
from sim.network import Network
from sim.runtime import DataCheck, Job
from sim.simulate import simulate
from sim.topology import dgx, leaf_spine, star

from .test_fastpath import TOPOLOGIES, assert_same, both, perturb

ALPHA, BW = 1e-6, 12.5e9  # star: 1 us per link (2 per path), 100 Gb/s


def run_both(graph, flow, gamma=0.0, data=None):
    """(message-level time, vectorized time, the job) of ``flow`` on ``graph``."""
    cluster = Cluster(graph)
    env = simpy.Environment()
    job = Job(env, Network(env, cluster), flow.endpoints, 1.0, gamma=gamma, data=data)
    env.run(env.process(run_dataflow(job, flow)))
    env2 = simpy.Environment()
    fast = DataflowExecutor(Network(env2, cluster), flow, gamma, cluster.compute_scale)
    env2.run(env2.process(fast.run()))
    return env.now, env2.now, job


def test_arrived_and_held_mean_what_they_say():
    """0 -> 1 (reduced at 1), then 1 -> 2 once 1 holds it, and 0 -> 2 once 0's first send has landed."""
    n, gamma = 1e6, 1e-10
    b = DataflowBuilder(3)
    first = b.messages([0], [1], n, reduce=True, proc=[1], seg=0)
    fwd = b.messages([1], [2], n, reduce=False, proc=[2], seg=0)
    again = b.messages([0], [2], n, reduce=False, proc=[2], seg=1)
    b.after(fwd, first, HELD)
    b.after(again, first, ARRIVED)
    flow = b.build()
    hop = 2 * ALPHA + n / BW
    for g in (0.0, gamma):
        slow, fast, _ = run_both(star(3, "100Gbps", "1us"), flow, gamma=g)
        # fwd leaves after the reduction (n·γ); again leaves at hop and shares h2's link with fwd
        # only when γ = 0 (then both start at hop together and drain at half the rate)
        expected = hop + 2 * ALPHA + 2 * n / BW if g == 0 else hop + n * g + hop
        assert slow == pytest.approx(expected, rel=1e-12)
        assert fast == pytest.approx(slow, rel=1e-12)


def test_one_processor_reduces_one_message_at_a_time():
    """Two messages reduced on one processor arrive together: the second waits for the first; on two
    processors (NCCL's channels, one SM each) they reduce side by side."""
    n, gamma = 1e6, 1e-9
    for procs, extra in (([2, 2], 2), ([2, 3], 1)):
        b = DataflowBuilder(4)
        b.messages([0, 1], [2, 2], n, reduce=True, proc=procs, seg=0)
        flow = b.build()
        slow, fast, _ = run_both(star(4, "100Gbps", "1us"), flow, gamma=gamma)
        assert slow == pytest.approx(2 * ALPHA + 2 * n / BW + extra * n * gamma, rel=1e-12)
        assert fast == pytest.approx(slow, rel=1e-12)


def test_a_gate_holds_a_reduction_back():
    """A message that arrives early is reduced only once its gate has passed."""
    n, gamma = 1e6, 1e-9
    b = DataflowBuilder(3)
    early = b.messages([0], [1], n, reduce=True, proc=[1], seg=0)
    slow_msg = b.messages([2], [1], 4 * n, reduce=False, proc=[1], seg=1)
    b.gate(early, slow_msg, HELD)
    flow = b.build()
    slow, fast, _ = run_both(star(3, "100Gbps", "1us"), flow, gamma=gamma)
    # both share h1's link until the small one is done (n at half rate), then the big one alone
    big_done = 2 * ALPHA + 2 * n / BW + 3 * n / BW
    assert slow == pytest.approx(big_done + n * gamma, rel=1e-12)
    assert fast == pytest.approx(slow, rel=1e-12)


@pytest.mark.parametrize("p", [2, 3, 5, 7, 8])
@pytest.mark.parametrize("chunks", [1, 3])
@pytest.mark.parametrize("gamma", [0.0, 1e-10])
def test_tree_dataflow_is_the_hand_written_tree(p, chunks, gamma):
    """The tree's dataflow, run message by message, gives the hand-written tree processes' time
    (stragglers and slow links included) and passes the data check; the fast path gives it too."""
    graph = perturb(star(p, "100Gbps", "1us"), seed=p + chunks)
    flow = tree_dataflow(p, 3e6, chunks)
    slow, fast, job = run_both(graph, flow, gamma, DataCheck("allreduce", p, chunks))
    assert job.data.wrong_ranks() == []
    ref = simulate(graph, "allreduce", f"tree:chunks={chunks}", 3e6, gamma=gamma, engine="message")
    assert slow == pytest.approx(ref.time_s, rel=1e-12)
    assert fast == pytest.approx(ref.time_s, rel=1e-12)


@pytest.mark.parametrize("p", [2, 3, 6, 8, 11])
def test_double_binary_tree_dataflow_passes_the_data_check(p):
    flow = dbt_dataflow(p, 3e6, 4)
    _, _, job = run_both(perturb(star(p, "100Gbps", "1us"), seed=p), flow, 1e-10, DataCheck("allreduce", p, 8))
    assert job.data.wrong_ranks() == []
    assert simulate(star(p, "100Gbps", "1us"), "allreduce", "double-binary-tree:chunks=4", 3e6, check=True).wrong == 0


def test_the_data_check_catches_a_broken_dataflow():
    """Dropping the message that carries one child's chunk up the tree loses its contribution."""
    flow = tree_dataflow(4, 1e6, 2)
    keep = np.ones(len(flow), dtype=bool)
    keep[0] = False  # rank 1's chunk 0 to rank 0
    b = DataflowBuilder(4)
    ids = -np.ones(len(flow), dtype=np.int64)
    ids[keep] = np.arange(keep.sum())
    for m in np.flatnonzero(keep).tolist():
        b.messages(
            [flow.src[m]],
            [flow.dst[m]],
            flow.nbytes[m],
            reduce=bool(flow.combine[m]),
            proc=[flow.proc[m]],
            seg=flow.seg_lo[m],
        )
    for edges, add in ((flow.deps, b.after), (flow.gates, b.gate)):
        m, on, kind = edges
        for k in (ARRIVED, HELD):
            sel = (kind == k) & keep[m] & keep[on]
            add(ids[m[sel]], ids[on[sel]], k)
    broken = b.build()
    _, _, job = run_both(star(4, "100Gbps", "1us"), broken, 0.0, DataCheck("allreduce", 4, 2))
    assert job.data.wrong_ranks() != []


@pytest.mark.parametrize("spec", ["tree", "tree:chunks=5", "double-binary-tree", "double-binary-tree:chunks=4"])
@pytest.mark.parametrize("gamma", [0.0, 3e-11])
def test_congested_trees_many_flows_on_few_links(spec, gamma):
    """A 16:1 oversubscribed leaf-spine with several GPUs per host: most tree edges cross the two
    uplinks, flows end at many distinct instants; the fast path follows the message level."""
    graph = leaf_spine(2, 4, 1, "100Gbps", "25Gbps", "1us", gpus_per_host=2, intra_bandwidth="200GB/s")
    a, b = both(graph, "allreduce", spec, 7 * 2**20 + 5, gamma=gamma)
    assert b.engine == "fast:dataflow"
    assert_same(a, b)


def test_trees_take_the_dataflow_path_unless_checking():
    g = TOPOLOGIES["dgx"]
    assert simulate(g, "allreduce", "tree:chunks=4", 2**20).engine == "fast:dataflow"
    assert simulate(g, "allreduce", "double-binary-tree", 2**20).engine == "fast:dataflow"
    assert simulate(g, "allreduce", "tree", 2**20, check=True).engine == "message"
    assert (
        simulate(dgx(hosts=2, gpus_per_host=2), "allreduce", "double-binary-tree:chunks=2", 2**20, check=True).wrong
        == 0
    )


@pytest.mark.parametrize("root", [1, 4])
def test_tree_dataflow_follows_the_root(root):
    """The heap tree counted from another root: the fast path still gives the message level's time."""
    graph = perturb(dgx(hosts=2, gpus_per_host=3), seed=root)
    a, b = both(graph, "allreduce", "tree:chunks=3", 3e6 + 1, gamma=2e-11, root=root)
    assert b.engine == "fast:dataflow"
    assert_same(a, b)


def test_a_128_gpu_pipelined_tree_costs_fewer_events_for_the_same_time():
    """No SimPy process or event per message on the fast path: the same time with far fewer events."""
    g = dgx(hosts=16)
    a, b = both(g, "allreduce", "double-binary-tree:chunks=8", "64MiB")
    assert_same(a, b)
    assert b.events < a.flows / 3  # (the message level takes fewer steps than messages too: sim.network)


def test_a_dataflow_too_large_to_hold_is_refused_and_the_tree_runs_its_processes(monkeypatch):
    import sim.algorithms.tree as tree_module
    import sim.dataflow as dataflow_module
    from sim.errors import RunError

    monkeypatch.setattr(dataflow_module, "MAX_MESSAGES", 100)
    monkeypatch.setattr(tree_module, "MAX_MESSAGES", 100)
    with pytest.raises(RunError, match="too large"):
        dbt_dataflow(8, 1e6, 8)
    g = star(8, "100Gbps", "1us")
    assert simulate(g, "allreduce", "tree:chunks=8", 1e6).engine == "message"
    assert simulate(g, "allreduce", "tree:chunks=4", 1e6).engine == "fast:dataflow"
