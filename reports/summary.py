"""The plain-language summary, computed from the report's rows: the fastest configuration, where
communication stops hiding behind backward, scaling efficiency, crossovers between algorithms by
message size, how far each algorithm keeps up with the best one, traffic, the busiest link, and what
could not be simulated. Every sentence carries the parameters it rests on (``[nominal]``).

>>> from reports.rows import CrossoverCell
>>> cells = [CrossoverCell(gpus=64, size_bytes=s, fastest=a, time_s=1e-3, runner_up="", margin=None,
...                        parameters="nominal")
...          for s, a in ((2**12, "tree"), (2**16, "tree"), (2**20, "ring"), (2**24, "ring"))]
>>> crossover_sentence(cells, 64)
'At 64 GPUs tree is the fastest all-reduce up to 64KiB; ring beats it from 1MiB upward. [nominal]'
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from sim.units import format_size, format_time

from .analysis import ReportData
from .rows import CrossoverCell, IterationRow, ProblemRow

__all__ = ["bands", "crossover_sentence", "match_sentence", "summarize"]


def _tag(parameters: str) -> str:
    return f" [{parameters}]"


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _gpus(sizes: Sequence[int]) -> str:
    return ", ".join(str(s) for s in sizes) + " GPUs"


def bands(cells: Sequence[CrossoverCell]) -> list[tuple[str, int, int]]:
    """Runs of consecutive message sizes with the same fastest algorithm: (algorithm, first, last)."""
    cells = sorted(cells, key=lambda c: c.size_bytes)
    out = []
    for algo, group in groupby(cells, key=lambda c: c.fastest):
        run = list(group)
        out.append((algo, run[0].size_bytes, run[-1].size_bytes))
    return out


def crossover_sentence(crossover: Sequence[CrossoverCell], gpus: int) -> str | None:
    """Which algorithm is fastest at which message sizes, at one cluster size."""
    cells = [c for c in crossover if c.gpus == gpus]
    if not cells:
        return None
    tag = _tag(cells[0].parameters)
    runs = bands(cells)
    if len(runs) == 1:
        algo, lo, hi = runs[0]
        return f"At {gpus} GPUs {algo} is the fastest all-reduce at every message size from {format_size(lo)} to {format_size(hi)}.{tag}"
    parts = [f"{runs[0][0]} is the fastest all-reduce up to {format_size(runs[0][2])}"]
    for i in range(1, len(runs)):
        algo, lo, hi = runs[i]
        span = "upward" if i == len(runs) - 1 else f"to {format_size(hi)}"
        beaten = "it" if i == 1 else runs[i - 1][0]
        parts.append(f"{algo} beats {beaten} from {format_size(lo)} {span}")
    return f"At {gpus} GPUs " + "; ".join(parts) + "." + tag


def match_sentence(rows: Sequence[IterationRow], algo: str, ref: str, tolerance: float) -> str | None:
    """How far ``algo``'s iteration time stays within ``tolerance`` of ``ref``'s, size by size."""
    mine = {r.gpus: r.iteration_s for r in rows if r.algorithm == algo}
    theirs = {r.gpus: r.iteration_s for r in rows if r.algorithm == ref}
    sizes = sorted(set(mine) & set(theirs))
    if not sizes:
        return None
    tag = _tag(rows[0].parameters)
    ratio = {p: mine[p] / theirs[p] for p in sizes}
    within = [p for p in sizes if ratio[p] <= 1 + tolerance]
    tol = _pct(tolerance)
    if len(within) == len(sizes):
        return f"{algo} matches {ref} (within {tol} per iteration) at every size up to {sizes[-1]} GPUs.{tag}"
    if not within:
        return (
            f"{algo} is slower than {ref} at every size: by {_pct(ratio[sizes[0]] - 1)} at {sizes[0]} GPUs "
            f"and {_pct(ratio[sizes[-1]] - 1)} at {sizes[-1]} GPUs.{tag}"
        )
    prefix = []
    for p in sizes:
        if ratio[p] > 1 + tolerance:
            break
        prefix.append(p)
    first_off = next(p for p in sizes if ratio[p] > 1 + tolerance)
    if prefix:
        head = f"{algo} matches {ref} (within {tol}) only up to {prefix[-1]} GPUs"
    else:
        head = f"{algo} matches {ref} (within {tol}) only at {_gpus(within)}"
    return f"{head}; at {first_off} GPUs it is {_pct(ratio[first_off] - 1)} slower.{tag}"


def _best_at(rows: Sequence[IterationRow], gpus: int) -> IterationRow | None:
    at = [r for r in rows if r.gpus == gpus]
    return min(at, key=lambda r: r.iteration_s) if at else None


def summarize(data: ReportData, tolerance: float = 0.05) -> list[str]:
    """The summary sentences, most important first."""
    out: list[str] = []
    rows = data.iterations
    tag = _tag(data.parameters)
    sizes = sorted({r.gpus for r in rows})
    if rows:
        top = sizes[-1]
        best = _best_at(rows, top)
        assert best is not None
        out.append(
            f"At {top} GPUs the shortest iteration is {format_time(best.iteration_s)} with {best.algorithm}: "
            f"{best.samples_per_s:,.0f} samples/s, {_pct(best.scaling_efficiency)} scaling efficiency against "
            f"{best.efficiency_baseline_gpus} GPUs, {_pct(best.exposed_fraction)} of the iteration spent in "
            f"exposed communication.{tag}"
        )
        out.append(_hidden_sentence(rows, best.algorithm, tolerance, tag))
        if len(sizes) > 1:
            effs = sorted((r for r in rows if r.gpus == top), key=lambda r: -r.scaling_efficiency)
            listed = ", ".join(f"{r.algorithm} {_pct(r.scaling_efficiency)}" for r in effs)
            out.append(f"Scaling efficiency at {top} GPUs (against each algorithm's smallest size): {listed}.{tag}")
        for algo in data.algorithms:
            if algo != best.algorithm:
                sentence = match_sentence(rows, algo, best.algorithm, tolerance)
                if sentence:
                    out.append(sentence)
    cross_sizes = sorted({c.gpus for c in data.crossover})
    if len({c.fastest for c in data.crossover} | {c.runner_up for c in data.crossover} - {""}) > 1:
        for gpus in dict.fromkeys([cross_sizes[-1], cross_sizes[0]]):
            sentence = crossover_sentence(data.crossover, gpus)
            if sentence:
                out.append(sentence)
    if rows:
        out += _traffic_sentences(rows, sizes[-1], tag)
    out += _problem_sentences(data)
    return [s for s in out if s]


def _hidden_sentence(rows: Sequence[IterationRow], algo: str, tolerance: float, tag: str) -> str:
    mine = sorted((r for r in rows if r.algorithm == algo), key=lambda r: r.gpus)
    hidden = [r for r in mine if r.exposed_fraction <= tolerance]
    limit = _pct(tolerance)
    if len(hidden) == len(mine):
        return (
            f"With {algo}, communication hides behind the backward pass at every size up to {mine[-1].gpus} GPUs "
            f"(at most {_pct(max(r.exposed_fraction for r in mine))} of the iteration exposed).{tag}"
        )
    first = next(r for r in mine if r.exposed_fraction > tolerance)
    if not hidden or hidden[-1].gpus > first.gpus:
        return (
            f"With {algo}, communication is exposed from {first.gpus} GPUs: "
            f"{format_time(first.exposed_comm_s)} ({_pct(first.exposed_fraction)} of the iteration).{tag}"
        )
    return (
        f"With {algo}, communication hides behind the backward pass (under {limit} of the iteration exposed) up to "
        f"{hidden[-1].gpus} GPUs; at {first.gpus} GPUs {format_time(first.exposed_comm_s)} "
        f"({_pct(first.exposed_fraction)}) is exposed.{tag}"
    )


def _traffic_sentences(rows: Sequence[IterationRow], gpus: int, tag: str) -> list[str]:
    at = [r for r in rows if r.gpus == gpus]
    least = min(at, key=lambda r: r.bytes_sent)
    most = max(at, key=lambda r: r.bytes_sent)
    out = []
    if len(at) == 1:
        out.append(
            f"At {gpus} GPUs one iteration with {least.algorithm} puts {format_size(least.bytes_sent)} on the "
            f"network; its busiest rank sends and receives {format_size(least.max_rank_bytes)}.{tag}"
        )
    else:
        if most.bytes_sent <= least.bytes_sent * 1.001:
            total = f"every algorithm puts {format_size(least.bytes_sent)} on the network"
        else:
            total = (
                f"one iteration puts {format_size(least.bytes_sent)} on the network with {least.algorithm} "
                f"and {format_size(most.bytes_sent)} with {most.algorithm}"
            )
        cool = min(at, key=lambda r: r.max_rank_bytes)
        hot = max(at, key=lambda r: r.max_rank_bytes)
        out.append(
            f"At {gpus} GPUs {total}; the busiest single rank sends and receives {format_size(hot.max_rank_bytes)} "
            f"under {hot.algorithm} against {format_size(cool.max_rank_bytes)} under {cool.algorithm}.{tag}"
        )
    best = min(at, key=lambda r: r.iteration_s)
    if best.busiest_link:
        out.append(
            f"The busiest link at {gpus} GPUs with {best.algorithm} is {best.busiest_link}, carrying data "
            f"{_pct(best.max_link_utilization)} of the iteration.{tag}"
        )
    return out


def _cause(row: ProblemRow) -> tuple[str, str]:
    return row.algorithm, row.reason


def _problem_sentences(data: ReportData) -> list[str]:
    out = []
    for label, problems in (("was not simulated", data.skipped), ("failed", data.failed)):
        for (algo, reason), group in groupby(sorted(problems, key=_cause), key=_cause):
            sizes = sorted({r.gpus for r in group})
            out.append(f"{algo} {label} at {_gpus(sizes)}: {reason}")
    return out
