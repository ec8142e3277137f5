"""HGX 4-GPU boards, GPUs linked directly without an NVSwitch (``hgx:nvswitch=false``, presets
``hgx-a100-4gpu`` and ``hgx-h100-4gpu``; docs/nccl.md, "Boards without an NVSwitch"): the graph, NCCL's tuner
on it written out by hand from NCCL's source, the rings over the direct links, NVLS refused, and the log
reader's inference of such a board."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CollsimError
from sim.nccl import tuner
from sim.nccl.rings import channel_orders
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx


def _gpu_links(g: object) -> dict[tuple[str, str], float]:
    return {(u, v): d["bandwidth"] for u, v, d in g.edges(data=True) if "gpu" in u and "gpu" in v}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("preset", "per_pair"), [("hgx-a100-4gpu", 4 * 20.0e9), ("hgx-h100-4gpu", 6 * 20.6e9)])
def test_board_graph(preset, per_pair):
    """Every ordered pair of the 4 GPUs has its own link of links / 3 x NCCL's per-link figure (A100: 12 links,
    SM80_NVLINK_BW 20.0; H100: 18, SM90_NVLINK_BW 20.6); no NVSwitch node, no NVLS; NCCL's view of a GPU's
    NVLink is the three links' sum."""
    g = hgx(2, preset)
    links = _gpu_links(g)
    for h in ("h0", "h1"):
        pairs = {(f"{h}:gpu{i}", f"{h}:gpu{j}") for i, j in itertools.permutations(range(4), 2)}
        assert {k: links[k] for k in pairs} == dict.fromkeys(pairs, per_pair)
    assert len(links) == 24
    assert not [v for v, d in g.nodes(data=True) if d["kind"] == "nvswitch"]
    assert "h0" not in g and g.graph["nvls"] is False and g.graph["nvswitch"] is False
    assert g.graph["nvlink_bw"] == pytest.approx(3 * per_pair)
    # a run on two of the board's GPUs: NCCL sees only the link to the peer in the communicator
    two = hgx(1, preset, gpus_per_host=2)
    assert two.graph["nvlink_bw"] == pytest.approx(per_pair) and len(_gpu_links(two)) == 2
    # the NVSwitch presets are as they were
    assert "nvswitch" not in hgx(1, "dgx-h100").graph and hgx(1, "dgx-h100").nodes["h0"]["kind"] == "nvswitch"


def test_nvls_and_oversized_boards_refused_in_one_line():
    for kw in (dict(nvls=True), dict(gpus_per_host=8), dict(gpu="h800")):
        with pytest.raises(CollsimError) as err:
            hgx(1, "hgx-h100-4gpu", **kw)
        assert "\n" not in str(err.value)
    with pytest.raises(CollsimError, match="nvls needs an NVSwitch that reduces") as err:
        simulate(hgx(1, "hgx-h100-4gpu"), "allreduce", "nccl:algo=nvls", 2**26)
    assert "\n" not in str(err.value)


def test_cli_refuses_nvls_on_the_board(capsys):
    from collsim.cli import main

    assert main(["simulate", "-t", "hgx:preset=hgx-h100-4gpu,hosts=1,nvls=true", "--size", "64MiB"]) == 2
    err = capsys.readouterr().err.strip()
    assert "NVLink SHARP" in err and "\n" not in err


def _speed(speeds: list[float], max_bw: float, total_bw: float) -> float:
    """search.cc ncclTopoCompute: ``while (speedArray[i] > maxBw || speedArray[i]*minChannels > totalBw) i++``."""
    return next(s for s in speeds if s <= max_bw and s <= total_bw)


