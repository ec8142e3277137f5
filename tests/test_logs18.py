"""The quirks of the eighteenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "An eighteenth held-out
set"): each test feeds a short excerpt to the log reader (validate.calibration's import and its fit, and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CalibrationError
from validate.calibration import read_samples
from validate.calibration.nccl_fit import check_gpu

#: a server report's all-reduce of 8 RTX 5880 Ada cards (PCIe, no NVLink): the GPU is named in the prose only,
#: the table has no rank line above it
NAMED_IN_PROSE = """\
The server is equipped with 8 x NVIDIA RTX 5880 Ada (PCIe); it has no NVLink Bridge or NVSwitch.

Test command: `./all_reduce_perf -b 1M -e 1G -f 2 -g 8`

#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
    67108864      16777216     float     sum      -1  9839.20    6.82   11.94       0  9306.81    7.21   12.62       0
   134217728      33554432     float     sum      -1  19117.3    7.02   12.29       0  19302.3    6.95   12.17       0
# Avg bus bandwidth    : 12.3406
"""


def test_a_gpu_named_only_in_the_prose_that_hgx_does_not_build_is_refused(tmp_path):
    """A log without device lines whose text names an NVIDIA board the GPU list does not know (RTX 5880 Ada) was
    predicted as an HGX A100 ("GPU not named: A100 assumed"), 94% off; the name is read now and the log refused,
    one line. A log that names no GPU at all is still taken as an A100."""
    path = tmp_path / "rtx5880ada-1node.txt"
    path.write_text(NAMED_IN_PROSE)
    with pytest.raises(nccl_logs.LogError, match=r"names 'NVIDIA RTX 5880 Ada' \(no device line does\), a GPU hgx"):
        nccl_logs.parse_log(path)
    path.write_text(NAMED_IN_PROSE.replace("NVIDIA RTX 5880 Ada (PCIe)", "PCIe GPUs"))
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.gpu, log.note) == (8, "a100", "GPU not named: A100 assumed")


#: one run across two hosts of different GPUs (a lab's violet1 / violet2), a table of one side with its root column
TWO_MODELS = """\
mpirun -np 2 -H violet1:1,violet2:1 -x NCCL_IB_HCA=mlx5_0 ./build/all_reduce_perf -b 8 -e 256M -f 2 -g 1

# Using devices
#  Rank  0 Group  0 Pid 751435 on    violet1 device  0 [0000:d8:00] NVIDIA H100 PCIe
#  Rank  1 Group  0 Pid 854663 on    violet2 device  0 [0000:a8:00] NVIDIA A100-PCIE-40GB

#       size         count      type   redop    root     time   algbw   busbw  #wrong
     4194304       1048576     float     sum      -1   464.75    9.02    9.02       0
    16777216       4194304     float     sum      -1  1793.42    9.35    9.35       0
   268435456      67108864     float     sum      -1  28400.9    9.45    9.45       0
"""


def test_device_lines_of_two_gpu_models_in_one_run_are_refused_by_the_fit(tmp_path):
    """The importer kept no GPU where the device lines name two models, so `calibrate --from` fitted a run over an
    H100 PCIe host and an A100 PCIe host to an hgx topology of either GPU (exit 0); both names are kept now and the
    fit refuses them, as the benchmark does. A topology that states no GPU is not checked."""
    path = tmp_path / "mixed-2node.txt"
    path.write_text(TWO_MODELS)
    samples, _ = read_samples(str(path))
    assert (samples[0].ranks, samples[0].hosts, len(samples)) == (2, 2, 3)
    assert samples[0].gpu == "NVIDIA A100-PCIE-40GB + NVIDIA H100 PCIe"
    for gpu in ("h100", "a100"):
        with pytest.raises(
            CalibrationError, match=r"name 2 GPU models \('NVIDIA A100-PCIE-40GB', 'NVIDIA H100 PCIe'\)"
        ):
            check_gpu(samples, Cluster(f"hgx:hosts=2,gpus_per_host=1,gpu={gpu},gpus_per_pcie_switch=1"))
    with pytest.raises(nccl_logs.LogError, match=r"the device lines name 2 GPU models"):
        nccl_logs.parse_log(path)
    one = TWO_MODELS.replace("NVIDIA A100-PCIE-40GB", "NVIDIA H100 PCIe")
    path.write_text(one)
    samples, _ = read_samples(str(path))
    assert samples[0].gpu == "NVIDIA H100 PCIe"
    check_gpu(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=h100,gpus_per_pcie_switch=1"))  # one card a host
