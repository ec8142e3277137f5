"""NCCL's schedules, tuner and topologies: the data check and fast == message on the hardware they need,
the tuner against numbers derived by hand from tuning.cc, the CLI's pick column, the log reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.errors import AlgorithmError, CalibrationError, TopologyError
from sim.nccl import tuner
from sim.nccl.layout import btree_parent, dtree_parent
from sim.simulate import simulate
from sim.topology import hgx, load_graph

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("dgx-h100", 1, "nvls"),
    ("dgx-h100", 2, "nvls-tree"),
    ("dgx-h100", 3, "nvls-tree"),
    ("oci-bm-gpu-h100-8", 2, "nvls-tree"),
    ("dgx-h100", 2, "nccl-tree"),
    ("oci-bm-gpu4-8", 3, "nccl-tree:proto=ll"),
    ("hgx-a100-200g", 2, "ring:channels=8"),
    ("oci-bm-gpu4-8", 2, "ring:channels=16"),
    ("dgx-h100", 1, "nccl"),
    ("dgx-h100", 2, "nccl"),
    ("dgx-h100", 2, "nccl:algo=ring,proto=ll128"),
    ("oci-bm-gpu4-8", 2, "nccl"),
    ("aws-p4d", 2, "nccl"),  # EFA: Simple only, a NIC per PCIe switch of two GPUs
    ("aws-p5", 2, "nccl"),
    ("aws-p5en", 3, "nccl"),
]


@pytest.mark.parametrize("preset, hosts, spec", CASES)
@pytest.mark.parametrize("size", [1, 2**20 + 7, 3 * 2**22])
def test_every_contribution_once_and_fast_equals_message(preset, hosts, spec, size):
    g = hgx(hosts, preset, gpus_per_host=4)
    a = simulate(g, "allreduce", spec, size, check=True, gamma=1e-11)
    b = simulate(g, "allreduce", spec, size, engine="fast", gamma=1e-11)
    assert a.wrong == 0
    assert abs(a.time_s - b.time_s) <= 1e-9 * a.time_s
    assert a.flows == b.flows


def test_channels_split_the_buffer_over_every_nic():
    """8 rings on 2 DGX H100: every NIC carries one ring each way, so the ring's busbw is 8 NICs' worth
    (capped by PCIe Gen5 as NCCL rates it, 48 GB/s), not one NIC's."""
    one = simulate("hgx:hosts=2", "allreduce", "ring", 2**30)
    eight = simulate("hgx:hosts=2", "allreduce", "ring:channels=8", 2**30)
    assert one.busbw_GBps < 50 < 360 < eight.busbw_GBps < 8 * 48


def test_nvls_moves_1_plus_1_over_g_of_the_buffer_per_gpu():
    """Inside one H100 host NVLS beats the ring's 2(G-1)/G: each GPU's NVLink carries (1 + 1/G)·n."""
    from sim.algorithms.nvls import STEP_LATENCY

    r = simulate("hgx:hosts=1", "allreduce", "nvls", 2**32)
    ring = simulate("hgx:hosts=1", "allreduce", "ring:channels=8", 2**32)
    # 256 iterations of 16 channels x 8 heads x 128 KiB; each moves (1 + 1/G) of its bytes through a GPU's
    # NVLink as NCCL rates it (18 x 20.6 GB/s) at the NVLS efficiency, after its hand-off and the link's latency
    moving = (1 + 1 / 8) * (2**32 / 256) / (370.8e9 * 0.85)
    expected_algbw = 2**32 / (256 * (moving + STEP_LATENCY)) / 1e9  # (the hand-off: 3.4 us less 0.3 us twice)
    assert r.algbw_GBps == pytest.approx(expected_algbw, rel=0.03)
    assert r.busbw_GBps > 1.2 * ring.busbw_GBps


def test_nvls_tree_channels_are_capped_as_nccl_caps_them():
    """Across hosts an NVLS-tree channel moves no more than NCCL's per-channel cap (perChMaxNVLSTreeBws,
    57.7 GB/s busbw on 2 Hopper nodes, 45.5 from 3): the cap, not NVLink, bounds it at large sizes, and
    the prediction sits just under the tuner's own bandwidth; NVLS inside one host has no such cap."""
    for hosts, per_channel in ((2, 57.7), (4, 45.5)):
        cluster = Cluster(hgx(hosts, "dgx-h100"))
        sys = tuner.describe(cluster, 8 * hosts)
        n = 8 * hosts
        cap = tuner.nvls_tree_cap(sys)
        assert cap == pytest.approx(8 * per_channel * 1e9 * n / (2 * (n - 1)))
        r = simulate(cluster, "allreduce", "nvls-tree", 2**33)
        assert 0.9 * cap < r.algbw_GBps * 1e9 <= cap
    assert tuner.nvls_tree_cap(tuner.describe(Cluster(hgx(1, "dgx-h100")), 8)) == float("inf")


