"""NCCL's broadcast and reduce: ``nccl`` for both -- its tuner (sim/nccl/bcred.py) and the ring chain it runs
(sim/nccl/rings.py: rings_chain_program); docs/nccl.md, "Broadcast and reduce"."""

from __future__ import annotations

import json

import pytest

from sim.algorithms import get_algorithm
from sim.algorithms.nccl import chain_s
from sim.cluster import Cluster
from sim.errors import AlgorithmError, CollsimError
from sim.nccl import bcred, tuner
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx, star
from tests.oracle import check_algorithm
from tests.test_nccl_agrs import _cli

CHAINS = ("broadcast", "reduce")


def _system(hosts: int, preset: str = "dgx-h100", **kw: object) -> tuner.System:
    g = hgx(hosts, preset, **kw)
    return tuner.describe(Cluster(g), len(g.graph["ranks"]))


def _table(sys: tuner.System, coll: str, version: str = "2.30.7") -> dict[str, tuple[float, float]]:
    t = tuning_for(parse_version(version))[0]
    return {c.protocol: (c.latency_us, c.bandwidth) for c in bcred.candidates(coll, sys, 2**20, tuning=t)}


@pytest.mark.parametrize("coll", CHAINS)
def test_tuner_one_dgx_h100_by_hand(coll):
    """1 x DGX H100, 2.30.7 (ring 12 x 30 GB/s, one node: sameChannels, NVLink hwLat): tuning.cc
    latencies = baseLat[Ring] + hwLat[NVLink][Ring] -- LL 6.6 + 0.6, LL128 14 + 1.9, Simple 8.4 + 3.4 --
    and busBw x nRanks / nsteps (= 1): LL min(llMaxBw 141, 360 x .5), LL128 min(360 x .92, 12 x 36.7), Simple
    360. Picks LL at 64 KiB (7.2 + 65536 / 141000 = 7.66 < 11.8 + 0.18), Simple at 1 GiB."""
    table = _table(_system(1), coll)
    assert table["ll"] == pytest.approx((7.2, 141.0))
    assert table["ll128"] == pytest.approx((15.9, min(360 * 0.92, 12 * 36.7)))
    assert table["simple"] == pytest.approx((11.8, 360.0))
    sys_ = _system(1)
    assert bcred.pick(coll, sys_, 2**16).protocol == "ll"
    big = bcred.pick(coll, sys_, 2**30)
    assert big.protocol == "simple" and big.time_us == pytest.approx(11.8 + 2**30 / 360e3)
    assert big.channels == 24  # the ring's runtime channels


@pytest.mark.parametrize("coll", CHAINS)
def test_tuner_four_dgx_h100_by_hand(coll):
    """4 x DGX H100 (32 ranks, 8 NICs a node: no sameChannels), ring 8 x 48: every hop priced at NET's
    latency, nRanks of them -- LL 6.6 + 32 x 2.7 = 93.0, LL128 14 + 32 x 4 = 142, Simple (the Tree's NET
    hwLat, "chunk latency") 8.4 + 32 x 14 = 456.4; bandwidths LL min(llMaxBw 20.4, 384 x .5), LL128
    min(384 x .92, 8 x 36.7), Simple 384 (bwInter from 3 nodes)."""
    sys_ = _system(4)
    assert not bcred.same_channels(sys_)
    table = _table(sys_, coll)
    assert table["ll"] == pytest.approx((93.0, 20.4))
    assert table["ll128"] == pytest.approx((142.0, 8 * 36.7))
    assert table["simple"] == pytest.approx((456.4, 384.0))
    assert bcred.pick(coll, sys_, 2**20).protocol == "ll"  # 93 + 51.40 < 142 + 3.57
    assert bcred.pick(coll, sys_, 2**22).protocol == "ll128"  # 142 + 14.29 < 93 + 205.6
    assert bcred.pick(coll, sys_, 2**30).protocol == "simple"


