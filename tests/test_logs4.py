"""The quirks of the fourth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A fourth held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py's hardware inference)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

HEADER = """\
# nccl-tests version 2.17.9 nccl-headers=22403 nccl-library=22403
# Collective test starting: {binary}
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{ranks}#
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
#: Voltage Park's 4-node reduce_perf (redop sum, root 0, busbw = algbw): a rooted collective, not NCCL's all-reduce
REDUCE_ROWS = """\
  4294967296    1073741824     float     sum       0  15415.6  278.61  278.61       0  15432.4  278.31  278.31       0
  8589934592    2147483648     float     sum       0  30061.8  285.74  285.74       0  30040.9  285.94  285.94       0
"""
ALLREDUCE_ROWS = """\
  4294967296    1073741824     float     sum      -1  25265.5  169.99  329.36       0  25180.1  170.57  330.48       0
  8589934592    2147483648     float     sum      -1  50291.8  170.80  330.93       0  50415.3  170.38  330.12       0
"""
ALLGATHER_ROWS = """\
  4294967296      33554432     float    none      -1  12851.2  334.21  323.76       0  12734.1  337.28  326.74       0
  8589934592      67108864     float    none      -1  25720.7  333.97  323.53       0  25438.7  337.67  327.12       0
"""


def _ranks(n: int, per_host: int, device: str) -> str:
    return "".join(
        f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on {f'g{r // per_host:03d}':>10s} device {r % per_host:2d} "
        f"[0000:19:00] {device}\n"
        for r in range(n)
    )


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_table_of_another_collective_is_refused_in_one_line(tmp_path):
    """A reduce_perf log (Voltage Park's 4-node set) ended in a traceback (the ring reduce has no NCCL pick), then
    was refused by name; since ncclbr it is predicted through NCCL's ring chain (tests/test_ncclbr.py); an
    alltoall_perf log, refused by name until p2p, is predicted through NCCL's p2p path (tests/test_p2p.py). A
    collective whose NCCL schedule collsim does not build (gather) is refused by name, as the import reads it."""
    text = HEADER.format(binary="reduce_perf", ranks=_ranks(32, 8, "NVIDIA H100 80GB HBM3")) + REDUCE_ROWS
    (tmp_path / "reduce").mkdir()
    assert nccl_logs.parse_log(_log(tmp_path / "reduce", "h100-4node-reduce.txt", text)).collective == "reduce"
    text = HEADER.format(binary="alltoall_perf", ranks=_ranks(32, 8, "NVIDIA H100 80GB HBM3")) + ALLGATHER_ROWS
    (tmp_path / "alltoall").mkdir()
    assert nccl_logs.parse_log(_log(tmp_path / "alltoall", "h100-4node-alltoall.txt", text)).collective == "alltoall"
    text = HEADER.format(binary="gather_perf", ranks=_ranks(32, 8, "NVIDIA H100 80GB HBM3")) + ALLGATHER_ROWS
    path = _log(tmp_path, "h100-4node-gather.txt", text)
    with pytest.raises(
        nccl_logs.LogError,
        match=r"a gather table \(gather_perf\); the NCCL model predicts all-reduce, all-gather, reduce-scatter, "
        r"broadcast, reduce, all-to-all and send-recv$",
    ):
        nccl_logs.parse_log(path)
    samples, _ = read_samples(path)  # the import itself reads it (collsim simulates a flat gather)
    assert {s.collective for s in samples} == {"gather"}
    assert nccl_logs.main([str(path.parent)]) == 2  # nothing left to predict: one line, exit 2


def test_the_mpi_binary_named_on_the_starting_line_is_read(tmp_path):
    """nccl-tests built with MPI=1 prints ``# Collective test starting: all_reduce_perf_mpi``; that line was
    taken for no line at all ("cannot tell which nccl-tests binary wrote this")."""
    rows = ALLREDUCE_ROWS.replace("330.", "250.").replace("329.", "250.")  # busbw / algbw no longer 2(n-1)/n
    text = HEADER.format(binary="all_reduce_perf_mpi", ranks=_ranks(16, 8, "NVIDIA H100 80GB HBM3")) + rows
    samples, source = read_samples(
        _log(tmp_path, "mpi.txt", "".join(f"[1,0]<stdout>:{ln}\n" for ln in text.split("\n")))
    )
    assert {s.collective for s in samples} == {"allreduce"} and {s.ranks for s in samples} == {16}
    assert source.detail.startswith("all_reduce_perf_mpi, 16 ranks")