def test_nvls_chunks_follow_nccls_size_rules():
    """enqueue.cc: NVLS halves its 128 KiB chunk below 1 GiB, 64 MiB and 8 MiB (16 channels x 8 heads
    in flight); NVLS-tree below 64 MiB and 8 MiB, with a 64 KiB ceiling from 4 nodes on."""
    from sim.nccl.protocols import nvls_chunk

    ops = 16 * 8
    assert [nvls_chunk(s, 1, ops) for s in (2**31, 2**30, 2**29, 2**26, 2**23, 2**22)] == [
        131072,
        131072,
        65536,
        65536,
        32768,
        16384,
    ]
    assert [nvls_chunk(s, 2, ops) for s in (2**34, 2**26, 2**25, 2**23, 2**22)] == [131072, 131072, 65536, 65536, 32768]
    assert [nvls_chunk(s, 4, ops) for s in (2**34, 2**23, 2**22)] == [65536, 65536, 32768]


@pytest.mark.parametrize("hosts, per_leaf", [(2, 32), (3, 2)])
@pytest.mark.parametrize("size", [1, 3 * 2**22 + 5])
def test_nvls_across_hosts_reduces_in_sharp_switches(hosts, per_leaf, size):
    """With switches that reduce (SHARP), ``nvls`` spans hosts: every head sends its part up to its
    rail's leaf switch (and a spine above the leaves where hosts sit under several), which sums and
    sends it back; every contribution arrives once and fast == message. Without SHARP it is one line."""
    g = hgx(hosts, "dgx-h100", gpus_per_host=4, sharp=True, hosts_per_leaf=per_leaf)
    a = simulate(g, "allreduce", "nvls", size, check=True)
    b = simulate(g, "allreduce", "nvls", size, engine="fast")
    assert a.wrong == 0
    assert abs(a.time_s - b.time_s) <= 1e-9 * a.time_s
    with pytest.raises(AlgorithmError, match="do not reduce"):
        simulate(hgx(hosts, "dgx-h100", gpus_per_host=4, hosts_per_leaf=per_leaf), "allreduce", "nvls", size)


def test_nccl_picks_nvls_across_nodes_only_with_sharp():
    """enqueue.cc: NVLS across nodes runs over CollNet, so NCCL offers it only with SHARP switches."""
    plain = Cluster(hgx(4, "dgx-h100"))
    sharp = Cluster(hgx(4, "dgx-h100", sharp=True))
    nccl = get_algorithm("allreduce", "nccl")
    assert nccl.choice(32, 2**30, plain).algorithm != "nvls"
    assert nccl.choice(32, 2**30, sharp).algorithm == "nvls"
    r = simulate(sharp, "allreduce", "nccl", 2**30)
    tree = simulate(plain, "allreduce", "nccl", 2**30)
    assert r.time_s < tree.time_s


def test_tuner_matches_the_hand_derived_dgx_example():
    """docs/nccl.md's worked example (2 x 8 H100, 8 x 400G): NVLSTree lat 66.8 us and algbw 246.2 GB/s,
    Tree/LL128 48.5 us, Ring/Simple 8 x 48 busbw; picks Tree/LL128 at 1 MiB and NVLSTree at 64 MiB."""
    sys = tuner.describe(Cluster(hgx(2)), 16)
    graphs = tuner.search(sys)
    assert (graphs["ring"].channels, graphs["ring"].bw_inter) == (8, 48.0)
    table = {(c.algorithm, c.protocol): c for c in tuner.candidates(sys, 2**30)}
    assert table[("nvls-tree", "simple")].latency_us == pytest.approx(66.8)
    assert table[("nvls-tree", "simple")].bandwidth == pytest.approx(246.2, abs=0.1)
    assert table[("tree", "ll128")].latency_us == pytest.approx(48.5)
    assert table[("ring", "simple")].bandwidth == pytest.approx(384 * 16 / 30)
    assert tuner.pick(sys, 2**20).algorithm == "tree" and tuner.pick(sys, 2**20).protocol == "ll128"
    assert tuner.pick(sys, 2**26).algorithm == "nvls-tree"


def test_single_node_search_and_nvls_estimate():
    """One H100 node: rings 6 x 60 -> duplicated 12 x 30; NVLS estimate ~473 busbw at 1 GiB."""
    sys = tuner.describe(Cluster(hgx(1)), 8)
    assert (tuner.search(sys)["ring"].channels, tuner.search(sys)["ring"].bw_intra) == (12, 30.0)
    c = tuner.pick(sys, 2**30)
    assert c.algorithm == "nvls"
    assert 2**30 / (c.time_us * 1e3) * 14 / 8 == pytest.approx(473, abs=2)


