"""The quirks of the sixteenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A sixteenth held-out
set"): each test feeds a short excerpt to the log reader (validate.calibration's import and its fit, and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

from pathlib import Path

import nccl_logs
import pytest

from sim.errors import CalibrationError
from validate.calibration import read_samples


def _refused(tmp_path: Path, name: str, text: str, reason: str) -> Path:
    """Write ``text`` as ``name``; both readers must refuse it with ``reason``, in one line."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CalibrationError, match=reason) as err:
        read_samples(str(path))
    assert "\n" not in str(err.value)
    with pytest.raises(nccl_logs.LogError, match=reason):
        nccl_logs.parse_log(path)
    return path


#: mscclpp-test (MSCCL++'s port of nccl-tests, microsoft/mscclpp PR 83's post): nccl-tests' header and device
#: lines, then in-place before out-of-place and no type / redop / root columns
MSCCLPP = """\
# minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 10 iters: 10 validation: 1 graph: 10, kernel num: 0
#
# Using devices
#  Rank  0 Pid  85576 on host-a device  0 [0001:00:00.0] NVIDIA A100-SXM4-80GB
#  Rank  1 Pid  85577 on host-a device  1 [0002:00:00.0] NVIDIA A100-SXM4-80GB
#
# Initializing MSCCL++
# Setting up the connection in MSCCL++
#
#                                    in-place                       out-of-place
#       size         count     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456    12000   89.48   89.48      0

# Out of bounds values : 0 OK
"""


def test_an_mscclpp_test_table_is_refused_as_another_library(tmp_path):
    """mscclpp-test's table (no type / redop / root columns) was refused as a run that "failed or timed out before
    the first" row: the right refusal for the wrong reason. It is named now as MSCCL++'s, in one line."""
    path = _refused(tmp_path, "mscclpp.txt", MSCCLPP, r"mscclpp.txt:7: an MSCCL\+\+ run, not NCCL's")
    # a launch line that preloads MSCCL++'s NCCL replacement, before an nccl-tests table of its own
    nccl = "LD_PRELOAD=/opt/mscclpp/lib/libmscclpp_nccl.so mpirun -np 2 ./build/all_reduce_perf -b 1G -e 1G\n"
    path.write_text(nccl + "\n".join(MSCCLPP.splitlines()[:5]))
    with pytest.raises(CalibrationError, match=r"an MSCCL\+\+ run, not NCCL's \('libmscclpp_nccl.so'\)"):
        read_samples(str(path))
    # a post that only names MSCCL++ in its prose is read as before
    path.write_text("We compare NCCL with MSCCL++ below.\n" + "\n".join(MSCCLPP.splitlines()[:5]) + "\n")
    with pytest.raises(CalibrationError, match=r"failed or timed out before the first"):
        read_samples(str(path))


#: a run of one rank (sparticlesteve/podman-nccl-testing's 1-GPU Perlmutter log): all-reduce's busbw is 0 at every
#: size, and the in-place "time" is NCCL's no-op
ONE_RANK = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 1465118 on  nid001597 device  0 [0x03] NVIDIA A100-SXM4-40GB
NCCL version 2.21.5+cuda12.5
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1     7.27  144.16    0.00      0     0.16  6561.80    0.00      0
  4294967296    1073741824     float     sum      -1   6465.1  664.33    0.00      0     0.18  23880830.11    0.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
"""


def test_a_run_of_one_rank_is_refused_in_one_line(tmp_path):
    """A 1-GPU run was read as 1 rank: `benchmarks/nccl_logs.py` then crashed in the tuner (ZeroDivisionError: a
    ring of one rank has no steps) and only `calibrate` refused it ("one rank moves no data"). The reader refuses
    it now, for every command, in one line."""
    path = _refused(tmp_path, "one.txt", ONE_RANK, r"one.txt: a run of one rank \(nccl-tests on one GPU\)")
    path.write_text("srun ./nccl-tests/build/all_reduce_perf -b 8 -e 4G -f 2\n" + ONE_RANK)  # the log's own launch
    with pytest.raises(CalibrationError, match=r"a run of one rank \(all_reduce_perf on one GPU\)"):
        read_samples(str(path))
    # the same rows stated as 2 ranks are read
    samples, _ = read_samples(f"{path}:ranks=2")
    assert {s.ranks for s in samples} == {2}


#: SURF Snellius's 2-node H100 run (odissei-benchmarks/nccl-tests, NCCL_DEBUG=INFO): another rank's INFO line is
#: glued to a row's first columns (nccl-tests prints size ... root before it times the size), and the row's times
#: follow later on a line of their own
GLUED = """\
# Collective test starting: all_reduce_perf_mpi
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 1904979 on     gcn151 device  0 [0000:06:00] NVIDIA H100
#  Rank  1 Group  0 Pid 1904980 on     gcn151 device  1 [0000:26:00] NVIDIA H100
#  Rank  2 Group  0 Pid 1793998 on     gcn154 device  0 [0000:06:00] NVIDIA H100
#  Rank  3 Group  0 Pid 1793999 on     gcn154 device  1 [0000:26:00] NVIDIA H100
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    69.55   15.08   22.62      0    68.58   15.29   22.94      0
     2097152        524288     float     sum      -1gcn151:1904979:1905073 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/IB/2/GDRDMA
