"""Capacity reports: what-if cluster sizes for a training job, written as HTML, Markdown, CSV and JSON.

The front door is :func:`build_report` (``collsim report SPEC --out DIR`` on the command line)::

    spec (YAML)  ->  points (one task per algorithm x size)  ->  sweep (local cores / dask, cached)
                 ->  a PointRecord per point (records)  ->  rows (analysis, rows)  ->  summary sentences
                 ->  index.html, report.md, results.csv/json

matplotlib and jinja2 are imported only when a report is written.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path

from sim.deadline import current as current_deadline

from .analysis import ReportData, analyze
from .points import Point, report_points, run_point
from .records import PointRecord
from .spec import ReportSpec, bundled_specs, load_spec, parse_spec
from .summary import summarize
from .sweep import Executor, PointCache, make_executor, run_sweep

__all__ = [
    "Point",
    "PointRecord",
    "ReportData",
    "ReportOutcome",
    "ReportSpec",
    "build_report",
    "bundled_specs",
    "load_spec",
    "parse_spec",
    "report_points",
    "run_point",
]


@dataclass(frozen=True)
class ReportOutcome:
    """What :func:`build_report` did: the files it wrote, the data they show, and how many points it
    computed now (``computed``) or took from the cache (``reused``)."""

    paths: dict[str, Path]
    data: ReportData
    computed: int
    reused: int


def build_report(
    spec: str | os.PathLike[str] | ReportSpec,
    out: str | os.PathLike[str],
    *,
    executor: str | Executor = "local",
    jobs: int | None = None,
    address: str | None = None,
    progress: bool = True,
    command: str = "collsim report",
    point_limit: float | None = None,
) -> ReportOutcome:
    """Simulate every point of ``spec`` not yet cached in ``out`` and write the report there.

    ``executor`` is ``local`` (``jobs`` processes, default all cores), ``serial``, ``dask`` (with
    ``address``) or an executor object. ``point_limit`` (seconds; default the spec's ``point_limit``)
    bounds each point: one still running then is recorded as failed, and the report goes on.
    """
    if not isinstance(spec, ReportSpec):
        spec, _path = load_spec(spec)
    out_dir = Path(out)
    points = report_points(spec)
    run = make_executor(executor, jobs=jobs, address=address) if isinstance(executor, str) else executor
    cache = PointCache(out_dir)
    cached = cache.load()
    reused = len({p.key for p in points if p.key in cached})
    # a deadline in force here (--timeout) travels to every worker as an absolute time
    bound = current_deadline()
    limit = spec.point_limit if point_limit is None else point_limit
    func = run_point if bound is None and limit is None else functools.partial(run_point, bound=bound, limit=limit)
    records = run_sweep(points, cache, run, progress=progress, func=func)
    data = analyze(spec, points, records)
    data = replace(data, summary=tuple(summarize(data, spec.tolerance)))
    from .render import write_report

    paths = write_report(
        data,
        out_dir,
        records=[records[p.key] for p in points],
        spec=spec.model_dump(mode="json"),
        command=command,
    )
    return ReportOutcome(paths, data, computed=len({p.key for p in points}) - reused, reused=reused)
