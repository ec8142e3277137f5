"""How long netlab takes to bring a cluster up (namespaces, bridges, tbf-shaped veths) and check it.

The netlab issue's target: 16 hosts up in <= 10 s. Each repeat brings ``--topology`` up with the
default checks (every host reaches every other, one shaped transfer), times it, and takes it down; the
median and the range are printed. Needs root, ``ip`` and ``tc``. From the repository root:

    sudo .venv/bin/python benchmarks/netlab_up.py                       # 16 hosts, 3 repeats
    sudo .venv/bin/python benchmarks/netlab_up.py --topology star:hosts=32,bandwidth=200Mbps --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import netlab  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", default="star:hosts=16,bandwidth=200Mbps")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", type=float, default=10.0, help="seconds (the issue's target)")
    parser.add_argument("--prefix", default=f"b{os.getpid() % 100000}")
    args = parser.parse_args()
    missing = netlab.system.missing()
    if missing:
        print(f"netlab_up: netlab needs {', '.join(missing)}", file=sys.stderr)
        return 2
    times = []
    for i in range(args.repeats):
        start = time.monotonic()
        try:
            plan, checks = netlab.up(args.topology, prefix=args.prefix)
            times.append(time.monotonic() - start)
        finally:
            netlab.down(args.prefix)
        pairs = checks.pairs if checks else 0
        print(f"repeat {i + 1}: {len(plan.hosts)} hosts up and checked ({pairs} pairs) in {times[-1]:.2f} s")
    median = statistics.median(times)
    verdict = "met" if median <= args.target else "missed"
    print(
        f"{args.topology}: median {median:.2f} s (min {min(times):.2f}, max {max(times):.2f}) over "
        f"{len(times)} repeats; target <= {args.target:g} s: {verdict}; load average {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
