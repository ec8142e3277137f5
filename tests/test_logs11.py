"""The quirks of the eleventh held-out set of published nccl-tests logs (docs/nccl-heldout.md, "An eleventh held-out
set"): each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs

from validate.calibration import read_samples

#: a README's "Raw output" of a 2-rank run, one A100 per node over RoCE: the header lines and the average
#: line lack their leading '#', and no rank line names a host
ONE_GPU_PER_NODE = """\
mpirun -np 2 --hostfile hosts ./build/all_reduce_perf -b 8M -e 32M -f 2 -g 1
                                                             out-of-place                       in-place
      size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
       (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
    8388608       2097152     float     sum      -1   906.10    9.26    9.26       0   904.42    9.28    9.28       0
   16777216       4194304     float     sum      -1  1783.01    9.41    9.41       0  1783.59    9.41    9.41       0
   33554432       8388608     float     sum      -1  3417.71    9.82    9.82       0  3401.17    9.87    9.87       0
Avg bus bandwidth    : 9.49 GB/s
"""


def test_a_run_on_one_a100_per_node_builds(tmp_path):
    """A run of one A100 on each of two nodes (``-np 2 -g 1``; the file name states the GPU and the node count)
    was refused: the A100 preset pairs its GPUs on PCIe switches, and 'hgx: 1 GPUs per host do not share PCIe
    switches 2 by 2'. A host of which a run uses one GPU (or any count the pairs do not divide) gets a switch
    per GPU, so the run builds, one GPU and one NIC per host."""
    path = tmp_path / "a100-roce-2node-1gpu.txt"
    path.write_text(ONE_GPU_PER_NODE)
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpus_per_host, log.gpu) == (2, 2, 1, "a100")
    g = nccl_logs.topology(log)
    assert (len(g.graph["ranks"]), g.graph["nics_per_host"]) == (2, 1)
    rows = nccl_logs.predict(log, 1 << 20)
    assert [r[0] for r in rows] == [8388608, 16777216, 33554432]
    samples, _ = read_samples(nccl_logs._source(log))
    assert [s.size for s in samples] == [8388608, 16777216, 33554432]
