"""NCCL's rings reduced by the fabric's translation symmetry (sim/symmetry.py, sim/nccl/rings.py): on a
rail-optimized fabric routed by destination, shifting the hosts by one leaf group maps the fabric and the
rings onto themselves, so the quotient keeps one leaf group (the ring's hop out of it coming back to its
start). The quotient's times, bytes and flows are the message level's; where the fabric is not
translation-invariant the translation is refused and the times still match."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import simpy

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.fastpath import FastExecutor
from sim.linkmodel import LinkModel, Segment
from sim.nccl.layout import host_ranks, leaf_period
from sim.nccl.pipeline import shift
from sim.nccl.rings import channel_orders
from sim.network import Network
from sim.simulate import simulate
from sim.symmetry import _group_orbits, quotient
from sim.topology import hgx
from tests.test_symmetry import _same


def _program(graph, collective, spec, size, **kw):
    cluster = Cluster(graph, **kw)
    return cluster, get_algorithm(collective, spec).program(cluster.size, size, cluster)


FABRICS = [
    # (hosts, options, leaf groups)
    (8, {"hosts_per_leaf": 2, "gpus_per_host": 4}, 4),
    (8, {"hosts_per_leaf": 2}, 4),
    (8, {"hosts_per_leaf": 4, "gpus_per_host": 2}, 2),
]
SPECS = ["ring:channels=2", "ring:channels=3", "ring:channels=16", "nccl"]


@pytest.mark.parametrize("hosts, options, groups", FABRICS)
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("collective", ["allreduce", "allgather", "reducescatter"])
@pytest.mark.parametrize("gamma", [0.0, 3e-11])
def test_the_translation_quotient_gives_the_message_level_times_bytes_and_flows(
    hosts, options, groups, spec, collective, gamma
):
    if spec == "nccl" and collective == "allreduce":
        spec = "nccl:algo=ring"  # (NCCL's pick for all-reduce here is a tree; all-gather's, the rings)
    graph = hgx(hosts, "dgx-h100", **options)
    cluster, program = _program(graph, collective, spec, 2**22 + 3 * 2**12)
    reduced = quotient(program, cluster, gamma)
    assert reduced is not None and reduced.images[-1][1] == groups, "the translation by one leaf group"
    kept = sum(len(step) * times for step, times in reduced.program.phases)
    assert kept * reduced.order == program.messages
    fast = simulate(graph, collective, spec, 2**22 + 3 * 2**12, engine="fast", gamma=gamma)
    message = simulate(graph, collective, spec, 2**22 + 3 * 2**12, engine="message", gamma=gamma)
    _same(fast, message)


@pytest.mark.parametrize("spec", ["ring:channels=2", "ring:channels=3", "ring:channels=16"])
def test_the_quotient_rebooks_every_link_and_rank_as_the_whole_program_does(spec):
    """K = 2, 3, 16 channels (3: no channel shift on 4 GPUs a host, the translation alone): the quotient's run, its bytes booked back on every image's route, against
    the whole program on the fast path (link by link, rank by rank) and the message level's time."""
    graph = hgx(8, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4)
    cluster, program = _program(graph, "allreduce", spec, 2**22)
    reduced = quotient(program, cluster, 0.0)
    assert reduced is not None and reduced.images[-1][1] == 4
    env = simpy.Environment()
    net = Network(env, reduced.cluster)
    executor = FastExecutor(net, reduced.program, 0.0, cluster.compute_scale, alone=True)
    env.run(env.process(executor.run()))
    reduced.rebook(net)
    whole = Network(simpy.Environment(), cluster)
    full = FastExecutor(whole, program, 0.0, cluster.compute_scale, alone=True)
    whole.env.run(whole.env.process(full.run()))
    assert env.now == pytest.approx(whole.env.now, rel=1e-12)
    assert net.flows == whole.flows == program.messages
    np.testing.assert_allclose(net.arc_bytes, whole.arc_bytes, rtol=1e-12)
    for mine, theirs in zip(net.rank_bytes(), whole.rank_bytes(), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)
    message = simulate(graph, "allreduce", spec, 2**22, engine="message")
    assert abs(env.now - message.time_s) <= 1e-9 * message.time_s


