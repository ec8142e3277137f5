"""The quirks of the nineteenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A nineteenth
held-out set"): each test feeds a short excerpt to the log reader (validate.calibration's import and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

#: a note's broadcast_perf output whose one result row the poster commented out ("#     1048576 ...")
COMMENTED_ROW = """\
# Collective test starting: broadcast_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 1048576(bytes) warmup iters: 1 iters: 20 agg iters: 1
#
# Using devices
#  Rank  0 Group  0 Pid 698561 on ecocloud-exp06 device  0 [0000:18:00] Tesla V100-SXM2-32GB
#  Rank  1 Group  0 Pid 698562 on ecocloud-exp06 device  1 [0000:3b:00] Tesla V100-SXM2-32GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
#     1048576        262144     float    none       0    461.9    2.27    2.27      0    401.4    2.61    2.61      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 2.4413
#
# Collective test concluded: broadcast_perf
"""


def test_result_rows_a_post_commented_out_are_named_as_such(tmp_path):
    """A table whose rows carry a '#' before the size was refused as one "whose result rows were left out", though
    the row is there; it is refused as commented out now, naming the line, in the import and the benchmark. A log
    that truly left its rows out keeps its message."""
    path = tmp_path / "v100-broadcast-commented.txt"
    readers = {  # the import, and the benchmark's reader over it: each refuses the log in one line
        r"\.txt:11: the table's result rows are commented out \(a '#' before": lambda: read_samples(str(path)),
        r"commented out .*without the '#'": lambda: nccl_logs.parse_log(path),
    }
    path.write_text(COMMENTED_ROW)
    for message, read in readers.items():
        with pytest.raises((CalibrationError, nccl_logs.LogError), match=message):
            read()
    left_out = [line for line in COMMENTED_ROW.splitlines(True) if "1048576  " not in line]
    path.write_text("".join(left_out))
    with pytest.raises(CalibrationError, match=r"whose result rows were left out"):
        read_samples(str(path))
