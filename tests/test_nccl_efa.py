"""AWS EFA clusters in the NCCL model: the ``aws-*`` presets of ``hgx``, what aws-ofi-nccl tells NCCL's tuner
(its latencyInter per NCCL release, Simple only where it sets NCCL_PROTO=simple), and the log reader's EFA
detection (docs/nccl.md, "AWS EFA")."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sim.cluster import Cluster
from sim.errors import AlgorithmError, ConfigError, TopologyError
from sim.nccl import efa, tuner
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx
from validate.calibration.inputs import stated_efa

ROOT = Path(__file__).resolve().parents[1]


def _nics(g, host="h0"):
    """{NIC: (its GPU, its PCIe switch, its link rate to the leaf, that link's latency)} of one host."""
    out = {}
    for v, d in g.nodes(data=True):
        if d.get("kind") == "nic" and d.get("host") == host:
            switch = next(u for u in g.predecessors(v) if u.startswith(f"{host}:pcie"))
            leaf = next(u for u in g.successors(v) if u.startswith("leaf"))
            out[v] = (d["gpu"], switch, g.edges[v, leaf]["bandwidth"], g.edges[v, leaf]["latency"])
    return out


def test_the_presets_are_the_instances_as_aws_and_the_plugin_describe_them():
    """p4d: 4 x 100 Gb/s EFA, one per PCIe switch of two GPUs (the plugin's p4d-24xl-topo.xml), PCIe Gen3 as
    that file states it (12 GB/s); p5 / p5en: one NCCL device of 400 Gb/s per GPU (the plugin groups a GPU's
    4 x 100 / 2 x 200 Gb/s rails), behind the GPU's Gen5 switch; a NIC-to-NIC hop costs the plugin's measured
    2-node latency (20 us P5, 18 us P5en; P5's for p4d)."""
    p4d = hgx(2, "aws-p4d")
    nics = _nics(p4d)
    assert len(nics) == 4 and p4d.graph["nics_per_host"] == 4
    assert {v: (gpu, sw) for v, (gpu, sw, _, _) in nics.items()} == {
        "h0:nic0": ("h0:gpu0", "h0:pcie0"),
        "h0:nic1": ("h0:gpu2", "h0:pcie1"),
        "h0:nic2": ("h0:gpu4", "h0:pcie2"),
        "h0:nic3": ("h0:gpu6", "h0:pcie3"),
    }
    assert p4d.edges["h0:gpu1", "h0:pcie0"]["bandwidth"] == 12e9  # GPU 1 shares GPU 0's switch and NIC
    assert {(bw, lat) for _, _, bw, lat in nics.values()} == {(12.5e9, 10e-6)}
    assert (p4d.graph["gpu_arch"], p4d.graph["cpu_vendor"], p4d.graph["nvls"]) == ("sm80", "intel", False)
    assert (p4d.graph["net"], p4d.graph["efa_platform"], p4d.graph["efa_plugin"]) == ("efa", "p4d", "1.21.1")
    for preset, gpu, cpu, latency in (("aws-p5", "h100", "amd", 10e-6), ("aws-p5en", "h200", "intel", 9e-6)):
        g = hgx(2, preset)
        nics = _nics(g)
        assert len(nics) == 8
        assert all(gpu_of == f"h0:gpu{k}" and sw == f"h0:pcie{k}" for k, (gpu_of, sw, _, _) in enumerate(nics.values()))
        assert {(bw, lat) for _, _, bw, lat in nics.values()} == {(50e9, latency)}
        assert g.edges["h0:gpu0", "h0:pcie0"]["bandwidth"] == 48e9 and g.nodes["h0"]["nvls"]
        assert g.graph["cpu_vendor"] == cpu and g.graph["efa_platform"] == preset[4:]
    # a cross-host path pays two NIC links: the plugin's figure
    route = Cluster(hgx(2, "aws-p5")).alpha_beta(0, 8)[0]
    assert route == pytest.approx(20e-6 + 2 * 0.1e-6, rel=0.05)


def test_net_and_plugin_options_are_checked():
    assert "net" not in hgx(2, "dgx-h100").graph  # the InfiniBand presets are as they were
    assert "net" not in hgx(2, "aws-p5", net="ib").graph
    assert hgx(2, "aws-p4d", efa_plugin="v1.7.3-aws").graph["efa_plugin"] == "1.7.3"
    with pytest.raises(TopologyError, match="net=efa needs an AWS preset"):
        hgx(2, "dgx-h100", net="efa")
    with pytest.raises(ConfigError, match="not a 1.x release"):
        hgx(2, "aws-p5", efa_plugin="abc")
    with pytest.raises(TopologyError, match="efa_plugin is the aws-ofi-nccl release of net=efa"):
        hgx(2, "dgx-h100", efa_plugin="1.7.0")


def test_the_plugin_reports_its_latency_and_protocol_by_release():
    """src/platform-aws.c(pp) of aws-ofi-nccl tag by tag (sim.nccl.efa's docstring)."""
    v = efa.parse_plugin
    assert [efa.reported_latency("p4d", v(x)) for x in ("1.1.5", "1.2.0", "1.6.0", "1.7.0", "1.21.1")] == [
        0.0,
        150.0,
        150.0,
        75.0,
        75.0,
    ]
    assert [efa.reported_latency("p5en", v(x)) for x in ("1.7.0", "1.13.0", "1.14.2", "1.15.0")] == [150, 75, 75, 35]
    assert not efa.simple_only("p4d", v("1.5.0")) and "p4d" in efa.simple_only("p4d", v("1.6.0"))
    assert (
        efa.simple_only("p5", v("1.6.0"))
        and efa.simple_only("p5", v("1.7.2"))
        and not efa.simple_only("p5", v("1.7.3"))
    )
    assert efa.simple_only("p5en", v("1.12.0")) and not efa.simple_only("p5en", v("1.13.0"))
    assert "corrupt data" in efa.simple_only("p4d")


def _p4d(tuning_version: str | None = None, **kw):
    return tuner.describe(Cluster(hgx(2, "aws-p4d", **kw)), 16)


@pytest.mark.parametrize(
    "release, algo, proto, with_plugin, without",
    [
        # 2.30.7 (from 2.18.1: hwLat[NET] + latencyInter, + latencyInter again for Simple):
        # Tree/Simple = base 8.4 + 2 x ((ppn - 1) x NVLink 4 + log2(2) x (NET 14 + 2 x 75)) = 8.4 + 2 x (28 + 164)
        ("2.30.7", "tree", "simple", 392.4, 92.4),
        # Tree/LL128 = 14 + 2 x (7 x 1.25 + (8.5 + 75)); without: 14 + 2 x (8.75 + 8.5)
        ("2.30.7", "tree", "ll128", 198.5, 48.5),
        # Ring/Simple = 8.4 + (30 - 2) x max(NVLink 3.4, net overhead 1 x 3) + 2 x (14 + 150) = 431.6, x 1.4
        # (ncclTopoGetAlgoTime's ring "plateau": 1 MiB / (16 channels x 16 ranks) >= 64 B); without: 131.6 x 1.4
        ("2.30.7", "ring", "simple", 604.24, 184.24),
        # 2.14.3 (2.12.7-2.17.1: latencyInter in place of hwLat[NET]): Tree/Simple = 0 + 2 x (7 x 28 + 75)
        ("2.14.3", "tree", "simple", 542.0, 448.0),
        # 2.10.3 (not read): 2 x (7 x 28 + 28) either way
        ("2.10.3", "tree", "simple", 448.0, 448.0),
    ],
)
def test_the_tuner_prices_the_plugins_latency_as_each_release_does(release, algo, proto, with_plugin, without):
    """tuning.cc ncclTopoTuneModel's latency for one size (1 MiB) on 2 x p4d with the newest plugin (75 us)
    and without it, computed by hand from each release's formula and tables (the comments give the sums)."""
    sys_ = replace(_p4d(), simple_only="")  # (the prices of every protocol: what the plugin forces aside)
    assert sys_.net_latency == 75.0
    tuning = tuning_for(parse_version(release))[0]
    c = tuner.candidates(sys_, 2**20, {algo}, {proto}, tuning)[0]
    plain = tuner.candidates(replace(sys_, net_latency=0.0, simple_only=""), 2**20, {algo}, {proto}, tuning)[0]
    assert c.latency_us == pytest.approx(with_plugin)
    assert plain.latency_us == pytest.approx(without)
    assert c.plugin_latency_us == pytest.approx(with_plugin - without)
    assert c.time_us - plain.time_us == pytest.approx(with_plugin - without)  # the bandwidth term is the same


def test_the_plugins_latency_is_priced_not_charged():
    """latencyInter steers the pick; the fixed cost charged before the data moves leaves it out (the EFA hop
    is the simulated links' latency): a 1 MiB Tree/Simple on 2 x p4d with plugin 1.21.1 (75 us) takes the
    time it takes with plugin 1.1.5 (none), to the rounding."""
    new = simulate("hgx:hosts=2,preset=aws-p4d", "allreduce", "nccl:algo=tree,proto=simple", 2**20)
    old = simulate("hgx:hosts=2,preset=aws-p4d,efa_plugin=1.1.5", "allreduce", "nccl:algo=tree,proto=simple", 2**20)
    assert new.time_s == pytest.approx(old.time_s, rel=1e-12)
    from sim.algorithms import get_algorithm

    algo = get_algorithm("allreduce", "nccl:algo=tree,proto=simple")
    cluster = Cluster(hgx(2, "aws-p4d"))
    c = algo.choice(16, 2**20, cluster)
    assert algo.fixed_cost(16, 2**20, cluster, c) == pytest.approx((392.4 - 300.0) * 1e-6)


def test_simple_only_where_the_plugin_sets_it():
    """p4d with a plugin from 1.6.0: every candidate and every pick is Simple (all-reduce, all-gather);
    with plugin 1.5.0, and on p5, LL128 is NCCL's pick at 1 MiB."""
    sys_ = _p4d()
    assert {c.protocol for c in tuner.candidates(sys_, 2**20)} == {"simple"}
    assert tuner.pick(sys_, 2**20).protocol == "simple"
    from sim.nccl import agrs

    assert {c.protocol for c in agrs.candidates(sys_, 2**20)} == {"simple"}
    assert tuner.pick(_p4d(efa_plugin="1.5.0"), 2**20).protocol == "ll128"
    one = tuner.describe(Cluster(hgx(1, "aws-p4d")), 8)  # the plugin loads at NCCL's init on one host too
    assert one.simple_only and {c.protocol for c in tuner.candidates(one, 2**20)} == {"simple"}
    p5 = tuner.describe(Cluster(hgx(2, "aws-p5")), 16)
    assert not p5.simple_only and tuner.pick(p5, 2**20).protocol == "ll128"
    with pytest.raises(AlgorithmError, match="protocol ll128 cannot run here: aws-ofi-nccl sets NCCL_PROTO=simple"):
        simulate("hgx:hosts=2,preset=aws-p4d", "allreduce", "nccl:proto=ll128", 2**20)


def test_cli_shows_simple_picks_and_refuses_ll128_on_p4d_in_one_line():
    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "collsim", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
        )

    out = cli("simulate", "-t", "hgx:preset=aws-p4d,hosts=2", "-a", "nccl", "--sizes", "8:1GiB:4096")
    assert out.returncode == 0, out.stderr
    picks = [line for line in out.stdout.splitlines() if line.startswith("#   NCCL: ")]
    assert len(picks) == 3 and all("/Simple, " in line for line in picks)
    bad = cli("simulate", "-t", "hgx:preset=aws-p4d,hosts=2", "-a", "nccl:proto=ll128", "--size", "1MiB")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "aws-ofi-nccl sets NCCL_PROTO=simple on p4d" in bad.stderr


#: excerpts of published posts (the held-out EFA logs' sources, docs/nccl.md "AWS EFA")
P4D_2021 = (
    "[1,0]<stdout>:nccl-tests-efa-16-worker-0:25:25 [0] NCCL INFO NET/OFI Running on P4d platform, Setting "
    "NCCL_TOPO_FILE environment variable to /opt/aws-ofi-nccl/install/share/aws-ofi-nccl/xml/p4d-24xl-topo.xml\n"
    "[1,0]<stdout>:nccl-tests-efa-16-worker-0:25:25 [0] NCCL INFO NET/OFI Selected Provider is efa\n"
    "[1,0]<stdout>:nccl-tests-efa-16-worker-0:25:25 [0] NCCL INFO Using network AWS Libfabric\n"
)
P5_2025 = (
    "2: p5-dy-gpu-3:60823:61204 [2] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0\n"
    "2: p5-dy-gpu-3:60823:61204 [2] NCCL INFO NET/OFI Using Libfabric version 1.22\n"
)
G4DN_2022 = "[1,0]<stdout>:test-nccl-efa-worker-0:21:21 [0] NCCL INFO NET/OFI Using aws-ofi-nccl 1.5.0aws\n"
SLINGSHOT = (
    "NCCL INFO NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)\nNCCL INFO Using network AWS Libfabric\n"
)


def test_the_reader_recognises_efa_runs_in_real_posts():
    assert stated_efa(P4D_2021) == (None, "1.1.3")
    assert stated_efa(P5_2025) == (None, "1.14.0")
    assert stated_efa(G4DN_2022) == (None, "1.5.0")
    assert stated_efa("#% HARDWARE (as stated): 2x p4de.24xlarge (AWS: 8x A100 80GB, 4x 100 Gbps EFA)") == ("p4d", None)
    assert stated_efa("#% VERSIONS: EFA installer 1.28.0, aws-ofi-nccl 1.7.3-aws, NCCL 2.18.5\n#% two p5.48xlarge") == (
        "p5",
        "1.7.3",
    )
    assert stated_efa('-x FI_PROVIDER="efa" -x FI_EFA_USE_DEVICE_RDMA=1 ./all_reduce_perf') == (None, None)
    assert stated_efa(SLINGSHOT) is None  # libfabric over HPE Slingshot, not EFA
    assert stated_efa("#% 2x DGX H100, 8x 400 Gb/s InfiniBand") is None


ROWS = """\
0: #                                                              out-of-place                       in-place
0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
0:      1048576        262144     float     sum      -1    309.4    3.39    6.35      0    307.3    3.41    6.40      0
0:   1073741824     268435456     float     sum      -1    26217   40.96   76.79      0    26194   40.99   76.86      0
0:   2147483648     536870912     float     sum      -1    51406   41.78   78.33      0    51406   41.77   78.33      0
"""


def test_the_log_reader_predicts_efa_runs_on_the_aws_presets(tmp_path):
    """An EFA log is predicted on its instance's preset with the plugin it states; the NIC figure of the
    header does not override the instance's."""
    import nccl_logs

    p4de = tmp_path / "a100-aws-p4de-2node.txt"
    p4de.write_text("#% HARDWARE: 2x p4de.24xlarge, 400 Gbps EFA; aws-ofi-nccl 1.8.1, NCCL 2.20.3\n" + ROWS)
    log = nccl_logs.parse_log(p4de)
    g = nccl_logs.topology(log)
    assert log.efa == ("p4d", "1.8.1") and (log.hosts, log.gpu, log.nccl) == (2, "a100", "2.20.3")
    assert g.graph["efa_platform"] == "p4d" and g.graph["efa_plugin"] == "1.8.1" and g.graph["nics_per_host"] == 4
    assert "EFA: aws-p4d, aws-ofi-nccl 1.8.1" in log.note
    rows = nccl_logs.predict(log, 2**20)
    assert [pick for *_, pick in rows] == ["tree/simple"] * 3
    p5 = tmp_path / "h100-aws-p5-2node.txt"
    p5.write_text(P5_2025 + "#% 2 nodes of 8 H100\n" + ROWS)
    g = nccl_logs.topology(nccl_logs.parse_log(p5))
    assert g.graph["efa_platform"] == "p5" and g.graph["efa_plugin"] == "1.14.0" and g.graph["nics_per_host"] == 8
    ib = tmp_path / "h100-ib-2node.txt"
    ib.write_text("#% 2 nodes of 8 H100, 8x 400 Gb/s InfiniBand\n" + ROWS)
    assert "net" not in nccl_logs.topology(nccl_logs.parse_log(ib)).graph


@pytest.mark.parametrize(
    "preset, spec, closed",
    [
        # 8 rings on 2 x p4d: the ring's busbw is the hosts' 4 NICs, each behind a PCIe link of 12 GB/s
        ("aws-p4d", "nccl:algo=ring,proto=simple", 4 * 12.0),
        # 8 rings on 2 x p5: 8 NCCL devices behind Gen5 links of 48 GB/s (as 2 x DGX H100)
        ("aws-p5", "ring:channels=8", 8 * 48.0),
        ("aws-p5en", "ring:channels=8", 8 * 48.0),
    ],
)
def test_uncongested_rings_reach_the_closed_form(preset, spec, closed):
    """At 8 GiB the fill is under 2% of the time: the rings' busbw is the PCIe links' bound (every ring has a
    NIC and its PCIe link to itself each way)."""
    r = simulate(f"hgx:hosts=2,preset={preset}", "allreduce", spec, 2**33)
    assert 0.98 * closed < r.busbw_GBps <= closed * (1 + 1e-9)