def _refused(graph, spec, collective="allreduce", gamma=0.0, program=None, **kw):
    """The quotient takes no translation (the channel shift alone, or nothing), and the fast path still
    gives the message level's time."""
    cluster, built = _program(graph, collective, spec, 2**22, **kw)
    program = program or built
    reduced = quotient(program, cluster, gamma)
    assert reduced is None or len(reduced.images) == 1
    assert reduced is None or reduced.images[0][1] <= 16  # (the channel shift's order at most)
    if "link_model" not in kw:
        _same(
            simulate(graph, collective, spec, 2**22, engine="fast", gamma=gamma),
            simulate(graph, collective, spec, 2**22, engine="message", gamma=gamma),
        )
    return reduced


@pytest.mark.parametrize("spec, spines", [("ring:channels=4", 2), ("ring:channels=16", 4)])
def test_hashed_ecmp_over_shared_spines_is_no_translation_symmetry(spec, spines):
    """Ethernet's hashed ECMP on a fat-tree (every NIC of a host on one leaf, several rings' hops between
    two leaves over a few spines): the hash sends leaf group g's hops to g + 1 over other spines, shared
    otherwise, than g + 1's to g + 2, so no map of the links fits the translation: refused. Routed by
    destination, the same fabric takes it."""
    gpus = 4 if spines == 2 else 8
    options = {"hosts_per_leaf": 2, "gpus_per_host": gpus, "fabric": "fat-tree", "spines": spines}
    graph = hgx(8, "dgx-h100", ecmp="hash", **options)
    cluster, program = _program(graph, "allreduce", spec, 2**22)
    assert isinstance(program.symmetry, tuple)  # stated: the leaves are in equal groups
    _refused(graph, spec)
    routed = hgx(8, "dgx-h100", ecmp="destination", **options)
    cluster, program = _program(routed, "allreduce", spec, 2**22)
    assert quotient(program, cluster, 0.0).images[-1][1] == 4


def test_hashed_ecmp_on_rails_is_a_translation_symmetry_of_the_rings():
    """On a rail-optimized fabric every ring hop between leaf groups has its leaf's uplink and its spine's
    downlink to itself, whatever spine the hash picks: the links the run uses map onto one another, so the
    translation holds (a symmetry of the run, not of the whole fabric) and the times are the message
    level's."""
    graph = hgx(8, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4, ecmp="hash")
    cluster, program = _program(graph, "allreduce", "ring:channels=4", 2**22)
    assert quotient(program, cluster, 0.0).images[-1][1] == 4
    _same(
        simulate(graph, "allreduce", "ring:channels=4", 2**22, engine="fast"),
        simulate(graph, "allreduce", "ring:channels=4", 2**22, engine="message"),
    )


def test_a_partly_filled_last_leaf_group_states_no_translation_and_refuses_a_forced_one():
    """6 hosts, 4 a leaf: the ring's builder states no translation; a translation by 2 hosts stated by
    hand (leaf groups 0-3, 4-5) is no symmetry of the routes and is refused."""
    graph = hgx(6, "dgx-h100", hosts_per_leaf=4, gpus_per_host=4)
    cluster, program = _program(graph, "allreduce", "ring:channels=4", 2**22)
    assert not isinstance(program.symmetry, tuple)
    orders = np.asarray(channel_orders(cluster, cluster.size, 4))
    tau = shift(program.endpoints, orders.ravel(), np.roll(orders, -8, axis=1).ravel())
    forced = dataclasses.replace(program, symmetry=(program.symmetry, tau))
    _refused(graph, "ring:channels=4", program=forced)


