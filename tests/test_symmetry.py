"""Symmetric NCCL schedules run on one member of every orbit (sim/symmetry.py): the same times, bytes and
flows as the message level, the quotient taken where the shift is a symmetry and refused where not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import simpy

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.fastpath import FastExecutor
from sim.nccl.rings import channel_orders
from sim.network import Network
from sim.simulate import simulate
from sim.symmetry import quotient
from sim.topology import hgx


def _quotient(graph, spec, size, gamma=0.0, program=None):
    cluster = Cluster(graph)
    if program is None:
        program = get_algorithm("allreduce", spec).program(cluster.size, size, cluster)
    return quotient(program, cluster, gamma), program, cluster


def _same(fast, message):
    assert abs(fast.time_s - message.time_s) <= 1e-9 * message.time_s
    assert fast.flows == message.flows
    assert fast.link_bytes == pytest.approx(message.link_bytes, rel=1e-12)
    assert fast.traffic_bytes == pytest.approx(message.traffic_bytes, rel=1e-12)
    assert fast.max_sent_bytes == pytest.approx(message.max_sent_bytes, rel=1e-12)
    assert fast.max_received_bytes == pytest.approx(message.max_received_bytes, rel=1e-12)
    # (links tied to the last bit may come in another order: every GPU's NVLink carries the same)
    assert [u.bytes for u in fast.busiest_links] == pytest.approx([u.bytes for u in message.busiest_links], rel=1e-12)


CASES = [
    # (topology, algorithm, size, the order of the group the run is reduced by)
    (("dgx-h100", 2, {}), "ring:channels=16", 2**26, 16),
    (("dgx-h100", 2, {}), "nccl-tree", 2**26, 8),
    (("dgx-h100", 2, {}), "nvls-tree", 2**26, 8),
    (("dgx-h100", 2, {}), "nccl", 2**26, 8),
    (("dgx-h100", 2, {}), "nccl:algo=ring,proto=ll128", 2**24, 8),
    (("dgx-h100", 1, {}), "nvls", 2**26, 8),
    (("dgx-h100", 3, {"gpus_per_host": 4}), "nccl-tree:channels=4", 2**24 + 7, 4),
    (("oci-bm-gpu-h100-8", 2, {}), "nccl-tree", 2**26, 8),
    (("oci-bm-gpu-h100-8", 2, {"gpus_per_host": 4}), "nvls-tree", 2**24, 4),
    (("hgx-a100-200g", 2, {}), "ring:channels=8", 2**26, 8),
    # a NIC per two GPUs: only the shift by two GPUs keeps every route's shape
    (("dgx-h100", 2, {"nics_per_host": 4}), "nvls-tree", 2**24, 4),
    (("dgx-h100", 2, {"nics_per_host": 2, "gpus_per_host": 4}), "nccl", 3 * 2**23, 2),
    # across spines: one rail's ring hops map onto the next rail's, link for link; and one leaf group's
    # onto the next's (the rings' translation by 2 hosts, order 4: tests/test_ring_translation.py)
    (("dgx-h100", 8, {"hosts_per_leaf": 2, "gpus_per_host": 4}), "ring:channels=8", 2**24, 32),
]


@pytest.mark.parametrize("topology, spec, size, order", CASES)
@pytest.mark.parametrize("gamma", [0.0, 3e-11])
def test_the_quotient_run_gives_the_message_level_times_bytes_and_flows(topology, spec, size, order, gamma):
    preset, hosts, options = topology
    graph = hgx(hosts, preset, **options)
    reduced, program, _ = _quotient(graph, spec, size, gamma)
    assert reduced is not None and reduced.order == order
    kept = sum(len(step) * times for step, times in reduced.program.phases)
    assert kept * order == program.messages
    fast = simulate(graph, "allreduce", spec, size, engine="fast", gamma=gamma)
    message = simulate(graph, "allreduce", spec, size, engine="message", gamma=gamma)
    _same(fast, message)


def test_the_quotient_is_refused_where_rails_take_different_spines():
    """Ethernet ECMP hashes the nodes: a tree's edges between leaf groups go over different spines on
    different rails, so the rails are not images of one another -- the whole program runs, with the same
    times. Routing by destination (InfiniBand, the DGX preset's default) takes the same spine on every rail:
    the quotient runs, with the message level's times."""
    for ecmp, order in (("hash", None), ("destination", 4)):
        graph = hgx(8, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4, ecmp=ecmp)
        for spec in ("nccl-tree", "nvls-tree"):
            reduced, _, _ = _quotient(graph, spec, 2**24)
            assert (reduced.order if reduced is not None else None) == order
            _same(
                simulate(graph, "allreduce", spec, 2**24, engine="fast"),
                simulate(graph, "allreduce", spec, 2**24, engine="message"),
            )


def test_stragglers_off_the_orbits_run_the_whole_program():
    graph = hgx(2, "dgx-h100", gpus_per_host=4)
    graph.nodes["h1:gpu2"]["compute_scale"] = 3.0
    reduced, _, _ = _quotient(graph, "nccl-tree", 2**24, gamma=3e-11)
    assert reduced is None
    assert _quotient(graph, "nccl-tree", 2**24, gamma=0.0)[0] is not None  # no reduction: no effect
    _same(
        simulate(graph, "allreduce", "nccl-tree", 2**24, engine="fast", gamma=3e-11),
        simulate(graph, "allreduce", "nccl-tree", 2**24, engine="message", gamma=3e-11),
    )


def test_a_shift_that_is_no_symmetry_is_refused_and_its_powers_tried():
    """Channels in 4-cycles (c, c+1, c+8, c+9): the shift moves a GPU up on one channel and down on the
    next, so no map of the links fits it; its square swaps each channel with its twin on the same links,
    which is a symmetry (every link shared by two channels: half its capacity each)."""
    graph = hgx(2, "dgx-h100")
    cluster = Cluster(graph)
    program = get_algorithm("allreduce", "ring:channels=16").program(cluster.size, 2**26, cluster)
    orders = np.asarray(channel_orders(cluster, cluster.size, 16))
    cycle = {}
    for c in range(0, 8, 2):
        cycle |= {c: c + 1, c + 1: c + 8, c + 8: c + 9, c + 9: c}
    bad = program.symmetry.copy()
    for c, d in cycle.items():
        bad[orders[c]] = orders[d]
    odd = dataclasses.replace(program, symmetry=bad)
    reduced = quotient(odd, cluster, 0.0)
    assert reduced is not None and reduced.order == 2
    env = simpy.Environment()
    net = Network(env, reduced.cluster)
    executor = FastExecutor(net, reduced.program, 0.0, cluster.compute_scale, alone=True)
    env.run(env.process(executor.run()))
    message = simulate(graph, "allreduce", "ring:channels=16", 2**26, engine="message")
    assert abs(env.now - message.time_s) <= 1e-9 * message.time_s
    reduced.rebook(net)
    assert net.flows == message.flows
    whole = Network(simpy.Environment(), cluster)
    full = FastExecutor(whole, program, 0.0, cluster.compute_scale, alone=True)
    whole.env.run(whole.env.process(full.run()))
    assert whole.env.now == pytest.approx(env.now, rel=1e-12)
    np.testing.assert_allclose(net.arc_bytes, whole.arc_bytes, rtol=1e-12)
    for mine, theirs in zip(net.rank_bytes(), whole.rank_bytes(), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_a_stated_permutation_must_map_the_program_onto_itself():
    graph = hgx(2, "dgx-h100", gpus_per_host=4)
    cluster = Cluster(graph)
    program = get_algorithm("allreduce", "nccl-tree").program(cluster.size, 2**24, cluster)
    swap = np.arange(program.endpoints)
    swap[[0, 1]] = [1, 0]  # two idle ranks swapped: a symmetry of nothing that moves
    assert quotient(dataclasses.replace(program, symmetry=swap), cluster, 0.0) is None
    sigma = program.symmetry.copy()
    moved = np.flatnonzero(sigma != np.arange(len(sigma)))
    sigma[moved[:2]] = sigma[moved[:2]][::-1]  # one actor sent where another's image goes
    assert quotient(dataclasses.replace(program, symmetry=sigma), cluster, 0.0) is None
    assert quotient(dataclasses.replace(program, symmetry=None), cluster, 0.0) is None
