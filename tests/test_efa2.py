"""AWS's EFA plugin as it configures NCCL (docs/nccl.md, "AWS EFA as the plugin configures NCCL"): its own
tuner's region tables (aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp), the NCCL settings it exports
(src/platform-aws.c(pp)) reaching the chunks the schedules move, and the log reader's use of both."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sim.algorithms import get_algorithm
from sim.algorithms.nvls import nvls_slices
from sim.cluster import Cluster
from sim.errors import CollsimError
from sim.nccl import efa, tuner
from sim.nccl.report import pick_of
from sim.nccl.versions import NEWEST, tuning_for
from sim.topology import hgx

KIB, MIB = 1024, 1024 * 1024


def _pick(preset: str, hosts: int, plugin: str, nbytes: float, spec: str = "nccl") -> tuner.Candidate:
    cluster = Cluster(hgx(hosts, preset, efa_plugin=plugin))
    return get_algorithm("allreduce", spec).choice(8 * hosts, nbytes, cluster)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "nbytes, region",
    [
        # p5, 4 nodes (32 ranks): Tree/LL128 up to 36 MiB (vertex (37748736, 32)), Ring/LL128 to the edge
        # (1073741824, 17)-(2147483648, 64), Ring/Simple from its vertex (1610612736, 32)
        (8 * MIB, ("tree", "ll128")),
        (512 * MIB, ("ring", "ll128")),
        (4096 * MIB, ("ring", "simple")),
    ],
)
def test_the_plugins_tuner_picks_on_p5_where_its_regions_decide(nbytes, region):
    c = _pick("aws-p5", 4, "1.16.3", nbytes)
    assert (c.algorithm, c.protocol) == region and c.picked_by == "aws-ofi-nccl's tuner 1.16.3"
    pick = pick_of(get_algorithm("allreduce", "nccl"), 32, nbytes, Cluster(hgx(4, "aws-p5", efa_plugin="1.16.3")))
    assert pick is not None and pick["picked_by"] == "aws-ofi-nccl's tuner 1.16.3"


def test_the_plugins_tuner_leaves_two_nodes_and_older_releases_to_nccl():
    """Every release skips 2 nodes or fewer; before 1.16.0 the tuner is not loaded by default; NCCL before
    2.19 loads no tuner plugin, and 2.19-2.20 only the v1 API, which the plugin exports up to 1.19.x."""
    assert _pick("aws-p5", 2, "1.16.3", 512 * MIB).picked_by == ""
    nccl = _pick("aws-p5", 4, "1.15.0", 512 * MIB)
    assert (nccl.algorithm, nccl.protocol, nccl.picked_by) == ("nvls-tree", "simple", "")
    assert efa.tuner_loaded((1, 16, 0), (2, 19, 3)) and not efa.tuner_loaded((1, 21, 1), (2, 19, 3))
    assert not efa.tuner_loaded((1, 16, 3), (2, 18, 5)) and efa.tuner_loaded((1, 21, 1), (2, 21, 5))
    old = _pick("aws-p5", 4, "1.16.3", 512 * MIB, "nccl:version=2.18.5")
    assert old.picked_by == ""
    # the plugin's choice is among what NCCL runs: restricted to Simple, Ring/LL128's region yields
    c = _pick("aws-p5", 4, "1.16.3", 512 * MIB, "nccl:proto=simple")
    assert c.protocol == "simple"
    # with NCCL_ALGO / NCCL_PROTO set, the v1 / v2 APIs (NCCL before 2.22.3) do not load the tuner at all
    assert _pick("aws-p5", 4, "1.16.3", 8 * MIB, "nccl:proto=ll128|simple").picked_by != ""
    assert _pick("aws-p5", 4, "1.16.3", 8 * MIB, "nccl:proto=ll128|simple,version=2.21.5").picked_by == ""


def test_p5en_tables_by_release():
    av = {("tree", "ll"), ("tree", "ll128"), ("ring", "ll128"), ("ring", "simple"), ("nvls-tree", "simple")}
    # 3 nodes (24 ranks), 512 KiB: Tree/LL up to 256 KiB in 1.16.x, 192 KiB from 1.17.0
    assert efa.region_pick("p5en", (1, 16, 3), 3, 24, 256 * KIB, av) == ("tree", "ll")
    assert efa.region_pick("p5en", (1, 17, 0), 3, 24, 256 * KIB, av) == ("tree", "ll128")
    assert efa.region_pick("p5en", (1, 21, 1), 3, 24, 8 * MIB, {("ring", "simple")}) is None  # not its region
    assert efa.region_pick("p5", (1, 21, 1), 4, 16, 8 * MIB, av) is None  # 4 GPUs a node: not ported


def test_the_exported_settings_reach_the_chunks():
    """1.16.0 on: NCCL_BUFFSIZE 8 MiB (Simple's step 1 MiB) on p4d and p5, NVLS and NVLS-tree chunks 512 KiB
    on p5; 1.8.x the NVLS-tree ceiling alone (the NVLS chunk, 128 KiB, still bounds it from 2.21.5, but
    no longer 64 KiB from 4 nodes)."""
    sys16 = tuner.describe(Cluster(hgx(2, "aws-p5", efa_plugin="1.16.3")), 16)
    sys8 = tuner.describe(Cluster(hgx(2, "aws-p5", efa_plugin="1.8.1")), 16)
    ib = tuner.describe(Cluster(hgx(2, "dgx-h100")), 16)
    assert (sys16.buffsize, sys16.nvls_chunksize, sys16.nvlstree_max_chunksize) == (8 * MIB, 512 * KIB, 512 * KIB)
    assert tuner.nvls_chunks(sys16) == (512 * KIB, 512 * KIB, False)
    assert tuner.nvls_chunks(ib) == (128 * KIB, 128 * KIB, True)
    assert tuner.nvls_chunks(sys8) == (128 * KIB, 128 * KIB, False)  # no 64 KiB from 4 nodes
    older = tuning_for((2, 20, 3))[0]  # before 2.21.5: the Simple step, bounded by NVLSTREE_MAX_CHUNKSIZE
    assert tuner.nvls_chunks(sys16, older) == (128 * KIB, 512 * KIB, False)
    assert tuner.simple_step(sys16) == MIB and tuner.simple_step(ib) == 512 * KIB
    p4d = tuner.describe(Cluster(hgx(2, "aws-p4d", efa_plugin="1.16.0")), 16)
    assert tuner.simple_step(p4d) == MIB and p4d.nvls_chunksize == 0
    # 16 GiB over NVLS-tree: 512 KiB chunks cut each head's 2 GiB into 4x fewer slices than 128 KiB ones
    assert nvls_slices(16 * 1024 * MIB, 2, 8, sys=sys16) * 4 == nvls_slices(16 * 1024 * MIB, 2, 8, sys=ib)
    assert nvls_slices(16 * 1024 * MIB, 2, 8, sys=sys8) == nvls_slices(16 * 1024 * MIB, 2, 8, sys=ib)


def test_options_set_the_chunks_as_the_plugin_does():
    """``nccl:nvls_chunksize=512KiB,nvlstree_max_chunksize=512KiB`` on a plugin that exports none gives the
    newest plugin's schedule; ``buffsize`` changes the tree's Simple slices; NCCL's tuner reads none."""
    from sim.simulate import simulate

    size = 4096 * MIB
    old = Cluster(hgx(2, "aws-p5", efa_plugin="1.7.3"))
    new = Cluster(hgx(2, "aws-p5", efa_plugin="1.16.3"))
    spec = "nccl:nvls_chunksize=512KiB,nvlstree_max_chunksize=512KiB,buffsize=8MiB"
    t_new = simulate(new, "allreduce", get_algorithm("allreduce", "nccl"), size, ranks=16).time_s
    t_opt = simulate(old, "allreduce", get_algorithm("allreduce", spec), size, ranks=16).time_s
    t_old = simulate(old, "allreduce", get_algorithm("allreduce", "nccl"), size, ranks=16).time_s
    assert t_opt == t_new and t_new < 0.9 * t_old
    algo = get_algorithm("allreduce", "nccl:buffsize=8MiB")
    assert algo.settings(16, old).buffsize == 8 * MIB  # type: ignore[attr-defined]
    c1 = get_algorithm("allreduce", "nccl").choice(16, size, old)  # type: ignore[attr-defined]
    c2 = algo.choice(16, size, old)  # type: ignore[attr-defined]
    assert replace(c1, tuner="") == replace(c2, tuner="")
    tree = "nccl:algo=tree,proto=simple"
    t1 = simulate(old, "allreduce", get_algorithm("allreduce", tree), 256 * MIB, ranks=16).time_s
    t2 = simulate(old, "allreduce", get_algorithm("allreduce", tree + ",buffsize=8MiB"), 256 * MIB, ranks=16).time_s
    assert t1 != t2
    # CollNet Chain's chunk is at most the Simple step too (InfiniBand with SHARP: no plugin there)
    sharp, chain = Cluster(hgx(4, "dgx-h100", sharp=True)), "nccl:algo=collnet-chain"
    t3 = simulate(sharp, "allreduce", get_algorithm("allreduce", chain), 256 * MIB, ranks=32).time_s
    t4 = simulate(
        sharp, "allreduce", get_algorithm("allreduce", chain + ",buffsize=256KiB"), 256 * MIB, ranks=32
    ).time_s
    assert t4 > t3


ROWS = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     8388608       2097152     float     sum      -1    300.0   27.96   54.17      0    300.0   27.96   54.17      0
   536870912     134217728     float     sum      -1   4000.0  134.22  260.05      0   4000.0  134.22  260.05      0
"""


def _log(tmp_path: Path, name: str, header: str):
    import nccl_logs

    path = tmp_path / name
    path.write_text(header + ROWS)
    return nccl_logs, nccl_logs.parse_log(path)


def test_a_log_stating_its_plugin_gets_that_plugins_picks(tmp_path):
    """4 p5 instances: a log of plugin 1.16.3 (read from an image tag, as AWS's containers name it) runs
    the plugin's tuner, one of 1.15.0 NCCL's own."""
    picks = {}
    for plugin, header in (
        ("1.16.3", "#% 4 nodes of p5.48xlarge (8 H100 each), image efa1.43.2-ofi1.16.3-nccl2.27.7-1-tests2.16.9\n"),
        ("1.15.0", "#% 4 nodes of p5.48xlarge (8 H100 each), aws-ofi-nccl 1.15.0\n"),
    ):
        nccl_logs, log = _log(tmp_path, f"h100-aws-p5-{plugin}-4node.txt", header)
        assert log.efa == ("p5", plugin) and log.hosts == 4
        picks[plugin] = [pick for *_, pick in nccl_logs.predict(log, 2**20)]
    assert picks["1.16.3"] == ["tree/ll128", "ring/ll128"]
    assert picks["1.15.0"] == ["tree/ll128", "nvls-tree/simple"]


def test_an_efa_logs_nccl_buffsize_line_is_read(tmp_path):
    header = "#% 2 nodes of p5.48xlarge (8 H100 each), aws-ofi-nccl 1.7.3, NCCL_BUFFSIZE=8388608, NCCL_P2P_NET_CHUNKSIZE=524288\n"
    nccl_logs, log = _log(tmp_path, "h100-aws-p5-2node.txt", header)
    assert log.settings == ("buffsize=8388608",) and log.unmodelled == ()
    samples, _ = nccl_logs.samples_of(log)
    assert {s.algorithm for s in samples} == {"nccl:buffsize=8388608"}
    # (an InfiniBand log keeps it among the settings not modelled)
    _, ib = _log(tmp_path, "h100-ib-2node.txt", "#% 2 nodes of 8 H100, 8x 400 Gb/s InfiniBand, NCCL_BUFFSIZE=8388608\n")
    assert ib.settings == () and ib.unmodelled == ("NCCL_BUFFSIZE=8388608",)


@pytest.mark.parametrize("spec", ["nccl:buffsize=1", "nccl:nvls_chunksize=1KiB", "nccl:nvlstree_max_chunksize=1GiB"])
def test_the_settings_are_refused_outside_their_range(spec):
    with pytest.raises(CollsimError, match="whole bytes from"):
        get_algorithm("allreduce", spec)


def test_the_newest_tuner_is_the_default():
    assert NEWEST is tuning_for((2, 30, 7))[0]
