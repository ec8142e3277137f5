"""HPE Slingshot in the NCCL model: what AWS's NET plugin (aws-ofi-nccl) tells NCCL on libfabric's ``cxi``
provider (sim/nccl/ofi.py), ``hgx``'s ``net=cxi``, and the log reader's Slingshot detection (docs/nccl.md, "HPE
Slingshot: the plugin on cxi")."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sim.cluster import Cluster
from sim.errors import TopologyError
from sim.nccl import efa, ofi, tuner
from sim.nccl.versions import parse_version, tuning_for
from sim.simulate import simulate
from sim.topology import hgx
from validate.calibration.inputs import stated_cxi, stated_efa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import nccl_logs  # noqa: E402


def v(text: str) -> efa.Version:
    return efa.parse_plugin(text)


@pytest.mark.parametrize(
    "release, latency",
    [
        ("1.1.5", 0.0),  # unset: NCCL's 0
        ("1.2.0", 150.0),  # v1.2.0-aws src/nccl_ofi_net.c:1363, every provider
        ("1.5.0", 150.0),  # v1.5.0-aws src/nccl_ofi_net.c:1654
        ("1.6.0", 0.0),  # v1.6.0: 150 only if IS_EFA_PROVIDER
        ("1.7.0", 0.0),  # NET_LATENCY default -1, clamped to 0 off the AWS platform file
        ("1.14.0", 0.0),
        ("1.19.0", 0.0),  # the parameter's default 0.0
        ("1.21.1", 0.0),
    ],
)
def test_the_latency_the_plugin_reports_on_cxi_by_release(release, latency):
    assert ofi.reported_latency("cxi", "", v(release)) == latency


def test_cxi_sets_no_protocol_no_settings_no_tuner_and_reports_the_ports_speed():
    for release in ("1.5.0", "1.6.0", "1.9.1", "1.16.0", "1.19.0", "1.21.1"):
        assert ofi.simple_only("cxi", "", v(release)) == ""
        assert ofi.exported_env("cxi", "", v(release)) == {}
        # no tuner of its own (NCCL_TUNER_PLUGIN is the AWS platform file's), the NIC at the port's speed
        cxi = tuner.describe(Cluster(hgx(2, "dgx-h100", net="cxi", efa_plugin=release)), 16)
        ib = tuner.describe(Cluster(hgx(2, "dgx-h100")), 16)
        assert cxi.efa_platform == "" and cxi.efa_plugin == ""
        assert cxi.nic_bw == ib.nic_bw == 50.0
    with pytest.raises(ValueError, match="'tcp' provider is not modelled"):
        ofi.reported_latency("tcp", "", v("1.21.1"))


def test_efa_through_the_shared_module_is_efa_unchanged():
    """Every figure the EFA path reads through sim.nccl.ofi is sim.nccl.efa's, release by release."""
    releases = [(1, m, p) for m in range(1, 22) for p in (0, 3)]
    for platform in ("p4d", "p5", "p5en"):
        for r in releases:
            assert ofi.reported_latency("efa", platform, r) == efa.reported_latency(platform, r)
            assert ofi.simple_only("efa", platform, r) == efa.simple_only(platform, r)
            assert ofi.exported_env("efa", platform, r) == efa.exported_env(platform, r)
    p5 = tuner.describe(Cluster(hgx(2, "aws-p5", efa_plugin="1.16.3")), 16)
    assert (p5.net_latency, p5.simple_only, p5.efa_platform, p5.efa_plugin) == (75.0, "", "p5", "1.16.3")
    assert (p5.buffsize, p5.nvls_chunksize, p5.nvlstree_max_chunksize) == (8388608, 524288, 524288)
    p4d = tuner.describe(Cluster(hgx(2, "aws-p4d")), 16)
    assert p4d.simple_only.startswith("aws-ofi-nccl sets NCCL_PROTO=simple on p4d")


def _polaris(**kw):
    """2 Polaris-like nodes: 4 A100 without an NVSwitch, 2 x 200 Gb/s NICs a node."""
    return hgx(2, "hgx-a100-4gpu", gpus_per_host=4, nics_per_host=2, nic_bandwidth=25e9, **kw)


def test_net_cxi_gives_nccl_what_infiniband_gives_it_but_for_the_150_us_releases():
    ib = tuner.describe(Cluster(_polaris()), 8)
    new = tuner.describe(Cluster(_polaris(net="cxi")), 8)
    assert new == ib  # 0 us, the port's speed, every protocol, no plugin tuner
    old = tuner.describe(Cluster(_polaris(net="cxi", efa_plugin="1.5.0")), 8)
    assert old == replace(ib, net_latency=150.0)
    assert _polaris(net="cxi", efa_plugin="1.6.0").graph["efa_plugin"] == "1.6.0"
    with pytest.raises(TopologyError, match="net=efa or net=cxi"):
        _polaris(efa_plugin="1.6.0")


