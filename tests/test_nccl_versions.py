"""NCCL's tuner release by release (sim/nccl/versions.py): numbers derived by hand from each release's
tuning.cc / search.cc / connect.cc, the ``version`` option of ``nccl``, and the release a log states."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.errors import AlgorithmError
from sim.nccl import tuner
from sim.nccl.versions import NEWEST, RELEASES, TUNINGS, parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx
from validate.calibration.inputs import parse_nccl_text, stated_nccl_version

ROOT = Path(__file__).resolve().parents[1]


def _dgx2():
    return tuner.describe(Cluster(hgx(2)), 16)


def _table(sys, version, nbytes=2**30):
    t, _ = tuning_for(parse_version(version))
    return {(c.algorithm, c.protocol): c for c in tuner.candidates(sys, nbytes, tuning=t)}


def test_the_default_is_the_newest_release():
    """No version: the tuner of 2.30.7, as before versions existed (docs/nccl.md's worked example)."""
    sys_ = _dgx2()
    for nbytes in (2**20, 2**26, 2**32):
        assert tuner.candidates(sys_, nbytes) == tuner.candidates(sys_, nbytes, tuning=NEWEST)
    assert NEWEST.last == "2.30.7" and get_algorithm("allreduce", "nccl").options.version == "2.30.7"
    assert _table(sys_, "2.30.7")[("nvls-tree", "simple")].latency_us == pytest.approx(66.8)


def test_nvls_tree_in_226_is_its_own():
    """2.26 (tuning.cc of v2.26.2): NVLSTree NET hwLat 14 (20.9 from 2.28.9), bandwidth channels x
    min(bwIntra 40, bwInter 48) x 5/6 with no nvlsEfficiency nor per-channel cap (from 2.28.3):
    latency 25 + 2 x 14 = 53 us, algBw 8 x 40 x 5/6."""
    t = _table(_dgx2(), "2.26.2")[("nvls-tree", "simple")]
    assert t.latency_us == pytest.approx(53.0) and t.net_latency_us == pytest.approx(28.0)
    assert t.bandwidth == pytest.approx(8 * 40 * 5 / 6)
    assert _table(_dgx2(), "2.28.7")[("nvls-tree", "simple")].latency_us == pytest.approx(25 + 2 * 14)
    assert _table(_dgx2(), "2.28.9")[("nvls-tree", "simple")].latency_us == pytest.approx(25 + 2 * 20.9)


def test_ring_and_tree_latencies_before_223():
    """v2.22.3: ring network steps 2 nNodes (2 (nNodes - 1) from 2.23.4), Tree/Simple base 0 and hwLat 28
    everywhere (8.4 and 4/4/14 from 2.23.4). Ring/LL on 2 x 8: 6.6 + 26 x 1 (Intel net overhead) + 4 x 2.7."""
    old, new = _table(_dgx2(), "2.22.3"), _table(_dgx2(), "2.23.4")
    assert old[("ring", "ll")].latency_us == pytest.approx(6.6 + 26 * 1.0 + 4 * 2.7)
    assert new[("ring", "ll")].latency_us == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)
    assert old[("tree", "simple")].latency_us == pytest.approx(2 * (7 * 28 + 28))
    assert new[("tree", "simple")].latency_us == pytest.approx(8.4 + 2 * (7 * 4.0 + 14))


def test_older_channel_rules_and_ll_caps():
    """2.18-2.20 double Hopper's runtime channels across nodes while they fit MAXCHANNELS (32: 16 -> 32;
    from 2.21.5 only below 16); llMaxBws' Hopper-N1 was 87.7 until 2.20 (141 from 2.21.5); Ring/LL x 1/4."""
    sys_ = _dgx2()
    assert tuner.search(sys_, tuning_for((2, 18, 6))[0])["ring"].runtime_channels == 32
    assert tuner.search(sys_, tuning_for((2, 21, 5))[0])["ring"].runtime_channels == 16
    one = tuner.describe(Cluster(hgx(1)), 8)
    ring_ll = {v: _table(one, v, 2**20)[("ring", "ll")].bandwidth for v in ("2.20.5", "2.21.5")}
    ch = tuner.search(one)["ring"].channels
    assert ring_ll["2.21.5"] == pytest.approx(min(141.0, ch * 30 * 0.5) * 8 / 14)
    assert ring_ll["2.20.5"] == pytest.approx(min(87.7, ch * 30 * 0.25) * 8 / 14)


