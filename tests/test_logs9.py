"""The quirks of the ninth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A ninth held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py's hardware inference)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

HEADER = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""

#: an Azure ML README's two tables, a single node's (8 ranks: busbw / algbw 1.75) and two nodes' (16: 1.875),
#: no rank lines, no command
TWO_TABLES = (
    "### Single Node\n"
    + HEADER
    + """\
  4294967296    1073741824     float     sum      -1    32200  133.38  233.42      0    32207  133.35  233.37      0
  8589934592    2147483648     float     sum      -1    64200  133.80  234.15      0    64208  133.78  234.12      0
# Avg bus bandwidth    : 78.8923
### Two Nodes
"""
    + HEADER
    + """\
  4294967296    1073741824     float     sum      -1    43176   99.48  186.52      0    43174   99.48  186.52      0
  8589934592    2147483648     float     sum      -1    85820  100.09  187.67      0    85895  100.01  187.51      0
# Avg bus bandwidth    : 57.1241
"""
)

#: an alltoall_perf table of 16 ranks (redop none, in-place #wrong N/A) under an all_reduce_perf command
ALLTOALL_UNDER_ALLREDUCE = (
    "mpirun -np 2 -H a100-44,a100-43 -x NCCL_ALGO=Ring ./all_reduce_perf -b 32M -e 8G -f 2 -g 8\n"
    + HEADER
    + """\
  4294967296      67108864     float    none      -1   106262   40.42   37.89      0   106112   40.48   37.95    N/A
  8589934592     134217728     float    none      -1   212152   40.49   37.96      0   211851   40.55   38.01    N/A
"""
)


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_post_of_two_runs_tables_without_rank_lines_is_refused_as_two_runs(tmp_path):
    """An Azure ML README posts a single node's and two nodes' tables one after the other, and an EKS README a
    p5 node's and two p5 nodes' one-row blocks, neither with rank lines: the reader refused both as "cannot tell
    the number of ranks ... its busbw / algbw factor suggests ranks=11" (the median of 1.75 and 1.875), which
    no run had; the rows' factors tell two runs apart, so it says so."""
    path = _log(tmp_path, "aml-1and2node.txt", TWO_TABLES)
    with pytest.raises(CalibrationError, match=r"rows of more than one run: .*\(8 ranks\) but .*\(16 ranks\)"):
        read_samples(str(path))
    with pytest.raises(nccl_logs.LogError, match="rows of more than one run"):
        nccl_logs.parse_log(path)


def test_an_alltoall_table_under_an_allreduce_command_is_named_by_its_redop(tmp_path):
    """A Chinese note shows `mpirun -np 2 ... ./all_reduce_perf ... -g 8` above an alltoall_perf table (redop
    `none`, in-place #wrong N/A): the refusal named reduce_scatter_perf among the tables it might be, which
    reduces (redop sum); rows of redop none are all_gather_perf's or alltoall_perf's. Without the post's nThread
    line (nGpus 8) the table was read as a 2-rank all-reduce: the launch line's own `-g 8` makes it 16 ranks."""
    path = _log(tmp_path, "a100-2node-g8.txt", ALLTOALL_UNDER_ALLREDUCE)
    with pytest.raises(CalibrationError) as refused:
        read_samples(str(path))
    message = str(refused.value)
    assert "all_gather_perf's or alltoall_perf's table (its redop is none)" in message
    assert "reduce_scatter" not in message


@pytest.mark.parametrize(
    ("launch", "ranks"),
    [
        ("mpirun -np 2 -H a:1,b:1 ./build/broadcast_perf -b 1G -e 2G -f 2 -g 8", 16),
        ("mpirun -np 2 -H a:1,b:1 ./build/broadcast_perf -b 1G -e 2G -f 2 -t 2 -g 4", 16),
        ("srun -N 2 ./build/broadcast_perf -b 1G -e 2G -f 2 -g 4", 8),
        ("mpirun -np 16 ./build/broadcast_perf -b 1G -e 2G -f 2 -g 1", 16),
        ("mpirun -np 2 ./build/broadcast_perf -g 8 -b 1G -e 2G", 16),
    ],
)
def test_the_launch_lines_gpus_per_process_count_without_the_nthread_line(tmp_path, launch, ranks):
    """A post that keeps the launch line and the table but not nccl-tests' `# nThread 1 nGpus 8` line: each of
    the launcher's processes drives the -t x -g GPUs its own command line gives (a broadcast's busbw / algbw, 1,
    says nothing of the ranks)."""
    rows = """\
  1073741824     268435456     float     sum       0    10000  107.37  107.37      0    10000  107.37  107.37      0
  2147483648     536870912     float     sum       0    20000  107.37  107.37      0    20000  107.37  107.37      0
"""
    samples, _ = read_samples(str(_log(tmp_path, "bcast.txt", launch + "\n" + HEADER + rows)))
    assert {(s.collective, s.ranks) for s in samples} == {("broadcast", ranks)}


#: an all-reduce of 8 ranks (busbw / algbw 1.75) without rank lines, as an HPE Slingshot cluster's README posts it
ROWS_8 = (
    HEADER
    + """\
  4294967296    1073741824     float     sum      -1    47553   90.32  158.06      0    47551   90.32  158.07      0
  8589934592    2147483648     float     sum      -1    94752   90.66  158.65      0    94730   90.68  158.69      0
"""
)


@pytest.mark.parametrize(
    ("launch", "hosts"),
    [
        (
            "env NCCL_ALGO=Tree srun --mpi=pmi2 -n 8 --ntasks-per-node=4 singularity run x.sif ./build/all_reduce_perf",
            2,
        ),
        ("mpirun -np 8 \\\n   -npernode 4 \\\n   /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -g 1", 2),
        ("mpirun -np 2 --map-by ppr:1:node ./all_reduce_perf -b 8 -e 8G -g 4", 2),
        ("mpirun -np 8 ./all_reduce_perf -b 8 -e 8G -g 1", 1),
    ],
)
def test_the_launch_lines_processes_per_node_give_the_hosts(tmp_path, launch, hosts):
    """An HPE Cray README runs `srun -n 8 --ntasks-per-node=4 ... all_reduce_perf` ("two nodes using four GPUs
    per node") and posts the table without device lines: its 8 ranks were put on one host (8 GPUs a node
    assumed); the processes per node of the launch (srun's --ntasks-per-node, Open MPI's -npernode / ppr:K:node,
    times each process's GPUs) now give the hosts."""
    log = nccl_logs.parse_log(_log(tmp_path, "run.txt", launch + "\n" + ROWS_8))
    assert (log.ranks, log.hosts) == (8, hosts)
