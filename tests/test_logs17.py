"""The quirks of the seventeenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A seventeenth held-out
set"): each test feeds a short excerpt to the log reader (validate.calibration's import and its fit, and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CalibrationError
from validate.calibration import read_samples
from validate.calibration.fit import fit_calibration
from validate.calibration.nccl_fit import check_gpu

#: two hosts of one A100 PCIe card each (thomaslie210/NCCL_Test_Results, n013 / n014), one HCA a host
ONE_CARD_A_HOST = """\
# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 12884901888 step: 524288000(bytes) warmup iters: 1 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid 770458 on       n013 device  0 [0000:81:00] NVIDIA A100-PCIE-40GB
#  Rank  1 Group  0 Pid 224660 on       n014 device  0 [0000:81:00] NVIDIA A100-PCIE-40GB
#
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1  78738.3   13.64   13.64       0  78694.5   13.64   13.64       0
  1598029824     399507456     float     sum      -1   117721   13.57   13.57       0   117272   13.63   13.63       0
"""


def test_a_pcie_card_on_each_host_is_read_when_a_host_runs_one(tmp_path):
    """One PCIe card a host crosses no link inside a host: its missing NVSwitch does not matter, and the run is
    a two-host run over the network as hgx builds it (one GPU a host). Both readers refused it as "a PCIe card
    without an NVSwitch"; two cards on one host still are."""
    path = tmp_path / "one-card-a-host.txt"
    path.write_text(ONE_CARD_A_HOST)
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpu) == (2, 2, "a100")
    samples, _ = read_samples(str(path))
    assert (samples[0].ranks, samples[0].hosts) == (2, 2)
    check_gpu(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=a100,gpus_per_pcie_switch=1"))  # not refused
    both = ONE_CARD_A_HOST.replace("on       n014 device  0", "on       n013 device  1")
    path.write_text(both)
    with pytest.raises(nccl_logs.LogError, match=r"A100-PCIE-40GB is a PCIe card without an NVSwitch"):
        nccl_logs.parse_log(path)
    samples, _ = read_samples(str(path))
    with pytest.raises(CalibrationError, match=r"a PCIe card without an NVSwitch"):
        check_gpu(samples, Cluster("hgx:hosts=1,gpus_per_host=2,gpu=a100"))


#: a broadcast on the same two hosts (its rows go through the closed forms, not NCCL's schedules)
BROADCAST = "# Collective test starting: broadcast_perf\n" + ONE_CARD_A_HOST.replace(
    "float     sum      -1", "float    none       0"
)


def test_a_whole_collective_fit_checks_the_logs_hosts_and_gpu(tmp_path):
    """A table the closed forms fit (a broadcast) was fitted to any topology: the 2-host A100 PCIe run on one host
    of 2 H100s, exit 0, the network's times read as NVLink's. It is checked now as NCCL's schedules are: the hosts
    the rank lines name, then the GPU they name."""
    path = tmp_path / "broadcast.txt"
    path.write_text(BROADCAST)
    samples, source = read_samples(str(path))
    assert samples[0].collective == "broadcast" and samples[0].hosts == 2
    with pytest.raises(CalibrationError, match=r"ran its 2 ranks on 2 hosts, but the topology puts them on 1 host"):
        fit_calibration(samples, Cluster("hgx:hosts=1,gpus_per_host=2,gpu=a100"), [source])
    with pytest.raises(CalibrationError, match=r"name 'NVIDIA A100-PCIE-40GB', but the topology builds H100 GPUs"):
        fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=h100"), [source])
    got = fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=a100,gpus_per_pcie_switch=1"), [source])
    assert "same-switch" in got.classes
