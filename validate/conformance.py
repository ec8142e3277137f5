"""Every algorithm of every collective, checked exactly on awkward sizes, in one job:
``collsim validate check --ranks N`` (or ``python -m validate.conformance`` as one rank under torchrun).

For each collective, each registered algorithm (with its defaults and the option variants in
:data:`VARIANTS`) runs twice on each element count -- one element, a prime that no rank count divides,
and a large buffer -- from freshly filled buffers, and the result is compared exactly with the expected
one (see :mod:`validate.data`). Rank 0 prints one row per case and, with ``--json FILE``, appends one
JSON line per case; the exit status is 1 when any element is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sim.collectives import COLLECTIVES, DTYPES, get_collective
from sim.errors import AlgorithmError, ConfigError

from .env import RankEnv
from .options import _Parser
from .rank import join, rank_main
from .status import DONE, FAILED, IDLE, IN_COLLECTIVE, WRONG_RESULTS, NullSlot, RankSlot

__all__ = ["Case", "cases", "main"]

#: option sets run besides each algorithm's defaults
VARIANTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("allreduce", "ring"): ("ring:segment=64",),
    ("allreduce", "tree"): ("tree:chunks=4",),
    ("allreduce", "double-binary-tree"): ("double-binary-tree:chunks=3",),
    ("allreduce", "ps"): ("ps:shards=2",),
    ("allreduce", "hierarchical"): ("hierarchical:outer=tree", "hierarchical:outer=halving-doubling"),
    ("broadcast", "ring"): ("ring:chunks=1",),
}
DEFAULT_COUNTS = (1, 1009, 262147)


@dataclass(frozen=True)
class Case:
    """One checked run: ``count`` elements per rank (per block for the gathering collectives)."""

    collective: str
    algorithm: str
    count: int


def cases(collectives: Sequence[str], p: int, counts: Sequence[int], gpus_per_host: int = 1) -> list[Case]:
    """The cases to check on ``p`` ranks (algorithms that cannot run on ``p`` ranks are left out)."""
    from .algorithms import algorithm_names, get_algorithm

    out = []
    for coll in collectives:
        for name in algorithm_names(coll):
            for spec in (name, *VARIANTS.get((coll, name), ())):
                try:
                    get_algorithm(coll, spec).check(p, gpus_per_host)
                except AlgorithmError:
                    continue
                out.extend(Case(coll, spec, n) for n in counts)
    return out


def _parse(argv: Sequence[str], p: int) -> argparse.Namespace:
    parser = _Parser(prog="python -m validate.conformance", description=__doc__)
    parser.add_argument("--collective", default=",".join(COLLECTIVES), help="comma-separated (default: all)")
    parser.add_argument("--counts", default=",".join(map(str, DEFAULT_COUNTS)), help="elements per rank")
    parser.add_argument("-d", "--dtype", default="float", choices=sorted(DTYPES))
    parser.add_argument("--root", type=int, default=p - 1, help="root of the rooted collectives (default: last)")
    parser.add_argument("--gpus-per-host", type=int, default=2 if p % 2 == 0 and p > 2 else 1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--backend", choices=("gloo", "nccl"))
    parser.add_argument("--device", choices=("cpu", "cuda"))
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(list(argv))
    args.collectives = [get_collective(c).name for c in args.collective.split(",") if c.strip()]
    try:
        args.count_list = [int(c) for c in args.counts.split(",") if c.strip()]
    except ValueError:
        raise ConfigError(f"--counts {args.counts!r}: expected whole numbers") from None
    if not args.count_list or min(args.count_list) < 1:
        raise ConfigError(f"--counts {args.counts!r}: counts must be >= 1")
    if not 0 <= args.root < p:
        raise ConfigError(f"--root {args.root} is not a rank (0..{p - 1})")
    return args


def run_conformance(argv: Sequence[str], env: RankEnv, slot: RankSlot | NullSlot) -> int:
    """One rank's part of the conformance check; returns the exit status."""
    import torch
    import torch.distributed as dist

    from .algorithms import Task, get_algorithm
    from .bench import barrier
    from .comm import TorchComm
    from .data import make_buffers
    from .layout import layout

    p = env.world_size
    args = _parse(argv, p)
    todo = cases(args.collectives, p, args.count_list, args.gpus_per_host)
    backend, device, _ = join(env, args.backend, args.device, args.timeout, slot)
    comm = TorchComm(env.rank, p, backend, args.timeout)
    elt = DTYPES[args.dtype]
    if env.rank == 0:
        print(
            f"# collsim validate check: {len(todo)} cases on {p} ranks, {backend}, {args.dtype}, root {args.root}, "
            f"{args.gpus_per_host} rank(s) per host\n#  collective  algorithm                              count  "
            f"#wrong",
            flush=True,
        )
    bad = 0
    for index, case in enumerate(todo):
        blocked = get_collective(case.collective).size_is_total
        lay = layout(case.collective, case.count * elt * (p if blocked else 1), p, args.dtype)
        algo = get_algorithm(case.collective, case.algorithm)
        bufs = make_buffers(lay, env.rank, args.root, device)
        run = algo.plan(Task(comm, bufs.inp, bufs.out, args.root, args.gpus_per_host))
        wrong = 0
        for it in range(2):
            bufs.reset()
            comm.where = f"check {case.collective} ({case.algorithm}), {lay.size_bytes} B, run {it + 1}"
            slot.update(IN_COLLECTIVE, size_bytes=lay.size_bytes, iteration=index)
            run()
            slot.update(IDLE)
            wrong += bufs.wrong()
        total = torch.tensor([wrong], dtype=torch.float64, device=device)
        dist.all_reduce(total)
        wrong = int(total.item())
        bad += wrong
        if env.rank == 0:
            print(f"   {case.collective:12s} {case.algorithm:36s} {case.count:8d}  {wrong:6d}", flush=True)
            if args.json:
                with open(args.json, "a", encoding="utf-8") as fh:
                    fh.write(
                        json.dumps(
                            {
                                **asdict(case),
                                "ranks": p,
                                "size_bytes": lay.size_bytes,
                                "wrong": wrong,
                                "dtype": args.dtype,
                                "backend": backend,
                            }
                        )
                        + "\n"
                    )
    barrier(device)
    dist.destroy_process_group()
    slot.update(FAILED if bad else DONE, error=WRONG_RESULTS if bad else 0)
    if env.rank == 0:
        print(f"# {len(todo)} cases, {bad} wrong element(s): {'FAILED' if bad else 'OK'}", flush=True)
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m validate.conformance``: run this rank's part."""
    return rank_main(run_conformance, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
