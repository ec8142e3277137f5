"""``nccl`` for all-to-all and send/recv: NCCL's p2p path (sim/nccl/p2p.py) -- its choices against NCCL's
source written out by hand, the closed form on a star, fast path = message level, the data check, and bad
input as one line (docs/nccl.md, "All-to-all and send/recv")."""

from __future__ import annotations

import pytest

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.errors import AlgorithmError
from sim.nccl import p2p, tuner
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import star
from sim.topology.load import load_graph


def _setup(spec: str, version: str = "2.30.7") -> p2p.Setup:
    c = Cluster(load_graph(spec))
    tuning = tuning_for(parse_version(version))[0]
    nvswitch = bool(c.graph.graph.get("nvswitch", True))
    return p2p.setup(tuner.describe(c, c.size), parse_version(version), nvswitch, True, tuning)


# NCCL's rules, written out (paths.cc: ncclTopoGetNchannels / ncclTopoComputeP2pChannels, init.cc:
# computeBuffSizes, enqueue.cc: scheduleP2pTasksToPlan) for comm->nChannels = the ring's runtime channels:
# * 2 x DGX H100 (16 ring channels, 18 NVLinks, a 400G NIC a GPU behind a 48 GB/s PCIe link), 2.30.7:
#   p2pnChannels 16; NVLink peers ask 2 x 18 = 36, the network max(1 NIC, ceil(48 / 14)) = 4; perPeer 4
#   (4 x ceil(16 / 8) = 8 <= 16: kept); nChannelsMin 4 -> 2 -> 1 (x 16 ranks <= 16); chunk 128 KiB (nNodes > 1).
# * the same with 2.26.2: the network asks max(1 NIC, 2) (2 x 16 <= 4 x 16: not halved); perPeer 2; min 1.
# * 1 x DGX H100 (24 ring channels): p2pnChannels 32, perPeer min(32, pow2Up(36)) = 32, nChannelsMin 32 ->
#   16 -> 8 -> 4 (x 8 ranks <= 32), chunk 512 KiB (NVLink); no PXN on one host.
# * a 4-GPU A100 board (no NVSwitch: 4 of 12 links a pair): perPeer 2 x 4 = 8, nChannelsMin 8 (x 4 <= 32).
SETUPS = [
    ("dgx-h100-2", "2.30.7", (16, 4, 131072, 1, True)),
    ("dgx-h100-2", "2.26.2", (16, 2, 131072, 1, True)),
    ("hgx:hosts=1", "2.30.7", (32, 32, 524288, 4, False)),
    ("hgx:hosts=1,gpus_per_host=4,nvswitch=false,preset=hgx-a100-200g", "2.30.7", (32, 8, 524288, 8, False)),
]


@pytest.mark.parametrize("spec, version, expected", SETUPS)
def test_setup_follows_nccls_source(spec, version, expected):
    s = _setup(spec, version)
    assert (s.p2p_channels, s.per_peer, s.chunk, s.min_channels, s.pxn) == expected


# addP2pToPlan, by hand: 2 x DGX H100 2.30.7 (min 1, perPeer 4, minPart 64 KiB, maxPart 128 KiB):
# * 4 KiB (a 64 KiB all-to-all's block): 1 channel; LL inside the host (4096 <= 1 x 16 KiB), Simple across
#   (no LL buffers on the network's p2p connections);
# * 64 MiB: 1 -> 2 -> 4 channels (the part stays > 128 KiB; 4 > perPeer / 2 stops), Simple;
# * 32 KiB inside the host: 1 channel (ceil(32 KiB / 64 KiB) = 1), Simple (32 KiB > 1 x 16 KiB), where 2.26.2
#   takes LL (32 KiB <= perPeer 2 x 16 KiB) on LL's 64 KiB step.
OPS = [
    ("2.30.7", 4096, False, (1, "ll")),
    ("2.30.7", 4096, True, (1, "simple")),
    ("2.30.7", 64 << 20, True, (4, "simple")),
    ("2.30.7", 32768, False, (1, "simple")),
    ("2.26.2", 32768, False, (1, "ll")),
    ("2.26.2", 64 << 20, True, (2, "simple")),
]


@pytest.mark.parametrize("version, nbytes, network, expected", OPS)
def test_ops_follow_nccls_source(version, nbytes, network, expected):
    op = p2p.op_plan(_setup("dgx-h100-2", version), nbytes, network)
    assert (op.channels, op.protocol) == expected


