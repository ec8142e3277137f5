"""Calibration input: the measurements a calibration is fitted to, read from what users have.

* ``probes`` -- JSON lines of ``python -m validate.calibration.probes`` (``source: "collsim-probe"``): point-to-point
  ping-pong, bidirectional, fan-in/fan-out and local reduction timings per link class;
* ``validate`` -- JSON lines of ``python -m validate`` / ``collsim validate run`` (one per size);
* ``nccl-tests`` -- the text output of ``all_reduce_perf`` and friends (the table, ``#`` header lines);
* ``nccl-tests-json`` -- the file nccl-tests writes with ``-J FILE``.

:func:`read_samples` detects the format and returns flat :class:`Sample` records; anything unusable is
one :class:`~sim.errors.CalibrationError` line naming the file and line. No torch here.

>>> text = '''# Collective test starting: all_reduce_perf
... # nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20
... #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
...      1048576        262144     float     sum      -1   1234.5    0.85    1.27      0   1230.1    0.85    1.28      0
...      2097152        524288     float     sum      -1   2401.0    0.87    1.31      0   2399.9    0.87    1.31      0
... '''
>>> samples, source = parse_nccl_text(text, "ar.txt")
>>> [(s.collective, s.algorithm, s.ranks, s.size, s.time_s) for s in samples]
[('allreduce', 'nccl', 4, 1048576, 0.0012345), ('allreduce', 'nccl', 4, 2097152, 0.002401)]
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim import files
from sim.algorithms.nccl import NCCL_ALGO_NAMES
from sim.collectives import get_collective
from sim.errors import CalibrationError, CollsimError
from sim.nccl.efa import FAMILIES as EFA_FAMILIES
from sim.nccl.p2p import P2P_COLLECTIVES
from sim.nccl.tuner import ALGORITHMS, NCCL_NAMES, PROTOS

from .file import Source, loads_strict

__all__ = [
    "PROBE_TESTS",
    "trimmed_mean",
    "MAX_LINE_BYTES",
    "MAX_SAMPLES",
    "Sample",
    "builtin_algorithm",
    "parse_nccl_json",
    "parse_nccl_text",
    "read_samples",
    "stated_cxi",
    "stated_efa",
    "stated_gpu_model",
    "GPU_NAMES_JOIN",
    "NVLS_UNAVAILABLE",
]

#: the probe tests of ``python -m validate.calibration.probes`` (see validate/calibration/probes.py)
PROBE_TESTS = ("pingpong", "stream", "bidir", "fanin", "fanout", "alltoall", "reduce")
#: relative error assumed for a time that comes without its iterations (nccl-tests, a median)
DEFAULT_SPREAD = 0.02
#: no time is trusted more closely than this (the model's own accuracy)
MODEL_FLOOR = 0.01
#: a line longer than this is not a measurement (and is refused rather than read into memory)
MAX_LINE_BYTES = 1 << 20
#: more samples than this in one input is refused (a calibration needs tens)
MAX_SAMPLES = 200_000
# a size a log measures twice, from REPEAT_MIN_BYTES, at times REPEAT_SPREAD apart: two runs of different settings
REPEAT_MIN_BYTES = 1 << 20
REPEAT_SPREAD = 2.0
#: the JSON file nccl-tests writes is refused beyond this size
MAX_JSON_BYTES = 256 * 2**20

#: which simulated schedule stands for a library's own collective (gloo's and NCCL's defaults)
_BUILTIN = {
    "allreduce": "ring",
    "allgather": "ring",
    "reducescatter": "ring",
    "broadcast": "binomial-tree",
    "reduce": "ring",
    "gather": "flat",
    "scatter": "flat",
    "alltoall": "pairwise",
    "sendrecv": "direct",
}
#: nccl-tests binaries -> collectives (NCCL's schedules of those in :data:`NCCL_COLLECTIVES`)
_NCCL_BINARIES = {
    "all_reduce_perf": "allreduce",
    "all_gather_perf": "allgather",
    "reduce_scatter_perf": "reducescatter",
    "broadcast_perf": "broadcast",
    "reduce_perf": "reduce",
    "gather_perf": "gather",
    "scatter_perf": "scatter",
    "alltoall_perf": "alltoall",
    "sendrecv_perf": "sendrecv",
}
#: the collectives whose NCCL schedules collsim builds (``nccl``: sim/nccl/tuner.py, agrs.py, bcred.py, and NCCL's
#: p2p path for all-to-all and send / receive, p2p.py); an nccl-tests log of another (gather, scatter) runs the
#: textbook schedule of :func:`builtin_algorithm`
NCCL_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", *P2P_COLLECTIVES)


def builtin_algorithm(collective: str) -> str:
    """The simulated algorithm that stands for a library's built-in ``collective`` (gloo's; NCCL's where collsim
    builds no NCCL schedule of it: all-to-all, send / receive, gather, scatter)."""
    return _BUILTIN[get_collective(collective).name]


@dataclass(frozen=True)
class Sample:
    """One measured time: a probe (``test`` set) or a whole collective (``collective`` set), with its
    relative standard error ``spread``."""

    size: int
    time_s: float
    spread: float = DEFAULT_SPREAD  # relative standard error of time_s (the fit's weight)
    test: str = ""
    link_class: str = ""
    fan: int = 1
    collective: str = ""
    algorithm: str = ""  # the simulated algorithm (a library's builtin mapped to its schedule)
    label: str = ""  # the algorithm as measured (``builtin``), when it differs
    ranks: int = 2
    run_id: str = ""
    origin: str = ""
    #: nccl-tests' in-place time of the same size, where the log prints one (0: none); a second measurement
    #: of the same collective, which the NCCL fit takes where it is the faster (:attr:`best_s`)
    in_place_s: float = 0.0
    #: the hosts an nccl-tests log's rank lines name (0: not known); a topology must spread ``ranks`` as widely
    hosts: int = 0
    #: the GPU an nccl-tests log's device lines name, as they name it (``NVIDIA H100 80GB HBM3``; "" where they
    #: name none, or no model; the names joined by :data:`GPU_NAMES_JOIN` where they name several): a topology of
    #: another GPU is refused (:func:`stated_gpu_model`)
    gpu: str = ""

    @property
    def best_s(self) -> float:
        """The faster of the out-of-place and in-place times: interference only ever adds time, so the
        faster of two measurements of one collective is the better estimate of what the hardware does."""
        return min(self.time_s, self.in_place_s) if self.in_place_s > 0 else self.time_s

    @property
    def is_probe(self) -> bool:
        return bool(self.test)


def _number(value: Any, what: str, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CalibrationError(f"{what}: expected a number, got {value!r}"[:200])
    number = float(value)
    if not math.isfinite(number) or (positive and number <= 0) or number < 0:
        raise CalibrationError(f"{what}: expected a finite number {'> 0' if positive else '>= 0'}, got {value!r}")
    return number


def _size(value: Any, what: str) -> int:
    number = _number(value, what)
    if number != int(number) or number > 2**62:
        raise CalibrationError(f"{what}: expected a whole number of bytes, got {value!r}")
    return int(number)


def _ranks(value: Any, what: str) -> int:
    number = _number(value, what)
    if number != int(number) or not 1 <= number <= 1 << 24:
        raise CalibrationError(f"{what}: expected a number of ranks (1..16777216), got {value!r}")
    return int(number)


def _text(value: Any, what: str, *, limit: int = 200) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise CalibrationError(f"{what}: expected a short string, got {value!r}"[:200])
    return value


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a text file, refusing binary data and over-long lines (read by
    :func:`sim.files.iter_lines`: a regular file of at most MAX_JSON_BYTES)."""
    for n, raw in files.iter_lines(
        path, max_line=MAX_LINE_BYTES, limit=MAX_JSON_BYTES, error=CalibrationError, line_of="a measurement"
    ):
        try:
            yield n, raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CalibrationError(f"{path}:{n}: not UTF-8 text") from None


def trimmed_mean(values: list[float], cut: float = 0.1) -> float:
    """The mean of the middle values (``cut`` of them off each end): per-message costs on a busy host
    are bimodal (the receiver running, or waiting for a CPU), and a collective pays their mean, which
    a median misses.

    >>> trimmed_mean([0.3, 0.3, 0.3, 3.0, 3.0, 0.3, 0.3, 0.3, 0.3, 90.0])
    0.975
    """
    ordered = sorted(values)
    k = int(len(ordered) * cut)
    middle = ordered[k : len(ordered) - k] or ordered
    return sum(middle) / len(middle)


def relative_error(values: list[float], floor: float = MODEL_FLOOR) -> float:
    """Relative standard error of :func:`trimmed_mean` over ``values``, with a floor (no measurement is
    trusted beyond the model's own accuracy).

    >>> round(relative_error([1.0, 1.0, 1.0, 1.0]), 4), round(relative_error([1.0, 2.0, 1.0, 2.0, 1.0, 2.0]), 3)
    (0.01, 0.149)
    """
    ordered = sorted(values)
    k = int(len(ordered) * 0.1)
    middle = ordered[k : len(ordered) - k] or ordered
    mean = sum(middle) / len(middle)
    if len(middle) < 2 or mean <= 0:
        return max(floor, DEFAULT_SPREAD)
    var = sum((v - mean) ** 2 for v in middle) / (len(middle) - 1)
    return math.hypot(math.sqrt(var / len(middle)) / mean, floor)


def _loads(text: str) -> Any:
    return loads_strict(text, "a measurement", line=False)


# -- JSON lines: probes and validate ------------------------------------------------------------


def _probe_sample(rec: dict[str, Any], where: str) -> Sample:
    from sim.linkclass import LINK_CLASSES

    test = _text(rec.get("test"), f"{where}: test")
    if test not in PROBE_TESTS:
        raise CalibrationError(f"{where}: test: unknown probe test {test!r} (valid: {', '.join(PROBE_TESTS)})")
    cls = _text(rec.get("link_class"), f"{where}: link_class")
    if cls not in (*LINK_CLASSES, "local"):
        raise CalibrationError(f"{where}: link_class: unknown class {cls!r} (valid: {', '.join(LINK_CLASSES)}, local)")
    fan = _ranks(rec.get("fan", 1), f"{where}: fan")
    time_s = _number(rec.get("time_s"), f"{where}: time_s")
    spread = DEFAULT_SPREAD
    times = rec.get("times_s")
    if isinstance(times, list) and len(times) >= 3:
        values = [_number(t, f"{where}: times_s[{i}]") for i, t in enumerate(times[:100_000])]
        time_s, spread = trimmed_mean(values), relative_error(values)
    return Sample(
        size=_size(rec.get("size_bytes"), f"{where}: size_bytes"),
        time_s=time_s,
        spread=spread,
        test=test,
        link_class=cls,
        fan=fan,
        ranks=_ranks(rec.get("world_size", 2), f"{where}: world_size"),
        run_id=str(rec.get("run_id", ""))[:200],
        origin=where,
    )


def _validate_sample(rec: dict[str, Any], where: str) -> Sample:
    from sim.algorithms import get_algorithm

    coll = _text(rec.get("collective"), f"{where}: collective")
    try:
        collective = get_collective(coll).name
    except CollsimError as exc:
        raise CalibrationError(f"{where}: collective: {exc}") from None
    algorithm = label = _text(rec.get("algorithm"), f"{where}: algorithm")
    if algorithm == "builtin" and rec.get("backend") == "nccl":
        env = rec.get("environment") if isinstance(rec.get("environment"), dict) else {}
        forced = {k: env.get(k) for k in ("nccl_algo", "nccl_proto")}
        forced = {k: v for k, v in forced.items() if isinstance(v, str) and v and v != "default"}
        algo = nccl_algo_option(forced["nccl_algo"], f"{where}: nccl_algo") if "nccl_algo" in forced else None
        proto = forced.get("nccl_proto")
        proto = "|".join(x.strip().lower() for x in re.split(r"[,|]", proto) if x.strip()) if proto else None
        release = env.get("nccl")  # the NCCL torch ran (validate/rank.py: torch.cuda.nccl.version())
        version = _modelled_version(release) if isinstance(release, str) else None
        algorithm = nccl_schedule_spec(collective, algo, proto, version)
        if forced:  # compare and calibrate keep runs under different NCCL_ALGO / NCCL_PROTO apart
            label = "builtin:" + ",".join(f"{k}={v}" for k, v in forced.items())
        elif (ran := _recorded_pick(rec.get("nccl_pick"), collective)) is not None:
            algorithm = nccl_schedule_spec(collective, *ran, version)  # what NCCL ran (``--nccl-picks 1``)
    elif algorithm == "builtin":
        algorithm = builtin_algorithm(collective)
    try:
        algo = get_algorithm(collective, algorithm)
        if algo.name == "ring" and label == algorithm and "order" in type(algo.options).model_fields:
            # validate's ring runs the ranks in rank order (validate/algorithms/ring.py), whatever order
            # the simulator's ring takes by default (``auto``: the rail order on hosts of several GPUs)
            algo = get_algorithm(collective, algo.spec + ("," if ":" in algo.spec else ":") + "order=rank")
        algorithm = algo.spec
    except CollsimError as exc:
        raise CalibrationError(f"{where}: algorithm: {exc}") from None
    wrong = rec.get("wrong")
    if isinstance(wrong, (int, float)) and not isinstance(wrong, bool) and wrong > 0:
        raise CalibrationError(f"{where}: the run had {wrong} wrong element(s); its times are not a measurement")
    times = rec.get("times_s")
    spread = DEFAULT_SPREAD
    if isinstance(times, list) and len(times) >= 3:
        spread = relative_error([_number(t, f"{where}: times_s[{i}]") for i, t in enumerate(times[:100_000])])
    return Sample(
        size=_size(rec.get("size_bytes"), f"{where}: size_bytes"),
        time_s=_number(rec.get("time_s"), f"{where}: time_s"),
        spread=spread,
        collective=collective,
        algorithm=algorithm,
        label=label,
        ranks=_ranks(rec.get("ranks"), f"{where}: ranks"),
        run_id=str(rec.get("run_id", ""))[:200],
        origin=where,
    )


