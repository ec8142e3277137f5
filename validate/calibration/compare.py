"""Predicted against measured: every measured (algorithm, ranks, size) simulated with a calibration,
the relative error of each, and a summary (median, p90 and max of |error|).

The comparison fits nothing: it reads measurements (validate's JSON lines, or nccl-tests output) and a
calibration made from *other* runs -- a calibration whose source runs include a measured run is refused
-- and simulates each point on the calibrated cluster and, for reference, on the nominal one. A
library's own collective (``builtin``) is predicted by the schedule it runs (gloo's all-reduce: ``ring``).

>>> from validate.calibration import Calibration, Sample
>>> cal = Calibration(topology="netlab-star4", classes={"same-switch": {"latency": 1e-3, "efficiency": 0.9}},
...                   calibrated=["same-switch.latency", "same-switch.efficiency"])
>>> measured = [Sample(size=2**20, time_s=0.0775, collective="allreduce", algorithm="ring", label="ring", ranks=4)]
>>> rows = predict(measured, "netlab-star4", cal)
>>> r = rows[0]
>>> round(r.predicted_s * 1e3, 2), round(r.nominal_s * 1e3, 2), f"{r.error:+.1%}"
(75.91, 62.91, '-2.1%')
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim.cluster import Cluster
from sim.errors import CalibrationError
from sim.linkclass import classes_of
from sim.simulate import simulate
from sim.units import format_size

from .file import Calibration, atomic_write, nominal_parameters
from .inputs import Sample
from .nccl_fit import check_gpu

__all__ = ["Row", "check_separate", "predict", "render", "summarize", "write_outputs"]

#: the size that splits the issue's two accuracy bands
BAND = 2**20


@dataclass(frozen=True)
class Row:
    """One measured point and its predictions (seconds); ``error`` = predicted / measured - 1."""

    collective: str
    algorithm: str
    simulated: str
    ranks: int
    size_bytes: int
    measured_s: float
    predicted_s: float
    nominal_s: float
    run_id: str
    spread: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0

    @property
    def nominal_error(self) -> float:
        return self.nominal_s / self.measured_s - 1.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "error": self.error, "nominal_error": self.nominal_error}


def check_separate(calibration: Calibration, measured: Sequence[Sample]) -> None:
    """Refuse a comparison against the very runs the calibration was fitted to."""
    shared = sorted(calibration.run_ids & {s.run_id for s in measured if s.run_id})
    if shared:
        raise CalibrationError(
            f"the calibration was fitted to run {shared[0]!r}, which is also being compared: calibration and "
            "comparison must use separate runs (measure again, or calibrate from other runs)"
        )


def predict(measured: Sequence[Sample], topology: Any, calibration: Calibration) -> list[Row]:
    """Simulate every measured point on the calibrated cluster and on the nominal one (``topology``:
    anything :class:`~sim.cluster.Cluster` takes, or a Cluster)."""
    nominal = topology if isinstance(topology, Cluster) else Cluster(topology)
    check_gpu(measured, nominal)  # a log of another GPU than the topology's is no measure of it
    calibrated = nominal.with_link_model(calibration.link_model())
    cache: dict[tuple[Any, ...], tuple[float, float]] = {}
    rows = []
    for s in measured:
        if not s.collective:
            raise CalibrationError(f"{s.origin}: a probe record is not a collective to compare")
        if s.ranks > nominal.size:
            raise CalibrationError(f"{s.origin}: {s.ranks} ranks, but the topology has {nominal.size} GPUs")
        key = (s.collective, s.algorithm, s.ranks, s.size)
        if key not in cache:
            pred = simulate(calibrated, s.collective, s.algorithm, s.size, ranks=s.ranks).time_s
            nom = simulate(nominal, s.collective, s.algorithm, s.size, ranks=s.ranks, gamma=0.0).time_s
            cache[key] = (pred, nom)
        pred, nom = cache[key]
        rows.append(
            Row(
                s.collective,
                s.label or s.algorithm,
                s.algorithm,
                s.ranks,
                s.size,
                s.time_s,
                pred,
                nom,
                s.run_id,
                s.spread,
            )
        )
    return rows


def _stats(errors: Sequence[float]) -> dict[str, Any]:
    if not errors:
        return {"points": 0}
    a = np.abs(np.asarray(errors, dtype=float))
    return {
        "points": len(a),
        "median_abs": float(np.median(a)),
        "p90_abs": float(np.percentile(a, 90)),
        "max_abs": float(a.max()),
        "mean_signed": float(np.mean(errors)),
    }


def summarize(rows: Sequence[Row]) -> dict[str, Any]:
    """|error| statistics: all points, sizes >= 1 MiB and below, per algorithm; the nominal model's too."""
    big = [r for r in rows if r.size_bytes >= BAND]
    small = [r for r in rows if r.size_bytes < BAND]
    per_algorithm = {}
    for name in dict.fromkeys(r.algorithm for r in rows):
        mine = [r for r in rows if r.algorithm == name]
        per_algorithm[name] = {
            "all": _stats([r.error for r in mine]),
            ">=1MiB": _stats([r.error for r in mine if r.size_bytes >= BAND]),
            "<1MiB": _stats([r.error for r in mine if r.size_bytes < BAND]),
        }
    return {
        "all": _stats([r.error for r in rows]),
        ">=1MiB": _stats([r.error for r in big]),
        "<1MiB": _stats([r.error for r in small]),
        "nominal": {
            "all": _stats([r.nominal_error for r in rows]),
            ">=1MiB": _stats([r.nominal_error for r in big]),
            "<1MiB": _stats([r.nominal_error for r in small]),
        },
        "per_algorithm": per_algorithm,
    }