def test_a_file_with_the_tables_of_two_collectives_is_refused(tmp_path):
    """ROCm/rccl issue 1490 posts an all_gather_perf table and then an all_reduce_perf table of the same nodes,
    under one ``srun ... all_gather_perf`` command and without "Collective test starting" lines: both were read
    as one all-gather of 26 sizes. Rows with and without a reduction, or two tests' starting lines, are refused."""
    head = "srun --nodes=4 --ntasks-per-node=8 --label -- all_gather_perf -b 64K -e 4G -f 2 -g 1\n"
    columns = HEADER.split("\n", 5)[5]  # the column-header lines alone
    labelled = "".join(f" 0: {ln}\n" for ln in (columns + ALLGATHER_ROWS + columns + ALLREDUCE_ROWS).splitlines())
    path = _log(tmp_path, "two.txt", head + labelled)
    with pytest.raises(
        CalibrationError, match=r"more than one collective \(rows with redop 'none' and rows with 'sum'\)"
    ):
        read_samples(path)
    ranks = _ranks(32, 8, "NVIDIA H100 80GB HBM3")
    runs = HEADER.format(binary="all_reduce_perf", ranks=ranks) + ALLREDUCE_ROWS
    runs += HEADER.format(binary="reduce_scatter_perf", ranks=ranks) + ALLREDUCE_ROWS.replace("330.", "320.")
    with pytest.raises(CalibrationError, match=r"the tables of 2 tests \(all_reduce_perf, reduce_scatter_perf\)"):
        read_samples(_log(tmp_path, "runs.txt", runs))
    # one test run twice in one file is still one collective
    twice = HEADER.format(binary="all_reduce_perf", ranks=ranks) + ALLREDUCE_ROWS
    samples, _ = read_samples(
        _log(tmp_path, "twice.txt", twice + twice.replace("all_reduce_perf", "all_reduce_perf_mpi"))
    )
    assert len(samples) == 4 and {s.collective for s in samples} == {"allreduce"}


def test_amd_and_other_gpus_are_refused_by_name(tmp_path):
    """The MI250X post names its GPU only in rocminfo's words (``AMD Instinct MI250X``, ``gfx90a``) and was
    predicted as an A100 (75% off); a device line naming a GPU hgx does not build (a GeForce RTX 5090) asked
    for the model in a ``#%`` line, which cannot help."""
    rows = ALLREDUCE_ROWS
    post = "srun --nodes=4 --ntasks-per-node=8 -- all_reduce_perf -b 4G -e 8G\n" + rows
    amd = _log(tmp_path, "mi250x-4node.txt", post + "### GPU\n  Marketing Name:          AMD Instinct MI250X\n")
    with pytest.raises(nccl_logs.LogError, match=r"a run on AMD GPUs \('AMD Instinct MI250X'\)"):
        nccl_logs.parse_log(amd, ranks=32)
    text = HEADER.format(binary="all_reduce_perf", ranks=_ranks(16, 8, "AMD Instinct MI300X")) + rows
    with pytest.raises(nccl_logs.LogError, match="a run on AMD GPUs"):
        nccl_logs.parse_log(_log(tmp_path, "mi300x.txt", text))
    text = HEADER.format(binary="all_reduce_perf", ranks=_ranks(2, 1, "NVIDIA GeForce RTX 5090")) + rows
    with pytest.raises(nccl_logs.LogError, match=r"name 'NVIDIA GeForce RTX 5090', a GPU hgx does not build"):
        nccl_logs.parse_log(_log(tmp_path, "rtx.txt", text))
    text = HEADER.format(binary="all_reduce_perf", ranks=_ranks(16, 8, "NVIDIA Graphics Device")) + rows
    with pytest.raises(nccl_logs.LogError, match=r"no GPU model collsim knows; state it in a '#%' line"):
        nccl_logs.parse_log(_log(tmp_path, "unnamed.txt", text))


