"""The quirks of the fifth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A fifth held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py's hardware inference)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

#: OCI's GB200 README: the launcher's `kubectl logs --tail=20`, no header and no rank lines, the MPIJob's
#: mpirun (NCCL_MNNVL_ENABLE=1) above it; 2 workers x 4 GPUs in one NVLink domain
GB200_TAIL = """\
                -x NCCL_MNNVL_ENABLE=1 \\
                -x NCCL_IB_DISABLE=1 \\
                -np $NP \\
                /workspace/nccl-tests/build/all_reduce_perf -b 8 -e 32G -f 2 -g 1
nccl-test-worker-0:60:109 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
  8589934592    2147483648     float     sum      -1    17887  480.23  840.41      0    17885  480.29  840.50      0
 17179869184    4294967296     float     sum      -1    35549  483.27  845.72      0    35568  483.01  845.27      0
nccl-test-worker-1:60:112 [0] NCCL INFO comm 0xaf585d78bbe0 rank 4 nranks 8 cudaDev 0 busId 801000 - Destroy COMPLETE
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 260.778
"""

#: an RL repository's notes: one H100 NVL host and one A100 host, `-g 8`; the test timed out before a row
MIXED_HEAD = """\
mpirun --verbose -host $MASTER_IP,$WORKER_IP /workspace/nccl-tests/build/all_reduce_perf -b 8 -e 1M -f 2 -g 8
# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 147147 on 6e094e9a088e device  0 [0000:2d:00] NVIDIA H100 NVL
#  Rank  1 Group  0 Pid 147147 on 6e094e9a088e device  1 [0000:3a:00] NVIDIA H100 NVL
#  Rank  2 Group  0 Pid  99094 on 2bbc82db84d9 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  99094 on 2bbc82db84d9 device  1 [0000:0f:00] NVIDIA A100-SXM4-80GB
6e094e9a088e:147147:147205 [0] NCCL INFO ncclCommInitRank comm 0x5573b2f05680 rank 0 nranks 4 cudaDev 0 - Init START
6e094e9a088e:147147:147173 [0] NCCL INFO socketStartConnect: connect returned Connection timed out, retrying (1/34)
"""
ROWS = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    85.58   12.25   18.38      0    84.50   12.41   18.61      0
"""


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_multi_node_nvlink_run_that_names_no_gpu_is_refused(tmp_path):
    """OCI's GB200 post names no GPU (no header, no rank lines): it was predicted as 2 A100 hosts ("GPU not
    named: A100 assumed", 600% off). NCCL_MNNVL_ENABLE=1, or NCCL's `MNNVL 1` comm line, says it ran NVLink
    across trays, which hgx does not build."""
    with pytest.raises(nccl_logs.LogError, match=r"a multi-node NVLink run \('NCCL_MNNVL_ENABLE=1'\): a GB200"):
        nccl_logs.parse_log(_log(tmp_path, "gb200-2node.txt", GB200_TAIL))
    info = GB200_TAIL.replace("-x NCCL_MNNVL_ENABLE=1", "-x NCCL_CUMEM_ENABLE=1") + (
        "nccl-test-worker-0:60:109 [0] NCCL INFO comm 0xb39a rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 1\n"
    )
    with pytest.raises(nccl_logs.LogError, match=r"a multi-node NVLink run \('MNNVL 1'\)"):
        nccl_logs.parse_log(_log(tmp_path, "gb200-info.txt", info))
    # NCCL's comm line of a run without it (AWS g7e: `MNNVL 0`) does not refuse: only the GPU is missing
    plain = GB200_TAIL.replace("-x NCCL_MNNVL_ENABLE=1", "-x NCCL_CUMEM_ENABLE=1") + "x INFO comm 0x1 MNNVL 0\n"
    assert nccl_logs.parse_log(_log(tmp_path, "plain-2node.txt", plain)).note == "GPU not named: A100 assumed"


def test_a_log_that_stopped_before_its_first_row_says_so(tmp_path):
    """The mixed-host post printed its header and device lines, then timed out: it was refused as "not an
    nccl-tests log"; it is one, without rows, and the refusal says so."""
    with pytest.raises(
        CalibrationError,
        match=r"an nccl-tests log without result rows \(the test printed its header "
        r"and device lines but no size: it failed or timed out before the first\)",
    ):
        read_samples(str(_log(tmp_path, "mixed.txt", MIXED_HEAD)))
    with pytest.raises(CalibrationError, match="not an nccl-tests log"):  # text with neither stays what it was
        read_samples(str(_log(tmp_path, "notes.txt", "iperf3 -c $MASTER_NODE_IP -t 10\n95 Mbits/sec\n")))


def test_hosts_of_two_gpu_models_are_refused(tmp_path):
    """Hosts of two GPU models (an H100 NVL host and an A100 host in one run) were read as the first device
    line's GPU; hgx builds hosts of one model, so the log is refused naming both."""
    text = MIXED_HEAD.replace("NVIDIA H100 NVL", "NVIDIA H100 80GB HBM3") + ROWS
    with pytest.raises(
        nccl_logs.LogError,
        match=r"the device lines name 2 GPU models \('NVIDIA H100 80GB HBM3', 'NVIDIA A100-SXM4-80GB'\)",
    ):
        nccl_logs.parse_log(_log(tmp_path, "mixed-2node.txt", text))
    one = text.replace("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")
    assert nccl_logs.parse_log(_log(tmp_path, "h100-2node.txt", one)).gpu == "h100"
    # one model named two ways (another driver's name on the second host, a device line cut short): one model
    other = text.replace("NVIDIA A100-SXM4-80GB", "H100 80GB")
    assert nccl_logs.parse_log(_log(tmp_path, "h100-names-2node.txt", other)).gpu == "h100"