def test_nccl_trees_are_nccls():
    assert [btree_parent(14, r) for r in range(14)] == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12]
    # tree 1 mirrors tree 0 for an even count: the root of tree 1 is the last node
    assert dtree_parent(12, 11, 1) == -1 and dtree_parent(12, 3, 1) == 11
    assert dtree_parent(13, 1, 1) == -1  # shifted by one for an odd count


@pytest.mark.parametrize(
    "topology, spec, message",
    [
        ("hgx:hosts=1,preset=hgx-a100-200g", "nvls", "NVSwitch that reduces"),
        ("dgx:hosts=1", "nvls", "NVSwitch that reduces"),
        ("hgx:hosts=2", "nvls", "use nvls-tree"),
        ("hgx:hosts=2,preset=oci-bm-gpu4-8", "nccl:algo=nvls", "cannot run it"),
        ("hgx:hosts=1", "nccl:algo=nvls-tree", "off on a single host"),
        ("hgx:hosts=2,preset=hgx-a100-200g", "collnet-direct", "switches that reduce"),
        ("hgx:hosts=1,preset=hgx-a100-200g,sharp=true", "collnet-chain", "at least 2 hosts"),
        ("hgx:hosts=2,preset=hgx-a100-200g", "nccl:algo=collnetdirect", "cannot run it"),
        ("hgx:hosts=2", "nccl:algo=collnet-chain", "switches that reduce"),
    ],
)
def test_an_algorithm_the_topology_cannot_run_is_one_line(topology, spec, message):
    with pytest.raises(AlgorithmError) as info:
        simulate(topology, "allreduce", spec, 2**20)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bad_nccl_options():
    with pytest.raises(AlgorithmError, match="unknown NCCL algorithm 'rign'"):
        get_algorithm("allreduce", "nccl:algo=rign")
    assert get_algorithm("allreduce", "nccl:algo=^nvls-tree,proto=ll|simple").spec.startswith("nccl:")


def test_forced_protocol_is_the_pick():
    c = Cluster(hgx(2))
    algo = get_algorithm("allreduce", "nccl:algo=ring,proto=simple")
    pick = algo.choice(16, 2**20, c)
    assert (pick.algorithm, pick.protocol) == ("ring", "simple")


def test_bundled_hgx_files_name_their_hardware():
    for name in ("dgx-h100-2", "hgx-a100-200g-2", "oci-bm-gpu-h100-8-2", "oci-bm-gpu4-8-2"):
        g = load_graph(name)
        assert len(g.graph["ranks"]) == 16
    assert load_graph("oci-bm-gpu-h100-8-2").graph["nics_per_host"] == 16
    assert not load_graph("hgx-a100-200g-2").graph["nvls"]


@pytest.mark.parametrize(
    "spec", ["hgx:preset=hgx-a100-200g,hosts=2,gpus_per_host=4,nics_per_host=2", "hgx:hosts=2,gpus_per_host=4,gpu=h800"]
)
@pytest.mark.parametrize("algo", ["nccl", "nccl:algo=ring", "nccl:algo=tree"])
def test_shared_nics_and_export_gpus_run_every_schedule(spec, algo):
    """A NIC per PCIe switch shared by two GPUs, and GPUs with 8 NVLink links: each schedule delivers every
    contribution once, and the fast path equals the message level."""
    a = simulate(spec, "allreduce", algo, 3 * 2**22, check=True, gamma=1e-11)
    b = simulate(spec, "allreduce", algo, 3 * 2**22, engine="fast", gamma=1e-11)
    assert a.wrong == 0 and abs(a.time_s - b.time_s) <= 1e-9 * a.time_s