@pytest.mark.parametrize(
    ("preset", "per_pair", "speeds"),
    [
        # search.cc speedArrayIntra / sm90SpeedArrayIntra
        ("hgx-a100-4gpu", 80.0, [40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0]),
        ("hgx-h100-4gpu", 123.6, [60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0]),
    ],
)
def test_tuner_on_one_board_by_hand(preset, per_pair, speeds):
    """NCCL's ring graph on one board, from the source (v2.21.5-1): ncclTopoSearchInit's maxBw is the best
    GPU-to-GPU path (one pair's link), totalBw a GPU's NVLink sum (getTotalBw: 3 links); the first speed
    <= both; as many rings as the pairs' links carry -- every directed ring of the 4 GPUs once (6, each pair's
    link carries 2 of them: 2 x speed <= per_pair) -- so nChannels = 6; ncclTopoDupChannels (bwIntra >= 25)
    doubles them at half the speed; ncclTopoPostset doubles again at run time (the Snellius log's "24 coll
    channels"). tuning.cc: bwIntra of a channel = graph->bwIntra; busBw = nChannels x bwIntra."""
    total = 3 * per_pair
    speed = _speed(speeds, per_pair, total)
    rings = math.factorial(3)  # directed rings of 4 GPUs: 6 x 4 links = each of the 12 directed links twice
    assert 2 * speed <= per_pair
    channels = min(rings, int(total / speed + 1e-9))  # the search stops at nChannels x bw >= totalBw (A100)
    assert channels == 6
    sys_ = tuner.describe(Cluster(hgx(1, preset)), 4)
    assert sys_.nvls is False and sys_.nvlink_bw == pytest.approx(total)
    graphs = tuner.search(sys_)
    assert "nvls" not in graphs and "nvls-tree" not in graphs
    ring = graphs["ring"]
    assert (ring.channels, ring.bw_intra, ring.runtime_channels) == (2 * channels, speed / 2, 4 * channels)
    assert 2 * channels * speed / 2 == 6 * speed  # busBw the tuner prices: 240 (A100), 360 (H100)


def test_tuner_across_boards_matches_snellius_log():
    """2 x HGX H100 4-GPU at 4 x 200 Gb/s, NCCL 2.22.3: sm90SpeedArrayInter's first speed <= 25 GB/s a NIC
    is 24, one channel per NIC (4), not duplicated (ncclTopoDupChannels: ``if (graph->bwIntra < 25.0) return``),
    run time 2 x 4 = 8: the Snellius log's "8 coll channels, 8 collnet channels, 0 nvls channels"."""
    v = parse_version("2.22.3")
    sys_ = tuner.describe(Cluster(hgx(2, "hgx-h100-4gpu")), 8)
    graphs = tuner.search(sys_, tuning_for(v)[0])
    assert (graphs["ring"].channels, graphs["ring"].bw_intra, graphs["ring"].runtime_channels) == (4, 24.0, 8)
    assert "nvls" not in graphs


def test_rings_cross_every_direct_link_equally():
    """One board: the simulation's rings are the 6 directed Hamiltonian cycles (c mod 6), so every directed
    GPU pair carries the same number of rings; across hosts the NVSwitch layout's chains."""
    cluster = Cluster(hgx(1, "hgx-a100-4gpu"))
    orders = channel_orders(cluster, 4, 6)
    rank = cluster.endpoint_rank
    rings = [[rank[e - cluster.size] for e in ring] for ring in orders]
    assert sorted(tuple(r) for r in rings) == [(0, *q) for q in itertools.permutations(range(1, 4))]
    load: dict[tuple[int, int], int] = {}
    for r in rings:
        for i in range(4):
            load[r[i], r[(i + 1) % 4]] = load.get((r[i], r[(i + 1) % 4]), 0) + 1
    assert len(load) == 12 and set(load.values()) == {2}


def test_allreduce_equals_closed_form_and_fast_path_equals_message_level():
    """6 rings on one A100 board, 3 x 2^24 bytes: 2(p-1) = 6 steps, each n/(6 x 4) bytes a message at 80/2
    GB/s (each direct link carries 2 rings) after 0.3 us of NVLink latency -- to 1e-6; the step program (fast
    path) equals the message level to 1e-9 and the data check passes; ``nccl`` (24 channels) lays out the
    same 6 rings: its Simple ring at busbw 240 GB/s, the NVSwitch board's."""
    g = hgx(1, "hgx-a100-4gpu")
    n = 3 * 2**24
    closed = 6 * (0.3e-6 + n / 24 / 40e9)
    m = simulate(g, "allreduce", "ring:channels=6", n, engine="message", check=True)
    f = simulate(g, "allreduce", "ring:channels=6", n, engine="fast")
    assert m.wrong == 0
    assert f.time_s == pytest.approx(closed, rel=1e-6)
    assert f.time_s == pytest.approx(m.time_s, rel=1e-9)
    big = 2**30
    r = simulate(g, "allreduce", "nccl:algo=ring,proto=simple", big)
    assert 1.5 * big / r.time_s / 1e9 == pytest.approx(240, rel=0.01)


