"""Writing a report: ``index.html`` (self-contained, figures embedded as base64 PNG), ``report.md`` (with
the figures beside it in ``plots/``), ``results.csv`` (one row per algorithm and size),
``collectives.csv`` (the message-size sweep) and ``results.json`` (everything). Every file is written
to a temporary name and renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim.results import json_safe
from sim.units import format_size, format_time

from .analysis import ReportData
from .jsonform import JsonForm
from .records import PointRecord
from .tables import sections

__all__ = ["model_notes", "setup_items", "write_atomic", "write_report"]

TEMPLATES = Path(__file__).resolve().parent / "templates"


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write ``content`` to ``path`` through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # what open() would have given, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_stale_temporaries(out: Path) -> None:
    """Remove what :func:`write_atomic` leaves when a run is killed between writing and renaming."""
    for folder in (out, out / "plots"):
        if folder.is_dir():
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)


def _csv(rows: Sequence[JsonForm]) -> str:
    """The rows as CSV: a header of the first row's fields, then a line per row."""
    buf = io.StringIO()
    if rows:
        dicts = [row.to_dict() for row in rows]
        writer = csv.DictWriter(buf, fieldnames=list(dicts[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(dicts)
    return buf.getvalue()


def _dicts(rows: Sequence[JsonForm | PointRecord]) -> list[dict[str, Any]]:
    return [row.to_dict() for row in rows]


def setup_items(data: ReportData) -> list[tuple[str, str]]:
    """The job and the clusters, as (label, value) pairs."""
    job = data.job
    grads = format_size(job.gradient_bytes)
    if job.parameters:
        grads += f" ({job.parameters:,.0f} parameters in {job.gradient_dtype})"
    buckets = f"first {format_size(job.first_bucket_bytes)}, then {format_size(job.bucket_bytes)}"
    overlap = (
        "all-reduce of each bucket starts when backward has produced it"
        if job.overlap
        else ("all-reduce starts after backward (no overlap)")
    )
    sharing = "buckets in flight share the network" if job.concurrent_buckets else "buckets all-reduced one at a time"
    return [
        ("model", str(job.name)),
        ("gradients per iteration", grads),
        (
            "compute per GPU per iteration",
            f"forward {format_time(job.forward_s)}, backward {format_time(job.backward_s)}, "
            f"optimizer {format_time(job.optimizer_s)}",
        ),
        ("samples per GPU per iteration", f"{job.samples_per_gpu:g}"),
        ("DDP buckets", f"{buckets}; {overlap}; {sharing}"),
        ("reduction cost", f"{job.gamma:g} s/byte"),
        ("clusters", "; ".join(f"{gpus} GPUs: {label}" for gpus, label in job.clusters)),
        ("algorithms compared", ", ".join(data.algorithms)),
        ("link parameters", data.parameters),
    ]


def model_notes(data: ReportData) -> list[str]:
    """What the numbers assume, in plain words."""
    return [
        "Flow-level network model: every message is a flow on its routed path; flows share each link direction "
        "by max-min fairness; a message pays its path latency, then drains at its rate (docs/model.md).",
        f"Link parameters are {data.parameters}: "
        + (
            "bandwidth and latency as the topology states them, with no calibration against measurements."
            if data.parameters == "nominal"
            else "the calibration file's fitted per-class latency and bandwidth efficiency (and γ where it was "
            "calibrated) applied to every message; everything the file does not list stays nominal."
        ),
        "Backward produces gradient bytes at a constant rate over the backward time, in reverse layer order, "
        "filling DDP buckets in that order (whole parameters are not modelled; buckets are exact byte counts).",
        "Iteration = forward + max(backward end, last bucket's all-reduce end) + optimizer step; exposed "
        "communication is what ends after backward.",
        "Weak scaling: every GPU keeps its batch, so scaling efficiency = T(smallest size) / T(size).",
        "Compute time is the same on every GPU (no stragglers); reductions cost gamma seconds per byte.",
        "busbw follows nccl-tests: algbw = size / time, busbw = algbw x 2(p-1)/p, in GB/s of 1e9 bytes.",
    ]


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"], default_for_string=False),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env


def _markdown_environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,  # noqa: S701 - Markdown, not HTML
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["cell"] = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
    return env


def write_report(
    data: ReportData, out: Path, *, records: Sequence[PointRecord], spec: dict[str, Any], command: str
) -> dict[str, Path]:
    """Write every output file into ``out``; returns name -> path.

    ``records`` are the points in the spec's order (``results.json``'s ``points``)."""
    from .plots import draw_all

    out.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(out)
    images = draw_all(data)
    paths: dict[str, Path] = {}
    for name, png in images.items():
        paths[f"plots/{name}.png"] = out / "plots" / f"{name}.png"
        write_atomic(paths[f"plots/{name}.png"], png)
    body = sections(data)
    footer = f"Made by collsim with: {command}"
    context = {
        "data": data,
        "sections": body,
        "setup": setup_items(data),
        "notes": model_notes(data),
        "footer": footer,
    }
    encoded = {name: base64.b64encode(png).decode("ascii") for name, png in images.items()}
    html = _environment().get_template("report.html.j2").render(images=encoded, **context)
    markdown = _markdown_environment().get_template("report.md.j2").render(images=images, **context)
    results = {
        "title": data.title,
        "parameters": data.parameters,
        "spec": spec,
        "summary": data.summary,
        "iterations": _dicts(data.iterations),
        "collectives": _dicts(data.collectives),
        "crossover": _dicts(data.crossover),
        "links": _dicts(data.links),
        "skipped": _dicts(data.skipped),
        "failed": _dicts(data.failed),
        "points": _dicts(records),
    }
    files = {
        "index.html": html,
        "report.md": markdown,
        "results.csv": _csv(data.iterations),
        "collectives.csv": _csv(data.collectives),
        "results.json": json.dumps(json_safe(results), indent=1, allow_nan=False, default=str) + "\n",
    }
    for name, content in files.items():
        paths[name] = out / name
        write_atomic(paths[name], content)
    return paths
