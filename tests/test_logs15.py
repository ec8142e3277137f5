"""The quirks of the fifteenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A fifteenth held-out
set"): each test feeds a short excerpt to the log reader (validate.calibration's import and its fit, and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CalibrationError
from validate.calibration import fit_calibration, read_samples

#: nccl-tests issue 347's post redacts its hosts to two words (``on NODE A device  0``; some lines with two
#: spaces before ``device``); here as a 2-host run (the post's own 2-node table is not in the excerpt)
SPACED = """\
#  Rank  0 Group  0 Pid 1976149 on NODE A device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 1976150 on NODE A  device  1 [0000:23:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid 1976151 on NODE B device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid 1976152 on NODE B  device  1 [0000:23:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  8589934592    2147483648     float     sum      -1   195000   44.05   66.08      0   195100   44.03   66.04      0
# Out of bounds values : 0 OK
"""


def test_rank_lines_with_a_host_of_two_words(tmp_path):
    """A host redacted to words (``on NODE A device``) made no rank line match: the ranks came from the busbw
    factor only, the hosts were unknown, and the device lines' GPU was not read, so `calibrate --from` fitted
    an H100 log to ``gpu=a100`` (exit 0). The host is the words before ``device`` now."""
    path = tmp_path / "spaced.txt"
    path.write_text(SPACED)
    samples, source = read_samples(str(path))
    assert [(s.ranks, s.hosts, s.gpu) for s in samples] == [(4, 2, "NVIDIA H100 80GB HBM3")]
    with pytest.raises(CalibrationError, match=r"name 'NVIDIA H100 80GB HBM3', but the topology builds A100"):
        fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=2,gpu=a100"), [source])
    with pytest.raises(CalibrationError, match=r"hosts"):  # two hosts' ranks on one host: refused
        fit_calibration(samples, Cluster("hgx:hosts=1,gpus_per_host=4,gpu=h100"), [source])
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpu) == (4, 2, "h100")