def read_jsonl(path: Path) -> tuple[list[Sample], Source]:
    """Probe or validate JSON lines (one kind per file)."""
    samples: list[Sample] = []
    kinds: set[str] = set()
    runs: dict[str, None] = {}
    for n, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            rec = _loads(line)
        except CalibrationError as exc:
            raise CalibrationError(f"{where}: {exc}") from None
        if not isinstance(rec, dict):
            raise CalibrationError(f"{where}: expected a JSON object per line, got {type(rec).__name__}")
        kind = "probes" if rec.get("source") == "collsim-probe" else "validate"
        kinds.add(kind)
        if len(kinds) > 1:
            raise CalibrationError(f"{where}: probe records and validate records are mixed in one file")
        sample = _probe_sample(rec, where) if kind == "probes" else _validate_sample(rec, where)
        samples.append(sample)
        if sample.run_id:
            runs.setdefault(sample.run_id)
        if len(samples) > MAX_SAMPLES:
            raise CalibrationError(f"{path}: more than {MAX_SAMPLES} records; calibrate from fewer")
    if not samples:
        raise CalibrationError(f"{path}: no measurements in the file")
    kind = kinds.pop()
    return samples, Source(kind=kind, path=str(path), run_ids=list(runs), records=len(samples))  # type: ignore[arg-type]


# -- nccl-tests -----------------------------------------------------------------------------------

#: a result row's start: size, count, a type name
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]")
#: a result row's first columns (size, count, type, redop, root; nccl-tests prints them before it times the size,
#: and the out-of-place side after the first timing) with an NCCL log line (``gcn151:1904979:1905073 [0] NCCL INFO
#: Channel ...``) glued to them: another rank's output, where the row's process had printed no newline yet
#: (``  2097152  524288  float  sum  -1gcn151:...``); the rest of that row comes later, on a line of its own
_GLUED_NCCL_LINE = re.compile(
    r"^(\s*\d+\s+\d+\s+[A-Za-z]\w*\s+(?:\w+\s+)?-?\d+(?:\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\S+)?)\s*"
    r"(?=[\w.-]+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN|TRACE)\b)"
)
#: NCCL's word that it cannot run NVLS (a board without an NVSwitch, a GPU or a driver without multicast): as
#: ``NCCL_NVLS_ENABLE=0``, NVLS and NVLSTree are out of the run's schedules (``... [0] NCCL INFO NVLS multicast
#: support is not available on dev 0``)
NVLS_UNAVAILABLE = re.compile(r"\bNCCL INFO NVLS multicast support is not available\b")
#: what NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING prints for each call on rank 0 (enqueue.cc): ``AllReduce:
#: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..23}`` (2.24 on), ``[AllReduce: ]1048576 Bytes ->
#: Algo 1 proto 0 time 12.3`` (2.20-2.23: NCCL's indices, in the order of :data:`sim.nccl.tuner.ALGORITHMS`)
_TUNING_LINE = re.compile(r"(?:\b([A-Za-z]+):\s+)?(\d+) Bytes -> Algo (\w+) proto (\w+)")
_BY_NAME = {name.upper(): a for a, name in NCCL_NAMES.items()}


def tuning_pick(line: str) -> tuple[str | None, int, str | None, str | None] | None:
    """(NCCL function or None, bytes, algorithm, protocol) of a TUNING line of NCCL's log, the algorithm and
    protocol as the simulator names them (None where it does not model them: PAT), or None for other lines.

    >>> tuning_pick("h:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo NVLS_TREE proto SIMPLE channel{Lo..Hi}={0..15}")
    ('AllReduce', 1048576, 'nvls-tree', 'simple')
    >>> tuning_pick("h:1:1 [0] NCCL INFO 4194304 Bytes -> Algo 0 proto 1 time 61.250000")
    (None, 4194304, 'tree', 'll128')
    """
    if "Bytes -> Algo" not in line or not (m := _TUNING_LINE.search(line)):
        return None
    func, size, algo, proto = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if algo.isdigit():
        name = ALGORITHMS[int(algo)] if int(algo) < len(ALGORITHMS) else None
    else:
        name = _BY_NAME.get(algo.upper().replace("_", ""))
    if proto.isdigit():
        kind = PROTOS[int(proto)] if int(proto) < len(PROTOS) else None
    else:
        kind = proto.lower() if proto.lower() in PROTOS else None
    return func, size, name, kind


#: where the time column is: after size, count, type, redop and root today; older nccl-tests print no root
#: column (``size count type redop time ...``), and older still no redop either
_TIME_COLUMNS = (5, 4, 3)
_NGPUS = re.compile(r"nThread\s+(\d+)\s+nGpus\s+(\d+)")
#: a device line, ``#  Rank  3 Group  0 Pid 123 on node1 device  3 [0000:1b:00] NVIDIA H100 80GB HBM3``: (rank,
#: host, device name, and a host a post wrote after the device: ``(node 1)``); older nccl-tests print no
#: ``Group``, a container may print no host name, a page rendered as markdown may have lost the ``#``, and
#: posts abridge them (``Pid 221599 device  0 ...`` without ``on``, no ``Pid``, ``Pid ...``, no ``[bus id]``:
#: ``device  0 Tesla V100-PCIE-16GB``), or redact the host to words (``on NODE A device  0``, nccl-tests issue
#: 347: the host is ``NODE A``): :func:`rank_host`
RANK_LINE = re.compile(
    r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\S+\s+)?(?:on\s+(?:(\S+(?:[ \t]+(?!device\b)\S+)*)\s+)?)?device\s+\d+\s+"
    r"(?:\[[^\]]*\]\s*)?(.*?)\s*(?:\((node\s*\d+)\))?$"
)


def rank_host(m: re.Match[str]) -> str:
    """The host a :data:`RANK_LINE` match names ("" where it names none).

    >>> rank_host(RANK_LINE.match("#  Rank  8 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 1)"))
    'node 1'
    >>> m = RANK_LINE.match("#  Rank  1 Group  0 Pid 221599 device  1 [0000:90:00] NVIDIA B200")
    >>> rank_host(m), m.group(3)
    ('', 'NVIDIA B200')
    >>> m = RANK_LINE.match("#  Rank  2 Group  0 Pid 1976151 on NODE A  device  2 [0000:44:00] NVIDIA H100 80GB HBM3")
    >>> rank_host(m), m.group(3)
    ('NODE A', 'NVIDIA H100 80GB HBM3')
    """
    return m.group(2) or m.group(4) or ""


_STARTING = re.compile(r"Collective test starting:\s*(\S+)")
#: what rccl-tests (AMD's port of nccl-tests) prints and nccl-tests does not: its version line, RCCL's, ROCm's;
#: or a launch line that runs an rccl-tests binary (``/opt/rccl-tests/build/all_reduce_perf``) or loads RCCL's
#: library (``LD_PRELOAD=/root/rccl/build/release/librccl.so.1.0``): a post that abridges the output to its rows;
#: or rccl-tests' footer line ``# Errors with asterisks indicate errors that have exceeded the maximum threshold.``,
#: which nccl-tests (to 2.19.6) never prints: a post cut to its rows and footer keeps it
_RCCL_LINE = re.compile(
    r"\brccl-tests: Version\b|\bRCCL version\b|\bLibrccl path\b|\bROCm version\b"
    r"|\brccl-tests/(?:[\w.-]+/)*\w+_perf\b|\blibrccl[\w-]*\.so\b"
    r"|\bErrors with asterisks indicate errors that have exceeded\b",
    re.I,
)
#: what another library's benchmark prints that nccl-tests does not: mscclpp-test (MSCCL++'s port of nccl-tests:
#: ``# Initializing MSCCL++``, ``# Setting up the connection in MSCCL++``), a launch line that preloads MSCCL++'s
#: NCCL replacement (``libmscclpp_nccl.so``) or runs mscclpp-test's binaries. Its table looks like nccl-tests' (in-place
#: first, no type / redop / root columns) but times MSCCL++'s kernels; a post that names MSCCL++ in its prose is read
_MSCCLPP_LINE = re.compile(
    r"\bInitializing MSCCL\+\+|\bconnection in MSCCL\+\+|\blibmscclpp\w*\.so\b|\bmscclpp[-_]test\b", re.I
)
#: a launcher's label in front of every line: ``srun --label`` (`` 0: ``), Open MPI's ``--tag-output``
#: (``[1,0]<stdout>:``), MPICH / Intel MPI's ``-prepend-rank`` (``[0] ``)
_LABEL = re.compile(r"^\s*(?:\d+:|\[\d+,\d+\]<std(?:out|err)>:|\[\d+\](?=\s))\s?")
#: a job runner's label in front of those: SkyPilot's (Ray's) ``(head, rank=0, pid=3808) ``,
#: ``(worker1, rank=1, pid=2769, ip=10.0.0.2) ``
_RUNNER_LABEL = re.compile(r"^\s*\([\w.-]+(?:, rank=\d+)?, pid=\d+(?:, ip=[\w.:-]+)?\)\s?")
#: what else a post puts in front of every line: a time stamp (``2024-05-01T12:00:00.123Z``, ``[2024-05-01
#: 12:00:00]``, ``[12:00:00]``), a host's name where pdsh / clush / ``kubectl logs --prefix`` gather the output
#: (``node01: ``, before nccl-tests' own ``#`` lines and rows only: ``NCCL_MIN_NCHANNELS: 32`` is a setting),
#: Markdown's quote (``> ``); they stack (``> node01: [1,0]<stdout>:``)
_POST_LABEL = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?|\[\d\d:\d\d:\d\d(?:[.,]\d+)?\])"
    r":?\s|^\s*(?!NCCL_)[A-Za-z][\w.-]*:\s+(?=[#\d[>]|[A-Za-z][\w.-]*:\s)|^\s*>(?:\s|$)"
)


def strip_label(line: str) -> str:
    """``line`` without the label a launcher puts in front of it (a result row has none of these), and
    without a job runner's label in front of that.

    >>> strip_label(" 3: #  Rank  3 Group"), strip_label("[1,0]<stdout>:#   Rank  0 Pid"), strip_label("[0] # nThread 1")
    ('#  Rank  3 Group', '#   Rank  0 Pid', '# nThread 1')
    >>> strip_label("(head, rank=0, pid=3808) [1,0]<stdout>:# nThread 1"), strip_label("(worker1, rank=1, pid=2) x")
    ('# nThread 1', 'x')
    >>> strip_label("> node01: 2024-05-01T12:00:00Z  0: # nThread 1"), strip_label("NCCL_MIN_NCHANNELS: 32")
    ('# nThread 1', 'NCCL_MIN_NCHANNELS: 32')
    """
    for _ in range(4):  # (a few labels deep at most)
        bare = _LABEL.sub("", _RUNNER_LABEL.sub("", _POST_LABEL.sub("", line, count=1), count=1), count=1)
        if bare == line:
            break
        line = bare
    return line