def test_tuner_release_rules():
    """Until 2.20.5 the ring's LL is busBw / 3 for a broadcast on one node, / 4 for a reduce (1 x HGX A100,
    ring 12 x 20 = 240: 80 and 60 GB/s); from 2.21.5 x .5 for both (capped at llMaxBw 87.7). Across nodes
    2.20.5's NET Tree Simple hwLat (28 us a hop) makes Simple 8.4 + 16 x 28 on 2 x DGX H100."""
    a100 = _system(1, "hgx-a100-200g")
    assert _table(a100, "broadcast", "2.20.5")["ll"][1] == pytest.approx(80.0)
    assert _table(a100, "reduce", "2.20.5")["ll"][1] == pytest.approx(60.0)
    assert _table(a100, "broadcast", "2.21.5")["ll"][1] == pytest.approx(87.7)
    assert _table(_system(2), "broadcast", "2.20.5")["simple"][0] == pytest.approx(8.4 + 16 * 28)
    assert _table(_system(2), "broadcast", "2.24.3")["simple"][0] == pytest.approx(8.4 + 16 * 14)
    # one GPU a node: the channels replay one another (sameChannels): one NET hop
    single = _system(4, gpus_per_host=1)
    assert bcred.same_channels(single)
    assert _table(single, "reduce")["ll"][0] == pytest.approx(6.6 + 2.7)


@pytest.mark.parametrize("coll", CHAINS)
def test_the_chain_is_charged_one_hop_and_picked_by_nccls_estimate(coll):
    """4 x DGX H100 (no sameChannels): NCCL's tuner still picks by its own estimate (nRanks NET hops: LL at
    1 MiB, LL128 at 4 MiB), but the simulation charges one hop before the data moves -- base + one NET hop,
    as NCCL prices the same kernel where the ring graph has sameChannels (LL128 14 + 4 us) -- and runs the
    chain's fill itself. One node keeps NCCL's estimate as it is (sameChannels there)."""
    g = hgx(4, "dgx-h100")
    cluster, algo = Cluster(g), get_algorithm(coll, "nccl")
    c = algo.choice(32, 2**22, cluster)
    assert (c.protocol, c.latency_us) == ("ll128", pytest.approx(142.0))
    assert algo.fixed_cost(32, 2**22, cluster, c) == pytest.approx((14.0 + 4.0) * 1e-6)
    assert algo.choice(32, 2**20, cluster).protocol == "ll"
    assert algo.fixed_cost(32, 2**20, cluster, algo.choice(32, 2**20, cluster)) == pytest.approx((6.6 + 2.7) * 1e-6)
    one = Cluster(hgx(1, "dgx-h100"))
    c1 = algo.choice(8, 2**22, one)
    assert algo.fixed_cost(8, 2**22, one, c1) == pytest.approx(c1.latency_us * 1e-6)


@pytest.mark.parametrize("coll", CHAINS)
@pytest.mark.parametrize("root", [0, 1])
@pytest.mark.parametrize("p, nbytes", [(2, 3e5), (5, 3e6), (7, 2**22 + 3)])
def test_closed_form_on_a_star(coll, root, p, nbytes):
    """On a star (one GPU a host, one ring), forced to Simple: NCCL's estimate, then a chain of p - 1 hops
    streaming M = ceil(n / 512 KiB) chunks: (p - 1 + M - 1)(α + n/M (β + γ)), to 1e-6; data check passed."""
    gamma = 1e-10 if coll == "reduce" else 0.0
    algo = get_algorithm(coll, "nccl:proto=simple")
    t = check_algorithm(coll, "nccl:proto=simple", p, nbytes, gamma=gamma, root=root)
    cluster = Cluster(star(p, 12.5e9, 1e-6))
    c = algo.choice(p, nbytes, cluster)
    expected = algo.fixed_cost(p, nbytes, cluster, c) + chain_s(p, nbytes, 2e-6, 1 / 12.5e9, gamma)
    assert t == pytest.approx(expected, rel=1e-6)
    assert algo.cost(p, nbytes, 2e-6, 1 / 12.5e9, gamma) == pytest.approx(expected - c.latency_us * 1e-6, rel=1e-9)


