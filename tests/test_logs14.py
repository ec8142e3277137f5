"""The quirks of the fourteenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A fourteenth held-out
set"): each test feeds a short excerpt to the log reader (validate.calibration's import and its fit, and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

#: an OCI quick-start page's 2-node MI355X run, cut by the page to its column lines, two rows and rccl-tests'
#: footer: no rank line, no command, no RCCL or ROCm line (16 ranks: busbw = 1.875 algbw)
RCCL_ROWS = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
# <smaller message sizes truncated>
  8589934592    2147483648     float     sum      -1    43674  196.68  368.78      0    43684  196.64  368.70      0
 17179869184    4294967296     float     sum      -1    86980  197.52  370.34      0    86978  197.52  370.35      0
# Errors with asterisks indicate errors that have exceeded the maximum threshold.
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 135.701
#
# Collective test concluded: all_reduce_perf
"""


def test_rccl_tests_footer_alone_marks_an_amd_run(tmp_path):
    """rccl-tests' ``Errors with asterisks ...`` footer (nccl-tests never prints it) was read as an NVIDIA run
    of 16 ranks, and ``calibrate --from`` fitted hgx's links to the MI355X's rows (exit 0): it is refused as an
    RCCL run now, one line naming the footer, in the importer and so in the benchmark."""
    path = tmp_path / "mi355x.txt"
    path.write_text(RCCL_ROWS)
    with pytest.raises(CalibrationError, match=r"mi355x.txt:6: an RCCL run on AMD GPUs \('Errors with asterisks"):
        read_samples(str(path))
    with pytest.raises(nccl_logs.LogError, match=r"an RCCL run on AMD GPUs"):
        nccl_logs.parse_log(path)
    # the same rows with nccl-tests' own footer read as before: 16 ranks from busbw / algbw
    plain = tmp_path / "nvidia.txt"
    plain.write_text(
        RCCL_ROWS.replace("# Errors with asterisks indicate errors that have exceeded the maximum threshold.\n", "")
    )
    samples, _ = read_samples(str(plain))
    assert [(s.size, s.ranks) for s in samples] == [(8589934592, 16), (17179869184, 16)]


#: a note's 1-node run of 4 H200 (a VM's passthrough) under NCCL 2.31.2, newer than any release collsim knows
NEWER = """\
# nccl-tests version 2.19.7 nccl-headers=23102 nccl-library=23102
# nThread 1 nGpus 4 minBytes 1073741824 maxBytes 2147483648 step: 1048576(bytes) warmup iters: 10 iters: 40
#
# Using devices
#  Rank  0 Group  0 Pid  97166 on nccltest08192 device  0 [0000:f9:05] NVIDIA H200
#  Rank  1 Group  0 Pid  97166 on nccltest08192 device  1 [0000:fb:05] NVIDIA H200
#  Rank  2 Group  0 Pid  97166 on nccltest08192 device  2 [0000:fd:05] NVIDIA H200
#  Rank  3 Group  0 Pid  97166 on nccltest08192 device  3 [0000:ff:05] NVIDIA H200
#
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1  4523.62  237.36  356.04       0  4539.85  236.51  354.77       0
  1074790400     268697600     float     sum      -1  4562.52  235.57  353.35       0  4542.38  236.61  354.92       0
"""


def test_a_release_newer_than_the_newest_known_is_said(tmp_path):
    """A log of NCCL 2.31.2 (``nccl-library=23102``) ran the newest tuner collsim knows without a word (no
    release tag, no calibrate note): the release is named now, as a setting the model does not represent (the
    benchmark's ``[not modelled: ...]`` tag, calibrate's warning); its schedules are unchanged."""
    from sim.nccl.versions import RELEASES

    path = tmp_path / "h200.txt"
    path.write_text(NEWER)
    samples, source = read_samples(str(path))
    newest = ".".join(map(str, RELEASES[-1]))
    assert source.unmodelled == [f"NCCL 2.31.2 (newer than {newest}, whose tuner decides)"]
    assert "version=" not in samples[0].algorithm  # the newest tuner's schedules, as before
    log = nccl_logs.parse_log(path)
    assert log.unmodelled == (f"NCCL 2.31.2 (newer than {newest}, whose tuner decides)",)
    # a release collsim knows is not flagged
    path.write_text(NEWER.replace("23102", "23007"))
    assert read_samples(str(path))[1].unmodelled == []