def test_one_host_ops():
    """1 x DGX H100 (min 4, perPeer 32, minPart 64 KiB, maxPart 16 MiB): 128 MiB doubles to 8 channels (16 MiB
    a part); 256 KiB stays on 4 channels and is Simple (> 4 x 16 KiB); 64 KiB on 1 channel is LL."""
    s = _setup("hgx:hosts=1")
    assert p2p.op_plan(s, 128 << 20, False) == p2p.Op(8, "simple")
    assert p2p.op_plan(s, 256 << 10, False) == p2p.Op(4, "simple")
    assert p2p.op_plan(s, 16 << 10, False) == p2p.Op(1, "ll")


def test_pick_is_shown_with_pxn_and_the_charged_hop():
    """The pick of a 64 KiB all-to-all on 2 x DGX H100: LL in the host, Simple across, PXN; charged one Ring
    hop of the dearest send: Simple over NET, 8.4 + 14 us (tuning.cc baseLat + hwLat)."""
    cluster = Cluster(load_graph("dgx-h100-2"))
    c = get_algorithm("alltoall", "nccl").choice(16, 65536, cluster)
    assert (c.algorithm, c.protocol, c.channels, c.p2p_channels, c.pxn) == ("p2p", "ll+simple", 1, 16, True)
    assert c.latency_us == pytest.approx(22.4)
    off = get_algorithm("alltoall", "nccl:pxn=false").choice(16, 65536, cluster)
    assert not off.pxn
    one = get_algorithm("sendrecv", "nccl").choice(8, 16384, Cluster(load_graph("hgx:hosts=1")))  # 1 channel, LL
    assert (one.protocol, one.pxn, one.latency_us) == ("ll", False, pytest.approx(6.6 + 0.6))


def test_pxn_relays_through_the_peers_rail():
    """A send between hosts by PXN crosses NVLink to the GPU with the peer's index and leaves by its NIC (its
    rail): no spine; without PXN it leaves by the sender's own NIC and crosses a spine to the peer's rail."""
    for pxn in (True, False):
        cluster = Cluster(load_graph("dgx-h100-2"))
        program = get_algorithm("alltoall", f"nccl:pxn={pxn}").program(16, 1 << 24, cluster)
        step = program.phases[-1][0]
        owner = [int(e) if e < 16 else cluster.endpoint_rank[e - 16] for e in step.src]
        i = next(i for i, (a, b) in enumerate(zip(owner, step.dst, strict=True)) if (a, b) == (0, 11))
        arcs = [cluster.arc_name(a) for a in cluster.paths.arcs_of(cluster.path_id(int(step.src[i]), 11))]
        via = ["h0:gpu0->h0", "h0->h0:gpu3", "h0:gpu3->h0:pcie3"] if pxn else ["h0:gpu0->h0:pcie0"]
        assert arcs[: len(via)] == via, arcs
        assert any("spine" in a for a in arcs) is not pxn, arcs


@pytest.mark.parametrize("collective", ["alltoall", "sendrecv"])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_closed_form_on_a_star(collective, p):
    """One GPU a host, no congestion: NCCL's charged hop, then every send at once -- α + (p-1)/p · n · β
    (all-to-all), α + n · β (send/recv) -- to 1e-6."""
    bw, lat = 12.5e9, 1e-6
    cluster = Cluster(star(p, bw, lat))
    algo = get_algorithm(collective, "nccl")
    for n in (1 << 16, 1 << 24):
        r = simulate(cluster, collective, algo, n, check=True)
        assert r.wrong == 0
        fixed = algo.fixed_cost(p, n, cluster, algo.choice(p, n, cluster))
        expected = fixed + algo.cost(p, n, 2 * lat, 1 / bw)
        assert r.time_s == pytest.approx(expected, rel=1e-6)


CASES = [
    ("dgx-h100-2", "nccl"),
    ("dgx-h100-2", "nccl:pxn=false"),
    ("dgx-h100-2", "nccl:version=2.26.2"),
    ("hgx:hosts=1", "nccl"),
    ("hgx:hosts=3,gpus_per_host=4,preset=hgx-a100-200g", "nccl"),
    ("hgx:hosts=3,preset=oci-bm-gpu4-8", "nccl"),  # two NICs a GPU: relays on the proxy's NICs, a hand-off first
    ("hgx:hosts=2,preset=oci-bm-gpu-h100-8", "nccl:pxn=false"),  # two NICs a GPU, the sender's own
]


