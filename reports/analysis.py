"""From the sweep's records to the report's tables: flat rows that plots, CSV, JSON, HTML and the
summary all read (never the simulator's internals).

Scaling efficiency is weak scaling (every GPU keeps its batch): the per-GPU throughput at a size over
the per-GPU throughput at the algorithm's smallest size, which is T(smallest) / T(size).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .points import Point

__all__ = ["ReportData", "analyze", "crossover_map", "iteration_rows", "collective_rows", "link_rows"]

Row = dict[str, Any]


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows, as flat rows."""

    title: str
    description: str
    parameters: str  # "nominal" or "calibrated"
    algorithms: tuple[str, ...]
    sizes: tuple[int, ...]
    job: Row
    iterations: list[Row]
    collectives: list[Row]
    crossover: list[Row]
    links: list[Row]
    skipped: list[Row]
    failed: list[Row]
    summary: list[str] = field(default_factory=list)

    @property
    def largest(self) -> int:
        return max(self.sizes)


def iteration_rows(records: Iterable[Row], parameters: str) -> list[Row]:
    """One row per (algorithm, size) with a finished iteration, with scaling efficiency."""
    rows = []
    for rec in records:
        if rec["kind"] != "iteration" or rec["status"] != "ok":
            continue
        r = rec["result"]
        rows.append(
            {
                "algorithm": rec["algorithm"],
                "gpus": rec["gpus"],
                "cluster": rec["cluster"],
                "iteration_s": r["iteration_s"],
                "samples_per_s": r["samples_per_s"],
                "forward_s": r["forward_s"],
                "backward_s": r["backward_s"],
                "optimizer_s": r["optimizer_s"],
                "exposed_comm_s": r["exposed_comm_s"],
                "exposed_fraction": r["exposed_fraction"],
                "comm_s": r["comm_end_s"] - r["comm_start_s"],
                "buckets": r["buckets"],
                "bytes_sent": r["bytes_sent"],
                "max_rank_bytes": r["max_rank_bytes"],
                "link_bytes": r["link_bytes"],
                "busiest_link": r["busiest_link"],
                "max_link_utilization": r["max_link_utilization"],
                "parameters": parameters,
            }
        )
    rows.sort(key=lambda row: (row["algorithm"], row["gpus"]))
    base: dict[str, Row] = {}
    for row in rows:
        first = base.setdefault(row["algorithm"], row)
        row["scaling_efficiency"] = first["iteration_s"] / row["iteration_s"]
        row["efficiency_baseline_gpus"] = first["gpus"]
    return rows


def collective_rows(records: Iterable[Row], parameters: str) -> list[Row]:
    """One row per (algorithm, size, message size) of the collective sweep."""
    rows = []
    for rec in records:
        if rec["kind"] != "collective" or rec["status"] != "ok":
            continue
        for r in rec["result"]:
            rows.append(
                {
                    "algorithm": rec["algorithm"],
                    "gpus": rec["gpus"],
                    "cluster": rec["cluster"],
                    "size_bytes": r["size_bytes"],
                    "time_s": r["time_s"],
                    "algbw_GBps": r["algbw_GBps"],
                    "busbw_GBps": r["busbw_GBps"],
                    "link_bytes": r["link_bytes"],
                    "busiest_link": r["busiest_link"],
                    "max_link_utilization": r["max_link_utilization"],
                    "parameters": parameters,
                }
            )
    rows.sort(key=lambda row: (row["algorithm"], row["gpus"], row["size_bytes"]))
    return rows


def crossover_map(rows: Sequence[Row], order: Sequence[str]) -> list[Row]:
    """The fastest algorithm at every (size, message size), the runner-up and its margin
    (runner-up time / fastest time - 1). Ties go to the algorithm listed first."""
    rank = {a: i for i, a in enumerate(order)}
    cells: dict[tuple[int, int], list[Row]] = {}
    for row in rows:
        cells.setdefault((row["gpus"], row["size_bytes"]), []).append(row)
    out = []
    for (gpus, size), group in sorted(cells.items()):
        group = sorted(group, key=lambda r: (r["time_s"], rank.get(r["algorithm"], len(rank))))
        best = group[0]
        second = group[1] if len(group) > 1 else None
        out.append(
            {
                "gpus": gpus,
                "size_bytes": size,
                "fastest": best["algorithm"],
                "time_s": best["time_s"],
                "runner_up": second["algorithm"] if second else "",
                "margin": second["time_s"] / best["time_s"] - 1 if second else None,
                "parameters": best["parameters"],
            }
        )
    return out


def link_rows(records: Iterable[Row], parameters: str) -> list[Row]:
    """The busiest link directions of every finished iteration (utilization over the iteration)."""
    rows = []
    for rec in records:
        if rec["kind"] != "iteration" or rec["status"] != "ok":
            continue
        for i, link in enumerate(rec["result"]["busiest_links"]):
            rows.append(
                {
                    "algorithm": rec["algorithm"],
                    "gpus": rec["gpus"],
                    "rank": i + 1,
                    "link": link["link"],
                    "bytes": link["bytes"],
                    "utilization": link["utilization"],
                    "parameters": parameters,
                }
            )
    rows.sort(key=lambda row: (row["algorithm"], row["gpus"], row["rank"]))
    return rows


def _problems(points: Sequence[Point], records: dict[str, Row], status: str) -> list[Row]:
    rows = []
    for point in points:
        rec = records[point.key]
        if rec["status"] == status:
            rows.append(
                {
                    "kind": point.kind,
                    "algorithm": point.algorithm,
                    "gpus": point.cluster.gpus,
                    "reason": rec.get("reason", ""),
                }
            )
    return rows


def analyze(spec: Any, points: Sequence[Point], records: dict[str, Row]) -> ReportData:
    """All tables of a report (the summary is added by :func:`reports.summary.summarize`)."""
    from .points import workload_of

    parameters = spec.parameters_label
    ordered = [records[p.key] for p in points]
    order = spec.algorithm_specs
    collectives = collective_rows(ordered, parameters)
    workload = workload_of(spec)
    job = {
        "name": spec.job.name,
        "gradient_bytes": workload.gradient_bytes,
        "gradient_dtype": spec.job.gradient_dtype if spec.job.parameters is not None else "",
        "parameters": spec.job.parameters,
        "forward_s": workload.forward_s,
        "backward_s": workload.backward_s,
        "optimizer_s": workload.optimizer_s,
        "samples_per_gpu": workload.samples_per_gpu,
        "bucket_bytes": workload.bucket_bytes,
        "first_bucket_bytes": workload.first_bucket_bytes,
        "overlap": workload.overlap,
        "concurrent_buckets": workload.concurrent_buckets,
        "gamma": spec.effective_gamma,
        "clusters": sorted({(p.cluster.gpus, p.cluster.label) for p in points}),
    }
    return ReportData(
        title=spec.name,
        description=spec.description,
        parameters=parameters,
        algorithms=tuple(order),
        sizes=tuple(sorted({p.cluster.gpus for p in points})),
        job=job,
        iterations=iteration_rows(ordered, parameters),
        collectives=collectives,
        crossover=crossover_map(collectives, order),
        links=link_rows(ordered, parameters),
        skipped=_problems(points, records, "skipped"),
        failed=_problems(points, records, "failed"),
    )
