"""Blackwell (B200, sm100): the ``hgx`` graph NCCL would see, the tuner release by release, the log reader.

Every expected figure below is worked out by hand from NCCL's source at the release named
(``git show vX.Y.Z-1:src/graph/tuning.cc`` etc. of NVIDIA/nccl); the arithmetic is in the comments.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.algorithms.nvls import efficiency, nvls_slices
from sim.cluster import Cluster
from sim.errors import TopologyError
from sim.nccl import tuner
from sim.nccl.versions import NEWEST, V2_25_1, parse_version, tuning_for
from sim.topology import hgx, load_graph

ROOT = Path(__file__).resolve().parents[1]


def _sys(hosts: int, **kw) -> tuner.System:
    g = hgx(hosts, "dgx-b200", **kw)
    return tuner.describe(Cluster(g), len(g.graph["ranks"]))


def _t(version: str):
    return tuning_for(parse_version(version))[0]


def test_hgx_builds_a_dgx_b200_as_nccl_sees_it():
    g = hgx(2, "dgx-b200")
    a = g.graph
    # NVLink: 18 links x topo.h SM100_NVLINK_BW 40.1 (v2.27.5 on) = 721.8 GB/s per direction
    assert g.edges["h0:gpu0", "h0"]["bandwidth"] == pytest.approx(721.8e9)
    assert (a["nvlink_links"], a["nvlink_bw"]) == (18, pytest.approx(721.8e9))
    # 8 ConnectX-7 400 Gb/s = 50 GB/s, one per GPU, behind PCIe Gen5 x16 (48 GB/s); Intel Xeon 8570
    assert (a["nics_per_host"], a["nic_bw"], a["pcie_bw"], a["cpu_vendor"]) == (8, 50e9, 48e9, "intel")
    assert g.edges["h0:nic7", "leaf7.0"]["bandwidth"] == 50e9
    assert (a["gpu_arch"], a["nvls"], g.nodes["h1"]["nvls"], a["ecmp"]) == ("sm100", True, True, "destination")
    # the bundled file is the preset on two hosts
    f = load_graph(str(ROOT / "topologies" / "dgx-b200-2.yaml"))
    assert f.graph["nvlink_bw"] == a["nvlink_bw"] and len(f.graph["ranks"]) == 16
    # gpu=b200 on another preset: Blackwell's NVLink, and its NVSwitch reduces
    oci = hgx(1, "oci-bm-gpu-h100-8", gpu="b200")
    assert (oci.graph["gpu_arch"], oci.graph["nvls"], oci.graph["nvlink_bw"]) == ("sm100", True, pytest.approx(721.8e9))
    assert hgx(1, "dgx-b200", nvls=False).graph["nvls"] is False
    with pytest.raises(TopologyError, match="third generation or later"):
        load_graph("hgx:hosts=1,preset=dgx-b200,gpu=a100,nvls=true")


def test_nvlink_per_link_as_each_release_counts_sm100():
    sys_ = _sys(1)
    # before 2.25.1 no SM100 figure: compcap 100 >= 90 takes SM90_NVLINK_BW 20.6 (18 x 20.6 = 370.8); topo.h
    # SM100_NVLINK_BW 40.0 in 2.25.1-2.27.3 (720), 40.1 from 2.27.5 (721.8)
    got = [tuner.nvlink_total(sys_, _t(v)) for v in ("2.24.3", "2.25.1", "2.27.3", "2.27.5", "2.30.7")]
    assert got == pytest.approx([370.8, 720.0, 720.0, 721.8, 721.8])


def test_sm100_speed_arrays_and_nvls_channels_per_release():
    # search.cc sm100SpeedArrayInter's first entries and nvls.cc's NVLS channels (one node, several)
    inter = {v: _t(v).speed_inter["sm100"][:3] for v in ("2.26.6", "2.27.3", "2.27.5", "2.27.6", "2.29.7", "2.30.7")}
    assert inter == {
        "2.26.6": (48.0, 45.0, 42.0),
        "2.27.3": (47.9, 45.0, 42.0),
        "2.27.5": (48.0, 45.1, 42.0),
        "2.27.6": (96.0, 48.0, 45.1),
        "2.29.7": (96.0, 80.0, 48.0),
        "2.30.7": (96.0, 86.0, 80.0),
    }
    assert [len(_t(v).speed_intra["sm100"]) for v in ("2.25.1", "2.27.3", "2.29.2")] == [10, 11, 12]
    assert [_t(v).nvls_channels_sm100 for v in ("2.24.3", "2.26.6", "2.27.3", "2.30.7")] == [
        (16, 16),
        (32, 32),
        (24, 32),
        (24, 32),
    ]
    # the steps inside 2.25.1-2.27.7 leave its label and every non-Blackwell figure alone
    t, label = tuning_for(parse_version("2.27.7"))
    assert label == "2.27.7 (as 2.25.1-2.27.7)" and t.first == V2_25_1.first
    h100 = tuner.describe(Cluster(hgx(2, "dgx-h100")), 16)
    assert tuner.candidates(h100, 2**24, tuning=t) == tuner.candidates(h100, 2**24, tuning=V2_25_1)


def test_nvls_tuning_of_2_30_3_on_sm100():
    # transport/nvls.cc ncclNvlsTreeSm100Tuning (2.30.3 on), hgx's GPU-to-NIC path PATH_PIX (<= PATH_PXB)
    two = _sys(2)
    assert tuner.nvls_tuning(two) == (32, 64 * 1024)  # 2 nodes, NIC 50 >= 48, ppn 8 <= 8 and NIC < 96
    assert tuner.nvls_tuning(_sys(2, gpus_per_host=4)) == (32, 256 * 1024)  # ppn <= 4: chunk 256 KiB
    assert tuner.nvls_tuning(_sys(4)) == (24, 64 * 1024)  # 48 <= NIC < 96, PXB or closer: 64 KiB
    assert tuner.nvls_tuning(_sys(4, nics_per_gpu=2)) == (24, 64 * 1024)  # 2 x 400 Gb/s: NCCL's minNetBw is one NIC
    assert tuner.nvls_tuning(_sys(4, nic_bandwidth=100e9)) == (24, 256 * 1024)  # NIC >= 96, ppn <= 8
    assert tuner.nvls_tuning(_sys(4, nic_bandwidth=25e9)) == (32, None)  # slower NICs: NVLS_NCHANNELS_SM100
    assert tuner.nvls_tuning(_sys(1)) == (24, None)  # one node: NVLS_NCHANNELS_SM100_NVL
    assert tuner.nvls_tuning(two, _t("2.29.7")) == (32, None)  # before 2.30.3 no such tuning
    assert tuner.nvls_tuning(two, _t("2.26.6")) == (32, None)
    assert tuner.nvls_tuning(two, _t("2.24.3")) == (16, None)  # no sm100 yet: Hopper's 16
    h100 = tuner.describe(Cluster(hgx(2, "dgx-h100")), 16)
    assert tuner.nvls_tuning(h100) == (16, None)
    # the simulated NVLS-tree cuts 2 x DGX B200's 1 GiB into 64 KiB chunks (32 channels x 8 heads), Hopper's
    # into 128 KiB (16 x 8): (1 GiB / 8 heads) / (8 chunks a slice x chunk) slices
    assert nvls_slices(2**30, 2, 8, True, NEWEST, two) == 2**27 // (8 * 64 * 1024)
    assert nvls_slices(2**30, 2, 8, True, NEWEST, h100) == 2**27 // (8 * 128 * 1024)
    assert (efficiency(two), efficiency(h100)) == (0.74, 0.85)  # tuning.cc nvlsEfficiency


def test_tuner_picks_for_dgx_b200_worked_by_hand():
    one, two = _sys(1), _sys(2)
    # 1 node, 2.30.7, 16 MiB: NVLS/Simple. NVLS graph: 8 heads at the sm100 intra speed <= 721.8 / 8 = 90.2:
    # 90; one node: bwInter = the array's first, 90. busBw/ch = min(90 x .74 (nvlsEfficiency Blackwell) x 7/8
    # x 2 = 116.55, 90) = 90; algBw = 8 x 90 x 8 / 14 = 411.43 GB/s; latency NVLink hwLat[NVLS] 25 us;
    # 25 + 16777216 / 411430 = 65.78 us; 24 channels (NVLS_NCHANNELS_SM100_NVL)
    c = tuner.pick(one, 2**24)
    assert (c.algorithm, c.protocol, c.channels, round(c.time_us, 2)) == ("nvls", "simple", 24, 65.78)
    # 1 node, 2.24.3 (before sm100): as Hopper. NVLink 18 x 20.6 = 370.8, NVLS intra speed <= 46.35 in
    # sm90SpeedArrayIntra: 40, inter 60; busBw = 8 x min(40, 60) x 5/6 = 266.67; 25 + 16777216 / 266667
    # = 87.91 us; 16 channels
    c = tuner.pick(one, 2**24, tuning=_t("2.24.3"))
    assert (c.algorithm, c.channels, round(c.time_us, 2)) == ("nvls", 16, 87.91)
    # 2 nodes, 2.30.7, 1 MiB: Tree/LL128. Tree graph: 8 channels (NICs) at inter 48 (min(NIC 50, PCIe 48)),
    # pass 2 raises bwIntra to 90 (48 <= 90 <= 96, 8 x 90 <= 721.8). busBw = 8 x 90 = 720, x.92 = 662.4,
    # min(., 8 x perChMaxTreeBws[Blackwell][N2] 42.8 = 342.4); LL128 min(342.4 x 120/128 = 321,
    # 8 x perChMaxTreeLL128Bws[Blackwell][N2] 31.67 = 253.36) = 253.36; pattern TREE x.85 = 215.36;
    # algBw / 2 = 107.68, treeCorrectionFactor[LL128][14] .6: 64.61 GB/s. Latency baseLat 14 +
    # 2 x (7 x NVLink 1.25 + 1 x NET 8.5) = 48.5; 48.5 + 1048576 / 64607 = 64.73 us; 16 runtime channels
    c = tuner.pick(two, 2**20)
    assert (c.algorithm, c.protocol, c.channels, round(c.time_us, 2)) == ("tree", "ll128", 16, 64.73)
    # 2 nodes, 2.30.7, 16 MiB: NVLSTree/Simple. NVLS graph 8 heads, intra 90, inter 48; busBw/ch =
    # min(116.55, 48 x 2 (2 nodes), perChMaxNVLSTreeBws[Blackwell][N2] 96) = 96; algBw = 8 x 96 x 16/30 =
    # 409.6, x treeCorrectionFactor[Simple][18] .7 (2.29.2 on: sm100, x86) = 286.72; latency 0 + NVLink 25 +
    # 2 x log2(2) x NET 20.9 = 66.8; 66.8 + 16777216 / 286720 = 125.31 us; 32 channels
    c = tuner.pick(two, 2**24)
    assert (c.algorithm, c.channels, round(c.time_us, 2)) == ("nvls-tree", 32, 125.31)
    # 2 nodes, 2.24.3 (before sm100: Hopper's compcap index, arrays and NVLink), Tree/LL128 at 1 MiB: NVLink
    # 18 x 20.6 = 370.8; ring/tree 8 channels at sm90 inter 48; pass 2 finds no sm90 intra speed in [48, 96]
    # with 8 x speed <= 370.8 (60: 480, 50: 400), so bwIntra 48. busBw 8 x 48 = 384 x .92 = 353.28, min(.,
    # 8 x perChMaxTreeBws[Hopper][N2] 41.4 = 331.2); LL128 min(331.2 x 120/128 = 310.5, 8 x 36.7 = 293.6);
    # x.85 = 249.56, / 2 = 124.78, x .6 = 74.87 GB/s; 48.5 + 1048576 / 74868 = 62.51 us; 16 runtime
    # channels (connect.cc doubles only minCompCap == 90 in 2.24.3)
    c = tuner.pick(two, 2**20, {"tree"}, {"ll128"}, _t("2.24.3"))
    assert (c.channels, round(c.time_us, 2)) == (16, 62.51)
    # 2.28.9: no NVLSTree correction yet: 66.8 + 16777216 / 409600 = 107.76 us
    c = tuner.pick(two, 2**24, tuning=_t("2.28.9"))
    assert (c.algorithm, round(c.time_us, 2)) == ("nvls-tree", 107.76)


def test_log_reader_builds_b200_and_says_why_not_gb200(tmp_path):
    import nccl_logs

    head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
    table = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "  1073741824     268435456     float     sum      -1   3200.9  335.45  628.97      0\n"
    )

    def log(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text + head + table)
        return path

    def devices(n: int, per: int, model: str) -> str:
        return "".join(
            f"#  Rank {r:3d} Group  0 Pid 1 on node{r // per} device  {r % per} [0000:1b:00] NVIDIA {model}\n"
            for r in range(n)
        )

    b = nccl_logs.parse_log(log("b-2node.txt", "# DGX B200\n" + devices(16, 8, "B200")))
    g = nccl_logs.topology(b)
    assert (b.gpu, b.hosts, g.graph["gpu_arch"], g.graph["nvls"], g.graph["nics_per_host"]) == (
        "b200",
        2,
        "sm100",
        True,
        8,
    )
    assert g.graph["nvlink_bw"] == pytest.approx(721.8e9) and g.graph["nic_bw"] == 50e9
    # two NICs per GPU: still an NVSwitch that reduces
    two = nccl_logs.parse_log(log("b2-2node.txt", "# 16x 200 Gb/s\n" + devices(16, 8, "B200")))
    assert nccl_logs.topology(two).graph["nvls"] is True
    # the header alone names it
    hdr = nccl_logs.parse_log(log("h-1node.txt", "#% 1 node, 8x B200, NCCL 2.26.2\n# nccl-tests -g 8\n"))
    assert hdr.gpu == "b200"
    for model, why in (("GB200", "multi-node NVLink"), ("B300", "ConnectX-8")):
        with pytest.raises(nccl_logs.LogError, match=f"{model} GPUs are not modelled.*{why}") as err:
            nccl_logs.parse_log(log(f"{model}-2node.txt", devices(8, 4, model)))
        assert "\n" not in str(err.value)
    # GH200 was refused here ("a Grace Hopper superchip"); it builds the gh200-quad preset now (tests/test_gh200.py)
    gh = nccl_logs.parse_log(log("GH200-2node.txt", devices(8, 4, "GH200")))
    assert gh.gpu == "gh200" and nccl_logs.topology(gh).graph["gpu_model"] == "gh200"


def test_cli_refuses_nvls_on_a_b200_without_it():
    bad = subprocess.run(
        [sys.executable, "-m", "collsim", "simulate", "-t", "hgx:hosts=1,gpu=b200,nvls=false", "-a"]
        + ["nccl:algo=nvls", "--size", "1MiB"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "NVLink SHARP" in bad.stderr and "Traceback" not in bad.stderr