@pytest.mark.parametrize("spec, algo", CASES)
@pytest.mark.parametrize("collective", ["alltoall", "sendrecv"])
def test_fast_path_equals_message_level_with_the_data_check(spec, algo, collective):
    """The step program (fast path) and the message level to 1e-9; the message level's data check: every
    rank's block for every peer delivered to that peer exactly once (send/recv: rank r-1's buffer at r)."""
    for n in (65536, 1 << 22):
        slow = simulate(Cluster(load_graph(spec)), collective, algo, n, engine="message", check=True)
        fast = simulate(Cluster(load_graph(spec)), collective, algo, n, engine="fast")
        assert slow.wrong == 0
        assert fast.engine.startswith("fast")
        assert fast.time_s == pytest.approx(slow.time_s, rel=1e-9)


@pytest.mark.parametrize(
    "collective, spec, message",
    [
        ("alltoall", "nccl:algo=ring", "NCCL_ALGO does not apply to NCCL's send/recv path"),
        ("sendrecv", "nccl:proto=ll", "NCCL_PROTO does not apply to NCCL's send/recv path"),
        ("alltoall", "nccl:ll_threshold=-1", "ll_threshold"),
        ("alltoall", "nccl:buffsize=1000", "buffsize is whole bytes"),
        ("sendrecv", "nccl:caps=ring", "caps: unknown field"),
    ],
)
def test_bad_options_are_one_line(collective, spec, message):
    with pytest.raises(AlgorithmError) as info:
        get_algorithm(collective, spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_uneven_hosts_are_refused_in_one_line():
    with pytest.raises(AlgorithmError, match="same number of ranks on every host"):
        simulate(Cluster(load_graph("dgx-h100-2")), "alltoall", "nccl", 1 << 20, ranks=12)


def test_logs_are_read_through_the_p2p_schedule(tmp_path):
    """Calibration's reader names ``nccl`` (with the log's release, without NCCL_ALGO / NCCL_PROTO, which do
    not apply) for all-to-all and send/recv; nccl-tests' bus factors: (p-1)/p and 1."""
    from sim.collectives import get_collective
    from validate.calibration.inputs import NCCL_COLLECTIVES, nccl_schedule_spec, read_samples

    assert {"alltoall", "sendrecv"} <= set(NCCL_COLLECTIVES)
    assert nccl_schedule_spec("alltoall", "ring", "ll", "2.26.2") == "nccl:version=2.26.2"
    assert nccl_schedule_spec("sendrecv") == "nccl"
    assert get_collective("alltoall").busbw(8.0, 8) == 7.0 and get_collective("sendrecv").busbw(8.0, 8) == 8.0
    path = tmp_path / "sendrecv.txt"
    path.write_text(
        "./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "   134217728      33554432     float     sum      -1   1211.2  110.81  110.81      0   1211.8  110.76  110.76    N/A\n"
    )
    samples, _ = read_samples(str(path))
    assert [(s.collective, s.ranks, s.algorithm) for s in samples] == [("sendrecv", 8, "nccl")]


def test_two_nics_a_gpu_carry_the_channels():
    """A GPU with two NICs (OCI's 16 x 200G): the op's channels alternate between the proxy GPU's two NICs
    (ncclTopoGetLocalNet), so a 256 MiB send/recv across hosts (ranks 7 -> 8, 15 -> 0) moves at both NICs' 50
    GB/s (here the 48 GB/s PCIe link), not at one NIC's 25."""
    r = simulate(Cluster(load_graph("hgx:hosts=2,preset=oci-bm-gpu-h100-8")), "sendrecv", "nccl", 256 << 20)
    assert r.busbw_GBps > 40, r.busbw_GBps


def test_the_pick_is_printed_and_in_json():
    """The table's comment line and ``--json``'s ``nccl`` object, as for the collectives' picks."""
    import json

    from sim.nccl.report import pick_of, row_with_pick

    cluster = Cluster(load_graph("dgx-h100-2"))
    algo = get_algorithm("alltoall", "nccl")
    r = simulate(cluster, "alltoall", algo, 65536)
    pick = pick_of(algo, 16, 65536, cluster)
    assert pick == {
        "algorithm": "P2P",
        "protocol": "LL+Simple",
        "channels": 1,
        "p2p_channels": 16,
        "pxn": True,
        "charged_us": 22.4,
        "tuner": "2.30.7 (as 2.30.3-2.30.7)",
    }
    assert json.loads(row_with_pick(r, algo, cluster, True))["nccl"] == pick
    assert row_with_pick(r, algo, cluster, False).endswith(
        "#   NCCL: P2P/LL+Simple, 1 channel a peer of 16, PXN; charged 22.4 us (one hop: NCCL's tuner prices no "
        "p2p); NCCL 2.30.7 (as 2.30.3-2.30.7)"
    )