def test_218_nvls_formulas():
    """v2.18.1: NVLS busBw channels x bwIntra x .75, latency base 23 (+ NET 18 across nodes); NVLSTree
    x .70 nNodes / (2 (nNodes - 1)), latency 23 + 2 (nNodes - 1) x 19; 5/6 for NVLS from 2.18.3."""
    one = tuner.describe(Cluster(hgx(1)), 8)
    nvls = _table(one, "2.18.1")[("nvls", "simple")]
    assert (nvls.latency_us, nvls.bandwidth) == (pytest.approx(23.0), pytest.approx(8 * 40 * 0.75))
    assert _table(one, "2.18.3")[("nvls", "simple")].bandwidth == pytest.approx(8 * 40 * 5 / 6)
    tree = _table(tuner.describe(Cluster(hgx(4)), 32), "2.18.6")[("nvls-tree", "simple")]
    assert tree.latency_us == pytest.approx(23 + 2 * 3 * 19)
    assert tree.bandwidth == pytest.approx(8 * 48 * 0.70 * 4 / 6)  # bwInter from 3 nodes


def test_releases_and_ranges():
    assert parse_version("2.26") == (2, 26, 6) and parse_version("v2.26.2-1") == (2, 26, 2)
    for bad in ("2.26.9", "2.31", "3.0.0", "abc", "2"):
        with pytest.raises(ValueError):
            parse_version(bad)
    t, text = tuning_for((2, 9, 9))
    assert t is TUNINGS[0] and t.release == "2.10.3"
    assert text == "2.9.9, older than the modelled releases (2.10.3-2.30.7): modelled as 2.10.3"
    assert tuning_for((2, 3, 7))[0] is TUNINGS[0] and tuning_for((2, 10, 3))[1] == "2.10.3 (as 2.10.3-2.11.4)"
    assert tuning_for((2, 26, 2))[1] == "2.26.2 (as 2.25.1-2.27.7)"
    firsts = [t.first for t in TUNINGS]
    assert firsts == sorted(firsts) and all(f in RELEASES for f in firsts) and TUNINGS[-1] is NEWEST
    covered = [v for v in RELEASES if v >= TUNINGS[0].first]
    assert all(tuning_for(v)[0].first <= v for v in covered)


def test_the_version_option_and_the_pick():
    cluster = Cluster(hgx(2))
    algo = get_algorithm("allreduce", "nccl:version=2.26.2")
    c = algo.choice(16, 2**26, cluster)
    assert (c.algorithm, c.tuner) == ("nvls-tree", "2.26.2 (as 2.25.1-2.27.7)")
    assert c.latency_us == pytest.approx(53.0)
    assert get_algorithm("allreduce", "nccl").choice(16, 2**26, cluster).tuner == "2.30.7 (as 2.30.3-2.30.7)"
    assert "modelled as 2.10.3" in get_algorithm("allreduce", "nccl:version=2.9.9").choice(16, 2**26, cluster).tuner
    with pytest.raises((AlgorithmError, ValueError), match="not a release"):
        get_algorithm("allreduce", "nccl:version=2.26.9")


