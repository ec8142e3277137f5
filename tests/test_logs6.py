"""The quirks of the sixth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A sixth held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py's hardware inference)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

#: a Chinese GKE A4 README: its rows stop at busbw (no #wrong, no in-place side), its rank lines name no host
B200_1NODE = """\
# nThread 1 nGpus 8 minBytes 8388608 maxBytes 17179869184 step: 2(factor)
#
# Using devices
#  Rank  0 Group  0 Pid 221599 device  0 [0000:8f:00] NVIDIA B200
#  Rank  7 Group  0 Pid 221599 device  7 [0000:cc:00] NVIDIA B200
#
#       size         count      type   redop    root     time   algbw   busbw
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
   536870912     134217728     float     sum      -1   1335.6  401.96  703.44
  1073741824     268435456     float     sum      -1   2576.7  416.72  729.25
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 587.371 GB/s
"""

#: its 2-node run: rank lines without Pid, the host written after the device, "..." between them
B200_2NODE = """\
# nThread 1 nGpus 1 minBytes 8388608 maxBytes 17179869184 step: 2(factor)
#
# Using devices (across 2 nodes)
#  Rank  0 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 0)
#  Rank  1 Group  0 device  1 [0000:90:00] NVIDIA B200 (node 0)
#  ...
#  Rank  8 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 1)
#  ...
#  Rank 15 Group  0 device  7 [0000:cc:00] NVIDIA B200 (node 1)
#
#       size         count      type   redop    root     time   algbw   busbw
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
  8589934592    2147483648     float     sum      -1    23842  360.29  675.54
 17179869184    4294967296     float     sum      -1    47062  365.05  684.46
"""


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rows_cut_after_busbw_and_rank_lines_without_a_host_are_read(tmp_path):
    """The GKE A4 README printed size ... time algbw busbw only: no row was read ("an nccl-tests log without
    result rows ... it failed or timed out before the first"). A row whose algbw agrees with size / time is
    read without its #wrong and in-place columns; `Pid N device ...` (no `on HOST`) is a rank line."""
    samples, _ = read_samples(str(_log(tmp_path, "b200.txt", B200_1NODE)))
    assert [(s.size, s.ranks, round(s.time_s * 1e6, 1)) for s in samples] == [
        (536870912, 8, 1335.6),
        (1073741824, 8, 2576.7),
    ]
    log = nccl_logs.parse_log(_log(tmp_path, "b200-a4.txt", B200_1NODE))
    assert (log.ranks, log.hosts, log.gpu) == (8, 1, "b200")


def test_rank_lines_that_write_the_host_after_the_device_are_read(tmp_path):
    """The 2-node run's lines `#  Rank  8 Group  0 device  0 [...] NVIDIA B200 (node 1)` have no Pid and put
    the host last: they were not rank lines, and nothing said the 16 ranks ran on 2 hosts."""
    samples, _ = read_samples(str(_log(tmp_path, "b200.txt", B200_2NODE)))
    assert (samples[0].ranks, samples[0].hosts) == (16, 2)
    log = nccl_logs.parse_log(_log(tmp_path, "b200-gke.txt", B200_2NODE))  # no -<N>node in the name
    assert (log.ranks, log.hosts, log.gpus_per_host, log.gpu) == (16, 2, 8, "b200")


def test_a_row_cut_by_a_failed_call_is_refused_as_a_failure(tmp_path):
    """NVIDIA/nccl-tests#355: the first row stops at `node0: Test CUDA failure common.cu:389 ...`; the reader
    said "time 'node0:' is not a number". The refusal now says the test failed, and where."""
    text = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 2097152 maxBytes 2097152 step: 0(bytes) warmup iters: 0 iters: 1
#  Rank  0 Group  0 Pid  62767 on node0 device  0 [0000:19:00] NVIDIA H800
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
     2097152        524288     float     sum      -1 node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'
 .. node0 pid 62767: Test failure common.cu:519
"""
    with pytest.raises(
        CalibrationError,
        match=r"the test failed in its first row \(2097152 B: \"Test CUDA failure common.cu:389 'an illegal memory",
    ):
        read_samples(str(_log(tmp_path, "failed.txt", text)))
    # rows before a failure are measurements, as they were (NVIDIA/nccl-tests#322 fails after its 16 GiB row)
    good = "  1048576  262144  float  sum  -1  143.4  7.31  14.17  0  143.1  7.33  14.20  0\n"
    samples, _ = read_samples(
        str(_log(tmp_path, "then-failed.txt", text.replace("     2097152", good + "     2097152")))
    )
    assert [s.size for s in samples] == [1048576]


def test_rows_that_write_sizes_with_units_are_refused_as_not_nccl_tests_output(tmp_path):
    """A Tencent TKE guide's "expected output" writes `#   8M   20  float  sum  -1  0.123 ...` rows (sizes with
    units, commented, "..." for values): it was refused as a test that "failed or timed out before the first"
    row, which is not what it is."""
    text = """\
