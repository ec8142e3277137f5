"""Does more bandwidth or less latency ever make a collective slower? A search over random cases.

For every seed, the case of tests/random_cases.py (a small cluster with mixed links, a random collective
and algorithm) is simulated as drawn, then again with one change at a time: each physical link's
bandwidth doubled, its latency halved, its latency zeroed; and every link's bandwidth doubled, every
latency halved (uniform changes). A change that makes the simulated time longer (beyond 1e-9 relative)
is a counterexample; each is printed with the numbers, then a summary by engine and by kind of change.

    .venv/bin/python benchmarks/monotonicity.py --seeds 0:1000

docs/reliability.md quotes a run of this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim import simulate  # noqa: E402
from tests.random_cases import case, scaled  # noqa: E402

CHANGES = (("bandwidth x2", {"bandwidth": 2.0}), ("latency x0.5", {"latency": 0.5}), ("latency x0", {"latency": 0.0}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:200", help="FIRST:LAST (exclusive)")
    opts = parser.parse_args(argv)
    first, last = (int(x) for x in opts.seeds.split(":"))
    tried, found = Counter(), Counter()
    worst = (0.0, "")
    started = time.perf_counter()
    for seed in range(first, last):
        c = case(seed)

        def run(graph, c=c):
            return simulate(graph, c.collective, c.algorithm, c.size, ranks=c.ranks, gamma=c.gamma)

        base = run(c.graph)
        links = sorted({d["link"] for _u, _v, d in c.graph.edges(data=True)})
        changes = [(f"{name} on {link}", link, kw, "one link") for link in links for name, kw in CHANGES]
        changes += [(f"every link {name}", None, kw, "uniform") for name, kw in CHANGES[:2]]
        for label, link, kw, kind in changes:
            r = run(scaled(c.graph, link, **kw))
            key = (base.engine, kind)
            tried[key] += 1
            if r.time_s > base.time_s * (1 + 1e-9):
                found[key] += 1
                rise = r.time_s / base.time_s - 1
                line = (
                    f"seed {seed}: {c.collective} {c.algorithm}, {c.size} B, {c.ranks} ranks, "
                    f"{c.graph.graph['name']}: {label}: {base.time_s * 1e6:.4f} us -> {r.time_s * 1e6:.4f} us "
                    f"(+{rise:.3%}), engine {base.engine}"
                )
                print(line, flush=True)
                worst = max(worst, (rise, line))
    print(f"# seeds {first}..{last - 1}: {sum(tried.values())} changes in {time.perf_counter() - started:.0f} s")
    for key in sorted(tried):
        print(f"# {key[0]:>13s}, {key[1]:>8s} changes: {tried[key]:6d} tried, {found[key]:4d} slower")
    if worst[1]:
        print(f"# largest: {worst[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
