"""CollNet Direct and CollNet Chain (NCCL's in-network reduction without NVLS): the data check and fast ==
message on SHARP fabrics of A100 and H100 hosts, the closed form, NCCL's tables and enablement rules
(derived by hand from tuning.cc, enqueue.cc, init.cc, connect.cc), the pick per size, the refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sim.algorithms.collnet_direct as collnet_direct
import sim.algorithms.nccl_tree as nccl_tree
from sim.algorithms import get_algorithm
from sim.algorithms.collnet_direct import collnet_direct_program, collnet_time
from sim.cluster import Cluster
from sim.nccl import tuner
from sim.nccl.layout import channel_endpoint, sharp_switches
from sim.nccl.pipeline import Streams
from sim.nccl.protocols import collnet_chunk
from sim.simulate import simulate
from sim.symmetry import quotient
from sim.topology import hgx

from .test_nccl import _cli

FABRICS = [  # (preset, hosts, GPUs a host, hosts a leaf, options)
    ("hgx-a100-200g", 2, 4, 32, {}),
    ("hgx-a100-200g", 4, 8, 2, {"nics_per_host": 4}),  # a NIC per PCIe switch: 4 heads; a spine
    ("oci-bm-gpu4-8", 3, 2, 32, {}),  # two NICs a GPU
    ("dgx-h100", 3, 4, 2, {}),  # leaves under a spine
    ("dgx-h100", 8, 1, 32, {}),  # one GPU a host
]


@pytest.mark.parametrize("preset, hosts, gpus, per_leaf, options", FABRICS)
@pytest.mark.parametrize("spec", ["collnet-direct", "collnet-chain"])
@pytest.mark.parametrize("size", [1, 2**20 + 7, 3 * 2**22])
def test_every_contribution_once_and_fast_equals_message(preset, hosts, gpus, per_leaf, options, spec, size):
    g = hgx(hosts, preset, gpus_per_host=gpus, sharp=True, hosts_per_leaf=per_leaf, **options)
    a = simulate(g, "allreduce", spec, size, check=True, gamma=1e-11)
    b = simulate(g, "allreduce", spec, size, engine="fast", gamma=1e-11)
    assert a.wrong == 0
    assert abs(a.time_s - b.time_s) <= 1e-9 * a.time_s
    assert a.flows == b.flows


@pytest.mark.parametrize("preset, hosts, gpus, per_leaf, options", FABRICS)
def test_the_chains_channels_are_copies_the_fast_path_runs_once(preset, hosts, gpus, per_leaf, options):
    """CollNet Chain states nccl-tree's channel shift wherever nccl-tree does, its switches' engines moving
    with their channel, and the quotient takes it wherever it takes nccl-tree's: one channel of every orbit
    is simulated (the times and flows equal the message level's: the test above)."""
    cluster = Cluster(hgx(hosts, preset, gpus_per_host=gpus, sharp=True, hosts_per_leaf=per_leaf, **options))
    p = hosts * gpus
    plain, _ = nccl_tree.tree_program(cluster, p, 3 * 2**22, 0, "simple")
    program, _ = nccl_tree.tree_program(cluster, p, 3 * 2**22, 0, "simple", sharp=True)
    assert (program.symmetry is None) == (plain.symmetry is None)
    reduced = quotient(program, cluster, 0.0)
    assert (reduced is None) == (quotient(plain, cluster, 0.0) is None)  # one GPU a host: no shift at all
    if reduced is None:
        return
    assert len(reduced.program.phases) == len(program.phases)
    kept = sum(len(step) for step, _ in reduced.program.phases)
    assert kept < sum(len(step) for step, _ in program.phases)


@pytest.mark.parametrize("spec", ["nccl", "nccl:algo=collnetdirect", "nccl:algo=CollnetChain"])
def test_nccl_runs_collnet_with_its_latency(spec):
    g = hgx(2, "hgx-a100-200g", gpus_per_host=4, sharp=True)
    for size in (2**20 + 7, 3 * 2**22):
        a = simulate(g, "allreduce", spec, size, check=True)
        b = simulate(g, "allreduce", spec, size, engine="fast")
        assert a.wrong == 0 and abs(a.time_s - b.time_s) <= 1e-9 * a.time_s
        pick = get_algorithm("allreduce", spec).choice(8, size, Cluster(g))
        assert pick.algorithm.startswith("collnet") and a.time_s > pick.latency_us * 1e-6


@pytest.mark.parametrize("spec", ["collnet-direct", "collnet-chain"])
def test_a_lost_message_is_caught(spec, monkeypatch):
    """The data check is what proves the schedules: drop one edge of one stream and it sees wrong ranks."""

    class Lossy(Streams):
        calls = 0

        def add(self, src, dst, nbytes, **kw):
            Lossy.calls += 1
            if Lossy.calls == 2:
                src, dst = np.asarray(src)[1:], np.asarray(dst)[1:]
                kw = {k: (np.asarray(v)[1:] if np.ndim(v) else v) for k, v in kw.items()}
            super().add(src, dst, nbytes, **kw)

    monkeypatch.setattr(collnet_direct if spec == "collnet-direct" else nccl_tree, "Streams", Lossy)
    r = simulate(hgx(2, "hgx-a100-200g", gpus_per_host=4, sharp=True), "allreduce", spec, 2**20, check=True)
    assert r.wrong > 0


@pytest.mark.parametrize("spec", ["collnet-direct", "collnet-chain"])
@pytest.mark.parametrize("size", [2**20, 3 * 2**24])
def test_closed_form_on_hosts_of_one_gpu(spec, size):
    """One GPU and one NIC a host, one leaf switch: k slices up and down, overlapping: (k + 1) steps of
    α + (n/k)·β, α and β those of a head's way to its leaf switch (the chain's two channels share it)."""
    g = hgx(4, "dgx-h100", gpus_per_host=1, sharp=True)
    cluster = Cluster(g)
    r = simulate(cluster, "allreduce", spec, size)
    leaf, _ = sharp_switches(cluster, 0, 0, 0)
    if spec == "collnet-direct":
        _, segments = collnet_direct_program(cluster, 4, size)
        k = segments  # one head a host
        head = channel_endpoint(cluster, 0, ("collnet-direct",), 0)
        switch = cluster.add_endpoint(node=leaf, key=("sharp", "collnet-direct", 0))
    else:
        _, segments = nccl_tree.tree_program(cluster, 4, size, 0, "simple", sharp=True)
        k = segments // 2  # two channels
        head = channel_endpoint(cluster, 0, ("collnet-chain", 0), 0)
        switch = cluster.add_endpoint(node=leaf, key=("sharp", "collnet-chain", 0))
    alpha, beta = cluster.alpha_beta(head, switch)
    assert cluster.alpha_beta(switch, head) == pytest.approx((alpha, beta), rel=1e-12)
    assert r.time_s == pytest.approx(collnet_time(k, size, alpha, beta), rel=1e-9)
    algo = get_algorithm("allreduce", spec)
    assert algo.cost(4, size, alpha, beta) == pytest.approx(r.time_s, rel=1e-9)


def _sys(preset, hosts, gpus=8, **options):
    return tuner.describe(Cluster(hgx(hosts, preset, gpus_per_host=gpus, **options)), hosts * gpus)


def test_tuner_tables_are_nccls():
    """2 x HGX A100 (8 x 200G, AMD) with SHARP, by hand from tuning.cc and search.cc:

    * Direct: 8 heads, bwInter 24 (PCIe Gen4), pass 2 raises bwIntra 24 -> 28 -> 30 -> 48 (a GPU's NVLink
      carries 2 x 48 <= 240); busBw 8 x 48, factor 8/8 = 1; algBw x 0.5 = 192; latency
      2 x (1 x 3.7 + 7 x 0.4) + 31 = 44 us.
    * Chain: 8 channels (the ring's), bwIntra 30 (8 x 48 x 7/8 = 336 > 240); algBw 8 x 30 / 2 = 120;
      latency 2 x 7 x 2.8 + 30 = 69.2 us.
    * connect.cc: CollNet adds half the channels (chain bwIntra 30 > bwInter 24): 16 -> 24.
    On 2 x DGX H100 (Hopper) Direct's busBw is x 0.85: 8 x 48 x 0.85 / 2 = 163.2."""
    sys = _sys("hgx-a100-200g", 2, sharp=True)
    graphs = tuner.search(sys)
    assert (graphs["collnet-direct"].channels, graphs["collnet-direct"].bw_intra) == (8, 48.0)
    assert (graphs["collnet-chain"].channels, graphs["collnet-chain"].bw_intra) == (8, 30.0)
    assert graphs["ring"].runtime_channels == 24
    assert tuner.search(_sys("hgx-a100-200g", 2))["ring"].runtime_channels == 16
    table = {c.algorithm: c for c in tuner.candidates(sys, 2**30)}
    assert (table["collnet-direct"].latency_us, table["collnet-direct"].bandwidth) == pytest.approx((44.0, 192.0))
    assert (table["collnet-chain"].latency_us, table["collnet-chain"].bandwidth) == pytest.approx((69.2, 120.0))
    assert {c.protocol for c in tuner.candidates(sys, 2**30) if c.algorithm.startswith("collnet")} == {"simple"}
    h100 = {c.algorithm: c for c in tuner.candidates(_sys("dgx-h100", 2, sharp=True), 2**30)}
    assert h100["collnet-direct"].bandwidth == pytest.approx(163.2)
    assert h100["collnet-chain"].bandwidth == pytest.approx(192.0)


def test_direct_pays_for_gpus_without_a_nic():
    """tuning.cc: "Collnet+Direct requires all GPUs to have a local NIC": 8 GPUs, 4 NICs (one per PCIe
    switch) make 4 heads and factor 8/4 = 2 -> 2 - (2 - 1)/2 = 1.5, so busBw = 4 x bwIntra / 1.5."""
    sys = _sys("hgx-a100-200g", 2, sharp=True, nics_per_host=4)
    graph = tuner.search(sys)["collnet-direct"]
    assert graph.channels == 4
    direct = next(c for c in tuner.candidates(sys, 2**30) if c.algorithm == "collnet-direct")
    assert direct.bandwidth == pytest.approx(4 * graph.bw_intra / 1.5 / 2)


def test_one_gpu_a_node_exposes_the_network_latency():
    """ppn 1: the inter-node latency is the tree's NET Simple figure, 14 us, and nothing intra-node: both
    CollNet latencies are 14 us; no channels are added (connect.cc: "except the 1 PPN case")."""
    sys = _sys("dgx-h100", 4, gpus=1, sharp=True)
    table = {c.algorithm: c for c in tuner.candidates(sys, 2**30)}
    assert table["collnet-direct"].latency_us == pytest.approx(14.0)
    assert table["collnet-chain"].latency_us == pytest.approx(14.0)
    assert (
        tuner.search(sys)["ring"].runtime_channels == tuner.search(_sys("dgx-h100", 4, gpus=1))["ring"].runtime_channels
    )


def test_enablement_follows_nccl():
    both = {"collnet-direct", "collnet-chain"}
    for preset in ("hgx-a100-200g", "dgx-h100", "oci-bm-gpu4-8", "oci-bm-gpu-h100-8"):
        for hosts in (1, 2, 4):
            plain, sharp = _sys(preset, hosts), _sys(preset, hosts, sharp=True)
            assert not both & tuner.enabled(plain, tuner.search(plain))  # no SHARP, no CollNet
            on = both & tuner.enabled(sharp, tuner.search(sharp))
            assert on == (both if hosts > 1 else set())  # NCCL_COLLNET_NODE_THRESHOLD 2
    wide = tuner.System(2, 16, "sm80", nvlink_bw=240.0, nic_bw=25.0, nics_per_node=16, sharp=True)
    assert not both & tuner.enabled(wide, tuner.search(wide))  # more than NCCL_MAX_DIRECT_ARITY + 1 GPUs
    assert "8 GPUs per host" in tuner.disabled(wide, tuner.search(wide), "collnet-chain")
    pcie = tuner.System(2, 2, "sm80", nvlink_bw=0.0, nic_bw=25.0, nics_per_node=2, sharp=True)
    assert tuner.enabled(pcie, tuner.search(pcie)) & both == {"collnet-chain"}  # Direct needs an NVSwitch


def test_nccl_picks_collnet_where_it_is_cheapest():
    """2 x HGX A100 with SHARP: CollNet Direct at every size here (44 us, 192 GB/s against the tree's and
    the ring's); without SHARP the picks are the tree's and the ring's as before."""
    nccl = get_algorithm("allreduce", "nccl")
    sharp, plain = Cluster(hgx(2, "hgx-a100-200g", sharp=True)), Cluster(hgx(2, "hgx-a100-200g"))
    for size in (2**20, 2**26, 2**32):
        assert nccl.choice(16, size, sharp).algorithm == "collnet-direct"
        assert nccl.choice(16, size, plain).algorithm in ("tree", "ring")
    assert get_algorithm("allreduce", "nccl:algo=collnet-chain").choice(16, 2**26, sharp).algorithm == "collnet-chain"
    assert nccl.choice(16, 2**30, Cluster(hgx(2, "dgx-h100", sharp=True))).algorithm.startswith("nvls")


def test_chunks_follow_nccls_size_rules():
    """enqueue.cc calcCollChunking: Direct from 512 KiB, Chain from 256 KiB, halved as the size drops."""
    assert [collnet_chunk(s, 16, 8, 2, chain=False) for s in (2**34, 2**31, 2**27, 2**23)] == [
        524288,
        131072,
        65536,
        32768,
    ]
    assert [collnet_chunk(s, 16, 1, 8, chain=True) for s in (2**34, 2**30, 2**26, 2**22)] == [
        262144,
        131072,
        65536,
        32768,
    ]


def test_cli_shows_the_collnet_pick_and_refuses_in_one_line():
    topology = "hgx:hosts=2,preset=hgx-a100-200g,sharp=true"
    out = _cli("simulate", "-t", topology, "-a", "nccl", "--sizes", "1MiB:64MiB:64")
    assert out.returncode == 0, out.stderr
    picks = [line for line in out.stdout.splitlines() if line.startswith("#   NCCL: ")]
    assert len(picks) == 2 and all(p.startswith("#   NCCL: CollNetDirect/Simple, 24 channels") for p in picks)
    js = _cli("simulate", "-t", topology, "-a", "nccl:algo=collnetchain", "--size", "64MiB", "--json")
    assert json.loads(js.stdout)["nccl"]["algorithm"] == "CollNetChain"
    for spec in ("collnet-direct", "nccl:algo=collnetdirect"):
        bad = _cli("simulate", "-t", "hgx-a100-200g-2", "-a", spec, "--size", "1MiB")
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