def test_the_release_picks_and_the_newest_estimate_is_charged():
    """The stated release decides what runs; the fixed cost charged before the data moves is the newest
    release's estimate for that pick (Nccl.charged): 2.26.2's NVLSTree on 2 x DGX H100 is charged
    25 + 2 x 20.9 = 66.8 us, not its own 53; a calibration's fixed cost keeps the newest's network hops.
    The simulated time follows: the same pick by 2.26.2 and 2.30.7 takes the same time."""
    cluster = Cluster(hgx(2))
    old, new = get_algorithm("allreduce", "nccl:version=2.26.2"), get_algorithm("allreduce", "nccl")
    size = 2**26
    c_old, c_new = old.choice(16, size, cluster), new.choice(16, size, cluster)
    assert (c_old.algorithm, c_old.protocol) == (c_new.algorithm, c_new.protocol) == ("nvls-tree", "simple")
    assert c_old.latency_us == pytest.approx(53.0)
    assert old.fixed_cost(16, size, cluster, c_old) == pytest.approx(66.8e-6)
    assert old.charged(16, size, cluster, c_old).net_latency_us == pytest.approx(2 * 20.9)
    assert new.charged(16, size, cluster, c_new) is c_new
    t_old = simulate(cluster, "allreduce", "nccl:version=2.26.2", size).time_s
    t_new = simulate(cluster, "allreduce", "nccl", size).time_s
    assert t_old == pytest.approx(t_new, rel=1e-12)
    # where the picks differ (1 MiB: 2.26 NVLSTree, 2.30 Tree/LL128) each is charged 2.30.7's estimate of its own
    small = 2**20
    c = old.choice(16, small, cluster)
    assert (c.algorithm, new.choice(16, small, cluster).algorithm) == ("nvls-tree", "tree")
    assert old.fixed_cost(16, small, cluster, c) == pytest.approx(66.8e-6)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "collsim", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_cli_names_the_release():
    js = _cli("simulate", "-t", "dgx-h100-2", "-a", "nccl:version=2.26", "--size", "64MiB", "--json")
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout)["nccl"]["tuner"] == "2.26.6 (as 2.25.1-2.27.7)"
    text = _cli("simulate", "-t", "dgx-h100-2", "-a", "nccl", "--size", "64MiB")
    assert "; tuner of NCCL 2.30.7 (as 2.30.3-2.30.7)" in text.stdout
    bad = _cli("simulate", "-t", "dgx-h100-2", "-a", "nccl:version=2.99", "--size", "1MiB")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "2.99" in bad.stderr


_TABLE = (
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "  1073741824     268435456     float     sum      -1   4484.9  239.41  448.90      0   4470.2  240.20  450.37      0\n"
)


@pytest.mark.parametrize(
    "lines, spec",
    [
        (["NCCL version 2.26.2+cuda12.8"], "nccl:version=2.26.2"),
        # srun --label, Open MPI --tag-output, NCCL_DEBUG=INFO's prefix
        ([" 0: node1:123:123 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"], "nccl:version=2.21.5"),
        (["[1,0]<stdout>:NCCL version 2.9.9+cuda11.2"], "nccl:version=2.9.9"),
        (["# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501"], "nccl:version=2.25.1"),
        (["# nccl-tests version 2.10.1 nccl-headers=2804 nccl-library=2804"], "nccl:version=2.8.4"),
        (["#% 2x BM.GPU4.8, Ubuntu 24.04, NCCL 2.26.5, OpenMPI 5.0.8"], "nccl:version=2.26.5"),
        # what ran wins over what the header states; NCCL_ALGO kept beside it
        (["#% NCCL 2.26.5", "NCCL version 2.27.5+cuda12.8", "export NCCL_ALGO=Ring"], "nccl:algo=ring,version=2.27.5"),
        # not a release of NCCL (or not NCCL's line): the newest tuner, as before
        (["NCCL version 2.26.9+cuda12.8"], "nccl"),
        (["# nccl-tests 2.18.3", "#% rccl-tests with NCCL-compatible API"], "nccl"),
    ],
)
def test_the_importer_reads_the_release_a_log_states(lines, spec):
    samples, _ = parse_nccl_text("\n".join(lines) + "\n" + _TABLE, "log.txt", ranks=16)
    assert samples[0].algorithm == spec


