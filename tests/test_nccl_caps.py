"""NCCL's per-channel caps of the ring (LL128) and the tree in the simulated schedules (``nccl:caps=...``,
``nccl-tree:caps=true``; docs/nccl.md, "Per-channel caps of the ring and the tree"): the caps' figures per
release, where they bind, fast == message and the data check under them, and bit for bit the same times
where they are off or do not bind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.cluster import Cluster
from sim.errors import ConfigError
from sim.nccl import tuner
from sim.nccl.pipeline import cap_rate
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx

ROOT = Path(__file__).resolve().parents[1]
V2_18_1 = tuning_for(parse_version("2.18.1"))[0]
V2_30_7 = tuning_for(parse_version("2.30.7"))[0]


def _system(hosts: int, preset: str = "dgx-h100") -> tuple[Cluster, tuner.System]:
    cluster = Cluster(hgx(hosts, preset))
    return cluster, tuner.describe(cluster, 8 * hosts)


def test_cap_figures_are_tuning_cc_s_per_release():
    """tuning.cc: ring LL128 ``nChannels * perChMaxRingLL128Bws`` (busBw); tree ``nChannels *
    perChMaxTreeBws`` before the protocol (x 120/128 for LL128), LL128 also ``nChannels *
    perChMaxTreeLL128Bws``, algBw half the busBw -- each from the release's own table: Hopper from 4 nodes
    2.18.1 has perChMaxTreeBws 33 and perChMaxTreeLL128Bws 36.7, 2.30.7 36 and 29."""
    _, two = _system(2)
    _, four = _system(4)
    assert tuner.ring_ll128_cap(two) == pytest.approx(8 * 36.7e9)
    for tuning, tree, ll128 in ((V2_30_7, 36.0, 29.0), (V2_18_1, 33.0, 36.7)):
        ch = tuner.search(four, tuning)["tree"].channels
        assert ch == 8
        assert tuner.tree_cap(four, "simple", tuning) == pytest.approx(0.5 * ch * tree * 1e9)
        assert tuner.tree_cap(four, "ll128", tuning) == pytest.approx(0.5 * ch * min(tree * 15 / 16, ll128) * 1e9)
        assert tuner.tree_cap(four, "ll", tuning) == pytest.approx(0.5 * ch * tree * 0.5 * 1e9)
    # the two releases differ from 4 Hopper nodes (LL128: 116 against 123.75 GB/s algBw)
    assert tuner.tree_cap(four, "ll128", V2_30_7) < tuner.tree_cap(four, "ll128", V2_18_1)
    # A100 (2 x BM.GPU4.8): Ampere's 23.6 (tree) and 20 (LL128) per channel, 16 channels
    _, a100 = _system(2, "oci-bm-gpu4-8")
    assert tuner.tree_cap(a100, "ll128") == pytest.approx(0.5 * 16 * 20.0e9)
    assert tuner.ring_ll128_cap(a100) == pytest.approx(16 * 20.0e9)


def test_cap_rate_leaves_the_step_its_latency():
    assert cap_rate(10.0, 1.0) == pytest.approx(1 / 9.0)
    assert cap_rate(10.0, 7.0) == pytest.approx(1 / 5.0)  # never under half the slice's time


def test_the_ring_s_ll128_cap_binds_on_hopper_at_large_sizes():
    """2 x DGX H100, Ring/LL128 forced: uncapped the rings move 359 GB/s busbw (8 NICs at LL128's 15/16);
    NCCL caps 8 channels x 36.7 = 293.6 GB/s, and the capped schedule sits just under it."""
    cluster, sys_ = _system(2)
    cap = tuner.ring_ll128_cap(sys_) / 1e9
    free = simulate(cluster, "allreduce", "nccl:algo=ring,proto=ll128", 2**33)
    capped = simulate(cluster, "allreduce", "nccl:algo=ring,proto=ll128,caps=ring", 2**33)
    assert free.busbw_GBps > 1.1 * cap
    assert 0.99 * cap < capped.busbw_GBps <= cap
    # the release picks the table: 2.18.1's Hopper row is 36.7 too, so the same time
    old = simulate(cluster, "allreduce", "nccl:algo=ring,proto=ll128,caps=ring,version=2.18.1", 2**33)
    assert old.time_s == capped.time_s


@pytest.mark.parametrize("hosts", [2, 3])
@pytest.mark.parametrize("collective", ["allreduce", "allgather", "reducescatter"])
def test_capped_rings_are_their_closed_form(hosts, collective):
    """Where the ring's cap binds (from 128 MiB on DGX H100), every step lasts K·chunk / cap, its
    messages' latency inside the budget: the time is NCCL's fixed cost + 2(p-1)/p · n / cap (all-reduce;
    (p-1)/p for the gathering collectives) to 1e-9, through the spine too (3 hosts)."""
    from sim.algorithms import get_algorithm
    from sim.nccl.rings import capped_ring_s

    cluster, sys_ = _system(hosts)
    p, spec = 8 * hosts, "nccl:algo=ring,proto=ll128,caps=ring"
    nccl = get_algorithm(collective, spec)
    for n in (2**27, 2**31):
        fixed = nccl.fixed_cost(p, n, cluster, nccl.choice(p, n, cluster))
        closed = fixed + capped_ring_s(p, n, tuner.ring_ll128_cap(sys_), collective)
        assert simulate(cluster, collective, spec, n).time_s == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize("proto", ["ll128", "simple"])
def test_the_tree_caps_bind_per_release(proto):
    """4 x DGX H100, Tree forced: the capped tree moves under its release's cap (within the pipeline's
    fill and the latency), which binds where the links would carry more: 2.30.7's LL128 cap (116 GB/s
    algBw) is tighter than 2.18.1's (123.75), its Simple cap (144) looser than 2.18.1's (132)."""
    cluster, sys_ = _system(4)
    free = simulate(cluster, "allreduce", f"nccl:algo=tree,proto={proto}", 2**33)
    times = {}
    for version, tuning in (("2.30.7", V2_30_7), ("2.18.1", V2_18_1)):
        cap = tuner.tree_cap(sys_, proto, tuning) / 1e9
        r = simulate(cluster, "allreduce", f"nccl:algo=tree,proto={proto},caps=tree,version={version}", 2**33)
        assert free.algbw_GBps > cap
        assert 0.9 * cap < r.algbw_GBps <= cap
        times[version] = r.time_s
    assert (times["2.30.7"] > times["2.18.1"]) == (proto == "ll128")


def test_nccl_tree_caps_option_is_the_newest_release_s():
    cluster, sys_ = _system(4)
    a = simulate(cluster, "allreduce", "nccl-tree:proto=ll128,caps=true", 2**33)
    b = simulate(cluster, "allreduce", "nccl:algo=tree,proto=ll128,caps=tree", 2**33)
    plain = simulate(cluster, "allreduce", "nccl-tree:proto=ll128", 2**33)
    assert a.algbw_GBps <= tuner.tree_cap(sys_, "ll128") / 1e9 < plain.algbw_GBps
    assert b.algbw_GBps <= tuner.tree_cap(sys_, "ll128") / 1e9


def test_nccl_tree_caps_follow_the_version_option():
    """``nccl-tree:caps=true,version=V`` caps the tree as ``nccl:algo=tree,caps=tree,version=V`` does: each
    release's own cap (2.18.1's LL128 cap is looser than 2.30.7's, the default); a release that is not
    NCCL's is refused as the option is read."""
    cluster, sys_ = _system(4)
    for version, tuning in (("2.18.1", V2_18_1), ("2.30.7", V2_30_7)):
        r = simulate(cluster, "allreduce", f"nccl-tree:proto=ll128,caps=true,version={version}", 2**33)
        cap = tuner.tree_cap(sys_, "ll128", tuning) / 1e9
        assert 0.9 * cap < r.algbw_GBps <= cap
    default = simulate(cluster, "allreduce", "nccl-tree:proto=ll128,caps=true", 2**33)
    newest = simulate(cluster, "allreduce", "nccl-tree:proto=ll128,caps=true,version=2.30.7", 2**33)
    assert default.time_s == newest.time_s
    with pytest.raises(ConfigError, match="not a release of NCCL"):
        simulate(cluster, "allreduce", "nccl-tree:caps=true,version=2.99", 2**33)