#: a binary's name as it appears in a command line: ``all_reduce_perf``, ``./build/all_reduce_perf_mpi``
_BINARY = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(_NCCL_BINARIES) + r")(?:_mpi)?(?![A-Za-z0-9_])")
#: NCCL settings that change how fast a collective runs but that the model does not represent: the channel
#: (CTA) counts, threads, buffers, QPs and NIC choices, NVLink / PCIe peer access turned off (``P2P_DISABLE=1``:
#: a host's GPUs exchange through host memory) (a log that sets them is reported as such)
_UNMODELLED = (
    "MIN_CTAS MAX_CTAS MIN_NCHANNELS MAX_NCHANNELS MIN_NRINGS MAX_NRINGS NVLS_NCHANNELS NTHREADS BUFFSIZE "
    "IB_QPS_PER_CONNECTION IB_SPLIT_DATA_ON_QPS NCHANNELS_PER_NET_PEER CROSS_NIC P2P_NET_CHUNKSIZE NET_GDR_LEVEL "
    "IB_ADAPTIVE_ROUTING CTA_POLICY P2P_DISABLE"
).split()
_UNMODELLED_ENV = re.compile(rf"\bNCCL_({'|'.join(_UNMODELLED)})\s*[=:]\s*[\"']?([A-Za-z0-9_.]+)")
#: (NCCL 2.24+ maps functions to lists: ``allreduce:tree``, ``ring;allgather:ring``; only the first can lack a prefix)
_NCCL_ENV = re.compile(
    r"\bNCCL_(ALGO|PROTO|NVLS_ENABLE)\s*[=:]\s*[\"']?"
    r"((?:[A-Za-z]+:[\^A-Za-z0-9_,|]+|[\^A-Za-z0-9_,|]+)(?:;[A-Za-z]+:[\^A-Za-z0-9_,|]+)*)"
)
#: the NCCL release a log states: NCCL's own line (``NCCL version 2.26.2+cuda12.8``, printed by rank 0 and
#: in NCCL_DEBUG=INFO output), nccl-tests' header (``nccl-library=22602``), a ``#%`` line (``NCCL 2.26.5``)
_NCCL_VERSION_LINE = re.compile(r"\bNCCL version\s+v?(\d+\.\d+\.\d+)")
_NCCL_LIBRARY = re.compile(r"\bnccl-library=(\d+)")
_NCCL_VERSION_STATED = re.compile(r"\bNCCL\s+v?(\d+\.\d+\.\d+)\b")
#: ... or as NCCL's packages name it (``nccl_2.23.4-1``, libnccl2 ``2.23.4-1``), in a container image's tag or an
#: environment's name: ``nccl-tests:...-nccl2.16.2-1-253a5b1``, ``uenv nccl-tests/nccl-2.23.4-1-aws-1.13.0``
_NCCL_PACKAGE_STATED = re.compile(r"(?<![A-Za-z0-9.])nccl[-_]?(\d+\.\d+\.\d+)-\d+(?![\d.])", re.I)
#: Google's GPUDirect (gIB) wrapper names the test by its collective: ``run_nccl_tests.sh -t all_gather``
_GIB_TEST = re.compile(
    r"\brun_nccl_tests\.sh\b[^\n]*?\s-t\s+(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv)\b"
)
#: GPUDirect-TCPX's image names its scripts by the test they run: ``/scripts/run-allgather.sh 8 eth1,... 8M 8GB 2``,
#: and Google's cluster-toolkit wraps them as ``/scripts/allgather.sh nccl-host-1 nccl-host-2``
_TCPX_SCRIPT = re.compile(r"(?<![\w-])(?:run-)?(allgather|allreduce|reducescatter)\.sh\b")
_TCPX_TESTS = {"allgather": "all_gather", "allreduce": "all_reduce", "reducescatter": "reduce_scatter"}
_MPI_RANKS = re.compile(r"(?:mpirun|mpiexec)\b[^\n]*?\s(?:-n|-np|--np|--n)[\s=](\d+)")
_SRUN_TASKS = re.compile(r"\bsrun\b[^\n]*?\s(?:-n|--ntasks)[\s=](\d+)")
_SRUN_NODES = re.compile(r"\bsrun\b[^\n]*?\s(?:-N|--nodes)[\s=](\d+)")
_PER_NODE = re.compile(r"--ntasks-per-node[\s=](\d+)")
#: the GPUs (``-g`` / ``--ngpus``) and threads (``-t`` / ``--nthreads``) each process of a launch line's test drives
TEST_GPUS = re.compile(r"_perf\S*\s(?:[^\n]*?\s)?(?:-g|--ngpus)[\s=](\d+)\b")
_TEST_THREADS = re.compile(r"_perf\S*\s(?:[^\n]*?\s)?(?:-t|--nthreads)[\s=](\d+)\b")
#: a launcher of several processes (a line that names none runs one nccl-tests process: its -t x -g GPUs)
_LAUNCHER = re.compile(
    r"\b(?:mpirun|mpiexec|orterun|srun|sbatch|salloc|torchrun|jsrun|aprun|flux|kubectl|pdsh|clush)\b"
)

#: GPU models as device lines and headers name them (``NVIDIA H100 80GB HBM3``, ``Tesla V100-SXM2-16GB``,
#: ``8x A100``): the ones ``hgx`` builds and others
GPU_MODEL = re.compile(
    r"(?:(?<=\dx)|(?<![A-Za-z0-9]))(GB[23]00|B[123]00|GH200|H200|H100|H800|H20|A100|A800|A40|A30|A10G?|V100|L40S?|L4"
    # older boards, by their names only as written (``Tesla P40``): ``p4d`` / ``t4`` are other things in lower case
    r"|(?-i:P100|P40|T4|K80|K40|M60|M40)(?![A-Za-z]))(?![0-9])",
    re.I,
)
#: a device line that names no model (``NVIDIA Graphics Device``: a board the driver does not know by name)
UNNAMED_DEVICE = re.compile(r"^(?:NVIDIA\s+)?(?:Graphics\s+)?Device\b|^\s*$", re.I)
#: a GPU's name where it is a PCIe card (``NVIDIA H200 NVL``, ``Tesla V100-PCIE-16GB``, ``H100 PCIe``): no NVSwitch
PCIE_CARD = re.compile(r"PCIe|PCIE|\bNVL\b")

#: the host list of an MPI launch (``mpirun -H 10.0.0.1:8,10.0.0.2:8``, ``--host a:1,b:1``, MPICH / Hydra's
#: ``mpiexec -hosts a,b``)
_HOST_LIST = re.compile(r"\b(?:mpirun|mpiexec)\b[^\n]*?\s(?:-H|--host|-hosts?)[\s=]+(\S+)")
#: processes per node as a launch line states them: Slurm's ``--ntasks-per-node=K`` (srun, ``#SBATCH``), Open
#: MPI's ``-npernode K`` / ``-N K`` (per node there; srun's ``-N`` counts nodes) / ``--map-by ppr:K:node``,
#: MPICH / Hydra's (and Intel MPI's) ``-ppn K`` / ``--ppn K``
_PER_NODE_SLURM = re.compile(r"(?:\bsrun\b|#SBATCH)[^\n]*?--ntasks-per-node[\s=](\d+)\b")
_PER_NODE_MPI = re.compile(
    r"\b(?:mpirun|mpiexec)\b[^\n]*?(?:\s--?npernode[\s=]|\s--?ppn[\s=]|\s-N\s+|\sppr:(?=\d+:node))(\d+)\b"
)


def launch_hosts(text: str, ranks: int) -> int:
    """The hosts an MPI launch command of ``text`` lists where its slots, the same on each, account for
    ``ranks`` (each process driving ranks / slots GPUs: ``-g``), else the nodes its processes per node
    (``srun --ntasks-per-node``, ``mpirun -npernode``, ``mpiexec -ppn``) make of ``ranks`` (each driving the
    GPUs nccl-tests' header, else the test's ``-g``, gives), else 0.

    >>> launch_hosts("mpirun -H 10.244.1.10:1,10.244.2.21:1 -x A=1 ./all_reduce_perf -g 1", 2)
    2
    >>> launch_hosts("mpirun -np 16 -H a:8,b:8 ./all_reduce_perf", 16), launch_hosts("mpirun -H a:8,b:4 x", 12)
    (2, 0)
    >>> launch_hosts("srun --mpi=pmi2 -n 8 --ntasks-per-node=4 ./build/all_reduce_perf -b 1M -e 8G", 8)
    2
    >>> launch_hosts("mpirun -np 4 -npernode 2 ./all_reduce_perf -g 4", 16), launch_hosts("srun -N 2 x", 16)
    (2, 0)
    >>> launch_hosts("mpiexec -n 16 -ppn 8 ./all_reduce_perf -g 1", 16), launch_hosts("mpiexec --ppn=4 -n 16 x", 16)
    (2, 4)
    >>> launch_hosts("mpiexec.hydra -hosts gpu1,gpu2 -n 16 ./all_reduce_perf -g 1", 16)
    2
    """
    for m in _HOST_LIST.finditer(text):
        slots: Counter[str] = Counter()
        for item in m.group(1).strip("'\"").split(","):
            name, _, count = item.partition(":")
            slots[name] += int(count) if count.isdigit() else 1
        if len(slots) > 1 and len(set(slots.values())) == 1 and ranks % sum(slots.values()) == 0:
            return len(slots)
    joined = re.sub(r"\\[ \t]*\n", " ", text)  # a command continued over lines (``\``)
    per_node = _PER_NODE_SLURM.search(joined) or _PER_NODE_MPI.search(joined)
    if per_node and int(per_node.group(1)):
        if header := _NGPUS.search(text):
            gpus = int(header.group(1)) * int(header.group(2))
        else:
            gpus = int(g.group(1)) if (g := TEST_GPUS.search(joined)) else 1
        node = int(per_node.group(1)) * max(gpus, 1)
        if ranks % node == 0:
            return ranks // node
    return 0


def stated_gpu_model(device: str) -> str:
    """The model a device line's GPU name names, lower case (``h100``, ``gh200``), else the name itself
    (a board :data:`GPU_MODEL` does not list: ``NVIDIA GeForce RTX 5090``); "" for a name of no model.

    >>> stated_gpu_model("NVIDIA H100 80GB HBM3"), stated_gpu_model("NVIDIA GH200 120GB")
    ('h100', 'gh200')
    >>> stated_gpu_model("NVIDIA GeForce RTX 5090"), stated_gpu_model("NVIDIA Graphics Device")
    ('NVIDIA GeForce RTX 5090', '')
    """
    if UNNAMED_DEVICE.search(device):
        return ""
    return m.group(1).lower() if (m := GPU_MODEL.search(device)) else device.strip()


#: what joins the GPU names of device lines that name several models in :attr:`Sample.gpu` (one run across hosts
#: of different GPUs: ``NVIDIA H100 PCIe`` on one host, ``NVIDIA A100-PCIE-40GB`` on the other)
GPU_NAMES_JOIN = " + "


def _device_gpu(devices: Iterable[str]) -> str:
    """The GPU name the device lines give where they name one model, the names of each joined by
    :data:`GPU_NAMES_JOIN` where they name several (no ``hgx`` topology builds hosts of two models: the NCCL fit
    refuses them), "" where they name none.

    >>> _device_gpu(["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3 "]), _device_gpu(["NVIDIA Graphics Device"])
    ('NVIDIA H100 80GB HBM3', '')
    >>> _device_gpu(["NVIDIA H100 PCIe", "NVIDIA A100-PCIE-40GB"])
    'NVIDIA A100-PCIE-40GB + NVIDIA H100 PCIe'
    """
    named = {stated_gpu_model(d): d.strip() for d in sorted(devices)}
    named.pop("", None)
    return GPU_NAMES_JOIN.join(name for _, name in sorted(named.items()))