@pytest.mark.parametrize("coll", CHAINS)
@pytest.mark.parametrize("hosts, preset", [(2, "dgx-h100"), (1, "dgx-h100"), (2, "hgx-a100-200g"), (3, "dgx-h100")])
def test_fast_path_equals_the_message_level(coll, hosts, preset):
    """The chain's step program (fast path) gives the message level's time to 1e-9, and the message level's
    data check passes (every rank's contribution once at the root; the root's buffer at every rank), for a
    root other than 0 too."""
    g = hgx(hosts, preset)
    for size, root in ((2**20, 0), (3 * 2**24, 5)):
        m = simulate(g, coll, "nccl", size, engine="message", check=True, gamma=1e-11, root=root)
        f = simulate(g, coll, "nccl", size, engine="fast", gamma=1e-11, root=root)
        assert m.wrong == 0
        assert f.time_s == pytest.approx(m.time_s, rel=1e-9)


def test_the_chain_is_nccls_ring_from_the_root():
    """2 x DGX H100, LL128 at 48 MiB: 8 channels (one per NIC), each channel's 6 MiB cut into LL128's
    576,000-byte chunks (11 of them), 16/15 on the wire; broadcast: every ring's chain starts at the root
    and has 15 hops (its last actor only receives); reduce: it ends at the root (whose actors only receive)."""
    cluster = Cluster(hgx(2, "dgx-h100"))
    n, root = 3 * 2**24, 3
    for coll in CHAINS:
        algo = get_algorithm(coll, "nccl:proto=ll128")
        program, segments = algo.chain(16, n, cluster, root)
        assert segments == 8 * 11
        steps = [s for s, times in program.phases if (s.nbytes > 0).any() for _ in range(times)]
        assert len(steps) == 11 + 15 - 1  # M + hops - 1
        sizes = [float(x) for s in steps for x in s.nbytes]
        assert sizes == pytest.approx([n / 8 / 11 * 16 / 15] * len(sizes))
        senders = {int(cluster.endpoint_rank[a - cluster.size]) for s in steps for a in s.src.tolist()}
        receivers = {int(cluster.endpoint_rank[a - cluster.size]) for s in steps for a in s.dst.tolist()}
        if coll == "broadcast":
            assert root in senders and root not in receivers
        else:
            assert root in receivers and root not in senders


@pytest.mark.parametrize("coll", CHAINS)
def test_an_algorithm_nccl_does_not_run_for_broadcast_or_reduce_is_one_line(coll):
    for spec in ("nccl:algo=tree", "nccl:algo=nvls", "nccl:algo=pat"):
        with pytest.raises(AlgorithmError, match="is not one NCCL runs broadcast or reduce with") as info:
            simulate("dgx-h100-2", coll, spec, 2**20)
        assert "\n" not in str(info.value)
    assert simulate("dgx-h100-2", coll, "nccl:algo=^tree", 2**20).time_s > 0


@pytest.mark.parametrize("coll", CHAINS)
def test_per_channel_caps_are_refused_for_the_chain_in_one_line(coll):
    """``caps`` applies NCCL's per-channel caps to the all-reduce / all-gather / reduce-scatter schedules; the
    chain has none to apply, so asking for them is refused rather than ignored (``caps=none`` is the default)."""
    for caps in ("ring", "tree", "all"):
        with pytest.raises(CollsimError, match="not to broadcast's or reduce's chain") as info:
            simulate("dgx-h100-2", coll, f"nccl:caps={caps}", 2**20)
        assert "\n" not in str(info.value)
    assert (
        simulate("dgx-h100-2", coll, "nccl:caps=none", 2**20).time_s
        == simulate("dgx-h100-2", coll, "nccl", 2**20).time_s
    )


