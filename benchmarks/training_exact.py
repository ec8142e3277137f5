"""Training iterations: the reusing path (buckets alone, busy periods, steady states skipped) against every
bucket simulated message by message with the data check, over a grid of algorithms, fabrics and
backward times (compute-bound, in between, network-bound). Prints, per regime, the cases and the
largest relative difference of any bucket's start or end, and the CPU seconds of both paths.

    .venv/bin/python benchmarks/training_exact.py

docs/performance-log.md quotes a run of this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sim.training as training  # noqa: E402
from sim.training import Workload, simulate_iteration  # noqa: E402

TOPOLOGIES = ("dgx:hosts=2,gpus_per_host=4", "star:hosts=8,bandwidth=100Gbps,latency=5us")
ALGORITHMS = ("ring", "halving-doubling", "recursive-doubling", "hierarchical", "tree")
BACKWARD_S = (0.0005, 0.0012, 0.0016, 0.0025, 0.004, 0.01, 0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    periods: list[training.BusyPeriod] = []
    real = training._busy_period

    def recording(*args: object) -> training.BusyPeriod:
        periods.append(real(*args))  # type: ignore[arg-type]
        return periods[-1]

    training._busy_period = recording  # type: ignore[assignment]
    worst: dict[str, float] = {}
    count: dict[str, int] = {}
    cpu = [0.0, 0.0]
    for topo in TOPOLOGIES:
        for algorithm in ALGORITHMS:
            for backward in BACKWARD_S:
                periods.clear()
                w = Workload(
                    gradient_bytes=80e6, forward_s=1e-3, backward_s=backward, bucket_bytes=2e6, first_bucket_bytes=5e5
                )
                t = time.process_time()
                fast = simulate_iteration(topo, algorithm, w, gamma=1e-11)
                cpu[0] += time.process_time() - t
                t = time.process_time()
                ref = simulate_iteration(topo, algorithm, w, gamma=1e-11, check=True)
                cpu[1] += time.process_time() - t
                if ref.wrong:
                    raise SystemExit(f"{topo} {algorithm}: the message-level run delivered wrong data")
                diff = max(
                    max(abs(a.start_s - b.start_s) / b.start_s, abs(a.end_s - b.end_s) / b.end_s)
                    for a, b in zip(fast.bucket_timings, ref.bucket_timings, strict=True)
                )
                if fast.flows != ref.flows or abs(fast.link_bytes - ref.link_bytes) > 1e-9 * ref.link_bytes:
                    raise SystemExit(f"{topo} {algorithm} {backward}: flows or link bytes differ")
                if not periods:
                    regime = "alone"
                elif any(q.skipped for q in periods):
                    regime = "steady state"
                else:
                    regime = "overlapping"
                worst[regime] = max(worst.get(regime, 0.0), diff)
                count[regime] = count.get(regime, 0) + 1
                print(f"{topo} {algorithm} backward {backward * 1e3:g} ms: {regime}, {diff:.1e}", flush=True)
    print("| regime | cases | largest relative difference |")
    print("|---|---|---|")
    for regime in ("alone", "overlapping", "steady state"):
        print(f"| {regime} | {count.get(regime, 0)} | {worst.get(regime, 0.0):.1e} |")
    print(f"CPU s: reusing {cpu[0]:.2f}, message level {cpu[1]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