gcn154:1793998:1794081 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [receive] via NET/IB/2/GDRDMA
    87.18   24.05   36.08      0    85.11   24.64   36.96      0
     4194304       1048576     float     sum      -1    137.6   30.48   45.72      0    136.6   30.70   46.05      0
# Out of bounds values : 0 OK
"""


def test_an_info_line_glued_to_a_rows_first_columns(tmp_path):
    """A row's first columns with another rank's INFO line glued to them were read as a row whose time is the INFO
    line's ``[0]``: refused ("time '[0]' is not a number"), the whole log with it. The INFO line is read apart
    now, and the row it cut is left out, as a row INFO lines cut between two lines is."""
    path = tmp_path / "glued.txt"
    path.write_text(GLUED)
    samples, source = read_samples(str(path))
    assert [(s.size, s.ranks, s.hosts, s.gpu) for s in samples] == [
        (1048576, 4, 2, "NVIDIA H100"),
        (4194304, 4, 2, "NVIDIA H100"),
    ]
    assert source.records == 2
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpu) == (4, 2, "h100")
    # the run id hashes the file's lines as they are: the same rows without the glued line are another log
    unglued = GLUED.replace("-1gcn151:1904979:1905073 [0] NCCL INFO", "-1\ngcn151:1904979:1905073 [0] NCCL INFO")
    path.write_text(unglued)
    samples2, source2 = read_samples(str(path))
    assert [s.size for s in samples2] == [1048576, 4194304] and source2.run_ids != source.run_ids


#: a notes page's sendrecv_perf run on one host (the command line alone: no launcher, no header, no rank line)
SENDRECV = """\
Tested on 8 A100 NVLink GPUs:
```
./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   134217728      33554432     float     sum      -1   1211.2  110.81  110.81      0   1211.8  110.76  110.76    N/A
  1073741824     268435456     float     sum      -1   5503.4  195.10  195.10      0   5490.5  195.56  195.56    N/A
```
"""


def test_a_command_line_without_a_launcher_tells_its_ranks(tmp_path):
    """``./build/sendrecv_perf ... -g 8`` with no launcher runs one process of 8 GPUs: the reader said it "cannot
    tell the number of ranks", where the table is a sendrecv's (refused until p2p; now predicted through NCCL's
    p2p path). The bare command's -t x -g count now (after the rank lines, a launcher's and the header's)."""
    path = tmp_path / "sendrecv.txt"
    path.write_text(SENDRECV)
    samples, _ = read_samples(str(path))
    assert {(s.collective, s.ranks) for s in samples} == {("sendrecv", 8)}
    log = nccl_logs.parse_log(path)
    assert (log.collective, log.ranks, log.hosts) == ("sendrecv", 8, 1)
    # a launcher anywhere in the log: its processes are not the bare command's one
    path.write_text("mpirun --host a:8,b:8 bash run.sh\n" + SENDRECV)
    with pytest.raises(CalibrationError, match=r"cannot tell the number of ranks"):
        read_samples(str(path))


def test_nccls_word_that_nvls_is_unavailable_keeps_nvls_out(tmp_path):
    """Snellius's H100 nodes (4 GPUs, no NVSwitch) log ``NVLS multicast support is not available``; the model ran
    NVLS-tree for them (hgx builds 4 H100s on an NVSwitch), 25-33% fast at 16-256 MiB. NCCL's word now keeps
    NVLS and NVLSTree out, as NCCL_NVLS_ENABLE=0 would; a value the log sets itself wins."""
    lines = GLUED.splitlines(keepends=True)
    unavailable = "gcn154:1793998:1794041 [0] NCCL INFO NVLS multicast support is not available on dev 0\n"
    path = tmp_path / "nvls.txt"
    path.write_text("".join(lines[:8] + [unavailable] + lines[8:]))
    samples, _ = read_samples(str(path))
    assert {s.algorithm for s in samples} == {"nccl:algo=^nvls|nvls-tree"}
    path.write_text(GLUED)  # without the line: NCCL's own pick
    assert {s.algorithm for s in read_samples(str(path))[0]} == {"nccl"}
    path.write_text("".join(lines[:8] + [unavailable, "NCCL_NVLS_ENABLE=1\n"] + lines[8:]))  # the log's own value
    assert {s.algorithm for s in read_samples(str(path))[0]} == {"nccl"}