# nThread 1 nGpus 1 minBytes 8388608 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20
#   Rank  0 Pid ... on nccl-allreduce-test-0 device  0 [0x10] NVIDIA H800
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#         8M            20     float    sum      -1    0.123  68.10  68.10  ...    0.045 186.33 186.33  ...
#       128M            20     float    sum      -1    0.450 298.28 298.28  ...    0.190 706.77 706.77  ...
"""
    with pytest.raises(CalibrationError, match=r"rows that give their size as '8M' \(an illustration"):
        read_samples(str(_log(tmp_path, "expected.txt", text)))


def test_rank_lines_cut_short_do_not_make_hosts_of_the_gpus_they_show(tmp_path):
    """CoreWeave's README lists ranks 0-4 of worker-0 and "..." for a 32-rank run (all-reduce's busbw / algbw):
    5 GPUs a host made 7 hosts of 4 GPUs ("ranks: 32, but the cluster hgx-a100-200g-7 has only 28 GPUs").
    Rank lines that stop short of the run's ranks show at least a host's GPUs, not all of them."""
    lines = "".join(
        f"#   Rank  {r} Pid     3{r} on nccl-test-128-worker-0 device  {r} [0x27] NVIDIA A100-SXM4-80GB\n"
        for r in range(5)
    )
    text = (
        "# nThread 1 nGpus 1 minBytes 4 maxBytes 2147483648 step: 2(factor) warmup iters: 50 iters: 50 validation: 1\n"
        + lines
        + "...\n"
        + "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        + "  4294967296    1073741824     float     sum    72501   59.24  114.78  5e-07    72344   59.37  115.03  5e-07\n"
        + "  8589934592    2147483648     float     sum   143927   59.68  115.64  5e-07   143961   59.67  115.61  5e-07\n"
    )
    log = nccl_logs.parse_log(_log(tmp_path, "coreweave.txt", text))
    assert (log.ranks, log.hosts, log.gpus_per_host) == (32, 4, 8)
    assert log.note == "5 of 32 rank lines: taken as 8 GPUs per host"
    # cut short on hosts of 4 GPUs (ranks 0, 3, 4, 7 of 16 on two hosts named): never fewer hosts than named
    four = "".join(
        f"#  Rank {r} Group  0 Pid 1 on node{r // 4} device  {r % 4} [0x07] NVIDIA A100-SXM4-80GB\n"
        for r in (0, 3, 4, 7)
    )
    rows16 = "  4194304  1048576  float  sum  -1  400.1  10.48  19.65  0  400.0  10.49  19.67  0\n"
    log = nccl_logs.parse_log(_log(tmp_path, "a100-16.txt", "# nThread 1 nGpus 1\n" + four + "...\n" + rows16))
    assert (log.ranks, log.hosts, log.gpus_per_host) == (16, 2, 8)
    three = "".join(  # ranks 0, 4, 8 on three hosts named, device 0 each: 4 hosts of 4, not 2 of 8
        f"#  Rank {r} Group  0 Pid 1 on node{r // 4} device  0 [0x07] NVIDIA A100-SXM4-80GB\n" for r in (0, 4, 8)
    )
    log = nccl_logs.parse_log(_log(tmp_path, "a100-16t.txt", "# nThread 1 nGpus 1\n" + three + "...\n" + rows16))
    assert (log.ranks, log.hosts, log.gpus_per_host) == (16, 4, 4)
    # every rank listed: the hosts are what the lines show (NVIDIA/nccl-tests#311: 4 hosts of 2 GPUs)
    full = "".join(
        f"#  Rank {r} Group  0 Pid 1 on gpu{r // 2} device  {r % 2} [0x07] NVIDIA A100-SXM4-80GB\n" for r in range(8)
    )
    rows = "  4194304  1048576  float  sum  -1  400.1  10.48  18.35  0  400.0  10.49  18.35  0\n"
    log = nccl_logs.parse_log(_log(tmp_path, "a100-4node.txt", "# nThread 1 nGpus 1\n" + full + rows))
    assert (log.ranks, log.hosts, log.gpus_per_host) == (8, 4, 2)
