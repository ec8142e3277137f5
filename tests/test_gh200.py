"""GH200 (Grace Hopper) quad nodes as ``hgx`` builds them (``gpu=gh200``, preset ``gh200-quad``; docs/nccl.md,
"GH200 nodes"): the graph (NVLink pairs, NVLink-C2C to the CPU, the NICs, an Arm CPU), NCCL's tuner on it
written out by hand from NCCL's source (the NIC reached through the CPU: LL128 off across nodes before 2.27.3),
NVLS refused in one line, and a GH200 log read and predicted where it was refused."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CollsimError
from sim.nccl import tuner
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx


def _links(g: object, a: str, b: str) -> dict[tuple[str, str], float]:
    return {(u, v): d["bandwidth"] for u, v, d in g.edges(data=True) if a in u and b in v}  # type: ignore[attr-defined]


def test_quad_node_graph():
    """Four GH200 a node: every ordered GPU pair its own NVLink of 6 x SM90_NVLINK_BW (123.6 GB/s; NV6), each
    GPU's link to its Grace CPU NVLink-C2C's 450 GB/s a direction, the CPU's PCIe Gen5 x16 (48 GB/s as NCCL
    rates it) to one Slingshot 11 NIC of 200 Gb/s; no NVSwitch, no NVLS, an Arm CPU, Hopper (sm90)."""
    g = hgx(2, "gh200-quad")
    nv = _links(g, ":gpu", ":gpu")
    pairs = {(f"h{h}:gpu{i}", f"h{h}:gpu{j}") for h in (0, 1) for i, j in itertools.permutations(range(4), 2)}
    assert nv == dict.fromkeys(pairs, 6 * 20.6e9)
    c2c = _links(g, ":gpu", ":pcie")
    assert len(c2c) == 8 and set(c2c.values()) == {450e9}
    assert set(_links(g, ":pcie", ":gpu").values()) == {450e9}
    assert set(_links(g, ":pcie", ":nic").values()) == {48e9}
    assert set(_links(g, ":nic", "leaf").values()) == {25e9} and len(_links(g, ":nic", "leaf")) == 8
    a = g.graph
    assert (a["gpu_model"], a["gpu_arch"], a["cpu_vendor"], a["nvls"], a["nvswitch"], a["c2c_nic"]) == (
        "gh200",
        "sm90",
        "arm",
        False,
        False,
        True,
    )
    assert a["nvlink_bw"] == pytest.approx(370.8e9) and a["nics_per_host"] == 4 and a["nic_bw"] == 25e9
    assert not [v for v, d in g.nodes(data=True) if d["kind"] == "nvswitch"]
    # gpu=gh200 on any preset builds the quad node's shape (4 GPUs, no NVSwitch, Grace), the preset's NICs
    other = hgx(1, gpu="gh200")
    assert len(other.graph["ranks"]) == 4 and other.graph["nvswitch"] is False and other.graph["cpu_vendor"] == "arm"
    assert other.graph["nic_bw"] == 50e9  # dgx-h100's 400 Gb/s
    # one GPU a node (a `--gpus-per-node=4` job with one rank a node): one GPU and its NIC
    one = hgx(2, "gh200-quad", gpus_per_host=1)
    assert len(one.graph["ranks"]) == 2 and one.graph["nics_per_host"] == 1 and not _links(one, ":gpu", ":gpu")
    # the presets that were there are as they were: no C2C, no Arm
    for preset in ("hgx-h100-4gpu", "dgx-h100"):
        old = hgx(1, preset)
        assert "c2c_nic" not in old.graph and old.graph["cpu_vendor"] == "intel"
        assert set(_links(old, ":gpu", ":pcie").values()) == {48e9}


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        (dict(nvls=True), "NVLink SHARP"),
        (dict(nvswitch=True), "no NVSwitch"),
        (dict(cpu_vendor="intel"), "Grace"),
        (dict(gpus_per_host=8), "need an NVSwitch"),
    ],
)
def test_what_a_gh200_node_is_not_is_refused_in_one_line(kw, words):
    with pytest.raises(CollsimError, match=words) as err:
        hgx(1, "gh200-quad", **kw)
    assert "\n" not in str(err.value)


def test_nvls_on_gh200_refused_in_one_line(capsys):
    """``nccl:algo=nvls`` on a GH200 node, and ``nvls=true`` from the command line: one line each."""
    from collsim.cli import main

    with pytest.raises(CollsimError, match="nvls needs an NVSwitch that reduces") as err:
        simulate(hgx(1, "gh200-quad"), "allreduce", "nccl:algo=nvls", 2**26)
    assert "\n" not in str(err.value)
    assert main(["simulate", "-t", "hgx:preset=gh200-quad,hosts=1,nvls=true", "--size", "64MiB"]) == 2
    out = capsys.readouterr().err.strip()
    assert "NVLink SHARP" in out and "GH200" in out and "\n" not in out


def _system(hosts: int, preset: str = "gh200-quad", **kw: object) -> tuner.System:
    return tuner.describe(Cluster(hgx(hosts, preset, **kw)), 4 * hosts)


def test_tuner_tree_simple_by_hand_nccl_2_23_4():
    """2 x GH200 quad nodes, 256 MiB, NCCL 2.23.4 (the CSCS Alps logs' release), from its source:

    * search.cc: a NIC's 25 GB/s -> sm90SpeedArrayInter's first speed <= 25 is 24; one channel a NIC (4); not
      duplicated (ncclTopoDupChannels: bwIntra < 25); pass 2 for trees raises bwIntra up
      sm90SpeedArrayIntra to the first speed in [24, 48] whose 4 channels fit the GPU's 370.8 GB/s: 40;
    * tuning.cc: tree busBw = min(4 x 40 x .92, 4 x perChMaxTreeBws[Hopper][N2] 41.4) x .85 (pattern TREE),
      algBw = busBw / 2 x treeCorrectionFactor[Simple][log2(256 MiB / 64) = 22] (.9); latency baseLat 8.4 +
      2 x ((ppn - 1) x hwLat[NVLink][Tree][Simple] 4 + log2(2) x hwLat[NET][Tree][Simple] 14);
    * protoEnable: the GPU reaches its NIC through its Grace CPU (PATH_PHB), past ``typeInter <= PATH_PXB ||
      (sm90 && typeInter <= PATH_PXN)``: no LL128 across nodes.
    """
    v = tuning_for(parse_version("2.23.4"))[0]
    sys_ = _system(2)
    assert (sys_.cpu_vendor, sys_.c2c_nic, sys_.nic_bw, sys_.nics_per_node) == ("arm", True, 25.0, 4)
    graphs = tuner.search(sys_, v)
    assert (graphs["ring"].channels, graphs["ring"].bw_intra, graphs["ring"].runtime_channels) == (4, 24.0, 8)
    assert graphs["tree"].bw_intra == 40.0 and graphs["tree"].tree_pattern
    assert "nvls" not in graphs
    bus = min(4 * 40 * 0.92, 4 * 41.4) * 0.85
    algbw = bus / 2 * 0.9
    lat = 8.4 + 2 * (3 * 4.0 + 1 * 14.0)
    found = {(c.algorithm, c.protocol): c for c in tuner.candidates(sys_, 2**28, tuning=v)}
    tree = found["tree", "simple"]
    assert tree.bandwidth == pytest.approx(algbw) and tree.latency_us == pytest.approx(lat)
    assert tree.time_us == pytest.approx(lat + 2**28 / (1000 * algbw))
    assert ("ring", "ll128") not in found and ("tree", "ll128") not in found
    assert tuner.pick(sys_, 2**28, tuning=v) == tree


@pytest.mark.parametrize(
    ("release", "ll128"), [("2.23.4", False), ("2.26.6", False), ("2.27.3", True), ("2.29.2", True), ("2.30.7", True)]
)
def test_ll128_across_gh200_nodes_from_2_27_3(release, ll128):
    """From 2.27.3 NCCL types a GPU-NIC path through the CPU over C2C PATH_P2C and lets LL128 run up to it
    (NCCL_LL128_C2C, default 1); before, PATH_PHB turns it off across nodes. On one node (NCCL drops the NICs)
    and on a board whose NIC sits behind the GPU's PCIe switch (HGX H100 4-GPU) LL128 stays on."""
    v = tuning_for(parse_version(release))[0]
    protos = {c.protocol for c in tuner.candidates(_system(2), 2**24, tuning=v)}
    assert ("ll128" in protos) is ll128
    assert "ll128" in {c.protocol for c in tuner.candidates(_system(1), 2**24, tuning=v)}
    board = tuner.describe(Cluster(hgx(2, "hgx-h100-4gpu")), 8)
    assert "ll128" in {c.protocol for c in tuner.candidates(board, 2**24, tuning=v)}
    # an LL128 the user asks for (NCCL_PROTO=LL128) is priced whatever the default
    assert {c.protocol for c in tuner.candidates(_system(2), 2**24, protos={"ll128"}, tuning=v)} == {"ll128"}


def test_arm_is_priced_as_intel():
    """tuning.cc: getNetOverhead returns 1 us unless the CPU is x86 AMD (2 us); llMaxBws' row across nodes is 1
    for AMD, else 0. Grace (NCCL_TOPO_CPU_ARCH_ARM, no vendor) is priced as Intel: on the newest tuner (LL128
    on) a GH200 pair of nodes gets the same table as the HGX H100 4-GPU board with the same NICs and Intel."""
    arm, intel = _system(2), _system(2, "hgx-h100-4gpu")
    assert (arm.cpu_vendor, intel.cpu_vendor) == ("arm", "intel")
    for proto in ("ll", "simple"):
        assert tuner.net_overhead(arm, proto, tuning_for(parse_version("2.30.7"))[0]) == (
            3.0 if proto == "simple" else 1.0
        )
    amd = _system(2, "hgx-h100-4gpu", cpu_vendor="amd")
    for size in (2**20, 2**24, 2**30):
        assert tuner.candidates(arm, size) == tuner.candidates(intel, size)
        assert tuner.candidates(amd, size) != tuner.candidates(intel, size)


def test_one_node_simulates_as_the_h100_board():
    """Inside a node the traffic is NVLink's alone: a GH200 node's all-reduce takes the HGX H100 4-GPU
    board's time to the bit (ring/Simple 1 GiB: busbw ~368 GB/s of NCCL's 360 estimate)."""
    gh, h = hgx(1, "gh200-quad"), hgx(1, "hgx-h100-4gpu")
    for algo in ("nccl", "nccl:algo=ring,proto=simple"):
        a = simulate(gh, "allreduce", algo, 2**30)
        b = simulate(h, "allreduce", algo, 2**30)
        assert a.time_s == b.time_s
    assert 1.5 * 2**30 / a.time_s / 1e9 == pytest.approx(368.2, rel=0.01)


#: a GH200 post's rows: CSCS's NCCL page (eth-cscs/cscs-docs, docs/software/communication/nccl.md at 1690357c,
#: the "All-reduce latency" tab: `srun -N2 --ntasks-per-node=4 ... all_reduce_perf -b 8 -e 128M -f 2`, nccl-tests
#: 2.17.1 in a container, Alps nodes nid005471 / nid005487), the rank lines and the rows from 1 MiB to 128 MiB
CSCS = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 204199 on  nid005471 device  0 [0009:01:00] NVIDIA GH200 120GB
#  Rank  1 Group  0 Pid 204200 on  nid005471 device  1 [0019:01:00] NVIDIA GH200 120GB
#  Rank  2 Group  0 Pid 204201 on  nid005471 device  2 [0029:01:00] NVIDIA GH200 120GB
#  Rank  3 Group  0 Pid 204202 on  nid005471 device  3 [0039:01:00] NVIDIA GH200 120GB
#  Rank  4 Group  0 Pid 155254 on  nid005487 device  0 [0009:01:00] NVIDIA GH200 120GB
#  Rank  5 Group  0 Pid 155255 on  nid005487 device  1 [0019:01:00] NVIDIA GH200 120GB
#  Rank  6 Group  0 Pid 155256 on  nid005487 device  2 [0029:01:00] NVIDIA GH200 120GB
#  Rank  7 Group  0 Pid 155257 on  nid005487 device  3 [0039:01:00] NVIDIA GH200 120GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    164.3    6.38   11.17      0    187.7    5.59    9.77      0
     4194304       1048576     float     sum      -1    292.7   14.33   25.08      0    295.4   14.20   24.85      0
    16777216       4194304     float     sum      -1    461.7   36.34   63.59      0    454.0   36.95   64.67      0
    67108864      16777216     float     sum      -1   1090.5   61.54  107.69      0   1083.5   61.94  108.39      0
   134217728      33554432     float     sum      -1   1916.4   70.04  122.57      0   1907.8   70.35  123.11      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 19.7866
"""


def test_a_gh200_log_is_read_and_predicted(tmp_path):
    """The log was refused ("GH200 GPUs are not modelled"); now it is 2 GH200 quad nodes at the preset's
    Slingshot 11 NICs, predicted by the newest tuner (the log states no release): every row, nothing fitted.
    128 MiB runs at busbw 122.6 GB/s, above the NICs' 100 GB/s a node: the tree (NCCL's pick from 4 MiB)."""
    path = tmp_path / "gh200-cscs-2node.txt"
    path.write_text(CSCS)
    log = nccl_logs.parse_log(path)
    assert (log.gpu, log.hosts, log.gpus_per_host, log.nccl) == ("gh200", 2, 4, "")
    g = nccl_logs.topology(log)
    assert (g.graph["gpu_model"], g.graph["nics_per_host"], g.graph["nic_bw"], g.graph["c2c_nic"]) == (
        "gh200",
        4,
        25e9,
        True,
    )
    rows = nccl_logs.predict(log, 2**20)
    assert [size for size, *_ in rows] == [2**20, 2**22, 2**24, 2**26, 2**27]
    picks = {size: pick for size, _, _, _, pick in rows}
    assert picks[2**27].startswith("tree/")
    errors = {size: err for size, _, _, err, _ in rows}
    assert errors[2**26] < 0.1 and errors[2**27] < 0.1  # the NIC-bound sizes within 10%


#: one GH200 on each of two nodes (CSCS's "Sarus Suite & Podman on Alps" page, as tests/test_logs12.py has it)
ONE_A_NODE = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1
#
# Using devices
#  Rank  0 Group  0 Pid  15784 on  nid007106 device  0 [0009:01:00] NVIDIA GH200 120GB
#  Rank  1 Group  0 Pid  24926 on  nid007109 device  0 [0009:01:00] NVIDIA GH200 120GB
#
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0
     4194304       1048576     float     sum      -1   476.28    8.81    8.81       0   471.14    8.90    8.90       0
    16777216       4194304     float     sum      -1   840.36   19.96   19.96       0   841.25   19.94   19.94       0
   134217728      33554432     float     sum      -1  5871.07   22.86   22.86       0  5867.43   22.88   22.88       0
"""