#: what says a log ran over AWS EFA: NCCL's NET plugin for it (aws-ofi-nccl: ``NET/OFI`` lines, the network
#: ``AWS Libfabric`` / ``Libfabric``), libfabric's EFA provider, or an EFA instance type named in the header
_EFA_PLUGIN_LINE = re.compile(r"\bNET/OFI\b|\bNET/(?:AWS )?Libfabric\b|\bUsing network (?:AWS )?Libfabric\b")
_EFA_PROVIDER = re.compile(r"\bFI_PROVIDER\s*[=:]\s*[\"']?efa\b|\bSelected [Pp]rovider is efa\b")
#: libfabric over another provider (HPE Slingshot's ``cxi``, ``tcp``): the same plugin, not EFA
_OTHER_PROVIDER = re.compile(r"\bSelected [Pp]rovider is (?!efa\b)(\w+)")
#: libfabric's provider for HPE Slingshot set for the run
_CXI_PROVIDER = re.compile(r"\bFI_PROVIDER\s*[=:]\s*[\"']?cxi\b")
#: AWS's EFA instance types (the GPU ones the ``aws-*`` presets of ``hgx`` build: sim.nccl.efa.FAMILIES)
_EFA_INSTANCES = "|".join(sorted(EFA_FAMILIES, key=len, reverse=True))  # longest first: p5en before p5
_EFA_INSTANCE_RE = re.compile(rf"\b({_EFA_INSTANCES})(?:\.\d*xlarge|\b)", re.I)
#: the plugin's own line naming the instance type it runs on (v1.3.0-aws on)
_EFA_RUNNING_ON = re.compile(rf"Running on ({_EFA_INSTANCES})\.\d*xlarge platform")
#: the plugin's release as it prints it (``NET/OFI Initializing aws-ofi-nccl 1.14.0`` from 1.8.0, ``NET/OFI Using
#: aws-ofi-nccl 1.5.0aws`` before) or a header / build states it (``aws-ofi-nccl 1.7.3-aws``,
#: ``AWS_OFI_NCCL_VERSION=v1.8.1``)
_EFA_PLUGIN_VERSION = re.compile(
    r"\baws-ofi-nccl[ :=]+v?(\d+\.\d+(?:\.\d+)?)|\bAWS_OFI_NCCL_VERSION\s*[=:]\s*v?(\d+\.\d+(?:\.\d+)?)"
    # AWS's container images name it in their tags: ``efa1.43.2-ofi1.16.3-nccl2.27.7-1-tests2.16.9``
    r"|(?<![A-Za-z0-9])ofi-?v?(\d+\.\d+\.\d+)(?![\w.])",
    re.I,
)
#: ``NET/OFI Running on P4d platform, Setting NCCL_TOPO_FILE ...``: the wording of plugins 1.1.3-1.2.x (src/
#: nccl_ofi_net.c at v1.1.3-aws to v1.2.0-aws; v1.3.0-aws prints the instance type in its place)
_EFA_OLD_PLATFORM_LINE = re.compile(r"NET/OFI Running on P4d platform, Setting NCCL_TOPO_FILE")


def stated_efa(text: str) -> tuple[str | None, str | None] | None:
    """Whether a log ran over AWS EFA, and then (instance type, aws-ofi-nccl release) as far as it says:
    the instance family ``p4d`` (p4d, p4de), ``p5`` (p5, p5e) or ``p5en`` from the plugin's ``Running on ...
    platform`` line or the header, and the plugin's release from its ``NET/OFI Initializing aws-ofi-nccl``
    (``Using aws-ofi-nccl``) line or the header; None where the log shows no EFA (libfabric over another
    provider, such as Slingshot's ``cxi``, selected or set by ``FI_PROVIDER``, is not EFA: :func:`stated_cxi`).
    A plugin that prints only the 1.1.3-1.2.x wording ``Running on P4d platform`` is taken as 1.1.3: a 1.2.x
    built for the NCCL of such a log (before 2.12) reports no latency either (src/nccl_ofi_net.c:
    ``#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 12, 0)``).

    >>> stated_efa("x:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0\\nx:1:1 [0] NCCL INFO Using network AWS Libfabric")
    (None, '1.14.0')
    >>> stated_efa("#% 2x p4de.24xlarge, 4x 100 Gbps EFA"), stated_efa("mpirun -x FI_PROVIDER=efa ./all_reduce_perf")
    (('p4d', None), (None, None))
    >>> stated_efa("[0] NCCL INFO NET/OFI Running on P4d platform, Setting NCCL_TOPO_FILE environment variable to /x")
    (None, '1.1.3')
    >>> stated_efa("#% two p5.48xlarge (aws-ofi-nccl 1.7.3-aws)"), stated_efa("NET/OFI Using aws-ofi-nccl 1.5.0aws")
    (('p5', '1.7.3'), (None, '1.5.0'))
    >>> stated_efa("NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)\\nUsing network AWS Libfabric") is None
    True
    >>> stated_efa("#% 8x H100, 8x 400 Gb/s InfiniBand") is None, stated_efa("# p5.48xlarge: 32x 100 Gbps EFA")
    (True, ('p5', None))
    >>> stated_efa("#% 2 p5.48xlarge, image efa1.43.2-ofi1.16.3-nccl2.27.7-1-tests2.16.9")
    ('p5', '1.16.3')
    """
    header = header_lines_of(text)
    named = _EFA_INSTANCE_RE.search(header) or _EFA_RUNNING_ON.search(text)
    efa = _EFA_PLUGIN_LINE.search(text) or _EFA_PROVIDER.search(text) or named or re.search(r"\bEFA\b", header)
    if not efa or ((_OTHER_PROVIDER.search(text) or _CXI_PROVIDER.search(text)) and not _EFA_PROVIDER.search(text)):
        return None
    platform = EFA_FAMILIES[named.group(1).lower()] if named else None
    plugin = None
    if m := _EFA_PLUGIN_VERSION.search(text):
        plugin = m.group(1) or m.group(2) or m.group(3)
    elif _EFA_OLD_PLATFORM_LINE.search(text):
        plugin = "1.1.3"
    return platform, plugin


#: what names AWS's NET plugin without a provider: its own lines (:data:`_EFA_PLUGIN_LINE`), its name, or NCCL_NET
#: set to it
_OFI_PLUGIN_NAMED = re.compile(
    r"\baws-ofi-nccl\b|\bAWS[ -]OFI[ -]NCCL\b|\bNCCL_NET\s*[=:]\s*[\"']?(?:AWS )?Libfabric\b", re.I
)
#: HPE Slingshot as a log's header names it (its NIC's libfabric provider ``cxi`` too)
_SLINGSHOT = re.compile(r"\bSlingshot\b|\bcxi\b", re.I)


def stated_cxi(text: str) -> str | None:
    """Whether a log ran NCCL over HPE Slingshot through AWS's NET plugin on libfabric's ``cxi`` provider
    (:mod:`sim.nccl.ofi`), and then the plugin's release as it states it (``""`` where it states none); None
    otherwise. Either the plugin's ``Selected provider is cxi`` line, or Slingshot (``cxi``) named in the header
    or ``FI_PROVIDER=cxi`` set together with the plugin named (its ``NET/OFI`` lines, ``aws-ofi-nccl``,
    ``NCCL_NET='AWS Libfabric'``). Slingshot named alone is not enough: NCCL without the plugin runs over TCP
    sockets there. Never a log :func:`stated_efa` reads as EFA.

    >>> stated_cxi("x [0] NCCL INFO NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)")
    ''
    >>> stated_cxi("#% 4 Polaris nodes, HPE Slingshot 11 (cxi, aws-ofi-nccl 1.6.0), 2 NICs/node")
    '1.6.0'
    >>> stated_cxi("#% 8 Polaris nodes, HPE Slingshot 11; README setup (4): NCCL_NET='AWS Libfabric'")
    ''
    >>> stated_cxi("#% 8 Polaris nodes, HPE Slingshot 11; 'This will use TCP'") is None
    True
    >>> stated_cxi("x [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)") is None
    True
    """
    header = header_lines_of(text)
    provider = _OTHER_PROVIDER.search(text)
    if provider and provider.group(1) != "cxi":
        return None
    named = _OFI_PLUGIN_NAMED.search(text) or _EFA_PLUGIN_LINE.search(text)
    if not provider and not (named and (_SLINGSHOT.search(header) or _CXI_PROVIDER.search(text))):
        return None
    if stated_efa(text) is not None:
        return None
    m = _EFA_PLUGIN_VERSION.search(text)
    return (m.group(1) or m.group(2) or m.group(3)) if m else ""


def header_lines_of(text: str) -> str:
    """A log's header comment lines (``#%`` ones included), not its rank lines."""
    return "\n".join(
        line
        for line in map(strip_label, text.splitlines())
        if line.lstrip().startswith("#") and not RANK_LINE.match(line.strip())
    )


def command_ranks(line: str) -> int:
    """The rank count a launch command names, or 0: ``mpirun -np N``, ``srun -n N``, or ``srun -N NODES
    --ntasks-per-node=K`` (``srun -N`` alone counts nodes, not ranks; Open MPI's ``-N`` is per node).

    >>> command_ranks("mpirun -np 16 -H a:8,b:8 ./all_reduce_perf -b 8 -e 1G")
    16
    >>> command_ranks("srun -N 2 --ntasks-per-node=8 all_reduce_perf -g 1")
    16
    >>> command_ranks("srun -N 4 all_reduce_perf -g 8")  # one task per node: nodes x nGpus (the caller)
    0
    """
    if m := _MPI_RANKS.search(line) or _SRUN_TASKS.search(line):
        return int(m.group(1))
    if (m := _SRUN_NODES.search(line)) and (k := _PER_NODE.search(line)):
        return int(m.group(1)) * int(k.group(1))
    return 0


def stated_nccl_version(line: str) -> tuple[int, str] | None:
    """(rank, version) where ``line`` (its launcher label stripped) states the NCCL release that ran: NCCL's
    ``NCCL version X.Y.Z`` line (rank 0: what ran), nccl-tests' ``nccl-library=NNNNN`` (1), a ``#%`` header
    line's ``NCCL X.Y.Z``, or the release as NCCL's packages name it (``nccl-2.23.4-1`` in an image tag or an
    environment's name) (2: what the log's collector states); None where it states none.

    >>> stated_nccl_version("host:12:12 [0] NCCL INFO NCCL version 2.26.2+cuda12.8")
    (0, '2.26.2')
    >>> stated_nccl_version("# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501")
    (1, '2.25.1')
    >>> stated_nccl_version("#% 2x BM.GPU4.8, Ubuntu 24.04, NCCL 2.26.5, OpenMPI 5.0.8"), stated_nccl_version("# NCCL 2.1.1")
    ((2, '2.26.5'), None)
    >>> stated_nccl_version("#% 2 nodes, image nccl-tests:11.8.0-cudnn8-devel-ubuntu20.04-nccl2.16.2-1-253a5b1")
    (2, '2.16.2')
    >>> stated_nccl_version("#% uenv nccl-tests/nccl-2.23.4-1-aws-1.13.0"), stated_nccl_version("#% nccl-tests 2.13.9-1")
    ((2, '2.23.4'), None)
    """
    if m := _NCCL_VERSION_LINE.search(line):
        return 0, m.group(1)
    if m := _NCCL_LIBRARY.search(line):
        return 1, nccl_release(int(m.group(1)))
    if line.startswith("#%") and (m := _NCCL_VERSION_STATED.search(line) or _NCCL_PACKAGE_STATED.search(line)):
        return 2, m.group(1)
    return None


