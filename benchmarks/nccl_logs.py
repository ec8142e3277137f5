"""Predict published ``all_reduce_perf`` logs nominally (hardware figures only) with ``nccl``.

    python benchmarks/nccl_logs.py [FOLDER] [--min-size 1MiB] [--rows]

For every log in FOLDER (default: ../shared/data/nccl-tests) it reads the hardware the log states (GPU
model from the device lines, NICs from ``8x 400 Gb/s``-style figures in its header), builds the matching
``hgx`` topology, simulates every size >= --min-size with ``nccl`` (``nccl:algo=...`` where the log says
NCCL_ALGO was forced) and prints the errors of the predicted times: per log, then median / p90 / max over
the 1-node logs and the multi-node logs. Calibrated (in-sample / out-of-sample) predictions are not here
yet: they come with the calibration package.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.algorithms import get_algorithm  # noqa: E402
from sim.cluster import Cluster  # noqa: E402
from sim.errors import CollsimError  # noqa: E402
from sim.simulate import simulate  # noqa: E402
from sim.topology import hgx  # noqa: E402
from sim.units import parse_size  # noqa: E402

_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")
_SRUN = re.compile(r"^\s*\d+:\s?")
_RANK = re.compile(r"#\s+Rank\s+(\d+)\s.*?\son\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*)$")


class LogError(ValueError):
    """A file that is not an all_reduce_perf log collsim can read."""


@dataclass
class Log:
    path: Path
    ranks: int
    hosts: int
    gpu: str
    text: str
    algo: str | None
    rows: list[tuple[int, float, float]] = field(default_factory=list)  # (bytes, time us, busbw)


def parse_log(path: Path, ranks: int | None = None) -> Log:
    """Read an nccl-tests all_reduce_perf log: srun labels, missing ``#  Rank`` lines (then ``ranks``
    or the header must say how many), missing "Collective test starting" lines, one-size logs."""
    text = path.read_text(errors="replace")
    lines = [_SRUN.sub("", line, count=1) if _SRUN.match(line) else line for line in text.splitlines()]
    if not any("nThread" in ln or "out-of-place" in ln for ln in lines):
        raise LogError(f"{path.name}: not an nccl-tests log (no 'nThread' header or 'out-of-place' columns)")
    rows, hosts, devices = [], [], []
    for line in lines:
        m = _RANK.search(line)
        if m:
            hosts.append(m.group(2))
            devices.append(m.group(3))
            continue
        m = _ROW.match(line)
        if m and not line.lstrip().startswith("#"):
            rows.append((int(m.group(1)), float(m.group(6)), float(m.group(8))))
    if not rows:
        raise LogError(f"{path.name}: no result rows")
    n = ranks or len(hosts)
    if not n:
        m = re.search(r"mpirun[^\n]*?-(?:n|np)\s+(\d+)", text)
        n = int(m.group(1)) if m else 0
    if not n:
        raise LogError(f"{path.name}: no '#  Rank' lines and no rank count in the command; give ranks=N")
    nodes = len(set(hosts)) if hosts else max(1, n // 8)
    gpu_text = " ".join(devices) if devices else text[:3000]  # the device lines, else what the header states
    gpu = "h100" if re.search(r"H100|H200|H800", gpu_text) else "a100"
    forced = None
    m = re.search(r"NCCL_ALGO[=:]\s*([A-Za-z,^]+)", text)
    if m and m.group(1).lower() not in ("not",):
        forced = m.group(1).lower().replace(",", "|")
    return Log(path, n, nodes, gpu, text[:4000], forced, rows)


def topology(log: Log) -> object:
    """The hgx topology the log's stated hardware describes."""
    head = log.text
    nics, speed = None, None
    m = re.search(r"(\d+)\s*[x×]\s*(\d+)\s*G(?:b|bps|b/s)?", head)
    if m:
        nics, speed = int(m.group(1)), float(m.group(2))
    m = re.search(r"(\d+)\s*Gbps\s*[x×]\s*(\d+)", head)
    if m:
        speed, nics = float(m.group(1)), int(m.group(2))
    if log.gpu == "h100":
        preset = "oci-bm-gpu-h100-8" if nics == 16 else "dgx-h100"
    else:
        preset = "oci-bm-gpu4-8" if nics == 16 else "hgx-a100-200g"
    kw = {}
    if speed:
        kw["nic_bandwidth"] = speed * 1e9 / 8
    return hgx(log.hosts, preset, **kw)


def predict(log: Log, min_size: float) -> list[tuple[int, float, float, float, str]]:
    """(bytes, measured us, predicted us, error, pick) for the sizes >= ``min_size``."""
    cluster = Cluster(topology(log))
    spec = "nccl" if not log.algo else f"nccl:algo={log.algo}"
    algo = get_algorithm("allreduce", spec)
    out = []
    for size, t_us, _ in log.rows:
        if size < min_size:
            continue
        r = simulate(cluster, "allreduce", algo, size, ranks=log.ranks)
        c = algo.choice(log.ranks, size, cluster)  # type: ignore[attr-defined]
        pred = r.time_s * 1e6
        out.append((size, t_us, pred, abs(pred - t_us) / t_us, f"{c.algorithm}/{c.protocol}"))
    return out


def summary(errors: list[float]) -> str:
    if not errors:
        return "n/a"
    e = sorted(errors)
    p90 = e[min(len(e) - 1, int(round(0.9 * (len(e) - 1))))]
    return f"median {statistics.median(e):6.1%}  p90 {p90:6.1%}  max {e[-1]:6.1%}  ({len(e)} sizes)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared/data/nccl-tests"))
    ap.add_argument("--min-size", default="1MiB")
    ap.add_argument("--rows", action="store_true", help="print every size of every log")
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    files = sorted(p for p in folder.glob("*.txt") if p.name.lower() != "readme.txt")
    if not files:
        print(f"nccl_logs: no .txt logs in {folder}", file=sys.stderr)
        return 2
    min_size = parse_size(args.min_size)
    single: list[float] = []
    multi: list[float] = []
    print(f"# nominal predictions of {len(files)} logs in {folder}, sizes >= {args.min_size}, algorithm nccl")
    print(f"# {'log':44s} {'ranks':>5s} {'nodes':>5s}  error of the predicted time")
    for path in files:
        try:
            log = parse_log(path)
            rows = predict(log, min_size)
        except (LogError, CollsimError) as exc:
            print(f"# {path.name}: skipped: {exc}")
            continue
        errs = [r[3] for r in rows]
        (single if log.hosts == 1 else multi).extend(errs)
        print(f"  {path.name:44s} {log.ranks:5d} {log.hosts:5d}  {summary(errs)}")
        if args.rows:
            for size, meas, pred, err, pick in rows:
                print(f"      {size:>12d} B  measured {meas:10.1f} us  predicted {pred:10.1f} us  {err:6.1%}  {pick}")
    print(f"# 1-node logs:     {summary(single)}")
    print(f"# multi-node logs: {summary(multi)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