def test_stated_version_forms():
    assert stated_nccl_version("NCCL version 2.30.3+cuda13.0") == (0, "2.30.3")
    assert stated_nccl_version("# nccl-tests version 2.18.3 nccl-headers=23003 nccl-library=23003") == (1, "2.30.3")
    assert stated_nccl_version("built against NCCL 2.26.2") is None  # only '#%' header lines state it in prose


def test_nccl_logs_predicts_with_the_stated_release(tmp_path):
    import nccl_logs

    devices = "".join(
        f"#  Rank {r:2d} Group  0 Pid 1 on node{r // 8} device  {r % 8} [0x1b] NVIDIA H100 80GB HBM3\n"
        for r in range(16)
    )
    log = tmp_path / "h100-2node.txt"
    log.write_text("# 8x 400 Gb/s\n" + devices + "NCCL version 2.26.2+cuda12.8\n" + _TABLE)
    parsed = nccl_logs.parse_log(log)
    assert parsed.nccl == "2.26.2" and parsed.tuner == "NCCL 2.26.2 (as 2.25.1-2.27.7)"
    (row,) = nccl_logs.predict(parsed, 2**20)
    assert row[4] == "nvls-tree/simple"
    plain = tmp_path / "plain-2node.txt"
    plain.write_text("# 8x 400 Gb/s\n" + devices + _TABLE)
    assert nccl_logs.parse_log(plain).tuner == ""


def test_nvls_tree_chunks_before_221():
    """enqueue.cc calcCollChunking: until 2.20 NVLS-tree started from Simple's 512 KiB step (128 KiB
    NCCL_NVLS_CHUNKSIZE from 2.21.5) and 2.18 had no 64 KiB ceiling from 4 nodes; 128 chunks in flight."""
    from sim.algorithms.nvls import nvls_slices
    from sim.nccl.protocols import nvls_chunk

    old, v218 = tuning_for((2, 20, 5))[0], tuning_for((2, 18, 6))[0]
    assert (old.nvls_tree_chunk, old.nvls_tree_cap4, v218.nvls_tree_cap4) == (512 * 1024, True, False)
    sizes = (2**34, 2**30, 2**26, 2**23, 2**22)
    assert [nvls_chunk(s, 2, 128, True, 512 * 1024) for s in sizes] == [524288, 262144, 131072, 65536, 32768]
    assert [nvls_chunk(s, 4, 128, True, 512 * 1024, False) for s in (2**34, 2**23)] == [524288, 65536]
    assert nvls_slices(2**34, 2, 8, True, old) * 4 == nvls_slices(2**34, 2, 8)  # 512 KiB chunks, not 128


def test_channel_duplication_of_2181():
    """search.cc ncclTopoDupChannels: 2.18.1 duplicated Hopper's channels only from bwIntra 50; from 2.18.3
    also below 50 where there are at most 4 (here 2 NICs of 400 Gb/s: 2 channels of 48 GB/s)."""
    sys_ = tuner.System(2, 8, "sm90", "intel", 370.8, 48.0, 50.0, 2, True, False)
    assert tuner.search(sys_, tuning_for((2, 18, 1))[0])["ring"].channels == 2
    assert tuner.search(sys_, tuning_for((2, 18, 3))[0])["ring"].channels == 4


def test_the_docs_list_every_modelled_range():
    """docs/nccl.md's table of releases names the ranges sim/nccl/versions.py models, in order."""
    import re

    text = (ROOT / "docs" / "nccl.md").read_text()
    rows = re.findall(r"^\| (2\.\d+\.\d+) \| (2\.\d+\.\d+) \|", text, re.M)
    assert [a if a == b else f"{a}-{b}" for a, b in rows] == [t.span for t in TUNINGS]


# -- the releases before 2.18.1 (v2.10.3-1 ... v2.17.1-1), by hand from each tag's source --

_A100_SHARP = tuner.System(2, 8, "sm80", "amd", 240.0, 24.0, 25.0, 8, False, True)


def _a100x2():
    return tuner.describe(Cluster(hgx(2, preset="hgx-a100-200g")), 16)


