"""The two calibration workflows, as the CLI (``collsim validate calibrate|compare``) and scripts run them.

* :func:`calibrate` -- measure point-to-point probes per link class on netlab or local ranks (or read
  measurements from files), fit, write the calibration file;
* :func:`compare` -- measure the collectives (or read measurements), predict each with a calibration
  made from other runs, and write the comparison.

torch is never imported here: measuring happens in the ranks (``python -m validate.calibration.probes``,
``python -m validate``), fitting and predicting in this package and :mod:`sim`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.algorithms import split_algorithm_specs
from sim.cluster import Cluster
from sim.errors import CalibrationError, ConfigError
from sim.units import format_size, parse_size_range, parse_time

from .compare import Row, check_separate, describe_calibration, predict, render, summarize, write_outputs
from .file import Calibration, load_calibration, nominal_parameters, save_calibration
from .fit import fit_calibration
from .inputs import Sample, read_samples

__all__ = [
    "DEFAULT_ALGORITHMS",
    "DEFAULT_SIZES",
    "Comparison",
    "calibrate",
    "calibration_line",
    "calibration_report",
    "compare",
    "measurement_source",
]

#: the algorithms ``compare`` measures by default
DEFAULT_ALGORITHMS = "ring,tree,master-worker,ps,halving-doubling,builtin"
DEFAULT_SIZES = "64KiB:16MiB:4"
#: sizes below this are measured in a run of their own, with at least SMALL_WARMUP and SMALL_ITERS
SMALL_BYTES = 2**20
SMALL_WARMUP = 5
SMALL_ITERS = 20

#: where measurements come from: netlab, local ranks, or files
NETLAB, LOCAL, FILES = "netlab", "local", "files"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def measurement_source(netlab: bool, local: bool, files: Sequence[str] | None, flag: str) -> str:
    """Which one of netlab, local ranks or files (``flag`` names the files' option in the error)."""
    chosen = [
        (name, kind)
        for name, kind, on in (("--netlab", NETLAB, netlab), ("--local", LOCAL, local), (flag, FILES, bool(files)))
        if on
    ]
    if len(chosen) != 1:
        got = ", ".join(name for name, _ in chosen) or "none"
        raise ConfigError(f"give exactly one of --netlab, --local or {flag} FILE (got {got})")
    return chosen[0][1]


@contextlib.contextmanager
def _target(where: str, topology: str, prefix: str) -> Iterator[Any]:
    from sim.lifetime import announce

    from .campaign import local_target, netlab_target

    if where == NETLAB:
        try:
            with netlab_target(topology, prefix) as target:
                yield target
        except KeyboardInterrupt:
            announce(
                f"collsim: interrupted (netlab {prefix}: the ranks are stopped and the lab this run brought up is removed)"
            )
            raise
    else:
        with local_target(topology) as target:
            yield target


def _seconds(text: str, what: str) -> float:
    value = parse_time(text, what)
    if not value > 0:
        raise ConfigError(f"{what}: must be > 0 seconds, got {text!r}")
    return value


def _fresh(path: Path, what: str) -> Path:
    """``path`` when it can be written (validate's one check of output files), else one line."""
    from validate.launch import check_output_file

    check_output_file(str(path), what)
    return path


# -- calibrate ----------------------------------------------------------------------------------


def calibrate(
    topology: str,
    out: Path,
    *,
    where: str,
    inputs: Sequence[str] = (),
    raw: Path | None = None,
    prefix: str = "cs",
    sizes: str = "1KiB:64MiB",
    tests: str | None = None,
    iters: int = 40,
    budget: str = "1s",
    max_segments: int = 4,
    timeout: str = "120s",
    log: Callable[[str], None] = _stderr,
) -> Calibration:
    """Measure probes on ``where`` (:data:`NETLAB` or :data:`LOCAL`) or read ``inputs`` (:data:`FILES`),
    fit every link class of ``topology``, write the calibration to ``out`` and return it."""
    cluster = Cluster(topology)
    out = _fresh(out, "--out")
    samples: list[Sample] = []
    sources = []
    if where == FILES:
        for spec in inputs:
            got, source = read_samples(spec)
            samples += got
            sources.append(source)
    else:
        from .campaign import run_and_read
        from .probes import parse_probe_options

        args = ["--topology", topology, "--sizes", sizes, "--iters", str(iters), "--budget", budget]
        args += ["--timeout", timeout]
        if tests:
            args += ["--tests", tests]
        parse_probe_options(args, environ={})  # bad options: one line before any rank starts
        raw = _fresh(raw or out.with_name(out.name + ".probes.jsonl"), "--raw")
        with _target(where, topology, prefix) as target:
            log(f"# calibrating {topology} on {target.description}; probe records -> {raw}")
            run = run_and_read(target, "validate.calibration.probes", args, raw, _seconds(timeout, "--timeout"))
        got, source = read_samples(raw)
        ids = {r.get("run_id") for r in run.records}
        samples = [s for s in got if s.run_id in ids]
        sources = [
            source.model_copy(
                update={
                    "run_ids": sorted(i for i in ids if i),
                    "records": len(samples),
                    "detail": f"{target.description}; load average {run.load_before} -> {run.load_after}",
                }
            )
        ]
    cal = fit_calibration(samples, cluster, sources, max_segments=max_segments)
    save_calibration(cal, out)
    return cal


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "nominal"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def _fmt_rate(bytes_per_s: float | None) -> str:
    if bytes_per_s is None:
        return "-"
    bits = bytes_per_s * 8
    return f"{bits / 1e9:.4g} Gbit/s" if bits >= 1e9 else f"{bits / 1e6:.4g} Mbit/s"


def calibration_report(cal: Calibration) -> list[str]:
    """The fit as text: per class α, bandwidth, efficiency, fit quality and segments; γ; what is applied."""
    lines = [
        f"# calibration of {cal.topology} from {sum(s.records for s in cal.sources)} record(s) "
        f"({', '.join(sorted(cal.run_ids)) or 'no run ids'})",
        f"# {'class':<13s} {'latency':>10s} {'bandwidth':>14s} {'nominal':>14s} {'efficiency':>10s} {'R2':>8s} "
        f"{'rms':>6s} {'max':>6s} {'points':>6s}",
    ]
    for name, entry in cal.classes.items():
        fit = entry.fit
        r2 = "-" if fit is None or fit.r2 is None else f"{fit.r2:.5f}"
        lines.append(
            f"  {name:<13s} {_fmt_time(entry.latency):>10s} {_fmt_rate(entry.bandwidth):>14s} "
            f"{_fmt_rate(entry.nominal_bandwidth):>14s} {entry.efficiency or 0:10.4f} {r2:>8s} "
            f"{(fit.rms_rel if fit else 0):6.1%} {(fit.max_rel if fit else 0):6.1%} {(fit.points if fit else 0):6d}"
        )
        for seg in entry.segments:
            lines.append(
                f"      from {format_size(seg.min_bytes):>9s}: latency {_fmt_time(seg.latency)}, efficiency {seg.efficiency:.4g}"
            )
        if fit and fit.residuals:
            worst = max(fit.residuals, key=lambda r: abs(r.rel))
            lines.append(f"      largest residual {worst.rel:+.1%} at {format_size(worst.size_bytes)}")
    if cal.gamma is not None:
        q = cal.gamma_fit
        lines.append(
            f"# gamma {cal.gamma:.4g} s/B ({1 / cal.gamma / 1e9 if cal.gamma else float('inf'):.3g} GB/s of reduction)"
            + (f", R2 {q.r2:.4f}" if q and q.r2 is not None else "")
        )
    lines.append(f"# calibrated (applied): {', '.join(cal.calibrated)}")
    nominal = nominal_parameters(cal, list(cal.classes))
    lines.append(f"# nominal: {'; '.join(nominal) or 'only the link rates the efficiencies are relative to'}")
    if cal.nccl_latency:
        lines.append(
            "# nccl fixed cost per protocol: " + ", ".join(f"{k} {_fmt_time(v)}" for k, v in cal.nccl_latency.items())
        )
    if cal.nccl_offset:
        lines.append(
            "# nccl fixed cost: NCCL's latency estimate less its hops between nodes, corrected per protocol by "
            + ", ".join(f"{k} {v * 1e6:+.1f} us" for k, v in cal.nccl_offset.items())
        )
    if cal.nccl_version:
        lines.append(
            f"# nccl schedules under this calibration: the tuner of NCCL {cal.nccl_version}, the release the log "
            "ran (nccl:version=... picks another)"
        )
    lines += [f"# note: {n}" for n in cal.notes]
    lines += [f"# WARNING: {w}" for w in cal.warnings]
    return lines


def calibration_line(path: str | os.PathLike[str], calibration: Calibration, topology: str | None = None) -> str:
    """``# calibration: FILE (calibrated: ...)`` for table headers; it names the cluster the calibration
    was fitted on when that is not ``topology`` (the file applies by link class, so fitting on a few
    hosts and predicting many is allowed, but the reader should know)."""
    fitted = "" if topology in (None, calibration.topology) else f"fitted on {calibration.topology}; "
    applied = ", ".join(calibration.calibrated)
    release = f"; nccl schedules as NCCL {calibration.nccl_version}" if calibration.nccl_version else ""
    return f"# calibration: {path} ({fitted}calibrated: {applied}; everything else nominal{release})"


# -- compare ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` measured and predicted, and the files it wrote."""

    rows: list[Row]
    summary: dict[str, Any]
    written: list[Path] = field(default_factory=list)


def _keep_measured(samples: list[Sample], algorithms: str | None, sizes: str | None) -> list[Sample]:
    """The collective measurements of ``--measured`` files that ``--algorithms`` and ``--sizes`` select
    (all when not given); a name or size that selects nothing is an error, not an empty comparison."""
    if not samples:
        raise CalibrationError("--measured: no collective measurements in the files")
    if algorithms is not None:
        wanted = split_algorithm_specs(algorithms)
        held = sorted({s.label or s.algorithm for s in samples})
        for name in wanted:
            if name not in held:
                raise ConfigError(f"--algorithms: {name!r} is not in the measured files (they hold: {', '.join(held)})")
        samples = [s for s in samples if (s.label or s.algorithm) in wanted]
    if sizes is not None:
        chosen = set(parse_size_range(sizes, "--sizes"))
        samples = [s for s in samples if s.size in chosen]
        if not samples:
            raise ConfigError(f"--sizes {sizes}: none of these sizes is in the measured files")
    return samples


def _runner_args(
    specs: list[str], collective: str, sizes: list[int], warmup: int, iters: int, seconds: float, topology: str
) -> list[list[str]]:
    """validate's arguments per algorithm and size group: sizes below 1 MiB are cheap and noisy, so they
    get a run of their own with more warm-up and timed iterations."""
    from validate.options import parse_options

    groups = [
        (small, max(warmup, SMALL_WARMUP), max(iters, SMALL_ITERS))
        for small in [[n for n in sizes if n < SMALL_BYTES]]
        if small
    ] + [(large, warmup, iters) for large in [[n for n in sizes if n >= SMALL_BYTES]] if large]
    arg_sets = []
    for spec in specs:
        for chosen, w, n in groups:
            args = ["--collective", collective, "--algorithm", spec, "--sizes", ",".join(map(str, chosen))]
            args += ["-w", str(w), "-n", str(n), "--timeout", str(seconds), "--topology", topology]
            parse_options(args, environ={})  # bad options: one line before any rank starts
            arg_sets.append(args)
    return arg_sets


def compare(
    topology: str,
    calibration: Path,
    out: Path,
    *,
    where: str,
    measured: Sequence[str] = (),
    algorithms: str | None = None,
    collective: str = "allreduce",
    sizes: str | None = None,
    warmup: int = 1,
    iters: int = 5,
    prefix: str = "cs",
    timeout: str = "600s",
    plot: bool = True,
    log: Callable[[str], None] = _stderr,
) -> Comparison:
    """Measure (``where``: :data:`NETLAB` or :data:`LOCAL`) or read (:data:`FILES`: ``measured``) the
    collectives, predict each with ``calibration`` and nominally, write compare.json, compare.csv and
    compare.png to ``out``."""
    cal = load_calibration(calibration)
    cluster = Cluster(topology)  # a bad topology is one line before anything runs
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    samples: list[Sample] = []
    runs: list[dict[str, Any]] = []
    if where == FILES:
        for spec in measured:
            samples += read_samples(spec)[0]
        samples = _keep_measured([s for s in samples if s.collective], algorithms, sizes)
    else:
        from .campaign import run_and_read

        specs = split_algorithm_specs(DEFAULT_ALGORITHMS if algorithms is None else algorithms)
        if not specs:
            raise ConfigError("--algorithms: give at least one algorithm")
        size_list = parse_size_range(DEFAULT_SIZES if sizes is None else sizes, "--sizes")
        seconds = _seconds(timeout, "--timeout")
        arg_sets = _runner_args(specs, collective, size_list, warmup, iters, seconds, topology)
        out.mkdir(parents=True, exist_ok=True)
        raw = out / "measured.jsonl"
        with _target(where, topology, prefix) as target:
            for args in arg_sets:
                log(f"# measuring {args[3]} on {target.description} -> {raw}")
                run = run_and_read(target, "validate", args, raw, seconds)
                runs.append(
                    {
                        "algorithm": args[3],
                        "seconds": round(run.seconds, 2),
                        "load_before": run.load_before,
                        "load_after": run.load_after,
                        "run_ids": sorted({str(r.get("run_id")) for r in run.records}),
                    }
                )
        ids = {i for r in runs for i in r["run_ids"]}
        samples = [s for s in read_samples(raw)[0] if s.run_id in ids]
    check_separate(cal, samples)
    rows = predict(samples, cluster, cal)
    summary = summarize(rows)
    meta = {
        "title": f"{topology}: predicted vs measured ({calibration.name})",
        "topology": topology,
        "calibration_file": str(calibration),
        "calibration": describe_calibration(cal, cluster),
        "measured_on": "measured" if where == FILES else where,
        "runs": runs,
        "cpus": os.cpu_count(),
    }
    written = write_outputs(out, rows, summary, meta, plot=plot)
    return Comparison(rows, summary, written)


def render_comparison(comparison: Comparison) -> list[str]:
    """The comparison's table (see :func:`validate.calibration.compare.render`)."""
    return render(comparison.rows, comparison.summary)