def test_hgx_hardware_options():
    """Options given inline arrive as text; NIC counts below one per GPU hang a NIC off every PCIe switch;
    the export parts count 8 NVLink links; a GPU without NVLink SHARP drops the preset's NVLS."""
    shared = load_graph("hgx:preset=hgx-a100-200g,hosts=1,nics_per_host=4,pcie_gen=4")
    nics = sorted(v for v, d in shared.nodes(data=True) if d["kind"] == "nic")
    assert [shared.nodes[v]["gpu"] for v in nics] == ["h0:gpu0", "h0:gpu2", "h0:gpu4", "h0:gpu6"]
    assert shared.has_edge("h0:gpu1", "h0:pcie0") and shared.has_edge("h0:pcie0", "h0:nic0")
    assert load_graph("hgx:hosts=1,nics_per_gpu=2").graph["nics_per_host"] == 16
    assert load_graph("hgx:hosts=1,gpu=h800").graph["nvlink_bw"] == pytest.approx(8 * 20.6e9)
    a800 = load_graph("hgx:hosts=1,gpu=a800")
    assert a800.graph["gpu_arch"] == "sm80" and not a800.graph["nvls"]
    for bad, why in (("nics_per_host=3", "do not divide"), ("nics_per_host=24", "more than two per GPU")):
        with pytest.raises(TopologyError, match=why):
            load_graph(f"hgx:hosts=1,{bad}")
    with pytest.raises(TopologyError, match="third generation"):
        load_graph("hgx:hosts=1,gpu=a100,nvls=true")


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "collsim", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_cli_shows_the_pick_per_size():
    out = _cli("simulate", "-t", "dgx-h100-2", "-a", "nccl", "--sizes", "1MiB:64MiB:64")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    picks = [line for line in lines if line.startswith("#   NCCL: ")]
    assert len(picks) == 2 and len([line for line in lines if not line.startswith("#")]) == 2
    assert picks[0].startswith("#   NCCL: Tree/LL128, 16 channels") and "NVLSTree/Simple" in picks[1]
    js = _cli("simulate", "-t", "dgx-h100-2", "-a", "nccl:algo=ring", "--size", "64MiB", "--json")
    assert json.loads(js.stdout)["nccl"]["algorithm"] == "Ring"
    bad = _cli("simulate", "-t", "hgx-a100-200g-2", "-a", "nvls", "--size", "1MiB")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_log_reader_takes_what_users_post(tmp_path):
    import nccl_logs

    body = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "  1073741824     268435456     float     sum      -1   4484.9  239.41  448.90      0   4470.2  240.20  450.37      0\n"
    )
    srun = tmp_path / "srun.txt"
    srun.write_text("".join(f" 0: {line}\n" for line in body.splitlines()))
    for log in (nccl_logs.parse_log(srun), nccl_logs.parse_log(srun, ranks=16)):  # 16: busbw / algbw = 2 * 15 / 16
        samples, _ = nccl_logs.read_samples(nccl_logs._source(log))  # the rows, read as calibration reads them
        rows = [(s.size, round(s.time_s * 1e6, 1), s.ranks) for s in samples]
        assert (log.ranks, log.hosts, rows) == (16, 2, [(1073741824, 4484.9, 16)])
    # the stated hardware: the GPU the device lines name, the NICs from an `N x S Gb/s` figure
    stated = tmp_path / "stated.txt"
    stated.write_text(
        "# 2 servers, 8x A800 each, 4x 100 Gb/s RoCE per server\n"
        + "".join(
            f"#  Rank {r:2d} Group  0 Pid 1 on node{r // 8} device  {r % 8} [0x1b] NVIDIA A800-SXM4-80GB\n"
            for r in range(16)
        )
        + body
    )
    a800 = nccl_logs.parse_log(stated)
    g = nccl_logs.topology(a800)
    assert (a800.gpu, a800.hosts, g.graph["nics_per_host"], g.graph["nic_bw"]) == ("a800", 2, 4, 12.5e9)
    assert g.graph["nvlink_bw"] == pytest.approx(8 * 20e9)
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    with pytest.raises(nccl_logs.LogError, match="not an nccl-tests log"):
        nccl_logs.parse_log(junk)