def test_210_ring_and_tree_latencies():
    """v2.10.3 tuning.cc on 2 x HGX A100 (8 ring channels, 16 ranks): nInterSteps 2 (nNodes - 1) = 2, so
    Ring/LL128 = 10 + 28 x 1.9 + 2 x 4.0 (2.12.7: 2 nNodes = 4 network steps, 10 + 26 x 1.9 + 4 x 4.0); LL's
    intra latency x1.8 across nodes: Tree/LL = 4.4 + 2 (7 x .52 x 1.8 + 5.0); no network overhead."""
    sys_ = _a100x2()
    v210, v212 = _table(sys_, "2.10.3", 1024), _table(sys_, "2.12.7", 1024)
    assert v210[("ring", "ll128")].latency_us == pytest.approx(10 + 28 * 1.9 + 2 * 4.0)
    assert v212[("ring", "ll128")].latency_us == pytest.approx(10 + 26 * 1.9 + 4 * 4.0)
    assert v210[("tree", "ll")].latency_us == pytest.approx(4.4 + 2 * (7 * 0.52 * 1.8 + 5.0))
    assert v210[("ring", "ll")].latency_us == pytest.approx(3.6 + 28 * 0.47 * 1.8 + 2 * 2.7)
    # 2.18.1: baseLat 6.6, NVLink LL .6 without x1.8 but at least the AMD network overhead of 2 us
    assert _table(sys_, "2.18.1", 1024)[("ring", "ll")].latency_us == pytest.approx(6.6 + 26 * 2.0 + 4 * 2.7)


def test_ring_simple_net_latency_and_plateau_before_218():
    """Ring/Simple's NET hwLat: 9.6 (2.10.3), 28 (2.12.7-2.13.4), 9.6 again (2.14.3-2.17.1); the plateau x1.9
    from nRanks / 16 x 64 KiB (64 KiB for 16 ranks; 2.18.1: 64 B per channel and rank, x1.4 on sm80)."""
    sys_ = _a100x2()
    small, big = 2**15, 2**17
    assert _table(sys_, "2.12.12", small)[("ring", "simple")].latency_us == pytest.approx(8.4 + 26 * 3.4 + 4 * 28)
    assert _table(sys_, "2.14.3", small)[("ring", "simple")].latency_us == pytest.approx(8.4 + 26 * 3.4 + 4 * 9.6)
    assert _table(sys_, "2.10.3", small)[("ring", "simple")].latency_us == pytest.approx(8.4 + 28 * 3.4 + 2 * 9.6)
    assert _table(sys_, "2.14.3", big)[("ring", "simple")].latency_us == pytest.approx((8.4 + 26 * 3.4 + 4 * 9.6) * 1.9)
    lat_218 = 8.4 + 26 * 6.0 + 4 * 14.0  # AMD network overhead 2 x 3 for Simple
    assert _table(sys_, "2.18.1", small)[("ring", "simple")].latency_us == pytest.approx(lat_218 * 1.4)
    # the pick moves with it: 128 MiB on 2.12's 28 us is Ring/LL128, Ring/Simple on 2.10's and 2.14's 9.6
    picks = {
        v: tuner.pick(sys_, 2**27, tuning=tuning_for(parse_version(v))[0]) for v in ("2.10.3", "2.12.12", "2.14.3")
    }
    assert [(c.algorithm, c.protocol) for c in picks.values()] == [
        ("ring", "simple"),
        ("ring", "ll128"),
        ("ring", "simple"),
    ]


