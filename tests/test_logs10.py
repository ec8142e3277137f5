"""The quirks of the tenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A tenth held-out set"):
each test feeds a short excerpt that reproduces one post's quirk to the log reader (validate.calibration's
import and benchmarks/nccl_logs.py)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples

#: a Perlmutter note's two one-row excerpts of 32-rank runs (8 nodes x 4 GPUs), under a header
#: the poster retyped: the "host profile" run and the "default profile" run, both at 4 GiB
TWO_PROFILES = """\
srun --nodes=8 --ntasks-per-node=4 --gpus-per-task=1 all_reduce_perf -b 8 -e 4G -f 2
The 4 GiB row from the successful host-profile run:
bytes        count       type   redop  root   time(us) algbw busbw errors time(us) algbw busbw errors
4294967296   1073741824 float  sum    -1     120675   35.59 68.96 0      120722   35.58 68.93 0
The default profile also completed, but it was much slower at the large-message end:
bytes        count       type   redop  root   time(us) algbw busbw errors time(us) algbw busbw errors
4294967296   1073741824 float  sum    -1     350261   12.26 23.76 0      349193   12.30 23.83 0
"""

HEADER = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""

#: the same test run twice (two tables), its 25 MiB rows 6% apart: repeats of one setting
TWO_REPEATS = (
    "mpirun -np 16 ./all_reduce_perf -b 25M -e 25M\n"
    + HEADER
    + "    26214400       6553600     float     sum      -1    2009.1  13.05   24.46      0    1873.9   13.99   26.23      0\n"
    + HEADER
    + "    26214400       6553600     float     sum      -1    1896.5   13.82   25.92      0    1873.1   14.00   26.24      0\n"
)


def _log(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_size_measured_twice_by_runs_of_two_settings_is_refused(tmp_path):
    """A Perlmutter note posts the 4 GiB row of a "host profile" run (120.7 ms) and of a "default profile" run
    (350.3 ms), both of 32 ranks: busbw / algbw is 1.94 in both, so the one-run check by rank count passed and
    both rows were read as samples of one point, a 2.9x spread no prediction can meet (27.5% and 75.0% off).
    A size measured at times 2x or more apart is two runs' rows: refused, naming both lines."""
    path = _log(tmp_path, "perlmutter-8node.txt", TWO_PROFILES)
    with pytest.raises(
        CalibrationError,
        match=r"rows of more than one run: 4294967296 B is measured 120675\.0 us "
        r"\(line 4\) and 350261\.0 us \(line 7\), 2\.9x apart",
    ):
        read_samples(str(path))
    with pytest.raises(nccl_logs.LogError, match="rows of more than one run"):
        nccl_logs.parse_log(path)


def test_a_size_measured_twice_at_close_times_is_kept(tmp_path):
    """Repeats that agree (a test run twice, or nccl-tests' -N cycles) are samples of the same point: kept."""
    samples, _ = read_samples(str(_log(tmp_path, "p4de-25M-twice.txt", TWO_REPEATS)))
    assert len(samples) == 2


#: an AMD Accelerator Cloud note's two-node rccl-tests run: rccl-tests' version line, its rank lines without
#: Group, RCCL's and ROCm's version lines before the table
RCCL_RUN = (
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
    "#\n"
    "rccl-tests: Version develop:448c4c7\n"
    "# Using devices\n"
    "#   Rank  0 Pid 3844613 on     gpu-53 device  0 [0000:05:00.0] AMD Instinct MI300X\n"
    "#   Rank  1 Pid  366643 on     gpu-56 device  0 [0000:05:00.0] AMD Instinct MI300X\n"
    "RCCL version : 2.22.3-HEAD:7d8d67c\n"
    "ROCm version : 6.4.2.0-120-e7d83f5\n"
    + HEADER
    + "  8589934592    2147483648     float     sum      -1    45224  189.94  189.94      0    45242  189.87  189.87      0\n"
)


@pytest.mark.parametrize("keep", ["rccl-tests: Version", "RCCL version", "ROCm version"])
def test_an_rccl_run_is_refused_by_the_importer_too(tmp_path, keep):
    """benchmarks/nccl_logs.py skipped rccl-tests runs, but `collsim validate calibrate --from` read one and fitted
    an NVIDIA topology's links to AMD MI300X times (exit 0). Any one of rccl-tests' own lines is refused."""
    others = [m for m in ("rccl-tests: Version", "RCCL version", "ROCm version") if m != keep]
    text = "".join(ln + "\n" for ln in RCCL_RUN.splitlines() if not any(ln.startswith(o) for o in others))
    with pytest.raises(CalibrationError, match=rf"an RCCL run on AMD GPUs \('{keep}'\)"):
        read_samples(str(_log(tmp_path, "mi300x-2node.txt", text)))
