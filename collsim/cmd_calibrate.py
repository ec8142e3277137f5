"""``collsim validate calibrate`` and ``collsim validate compare``: fit the link model to real runs,
then predict every algorithm with it and report how far the predictions are from new measurements.

torch is never imported here: measuring happens in the ranks (``python -m validate.probes``,
``python -m validate``), fitting and predicting in :mod:`sim`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from sim.errors import CalibrationError, ConfigError
from sim.units import format_size, parse_size_range, parse_time

from .cmd_compare import split_specs
from .cmd_validate import validate_app

__all__ = ["calibrate_cmd", "compare_cmd"]

TopologyOpt = Annotated[
    str,
    typer.Option(
        "--topology", "-t", envvar="COLLSIM_TOPOLOGY", help="The cluster: inline spec, YAML file or bundled name."
    ),
]
NetlabOpt = Annotated[
    bool,
    typer.Option("--netlab", envvar="COLLSIM_NETLAB", help="Measure on an emulated cluster of the topology (root)."),
]
LocalOpt = Annotated[
    bool,
    typer.Option("--local", envvar="COLLSIM_LOCAL", help="Measure with local ranks on loopback (one-host topologies)."),
]
PrefixOpt = Annotated[
    str, typer.Option("--prefix", envvar="COLLSIM_NETLAB_PREFIX", help="netlab name prefix (1-6 of a-z0-9).")
]
TimeoutOpt = Annotated[
    str, typer.Option("--timeout", envvar="COLLSIM_TIMEOUT", help="Seconds one probe or collective may take.")
]

DEFAULT_ALGORITHMS = "ring,tree,master-worker,ps,halving-doubling,builtin"
DEFAULT_SIZES = "64KiB:16MiB:4"
#: sizes below this are measured in a run of their own, with at least SMALL_WARMUP and SMALL_ITERS
SMALL_BYTES = 2**20
SMALL_WARMUP = 5
SMALL_ITERS = 20


def _keep_measured(samples: list[Any], algorithms: str | None, sizes: str | None) -> list[Any]:
    """The collective measurements of ``--measured`` files that ``--algorithms`` and ``--sizes`` select
    (all when not given); a name or size that selects nothing is an error, not an empty comparison."""
    if not samples:
        raise CalibrationError("--measured: no collective measurements in the files")
    if algorithms is not None:
        wanted = split_specs(algorithms)
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


def _where(netlab: bool, local: bool, files: list[str] | None, flag: str) -> str:
    chosen = [name for name, on in (("--netlab", netlab), ("--local", local), (flag, bool(files))) if on]
    if len(chosen) != 1:
        raise ConfigError(f"give exactly one of --netlab, --local or {flag} FILE (got {', '.join(chosen) or 'none'})")
    return chosen[0]


@contextlib.contextmanager
def _target(where: str, topology: str, prefix: str) -> Iterator[Any]:
    from sim.lifetime import announce
    from validate.campaign import local_target, netlab_target

    if where == "--netlab":
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
    if path.exists() and path.is_dir():
        raise ConfigError(f"{what} {path}: is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"{what} {path}: no such directory {str(parent)!r}")
    return path


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "nominal"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def _fmt_rate(bytes_per_s: float | None) -> str:
    if bytes_per_s is None:
        return "-"
    bits = bytes_per_s * 8
    return f"{bits / 1e9:.4g} Gbit/s" if bits >= 1e9 else f"{bits / 1e6:.4g} Mbit/s"


def calibration_report(cal: Any) -> list[str]:
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
    from sim.calibration import nominal_parameters

    nominal = nominal_parameters(cal, list(cal.classes))
    lines.append(f"# nominal: {'; '.join(nominal) or 'only the link rates the efficiencies are relative to'}")
    lines += [f"# note: {n}" for n in cal.notes]
    return lines


@validate_app.command("calibrate")
def calibrate_cmd(
    topology: TopologyOpt,
    netlab: NetlabOpt = False,
    local: LocalOpt = False,
    inputs: Annotated[
        Optional[list[str]],
        typer.Option(
            "--from",
            envvar="COLLSIM_CALIBRATE_FROM",
            help="Fit to files instead of measuring: probe or validate JSON lines, nccl-tests output or its -J "
            "JSON (FILE[:collective=allreduce,ranks=N] where the file does not say). Repeatable.",
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", envvar="COLLSIM_CALIBRATION_OUT", help="Calibration file to write (.yaml or .json)."
        ),
    ] = Path("calibration.yaml"),
    raw: Annotated[
        Optional[Path],
        typer.Option("--raw", envvar="COLLSIM_PROBE_JSON", help="Probe records, appended (default: OUT.probes.jsonl)."),
    ] = None,
    prefix: PrefixOpt = "cs",
    sizes: Annotated[
        str, typer.Option("--sizes", envvar="COLLSIM_PROBE_SIZES", help="Message sizes MIN:MAX[:FACTOR] or a,b,c.")
    ] = "1KiB:64MiB",
    tests: Annotated[
        Optional[str], typer.Option("--tests", envvar="COLLSIM_PROBE_TESTS", help="Probe tests (default: all).")
    ] = None,
    iters: Annotated[
        int, typer.Option("--iters", envvar="COLLSIM_PROBE_ITERS", min=1, help="At most this many per probe.")
    ] = 40,
    budget: Annotated[
        str, typer.Option("--budget", envvar="COLLSIM_PROBE_BUDGET", help="About this long per probe.")
    ] = "1s",
    max_segments: Annotated[
        int,
        typer.Option(
            "--max-segments", envvar="COLLSIM_CALIBRATE_SEGMENTS", min=1, max=8, help="Size segments per class."
        ),
    ] = 4,
    timeout: TimeoutOpt = "120s",
) -> None:
    """Measure point-to-point probes per link class (or read measurements), fit latency, bandwidth
    efficiency (piecewise by size where needed) and the reduction cost, and write a calibration file.

    Example: collsim validate calibrate -t netlab-star4 --netlab --sizes 1KiB:16MiB -o star4.yaml
    """
    from sim.calibfit import fit_calibration
    from sim.calibinput import read_samples
    from sim.calibration import save_calibration
    from sim.cluster import Cluster

    where = _where(netlab, local, inputs, "--from")
    cluster = Cluster(topology)
    out = _fresh(out, "--out")
    samples, sources = [], []
    if where == "--from":
        for spec in inputs or []:
            got, source = read_samples(spec)
            samples += got
            sources.append(source)
    else:
        from validate.campaign import run_and_read
        from validate.probes import parse_probe_options

        args = [
            "--topology",
            topology,
            "--sizes",
            sizes,
            "--iters",
            str(iters),
            "--budget",
            budget,
            "--timeout",
            timeout,
        ]
        if tests:
            args += ["--tests", tests]
        parse_probe_options(args, environ={})  # bad options: one line before any rank starts
        raw = _fresh(raw or out.with_name(out.name + ".probes.jsonl"), "--raw")
        with _target(where, topology, prefix) as target:
            print(f"# calibrating {topology} on {target.description}; probe records -> {raw}", file=sys.stderr)
            run = run_and_read(target, "validate.probes", args, raw, _seconds(timeout, "--timeout"))
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
    print("\n".join(calibration_report(cal)))
    save_calibration(cal, out)
    print(f"calibration: {out}")


@validate_app.command("compare")
def compare_cmd(
    topology: TopologyOpt,
    calibration: Annotated[
        Path, typer.Option("--calibration", envvar="COLLSIM_CALIBRATION", help="A calibration file from other runs.")
    ],
    netlab: NetlabOpt = False,
    local: LocalOpt = False,
    measured: Annotated[
        Optional[list[str]],
        typer.Option(
            "--measured",
            envvar="COLLSIM_MEASURED",
            help="Compare these measurements (validate JSON lines, nccl-tests output) instead of running. Repeatable.",
        ),
    ] = None,
    algorithms: Annotated[
        Optional[str],
        typer.Option(
            "--algorithms",
            envvar="COLLSIM_ALGORITHMS",
            help=f"Algorithms to run, comma-separated (default: {DEFAULT_ALGORITHMS}); with --measured, "
            "the ones to keep (default: all in the files).",
        ),
    ] = None,
    collective: Annotated[str, typer.Option("--collective", envvar="COLLSIM_COLLECTIVE")] = "allreduce",
    sizes: Annotated[
        Optional[str],
        typer.Option(
            "--sizes",
            envvar="COLLSIM_SIZES",
            help=f"Sizes MIN:MAX[:FACTOR] or a,b,c (default: {DEFAULT_SIZES}); with --measured, the ones to "
            "keep (default: all in the files).",
        ),
    ] = None,
    warmup: Annotated[
        int,
        typer.Option("--warmup", "-w", envvar="COLLSIM_WARMUP", min=0, help="Untimed iterations (>= 5 below 1 MiB)."),
    ] = 1,
    iters: Annotated[
        int, typer.Option("--iters", "-n", envvar="COLLSIM_ITERS", min=1, help="Timed iterations (>= 20 below 1 MiB).")
    ] = 5,
    out: Annotated[Path, typer.Option("--out", envvar="COLLSIM_COMPARE_OUT", help="Directory for the results.")] = Path(
        "collsim-compare"
    ),
    prefix: PrefixOpt = "cs",
    timeout: TimeoutOpt = "600s",
    plot: Annotated[bool, typer.Option("--plot/--no-plot", envvar="COLLSIM_PLOT", help="Write compare.png.")] = True,
) -> None:
    """Run validate for each algorithm and size (or read measurements), predict each with the
    calibration, and print predicted against measured with the relative error; writes compare.json,
    compare.csv and compare.png to --out.

    Example: collsim validate compare -t netlab-star4 --calibration star4.yaml --netlab --out cmp-star4
    """
    from sim.calibinput import read_samples
    from sim.calibration import load_calibration
    from validate.compare import check_separate, describe_calibration, predict, render, summarize, write_outputs

    where = _where(netlab, local, measured, "--measured")
    cal = load_calibration(calibration)
    from sim.cluster import Cluster

    Cluster(topology)  # a bad topology is one line before anything runs
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    samples = []
    runs: list[dict[str, Any]] = []
    if where == "--measured":
        for spec in measured or []:
            samples += read_samples(spec)[0]
        samples = _keep_measured([s for s in samples if s.collective], algorithms, sizes)
    else:
        from validate.campaign import run_and_read
        from validate.options import parse_options

        specs = split_specs(DEFAULT_ALGORITHMS if algorithms is None else algorithms)
        if not specs:
            raise ConfigError("--algorithms: give at least one algorithm")
        size_list = parse_size_range(DEFAULT_SIZES if sizes is None else sizes, "--sizes")
        seconds = _seconds(timeout, "--timeout")
        # small sizes are cheap and noisy: more warm-up and timed iterations for them (a run of their own)
        groups = [
            (small, max(warmup, SMALL_WARMUP), max(iters, SMALL_ITERS))
            for small in [[n for n in size_list if n < SMALL_BYTES]]
            if small
        ] + [(large, warmup, iters) for large in [[n for n in size_list if n >= SMALL_BYTES]] if large]
        arg_sets = []
        for spec in specs:
            for chosen, w, n in groups:
                args = [
                    "--collective",
                    collective,
                    "--algorithm",
                    spec,
                    "--sizes",
                    ",".join(map(str, chosen)),
                    "-w",
                    str(w),
                    "-n",
                    str(n),
                    "--timeout",
                    str(seconds),
                    "--topology",
                    topology,
                ]
                parse_options(args, environ={})
                arg_sets.append(args)
        out.mkdir(parents=True, exist_ok=True)
        raw = out / "measured.jsonl"
        with _target(where, topology, prefix) as target:
            for args in arg_sets:
                print(f"# measuring {args[3]} on {target.description} -> {raw}", file=sys.stderr, flush=True)
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
    rows = predict(samples, topology, cal)
    summary = summarize(rows)
    print("\n".join(render(rows, summary)))
    meta = {
        "title": f"{topology}: predicted vs measured ({calibration.name})",
        "topology": topology,
        "calibration_file": str(calibration),
        "calibration": describe_calibration(cal, topology),
        "measured_on": where.removeprefix("--"),
        "runs": runs,
        "cpus": os.cpu_count(),
    }
    for path in write_outputs(out, rows, summary, meta, plot=plot):
        print(f"wrote {path}")