CAPPED = [
    (2, "dgx-h100", "nccl:algo=ring,proto=ll128,caps=ring"),
    (3, "dgx-h100", "nccl:algo=ring,proto=ll128,caps=all"),
    (2, "oci-bm-gpu4-8", "nccl:algo=ring,proto=ll128,caps=ring"),
    (4, "dgx-h100", "nccl:algo=tree,proto=ll128,caps=tree"),
    (3, "dgx-h100", "nccl:algo=tree,proto=simple,caps=all,version=2.18.1"),
    (2, "oci-bm-gpu4-8", "nccl:algo=tree,proto=ll128,caps=tree"),
    (2, "dgx-h100", "nccl:algo=tree,proto=ll,caps=tree"),
    (1, "dgx-h100", "nccl-tree:caps=true"),
    (3, "dgx-h100", "nccl-tree:proto=ll128,caps=true"),
]


@pytest.mark.parametrize("hosts, preset, spec", CAPPED)
@pytest.mark.parametrize("size", [2**20 + 7, 3 * 2**24])
def test_capped_schedules_check_and_fast_equals_message(hosts, preset, spec, size):
    """Under the caps every contribution arrives once, and the fast path gives the message level's time
    to 1e-9; at 48 MiB no faster than the uncapped schedule."""
    g = hgx(hosts, preset, gpus_per_host=4)
    a, b = (
        simulate(g, "allreduce", spec, size, check=e == "message", engine=e, gamma=1e-11) for e in ("message", "fast")
    )
    assert a.wrong == 0 and a.flows == b.flows and b.time_s == pytest.approx(a.time_s, rel=1e-9)
    if size > 2**24:
        plain = spec.replace(",caps=all", "").replace(",caps=ring", "").replace(",caps=tree", "")
        plain = plain.replace(":caps=true", "").replace(",caps=true", "")
        free = simulate(g, "allreduce", plain, size, engine="fast", gamma=1e-11)
        assert b.time_s >= free.time_s  # a cap never speeds a schedule up