def test_a_stated_gpu_to_nic_ratio_gives_the_nics(tmp_path):
    """NVIDIA/nccl-tests issue 311 runs 2 GPUs of each of 4 shared A100 hosts, whose two GPUs share one
    ConnectX-6 ("GPU:NIC = 2:1"): the hosts were built with a NIC per GPU, and the run predicted 2x fast."""
    head = "#% hardware as stated: 4 nodes x 2 A100-SXM4, MT4123 ConnectX-6 (HDR), GPU:NIC = 2:1\n"
    text = head + HEADER.format(binary="all_reduce_perf", ranks=_ranks(8, 2, "NVIDIA A100-SXM4-80GB"))
    log = nccl_logs.parse_log(_log(tmp_path, "a100-4node.txt", text + ALLREDUCE_ROWS.replace("330.", "290.")))
    g = nccl_logs.topology(log)
    assert (log.hosts, log.gpus_per_host, g.graph["nics_per_host"], g.graph["nic_bw"]) == (4, 2, 1, 200e9 / 8)


def test_out_of_sample_comes_from_a_smaller_run_of_the_same_collective(tmp_path):
    """Voltage Park posts a 1-node all-gather and all-reduce and a 4-node all-gather and all-reduce: the 4-node
    all-reduce was predicted from the 1-node all-gather's calibration (the first 1-node file by name)."""
    runs = []
    for nodes, binary, rows in ((1, "all_gather_perf", ALLGATHER_ROWS), (1, "all_reduce_perf", ALLREDUCE_ROWS)) + (
        (4, "all_gather_perf", ALLGATHER_ROWS),
        (4, "all_reduce_perf", ALLREDUCE_ROWS),
    ):
        name = f"h100-vp-{nodes}node{'-allgather' if 'gather' in binary else ''}.txt"
        text = HEADER.format(binary=binary, ranks=_ranks(8 * nodes, 8, "NVIDIA H100 80GB HBM3")) + rows
        runs.append(nccl_logs.parse_log(_log(tmp_path, name, text)))
    source = nccl_logs.smaller_runs(sorted(runs, key=lambda log: log.path.name))
    assert {k.name: v.path.name for k, v in source.items()} == {
        "h100-vp-4node.txt": "h100-vp-1node.txt",
        "h100-vp-4node-allgather.txt": "h100-vp-1node-allgather.txt",
    }


#: dstack's GCP page (A3 Mega / A3 High tabs): no rank lines, the page's rendering dropped nccl-tests' '#' marks, the
#: ranks only in ``-n ${DSTACK_GPUS_NUM}``, and on A3 High the test run by GPUDirect-TCPX's ``run-allgather.sh``
DSTACK = """\
    {command}
    nccl-tests provisioning completed (running)
    nThread 1 nGpus 1 minBytes 8388608 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 200 agg iters: 1 validation: 0 graph: 0

                                                                 out-of-place                       in-place
          size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      2147483648      33554432     float    none      -1    10863  197.69  185.34    N/A    10837  198.17  185.78    N/A
      4294967296      67108864     float    none      -1    21481  199.94  187.45    N/A    21466  200.08  187.58    N/A
      8589934592     134217728     float    none      -1    42713  201.11  188.54    N/A    42701  201.16  188.59    N/A
    Out of bounds values : 0 OK
"""


def test_an_all_gather_without_rank_lines_gets_its_ranks_from_its_factor(tmp_path):
    """An all-gather whose ranks no line states was refused ("cannot tell the number of ranks"): its busbw /
    algbw = (n-1)/n gives them as all-reduce's 2(n-1)/n does (15/16 here); and GPUDirect-TCPX's
    ``run-allgather.sh`` names the test as gIB's ``run_nccl_tests.sh -t all_gather`` does."""
    mega = "${MPIRUN} -n ${DSTACK_GPUS_NUM} -N ${DSTACK_GPUS_PER_NODE} ./all_gather_perf -b 8M -e 8G -f 2 -g 1 -c 0;"
    samples, source = read_samples(_log(tmp_path, "mega.txt", DSTACK.format(command=mega)))
    assert {s.collective for s in samples} == {"allgather"} and {s.ranks for s in samples} == {16}
    high = "NCCL_GPUDIRECTTCPX_FORCE_ACK=0 /scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 8M 8GB 2"
    samples, source = read_samples(_log(tmp_path, "high.txt", DSTACK.format(command=high)))
    assert {s.collective for s in samples} == {"allgather"} and {s.ranks for s in samples} == {16}
    assert source.detail.startswith("all_gather_perf, 16 ranks")
