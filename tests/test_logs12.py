"""The quirks of the twelfth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A twelfth held-out set")
and three gaps the earlier rounds left: each test feeds a short excerpt to the log reader (validate.calibration's
import, its fit and compare, and benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CalibrationError
from validate.calibration import read_samples
from validate.calibration.compare import predict
from validate.calibration.file import Calibration
from validate.calibration.fit import fit_calibration
from validate.calibration.inputs import launch_hosts

HEADER = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
#: a 2-rank all-reduce of 1-128 MiB (2 ranks: busbw = algbw)
ROWS_2 = """\
     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0
     4194304       1048576     float     sum      -1   476.28    8.81    8.81       0   471.14    8.90    8.90       0
    16777216       4194304     float     sum      -1   840.36   19.96   19.96       0   841.25   19.94   19.94       0
   134217728      33554432     float     sum      -1  5871.07   22.86   22.86       0  5867.43   22.88   22.88       0
"""

#: a CSCS (Alps) page's run of one GH200 on each of two nodes: the device lines name the GPU
GH200 = (
    """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1
#
# Using devices
#  Rank  0 Group  0 Pid  15784 on  nid007106 device  0 [0009:01:00] NVIDIA GH200 120GB
#  Rank  1 Group  0 Pid  24926 on  nid007109 device  0 [0009:01:00] NVIDIA GH200 120GB
#
"""
    + HEADER
    + ROWS_2
)


def test_calibrate_refuses_a_log_of_another_gpu_than_the_topology(tmp_path):
    """`calibrate --from LOG -t hgx:...,gpu=h100` fitted a GH200 log (or an RTX 5090's, a GB300's on gpu=b200)
    without a word: the GPU the device lines name travels with the samples, and a topology of another GPU is
    refused with one line that names both and the fix; the same GPU, or a log naming none, is fitted."""
    path = tmp_path / "gh200.txt"
    path.write_text(GH200)
    samples, source = read_samples(str(path))
    assert {s.gpu for s in samples} == {"NVIDIA GH200 120GB"}
    with pytest.raises(CalibrationError, match=r"device lines name 'NVIDIA GH200 120GB', but the topology builds H100"):
        fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=h100"), [source])
    a100 = tmp_path / "a100.txt"
    a100.write_text(GH200.replace("NVIDIA GH200 120GB", "NVIDIA A100-SXM4-40GB"))
    samples, source = read_samples(str(a100))
    with pytest.raises(CalibrationError, match=r"A100-SXM4-40GB', but the topology builds B200 .*gpu=a100$"):
        fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=1,preset=dgx-b200"), [source])
    fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=a100"), [source])  # the log's GPU: fitted
    unnamed = tmp_path / "unnamed.txt"
    unnamed.write_text(GH200.replace("NVIDIA GH200 120GB", "NVIDIA Graphics Device"))
    samples, source = read_samples(str(unnamed))
    assert {s.gpu for s in samples} == {""}
    fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=1,gpu=h100"), [source])  # names no GPU: no check


def test_compare_refuses_a_log_of_another_gpu_than_the_topology(tmp_path):
    """`validate compare --measured LOG` judges the prediction for the topology's GPU against a log's: a log of
    another GPU is refused there too."""
    path = tmp_path / "gh200.txt"
    path.write_text(GH200)
    samples, _ = read_samples(str(path))
    cal = Calibration(topology="hgx:hosts=2,gpus_per_host=1,gpu=h100")
    with pytest.raises(CalibrationError, match=r"NVIDIA GH200 120GB', but the topology builds H100 GPUs"):
        predict(samples, "hgx:hosts=2,gpus_per_host=1,gpu=h100", cal)


def test_cli_refuses_a_log_of_another_gpu_in_one_line(tmp_path, capsys):
    """The refusal is one line and exit 2 from the command line."""
    from collsim.cli import main

    path = tmp_path / "gh200.txt"
    path.write_text(GH200)
    code = main(
        [
            "validate",
            "calibrate",
            "-t",
            "hgx:hosts=2,gpus_per_host=1,gpu=h100",
            "--from",
            str(path),
            "-o",
            str(tmp_path / "c.yaml"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "GH200" in err[0]


#: a 16-rank all-reduce without rank lines, launched by MPICH / Hydra with 8 processes a node
PPN = (
    "mpiexec -n 16 -ppn 8 -genv NCCL_DEBUG WARN ./build/all_reduce_perf -b 1M -e 128M -f 4 -g 1\n"
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 4(factor) warmup iters: 5 iters: 20\n"
    + HEADER
    + """\
     1048576        262144     float     sum      -1    136.1    7.71   14.45      0    139.3    7.53   14.12      0
     4194304       1048576     float     sum      -1    233.4   17.97   33.69      0    231.4   18.12   33.98      0
    16777216       4194304     float     sum      -1    941.7   17.82   33.41      0    947.3   17.71   33.21      0
    67108864      16777216     float     sum      -1   6058.5   11.08   20.77      0   3709.5   18.09   33.92      0
"""
)


def test_mpich_ppn_counts_processes_per_node(tmp_path):
    """MPICH / Hydra's (and Intel MPI's) ``-ppn K`` / ``--ppn K`` is processes per node, as Open MPI's
    ``-npernode`` and Slurm's ``--ntasks-per-node`` are: 16 ranks at 8 a node are 2 hosts."""
    assert launch_hosts("mpiexec -n 16 -ppn 8 ./all_reduce_perf -g 1", 16) == 2
    assert launch_hosts("mpiexec --ppn=4 -n 16 ./all_reduce_perf", 16) == 4
    assert launch_hosts("mpiexec.hydra -hosts gpu1,gpu2 -n 16 ./all_reduce_perf -g 1", 16) == 2
    path = tmp_path / "a100-ppn.txt"
    path.write_text(PPN)
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts) == (16, 2)


