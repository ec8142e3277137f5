"""The quirks of the eighth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "An eighth held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py's hardware inference)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from validate.calibration import read_samples

#: an all-gather of 16 ranks (busbw / algbw 0.9375), as Google's cluster-toolkit README posts it: no header
ALLGATHER_16 = """\
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
       268435456       4194304     float    none      -1   3624.3   74.07   69.44    N/A   3545.2   75.72   70.99    N/A
       536870912       8388608     float    none      -1   7098.6   75.63   70.90    N/A   7054.3   76.11   71.35    N/A
    # Out of bounds values : 0 OK
"""

#: all-reduce rows of a 2-rank run (busbw = algbw)
ROWS_2 = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  1073741824     268435456     float     sum      -1   379615    2.83    2.83      0   380115    2.82    2.82      0
  2147483648     536870912     float     sum      -1   756857    2.84    2.84      0   757311    2.84    2.84      0
"""


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _read_then_refused(path: Path, read: tuple[str, int], refusal: str) -> None:
    """The importer reads ``path`` as ``read`` (collective, ranks); nccl_logs.py refuses it with ``refusal``."""
    samples, _ = read_samples(str(path))
    assert {(s.collective, s.ranks) for s in samples} == {read}
    with pytest.raises(nccl_logs.LogError, match=refusal):
        nccl_logs.parse_log(path)


@pytest.mark.parametrize("script", ["/scripts/allgather.sh nccl-host-1 nccl-host-2", "/scripts/run-allgather.sh 8"])
def test_the_cluster_toolkits_allgather_script_names_the_collective(tmp_path, script):
    """Google's cluster-toolkit runs `kubectl exec nccl-test-host-1 -c nccl-test -- /scripts/allgather.sh ...`
    (its wrapper of the TCPX image's run-allgather.sh): its A3 High and A3 Mega posts were refused, "cannot tell
    which nccl-tests binary wrote this"."""
    text = f"    kubectl exec -t nccl-test-host-1 -c nccl-test -- {script}\n" + ALLGATHER_16
    samples, _ = read_samples(str(_log(tmp_path, "a3high-2node.txt", text)))
    assert {(s.collective, s.ranks) for s in samples} == {("allgather", 16)}


def test_a_scatter_table_is_refused_by_its_collective(tmp_path):
    """An AWS Slurm README posts a scatter_perf table under `0: ` labels, no rank lines: nccl_logs.py refused it
    for its rank count ("cannot tell the number of ranks") where it is a collective the NCCL model does not
    predict; scatter's and gather's busbw / algbw is (n-1)/n (nccl-tests' src/scatter.cu, gather.cu)."""
    text = """\
sbatch 1.nccl-tests.sbatch   # srun ... /opt/nccl-tests/build/scatter_perf -b 8 -e 2G -f 2 -g 1
0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
0:   1073741824      16777216     float    none       0    12828   83.70   78.47      0    12809   83.82   78.59      0
0:   2147483648      33554432     float    none       0    25421   84.48   79.20      0    25283   84.94   79.63      0
"""
    _read_then_refused(_log(tmp_path, "scatter-2node.txt", text), ("scatter", 16), r"a scatter table \(scatter_perf\);")


def test_the_last_rank_line_alone_tells_the_ranks(tmp_path):
    """CoreWeave's 20-rack GB200 run keeps one rank line, `#  Rank 1439 ...`, above all-reduce rows whose
    busbw / algbw (1.9986) cannot tell 1440 ranks from their neighbours: it was refused as a table of an
    unknown binary, where rank 1439 says 1440 ranks and the GPU is one hgx does not build."""
    text = """\
#  Rank 1439 Group  0 Pid  21082 on slurm-gb200-218-073 device  3 [0x01] NVIDIA GB200
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  8589934592    2147483648     float     sum      -1    45004  190.87  381.48      0    44930  191.19  382.11      0
 17179869184    4294967296     float     sum      -1    84625  203.01  405.74      0    84828  202.53  404.77      0
"""
    _read_then_refused(_log(tmp_path, "gb200-20rack.txt", text), ("allreduce", 1440), r"GB200 GPUs are not modelled")


def test_a_gpu_the_header_names_by_its_old_name_is_refused(tmp_path):
    """A koordinator report's post elides its device lines; the header states `1 Tesla P40`: the log was predicted
    as an A100's ("GPU not named: A100 assumed"). An AWS p4d instance, written in lower case, stays an A100."""
    header = "#% source: a report; hardware as stated: 2 pods, 1 Tesla P40 and 1 ConnectX-5 VF each\n"
    with pytest.raises(nccl_logs.LogError, match=r"P40 GPUs are not modelled"):
        nccl_logs.parse_log(_log(tmp_path, "p40-2pod.txt", header + ROWS_2))
    p4d = "#% hardware as stated: 2x p4d.24xlarge, t4-style naming aside\n"
    assert nccl_logs.parse_log(_log(tmp_path, "p4d-2node.txt", p4d + ROWS_2)).gpu == "a100"