def test_log_reader_reads_the_hardware_other_clusters_state(tmp_path):
    import nccl_logs

    def table(p: int) -> str:  # one all-reduce row of p ranks: busbw = algbw * 2(p-1)/p
        return (
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
            f"  1073741824     268435456     float     sum      -1   4484.9  239.41  {239.41 * 2 * (p - 1) / p:6.2f}      0\n"
        )

    rows = table(16)
    head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"

    def log(name: str, text: str, p: int = 16) -> object:
        path = tmp_path / name
        path.write_text(text + head + table(p))
        return path

    def devices(n: int, per: int, model: str) -> str:
        return "".join(
            f"#  Rank {r:3d} Group  0 Pid 1 on node{r // per} device  {r % per} [0000:1b:00] NVIDIA {model}\n"
            for r in range(n)
        )

    # four GPUs per node: the topology has four per host, not the preset's eight
    four = nccl_logs.parse_log(log("gh-2node.txt", "# 4x 200 Gb/s HDR per node\n" + devices(8, 4, "A100-SXM4-80GB"), 8))
    g = nccl_logs.topology(four)
    assert (four.hosts, four.gpus_per_host, len(g.graph["ranks"]), g.graph["nics_per_host"]) == (2, 4, 8, 4)
    # srun -N NODES --ntasks-per-node=K, no rank lines; a binary built with MPI=1 and a suffix
    srun = nccl_logs.parse_log(
        log("x-4node.txt", "srun -N 4 --ntasks-per-node=8 ./build/all_reduce_perf_mpi -b 1G -e 1G\n", 32)
    )
    samples, _ = nccl_logs.read_samples(nccl_logs._source(srun))
    assert (srun.ranks, srun.hosts, samples[0].collective, samples[0].ranks) == (32, 4, "allreduce", 32)
    # more NICs than two per GPU fold into two per GPU of the summed speed
    many = nccl_logs.parse_log(log("r-2node.txt", "# 8x H100: 32x 100 Gbps RoCE\n" + devices(16, 8, "H100 80GB HBM3")))
    g = nccl_logs.topology(many)
    assert (g.graph["nics_per_host"], g.graph["nic_bw"], "folded" in many.note) == (16, 25e9, True)
    # ... but an EFA run (AWS p5's 32 x 100 Gb/s) is its instance's aws-* preset: the plugin groups a GPU's
    # four NICs into one NCCL device of 400 Gb/s (docs/nccl.md, "AWS EFA")
    p5 = nccl_logs.parse_log(
        log("p5-2node.txt", "# p5.48xlarge: 32x 100 Gbps EFA\n" + devices(16, 8, "H100 80GB HBM3"))
    )
    g = nccl_logs.topology(p5)
    assert (g.graph["nics_per_host"], g.graph["nic_bw"], g.graph["efa_platform"]) == (8, 50e9, "p5")
    # a node's total stated for EFA (per instance) is the instance's NICs: p4d's 4 x 100 Gb/s
    p4d = nccl_logs.parse_log(
        log("p4d-2node.txt", "#% p4d.24xlarge, 400 Gbps EFA\n" + devices(16, 8, "A100-SXM4-40GB"))
    )
    g = nccl_logs.topology(p4d)
    assert (g.graph["nics_per_host"], g.graph["nic_bw"], g.graph["efa_platform"]) == (4, 12.5e9, "p4d")
    # IB generations by name, the CPU vendor where stated
    ndr = nccl_logs.parse_log(
        log("n-2node.txt", "# 8x ConnectX-7 NDR, AMD EPYC 9654\n" + devices(16, 8, "H100 80GB HBM3"))
    )
    g = nccl_logs.topology(ndr)
    assert (g.graph["nic_bw"], g.graph["cpu_vendor"]) == (50e9, "amd")
    # a GPU hgx does not build, and a PCIe card, are refused by name
    with pytest.raises(nccl_logs.LogError, match="GB200 GPUs are not modelled.*multi-node NVLink"):
        nccl_logs.parse_log(log("b-2node.txt", devices(16, 4, "GB200")))
    with pytest.raises(nccl_logs.LogError, match="PCIe card"):
        nccl_logs.parse_log(log("p-1node.txt", devices(8, 8, "H100 PCIe"), 8))
    # a log of two runs prints its rank lines twice: still 16 ranks, every row a sample
    once = devices(16, 8, "H100 80GB HBM3") + head + rows
    twice = nccl_logs.parse_log(log("t-2node.txt", "# Collective test starting: all_reduce_perf\n" + once + once))
    samples, _ = nccl_logs.read_samples(nccl_logs._source(twice))
    assert (twice.ranks, twice.hosts, [s.ranks for s in samples]) == (16, 2, [16, 16, 16])
    # no rank lines: the GPU from the header (`8xH100`), the ranks from the command, the nodes from the name
    bare = nccl_logs.parse_log(log("v-2node.txt", "#% XE9680 with 8xH100\nmpirun -np 16 ./all_reduce_perf -b 1G\n"))
    assert (bare.gpu, bare.ranks, bare.hosts) == ("h100", 16, 2)
    # containers that all call themselves "localhost": 8 GPUs per node, said on the log's line
    local = "".join(
        f"#  Rank {r:2d} Group  0 Pid 1 on localhost device  {r % 8} [0x1b] NVIDIA H100 80GB HBM3\n" for r in range(16)
    )
    same = nccl_logs.parse_log(log("l-2node.txt", local))
    assert (same.hosts, same.gpus_per_host, "taken as 2 nodes" in same.note) == (2, 8, True)
    # out of sample from the largest smaller run of the same hardware
    runs = [nccl_logs.parse_log(log(f"hw-{n}node.txt", devices(8 * n, 8, "H100 80GB HBM3"), 8 * n)) for n in (1, 2, 8)]
    source = nccl_logs.smaller_runs(runs)
    assert {k.name: v.path.name for k, v in source.items()} == {
        "hw-2node.txt": "hw-1node.txt",
        "hw-8node.txt": "hw-2node.txt",
    }