def _log(tmp_path: Path, name: str, header: str, ranks: int, per_host: int, gpu: str, nvls_line: bool = False) -> Path:
    bus = 15.30 * 2 * (ranks - 1) / ranks
    lines = [f"#% {header}"] if header else []
    lines += ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20", "#"]
    lines.append("# Using devices")
    for r in range(ranks):
        lines.append(
            f"#  Rank {r:2d} Group  0 Pid {100 + r} on node{r // per_host} device  {r % per_host} [0x07] {gpu}"
        )
    if nvls_line:
        lines.append("node0:100:200 [0] NCCL INFO NVLS multicast support is not available on dev 0")
    lines += [
        "#",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        f"     1048576        262144     float     sum      -1    68.54   15.30 {bus:7.2f}      0    68.54   15.30 {bus:7.2f}      0",
        f"# Avg bus bandwidth    : {bus:.2f}",
    ]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("name", "header", "ranks", "per_host", "gpu", "nvls_line", "preset"),
    [
        (
            "polaris-1node.txt",
            "hardware as stated: ALCF Polaris, 4x A100-SXM4-40GB/node",
            4,
            4,
            "NVIDIA A100-SXM4-40GB",
            False,
            "hgx-a100-4gpu",
        ),
        ("snellius-2node.txt", "SURF Snellius gpu_h100", 8, 4, "NVIDIA H100", False, "hgx-h100-4gpu"),
        ("h100-4gpu-nonvls.txt", "", 4, 4, "NVIDIA H100 80GB HBM3", True, "hgx-h100-4gpu"),
        (
            "dgx-a100-g4-of8.txt",
            "a DGX A100, 8x A100 (NVSwitch), the run on 4 GPUs",
            4,
            4,
            "NVIDIA A100-SXM4-80GB",
            False,
            None,
        ),
        ("dgx-h100-g4.txt", "DGX H100, -g 4", 4, 4, "NVIDIA H100 80GB HBM3", True, None),
        ("a100-4gpu-nvlsline.txt", "", 4, 4, "NVIDIA A100-SXM4-80GB", True, None),
        ("h100-8gpu.txt", "", 8, 8, "NVIDIA H100 80GB HBM3", True, None),
    ],
)
def test_inference_builds_the_board_only_where_the_log_says_so(
    tmp_path, name, header, ranks, per_host, gpu, nvls_line, preset
):
    """A Polaris / Snellius header, or NCCL's NVLS line on 4 Hopper GPUs a node, builds the board; a DGX's
    ``-g 4``, an A100 log (whose NVLS line every A100 prints) and an 8-GPU host do not."""
    log = nccl_logs.parse_log(_log(tmp_path, name, header, ranks, per_host, gpu, nvls_line))
    assert nccl_logs.board_preset(log) == preset
    g = nccl_logs.topology(log)
    assert g.graph.get("nvswitch", True) is (preset is None)


@pytest.mark.parametrize(
    ("header", "nics"),
    [
        ("256 ALCF Polaris nodes, 4 NVIDIA A100-SXM4-40GB each, HPE Slingshot 11", 2),  # the system's pair
        ("NERSC Perlmutter GPU nodes (4 NVIDIA A100-SXM4-40GB each, Slingshot 11 / CXI)", 4),
        ("4 Polaris nodes x 4 A100-SXM4-40GB, HPE Slingshot 11, 4 NICs/node", 4),  # a count stated wins
    ],
)
def test_a_named_system_gives_its_nic_count(tmp_path, header, nics):
    """A Polaris or Perlmutter log that names Slingshot but no NIC count gets its system's (ALCF: a pair of
    Slingshot 11 adapters a node; NERSC: four), 200 Gb/s each; a count the header states wins."""
    log = nccl_logs.parse_log(_log(tmp_path, "sys-2node.txt", header, 8, 4, "NVIDIA A100-SXM4-40GB"))
    g = nccl_logs.topology(log)
    assert g.graph["nics_per_host"] == nics
    assert {d["bandwidth"] for u, v, d in g.edges(data=True) if ":nic" in u and "leaf" in v} == {25e9}


@pytest.mark.parametrize("preset", ["hgx-a100-4gpu", "hgx-h100-4gpu"])
def test_board_preset_by_inline_spec(preset):
    """A 4-GPU board's preset builds 4 GPUs a host from an inline spec too (the loader hands the builder every
    option, unset ones as None: the preset's GPU count must not be taken for one the user gave), and an
    explicit gpus_per_host above the board's is refused in one line."""
    from sim.topology.load import _parse_inline_text

    g = _parse_inline_text(f"hgx:preset={preset},hosts=2")
    assert len(g.graph["ranks"]) == 8 and g.graph.get("nvswitch") is False
    assert len(_parse_inline_text("hgx:preset=dgx-h100,hosts=1,gpus_per_host=4").graph["ranks"]) == 4
    with pytest.raises(CollsimError, match="8 GPUs a host need an NVSwitch"):
        _parse_inline_text(f"hgx:preset={preset},hosts=1,gpus_per_host=8")
