"""From the sweep's records to the report's tables: the rows (:mod:`reports.rows`) that plots, CSV,
JSON, HTML and the summary all read (never the simulator's internals).

Scaling efficiency is weak scaling (every GPU keeps its batch): the per-GPU throughput at a size over
the per-GPU throughput at the algorithm's smallest size, which is T(smallest) / T(size).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sim.results import SimResult
from sim.training import IterationResult

from .points import Point, workload_of
from .records import PointRecord, Status
from .rows import CollectiveRow, CrossoverCell, IterationRow, JobFacts, LinkRow, ProblemRow
from .spec import ReportSpec

__all__ = ["ReportData", "analyze", "collective_rows", "crossover_map", "iteration_rows", "job_facts", "link_rows"]


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows, as rows.

    ``parameters`` is ``nominal`` or ``calibrated``; ``skipped`` and ``failed`` are the points without
    figures; ``summary`` is added by :func:`reports.summary.summarize`.
    """

    title: str
    description: str
    parameters: str
    algorithms: tuple[str, ...]
    sizes: tuple[int, ...]
    job: JobFacts
    iterations: tuple[IterationRow, ...]
    collectives: tuple[CollectiveRow, ...]
    crossover: tuple[CrossoverCell, ...]
    links: tuple[LinkRow, ...]
    skipped: tuple[ProblemRow, ...]
    failed: tuple[ProblemRow, ...]
    summary: tuple[str, ...] = field(default=())

    @property
    def largest(self) -> int:
        """The largest cluster size, in GPUs."""
        return max(self.sizes)


def _iterations(records: Iterable[PointRecord]) -> list[tuple[PointRecord, IterationResult]]:
    return [(rec, it) for rec in records if (it := rec.iteration) is not None]


def iteration_rows(records: Iterable[PointRecord], parameters: str) -> tuple[IterationRow, ...]:
    """One row per (algorithm, size) with a finished iteration, with scaling efficiency."""
    done = sorted(_iterations(records), key=lambda pair: (pair[0].algorithm, pair[0].gpus))
    base: dict[str, tuple[int, float]] = {}
    rows = []
    for rec, r in done:
        base_gpus, base_s = base.setdefault(rec.algorithm, (rec.gpus, r.iteration_s))
        rows.append(
            IterationRow(
                algorithm=rec.algorithm,
                gpus=rec.gpus,
                cluster=rec.cluster,
                iteration_s=r.iteration_s,
                samples_per_s=r.samples_per_s,
                forward_s=r.forward_s,
                backward_s=r.backward_s,
                optimizer_s=r.optimizer_s,
                exposed_comm_s=r.exposed_comm_s,
                exposed_fraction=r.exposed_fraction,
                comm_s=r.comm_end_s - r.comm_start_s,
                buckets=r.buckets,
                bytes_sent=r.bytes_sent,
                max_rank_bytes=r.max_rank_bytes,
                link_bytes=r.link_bytes,
                busiest_link=r.busiest_link,
                max_link_utilization=r.max_link_utilization,
                parameters=parameters,
                scaling_efficiency=base_s / r.iteration_s,
                efficiency_baseline_gpus=base_gpus,
            )
        )
    return tuple(rows)


def _collective_row(rec: PointRecord, r: SimResult, parameters: str) -> CollectiveRow:
    return CollectiveRow(
        algorithm=rec.algorithm,
        gpus=rec.gpus,
        cluster=rec.cluster,
        size_bytes=r.size_bytes,
        time_s=r.time_s,
        algbw_GBps=r.algbw_GBps,
        busbw_GBps=r.busbw_GBps,
        link_bytes=r.link_bytes,
        busiest_link=r.busiest_link,
        max_link_utilization=r.max_link_utilization,
        parameters=parameters,
    )


def collective_rows(records: Iterable[PointRecord], parameters: str) -> tuple[CollectiveRow, ...]:
    """One row per (algorithm, size, message size) of the collective sweep."""
    rows = [_collective_row(rec, r, parameters) for rec in records for r in rec.collectives]
    return tuple(sorted(rows, key=lambda row: (row.algorithm, row.gpus, row.size_bytes)))