def test_log_reader_reads_the_quirks_of_other_posts(tmp_path):
    """What published logs beyond the development set do (docs/nccl-heldout.md, "Beyond the development set"):
    Open MPI's output tags, older nccl-tests' rank lines, rank lines a page lost the ``#`` of or posted
    only in part, ``-g 8`` processes, device lines naming no model, a table of another collective."""
    import nccl_logs

    def table(p: int, factor: float | None = None) -> list[str]:
        busbw = 239.41 * (2 * (p - 1) / p if factor is None else factor)
        return [
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            f"  1073741824     268435456     float     sum      -1   4484.9  239.41  {busbw:6.2f}      0",
        ]

    def rank(r: int, per: int = 8, model: str = "NVIDIA H100 80GB HBM3", group: bool = True) -> str:
        g = "Group  0 " if group else ""
        return f"#  Rank {r:2d} {g}Pid {100 + r} on node{r // per} device {r % per:2d} [0x1b] {model}"

    def parse(name: str, lines: list[str]) -> object:
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        return nccl_logs.parse_log(path)

    def read(log: object) -> tuple[int, int, int, str]:
        samples, _ = nccl_logs.read_samples(nccl_logs._source(log))
        return log.ranks, log.hosts, samples[0].ranks, log.gpu

    # Open MPI's --tag-output on every line, rank lines without "Group" (older nccl-tests)
    tagged = [
        f"[1,{r % 16}]<stdout>:{ln}" for r, ln in enumerate([rank(r, group=False) for r in range(16)] + table(16))
    ]
    assert read(parse("tag.txt", tagged)) == (16, 2, 16, "h100")
    # a markdown page ate the "#" of the first rank line: still 16 ranks on two 8-GPU hosts
    eaten = [rank(0).lstrip("#")] + [rank(r) for r in range(1, 16)] + table(16)
    assert read(parse("md.txt", eaten)) == (16, 2, 16, "h100")
    # only 12 of 32 rank lines posted: the command's 32, which busbw / algbw agrees with, on 8-GPU hosts
    part = ["mpirun -np 32 ./all_reduce_perf -b 1G -e 1G -g 1"] + [rank(r) for r in range(12)] + table(32)
    assert read(parse("part.txt", part)) == (32, 4, 32, "h100")
    # no rank lines, two processes of -g 8 each: 16 ranks
    procs = ["#% 8x H100 per node", "mpirun -np 2 ./all_reduce_perf -b 1G -e 1G -g 8"] + table(16)
    procs[2] = procs[2].replace("nGpus 1", "nGpus 8")
    assert read(parse("procs-2node.txt", procs)) == (16, 2, 16, "h100")
    # device lines naming no model: refused with their name, unless a '#%' line states the GPU
    unnamed = [rank(r, model="NVIDIA Graphics Device") for r in range(16)] + table(16)
    with pytest.raises(nccl_logs.LogError, match="'NVIDIA Graphics Device', no GPU model"):
        parse("unnamed.txt", unnamed)
    assert read(parse("stated.txt", ["#% 8x H100 SXM per node"] + unnamed)) == (16, 2, 16, "h100")
    blank = [rank(r, model="").rstrip() for r in (0, 7, 8, 15)] + table(16)  # four of 16 lines, no names
    with pytest.raises(nccl_logs.LogError, match="the device lines name no device"):
        parse("blank.txt", blank)
    with pytest.raises(nccl_logs.LogError, match="an RCCL run on AMD GPUs"):
        parse("rccl.txt", ["rccl-tests: Version develop:a52452e"] + blank)
    # header phrasings: `8*400G`, a CPU by code name, NICs said per GPU, a node's total in Gb/s
    ranks16 = [rank(r) for r in range(16)] + table(16)
    for header, want in (
        ("#% 8*400G RoCE, Genoa", (8, 50e9, "amd")),
        ("#% 2x 200 Gb/s per GPU, Sapphire Rapids", (16, 25e9, "intel")),
        ("#% 3,200 Gbps total", (8, 50e9, "intel")),
        ("#% 3,200 Gbps EFA", (8, 50e9, "amd")),  # an EFA run of H100s: aws-p5 (AMD EPYC; "AWS EFA")
    ):
        g = nccl_logs.topology(parse("h-2node.txt", [header] + ranks16))
        assert (g.graph["nics_per_host"], g.graph["nic_bw"], g.graph["cpu_vendor"]) == want, header
    # a table whose busbw / algbw is all_gather's (n-1)/n under an all_reduce_perf command: refused
    gather = ["mpirun -np 16 ./all_reduce_perf -b 1G -e 1G"] + [rank(r) for r in range(16)] + table(16, 15 / 16)
    with pytest.raises(nccl_logs.LogError, match="all_gather_perf's, reduce_scatter_perf's or alltoall_perf's"):
        parse("gather.txt", gather)