def test_bus_caps_before_218():
    """busBw capped at 235 on sm80 until 2.17.1 and at 370 on Hopper in 2.17.1 (no cap from 2.18.1). One node
    of 8 A100 with 600 GB/s NVLink: 2.17.1 speed 44 x 13 channels, duplicated to 16 x 22 = 352 -> 235;
    2.18.1 40 x 15 -> 16 x 20 = 320."""
    sys_ = tuner.System(1, 8, "sm80", "intel", 600.0, 24.0, 25.0, 8)
    assert _table(sys_, "2.17.1")[("ring", "simple")].bandwidth == pytest.approx(235 * 8 / 14)
    assert _table(sys_, "2.18.1")[("ring", "simple")].bandwidth == pytest.approx(16 * 20 * 8 / 14)
    h100 = _dgx2()  # 2.17.1: 8 channels x 48 = 384 -> 370; LL128 min(370 x .92, 8 x 36.7); 2.16.5 8 x 20
    assert _table(h100, "2.17.1")[("ring", "ll128")].bandwidth == pytest.approx(8 * 36.7 * 16 / 30)
    assert _table(h100, "2.16.5")[("ring", "ll128")].bandwidth == pytest.approx(8 * 20.0 * 16 / 30)
    assert _table(h100, "2.17.1")[("tree", "simple")].bandwidth == pytest.approx(min(370 * 0.92, 8 * 41.4) * 0.5)


def test_hopper_before_218_speeds_duplication_ll128():
    """Hopper until 2.16.2 takes sm80's speed arrays and duplicates from bwIntra 25 (one DGX H100: 44 x 8
    -> 16 x 22); 2.16.5's sm90 arrays (66 x 5 -> 10 x 33) and duplication from 50 only (2 nodes: 8 x 48
    stays); no x2 runtime channels before 2.18.1; LL128 off on sm90 until 2.14.3 (tuning.cc protoEnable),
    llMaxBws/perChMaxTreeBws Hopper rows Volta's until 2.14.3, Ampere's from 2.15.1."""
    one = tuner.describe(Cluster(hgx(1)), 8)
    ring = {v: tuner.search(one, tuning_for(parse_version(v))[0])["ring"] for v in ("2.15.1", "2.16.5")}
    assert (ring["2.15.1"].channels, ring["2.15.1"].bw_intra) == (16, 22.0)
    assert (ring["2.16.5"].channels, ring["2.16.5"].bw_intra) == (10, 33.0)
    two = {v: tuner.search(_dgx2(), tuning_for(parse_version(v))[0])["ring"] for v in ("2.15.1", "2.16.5", "2.17.1")}
    assert [(g.channels, g.runtime_channels) for g in two.values()] == [(16, 32), (8, 16), (8, 16)]
    assert tuner.search(_dgx2(), tuning_for((2, 18, 1))[0])["ring"].runtime_channels == 32
    assert ("ring", "ll128") not in _table(one, "2.14.3") and ("ring", "ll128") in _table(one, "2.15.1")
    assert _table(one, "2.14.3")[("ring", "ll")].bandwidth == pytest.approx(min(39.0, 16 * 22 / 4) * 8 / 14)
    assert _table(one, "2.15.1")[("ring", "ll")].bandwidth == pytest.approx(min(87.7, 16 * 22 / 4) * 8 / 14)
    # NCCL_PROTO=LL128 still runs it (protoEnable 1, not the default 2)
    assert tuner.pick(one, 2**24, protos={"ll128"}, tuning=tuning_for((2, 14, 3))[0]).protocol == "ll128"


def test_no_nvls_tree_before_218_and_nvls_on_one_node_in_217():
    """No NVLSTree before 2.18.1, no NVLS before 2.17.1; 2.17.1's NVLS is one node's (nvls.cc returns across
    nodes), priced on the ring graph: 10 channels x 33 x .75, latency baseLat 40."""
    sharp = tuner.System(2, 8, "sm90", "intel", 370.8, 48.0, 50.0, 8, True, True)
    for t in TUNINGS:
        if t.first >= (2, 18, 1):
            continue
        for sys_ in (_dgx2(), tuner.describe(Cluster(hgx(1)), 8), sharp):
            algos = {tuner.pick(sys_, 2**e, tuning=t).algorithm for e in range(10, 35)}
            assert "nvls-tree" not in algos
            assert "nvls" not in algos or (t.first == (2, 17, 1) and sys_.nodes == 1)
    one = tuner.describe(Cluster(hgx(1)), 8)
    nvls = _table(one, "2.17.1")[("nvls", "simple")]
    assert (nvls.latency_us, nvls.bandwidth, nvls.channels) == (pytest.approx(40.0), pytest.approx(10 * 33 * 0.75), 16)
    assert tuner.pick(one, 2**28, tuning=tuning_for((2, 17, 1))[0]).algorithm == "nvls"
    t171 = tuning_for((2, 17, 1))[0]
    assert "one host" in tuner.disabled(sharp, tuner.search(sharp, t171), "nvls", t171)
    with pytest.raises(AlgorithmError, match="is not in the tuner of NCCL 2.17.1"):
        get_algorithm("allreduce", "nccl:algo=nvls-tree,version=2.17.1").choice(16, 2**26, Cluster(hgx(2)))