@pytest.mark.parametrize("collective", ["allgather", "reducescatter"])
def test_the_ring_cap_holds_for_all_gather_and_reduce_scatter(collective):
    """tuning.cc caps the ring's LL128 for every collective: the rings of all-gather and reduce-scatter
    move at most the channels' 293.6 GB/s busbw on 2 x DGX H100, fast == message, every block once."""
    cluster, sys_ = _system(2)
    cap = tuner.ring_ll128_cap(sys_) / 1e9
    spec = "nccl:algo=ring,proto=ll128"
    free = simulate(cluster, collective, spec, 2**34)
    capped = simulate(cluster, collective, spec + ",caps=ring", 2**34)
    assert free.busbw_GBps > 1.1 * cap and 0.99 * cap < capped.busbw_GBps <= cap
    g = hgx(2, "dgx-h100", gpus_per_host=4)
    a = simulate(g, collective, spec + ",caps=ring", 3 * 2**22, check=True)
    b = simulate(g, collective, spec + ",caps=ring", 3 * 2**22, engine="fast")
    assert a.wrong == 0 and abs(a.time_s - b.time_s) <= 1e-9 * a.time_s


@pytest.mark.parametrize(
    "hosts, preset, spec, size",
    [
        (2, "dgx-h100", "nccl", 2**20),
        (2, "dgx-h100", "nccl", 2**30),
        (4, "dgx-h100", "nccl:algo=tree,proto=ll128", 2**26),
        (2, "oci-bm-gpu4-8", "nccl", 2**25),
        (2, "dgx-h100", "nccl:algo=ring,proto=ll128", 2**26),
    ],
)
def test_off_by_default_and_bit_for_bit_where_no_cap_applies(hosts, preset, spec, size):
    """The default (``caps=none``) is the schedule as it was; a cap that does not apply (the ring's other
    protocols, the NVLS schedules) leaves the time bit for bit (``==``, not approx)."""
    cluster = Cluster(hgx(hosts, preset))
    base = simulate(cluster, "allreduce", spec, size).time_s
    sep = "," if ":" in spec else ":"
    assert simulate(cluster, "allreduce", f"{spec}{sep}caps=none", size).time_s == base
    ring_simple = "nccl:algo=ring,proto=simple"
    assert (
        simulate(cluster, "allreduce", f"{ring_simple},caps=all", size).time_s
        == simulate(cluster, "allreduce", ring_simple, size).time_s
    )
    if "ring" in spec:  # the ring's cap leaves the tree alone, and the tree's the ring
        assert simulate(cluster, "allreduce", f"{spec},caps=tree", size).time_s == base
    if "tree" in spec:
        assert simulate(cluster, "allreduce", f"{spec},caps=ring", size).time_s == base
    if hosts == 2 and size == 2**30 and preset == "dgx-h100":  # NVLSTree/Simple: its own cap, always applied
        assert simulate(cluster, "allreduce", "nccl:caps=all", size).time_s == base


def test_bad_caps_option_is_one_line_and_exit_2():
    out = subprocess.run(
        [sys.executable, "-m", "collsim", "simulate", "-t", "dgx-h100-2", "-a", "nccl:caps=rings", "--size", "1MiB"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "caps" in out.stderr