def test_calibrate_reads_the_hosts_of_a_launch_line_without_rank_lines(tmp_path):
    """Where a log has no rank lines, `calibrate --from` takes its hosts from the launch line as the benchmark
    does (one function, ``launch_hosts``): a topology that puts the 16 ranks on one host is refused, as it is
    for a log whose rank lines name two hosts."""
    assert nccl_logs.launch_hosts is launch_hosts
    path = tmp_path / "ppn.txt"
    path.write_text(PPN)
    samples, source = read_samples(str(path))
    assert {(s.ranks, s.hosts) for s in samples} == {(16, 2)}
    with pytest.raises(CalibrationError, match=r"its 16 ranks on 2 hosts, but the topology puts them on 1 host"):
        fit_calibration(samples, Cluster("hgx:hosts=1,gpus_per_host=16,gpu=a100"), [source])
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(PPN.replace("mpiexec -n 16 -ppn 8", "mpirun -np 16 -H a:8,b:8"))
    samples, _ = read_samples(str(hosts))
    assert {s.hosts for s in samples} == {2}


#: a runbook's launch script of an rccl-tests run on MI355X nodes and its abridged output: no line of
#: rccl-tests' own header (its version line, RCCL's), only the launch line's binary and library
RCCL_LAUNCH = """\
/root/ompi/install/bin/mpirun \\
  --allow-run-as-root -np 16 -map-by slot --bind-to numa --hostfile /root/hostfile \\
  -x NCCL_IB_HCA=$HCA -x NCCL_SOCKET_IFNAME=enp81s0f1 \\
  -x LD_PRELOAD=/root/rccl/build/release/librccl.so.1.0 \\
  /root/rccl-tests/build/all_reduce_perf -b 8 -e 16g -f 2 -g 1 -n 20
#       size    count  type  redop  root    time   algbw   busbw #wrong
   134217728 33554432 float    sum    -1  1275.7  105.21  197.26      0
   536870912 134217728 float   sum    -1  5029.3  106.75  200.15      0
  1073741824 268435456 float   sum    -1   10045  106.89  200.42      0
# Avg bus bandwidth    : 60.3716
"""


def test_calibrate_refuses_an_rccl_run_its_launch_line_names(tmp_path):
    """`calibrate --from` fitted an hgx topology to an MI355X run whose post abridged the output to its rows: only
    the launch line (``rccl-tests/build/all_reduce_perf``, ``LD_PRELOAD=...librccl.so``) says it was RCCL. It is
    refused in one line, as a log with rccl-tests' own header lines is (the benchmark skipped it already)."""
    path = tmp_path / "rccl.txt"
    path.write_text(RCCL_LAUNCH)
    with pytest.raises(CalibrationError, match=r"rccl\.txt:4: an RCCL run on AMD GPUs \('librccl\.so'\)"):
        read_samples(str(path))
    path.write_text(RCCL_LAUNCH.replace("  -x LD_PRELOAD=/root/rccl/build/release/librccl.so.1.0 \\\n", ""))
    with pytest.raises(CalibrationError, match=r"an RCCL run on AMD GPUs \('rccl-tests/build/all_reduce_perf'\)"):
        read_samples(str(path))
    path.write_text(RCCL_LAUNCH.replace("rccl", "nccl"))  # the same post of nccl-tests reads
    assert len(read_samples(str(path))[0]) == 3


#: an issue's first post as the issues corpus serves it: rows only (no header, column line, rank line or
#: command), each carrying MPICH's ``[0]`` label at its start and in its middle too
MIDLINE_LABELS = """\
[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0[0]    2302.3    0.46    0.87      0
[0]      4194304       1048576     float     sum      -1[0]     622.6    6.74   12.91      0[0]     625.8    6.70   12.85      0
[0]      8388608       2097152     float     sum      -1[0]     992.6    8.45   16.20      0[0]     986.0    8.51   16.31      0
[0]     16777216       4194304     float     sum      -1[0]    1334.9   12.57   24.09      0[0]    1336.5   12.55   24.06      0
[0]     33554432       8388608     float     sum      -1[0]    2180.1   15.39   29.50      0[0]    2285.2   14.68   28.14      0
"""


def test_a_post_of_rows_only_is_read_as_the_importer_reads_it(tmp_path):
    """The benchmark refused a post that kept only its rows as 'not an nccl-tests log' before reading them; the
    importer reads the rows (labels mid-row too), here 24 ranks by busbw / algbw, and says what is missing
    where something is (the issue's whole excerpt: 24 by the factor, but not told from 23 or 25 at two
    decimals: 'give FILE:ranks=N (... suggests ranks=24)')."""
    path = tmp_path / "h100-midline-3node.txt"
    path.write_text(MIDLINE_LABELS)
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpu) == (24, 3, "a100")
    samples, _ = read_samples(str(path))
    assert [(s.size, round(s.time_s * 1e6, 1), round(s.in_place_s * 1e6, 1)) for s in samples][:2] == [
        (1048576, 1626.5, 2302.3),
        (4194304, 622.6, 625.8),
    ]
    (tmp_path / "readme.txt").write_text("hello\n")
    with pytest.raises(nccl_logs.LogError, match=r"not an nccl-tests log \(no result rows"):
        nccl_logs.parse_log(tmp_path / "readme.txt")
