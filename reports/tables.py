"""The report's tables as display-ready strings (one :class:`Table` per table), shared by the HTML
and Markdown renderings so both show the same numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sim.units import format_size, format_time

from .analysis import ReportData
from .rows import ProblemRow

__all__ = ["Section", "Table", "sections"]


@dataclass(frozen=True)
class Table:
    caption: str
    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    text: str
    figure: str | None = None
    tables: list[Table] = field(default_factory=list)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x * 100:.1f}%"


def _gb(x: float) -> str:
    return f"{x:.3g}"


def _iteration_table(data: ReportData) -> Table:
    rows = sorted(data.iterations, key=lambda r: (r.gpus, r.iteration_s))
    return Table(
        f"Training iteration per algorithm and size ({data.parameters} link parameters)",
        [
            "GPUs",
            "algorithm",
            "iteration",
            "samples/s",
            "scaling efficiency",
            "exposed comm",
            "exposed share",
            "busiest link (busy)",
            "parameters",
        ],
        [
            [
                str(r.gpus),
                r.algorithm,
                format_time(r.iteration_s),
                f"{r.samples_per_s:,.0f}",
                f"{_pct(r.scaling_efficiency)} (vs {r.efficiency_baseline_gpus})",
                format_time(r.exposed_comm_s),
                _pct(r.exposed_fraction),
                f"{r.busiest_link} ({_pct(r.max_link_utilization)})" if r.busiest_link else "",
                r.parameters,
            ]
            for r in rows
        ],
    )


def _busbw_table(data: ReportData) -> Table | None:
    rows = [r for r in data.collectives if r.gpus == data.largest]
    if not rows:
        return None
    algos = [a for a in data.algorithms if any(r.algorithm == a for r in rows)]
    cell = {(r.size_bytes, r.algorithm): r for r in rows}
    sizes = sorted({r.size_bytes for r in rows})
    return Table(
        f"All-reduce busbw in GB/s (time) at {data.largest} GPUs ({data.parameters} link parameters)",
        ["message size", *algos],
        [
            [format_size(s)]
            + [
                f"{_gb(cell[s, a].busbw_GBps)} ({format_time(cell[s, a].time_s)})" if (s, a) in cell else "-"
                for a in algos
            ]
            for s in sizes
        ],
    )


def _crossover_table(data: ReportData) -> Table | None:
    if not data.crossover:
        return None
    gpus = sorted({c.gpus for c in data.crossover})
    sizes = sorted({c.size_bytes for c in data.crossover})
    cell = {(c.gpus, c.size_bytes): c for c in data.crossover}
    return Table(
        f"Fastest all-reduce by cluster size and message size ({data.parameters} link parameters)",
        ["GPUs", *[format_size(s) for s in sizes]],
        [[str(g)] + [cell[g, s].fastest if (g, s) in cell else "-" for s in sizes] for g in gpus],
    )


def _traffic_table(data: ReportData) -> Table:
    rows = sorted(data.iterations, key=lambda r: (r.gpus, r.bytes_sent))
    return Table(
        f"Traffic per iteration ({data.parameters} link parameters)",
        [
            "GPUs",
            "algorithm",
            "sent by all ranks",
            "per GPU",
            "busiest rank (sent + received)",
            "bytes x hops on links",
            "parameters",
        ],
        [
            [
                str(r.gpus),
                r.algorithm,
                format_size(r.bytes_sent),
                format_size(r.bytes_sent / r.gpus),
                format_size(r.max_rank_bytes),
                format_size(r.link_bytes),
                r.parameters,
            ]
            for r in rows
        ],
    )


def _links_table(data: ReportData) -> Table | None:
    rows = [r for r in data.links if r.gpus == data.largest]
    if not rows:
        return None
    return Table(
        f"Busiest link directions at {data.largest} GPUs over one iteration ({data.parameters} link parameters)",
        ["algorithm", "#", "link", "bytes", "busy", "parameters"],
        [
            [
                r.algorithm,
                str(r.rank),
                r.link,
                format_size(r.bytes),
                _pct(r.utilization),
                r.parameters,
            ]
            for r in rows
        ],
    )


def _problems_table(rows: Sequence[ProblemRow], caption: str) -> Table | None:
    if not rows:
        return None
    return Table(
        caption,
        ["algorithm", "GPUs", "what", "reason"],
        [[r.algorithm, str(r.gpus), r.kind, r.reason] for r in rows],
    )


def sections(data: ReportData) -> list[Section]:
    """The report body, in order; sections without data are left out."""
    out = []
    if data.iterations:
        out.append(
            Section(
                "iteration",
                "Iteration time and scaling efficiency",
                "One DDP training iteration per algorithm and cluster size: forward, backward producing gradient "
                "buckets, every bucket's all-reduce sharing the network, optimizer step. Scaling efficiency is weak "
                "scaling against each algorithm's smallest size.",
                "iteration",
                [_iteration_table(data)],
            )
        )
        out.append(
            Section(
                "breakdown",
                "Where the iteration goes",
                f"At {data.largest} GPUs: compute, and the communication that backward could not hide.",
                "breakdown",
            )
        )
    busbw = _busbw_table(data)
    if busbw:
        out.append(
            Section(
                "busbw",
                "Bus bandwidth by message size",
                "One all-reduce per message size, measured the way nccl-tests reports it (busbw = size / time x 2(p-1)/p).",
                "busbw",
                [busbw],
            )
        )
    cross = _crossover_table(data)
    if cross:
        out.append(
            Section(
                "crossover",
                "Crossover map",
                "The fastest algorithm for every message size and cluster size.",
                "crossover",
                [cross],
            )
        )
    if data.iterations:
        out.append(
            Section(
                "traffic",
                "Traffic per algorithm",
                "Bytes every algorithm puts on the network per iteration, and the load on its busiest rank "
                "(a master's or a parameter server's hotspot).",
                "traffic",
                [_traffic_table(data)],
            )
        )
    links = _links_table(data)
    if links:
        out.append(Section("links", "Busiest links", "Where the bottleneck is.", "links", [links]))
    problems = [
        t
        for t in (
            _problems_table(data.skipped, "Combinations not simulated (the algorithm does not apply)"),
            _problems_table(data.failed, "Points that failed"),
        )
        if t
    ]
    if problems:
        out.append(
            Section(
                "skipped", "Not simulated", "Algorithm and size combinations without results, and why.", None, problems
            )
        )
    return out
