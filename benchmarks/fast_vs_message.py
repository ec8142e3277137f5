"""How close are the fast paths to the message-level path, and are reruns bit-identical? A survey over
the random all-reduce cases of tests/random_cases.py.

For every seed whose algorithm has a step program (so that ``--engine auto`` takes a fast path), the case
runs on the fast path twice and on the message-level path once; the script counts, per fast engine, the
cases equal bit for bit, the largest relative difference of the simulated times, and any rerun that was
not bit-identical.

    .venv/bin/python benchmarks/fast_vs_message.py --seeds 0:2000

docs/reliability.md quotes a run of this script.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim import simulate  # noqa: E402
from tests.random_cases import case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:500", help="FIRST:LAST (exclusive)")
    opts = parser.parse_args(argv)
    first, last = (int(x) for x in opts.seeds.split(":"))
    total, identical, unstable = Counter(), Counter(), Counter()
    worst: dict[str, tuple[float, int]] = {}
    for seed in range(first, last):
        c = case(seed, collectives=("allreduce",))
        args = (c.graph, c.collective, c.algorithm, c.size)
        fast = simulate(*args, ranks=c.ranks, gamma=c.gamma)
        if fast.engine == "message":
            continue
        again = simulate(*args, ranks=c.ranks, gamma=c.gamma)
        slow = simulate(*args, ranks=c.ranks, gamma=c.gamma, engine="message")
        total[fast.engine] += 1
        identical[fast.engine] += fast.time_s == slow.time_s
        unstable[fast.engine] += (fast.time_s, fast.link_bytes) != (again.time_s, again.link_bytes)
        rel = abs(fast.time_s - slow.time_s) / slow.time_s
        if rel >= worst.get(fast.engine, (0.0, -1))[0]:
            worst[fast.engine] = (rel, seed)
    print(f"# seeds {first}..{last - 1}, all-reduce cases with a step program")
    print("# engine          cases  equal bit for bit  largest relative difference (seed)  reruns not identical")
    for engine in sorted(total):
        rel, seed = worst[engine]
        print(
            f"  {engine:14s} {total[engine]:6d}  {identical[engine]:17d}  {rel:27.3g} ({seed})  {unstable[engine]:20d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