def _pct(stats: dict[str, Any], key: str) -> str:
    return f"{stats[key]:.1%}" if stats.get("points") else "-"


def render(rows: Sequence[Row], summary: dict[str, Any]) -> list[str]:
    """The table and the summary as text lines."""
    lines = [
        f"# {'algorithm':<20s} {'ranks':>5s} {'size':>9s} {'measured':>12s} {'predicted':>12s} {'error':>8s}"
        f" {'nominal':>12s} {'error':>8s}",
        f"# {'':<20s} {'':>5s} {'':>9s} {'(us)':>12s} {'(us)':>12s} {'':>8s} {'(us)':>12s} {'':>8s}",
    ]
    for r in rows:
        lines.append(
            f"  {r.algorithm[:20]:<20s} {r.ranks:5d} {format_size(r.size_bytes):>9s} {r.measured_s * 1e6:12.1f} "
            f"{r.predicted_s * 1e6:12.1f} {r.error:+8.1%} {r.nominal_s * 1e6:12.1f} {r.nominal_error:+8.1%}"
        )
    lines.append("#")
    lines.append(f"# {'|error|':<24s} {'points':>6s} {'median':>8s} {'p90':>8s} {'max':>8s}   nominal: median, p90")
    for band in ("all", ">=1MiB", "<1MiB"):
        s, n = summary[band], summary["nominal"][band]
        lines.append(
            f"# {'sizes ' + band if band != 'all' else 'all points':<24s} {s['points']:6d} {_pct(s, 'median_abs'):>8s} "
            f"{_pct(s, 'p90_abs'):>8s} {_pct(s, 'max_abs'):>8s}   {_pct(n, 'median_abs')}, {_pct(n, 'p90_abs')}"
        )
    for name, per in summary["per_algorithm"].items():
        s = per["all"]
        lines.append(
            f"# {name[:24]:<24s} {s['points']:6d} {_pct(s, 'median_abs'):>8s} {_pct(s, 'p90_abs'):>8s} {_pct(s, 'max_abs'):>8s}"
        )
    return lines


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def describe_calibration(calibration: Calibration, topology: Any) -> dict[str, Any]:
    """What the comparison rests on: calibrated (applied) and nominal parameters, and the sources."""
    present = list(classes_of(topology if isinstance(topology, Cluster) else Cluster(topology)))
    return {
        "topology": calibration.topology,
        "created": calibration.created,
        "calibrated": list(calibration.calibrated),
        "nominal": nominal_parameters(calibration, present),
        "sources": [s.model_dump() for s in calibration.sources],
        "notes": list(calibration.notes),
    }


def write_outputs(
    out: Path, rows: Sequence[Row], summary: dict[str, Any], meta: dict[str, Any], *, plot: bool = True
) -> list[Path]:
    """``compare.json``, ``compare.csv`` and (with matplotlib) ``compare.png`` in ``out``, each written
    atomically; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    doc = {"meta": meta, "summary": summary, "rows": [r.to_dict() for r in rows]}
    written = [out / "compare.json"]
    atomic_write(written[0], (json.dumps(_finite(doc), indent=1, allow_nan=False) + "\n").encode())
    buf = io.StringIO()
    fields = [*Row.__dataclass_fields__, "error", "nominal_error"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(r.to_dict())
    written.append(out / "compare.csv")
    atomic_write(written[1], buf.getvalue().encode())
    if plot and rows:
        png = _plot(rows, summary, str(meta.get("title", "")))
        if png is not None:
            written.append(out / "compare.png")
            atomic_write(written[2], png)
    return written


def _plot(rows: Sequence[Row], summary: dict[str, Any], title: str) -> bytes | None:
    """Predicted against measured, log-log, one marker per algorithm, y = x and a ±10% band."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 5.6), dpi=110)
    markers = "osD^v<>phX*"
    for i, name in enumerate(dict.fromkeys(r.algorithm for r in rows)):
        mine = [r for r in rows if r.algorithm == name]
        ax.scatter(
            [r.measured_s for r in mine],
            [r.predicted_s for r in mine],
            label=name,
            marker=markers[i % len(markers)],
            s=28,
        )
    lo = min(min(r.measured_s, r.predicted_s) for r in rows) / 1.5
    hi = max(max(r.measured_s, r.predicted_s) for r in rows) * 1.5
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, color="black", linewidth=1)
    ax.fill_between(xs, xs * 0.9, xs * 1.1, color="grey", alpha=0.2, label="±10%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (s)")
    ax.set_ylabel("predicted time, calibrated (s)")
    s = summary["all"]
    ax.set_title(f"{title}\nmedian |error| {_pct(s, 'median_abs')}, p90 {_pct(s, 'p90_abs')}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, which="both", alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
