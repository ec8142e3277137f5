"""Is the point-to-point ring a fair competitor? Its busbw against gloo's own all_reduce, on local ranks.

    .venv/bin/python benchmarks/validate_efficiency.py [--ranks 4] [--sizes 16MiB,32MiB,64MiB] [--rounds 5]

One job of N local ranks (started like ``collsim validate run``) measures every algorithm at every size
in interleaved rounds -- ring, builtin, ring, builtin, ... -- so that other load on the machine hits both
alike. Each round is nccl-tests' loop with ``-w 0 -n ITERS`` (default one timed iteration, the slowest
rank's time) after a barrier, from the same buffers, restored before each round; every size is first
run once untimed per algorithm. The table gives the median over all rounds, busbw in GB/s, the ratio to
the last algorithm (``builtin``) -- the ratio of the busbw columns -- and the median and quartiles of
the per-round ratios (each round's reference time over the algorithm's). It prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.collectives import get_collective  # noqa: E402
from sim.units import parse_size_range  # noqa: E402

DEFAULT_ALGORITHMS = "ring builtin"


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=int(os.environ.get("COLLSIM_RANKS", 4)))
    parser.add_argument("--sizes", default="16MiB,32MiB,64MiB")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iters", type=int, default=1)
    parser.add_argument(
        "--algorithms", default=DEFAULT_ALGORITHMS, help="space-separated specs; the last is the reference"
    )
    return parser.parse_args(argv)


def rank(argv: list[str]) -> int:
    """One rank: interleaved rounds of every algorithm at every size; rank 0 prints the table."""
    from validate.rank import join, rank_main

    def body(args_: object, env, slot) -> int:  # type: ignore[no-untyped-def]
        import torch.distributed as dist

        from validate.algorithms import get_algorithm
        from validate.bench import SizeRun, measure
        from validate.comm import TorchComm
        from validate.layout import layout

        args = _arguments(list(args_))  # type: ignore[arg-type]
        specs = args.algorithms.split()
        algos = [get_algorithm("allreduce", s) for s in specs]
        sizes = parse_size_range(args.sizes)
        from validate.data import make_buffers

        backend, device, seen = join(env, "gloo", "cpu", 300.0, slot)
        comm = TorchComm(env.rank, env.world_size, backend, 300.0)
        ctx = SizeRun(comm, device, 0, 1, 0, args.iters, False, slot)
        warm = SizeRun(comm, device, 0, 1, 0, 1, False, slot)
        layouts = {size: layout("allreduce", size, env.world_size, "float") for size in sizes}
        bufs = {size: make_buffers(layouts[size], env.rank, 0, device, check=False) for size in sizes}
        for size in sizes:
            for algo in algos:
                measure(warm, algo, layouts[size], 0, bufs[size])
        times: dict[tuple[str, int], list[list[float]]] = {}
        for _ in range(args.rounds):
            for size in sizes:
                for algo in algos:
                    bufs[size].reset()
                    t, _ = measure(ctx, algo, layouts[size], 0, bufs[size])
                    times.setdefault((algo.spec, size), []).append(t)
        dist.destroy_process_group()
        if env.rank == 0:
            _report([a.spec for a in algos], sizes, times, env.world_size, args)
        return 0

    return rank_main(body, argv)


def _report(specs: list[str], sizes: list[int], times: dict, p: int, args: argparse.Namespace) -> None:  # type: ignore[type-arg]
    coll = get_collective("allreduce")
    ref = specs[-1]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# {p} local ranks, gloo on cpu, {args.rounds} interleaved rounds x {args.iters} timed iteration(s); "
        f"{platform.machine()}, {os.cpu_count()} cpus, load average {load:.1f}, Python {platform.python_version()}"
    )
    print(
        f"# {'size':>10s}  {'algorithm':18s}  {'time (ms)':>9s}  {'busbw (GB/s)':>12s}  {'vs ' + ref:>11s}  "
        f"{'per-round ratio: median (p25-p75)':>34s}"
    )
    for size in sizes:
        ref_all = [x for r in times[(ref, size)] for x in r]
        ref_med = statistics.median(ref_all)
        for spec in specs:
            rounds = times[(spec, size)]
            med = statistics.median([x for r in rounds for x in r])
            busbw = coll.busbw(size / med / 1e9, p)
            ratios = [
                statistics.median(r_ref) / statistics.median(r)
                for r, r_ref in zip(rounds, times[(ref, size)], strict=True)
            ]
            q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
            print(
                f"  {size:>10d}  {spec:18s}  {med * 1e3:9.2f}  {busbw:12.3f}  {ref_med / med:11.1%}  "
                f"{q[1]:15.1%} ({q[0]:.1%} - {q[2]:.1%})"
            )


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    from validate.launch import Job, launch

    job = Job(str(Path(__file__).resolve()), ("--rank", *argv), "efficiency benchmark", timeout=300.0)
    return launch(args.ranks, job)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        raise SystemExit(rank(sys.argv[2:]))
    raise SystemExit(main(sys.argv[1:]))
