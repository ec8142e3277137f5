"""Calibrate, then compare, on netlab: the table of docs/validation.md.

For each topology: ``collsim validate calibrate --netlab`` (run 1: probes, fit, a calibration file), then
``collsim validate compare --netlab`` with that file (run 2: validate for every algorithm and size, the
simulator's prediction, the errors). Prints one Markdown table per topology and the summary over all,
with the machine's load average. Needs root (netlab). About 25 minutes on a 2-core machine.

    .venv/bin/python benchmarks/validation_netlab.py --out out/validation
    .venv/bin/python benchmarks/validation_netlab.py --out out/validation --report-only   # tables again
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOPOLOGIES = {
    "star4": "netlab-star4",
    "star8": "star:hosts=8,bandwidth=200Mbps",
    "2rack": "netlab-2rack",
}
ALGORITHMS = "ring,tree,master-worker,ps,halving-doubling,builtin"
COLLSIM = [sys.executable, "-c", "from collsim.cli import entry; entry()"]


def run(*args: str) -> None:
    print("$ collsim " + " ".join(args), file=sys.stderr, flush=True)
    started = time.monotonic()
    done = subprocess.run([*COLLSIM, *args])
    if done.returncode != 0:
        sys.exit(f"collsim {args[0]} {args[1]} failed with status {done.returncode}")
    print(f"# {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def pct(stats: dict[str, Any], key: str) -> str:
    return f"{stats[key]:.1%}" if stats.get("points") else "-"


def table(name: str, doc: dict[str, Any]) -> list[str]:
    s = doc["summary"]
    loads = [r.get("load_before") for r in doc["meta"]["runs"]] + [r.get("load_after") for r in doc["meta"]["runs"]]
    loads = [x for x in loads if x is not None]
    lines = [
        f"**{name}** (`{doc['meta']['topology']}`; calibrated: {', '.join(doc['meta']['calibration']['calibrated'])}; "
        f"load average {min(loads):.1f}-{max(loads):.1f})"
        if loads
        else f"**{name}**",
        "",
        "| algorithm | size | measured (ms) | predicted (ms) | error | nominal model error |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        size = r["size_bytes"]
        label = f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 1024} KiB"
        lines.append(
            f"| {r['algorithm']} | {label} | {r['measured_s'] * 1e3:.2f} | {r['predicted_s'] * 1e3:.2f} | "
            f"{r['error']:+.1%} | {r['nominal_error']:+.1%} |"
        )
    lines += ["", "| |error| | points | median | p90 | max | nominal: median, p90 |", "|---|---|---|---|---|---|"]
    for band in ("all", ">=1MiB", "<1MiB"):
        a, n = s[band], s["nominal"][band]
        lines.append(
            f"| {band} | {a['points']} | {pct(a, 'median_abs')} | {pct(a, 'p90_abs')} | {pct(a, 'max_abs')} | "
            f"{pct(n, 'median_abs')}, {pct(n, 'p90_abs')} |"
        )
    return lines


def overall(docs: dict[str, dict[str, Any]]) -> list[str]:
    import numpy as np

    rows = [r for d in docs.values() for r in d["rows"]]
    out = ["| all topologies | points | median |error| | p90 | max |", "|---|---|---|---|---|"]
    for band, keep in ((">=1MiB", lambda r: r["size_bytes"] >= 2**20), ("<1MiB", lambda r: r["size_bytes"] < 2**20)):
        errs = np.abs([r["error"] for r in rows if keep(r)])
        if len(errs):
            out.append(
                f"| {band} | {len(errs)} | {np.median(errs):.1%} | {np.percentile(errs, 90):.1%} | {errs.max():.1%} |"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/validation"))
    parser.add_argument("--topologies", default=",".join(TOPOLOGIES), help="Which of star4, star8, 2rack.")
    parser.add_argument("--sizes", default="64KiB:16MiB:4")
    parser.add_argument("--probe-sizes", default="1KiB:16MiB")
    parser.add_argument("--prefix", default="val")
    parser.add_argument("--report-only", action="store_true", help="Print the tables of an earlier run.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    docs = {}
    for name in args.topologies.split(","):
        topo = TOPOLOGIES[name]
        cal, cmp = args.out / f"{name}.calibration.yaml", args.out / f"{name}-compare"
        if not args.report_only:
            target = f"-t {topo} --netlab --prefix {args.prefix}"
            run("validate", "calibrate", *target.split(), "--sizes", args.probe_sizes, "-o", str(cal))
            more = f"--algorithms {ALGORITHMS} --sizes {args.sizes}"
            run("validate", "compare", *target.split(), *more.split(), "--calibration", str(cal), "--out", str(cmp))
        docs[name] = json.loads((cmp / "compare.json").read_text())
    print(f"# {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}")
    for name, doc in docs.items():
        print("\n".join(["", *table(name, doc)]))
    print("\n".join(["", *overall(docs)]))


if __name__ == "__main__":
    main()
