"""Synthetic measurements with known parameters, in every format calibration reads (for the tests)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sim.algorithms import get_algorithm
from sim.collectives import get_collective

Model = Callable[[float], float]


def hockney(alpha: float, efficiency: float, bandwidth: float) -> Model:
    return lambda n: alpha + n / (efficiency * bandwidth)


def noisy(rng: random.Random, t: float, rel: float, count: int = 10) -> list[float]:
    return [t * (1 + rng.gauss(0, rel)) for _ in range(count)]


def probe_lines(
    tests: dict[tuple[str, str, int], Model],
    sizes: Sequence[int],
    *,
    seed: int = 0,
    rel: float = 0.003,
    run_id: str = "probe-synthetic",
    world: int = 4,
) -> list[str]:
    """JSON lines as ``python -m validate.calibration.probes`` writes them: ``(test, class, fan) -> time(n)``."""
    rng = random.Random(seed)
    lines = []
    for (test, cls, fan), model in tests.items():
        for n in sizes:
            times = noisy(rng, model(n), rel)
            rec = {
                "source": "collsim-probe",
                "test": test,
                "link_class": cls,
                "ranks": list(range(fan + 1)),
                "fan": fan,
                "size_bytes": n,
                "time_s": sorted(times)[len(times) // 2],
                "times_s": times,
                "iters": len(times),
                "world_size": world,
                "run_id": run_id,
            }
            lines.append(json.dumps(rec))
    return lines


def collective_time(collective: str, algorithm: str, p: int, n: float, alpha: float, beta: float) -> float:
    return get_algorithm(collective, algorithm).cost(p, n, alpha, beta, 0.0)


def validate_lines(
    collective: str,
    algorithm: str,
    p: int,
    sizes: Sequence[int],
    alpha: float,
    beta: float,
    *,
    seed: int = 0,
    rel: float = 0.003,
    run_id: str = "validate-synthetic",
) -> list[str]:
    """JSON lines as ``python -m validate --json`` writes them."""
    rng = random.Random(seed)
    sim_algo = "ring" if algorithm == "builtin" else algorithm
    coll = get_collective(collective)
    out = []
    for n in sizes:
        times = noisy(rng, collective_time(collective, sim_algo, p, n, alpha, beta), rel)
        median = sorted(times)[len(times) // 2]
        out.append(
            json.dumps(
                {
                    "collective": collective,
                    "algorithm": algorithm,
                    "backend": "gloo",
                    "ranks": p,
                    "size_bytes": n,
                    "count": n // 4,
                    "dtype": "float",
                    "root": -1,
                    "time_s": median,
                    "algbw_GBps": n / median / 1e9,
                    "busbw_GBps": coll.busbw(n / median / 1e9, p),
                    "wrong": 0,
                    "iters": len(times),
                    "warmup": 1,
                    "times_s": times,
                    "run_id": run_id,
                    "source": "validate",
                }
            )
        )
    return out


def nccl_rows(
    collective: str, p: int, sizes: Sequence[int], alpha: float, beta: float, *, seed: int = 0
) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    algo = {"sendrecv": "direct", "broadcast": "ring"}.get(collective, "ring")
    return [(n, collective_time(collective, algo, p, n, alpha, beta) * (1 + rng.gauss(0, 0.003))) for n in sizes]


def nccl_text(binary: str, collective: str, p: int, rows: list[tuple[int, float]]) -> str:
    """nccl-tests' printed output (header, device lines, table, footer)."""
    coll = get_collective(collective)
    lines = [
        "# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803",
        f"# Collective test starting: {binary}",
        f"# nThread 1 nGpus 1 minBytes {rows[0][0]} maxBytes {rows[-1][0]} step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for r in range(p):
        lines.append(
            f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on node{r // 8:02d} device {r % 8:2d} [0000:{r:02x}:00] NVIDIA H100 80GB HBM3"
        )
    lines += [
        "#",
        "#                                                              out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    redop = "none" if collective in ("allgather", "alltoall", "sendrecv", "broadcast", "gather", "scatter") else "sum"
    for n, t in rows:
        algbw = n / t / 1e9
        busbw = coll.busbw(algbw, p)
        us = t * 1e6
        lines.append(
            f"{n:12d}  {n // 4:12d}     float  {redop:>6s}      -1  {us:7.5g}  {algbw:6.2f}  {busbw:6.2f}      0  "
            f"{us * 1.01:7.5g}  {algbw / 1.01:6.2f}  {busbw / 1.01:6.2f}      0"
        )
    lines += [
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 12.3",
        "#",
        f"# Collective test concluded: {binary}",
        "",
    ]
    return "\n".join(lines)


def nccl_json(binary: str, p: int, rows: list[tuple[int, float]]) -> dict[str, Any]:
    """The document nccl-tests writes with -J (format version 2), one process with ``p`` GPUs."""
    return {
        "version": 2,
        "start_time": "2025-01-01 00:00:00",
        "args": [f"./build/{binary}", "-b", str(rows[0][0]), "-e", str(rows[-1][0]), "-g", str(p), "-J", "out.json"],
        "env": ["PATH=/usr/bin"],
        "nccl_version": 22803,
        "config": {
            "nthreads": 1,
            "ngpus": p,
            "minimum_bytes": rows[0][0],
            "maximum_bytes": rows[-1][0],
            "step_factor": 2,
            "warmup_iters": 5,
            "iterations": 20,
            "devices": [{"rank": 0, "hostname": "node00"}],
        },
        "results": [
            {
                "size": n,
                "count": n // 4,
                "type": "float",
                "redop": "sum",
                "root": "    -1",
                "out_of_place": {"time": t * 1e6, "alg_bw": n / t / 1e9, "bus_bw": 0.0, "nwrong": 0.0},
                "in_place": {"time": t * 1e6 * 1.01, "alg_bw": n / t / 1e9, "bus_bw": 0.0, "nwrong": 0.0},
                "actual_iterations": 20,
                "experiment_name": "",
            }
            for n, t in rows
        ],
        "out_of_bounds": {"count": 0, "okay": "true"},
        "average_bus_bandwidth": {"bandwidth": 12.3, "okay": "unchecked"},
        "errors": [],
        "end_time": "2025-01-01 00:00:10",
    }


def write_lines(path: Path, lines: Sequence[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def compare_args(topology: str, calibration: str | Path, measured: str | Path, *extra: str) -> list[str]:
    """The command line (for ``collsim.cli.main``) of ``collsim validate compare`` on ``topology``: the
    calibration file, the measurements to compare instead of running, then ``extra`` options."""
    return [
        "validate",
        "compare",
        "-t",
        topology,
        "--calibration",
        str(calibration),
        "--measured",
        str(measured),
        *extra,
    ]