def test_log_table_survives_a_log_it_cannot_calibrate(tmp_path, monkeypatch, capsys):
    """A log the fit refuses is one 'skipped' line of the in-sample table, not a traceback."""
    import nccl_logs

    from tests.calib_fixtures import nccl_text

    (tmp_path / "h100-2node.txt").write_text(nccl_text("all_reduce_perf", "allreduce", 16, [(2**30, 4.5e-3)]))

    def refuse(log: object) -> None:
        raise CalibrationError("the fit refuses this log")

    monkeypatch.setattr(nccl_logs, "calibrate", refuse)
    assert nccl_logs.main([str(tmp_path), "--tables", "nominal,in-sample,out-of-sample"]) == 0
    out = capsys.readouterr().out
    assert "h100-2node.txt: skipped: the fit refuses this log" in out and "# 1-node logs:" in out


@pytest.mark.parametrize("algo", ["nccl", "nccl-tree", "ring:channels=3"])
def test_schedules_run_on_clusters_built_from_arrays(algo):
    """An inline ``dgx:`` spec is built from arrays, not a graph (sim/topology/fabric.py): NCCL's channel
    endpoints are added to it as to a graph-built cluster, with the same times and the data check."""
    spec = "dgx:hosts=3,gpus_per_host=4"
    from_arrays = simulate(Cluster(spec), "allreduce", algo, 3 * 2**20 + 5, check=True)
    from_graph = simulate(Cluster(load_graph(spec)), "allreduce", algo, 3 * 2**20 + 5)
    assert from_arrays.wrong == 0
    assert from_arrays.time_s == pytest.approx(from_graph.time_s, rel=1e-12)
    assert from_arrays.flows == from_graph.flows


def test_log_table_of_no_readable_log_is_one_line_and_exit_2(tmp_path, capsys):
    """A folder whose .txt files are all refused gives a line each, one line saying so, and exit 2 --
    not empty tables and success."""
    import nccl_logs

    (tmp_path / "notes.txt").write_text("#% a note, not a log\nhello\n")
    assert nccl_logs.main([str(tmp_path)]) == 2
    captured = capsys.readouterr()
    # (the importer's line since logs12: a file of no rows, whatever header it has or lacks)
    assert (
        "# notes.txt: skipped: " in captured.out and "notes.txt: not an nccl-tests log (no result rows" in captured.out
    )
    assert captured.err.strip().splitlines() == [
        f"nccl_logs: none of the 1 .txt files in {tmp_path} is a log it can read"
    ]


def test_the_tree_moves_its_bytes_at_nccls_tree_efficiency():
    """NCCL rates its tree at 0.92 of its links (tuning.cc's tree refinement) and the simulated tree
    moves at that rate: on 2 x BM.GPU4.8 (16 x 100 Gb/s a host) an 8 GiB tree is NVLink-bound, every
    GPU sending 7/4 of its share over its 240 GB/s, so algbw = 0.92 x 240 x 4/7 (the fill is ~0.1%)."""
    assert tuner.TREE_EFFICIENCY == 0.92
    r = simulate("hgx:hosts=2,preset=oci-bm-gpu4-8", "allreduce", "nccl-tree", 2**33)
    assert r.algbw_GBps == pytest.approx(0.92 * 240 * 4 / 7, rel=3e-3)


def test_tree_ll128_chunks_follow_nccls_size_rules():
    """enqueue.cc: the tree's LL128 chunk (576,000 B) halves while a channel gets fewer than nstepsLL128 x
    64 / ppn chunks (down to 128 KiB), then fewer than nstepsLL128 x 16 / ppn (down to 32 KiB), with
    nstepsLL128 = 1 + log2i(nodes) + 0.1 ppn: 2.8 on 2 nodes of 8 GPUs, 4.8 on 8."""
    from sim.nccl.protocols import tree_ll128_chunk

    sizes = (2**30, 2**28, 2**26, 2**24, 2**20)
    assert [tree_ll128_chunk(s, 32, 2, 8) for s in sizes] == [576000, 288000, 72000, 72000, 18000]
    assert [tree_ll128_chunk(s, 32, 8, 8) for s in sizes] == [576000, 144000, 72000, 36000, 18000]
    assert [tree_ll128_chunk(2**27, 32, nodes, 8) for nodes in (1, 8)] == [144000, 72000]  # 1.8 and 4.8 steps