def test_collnet_before_218():
    """Until 2.13 one CollNet (NCCL_ALGO_COLLNET, priced as Direct): collNetGraph = the ring's 8 channels
    (pass 2 climbs 24 -> 30), busBw 8 x 30 = 240 -> 235 (sm80 cap) x .5, latency 2 (8 + 7 x .5) + 10.7 and no
    Chain; 2.14.3: Direct / GPU/NIC factor (8 / 8 channels: 1) and Chain x .75, Chain latency 2 x 7 x 8
    without NET; 2.18.1: Direct on its own graph and Chain + NET 14."""
    t210, t214 = tuning_for((2, 10, 3))[0], tuning_for((2, 14, 3))[0]
    assert tuner.enabled(_A100_SHARP, tuner.search(_A100_SHARP, t210), t210) == {"tree", "ring", "collnet-direct"}
    old = {(c.algorithm, c.protocol): c for c in tuner.candidates(_A100_SHARP, 2**30, tuning=t210)}
    graph = tuner.search(_A100_SHARP, t210)["collnet-direct"]
    assert (graph.channels, graph.bw_intra) == (8, 30.0)
    assert old[("collnet-direct", "simple")].bandwidth == pytest.approx(235 * 0.5)
    assert old[("collnet-direct", "simple")].latency_us == pytest.approx(2 * (8.0 + 7 * 0.5) + 10.7)
    graphs = tuner.search(_A100_SHARP, t214)  # one collNetGraph for both (2.18.1: Direct's own, 8 heads at 48)
    assert graphs["collnet-direct"] == graphs["collnet-chain"] == graph
    assert tuner.search(_A100_SHARP, tuning_for((2, 18, 1))[0])["collnet-direct"].bw_intra == 48.0
    new = {(c.algorithm, c.protocol): c for c in tuner.candidates(_A100_SHARP, 2**30, tuning=t214)}
    assert new[("collnet-direct", "simple")].bandwidth == pytest.approx(235 * 0.5)
    assert new[("collnet-chain", "simple")].bandwidth == pytest.approx(235 * 0.75 * 0.5)
    assert new[("collnet-chain", "simple")].latency_us == pytest.approx(2 * 7 * 8.0)
    assert _table(_A100_SHARP, "2.18.1")[("collnet-chain", "simple")].latency_us == pytest.approx(2 * 7 * 4.75 + 14)


def test_nvls_chunk_of_2171():
    """enqueue.cc computeColl of 2.17.1: NVLS's chunk (128 KiB) halves to 64 KiB below 32 chunks a channel
    and head (2.18.1: 64): one node, 16 channels x 8 heads, 512 MiB keeps 128 KiB in 2.17.1, not in 2.18.1."""
    from sim.algorithms.nvls import nvls_slices
    from sim.nccl.protocols import nvls_chunk

    t171, t181 = tuning_for((2, 17, 1))[0], tuning_for((2, 18, 1))[0]
    assert (t171.nvls_chunk_first, t181.nvls_chunk_first) == (32, 64)
    assert nvls_chunk(2**29, 1, 128, False, first=32) == 131072 and nvls_chunk(2**29, 1, 128, False) == 65536
    assert nvls_slices(2**29, 1, 8, False, t171) * 2 == nvls_slices(2**29, 1, 8, False, t181)
