"""A report's points one at a time in this process: CPU seconds each, and the simulated times they give
(the iteration's, and every message size's of a collective sweep, printed with ``repr``), so that two
versions of the simulator can be compared point by point and to the last digit.

    .venv/bin/python benchmarks/report_points.py benchmarks/specs/llm-7b-dgx.yaml --algorithm ps --max-gpus 128

Benchmarks print; they do not assert wall-clock times (machines are noisy).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def main(argv: list[str] | None = None) -> None:
    import yaml

    from reports.points import report_points, run_point
    from reports.spec import parse_spec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a report spec (YAML)")
    parser.add_argument("--algorithm", action="append", help="only these algorithms (repeatable)")
    parser.add_argument("--max-gpus", type=int, default=None, help="only clusters of up to this many GPUs")
    args = parser.parse_args(argv)
    with open(args.spec) as f:
        spec = parse_spec(yaml.safe_load(f))
    points = [
        p
        for p in report_points(spec)
        if (not args.algorithm or p.algorithm in args.algorithm)
        and (args.max_gpus is None or p.cluster.gpus <= args.max_gpus)
    ]
    total = 0.0
    for p in points:
        started = time.process_time()
        rec = run_point(p)
        cpu = time.process_time() - started
        total += cpu
        if rec.status != "ok":
            shown = rec.reason or ""
        elif p.kind == "iteration":
            shown = repr(rec.result.iteration_s)
        else:
            shown = " ".join(repr(r.time_s) for r in rec.result)
        print(
            f"{p.algorithm:12s} {p.kind:10s} {p.cluster.gpus:6d} GPUs  cpu {cpu:8.2f} s  {rec.status}  {shown}",
            flush=True,
        )
    print(f"total cpu {total:.2f} s")


if __name__ == "__main__":
    main()