def test_a_summary_table_with_a_column_before_size_is_refused_by_name(tmp_path):
    """NVIDIA/nccl#527 posts one 1 GiB row per p4dn instance count under a header whose first column is
    "p4dn": no row reads as nccl-tests' (size first), and it was refused as "not an nccl-tests log"; the
    refusal now names the extra column (rows of several runs are not one log's)."""
    text = """\
 p4dn        size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
              (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)

   1   1073741824     268435456     float     sum   8142.6  131.87  230.77  2e-07   8141.2  131.89  230.81  2e-07
   2   1073741824     268435456     float     sum    35215   30.49   57.17  4e-07    35198   30.51   57.20  4e-07
"""
    with pytest.raises(CalibrationError, match=r"a table with a column 'p4dn' before size \(a post's own summary"):
        read_samples(str(_log(tmp_path, "p4dn.txt", text)))


def test_a_log_of_more_hosts_than_the_topology_spreads_its_ranks_on_is_refused(tmp_path):
    """The GB10 and the AWS g7e posts ran 2 ranks on 2 hosts (one GPU each); `calibrate --from` on an 8-GPU
    host topology put both ranks on one host and fitted the network's 184 Gbit/s to NVLink (intra-host 0.062).
    The rank lines' hosts must be as many as the topology's hosts under the ranks."""
    from validate.calibration import fit_calibration

    text = """\
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 17179869184 maxBytes 17179869184 step: 2(factor) warmup iters: 1 iters: 20
#  Rank  0 Group  0 Pid  37755 on promaxgb10-4c75 device  0 [000f:01:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  30808 on promaxgb10-4c99 device  0 [000f:01:00] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
 17179869184    2147483648     float    none      -1   374425   45.88   22.94       0   373792   45.96   22.98       0
"""
    samples, source = read_samples(str(_log(tmp_path, "two-hosts.txt", text)))
    assert samples[0].hosts == 2
    with pytest.raises(CalibrationError, match=r"ran its 2 ranks on 2 hosts, but the topology puts them on 1 host"):
        fit_calibration(samples, "hgx:hosts=2,preset=dgx-h100", [source])
    cal = fit_calibration(samples, "hgx:hosts=2,preset=dgx-h100,gpus_per_host=1", [source])
    assert "same-switch" in cal.classes and "intra-host" not in cal.classes


def test_a_busbw_in_gigabytes_is_not_read_as_the_nics_speed():
    """The OCI Horovod header names BM.GPU4.8 (16 x 100 Gb/s RoCE) and quotes the post's row "222.88 GB/s";
    the bare-speed pattern (case-insensitive) read the busbw's GB/s as the NICs' Gb/s, so the shape's NICs
    were never reached: 8 x 200 Gb/s were built and the 2-node run was predicted 16.4% slow (5.6% now)."""
    header = "#% 2x BM.GPU4.8 (8x NVIDIA A100-SXM4-40GB), 16 RDMA ports a node; the row (90330 us, 222.88 GB/s)"
    assert nccl_logs.stated_nics(header, 8, "a100") == (16, 100.0)
    assert nccl_logs.stated_nics("#% eight 400 GB/s links") == (None, None)  # gigabytes, in any case
    assert nccl_logs.stated_nics("#% eight 400 Gb/s ConnectX-7") == (8, 400.0)
    assert nccl_logs.stated_nics("#% 400Gbps InfiniBand") == (None, 400.0)
    assert nccl_logs.stated_nics("#% 3.2 Tbps") == (-1, 3200.0)


def test_nccl_2_24s_per_function_algorithm_lists_are_read(tmp_path):
    """A Chinese cluster note ran NCCL_ALGO=allreduce:Tree (NCCL 2.24+'s per-function syntax, after plain
    NCCL_ALGO=Tree broke its all-gather); the importer read "allreduce" as an algorithm and refused the log.
    A value maps functions to lists: the run's own collective's list applies, else the unprefixed one."""
    rows = """\
#  Rank  0 Group  0 Pid  1 on n1 device  0 [0x0f] NVIDIA H100 80GB HBM3
#  Rank  8 Group  0 Pid  9 on n2 device  0 [0x0f] NVIDIA H100 80GB HBM3
#  Rank 15 Group  0 Pid 16 on n2 device  7 [0x0f] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  1073741824     268435456     float     sum      -1   4484.9  239.41  448.90      0   4470.2  240.20  450.37      0
"""
    cases = {
        "NCCL_ALGO=allreduce:Tree": "nccl:algo=tree",
        "NCCL_ALGO='ring;allreduce:tree,ring' NCCL_PROTO=allgather:LL": "nccl:algo=tree|ring",
        "NCCL_ALGO=allgather:ring;allreduce:^NVLS,NVLSTree": "nccl:algo=^nvls|nvls-tree",
        "NCCL_ALGO=allgather:Ring": "nccl",
    }
    for setting, spec in cases.items():
        text = f"mpirun -np 16 -x {setting} ./build/all_reduce_perf -b 1G -e 1G -g 1\n" + rows
        samples, _ = read_samples(str(_log(tmp_path, "algo.txt", text)))
        assert samples[0].algorithm == spec, setting