def test_a_header_names_the_nics_and_one_gpu_a_node(tmp_path):
    """A header's Slingshot figure sets the NICs (Slingshot 10: 100 Gb/s); a job of one rank a node on GH200
    nodes (``--gpus-per-node=4``, one GPU used) builds one GPU and its NIC a node; another CPU named in the
    log does not change a GH200's (its Grace)."""
    path = tmp_path / "gh200-2node-1ppn.txt"
    path.write_text("#% 2 Cray EX nodes, HPE Slingshot-10, AMD EPYC login node\n" + ONE_A_NODE)
    log = nccl_logs.parse_log(path)
    assert (log.gpu, log.hosts, log.gpus_per_host) == ("gh200", 2, 1)
    g = nccl_logs.topology(log)
    assert len(g.graph["ranks"]) == 2 and g.graph["nics_per_host"] == 1 and g.graph["nic_bw"] == 12.5e9
    assert g.graph["cpu_vendor"] == "arm"


def test_other_superchips_stay_refused(tmp_path):
    """GB200 / GB300 (multi-node NVLink racks) and V100 are still refused in one line."""
    for model, why in (("GB200", "multi-node NVLink"), ("GB300", "multi-node NVLink"), ("V100", "not modelled")):
        path = tmp_path / f"{model}-2node.txt"
        path.write_text(CSCS.replace("GH200 120GB", f"{model}"))
        with pytest.raises(nccl_logs.LogError, match=why) as err:
            nccl_logs.parse_log(path)
        assert "\n" not in str(err.value)


def test_the_sources_are_named():
    """The preset's figures name their sources in hgx.py (the datasheet, HPE's blade, CSCS's page, NCCL)."""
    text = Path(sys.modules[hgx.__module__].__file__).read_text()
    for source in ("GH200 Grace Hopper Superchip datasheet", "EX254n", "CSCS", "PATH_P2C", "NV6"):
        assert source in text
