"""The scale benchmark (issue: "16k GPUs in seconds, 128k GPUs in a minute, identical answers").

Runs every case in a fresh Python process (so that peak RSS is the case's own), prints a table with wall
time (topology build + simulation), peak RSS, events and flows per second, the simulated time and the
engine path taken, and -- where both paths run -- the speed ratio of the fast path over the message-level
one and the relative difference of their times.

    .venv/bin/python benchmarks/scale.py                 # every case
    .venv/bin/python benchmarks/scale.py --quick         # the small cases only (seconds)
    .venv/bin/python benchmarks/scale.py --case ring-16k # one case
    .venv/bin/python benchmarks/scale.py --json out.jsonl

Benchmarks print; they do not assert wall-clock times (machines are noisy). docs/performance.md holds
the table from one run, the machine, and this command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


@dataclass(frozen=True)
class Case:
    name: str
    topology: str
    algorithm: str
    size: str
    engine: str
    target_s: float | None
    target_mib: float | None
    quick: bool = False


CASES = [
    Case("ring-16k", "dgx:hosts=2048", "ring", "1GiB", "auto", 10, 4096),
    Case("hierarchical-131k", "dgx:hosts=16384", "hierarchical", "1GiB", "auto", 60, 8192),
    Case("dbt-16k", "dgx:hosts=2048", "double-binary-tree", "1GiB", "auto", 30, 4096),
    Case("dbt-16k-chunks64", "dgx:hosts=2048", "double-binary-tree:chunks=64", "1GiB", "auto", 30, 4096),
    Case("ps-hosts-512", "dgx:hosts=64", "ps:shards=64", "1GiB", "auto", None, None, quick=True),
    Case("ps-hosts-1k", "dgx:hosts=128", "ps:shards=128", "1GiB", "auto", None, None),
    Case("ring-1k-message", "dgx:hosts=128", "ring", "1GiB", "message", 30, None),
    Case("ring-1k-fast", "dgx:hosts=128", "ring", "1GiB", "fast", None, None, quick=True),
    Case("ring-1k-star-message", "star:hosts=1024,bandwidth=100Gbps,latency=1us", "ring", "1GiB", "message", 30, None),
    Case(
        "ring-1k-star-fast",
        "star:hosts=1024,bandwidth=100Gbps,latency=1us",
        "ring",
        "1GiB",
        "fast",
        None,
        None,
        quick=True,
    ),
    Case(
        "ring-256-congested-message",
        "dgx:hosts=32",
        "ring:order=rank",
        "256MiB",
        "message",
        None,
        None,
        quick=True,
    ),
    Case(
        "ring-256-congested-fast",
        "dgx:hosts=32",
        "ring:order=rank",
        "256MiB",
        "fast",
        None,
        None,
        quick=True,
    ),
]

PAIRS = [
    ("ring-1k-fast", "ring-1k-message"),
    ("ring-1k-star-fast", "ring-1k-star-message"),
    ("ring-256-congested-fast", "ring-256-congested-message"),
]


def run_case(case: Case) -> dict[str, object]:
    """Run one case in this process and return its record."""
    from sim.cluster import Cluster
    from sim.simulate import simulate

    t0 = time.perf_counter()
    cluster = Cluster(case.topology)
    built = time.perf_counter() - t0
    r = simulate(cluster, "allreduce", case.algorithm, case.size, engine=case.engine)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
    return {
        "case": case.name,
        "gpus": r.ranks,
        "algorithm": r.algorithm,
        "engine": r.engine,
        "build_s": built,
        "wall_s": wall,
        "peak_MiB": peak,
        "events": r.events,
        "flows": r.flows,
        "events_per_s": r.events / wall,
        "flows_per_s": r.flows / wall,
        "time_s": r.time_s,
        "busbw_GBps": r.busbw_GBps,
        "target_s": case.target_s,
        "target_MiB": case.target_mib,
    }


def spawn(case: Case, timeout: float) -> dict[str, object]:
    """Run ``case`` in a fresh interpreter; a case past ``timeout`` is reported, not waited for."""
    cmd = [sys.executable, __file__, "--child", case.name]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"case": case.name, "error": f"did not finish in {timeout:.0f} s"}
    if out.returncode != 0:
        return {"case": case.name, "error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, object]]) -> str:
    head = (
        "| case | GPUs | engine | wall s (build) | target s | peak MiB | target MiB | events/s | flows/s | simulated time |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | | | {r['error']} | | | | | | |")
            continue
        target = "" if r["target_s"] is None else f"<= {r['target_s']:g}"
        mem = "" if r["target_MiB"] is None else f"<= {r['target_MiB']:g}"
        lines.append(
            f"| {r['case']} | {r['gpus']:,} | {r['engine']} | {r['wall_s']:.2f} ({r['build_s']:.2f}) | {target} | "
            f"{r['peak_MiB']:.0f} | {mem} | {r['events_per_s']:,.0f} | {r['flows_per_s']:,.0f} | {r['time_s'] * 1e3:.4f} ms |"
        )
    by = {r["case"]: r for r in rows if "error" not in r}
    for fast, slow in PAIRS:
        if fast in by and slow in by:
            a, b = by[fast], by[slow]
            diff = abs(a["time_s"] - b["time_s"]) / b["time_s"]
            lines.append(
                f"\n{fast} vs {slow}: {b['wall_s'] / a['wall_s']:.1f}x faster, times differ by {diff:.2e} (relative)"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="run only these cases (repeatable)")
    parser.add_argument("--quick", action="store_true", help="only the quick cases")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per case")
    parser.add_argument("--json", help="also write one JSON line per case to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = {c.name: c for c in CASES}
    if args.child:
        print(json.dumps(run_case(cases[args.child])))
        return
    chosen = [cases[n] for n in args.case] if args.case else [c for c in CASES if c.quick or not args.quick]
    print(f"# machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}", flush=True)
    rows = []
    for case in chosen:
        row = spawn(case, args.timeout)
        rows.append(row)
        print(f"# {case.name}: {json.dumps(row)}", flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
