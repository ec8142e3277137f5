"""The quirks of the seventh held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A seventh held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py's hardware inference)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

#: the rows a 16-rank run printed (busbw / algbw 1.875), under a column header only: no nThread line
ROWS_16 = """\
#       size        count   type  redop  root   time   algbw   busbw  #wrong
  4294967296   1073741824  float   sum    -1  229480  18.72   35.09       0
  8589934592   2147483648  float   sum    -1  458955  18.72   35.09       0
"""


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_post_that_left_its_rows_out_is_refused_as_such(tmp_path):
    """A GKE B200 guide prints the rank lines, `# ... (truncated NCCL output for brevity) ...` and the closing
    `# Avg bus bandwidth : 11.2291`: it was refused as a test that "failed or timed out before the first" row,
    which its closing summary shows it did not."""
    text = """\
# nThread 1 nGpus 1 minBytes 1024 maxBytes 8589934592 step: 2(factor) warmup iters: 50 iters: 100
#  Rank  0 Group  0 Pid   3351 on nccl-gib-test-4w-0 device  0 [0000:97:00] NVIDIA B200
#  Rank  1 Group  0 Pid   3366 on nccl-gib-test-4w-1 device  0 [0000:c4:00] NVIDIA B200

# ... (truncated NCCL output for brevity) ...
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 11.2291
#
"""
    with pytest.raises(
        CalibrationError, match=r"result rows were left out \(the test completed: 'Avg bus bandwidth : 11.2291'"
    ):
        read_samples(str(_log(tmp_path, "truncated.txt", text)))
    # a test that stopped before its first row still says so (no closing summary)
    with pytest.raises(CalibrationError, match=r"failed or timed out before the first"):
        read_samples(str(_log(tmp_path, "stopped.txt", text.split("\n\n")[0] + "\n")))


def test_a_post_with_only_the_column_header_is_an_nccl_tests_log(tmp_path):
    """An OpenShift RoCE guide kept `#  size  count  type  redop  root  time  algbw  busbw  #wrong` and its rows,
    no nThread line, no `out-of-place` line: nccl_logs.py said "not an nccl-tests log"."""
    log = nccl_logs.parse_log(_log(tmp_path, "roce-2node.txt", ROWS_16))
    assert (log.ranks, log.hosts, log.gpu) == (16, 2, "a100")  # 2 from the name; no GPU named: an A100


def test_rows_of_two_runs_are_refused(tmp_path):
    """The same guide put a 4-rank run's 1 GiB row (busbw / algbw 1.497) under the 16-rank run's 8 GiB one; the
    largest row alone set the ranks (16) and the 4-rank row was predicted as a 16-rank one."""
    other = "  1073741824  268435456  float  sum  -1  50047.0  21.45  32.11  0  50156.6  21.41  32.11  0\n"
    with pytest.raises(
        CalibrationError,
        match=r"one run: busbw / algbw is 1.497 at 1073741824 B \(4 ranks\) but 1.874 at 4294967296 B \(16 ranks",
    ):
        read_samples(str(_log(tmp_path, "two-runs.txt", ROWS_16 + other)))
    samples, _ = read_samples(str(_log(tmp_path, "one-run.txt", ROWS_16)))  # one run's rows: read as before
    assert [(s.size, s.ranks) for s in samples] == [(4294967296, 16), (8589934592, 16)]


@pytest.mark.parametrize(
    ("card", "named"), [("H200 NVL", "H200 NVL"), ("H100 PCIe", "H100 PCIe"), ("A100-PCIE-40GB", "A100-PCIE")]
)
def test_a_pcie_card_named_only_by_the_header_is_refused(tmp_path, card, named):
    """Without device lines the header's GPU decides: `2 worker pods of 2 H200 NVL each` was built as an
    H200 HGX board (NVSwitch), which an H200 NVL (PCIe, NVLink bridges) is not."""
    text = f"#% hardware as stated: 2 worker pods of 2 {card} each\n" + ROWS_16
    with pytest.raises(nccl_logs.LogError, match=rf"{named} \(as the header states it\) is a PCIe card"):
        nccl_logs.parse_log(_log(tmp_path, "pcie-2node.txt", text))
    log = nccl_logs.parse_log(_log(tmp_path, "sxm-2node.txt", text.replace(card, "H200 with NVLink")))
    assert log.gpu == "h200"


def test_a_dgx_run_on_some_of_its_gpus_gets_their_share_of_its_nics(tmp_path):
    """Two DGX H100 (8 NICs of 400 Gb/s each) ran 2 GPUs of each (`-n 2 -g 2`): the DGX's eight NICs were
    folded onto the 2 GPUs, 4 NICs of 800 Gb/s (1.6 Tb/s a GPU); those GPUs have one 400 Gb/s NIC each."""
    ranks = "".join(
        f"#  Rank {2 * h + d:2d} Group  0 Pid {h + 1} on dgx-0{h} device  {d} [0x1b] NVIDIA H100 80GB HBM3\n"
        for h in range(2)
        for d in range(2)
    )
    rows = "  8589934592  2147483648  float  sum  -1  87072  98.65  147.98  0  87098  98.62  147.94  0\n"
    head = "#% hardware as stated: 2 DGX H100 hosts, 2 GPUs of each\n# nThread 1 nGpus 2\n"
    log = nccl_logs.parse_log(_log(tmp_path, "dgx-2node.txt", head + ranks + rows))
    g = nccl_logs.topology(log)
    assert (log.hosts, log.gpus_per_host, g.graph["nics_per_host"], g.graph["nic_bw"]) == (2, 2, 2, 400e9 / 8)
    assert "share of the node's stated NICs" in log.note
    # a run on all eight GPUs keeps the node's eight NICs
    full = "".join(
        f"#  Rank {8 * h + d:2d} Group  0 Pid {h + 1} on dgx-0{h} device  {d} [0x1b] NVIDIA H100 80GB HBM3\n"
        for h in range(2)
        for d in range(8)
    )
    rows16 = "  8589934592  2147483648  float  sum  -1  34409  249.65  468.09  0  34955  245.74  460.77  0\n"
    log = nccl_logs.parse_log(_log(tmp_path, "dgx8-2node.txt", head + full + rows16))
    g = nccl_logs.topology(log)
    assert (g.graph["nics_per_host"], g.graph["nic_bw"]) == (8, 400e9 / 8)


def test_rank_lines_that_put_one_rank_on_two_hosts_are_refused(tmp_path):
    """NVIDIA/nccl-tests#306: nccl-tests built without MPI=1 under `mpirun --host A:1,B:1 ... -g 8` runs a test
    per host; the output lists ranks 0-7 on node3, then 0-7 on node2, and two tables of the same sizes. It was
    read as one 8-rank run on 2 hosts (calibrate --from) and as 24 sizes of one 1-node run (nccl_logs.py)."""
    ranks = "".join(
        f"#  Rank  {d} Group  0 Pid {pid} on      {host} device  {d} [0x0f] NVIDIA H100 80GB HBM3\n"
        for host, pid in (("node3", 1528921), ("node2", 2171626))
        for d in range(8)
    )
    rows = "   1073741824     268435456     float     sum      -1   5252.0  204.44  357.78      0   5260.7  204.11  357.19      0\n"
    text = "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2147483648\n" + ranks + rows
    with pytest.raises(
        CalibrationError, match=r"rank 0 is listed on 2 hosts \(node2, node3\): each process ran its own"
    ):
        read_samples(str(_log(tmp_path, "split.txt", text)))
    # one run's rank lines repeated (a log of several runs on the same hosts) are read as before
    samples, _ = read_samples(str(_log(tmp_path, "again.txt", text.replace("node2", "node3") + rows)))
    assert (samples[0].ranks, samples[0].hosts) == (8, 1)