def crossover_map(rows: Sequence[CollectiveRow], order: Sequence[str]) -> tuple[CrossoverCell, ...]:
    """The fastest algorithm at every (size, message size), the runner-up and its margin
    (runner-up time / fastest time - 1). Ties go to the algorithm listed first."""
    rank = {a: i for i, a in enumerate(order)}
    cells: dict[tuple[int, int], list[CollectiveRow]] = {}
    for row in rows:
        cells.setdefault((row.gpus, row.size_bytes), []).append(row)
    out = []
    for (gpus, size), group in sorted(cells.items()):
        group = sorted(group, key=lambda r: (r.time_s, rank.get(r.algorithm, len(rank))))
        best = group[0]
        second = group[1] if len(group) > 1 else None
        out.append(
            CrossoverCell(
                gpus=gpus,
                size_bytes=size,
                fastest=best.algorithm,
                time_s=best.time_s,
                runner_up=second.algorithm if second else "",
                margin=second.time_s / best.time_s - 1 if second else None,
                parameters=best.parameters,
            )
        )
    return tuple(out)


def link_rows(records: Iterable[PointRecord], parameters: str) -> tuple[LinkRow, ...]:
    """The busiest link directions of every finished iteration (utilization over the iteration)."""
    rows = [
        LinkRow(
            algorithm=rec.algorithm,
            gpus=rec.gpus,
            rank=i + 1,
            link=link.link,
            bytes=link.bytes,
            utilization=link.utilization,
            parameters=parameters,
        )
        for rec, r in _iterations(records)
        for i, link in enumerate(r.busiest_links)
    ]
    return tuple(sorted(rows, key=lambda row: (row.algorithm, row.gpus, row.rank)))


def _problems(points: Sequence[Point], records: Mapping[str, PointRecord], status: Status) -> tuple[ProblemRow, ...]:
    return tuple(
        ProblemRow(kind=point.kind, algorithm=point.algorithm, gpus=point.cluster.gpus, reason=rec.reason or "")
        for point in points
        if (rec := records[point.key]).status == status
    )


def job_facts(spec: ReportSpec, points: Sequence[Point]) -> JobFacts:
    """The job as the report's set-up list shows it, with the clusters of ``points``."""
    workload = workload_of(spec)
    return JobFacts(
        name=spec.job.name,
        gradient_bytes=workload.gradient_bytes,
        gradient_dtype=spec.job.gradient_dtype if spec.job.parameters is not None else "",
        parameters=spec.job.parameters,
        forward_s=workload.forward_s,
        backward_s=workload.backward_s,
        optimizer_s=workload.optimizer_s,
        samples_per_gpu=workload.samples_per_gpu,
        bucket_bytes=workload.bucket_bytes,
        first_bucket_bytes=workload.first_bucket_bytes,
        overlap=workload.overlap,
        concurrent_buckets=workload.concurrent_buckets,
        gamma=spec.effective_gamma,
        clusters=tuple(sorted({(p.cluster.gpus, p.cluster.label) for p in points})),
    )


def analyze(spec: ReportSpec, points: Sequence[Point], records: Mapping[str, PointRecord]) -> ReportData:
    """All tables of a report (the summary is added by :func:`reports.summary.summarize`)."""
    parameters = spec.parameters_label
    ordered = [records[p.key] for p in points]
    order = spec.algorithm_specs
    collectives = collective_rows(ordered, parameters)
    return ReportData(
        title=spec.name,
        description=spec.description,
        parameters=parameters,
        algorithms=tuple(order),
        sizes=tuple(sorted({p.cluster.gpus for p in points})),
        job=job_facts(spec, points),
        iterations=iteration_rows(ordered, parameters),
        collectives=collectives,
        crossover=crossover_map(collectives, order),
        links=link_rows(ordered, parameters),
        skipped=_problems(points, records, "skipped"),
        failed=_problems(points, records, "failed"),
    )