def test_cli_shows_the_pick_per_size_and_refuses_bad_input_in_one_line():
    """2 x DGX H100: Ring/LL at 1 MiB, Ring/Simple at 1 GiB for both (their tables are the same from 2.21.5),
    NCCL's estimate in --json; algo=tree refused in one line (exit 2)."""
    for coll in CHAINS:
        out = _cli("simulate", "-t", "dgx-h100-2", "--collective", coll, "-a", "nccl", "--sizes", "1MiB:1GiB:1024")
        assert out.returncode == 0, out.stderr
        picks = [line.split(",")[0] for line in out.stdout.splitlines() if line.startswith("#   NCCL: ")]
        assert picks == ["#   NCCL: Ring/LL", "#   NCCL: Ring/Simple"], out.stdout
    js = _cli("simulate", "-t", "dgx-h100-2", "--collective", "reduce", "-a", "nccl", "--size", "1GiB", "--json")
    pick = json.loads(js.stdout)["nccl"]
    assert (pick["algorithm"], pick["protocol"], pick["channels"]) == ("Ring", "Simple", 16)
    assert pick["nccl_estimate_us"] == pytest.approx(232.4 + 2**30 / 384e3, abs=1e-3)
    bad = _cli("simulate", "-t", "dgx-h100-2", "--collective", "broadcast", "-a", "nccl:algo=tree", "--size", "1MiB")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def _chain_log(binary: str, p: int = 16, per: int = 8) -> str:
    """An nccl-tests log of ``binary`` (broadcast_perf / reduce_perf) on ``p`` H100s, ``per`` a node, NCCL
    2.26.2: busbw = algbw (nccl-tests' bus factor for both is 1), root 0."""
    redop = "none" if binary.startswith("broadcast") else "sum"
    ranks = "".join(
        f"#  Rank {r:2d} Group  0 Pid 1 on node{r // per} device  {r % per} [0x1b] NVIDIA H100 80GB HBM3\n"
        for r in range(p)
    )
    rows = "".join(
        f"  {n:>10d}  {n // 4:>12d}     float    {redop}       0  {t:8.1f}  {n / t / 1e3:6.2f}  {n / t / 1e3:6.2f}"
        f"      0  {t:8.1f}  {n / t / 1e3:6.2f}  {n / t / 1e3:6.2f}      0\n"
        for n, t in ((2**20, 80.0), (2**24, 150.0), (2**28, 1000.0), (2**30, 3600.0))
    )
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    return (
        f"#% HARDWARE (as stated): {p // per} nodes of {per}x H100, 8x 400 Gb/s NDR per node\n"
        "# nccl-tests version 2.17.1 nccl-headers=22602 nccl-library=22602\n"
        f"# Collective test starting: {binary}\n"
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 16(factor) warmup iters: 5 iters: 20\n"
        f"{ranks}{header}{rows}"
    )


@pytest.mark.parametrize("binary, coll", [("broadcast_perf", "broadcast"), ("reduce_perf", "reduce")])
def test_broadcast_and_reduce_logs_are_predicted_with_nccls_chain(tmp_path, binary, coll):
    """benchmarks/nccl_logs.py takes a broadcast_perf / reduce_perf log (refused before): its samples run
    ``nccl`` of the release the log states (2.26.2, from nccl-library=22602), NCCL's ring at every size."""
    import nccl_logs

    path = tmp_path / f"h100-{binary}-2node.txt"
    path.write_text(_chain_log(binary))
    log = nccl_logs.parse_log(path)
    assert (log.collective, log.ranks, log.hosts, log.nccl) == (coll, 16, 2, "2.26.2")
    samples, _ = nccl_logs.samples_of(log)
    assert {(s.collective, s.algorithm) for s in samples} == {(coll, "nccl:version=2.26.2")}
    rows = nccl_logs.predict(log, 2**20)
    assert [r[0] for r in rows] == [2**20, 2**24, 2**28, 2**30]
    assert [r[4] for r in rows] == ["ring/ll", "ring/ll128", "ring/simple", "ring/simple"]
    assert all(r[2] > 0 for r in rows)