def test_the_tuner_prices_a_150_us_plugin_on_slingshot_by_hand():
    """NCCL 2.30.7 (hwLat[NET] + latencyInter, twice for Simple), Tree/Simple at 1 MiB on 2 Polaris-like nodes:
    base 8.4 + 2 x ((ppn - 1) x NVLink 4 + log2(2) x (NET 14 + 2 x 150)) = 8.4 + 2 x (12 + 314) = 660.4 us with
    plugin 1.5.0-aws; 8.4 + 2 x (12 + 14) = 60.4 us with any later one (0 us)."""
    tuning = tuning_for(parse_version("2.30.7"))[0]
    old = tuner.describe(Cluster(_polaris(net="cxi", efa_plugin="1.5.0")), 8)
    new = tuner.describe(Cluster(_polaris(net="cxi")), 8)
    c_old = tuner.candidates(old, 2**20, {"tree"}, {"simple"}, tuning)[0]
    c_new = tuner.candidates(new, 2**20, {"tree"}, {"simple"}, tuning)[0]
    assert c_old.latency_us == pytest.approx(660.4)
    assert c_new.latency_us == pytest.approx(60.4)
    assert c_old.plugin_latency_us == pytest.approx(600.0) and c_new.plugin_latency_us == 0.0


def test_the_simulated_time_over_cxi_is_infinibands():
    spec = "hgx:hosts=2,preset=hgx-a100-4gpu,gpus_per_host=4,nics_per_host=2,nic_bandwidth=200Gbps"
    for size in (2**20, 2**26):
        a = simulate(spec, "allreduce", "nccl", size)
        b = simulate(spec + ",net=cxi,efa_plugin=1.6.0", "allreduce", "nccl", size)
        assert repr(a.time_s) == repr(b.time_s)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("h:1:1 [0] NCCL INFO NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)", ""),
        (
            "h:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 8 nics)\nNET/OFI Using aws-ofi-nccl 1.6.0",
            "1.6.0",
        ),
        ("#% 4 Polaris nodes x 4 A100, HPE Slingshot 11 (cxi, aws-ofi-nccl 1.6.0), 2 NICs/node", "1.6.0"),
        ("#% 8 ALCF Polaris nodes, HPE Slingshot 11; README setup (4): NCCL_NET='AWS Libfabric'", ""),
        ("#% a Cray EX, Slingshot (SS) interconnect, libfabric 1.15.2.0 via the AWS OFI NCCL plugin", ""),
        ("srun -x FI_PROVIDER=cxi all_reduce_perf\nh [0] NCCL INFO Using network AWS Libfabric", ""),
        # Slingshot alone: NCCL without the plugin runs over TCP sockets there
        ("#% 8 ALCF Polaris nodes, HPE Slingshot 11; README setup (1): default settings, 'This will use TCP'", None),
        # EFA is not cxi
        ("h [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\nUsing network AWS Libfabric", None),
        ("#% 2x p5.48xlarge, aws-ofi-nccl 1.16.3", None),
        ("h [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is 10.0.0.0/24", None),
        ("#% 8x H100, 8x 400 Gb/s InfiniBand", None),
    ],
)
def test_detection_from_the_logs_lines(text, expected):
    assert stated_cxi(text) == expected
    if expected is not None:
        assert stated_efa(text) is None


_ROWS = """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{ranks}#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   18.35      0    100.0   10.49   18.35      0
     2097152        524288     float     sum      -1    180.0   11.65   20.39      0    180.0   11.65   20.39      0
     4194304       1048576     float     sum      -1    340.0   12.34   21.59      0    340.0   12.34   21.59      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 20.1
"""


def _write(tmp_path: Path, header: str) -> Path:
    ranks = "".join(
        f"#  Rank {r:2d} Group  0 Pid  {100 + r} on node{r // 4} device  {r % 4} [0x07] NVIDIA A100-SXM4-40GB\n"
        for r in range(8)
    )
    p = tmp_path / "a100-polaris-2node-4gpu.txt"
    p.write_text(header + _ROWS.format(ranks=ranks))
    return p


def test_a_slingshot_log_with_the_plugin_builds_net_cxi_and_says_so(tmp_path):
    head = "#% hardware as stated: 2 ALCF Polaris nodes, HPE Slingshot 11 (cxi, aws-ofi-nccl 1.5.0), 2 NICs/node\n"
    log = nccl_logs.parse_log(_write(tmp_path, head))
    assert log.cxi == "1.5.0" and log.efa is None
    g = nccl_logs.topology(log).graph
    assert (g["net"], g["efa_plugin"], g["nic_bw"]) == ("cxi", "1.5.0", 25e9)
    assert "cxi: aws-ofi-nccl 1.5.0, 150 us reported" in log.note
    plain = nccl_logs.parse_log(_write(tmp_path, "#% hardware as stated: 2 ALCF Polaris nodes, HPE Slingshot 11\n"))
    assert plain.cxi is None and "net" not in nccl_logs.topology(plain).graph
