"""NCCL's slices in flight per connection (``nccl:slots``; sim.nccl.pipeline.Streams._windowed): the
steady state pays what the slots leave of a hop's latency, the fill pays it in full; slots=1 is the
schedules as they were; both engines agree."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from sim.algorithms.nccl_tree import tree_program
from sim.cluster import Cluster
from sim.fastpath import FastExecutor
from sim.nccl.pipeline import pipelined_s
from sim.network import Network
from sim.simulate import simulate
from sim.topology import hgx


def _time(cluster, program):
    env = simpy.Environment()
    executor = FastExecutor(Network(env, cluster), program, 0.0, cluster.compute_scale, alone=True)
    env.run(env.process(executor.run()))
    return env.now


def _tree(slots, nbytes=2**26, proto="simple"):
    """A 2-host tree over EFA (a 20 us hop), one GPU a host, one channel: a child and its root, a hop each way."""
    cluster = Cluster(hgx(2, "aws-p5", gpus_per_host=1))
    program, _ = tree_program(cluster, 2, nbytes, 1, proto, slots=slots)
    return cluster, program


@pytest.mark.parametrize("slots", [2, 8])
@pytest.mark.parametrize("nbytes, proto", [(2**20, "simple"), (2**26, "simple"), (2**22, "ll"), (2**22, "ll128")])
def test_a_pipelined_tree_pays_the_latency_once_per_fill(slots, nbytes, proto):
    """fill (2 hops of latency + slice) + the other slices x max(t, (t + latency) / slots), to 1e-9 (LL's
    and LL128's small slices leave some of the latency to pay, Simple's hide it)."""
    cluster, program = _tree(slots, nbytes, proto)
    _, plain = _tree(1, nbytes, proto)
    data = [(step, times) for step, times in plain.phases if step.nbytes.max() > 0]
    k = sum(times for _, times in data) - 1  # (the up hop's slices, then the down hop's one step behind)
    wire = float(data[0][0].nbytes.max())
    alpha, beta = cluster.alpha_beta(int(data[0][0].src[0]), int(data[0][0].dst[0]))
    t = wire * beta
    want = pipelined_s(2, k, alpha, t, slots)
    got = _time(cluster, program)
    assert abs(got - want) <= 1e-9 * want, (got, want)
    assert got < _time(cluster, plain)  # (the hop's 20 us of EFA: the slots hide some of it)
    assert abs(_time(cluster, plain) - pipelined_s(2, k, alpha, t)) <= 1e-9 * want  # (one slot: every step pays it)


def test_one_slot_is_the_schedule_as_it_was():
    """slots=1 builds the very program (no actor renamed, no launch added), so the same time bit for bit."""
    cluster, one = _tree(1)
    other = Cluster(hgx(2, "aws-p5", gpus_per_host=1))
    plain = tree_program(other, 2, 2**26, 1, "simple")[0]
    assert one.endpoints == plain.endpoints and len(one.phases) == len(plain.phases)
    for (a, x), (b, y) in zip(one.phases, plain.phases, strict=True):
        assert x == y
        assert np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst) and np.array_equal(a.nbytes, b.nbytes)
    assert repr(_time(cluster, one)) == repr(_time(other, plain)) == "0.0018914347826086957"  # (main's, 747f2e8)


CASES = [
    ("aws-p5", 2, "nccl:algo=tree,slots=8"),
    ("dgx-h100", 3, "nccl:algo=nvls-tree,slots=8"),
    ("dgx-b200", 2, "nccl:algo=nvls-tree,slots=8"),
    ("oci-bm-gpu4-8", 3, "nccl:algo=tree,proto=ll,slots=8"),
]


@pytest.mark.parametrize("preset, hosts, spec", CASES)
@pytest.mark.parametrize("size", [1, 3 * 2**22, 2**27])
def test_fast_path_equals_message_level_with_slots(preset, hosts, spec, size):
    """The renamed actors and their launches run alike on both engines, every contribution once."""
    graph = hgx(hosts, preset, gpus_per_host=4)
    checked, fast = (
        simulate(graph, "allreduce", spec, size, gamma=1e-11, **kw) for kw in ({"check": True}, {"engine": "fast"})
    )
    assert (checked.wrong, checked.flows) == (0, fast.flows)
    assert fast.time_s == pytest.approx(checked.time_s, rel=1e-9, abs=0)


def _nvls_tree(preset, nbytes, slots):
    """A 2-host NVLS-tree (8 GPUs a host): its simulated time and its slices."""
    from sim.algorithms.nvls import nvls_program

    cluster = Cluster(hgx(2, preset))
    program, _ = nvls_program(cluster, 16, nbytes, 0.0, False, slots=slots)
    return _time(cluster, program)


def _per_slice(preset, slots, nbytes=2**28):
    """The steady state's time a slice: the time that doubling the size adds, over the slices it adds (the
    chunk, so the slice, stays; the fill and drain cancel)."""
    from sim.algorithms.nvls import nvls_slices
    from sim.nccl.tuner import describe

    k = nvls_slices(nbytes, 2, 8, True, sys=describe(Cluster(hgx(2, preset)), 16))
    assert nvls_slices(2 * nbytes, 2, 8, True, sys=describe(Cluster(hgx(2, preset)), 16)) == 2 * k
    return (_nvls_tree(preset, 2 * nbytes, slots) - _nvls_tree(preset, nbytes, slots)) / k, nbytes / k


def test_nvls_tree_heads_bound_by_their_shared_link_get_the_relief():
    """DGX B200 x 2: a GPU's two heads (trees 0 and 1) share its PCIe link to the NIC and the link binds: a
    slice is 2 x part / 48 GB/s + the 1.2 us hop in series (12.12 us, over the cap's 9.04 us budget). With 8
    slots the heads are relieved though capped, by their shortest hop (0.3 us of NVLink to the switch: the
    engines charge a message its sender's overhead, so the relief is the actor's): 11.82 us, to 1e-9."""
    from sim.algorithms.nvls import engine

    cluster = Cluster(hgx(2, "dgx-b200"))
    hop, beta = cluster.alpha_beta(0, 8)  # (GPU 0 to its peer on the other host: the PCIe link binds)
    short = cluster.alpha_beta(0, engine(cluster, 0, "multicast"))[0]
    for slots, relief in ((1, 0.0), (8, short)):
        got, slice_b = _per_slice("dgx-b200", slots)
        want = 2 * slice_b / 16 * beta + hop - relief  # (a head's part: the slice over 2 trees x 8 GPUs)
        assert abs(got - want) <= 1e-9 * want, (slots, got, want)


def test_nvls_tree_heads_bound_by_their_cap_keep_its_rate():
    """DGX H100 x 2: the heads' per-channel cap binds (a 34.07 us budget a slice). Their budget grows by
    exactly the relief their steps get, so a slice still takes NCCL's per-slice figure (slice / cap), to
    1e-9, with 1 slot and with 8."""
    from sim.nccl.tuner import describe, nvls_tree_cap

    want = nvls_tree_cap(describe(Cluster(hgx(2, "dgx-h100")), 16))
    for slots in (1, 8):
        got, slice_b = _per_slice("dgx-h100", slots)
        assert abs(got - slice_b / want) <= 1e-9 * got, (slots, got, slice_b / want)