def test_the_launch_commands_host_list_gives_the_hosts(tmp_path):
    """The same post ran `mpirun -H 10.244.1.10:1,10.244.2.21:1 ... -g 1` (one GPU in each of two pods) and kept
    no rank lines: its 2 ranks were put on one host, an NVLink pair, where the command lists two hosts."""
    command = (
        "mpirun --allow-run-as-root -H 10.244.1.10:1,10.244.2.21:1 -x NCCL_IB_HCA==mlx5_2 ./all_reduce_perf -g 1\n"
    )
    header = "#% hardware as stated: 2 pods, 1 H100 and one 400 Gb/s NIC each\n"
    log = nccl_logs.parse_log(_log(tmp_path, "h100-pods.txt", header + command + ROWS_2))
    assert (log.ranks, log.hosts, log.gpus_per_host) == (2, 2, 1)
    # a list whose slots do not account for the ranks says nothing (the run is read as before)
    other = "mpirun -H a:8,b:4 ./all_reduce_perf -g 1\n"
    assert nccl_logs.parse_log(_log(tmp_path, "h100-odd.txt", header + other + ROWS_2)).hosts == 1


def test_an_efa_runs_note_is_printed_once(tmp_path):
    """A p4de post that names no GPU printed `(GPU not named: A100 assumed; EFA: aws-p4d, aws-ofi-nccl 1.10.0;
    EFA: aws-p4d, ...)` on its in-sample line: each prediction built the topology again and added the note."""
    text = "#% hardware as stated: a 2 node p4de.24xlarge cluster, aws-ofi-nccl v1.10.0-aws\n" + ROWS_2.replace(
        "2.83    2.83", "2.83    5.31"
    ).replace("2.82    2.82", "2.82    5.29").replace("2.84    2.84", "2.84    5.33")
    log = nccl_logs.parse_log(_log(tmp_path, "p4de-2node.txt", text))
    for _ in range(3):
        nccl_logs.topology(log)
    assert log.note == "GPU not named: A100 assumed; EFA: aws-p4d, aws-ofi-nccl 1.10.0"


def test_a_count_of_connectx_nics_without_a_speed_gets_the_models_port_speed(tmp_path):
    """nccl-tests issue 380 states `8x NVIDIA H200 GPUs, 4x NVIDIA/Mellanox ConnectX-7 NICs` and no speed: the
    count was not read and the H200 preset's 8 x 400 Gb/s predicted its bare-metal run 30% fast (8.9% with the
    4 NICs at ConnectX-7's 400 Gb/s)."""
    rows = """\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
  1073741824     268435456     float     sum      -1  6669.78  160.99  301.85       0  6678.26  160.78  301.47       0
  3221225472     805306368     float     sum      -1  19102.3  168.63  316.18       0  19138.5  168.31  315.58       0
"""
    header = "#% hardware as stated: two servers, each 8x NVIDIA H200 GPUs and 4x NVIDIA/Mellanox ConnectX-7 NICs\n"
    log = nccl_logs.parse_log(_log(tmp_path, "h200-2node.txt", header + rows))
    assert (log.gpu, log.hosts, nccl_logs.stated_nics(log.text, log.gpus_per_host, log.gpu)) == ("h200", 2, (4, 400.0))


def test_an_alltoall_table_is_refused_with_its_article(tmp_path):
    """A supercomputer guide's `mpirun ./alltoall_perf ... -g 2` post was refused as "a alltoall table"; since p2p
    an all-to-all is predicted (NCCL's p2p path), and this one is refused for its GPU (V100s), not its table."""
    text = """\
mpirun ./alltoall_perf -b 2 -e 128M -f 2 -g 2
#  Rank  0 Group  0 Pid 3020421 on     igt002 device  0 [0x15] Tesla V100-SXM2-16GB
#  Rank  1 Group  0 Pid 3020421 on     igt002 device  1 [0x16] Tesla V100-SXM2-16GB
#  Rank  2 Group  0 Pid 1788088 on     igt007 device  0 [0x15] Tesla V100-SXM2-16GB
#  Rank  3 Group  0 Pid 1788088 on     igt007 device  1 [0x16] Tesla V100-SXM2-16GB
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   134217728       8388608     float    none      -1    17761    7.56    5.67      0    17276    7.77    5.83    N/A
"""
    with pytest.raises(nccl_logs.LogError, match=r": V100 GPUs are not modelled"):
        nccl_logs.parse_log(_log(tmp_path, "v100-2node.txt", text))
