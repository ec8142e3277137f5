"""NCCL's all-gather and reduce-scatter: ``ring:channels=K`` for both, and ``nccl``'s tuner for them
(docs/nccl.md, "All-gather and reduce-scatter")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.errors import AlgorithmError
from sim.nccl import agrs, tuner
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx
from tests.oracle import check_algorithm

ROOT = Path(__file__).resolve().parents[1]

GATHERING = ("allgather", "reducescatter")


@pytest.mark.parametrize("collective", GATHERING)
@given(p=st.integers(2, 9), k=st.integers(1, 5), gamma=st.sampled_from([0.0, 1e-10]))
@settings(max_examples=12, deadline=None)
def test_k_rings_pass_the_oracle_on_a_star(collective, p, k, gamma):
    """K rings on a star: every rank ends with every block (all-gather) or its block reduced from every
    rank (reduce-scatter), and the time is the closed form: (p-1) steps of one block of n/p over the
    host's link, the K channels' n/(Kp) each sharing it."""
    t = check_algorithm(collective, f"ring:channels={k}", p, 3e6, gamma=gamma)
    if gamma == 0.0:  # the buffer split among channels moves what one ring moves, in as many steps
        assert t == pytest.approx(check_algorithm(collective, "ring", p, 3e6), rel=1e-12)


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize("spec", get_algorithm("allgather", "nccl").examples)
@given(p=st.integers(2, 13), nbytes=st.floats(1, 2**28), gamma=st.sampled_from([0.0, 1e-10]))
@settings(max_examples=8, deadline=None)
def test_nccl_examples_pass_the_oracle_on_a_star(collective, spec, p, nbytes, gamma):
    """``nccl`` for AG/RS is left out of the shared harness (on a star, one GPU a host, NCCL 2.23.4+ picks PAT
    for small sizes, which is refused); its examples -- the ring forced, or a release without PAT -- pass
    the data check here (no closed form: NCCL's latency estimate comes first)."""
    check_algorithm(collective, spec, p, nbytes, gamma=gamma)


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize(
    "hosts, preset, k",
    [
        (2, "dgx-h100", 16),
        (1, "dgx-h100", 8),
        (2, "hgx-a100-200g", 8),
        (2, "oci-bm-gpu-h100-8", 16),
        (3, "dgx-h100", 8),
        (2, "aws-p4d", 8),
        (2, "aws-p5en", 8),
    ],
)
def test_k_rings_on_hgx_hosts_fast_path_equals_the_message_level(collective, hosts, preset, k):
    """The step program (fast path) gives the message level's time to 1e-9 on rail fabrics, and the
    message level's data check passes: NCCL's rings laid out as the all-reduce's."""
    g = hgx(hosts, preset)
    m = simulate(g, collective, f"ring:channels={k}", 3 * 2**24, engine="message", gamma=1e-11, check=True)
    f = simulate(g, collective, f"ring:channels={k}", 3 * 2**24, engine="fast", gamma=1e-11)
    assert m.wrong == 0
    assert f.time_s == pytest.approx(m.time_s, rel=1e-9)


def test_k_rings_split_the_buffer_and_run_p_minus_1_steps():
    """On 2 x DGX H100 (16 ranks), 16 rings: p - 1 = 15 data steps, each of 16 channels x 16 actors'
    messages of n / (16 x 16) bytes -- the buffer split among the channels, each ring's p - 1 steps."""
    from sim.cluster import Cluster

    cluster = Cluster(hgx(2, "dgx-h100"))
    n = 2**26
    for collective in GATHERING:
        program = get_algorithm(collective, "ring:channels=16").program(16, n, cluster)
        steps = [s for s, count in program.phases for _ in range(count)]
        assert len(steps) == 15
        assert all(len(s.src) == 256 and (s.nbytes == n / 256).all() for s in steps)
        assert all((s.combine == (collective == "reducescatter")).all() for s in steps)


def _system(hosts: int, **kw: object) -> tuner.System:
    g = hgx(hosts, "dgx-h100", **kw)
    return tuner.describe(Cluster(g), len(g.graph["ranks"]))


def _table(sys: tuner.System, nbytes: float, version: str = "2.30.7") -> dict[tuple[str, str], tuple[float, float]]:
    v = parse_version(version)
    return {
        (c.algorithm, c.protocol): (c.latency_us, c.bandwidth)
        for c in agrs.candidates(sys, nbytes, tuning=tuning_for(v)[0], release=v)
    }


def test_tuner_one_dgx_h100_by_hand():
    """1 x DGX H100, 8 ranks, NCCL 2.30.7 (tuning.cc ncclTunerConstantsDefaults; nsteps = nRanks - 1 = 7).
    Ring graph: sm90 intra speed 60 (370.8 / 60 -> 6 channels), duplicated to 12 x 30 (search.cc).

    * Ring/LL: busBw = min(llMaxBws Hopper-N1 141, 12 x 30 x .5 = 180) = 141; algBw = 141 x 8/7 = 161.14;
      lat = baseLat 6.6 + 7 x hwLat NVLink Ring LL .6 = 10.8 us
    * Ring/LL128: min(360 x .92 = 331.2, 12 x perChMaxRingLL128 36.7) = 331.2 x 8/7 = 378.51; lat 14 + 7 x 1.9 = 27.3
    * Ring/Simple: 360 x 8/7 = 411.43; lat 8.4 + 7 x 3.4 = 32.2
    * NVLS/Simple: 8 heads at intra speed 40 (370.8 / 8 = 46.35), bwInter 60 on one node: 8 x min(40 x .85
      x 7/8 x (ppn - 1)/ppn 7/8, 60) = 8 x 26.03 = 208.25, no algBw conversion; lat hwLat NVLink NVLS 25
    * no PAT (8 GPUs a node), no CollNetDirect (no SHARP)

    1 MiB: LL 10.8 + 1048576 / (1000 x 161.14) = 17.31 < NVLS 30.04 < LL128 30.07 < Simple 34.75 -> Ring/LL;
    16 MiB: LL128 27.3 + 44.32 = 71.62 < Simple 72.98 -> Ring/LL128; 1 GiB: Simple 2642.0 < LL128 2864.0."""
    sys = _system(1)
    t = _table(sys, 2**20)
    assert set(t) == {("ring", "ll"), ("ring", "ll128"), ("ring", "simple"), ("nvls", "simple")}
    assert t[("ring", "ll")] == pytest.approx((10.8, 141 * 8 / 7))
    assert t[("ring", "ll128")] == pytest.approx((27.3, 331.2 * 8 / 7))
    assert t[("ring", "simple")] == pytest.approx((32.2, 360 * 8 / 7))
    assert t[("nvls", "simple")] == pytest.approx((25.0, 8 * 40 * 0.85 * 7 / 8 * 7 / 8))
    picks = [agrs.pick(sys, n) for n in (2**20, 2**24, 2**30)]
    assert [(c.algorithm, c.protocol) for c in picks] == [("ring", "ll"), ("ring", "ll128"), ("ring", "simple")]
    assert picks[2].time_us == pytest.approx(32.2 + 2**30 / (1000 * 360 * 8 / 7))
    assert picks[0].channels == 24  # runtime channels: 2 x 12 (connect.cc ncclTopoPostset)


def test_tuner_two_dgx_h100_by_hand():
    """2 x DGX H100, 16 ranks, NCCL 2.30.7: ring graph 8 channels x 48 (one per NIC, sm90 inter speed 48),
    runtime 16; nsteps 15, nInterSteps = nNodes - 1 = 1; a step at least the network overhead (1 us Intel,
    x3 Simple); NET Ring hwLat 2.7 / 4.0 / 14.

    * Ring/LL: min(llMaxBws Intel-N2 39.0, 8 x 48 x .5) = 39 x 16/15 = 41.6; lat 6.6 + 14 x max(.6, 1) + 2.7 = 23.3
    * Ring/LL128: min(384 x .92 = 353.28, 8 x 36.7 = 293.6) x 16/15 = 313.17; lat 14 + 14 x 1.9 + 4.0 = 44.6
    * Ring/Simple: 384 x 16/15 = 409.6; lat 8.4 + 14 x max(3.4, 3) + 14 = 70.0
    * NVLS off: across nodes it needs CollNet (no SHARP here)

    1 MiB: LL128 44.6 + 3.35 = 47.95 < LL 48.51 -> Ring/LL128; 16 MiB: LL128 98.17 < Simple 110.96;
    1 GiB: Simple 70 + 2621.4 = 2691.4 -> Ring/Simple."""
    sys = _system(2)
    t = _table(sys, 2**20)
    assert set(t) == {("ring", "ll"), ("ring", "ll128"), ("ring", "simple")}
    assert t[("ring", "ll")] == pytest.approx((23.3, 39 * 16 / 15))
    assert t[("ring", "ll128")] == pytest.approx((44.6, 293.6 * 16 / 15))
    assert t[("ring", "simple")] == pytest.approx((70.0, 384 * 16 / 15))
    picks = [agrs.pick(sys, n) for n in (2**20, 2**24, 2**30)]
    assert [(c.algorithm, c.protocol) for c in picks] == [("ring", "ll128"), ("ring", "ll128"), ("ring", "simple")]
    assert picks[2].time_us == pytest.approx(70.0 + 2**30 / (1000 * 409.6))


def test_tuner_release_rules():
    """Per release (tuning.cc at each tag): 2.18.x prices the ring alone for AG/RS; until 2.20.5 the ring's
    LL on one node is busBw / 3 (H100: 12 x 30 / 3 = 120 > llMaxBws Hopper-N1, 87.7 in 2.19.3 -> 87.7 x 8/7); NVLS
    on one node 2.19.1-2.22.3 is 8 x min(40, 60) x 5/6 = 266.7 (the ratio applied), 2.23.4-2.27.7 8 x 40 = 320
    (no conversion); PAT from 2.23.4 with one GPU a node."""
    one = _system(1)
    assert {a for a, _ in _table(one, 2**20, "2.18.6")} == {"ring"}
    assert _table(one, 2**20, "2.19.3")[("nvls", "simple")][1] == pytest.approx(8 * 40 * 5 / 6)
    assert _table(one, 2**20, "2.26.2")[("nvls", "simple")][1] == pytest.approx(8 * 40)
    ll = _table(one, 2**20, "2.19.3")[("ring", "ll")][1]
    assert ll == pytest.approx(min(tuning_for((2, 19, 3))[0].ll_max_bw[2][0], 360 / 3) * 8 / 7)
    # 1 x HGX A100: ring 12 x 20 = 240 (sm80 intra speeds); LL busBw 240 / 3 = 80 under llMaxBws Ampere-N1
    # 87.7 in 2.19.3 (x 1/4 would give 60), min(87.7, 240 x .5) from 2.21.5
    a100 = tuner.describe(Cluster(hgx(1, "hgx-a100-200g")), 8)
    assert _table(a100, 2**20, "2.19.3")[("ring", "ll")][1] == pytest.approx(240 / 3 * 8 / 7)
    assert _table(a100, 2**20, "2.21.5")[("ring", "ll")][1] == pytest.approx(87.7 * 8 / 7)
    single = _system(4, gpus_per_host=1)
    assert "pat" not in {a for a, _ in _table(single, 2**20, "2.22.3")}
    # PAT, 4 nodes of one GPU, 2.30.7: lat 8 + log2(4) x NET Tree Simple 14 / 3.5 + 4 x 2.8 = 27.2 us
    lat, bw = _table(single, 2**20)[("pat", "simple")]
    assert lat == pytest.approx(8 + 2 * 14 / 3.5 + 4 * 2.8)
    tree = tuner.search(single)["tree"]
    assert bw == pytest.approx(tree.channels * tree.bw_inter * 0.75)
    assert agrs.pick(single, 2**20).algorithm == "pat"


def test_tuner_collnet_direct_with_sharp():
    """With SHARP (hgx:...,sharp=true) CollNetDirect prices AG/RS from 2.20.3: 2 x HGX A100, 8 heads, ppn 8;
    2.27.3 on: busBw = ppn x min(bwIntra, bwInter x .9), no conversion (tuning.cc)."""
    g = hgx(2, "hgx-a100-200g", sharp=True)
    sys = tuner.describe(Cluster(g), 16)
    direct = tuner.search(sys)["collnet-direct"]
    lat, bw = _table(sys, 2**20)[("collnet-direct", "simple")]
    assert bw == pytest.approx(8 * min(direct.bw_intra, direct.bw_inter * 0.9))
    assert "collnet-direct" not in {a for a, _ in _table(sys, 2**20, "2.19.3")}


def test_nccl_simulates_the_ring_it_prints():
    """The pick is the ring with NCCL's protocol: one ring per NIC (8 on 2 x DGX H100, as the all-reduce
    ring of ``nccl``), blocks of n / (8 x 16) times the protocol's
    wire bytes, and forcing algo=ring,proto=... is the pick; a pick that collsim does not build is one line
    naming it."""
    for collective in GATHERING:
        for proto, wire in (("ll", 2.0), ("ll128", 16 / 15), ("simple", 1.0)):
            algo = get_algorithm(collective, f"nccl:algo=ring,proto={proto}")
            cluster = Cluster(hgx(2, "dgx-h100"))
            c = algo.choice(16, 2**24, cluster)
            assert (c.algorithm, c.protocol) == ("ring", proto)
            program = algo.program(16, 2**24, cluster)
            data = [s for s, times in program.phases if (s.nbytes > 0).any() for _ in range(times)]  # steps, repeated
            assert len(data) == 15 and all(s.nbytes == pytest.approx(2**24 / 128 * wire) for s in data)
    r = simulate(hgx(2, "dgx-h100"), "allgather", "nccl", 2**24, check=True)
    assert r.wrong == 0
    with pytest.raises(AlgorithmError, match="picks PAT/Simple .* nccl:algo=ring") as info:
        simulate(hgx(4, "dgx-h100", gpus_per_host=1), "allgather", "nccl", 2**20)
    assert "\n" not in str(info.value)
    assert simulate(hgx(4, "dgx-h100", gpus_per_host=1), "allgather", "nccl:algo=ring", 2**20).time_s > 0
    single = Cluster(hgx(4, "dgx-h100", gpus_per_host=1))
    nccl = get_algorithm("allgather", "nccl")
    assert not nccl.builds(4, 2**20, single) and nccl.builds(4, 2**24, single)  # PAT at 1 MiB, the ring at 16


@pytest.mark.parametrize("collective", GATHERING)
def test_nccl_fast_path_equals_the_message_level(collective):
    g = hgx(2, "dgx-h100")
    for size in (2**20, 3 * 2**24):
        m = simulate(g, collective, "nccl", size, engine="message", check=True, gamma=1e-11)
        f = simulate(g, collective, "nccl", size, engine="fast", gamma=1e-11)
        assert m.wrong == 0 and f.time_s == pytest.approx(m.time_s, rel=1e-9)


@pytest.mark.parametrize(
    "collective, topology, spec, message",
    [
        ("allgather", "hgx-a100-200g-2", "nccl:algo=nvls", "NVLS needs an NVSwitch that reduces"),
        ("reducescatter", "dgx-h100-2", "nccl:algo=nvls", "NVLS runs inside one host unless the switches reduce"),
        ("allgather", "dgx-h100-2", "nccl:algo=tree", "Tree is not one NCCL runs all-gather"),
        ("allgather", "dgx-h100-2", "nccl:algo=pat", "PAT runs with one GPU per node only"),
        ("reducescatter", "dgx-h100-2", "nccl:algo=collnet-direct", "needs switches that reduce"),
        ("allgather", "hgx:hosts=1,preset=dgx-h100", "nccl:algo=nvls,version=2.18.1", "not in NCCL 2.18.1's tuner"),
        ("allgather", "hgx:hosts=4,preset=dgx-h100,gpus_per_host=1", "nccl:algo=pat,version=2.22.3", "2.22.3"),
    ],
)
def test_an_algorithm_nccl_does_not_run_for_ag_rs_is_one_line(collective, topology, spec, message):
    with pytest.raises(AlgorithmError, match=message) as info:
        simulate(topology, collective, spec, 2**20)
    assert "\n" not in str(info.value)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collsim", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_cli_shows_the_ag_rs_pick_per_size_and_refuses_bad_input_in_one_line():
    out = _cli("simulate", "-t", "dgx-h100-2", "--collective", "allgather", "-a", "nccl", "--sizes", "1MiB:1GiB:1024")
    assert out.returncode == 0, out.stderr
    picks = [line for line in out.stdout.splitlines() if line.startswith("#   NCCL: ")]
    assert picks[0].startswith("#   NCCL: Ring/LL128, 16 channels") and picks[1].startswith("#   NCCL: Ring/Simple")
    js = _cli("simulate", "-t", "dgx-h100-2", "--collective", "reducescatter", "-a", "nccl", "--size", "1GiB", "--json")
    assert json.loads(js.stdout)["nccl"]["algorithm"] == "Ring"
    for args in (
        ("--collective", "allgather", "-a", "nccl:algo=nvls", "-t", "hgx-a100-200g-2"),
        ("--collective", "reducescatter", "-a", "ring:channels=0", "-t", "dgx-h100-2"),
        ("--collective", "allgather", "-a", "nccl:algo=pat", "-t", "hgx:hosts=4,preset=dgx-h100,gpus_per_host=1"),
    ):
        bad = _cli("simulate", *args, "--size", "1MiB")
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def _gathering_log(binary: str, p: int = 16, per: int = 8, library: int = 22602, sizes: tuple[int, ...] = ()) -> str:
    """An nccl-tests log of ``binary`` (all_gather_perf / reduce_scatter_perf) on ``p`` H100s, ``per`` a
    node: busbw = algbw x (p-1)/p, as nccl-tests prints it for both (validate/calibration/inputs.py)."""
    redop = "none" if binary.startswith("all_gather") else "sum"
    rows = "".join(
        f"  {size:>10d}  {size // 4 // p:>12d}     float    {redop}      -1  {t:8.1f}  {size / t / 1e3:6.2f}  "
        f"{size / t / 1e3 * (p - 1) / p:6.2f}      0  {t:8.1f}  {size / t / 1e3:6.2f}  {size / t / 1e3 * (p - 1) / p:6.2f}      0\n"
        for size, t in ((2**20, 60.0), (2**24, 110.0), (2**28, 760.0), (2**30, 2750.0), *((n, 70.0) for n in sizes))
    )
    return (
        f"#% HARDWARE (as stated): {p // per} nodes of {per}x H100, 8x 400 Gb/s NDR per node\n"
        f"# nccl-tests version 2.17.1 nccl-headers={library} nccl-library={library}\n"
        f"# Collective test starting: {binary}\n"
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 16(factor) warmup iters: 5 iters: 20\n"
        + "".join(
            f"#  Rank {r:2d} Group  0 Pid 1 on node{r // per} device  {r % per} [0x1b] NVIDIA H100 80GB HBM3\n"
            for r in range(p)
        )
        + "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        + rows
    )


@pytest.mark.parametrize(
    "binary, collective", [("all_gather_perf", "allgather"), ("reduce_scatter_perf", "reducescatter")]
)
def test_ag_rs_logs_are_read_and_predicted_with_nccl(tmp_path, binary, collective):
    """An all_gather_perf / reduce_scatter_perf log is read as its collective with ``nccl`` (the release the
    log states: nccl-library=22602 is 2.26.2) and predicted by benchmarks/nccl_logs.py with that
    collective's tuner; the calibration import reads it the same way."""
    import nccl_logs

    path = tmp_path / f"h100-{binary}-2node.txt"
    path.write_text(_gathering_log(binary))
    samples, source = nccl_logs.read_samples(str(path))
    assert {(s.collective, s.algorithm, s.ranks) for s in samples} == {(collective, "nccl:version=2.26.2", 16)}
    log = nccl_logs.parse_log(path)
    rows = nccl_logs.predict(log, 2**20)
    assert [r[0] for r in rows] == [2**20, 2**24, 2**28, 2**30]
    assert all(r[4].startswith("ring/") for r in rows)  # 2 x DGX H100: the ring (LL128 up to 16 MiB)
    assert nccl_logs.main([str(tmp_path), "--tables", "nominal"]) == 0


def test_an_all_gather_table_under_an_all_reduce_command_is_still_refused(tmp_path):
    """The reader's documented refusal (tests/test_nccl.py::test_log_reader_reads_the_quirks_of_other_posts)
    stands: a table whose busbw / algbw is (p-1)/p under an all_reduce_perf command is not read as
    all-reduce, and no longer as anything else either."""
    from sim.errors import CalibrationError
    from validate.calibration.inputs import read_samples

    text = _gathering_log("all_gather_perf").replace("# Collective test starting: all_gather_perf\n", "")
    path = tmp_path / "mislabelled.txt"
    path.write_text("mpirun -np 16 ./build/all_reduce_perf -b 1M -e 1G -f 16 -g 1\n" + text)
    with pytest.raises(CalibrationError, match="not all-reduce's"):
        read_samples(str(path))
    samples, _ = read_samples(f"{path}:collective=allgather")  # the user's word settles it
    assert samples[0].collective == "allgather" and samples[0].algorithm.startswith("nccl")


def test_a_log_size_whose_pick_is_not_built_is_left_out_with_a_note(tmp_path):
    """4 nodes of one H100, NCCL 2.26.2: NCCL's all-gather pick at 1 MiB is PAT (from 2.23.4, one GPU a
    node), which collsim does not build: benchmarks/nccl_logs.py leaves that size out and says so on the
    log's line, and predicts the others."""
    import nccl_logs

    path = tmp_path / "h100-ag-4node.txt"
    path.write_text(_gathering_log("all_gather_perf", p=4, per=1))
    log = nccl_logs.parse_log(path)
    rows = nccl_logs.predict(log, 2**20)
    assert [r[0] for r in rows] == [2**24, 2**28, 2**30]
    assert "1048576 B left out: NCCL picks pat/simple, not built" in log.note


@pytest.mark.parametrize("collective", GATHERING)
def test_nvls_on_one_host_is_simulated(collective):
    """NVLS all-gather / reduce-scatter on one DGX H100 (every GPU heads its block; the NVSwitch multicasts
    it, or reduces it from every GPU): forced, and NCCL 2.19.3's own pick at 2 MiB (NVLS 8 x min(40, 60) x
    5/6 = 266.7 GB/s and 23 us: 30.86 us, against Ring/LL's 10.8 + 2 MiB / (87.7 x 8/7 GB/s) = 31.72 us).
    The data check passes, the fast path equals the message level, and every GPU's NVLink carries the
    whole buffer one way (1 GiB: slower than the ring's (p-1)/p, at most 0.85 x 370.8 GB/s)."""
    g = hgx(1, "dgx-h100")
    pick = get_algorithm(collective, "nccl:version=2.19.3").choice(8, 2**21, Cluster(g))
    assert (pick.algorithm, pick.protocol) == ("nvls", "simple")
    for spec, size in (("nccl:version=2.19.3", 2**21), ("nccl:algo=nvls", 3 * 2**24), ("nccl:algo=nvls", 2**30)):
        m = simulate(g, collective, spec, size, engine="message", check=True, gamma=1e-11)
        f = simulate(g, collective, spec, size, engine="fast", gamma=1e-11)
        assert m.wrong == 0 and f.time_s == pytest.approx(m.time_s, rel=1e-9)
    assert 2**30 / m.time_s <= 0.85 * 370.8e9
    with pytest.raises(AlgorithmError, match="NVLS runs inside one host unless"):
        simulate(hgx(2, "dgx-h100"), collective, "nccl:algo=nvls", 2**20)


@pytest.mark.parametrize("collective", GATHERING)
def test_nvls_gathering_moves_its_bytes_at_the_gpus_nvls_efficiency(collective):
    """The one-host NVLS schedule divides its NVLink bytes by NCCL's NVLS efficiency of the host's GPUs, as
    the all-reduce's does (tuning.cc nvlsEfficiency: 0.85 Hopper, 0.74 Blackwell): the same host shape
    with B200s carries 0.85 / 0.74 times the H100's bytes."""
    h100 = simulate(hgx(1, "dgx-h100"), collective, "nccl:algo=nvls", 2**30, engine="fast")
    b200 = simulate(hgx(1, "dgx-b200"), collective, "nccl:algo=nvls", 2**30, engine="fast")
    assert b200.link_bytes / h100.link_bytes == pytest.approx(0.85 / 0.74, rel=1e-12)