def test_hosts_not_a_multiple_of_the_group_state_no_translation():
    graph = hgx(5, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4)
    cluster = Cluster(graph)
    assert leaf_period(cluster, host_ranks(cluster, cluster.size, even=False), 2) == 0
    _refused(graph, "ring:channels=4")


def test_an_odd_leaf_group_translates_by_two_groups():
    """The ring's hosts alternate up and down: with 3 hosts a leaf the translation is by 6 hosts."""
    graph = hgx(12, "dgx-h100", hosts_per_leaf=3, gpus_per_host=2)
    cluster, program = _program(graph, "allreduce", "ring:channels=2", 2**22)
    assert leaf_period(cluster, host_ranks(cluster, cluster.size, even=False), 2) == 6
    reduced = quotient(program, cluster, 0.0)
    assert reduced is not None and reduced.images[-1][1] == 2
    _same(
        simulate(graph, "allreduce", "ring:channels=2", 2**22, engine="fast"),
        simulate(graph, "allreduce", "ring:channels=2", 2**22, engine="message"),
    )


def test_a_straggler_refuses_the_quotient():
    graph = hgx(8, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4)
    graph.nodes["h5:gpu1"]["compute_scale"] = 3.0
    assert _refused(graph, "ring:channels=4", gamma=3e-11) is None
    # without reductions the straggler is idle: the translation holds
    cluster, program = _program(graph, "allreduce", "ring:channels=4", 2**22)
    assert quotient(program, cluster, 0.0).images[-1][1] == 4


def test_a_slower_spine_link_refuses_the_translation():
    """One leaf's uplink to a spine at a different latency: the routes are the same, the links' latencies
    not, so the translation is refused (and the channel shift with it where the link is one rail's)."""
    graph = hgx(8, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4)
    for u, v, d in graph.edges(data=True):
        if u.startswith("leaf0.1") and v.startswith("spine"):
            d["latency"] = d.get("latency", 0.0) * 3 + 1e-6
    _refused(graph, "ring:channels=4")


def test_a_link_model_with_classes_runs_the_whole_program():
    graph = hgx(8, "dgx-h100", hosts_per_leaf=2, gpus_per_host=4)
    model = LinkModel(classes={"intra-host": (Segment(0, None, 0.8),)})
    assert _refused(graph, "ring:channels=4", link_model=model) is None
    fast = simulate(graph, "allreduce", "ring:channels=4", 2**22, engine="fast", link_model=model)
    message = simulate(graph, "allreduce", "ring:channels=4", 2**22, engine="message", link_model=model)
    assert abs(fast.time_s - message.time_s) <= 1e-9 * message.time_s


def test_group_orbits_are_the_orbits_of_the_generated_group():
    """Against the orbits found by closing every element under both permutations."""
    rng = np.random.default_rng(7)
    n = 48
    # a product Z4 x Z3 acting on 4x3 blocks of 4, with fixed points and a relabelling
    a = np.arange(n)
    b = np.arange(n)
    for blk in range(4):
        base = blk * 12
        for i in range(4):
            for j in range(3):
                a[base + 3 * i + j] = base + 3 * ((i + 1) % 4) + j
                b[base + 3 * i + j] = base + 3 * i + (j + 1) % 3
    a[36:], b[36:] = np.arange(36, 48), np.arange(36, 48)  # a block of fixed points
    a[[40, 41]] = [41, 40]  # one orbit of 2 under a alone
    relabel = rng.permutation(n)
    inv = np.argsort(relabel)
    a, b = relabel[a[inv]], relabel[b[inv]]
    assert np.array_equal(a[b], b[a])
    low, size = _group_orbits([a, b], [4, 3])
    for x in range(n):
        orbit, todo = {x}, [x]
        while todo:
            y = todo.pop()
            for z in (int(a[y]), int(b[y])):
                if z not in orbit:
                    orbit.add(z)
                    todo.append(z)
        assert low[x] == min(orbit) and size[x] == len(orbit)