def nccl_release(code: int) -> str:
    """NCCL's ``NCCL_VERSION_CODE`` as a release: X * 10000 + Y * 100 + Z since 2.9, X * 1000 + Y * 100 + Z before.

    >>> nccl_release(22809), nccl_release(2804)
    ('2.28.9', '2.8.4')
    """
    major, rest = (code // 10000, code % 10000) if code >= 10000 else (code // 1000, code % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


#: nccl-tests built with MPI=1 names its binaries ``*_perf_mpi`` (its "Collective test starting" line too)
_NCCL_BINARY_MPI = re.compile(r"(?<=_perf)_mpi$")


def _collective_of(program: str | None, where: str, hint: str | None) -> str:
    if hint:
        try:
            return get_collective(hint).name
        except CollsimError as exc:
            raise CalibrationError(f"{where}: {exc}") from None
    name = _NCCL_BINARY_MPI.sub("", os.path.basename(program or ""))  # all_reduce_perf_mpi: all_reduce_perf
    if name in _NCCL_BINARIES:
        return _NCCL_BINARIES[name]
    if name in _NCCL_BINARIES.values():
        return name
    raise CalibrationError(
        f"{where}: cannot tell which nccl-tests binary wrote this (no '# Collective test starting' line); "
        "name the collective (e.g. FILE:collective=allreduce)"
    )


def nccl_algo_option(value: str, where: str) -> str:
    """An NCCL_ALGO value (``RING``, ``Tree,Ring``, ``^NVLS``) as the ``nccl`` algorithm's ``algo`` option
    (``ring``, ``tree|ring``, ``^nvls``); one that is not NCCL's is an error naming ``where``."""
    text = value.strip().lower()
    exclude = text.startswith("^")
    items = [x.strip() for x in re.split(r"[,|]", text.lstrip("^")) if x.strip()]
    bad = [x for x in items if x not in NCCL_ALGO_NAMES]
    if not items or bad:
        raise CalibrationError(
            f"{where}: NCCL algorithm {value!r} is not one the simulator runs "
            f"(valid: {', '.join(name.lower() for name in NCCL_NAMES.values())})"
        )
    return ("^" if exclude else "") + "|".join(dict.fromkeys(NCCL_ALGO_NAMES[x] for x in items))


def nccl_schedule_spec(
    collective: str, algo: str | None = None, proto: str | None = None, version: str | None = None
) -> str:
    """The simulated schedule of an nccl-tests run: ``nccl`` (NCCL's pick, restricted by NCCL_ALGO /
    NCCL_PROTO, by the tuner of the NCCL ``version`` that ran where the log states it) for the collectives
    whose NCCL schedules collsim builds (:data:`NCCL_COLLECTIVES`), the textbook schedule NCCL runs for the others.
    NCCL_ALGO / NCCL_PROTO do not apply to all-to-all and send / receive (NCCL's p2p path): left out."""
    if collective not in NCCL_COLLECTIVES:
        return builtin_algorithm(collective)
    if collective in P2P_COLLECTIVES:
        algo = proto = None
    options = [f"algo={algo}"] if algo else []
    options += [f"proto={proto}"] if proto else []
    options += [f"version={version}"] if version else []
    return "nccl" + (":" + ",".join(options) if options else "")


def _time_us(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CalibrationError(f"{where}: time {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise CalibrationError(f"{where}: time must be a finite number > 0 us, got {text!r}")
    return value


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


#: the in-place time's offset from the out-of-place time's column: ``time algbw busbw #wrong`` per side, and
#: since nccl-tests 2.19 with ``-I`` (per-iteration timing) ``i_min i_max i_p99 i_cv%`` after each side's four
_IN_PLACE_OFFSETS = (4, 8)


#: a column-header line with a column of the poster's before nccl-tests' first (``p4dn  size  count  type ...``)
_LEADING_COLUMN = re.compile(r"^([^#\s]\S*)\s+size\s+count\s+type\b")
#: a row whose size is written with a unit (``#   8M   20  float  sum ...``): a post's illustration or summary;
#: nccl-tests prints bytes
_UNIT_ROW = re.compile(r"^#?\s*(\d+(?:\.\d+)?[KMGT](?:i?B)?)\s+\d+\s+[A-Za-z]\w*\s+\w+")
#: nccl-tests' report of a failed call, which cuts the row it happened in
#: (``2097152  32768  float  none  -1 node0: Test CUDA failure common.cu:389 'an illegal memory access ...'``)
_TEST_FAILURE = re.compile(r"\bTest (?:CUDA |NCCL )?failure\b.*")


#: nccl-tests' closing summary line ("# Avg bus bandwidth    : 11.2291")
_AVG_BUSBW = re.compile(r"#\s*Avg bus bandwidth\s*:\s*[\d.]+")


def header_time_column(stripped: str) -> tuple[int, int] | None:
    """The time column a column-header line names (``#  size  count  type  redop  root  time ...``; ``cputime``
    with ``-C``) and the in-place time's offset from it (4; 8 where ``-I`` adds per-iteration columns)."""
    names = stripped.lstrip("#").split()
    if len(names) > 3 and names[:2] == ["size", "count"]:
        times = [i for i, name in enumerate(names) if name in ("time", "cputime")]
        if times:
            offset = times[1] - times[0] if len(times) > 1 and times[1] - times[0] in _IN_PLACE_OFFSETS else 4
            return times[0], offset
    return None


def cut_columns(stripped: str) -> dict[str, int] | None:
    """Where a column-header line a post cut to some of nccl-tests' columns (``#  size  time  algbw  busbw
    #wrong``: no count, type, redop or root) puts size, time, algbw, busbw and #wrong; None for another line."""
    names = stripped.lstrip("#").split()
    if not names or names[0] != "size" or "count" in names or "type" in names:
        return None
    if not all(name in names for name in ("time", "algbw", "busbw")):
        return None
    return {name: names.index(name) for name in ("size", "time", "algbw", "busbw", "#wrong") if name in names}


def _cut_row(stripped: str, cut: dict[str, int]) -> tuple[int, str, str, str, str, None, None] | None:
    """A row of a table under :func:`cut_columns`' header (its size, time, algbw, busbw and #wrong texts; no
    in-place time, no redop), or None where the line is not one."""
    fields = stripped.split()
    if len(fields) <= max(k for name, k in cut.items() if name != "#wrong") or not fields[0].isdigit():
        return None
    if any(math.isnan(_float(fields[cut[name]])) for name in ("time", "algbw", "busbw")):
        return None
    wrong = fields[cut["#wrong"]] if "#wrong" in cut and cut["#wrong"] < len(fields) else ""
    return int(fields[cut["size"]]), fields[cut["time"]], fields[cut["algbw"]], fields[cut["busbw"]], wrong, None, None


def _result_row(
    line: str, time_at: int, headed: bool, in_place_at: int = 4
) -> tuple[int, str, str, str, str, str | None, str | None] | None:
    """A result row's size, its out-of-place time, algbw, busbw and #wrong (or error; "" where a post cut the
    columns after busbw) texts, its
    in-place time text (None where the row has none whose algbw agrees with it) and its redop (None in
    the oldest layout, which prints none), or None.

    The time column is ``time_at`` (a column-header line's where ``headed``, else today's layout) where
    the row's algbw agrees with size / time there (algbw is printed to 0.01 GB/s), else the first of the
    layouts nccl-tests has printed whose algbw does: an old log without its header lines is read right,
    never shifted by a column. Where none agrees, a header's column is read as printed. The in-place time is
    ``in_place_at`` columns on (a header's), else the first of :data:`_IN_PLACE_OFFSETS` whose algbw agrees."""
    if not _ROW.match(line):
        return None
    fields = line.split()
    size = int(fields[0])

    def column(k: int) -> str:  # a post may cut the columns after busbw (no #wrong, no in-place side)
        return fields[k] if k < len(fields) else ""

    def agrees(k: int, strict: bool) -> bool:
        if len(fields) < k + 3:
            return False
        t, algbw = _float(fields[k]), _float(fields[k + 1])
        if not (t > 0 and algbw >= 0 and math.isfinite(_float(fields[k + 2]))):
            return False
        return _algbw_agrees(size, t, algbw, strict)

    order = [time_at] + [k for k in _TIME_COLUMNS if k != time_at]
    k = next((k for k in order if agrees(k, strict=True)), None)
    if k is None:
        k = time_at if (headed and len(fields) >= time_at + 4) or agrees(time_at, strict=False) else None
    if k is None:
        return None
    offsets = [in_place_at] + [d for d in _IN_PLACE_OFFSETS if d != in_place_at and not headed]
    d = next((d for d in offsets if agrees(k + d, strict=False)), None)
    in_place = fields[k + d] if d is not None and not _wrong_results(column(k + d + 3)) else None
    return size, fields[k], fields[k + 1], fields[k + 2], column(k + 3), in_place, fields[3] if k >= 4 else None


def _algbw_agrees(size: int, time_us: float, algbw: float, strict: bool = False) -> bool:
    """Whether a row's algbw (GB/s, printed to 0.01) is its size / time; where both print as 0.00 the row cannot
    tell (True unless ``strict``)."""
    expected = size / (time_us * 1e3)
    if expected < 0.006 and algbw < 0.006:
        return not strict
    return abs(expected - algbw) <= 0.006 + 0.01 * expected


#: a line shaped like a result row but for a field a post mangled (``nan`` or ``1,024`` for a size, a count or a
#: type gone): a number (or ``nan``, ``inf``, ``N/A``) first, a type or redop name (a word) among the next four
#: fields, and at least six fields, four of the first nine numbers; or a row with a word put before its size.
#: (The second half of a row that NCCL INFO lines cut, ``579.3  0.00  0.00  0  137.0 ...``, names no type:
#: nccl-tests prints it apart, and it is left out.)
_NEAR_ROW = re.compile(r"^[-+]?(?:\d[\d,.]*(?:e[-+]?\d+)?|nan|inf|N/A)\s", re.I)


def _near_row(stripped: str) -> bool:
    """Whether a line that is no result row looks like one a post mangled (:data:`_NEAR_ROW`)."""
    fields = stripped.split()
    if len(fields) >= 7 and _ROW.match(" ".join(fields[1:])):  # a word before a row's size
        return True
    if not _NEAR_ROW.match(stripped):
        return False
    numbers = sum(not math.isnan(_float(f.replace(",", ""))) for f in fields[:9])
    return len(fields) >= 6 and numbers >= 4 and any(f[:1].isalpha() for f in fields[1:5])


def _mangled_row(where: str, size: int, time_us: float, algbw: str) -> CalibrationError:
    """The error for a row whose algbw is not its size / time where the table's other rows' are."""
    return CalibrationError(
        f"{where}: {size} B in {time_us:g} us is {size / (time_us * 1e3):.3g} GB/s, but the row prints algbw {algbw} "
        "(where the table's other rows agree): a mangled row; give the rows as nccl-tests printed them"
    )


def _wrong_results(wrong: str) -> bool:
    """Whether a #wrong column counts wrong elements (``N/A``: the test ran unchecked; an error text: not a count)."""
    return wrong.replace(".", "", 1).isdigit() and float(wrong) > 0


def _ratio_collective(ratios: list[float], p: int | None) -> tuple[str | None, int | None]:
    """(collective, ranks) that busbw / algbw of the largest rows gives: 2(n-1)/n is all-reduce's factor,
    the only one that tells its collective and its rank count apart (others: (n-1)/n, 1)."""
    if not ratios:
        return None, None
    r = statistics.median(ratios)
    if p:
        return ("allreduce" if abs(r - 2 * (p - 1) / p) < 0.01 else None), p
    if 1.02 < r < 2:
        n = round(_ranks_at(r))
        if n >= 2 and abs(2 * (n - 1) / n - r) < 0.01:
            return "allreduce", n
    return None, None


def _unglued(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str, str | None]]:
    """``(n, line, raw)``: each line as it is (``raw``, the file's line), but a result row's first columns and the
    NCCL log line glued to them (:data:`_GLUED_NCCL_LINE`) as two lines of the same number (``raw`` None for the
    second): the row's head alone is no row (its time comes later, apart: the cut row is left out, as where INFO
    lines cut it between two lines), and the log line is read as one.

    >>> [x[1] for x in _unglued([(7, "   2097152   524288   float   sum   -1h1:22:33 [0] NCCL INFO Channel 00/0")])]
    ['   2097152   524288   float   sum   -1', 'h1:22:33 [0] NCCL INFO Channel 00/0']
    >>> list(_unglued([(3, "h1:22:33 [0] NCCL INFO comm 0x5 rank 0 nranks 8")]))
    [(3, 'h1:22:33 [0] NCCL INFO comm 0x5 rank 0 nranks 8', 'h1:22:33 [0] NCCL INFO comm 0x5 rank 0 nranks 8')]
    """
    for n, line in lines:
        bare = strip_label(line)
        m = _GLUED_NCCL_LINE.match(bare)
        if m is None:
            yield n, line, line
            continue
        yield n, line[: len(line) - len(bare) + m.end(1)], line
        yield n, bare[m.end() :], None


def parse_nccl_text(
    text: str | Iterable[tuple[int, str]],
    path: str,
    *,
    collective: str | None = None,
    ranks: int | None = None,
    algorithm: str | None = None,
) -> tuple[list[Sample], Source]:
    """Samples from nccl-tests' printed output (the out-of-place time of each row).

    It reads what users post: ``srun --label`` prefixes, no ``#  Rank`` lines (``ranks`` or the
    ``mpirun -n`` of the command line), no "Collective test starting" line (the binary named in the
    text, or all-reduce's busbw / algbw factor), one size. The schedule is NCCL's (``nccl``), restricted
    to the NCCL_ALGO / NCCL_PROTO the log's header or command line sets, or ``algorithm`` (an NCCL_ALGO
    value). The run id is a hash of the log's content, so that compare refuses a prediction judged
    against the log its calibration was fitted to.
    """
    lines = enumerate(text.splitlines(), 1) if isinstance(text, str) else text
    program: str | None = None
    programs: set[str] = set()  # every "Collective test starting" line's: a file may hold several tests
    named: str | None = None
    env: dict[str, str] = {}
    mpi_ranks = 0
    srun_nodes = 0  # srun -N without a task count: one task per node, nThread x nGpus GPUs each
    gpus = 0
    launch_gpus = 0  # nThread x nGpus as the launch line's own -t / -g say (a post without the nThread header)
    bare_gpus = 0  # nThread x nGpus of a command line that runs the binary itself, where no line names a launcher
    launcher = False
    time_at, headed, in_place_at = _TIME_COLUMNS[0], False, 4  # until a column-header line says otherwise
    cut: dict[str, int] | None = None  # a column-header line's columns where a post cut them (no count, type ...)
    listed: set[tuple[int, str]] = set()  # (rank, host): a log of several runs repeats its rank lines
    rows: list[tuple[str, int, float, float]] = []  # (where, size, out-of-place s, in-place s or 0)
    redops: Counter[str | None] = Counter()  # the rows' redop column: all-reduce's is an operation, not "none"
    printed: list[tuple[int, float, float]] = []  # (size, algbw, busbw)
    busless = 0  # rows whose algbw is > 0 but busbw 0 (one rank's: it moved nothing between GPUs)
    no_nvls = False  # NCCL said it cannot run NVLS on this run's GPUs
    leading: str | None = None  # a column the poster put before size (a summary table of several runs)
    unit: str | None = None  # a size written with a unit (8M) in a row-like line: not nccl-tests' own rows
    failed: tuple[int, str] | None = None  # (size, report) of the row a failed call cut
    summary: str | None = None  # the "# Avg bus bandwidth : X" line nccl-tests prints after its last row
    mangled: tuple[str, str] | None = None  # (where, text) of a row-like line that does not read, until a row follows
    commented: tuple[str, str] | None = None  # (where, text) of the first row a post commented out ("# 1048576 ..")
    disagree: list[tuple[str, int, float, str]] = []  # rows whose algbw is not size / time: (where, size, us, algbw)
    versions: list[tuple[int, str]] = []  # (rank, NCCL release) as the log states it
    ran: dict[tuple[str | None, int], Counter[tuple[str, str]]] = {}  # NCCL's TUNING lines: what each call ran
    digest = hashlib.sha256()

    devices: set[str] = set()  # the device lines' GPU names
    scanned: list[str] = []  # the command and header lines: the hosts a launch line lists, where no rank line does

    def scan(stripped: str) -> None:
        """What a command line or header line says: NCCL_* settings, the binary, the rank count."""
        nonlocal named, mpi_ranks, srun_nodes, launch_gpus, bare_gpus, launcher
        scanned.append(stripped)
        launcher = launcher or bool(_LAUNCHER.search(stripped))
        if not bare_gpus and _BINARY.search(stripped) and (g := TEST_GPUS.search(stripped)):
            bare_gpus = int(g.group(1)) * (int(t.group(1)) if (t := _TEST_THREADS.search(stripped)) else 1)
        _scan_command(stripped, env)
        if named is None and (m := _BINARY.search(stripped)):
            named = m.group(1)
        if named is None and (m := _GIB_TEST.search(stripped)):
            named = f"{m.group(1)}_perf"
        if named is None and (m := _TCPX_SCRIPT.search(stripped)):
            named = f"{_TCPX_TESTS[m.group(1)]}_perf"
        launch = command_ranks(stripped) or _SRUN_NODES.search(stripped)
        if launch and not (mpi_ranks or srun_nodes) and (g := TEST_GPUS.search(stripped)):
            launch_gpus = int(g.group(1)) * (int(t.group(1)) if (t := _TEST_THREADS.search(stripped)) else 1)
        mpi_ranks = mpi_ranks or command_ranks(stripped)
        if not srun_nodes and (m := _SRUN_NODES.search(stripped)):
            srun_nodes = int(m.group(1))

    for n, line, raw in _unglued(lines):
        if raw is not None:  # (the run id hashes the lines as the file has them)
            digest.update(raw.rstrip("\r\n").encode("utf-8", "replace") + b"\n")
        line = strip_label(line)
        stripped = line.strip()
        if not stripped.startswith("#%") and (m := _RCCL_LINE.search(stripped)):
            raise CalibrationError(
                f"{path}:{n}: an RCCL run on AMD GPUs ({m.group(0)!r}): collsim models NCCL on NVIDIA GPUs, and "
                "a calibration from it would fit NVIDIA links to AMD measurements"
            )
        if not stripped.startswith("#%") and (m := _MSCCLPP_LINE.search(stripped)):
            raise CalibrationError(
                f"{path}:{n}: an MSCCL++ run, not NCCL's ({m.group(0)!r}): its table times MSCCL++'s kernels, which "
                "collsim does not model; give an nccl-tests log of NCCL"
            )
        if stated := stated_nccl_version(stripped):
            versions.append(stated)
        no_nvls = no_nvls or bool(NVLS_UNAVAILABLE.search(stripped))
        if m := RANK_LINE.match(stripped):
            listed.add((int(m.group(1)), rank_host(m)))
            devices.add(m.group(3))
            continue
        if (tuned := tuning_pick(stripped)) is not None:
            func, nbytes, algo_ran, proto_ran = tuned
            if algo_ran and proto_ran:
                ran.setdefault((func, nbytes), Counter())[(algo_ran, proto_ran)] += 1
            continue
        if stripped.startswith("#"):
            if (columns := header_time_column(stripped)) is not None:
                (time_at, in_place_at), headed, cut = columns, True, None
            cut = cut_columns(stripped) or cut
            if m := _STARTING.search(stripped):
                program = m.group(1)
                programs.add(_NCCL_BINARY_MPI.sub("", os.path.basename(program)))
            if m := _NGPUS.search(stripped):
                gpus = int(m.group(1)) * int(m.group(2))
            if stripped.startswith("#%") or not stripped.startswith("#  "):
                scan(stripped)
            if unit is None and (m := _UNIT_ROW.match(stripped)):
                unit = m.group(1)
            if m := _AVG_BUSBW.match(stripped):
                summary = summary or " ".join(m.group(0).lstrip("#").split())
            if commented is None and _result_row(stripped.lstrip("#"), time_at, headed, in_place_at) is not None:
                commented = (f"{path}:{n}", stripped)
            continue
        row = _result_row(line, time_at, headed, in_place_at)
        if row is None and cut is not None:
            row = _cut_row(stripped, cut)
        if row is None:
            if leading is None and (m := _LEADING_COLUMN.match(stripped)):
                leading = m.group(1)
            if unit is None and (m := _UNIT_ROW.match(stripped)):
                unit = m.group(1)
            if mangled is None and _near_row(stripped):
                mangled = (f"{path}:{n}", stripped)
            scan(stripped)  # the command line, environment, NCCL INFO lines ...
            continue
        where = f"{path}:{n}"
        if mangled is not None:  # a row follows it: a row of the table a post mangled, not a row cut at its end
            raise CalibrationError(
                f"{mangled[0]}: a result row that does not read ({mangled[1][:80]!r}: a field mangled or missing); "
                "give the rows as nccl-tests printed them"
            )
        size, time_text, algbw_text, busbw_text, wrong, in_place, redop = row
        if size == 0 and _float(algbw_text) == 0:  # nccl-tests' row of 0 bytes (minBytes below one element)
            continue
        if m := _TEST_FAILURE.search(line):  # the call failed: the test stops in a row it did not finish
            failed = failed or (size, m.group(0).strip())
            continue
        redops[redop] += 1
        time_us, algbw, busbw = _time_us(time_text, where), _float(algbw_text), _float(busbw_text)
        if algbw >= 0 and not _algbw_agrees(size, time_us, algbw):
            disagree.append((where, size, time_us, algbw_text))
            if len(disagree) <= len(rows):  # rows above agree: this one was mangled (a field lost shifts #wrong too)
                raise _mangled_row(*disagree[-1])
        if _wrong_results(wrong):
            if not wrong.isdigit():  # nccl-tests counts wrong elements: a fraction is another column, shifted
                raise CalibrationError(f"{where}: #wrong is {wrong}, not a count: a column lost or shifted in the row")
            raise CalibrationError(f"{where}: #wrong is {wrong}; a run with wrong results is not a measurement")
        rows.append((where, size, time_us * 1e-6, _float(in_place) * 1e-6 if in_place else 0.0))
        if algbw > 0 and busbw > 0:
            printed.append((size, algbw, busbw))
        elif algbw > 0:
            busless += 1
        if len(rows) > MAX_SAMPLES:
            raise CalibrationError(f"{path}: more than {MAX_SAMPLES} rows; calibrate from fewer")
    if disagree and len(disagree) < len(rows):  # a table whose rows agree but for some: those were mangled
        raise _mangled_row(*disagree[0])
    if not rows and leading:
        raise CalibrationError(
            f"{path}: a table with a column {leading!r} before size (a post's own summary, one row per run?); "
            "nccl-tests prints size first: give each run's own log"
        )
    if not rows and failed:
        raise CalibrationError(
            f"{path}: the test failed in its first row ({failed[0]} B: {failed[1]!r}); no size was measured"
        )
    if not rows and unit:
        raise CalibrationError(
            f"{path}: rows that give their size as {unit!r} (an illustration or a post's summary of the output: "
            "nccl-tests prints sizes in bytes); give the log as nccl-tests printed it"
        )
    if not rows and commented:  # nccl-tests never prints a "#" before a row: the post commented its rows out
        raise CalibrationError(
            f"{commented[0]}: the table's result rows are commented out (a '#' before the size: "
            f"{' '.join(commented[1].split())[:60]!r}); give the rows as nccl-tests printed them, without the '#'"
        )
    if not rows and summary:  # the test ended (its closing summary is there): the post left its rows out
        raise CalibrationError(
            f"{path}: an nccl-tests log whose result rows were left out (the test completed: {summary!r} is "
            "there, but no size's row); give the rows as nccl-tests printed them"
        )
    if not rows and (gpus or listed):  # its header or device lines printed, then no table: it stopped first
        raise CalibrationError(
            f"{path}: an nccl-tests log without result rows (the test printed its header"
            f"{' and device lines' if listed else ''} but no size: it failed or timed out before the first)"
        )
    if not rows:
        raise CalibrationError(
            f"{path}: not an nccl-tests log (no result rows: lines of size, count, type, redop, root, time ...)"
        )
    _one_collective(programs, redops, path)
    printed.sort()
    top = [(a, b) for size, a, b in printed if algbw_reliable(size, printed)]
    stated = _collective_of(program or named, path, collective) if collective or program or named else None
    # a table without a reduction (redop "none": all_gather_perf's, broadcast_perf's, alltoall_perf's ...) is
    # not all-reduce's, whatever its busbw / algbw: its factor says nothing of the ranks then
    unreduced = stated is None and set(redops) == {"none"}
    # the launcher's processes drive nThread x nGpus GPUs each (``mpirun -np 2 ... -g 8``: 16 ranks; the header's
    # nThread line, else the launch line's own -t / -g)
    launched = (mpi_ranks or srun_nodes) * max(gpus or launch_gpus, 1)
    # busbw / algbw of the collective the log states (all-reduce's where it states none and has a reduction)
    bus = _BUS_FACTOR.get(stated or ("" if unreduced else "allreduce"))
    # the highest rank listed tells at least as many ranks (a post may keep only its last rank line)
    highest = max((rank for rank, _ in listed), default=-1) + 1
    # a command line that runs the binary alone (``./build/sendrecv_perf -b 128M -e 1G -g 8``): one process
    alone = bare_gpus if not launcher else 0
    p = ranks or _rank_count([len(listed), highest, launched, gpus if gpus > 1 else 0, alone], top, bus)
    # one rank, as its busbw tells (0 at every size: NCCL copies the buffer on its GPU; in place, nothing)
    if p == 1 and busless and not printed:
        raise CalibrationError(
            f"{path}: a run of one rank ({os.path.basename(program or named or 'nccl-tests')} on one GPU): it moved "
            "no data between GPUs, so there is nothing to predict or calibrate; give a run of 2 or more ranks"
        )
    guess_coll, guess_ranks = (None, None) if unreduced else _ratio_collective([b / a for a, b in top], p or None)
    if stated is None and guess_coll is None:
        why = " (its redop is 'none': not an all-reduce's table)" if unreduced else ""
        raise CalibrationError(
            f"{path}: cannot tell which nccl-tests binary wrote this (no '# Collective test starting' line, no "
            f"binary named){why}; name the collective (e.g. FILE:collective=allreduce)"
        )
    coll = stated or guess_coll
    if coll == "allreduce" and p and top:
        _check_allreduce_factor(top, p, path, unreduced=set(redops) == {"none"})
    if coll == "allreduce" and top:  # (without a rank count too: a post of a 1-node and a 2-node run's tables)
        _check_one_run(printed, path)
    if not p:
        hint = (
            f" (its busbw / algbw factor suggests ranks={guess_ranks})" if guess_ranks and coll == "allreduce" else ""
        )
        raise CalibrationError(
            f"{path}: cannot tell the number of ranks (no '#  Rank' lines, no mpirun -n); give FILE:ranks=N{hint}"
        )
    version = _modelled_version(min(versions)[1]) if versions else None
    # (NCCL's own word that it cannot run NVLS counts as NCCL_NVLS_ENABLE=0 where the log sets no value)
    algo, proto = _restrictions(algorithm, {"NVLS_ENABLE": "0", **env} if no_nvls else env, path, coll)
    spec = nccl_schedule_spec(coll, algo, proto, version)
    run_id = f"nccl-tests-{digest.hexdigest()[:16]}"
    picked = {size: nccl_schedule_spec(coll, *pick, version) for size, pick in _picks_ran(ran).items()}
    picked = picked if coll == "allreduce" else {}  # (the other collectives run one schedule: no picks)
    # the hosts the rank lines name, else (no rank line) those a launch line lists (as nccl_logs reads them)
    hosts = len({host for _, host in listed if host}) or (0 if listed else launch_hosts("\n".join(scanned), p))
    gpu = _device_gpu(devices)
    _check_one_launch(listed, path)
    _check_repeats(rows, path)  # (after the checks that name a cause: one run's rows may still disagree)
    samples = [
        _nccl_sample(coll, size, t, p, where, picked.get(size, spec), run_id, in_place, hosts, gpu)
        for where, size, t, in_place in rows
    ]
    detail = f"{os.path.basename(program or named or coll)}, {p} ranks, {spec}"
    if used := len({size for _, size, _, _ in rows if size in picked}):
        detail += f"; NCCL's own picks (its TUNING lines) at {used} size(s)"
    return samples, Source(
        kind="nccl-tests",
        path=str(path),
        run_ids=[run_id],
        records=len(samples),
        detail=detail,
        unmodelled=unmodelled_settings(env) + newer_release(versions),
    )


def newer_release(versions: list[tuple[int, str]]) -> list[str]:
    """``['NCCL X.Y.Z (newer than A.B.C, whose tuner decides)']`` where the release a log states (the first of
    ``versions``' kinds, as the schedules take it) is newer than the newest release collsim knows: its
    schedules are the newest tuner's, which that release may have changed; [] otherwise (none stated, a known
    release, or an older text that names none).

    >>> newer_release([(1, "2.99.1")])[0].startswith("NCCL 2.99.1 (newer than 2."), newer_release([(0, "2.26.2")])
    (True, [])
    """
    from sim.nccl.versions import RELEASES

    if not versions or _modelled_version(stated := min(versions)[1]) is not None:
        return []
    try:
        release = tuple(int(x) for x in stated.split("."))
    except ValueError:
        return []
    newest = ".".join(map(str, RELEASES[-1]))
    return [f"NCCL {stated} (newer than {newest}, whose tuner decides)"] if release > RELEASES[-1] else []


def _one_collective(programs: set[str], redops: Counter[str | None], path: str) -> None:
    """Refuse a file that holds the tables of more than one collective (a post of an all_gather_perf run and
    an all_reduce_perf run, each under its own command): two tests' "Collective test starting" lines, or
    rows without a reduction (redop ``none``: all-gather's, broadcast's ...) beside rows with one."""
    if len(programs) > 1:
        raise CalibrationError(
            f"{path}: holds the tables of {len(programs)} tests ({', '.join(sorted(programs))}); give each its own file"
        )
    ops = sorted(str(op) for op in redops if op not in (None, "none"))
    if ops and "none" in redops:
        raise CalibrationError(
            f"{path}: holds the tables of more than one collective (rows with redop 'none' and rows with "
            f"{', '.join(repr(op) for op in ops)}); give each table its own file"
        )


def for_collective(value: str, collective: str) -> str | None:
    """The list of an NCCL_ALGO / NCCL_PROTO value that applies to ``collective``: from NCCL 2.24 a value maps
    functions to lists (``ring;allreduce:tree,ring;broadcast:ring``: the first list, the only one that may lack
    a prefix, for every function; a function's own list in its place); None where no list applies.

    >>> for_collective("Ring", "allreduce"), for_collective("allreduce:Tree", "allreduce")
    ('Ring', 'Tree')
    >>> for_collective("allreduce:Tree", "allgather"), for_collective("ring;allreduce:^nvls", "allgather")
    (None, 'ring')
    """
    default = own = None
    for part in value.split(";"):
        prefix, colon, elems = part.partition(":")
        if not colon and default is None:
            default = part.strip() or None
        elif colon and prefix.strip().lower().replace("_", "") == collective:
            own = elems.strip()
    return own if own is not None else default


def _restrictions(
    algorithm: str | None, env: dict[str, str], path: str, collective: str = "allreduce"
) -> tuple[str | None, str | None]:
    """The ``nccl`` algorithm's ``algo`` and ``proto`` options for a run of ``collective``: ``algorithm`` (the
    user's hint) or the NCCL_ALGO it set (the list for ``collective``), NVLS and NVLSTree out where it set
    NCCL_NVLS_ENABLE=0, its NCCL_PROTO."""
    algo = nccl_algo_option(algorithm, f"{path}: algorithm") if algorithm else None
    if algo is None and "ALGO" in env and (listed := for_collective(env["ALGO"], collective)):
        algo = nccl_algo_option(listed, f"{path}: NCCL_ALGO")
    if env.get("NVLS_ENABLE") == "0" and (algo is None or algo.startswith("^")):  # no NVLS nor NVLSTree
        algo = "^" + "|".join(dict.fromkeys([*filter(None, (algo or "").lstrip("^").split("|")), "nvls", "nvls-tree"]))
    proto = None
    if "PROTO" in env and (listed := for_collective(env["PROTO"], collective)):
        proto = "|".join(x.strip().lower() for x in re.split(r"[,|]", listed) if x.strip())
    return algo, proto


def _picks_ran(ran: dict[tuple[str | None, int], Counter[tuple[str, str]]]) -> dict[int, tuple[str, str]]:
    """Per size, the (algorithm, protocol) NCCL's TUNING lines say most of its all-reduce calls ran (lines
    naming another function left out; 2.20-2.22 name none), where NCCL makes that pick: NVLS and CollNet
    run Simple only, so a line that says otherwise leaves the size to the tuner."""
    out: dict[int, Counter[tuple[str, str]]] = {}
    for (name, size), counts in ran.items():
        if name in (None, "AllReduce"):
            out.setdefault(size, Counter()).update(counts)
    picks = {size: counts.most_common(1)[0][0] for size, counts in out.items()}
    return {size: pick for size, pick in picks.items() if _pick_modelled(*pick)}


def _pick_modelled(algo: str, proto: str) -> bool:
    """Whether the simulator runs NCCL's pick as NCCL does: NVLS and CollNet run Simple only."""
    return algo in ("tree", "ring") or proto == "simple"


def _recorded_pick(pick: Any, collective: str) -> tuple[str, str] | None:
    """The (algorithm, protocol) a validate record says NCCL ran (its ``nccl_pick``), by the rule
    :func:`_picks_ran` applies to a log's TUNING lines; None where there is none, or for a collective other
    than all-reduce (the others run one schedule)."""
    if collective != "allreduce" or not isinstance(pick, dict):
        return None
    algo, proto = pick.get("algorithm"), pick.get("protocol")
    if algo not in NCCL_NAMES or proto not in PROTOS or not _pick_modelled(algo, proto):
        return None
    return algo, proto


def _modelled_version(text: str) -> str | None:
    """A stated NCCL release the ``nccl`` algorithm knows, else None (the newest tuner then decides)."""
    from sim.nccl.versions import parse_version

    try:
        parse_version(text)
    except ValueError:
        return None
    return text


def algbw_reliable(size: int, printed: list[tuple[int, float, float]]) -> bool:
    """Whether a row's busbw / algbw is precise enough to read a factor from (the larger half of the
    sizes, ``printed`` sorted by size: small rows print bandwidths of 0.01 GB/s)."""
    return size >= printed[len(printed) // 2][0]


def _slack(a: float, b: float) -> float:
    """How far busbw / algbw can be from its true value in a row printing algbw ``a`` and busbw ``b`` to two
    decimals (each rounded by up to 0.005)."""
    return b / a * (0.005 / a + 0.005 / b)


def _ranks_at(ratio: float, bus: float = 2) -> float:
    """The n of busbw / algbw = ``bus`` (n-1)/n (all-reduce's 2(n-1)/n by default), not rounded."""
    return bus / (bus - ratio)


def _fits(top: list[tuple[float, float]], factor: float) -> bool:
    """Whether the (algbw, busbw) rows print busbw / algbw = ``factor``, to the precision of their two
    decimals (a row at 50 GB/s tells 2(n-1)/n of 1024 ranks from 256's; one at 0.5 GB/s, 16 from 8 only)."""
    ratio = statistics.median(b / a for a, b in top)
    slack = statistics.median(_slack(a, b) for a, b in top)
    return abs(ratio - factor) <= slack + 1e-4


def _fits_every(top: list[tuple[float, float]], factor: float) -> bool:
    """Whether every (algbw, busbw) row prints busbw / algbw = ``factor`` to the precision of its two decimals.

    >>> rows = [(2.00, 3.76), (2.01, 3.77), (2.01, 3.76)]  # 16 ranks over TCP: 2-8 GiB at 2 GB/s
    >>> [k for k in (15, 16, 17) if _fits(rows, 2 * (k - 1) / k)], [k for k in (15, 16, 17) if _fits_every(rows, 2 * (k - 1) / k)]
    ([16, 17], [16])
    """
    return all(abs(b / a - factor) <= _slack(a, b) + 1e-9 for a, b in top)


#: nccl-tests' busbw / algbw on n ranks, c (n-1)/n: c of the collectives whose factor tells n (src/*.cu GetBw)
_BUS_FACTOR = {"allreduce": 2, "allgather": 1, "reducescatter": 1, "alltoall": 1, "scatter": 1, "gather": 1}


def _rank_count(candidates: list[int], top: list[tuple[float, float]], bus: int | None) -> int:
    """The ranks of a log: the first of ``candidates`` (the rank lines', the launch command's, one process's
    GPUs) that its collective's busbw / algbw = ``bus`` (n-1)/n agrees with (all-reduce's 2(n-1)/n, all-gather's
    and reduce-scatter's (n-1)/n; None where the log's collective does not print such a factor) -- a post may
    show only some of its rank lines, or a command of another run --, else the one n the factor alone gives,
    else the first candidate.

    >>> rows = [(55.48, 110.84), (169.24, 338.16), (183.83, 367.29)]  # 1024 ranks, 100 rank lines posted
    >>> _rank_count([100, 1024], rows, 2), _rank_count([15], [(180.71, 338.82)], 2), _rank_count([100], rows, 2)
    (1024, 16, 100)
    >>> _rank_count([], [(201.11, 188.54), (200.08, 187.58)], 1)  # an all-gather of 16 ranks, none listed
    16
    """
    found = [n for n in candidates if n]
    if bus and top:
        fit = [n for n in found if _fits(top, bus * (n - 1) / n)]
        if fit:
            return fit[0]
        ratio = statistics.median(b / a for a, b in top)
        n = round(_ranks_at(ratio, bus)) if bus / 2 <= ratio < bus else 0
        if n >= 2 and [k for k in (n - 1, n, n + 1) if k > 1 and _fits(top, bus * (k - 1) / k)] == [n]:
            return n
        # the median's slack admits n - 1 or n + 1 too: where every row's own two decimals admit n alone (a row
        # at 2.00 / 3.75 GB/s tells 16 ranks from 15 and 17, though the median of rows at 2 GB/s does not)
        if n >= 2 and [k for k in (n - 1, n, n + 1) if k > 1 and _fits_every(top, bus * (k - 1) / k)] == [n]:
            return n
    return found[0] if found else 0


def _check_allreduce_factor(top: list[tuple[float, float]], p: int, path: str, *, unreduced: bool = False) -> None:
    """Refuse a table the log calls all-reduce's whose busbw / algbw is another collective's: (n-1)/n
    (all_gather_perf, reduce_scatter_perf, alltoall_perf) or 1 (broadcast_perf, reduce_perf, sendrecv_perf);
    rows of redop ``none`` (``unreduced``) are not reduce_scatter_perf's."""
    if _fits(top, 2 * (p - 1) / p):
        return
    gather = (
        "all_gather_perf's or alltoall_perf's"
        if unreduced
        else "all_gather_perf's, reduce_scatter_perf's or alltoall_perf's"
    )
    for factor, which in (((p - 1) / p, gather), (1.0, "broadcast_perf's, reduce_perf's or sendrecv_perf's")):
        if _fits(top, factor):
            ratio = statistics.median(b / a for a, b in top)
            raise CalibrationError(
                f"{path}: the table's busbw / algbw is {ratio:.4f}, not all-reduce's 2(n-1)/n = "
                f"{2 * (p - 1) / p:.4f} on {p} ranks: it is {which} table{' (its redop is none)' if unreduced else ''}; "
                "calibrate from the all_reduce_perf run"
            )


def _check_one_launch(listed: set[tuple[int, str]], path: str) -> None:
    """Refuse rank lines that put one rank on two hosts: each process ran a test of its own (nccl-tests built
    without ``MPI=1`` under mpirun, NVIDIA/nccl-tests#306), so no table is one run across those hosts."""
    where: dict[int, set[str]] = {}
    for rank, host in listed:
        if host:
            where.setdefault(rank, set()).add(host)
    for rank, hosts in sorted(where.items()):
        if len(hosts) > 1:
            named = ", ".join(sorted(hosts)[:3]) + (", ..." if len(hosts) > 3 else "")
            raise CalibrationError(
                f"{path}: rank {rank} is listed on {len(hosts)} hosts ({named}): each process ran its own test "
                "(nccl-tests built without MPI=1 under mpirun?); give one run's log"
            )


def _check_repeats(rows: list[tuple[str, int, float, float]], path: str) -> None:
    """Refuse a size measured twice, from 1 MiB, at times a factor REPEAT_SPREAD or more apart: rows of two
    runs of the same ranks but not of one setting (a post's "host profile" and "default profile" tables,
    120.7 ms and 350.3 ms at 4 GiB), which no one prediction can match. Repeats that agree (a run's
    ``-N`` cycles, a test run twice) are kept as samples of the same point."""
    times: dict[int, list[tuple[float, str]]] = {}
    for where, size, t, _ in rows:
        if size >= REPEAT_MIN_BYTES:
            times.setdefault(size, []).append((t, where))
    for size, seen in sorted(times.items()):
        (fast, at_fast), (slow, at_slow) = min(seen), max(seen)
        if fast > 0 and slow >= REPEAT_SPREAD * fast:
            raise CalibrationError(
                f"{path}: rows of more than one run: {size} B is measured {fast * 1e6:.1f} us (line "
                f"{at_fast.rsplit(':', 1)[-1]}) and {slow * 1e6:.1f} us (line {at_slow.rsplit(':', 1)[-1]}), "
                f"{slow / fast:.1f}x apart (not one setting); give one run's rows"
            )


def _check_one_run(printed: list[tuple[int, float, float]], path: str) -> None:
    """Refuse all-reduce rows whose busbw / algbw give rank counts no one run has (rows of several runs in
    one post: a 4-rank run's 1 GiB row, 1.497, under a 16-rank run's 8 GiB one, 1.874): nccl-tests prints
    busbw = algbw x 2(n-1)/n for a run. Each row allows the n its printed digits cannot tell apart (31 or 32
    at a few GB/s); rows below 1 GB/s, and a row no n fits (an edited or mistyped number), say nothing."""
    spans: list[tuple[int, float, int, int]] = []  # (size, factor, fewest ranks, most ranks) a row allows
    for size, a, b in sorted(printed):
        ratio, tol = b / a, 2 * _slack(a, b) + 0.005
        if a < 1.0 or not 1 <= ratio - tol or ratio + tol >= 2:
            continue
        fewest, most = math.ceil(_ranks_at(ratio - tol)), math.floor(_ranks_at(ratio + tol))
        if fewest <= most:
            spans.append((size, ratio, fewest, most))
    if spans:
        low = min(spans, key=lambda r: (r[3], r[0]))  # the row allowing the fewest ranks at most
        high = max(spans, key=lambda r: (r[2], -r[0]))  # the row needing the most ranks at least
        if high[2] > low[3]:
            (z1, r1, f1, m1), (z2, r2, f2, m2) = sorted([low, high])

            def said(f: int, m: int) -> str:
                return f"{f} ranks" if f == m else f"{f}-{m} ranks"

            raise CalibrationError(
                f"{path}: rows of more than one run: busbw / algbw is {r1:.3f} at {z1} B ({said(f1, m1)}) but "
                f"{r2:.3f} at {z2} B ({said(f2, m2)}); give one run's rows"
            )


def _scan_command(text: str, env: dict[str, str]) -> None:
    """NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE set on a command line, in an environment dump or a header
    (``not set`` and NCCL's own INFO lines do not count)."""
    if "NCCL INFO" in text:
        return
    for pattern in (_NCCL_ENV, _UNMODELLED_ENV):
        for m in pattern.finditer(text):
            value = m.group(2)
            if value.lower() in ("not", "none", "default", "unset"):
                continue
            env.setdefault(m.group(1), value)


def unmodelled_settings(env: dict[str, str]) -> list[str]:
    """The settings of ``env`` (as :func:`_scan_command` collects them) the model does not represent, as
    ``NCCL_NAME=value``, in a stable order.

    The model assumes GPUDirect RDMA where a GPU and its NIC share a PCIe switch: ``NCCL_NET_GDR_LEVEL``
    counts only where it turns GPUDirect off (``LOC``, ``0``); ``NCCL_P2P_DISABLE`` only where it is set (not 0).

    >>> unmodelled_settings({"ALGO": "Ring", "MIN_CTAS": "24", "IB_QPS_PER_CONNECTION": "2", "NET_GDR_LEVEL": "1"})
    ['NCCL_IB_QPS_PER_CONNECTION=2', 'NCCL_MIN_CTAS=24']
    >>> unmodelled_settings({"NET_GDR_LEVEL": "LOC"}), unmodelled_settings({"P2P_DISABLE": "1", "MIN_CTAS": "0"})
    (['NCCL_NET_GDR_LEVEL=LOC'], ['NCCL_MIN_CTAS=0', 'NCCL_P2P_DISABLE=1'])
    >>> unmodelled_settings({"P2P_DISABLE": "0"})
    []
    """
    return sorted(
        f"NCCL_{k}={v}"
        for k, v in env.items()
        if k in _UNMODELLED and (k != "NET_GDR_LEVEL" or v.upper() in ("0", "LOC")) and (k != "P2P_DISABLE" or v != "0")
    )


def _nccl_sample(
    coll: str,
    size: int,
    time_s: float,
    ranks: int,
    where: str,
    spec: str | None = None,
    run_id: str = "",
    in_place_s: float = 0.0,
    hosts: int = 0,
    gpu: str = "",
) -> Sample:
    if size <= 0:
        raise CalibrationError(f"{where}: size must be > 0 bytes")
    return Sample(
        size=size,
        time_s=time_s,
        collective=coll,
        algorithm=spec or nccl_schedule_spec(coll),
        label="nccl",
        ranks=ranks,
        run_id=run_id,
        origin=where,
        in_place_s=in_place_s if math.isfinite(in_place_s) and in_place_s > 0 else 0.0,
        hosts=hosts,
        gpu=gpu,
    )


def parse_nccl_json(
    data: Any,
    path: str,
    *,
    collective: str | None = None,
    ranks: int | None = None,
    algorithm: str | None = None,
    run_id: str = "",
) -> tuple[list[Sample], Source]:
    """Samples from the document nccl-tests writes with ``-J FILE`` (format version 2)."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise CalibrationError(f"{path}: not an nccl-tests JSON file (no 'results' list)")
    args = data.get("args")
    program = args[0] if isinstance(args, list) and args and isinstance(args[0], str) else None
    coll = _collective_of(program, path, collective)
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    p = ranks
    if p is None:
        devices = config.get("devices")
        per = 1
        for key in ("nthreads", "ngpus"):
            value = config.get(key, 1)
            per *= value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 16 else 1
        p = (len(devices) if isinstance(devices, list) and devices else 1) * per
    env: dict[str, str] = {}  # what the run's environment (``env``: KEY=VALUE strings) and command line set
    listed = data.get("env") if isinstance(data.get("env"), list) else []
    for text in [*listed, " ".join(a for a in args if isinstance(a, str)) if isinstance(args, list) else ""]:
        if isinstance(text, str):
            _scan_command(text, env)
    code = data.get("nccl_version")
    known = isinstance(code, int) and not isinstance(code, bool) and code > 0
    version = _modelled_version(nccl_release(code)) if known else None
    spec = nccl_schedule_spec(coll, *_restrictions(algorithm, env, path, coll), version)
    samples = []
    for i, row in enumerate(data["results"]):
        where = f"{path}: results[{i}]"
        if not isinstance(row, dict):
            raise CalibrationError(f"{where}: expected an object, got {type(row).__name__}")
        timing = row.get("out_of_place") or row.get("in_place")
        if not isinstance(timing, dict):
            raise CalibrationError(f"{where}: no out_of_place or in_place timing")
        wrong = timing.get("nwrong")
        if isinstance(wrong, (int, float)) and not isinstance(wrong, bool) and wrong > 0:
            raise CalibrationError(f"{where}: nwrong is {wrong}; a run with wrong results is not a measurement")
        time_us = _number(timing.get("time", timing.get("cpu_time")), f"{where}: time")
        second = row.get("in_place") if timing is row.get("out_of_place") else None
        in_place_us = 0.0  # (_nccl_sample keeps only a finite time > 0)
        if isinstance(second, dict) and not second.get("nwrong"):
            value = second.get("time")
            in_place_us = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
        samples.append(
            _nccl_sample(
                coll,
                _size(row.get("size"), f"{where}: size"),
                time_us * 1e-6,
                _ranks(p, f"{path}: ranks"),
                where,
                spec,
                run_id,
                in_place_us * 1e-6,
            )
        )
        if len(samples) > MAX_SAMPLES:
            raise CalibrationError(f"{path}: more than {MAX_SAMPLES} results; calibrate from fewer")
    if not samples:
        raise CalibrationError(f"{path}: the results list is empty")
    detail = f"{os.path.basename(program or coll)}, {p} ranks, {spec}"
    runs = [run_id] if run_id else []
    return samples, Source(
        kind="nccl-tests-json",
        path=str(path),
        run_ids=runs,
        records=len(samples),
        detail=detail,
        unmodelled=unmodelled_settings(env),
    )


# -- the front door -------------------------------------------------------------------------------


def _split_hints(spec: str) -> tuple[Path, dict[str, str]]:
    """``FILE[:collective=X,ranks=N,algorithm=RING]`` -> (FILE, hints); a plain existing path wins."""
    if os.path.exists(spec) or ":" not in spec:
        return Path(spec), {}
    base, _, rest = spec.rpartition(":")
    hints: dict[str, str] = {}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in ("collective", "ranks", "format", "algorithm"):
            return Path(spec), {}
        hints[key.strip()] = value.strip()
    return Path(base), hints


def _detect(path: Path) -> str:
    """``jsonl`` when the first line is a JSON object of its own (and not nccl-tests' document, which
    has ``results``), ``nccl-tests-json`` for any other JSON, else ``nccl-tests`` (text)."""
    try:
        for _, line in _lines(path):
            first = line.strip()
            if not first:
                continue
            if not first.startswith("{"):
                return "nccl-tests"
            try:
                data = _loads(first)
            except CalibrationError:
                return "nccl-tests-json"  # a document over several lines
            return "nccl-tests-json" if isinstance(data, dict) and "results" in data else "jsonl"
    except CalibrationError as exc:
        if "a line of more than" not in str(exc):
            raise
        head = files.read_head(path, 4096, error=CalibrationError).lstrip()
        if head.startswith(b"{"):
            return "nccl-tests-json"  # one long line: a JSON document, read whole below
        raise
    raise CalibrationError(f"{path}: the file is empty")


def read_samples(spec: str | os.PathLike[str]) -> tuple[list[Sample], Source]:
    """Read one measurement file of any supported format (see the module docstring).

    ``spec`` may carry hints for nccl-tests output that lacks them: ``FILE:collective=allreduce,ranks=16``
    (and ``format=nccl-tests|nccl-tests-json|jsonl``).
    """
    path, hints = _split_hints(os.fspath(spec))
    ranks = None
    if "ranks" in hints:
        try:
            ranks = int(hints["ranks"])
        except ValueError:
            raise CalibrationError(f"{spec}: ranks={hints['ranks']!r} is not a whole number") from None
        if not 1 <= ranks <= 1 << 24:
            raise CalibrationError(f"{spec}: ranks={ranks} is out of range")
    fmt = hints.get("format")
    if fmt not in (None, "nccl-tests", "nccl-tests-json", "jsonl"):
        raise CalibrationError(f"{spec}: format={fmt!r}: expected nccl-tests, nccl-tests-json or jsonl")
    if fmt is None:
        fmt = _detect(path)
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "nccl-tests-json":
        text = files.read_text(path, limit=MAX_JSON_BYTES, error=CalibrationError)
        try:
            data = _loads(text)
        except CalibrationError as exc:
            raise CalibrationError(f"{path}: {exc}") from None
        data_id = f"nccl-tests-{hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:16]}"
        return parse_nccl_json(
            data,
            str(path),
            collective=hints.get("collective"),
            ranks=ranks,
            algorithm=hints.get("algorithm"),
            run_id=data_id,
        )
    return parse_nccl_text(
        _lines(path), str(path), collective=hints.get("collective"), ranks=ranks, algorithm=hints.get("algorithm")
    )