def test_the_tree_pipelines_ll128_in_nccls_chunks():
    """At 64 MiB on 2 x BM.GPU4.8 each of the 32 channels holds 2 MiB: NCCL's 72,000 B LL128 chunks make
    4 slices of 8 chunks, so the pipeline fills in a quarter of the channel's bytes and the tree runs
    within 30% of its NVLink bound (1.75 x the buffer at 240 GB/s x 0.92 x 15/16); with LL128's full step
    it would be one slice, stored and forwarded whole, ~48% over the bound."""
    r = simulate("hgx:hosts=2,preset=oci-bm-gpu4-8", "allreduce", "nccl-tree:proto=ll128", 2**26)
    bound = 2**26 * 1.75 / (240e9 * 0.92 * 15 / 16)
    assert bound < r.time_s < 1.3 * bound


#: the OCI OKE Slurm page's post (oracle-quickstart/oci-hpc-oke): four of its 16 rank lines, as posted
OKE_SLURM = """\
#% HARDWARE (as stated): 2 nodes of OCI shape {shape} (8 GPUs per node); NIC speed not stated on the page
# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 4294967296 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1
#  Rank  0 Group  0 Pid    490 on inst-qfvws-oke-rdma device  0 [0000:0f:00] NVIDIA A100-SXM4-40GB
#  Rank  7 Group  0 Pid    505 on inst-qfvws-oke-rdma device  7 [0000:da:00] NVIDIA A100-SXM4-40GB
#  Rank  8 Group  0 Pid    247 on inst-wm4sq-oke-rdma device  0 [0000:0f:00] NVIDIA A100-SXM4-40GB
#  Rank 15 Group  0 Pid    263 on inst-wm4sq-oke-rdma device  7 [0000:da:00] NVIDIA A100-SXM4-40GB
NCCL version 2.29.3+cuda13.1
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
  1073741824     268435456     float     sum      -1  10908.0   98.44  184.57       0  11220.1   95.70  179.43       0
  4294967296    1073741824     float     sum      -1  42721.7  100.53  188.50       0  42920.8  100.07  187.63       0
"""


#: NVIDIA/nccl-tests issue 294's post: its command, its /etc/nccl.conf and a comment's rows
CRUSOE = """\
#% two 8-GPU H100 nodes (h100-80gb-sxm-ib-cloud-hypervisor.xml)
mpirun -np 16 -N 8 -hostfile hostfile --bind-to none -x NCCL_DEBUG=INFO /home/ubuntu/nccl-tests/build/all_reduce_perf -b 128M
NCCL_ALGO=NVLSTree
   134217728      33554432     float     sum      -1    738.7  181.69  340.67      0    739.9  181.40  340.12      0
  2147483648     536870912     float     sum      -1   9063.6  236.93  444.25      0   9089.4  236.26  442.99      0
h100-test-rg-1:31789:31789 [0] NCCL INFO comm 0x556b35426090 rank 0 nranks 16 cudaDev 0 busId 200010 - Destroy COMPLETE
"""


def test_log_reader_reads_the_posts_of_the_third_held_out_set(tmp_path):
    """docs/nccl-heldout.md, "More clusters (2026-11-27, night)": a post that lists only ranks 0, 7, 8 and 15 runs
    on two 8-GPU hosts (device 7 on each), not eight of two GPUs; a header that lists the shapes a page
    covers gets the NICs of the shape with the log's GPU (OCI's A100 shapes, not BM.GPU.H100.8's); a post of
    the command and the rows alone is read."""
    import nccl_logs

    path = tmp_path / "a100-oke-2node.txt"
    path.write_text(OKE_SLURM.format(shape="BM.GPU.A100-v2.8"))
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpu, log.nccl) == (16, 2, "a100", "2.29.3")
    g = nccl_logs.topology(log)
    assert (g.graph["nics_per_host"], g.graph["nic_bw"]) == (16, 100e9 / 8)
    path.write_text(OKE_SLURM.format(shape="one of BM.GPU.H100.8, BM.GPU.A100-v2.8, BM.GPU4.8"))
    g = nccl_logs.topology(nccl_logs.parse_log(path))
    assert (g.graph["nics_per_host"], g.graph["nic_bw"]) == (16, 100e9 / 8)
    # NVIDIA/nccl-tests issue 294: the command, the nccl.conf and the rows, without the log's header lines
    post = tmp_path / "h100-crusoe-2node.txt"
    post.write_text(CRUSOE)
    log = nccl_logs.parse_log(post)
    samples, _ = nccl_logs.read_samples(nccl_logs._source(log))
    assert (log.ranks, log.hosts, log.gpu, samples[0].algorithm) == (16, 2, "h100", "nccl:algo=nvls-tree")
