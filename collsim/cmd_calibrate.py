"""``collsim validate calibrate`` and ``collsim validate compare``: the options of the two calibration
workflows; the workflows themselves live in :mod:`validate.calibration.workflow`.

torch is never imported here: measuring happens in the ranks, fitting and predicting in
:mod:`validate.calibration` and :mod:`sim`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from validate.calibration.workflow import DEFAULT_ALGORITHMS, DEFAULT_SIZES

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
            "JSON (FILE[:collective=allreduce,ranks=N,algorithm=RING] where the file does not say; algorithm: the "
            "NCCL_ALGO that ran). Repeatable.",
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
    from validate.calibration.workflow import calibrate, calibration_report, measurement_source

    where = measurement_source(netlab, local, inputs, "--from")
    cal = calibrate(
        topology,
        out,
        where=where,
        inputs=inputs or [],
        raw=raw,
        prefix=prefix,
        sizes=sizes,
        tests=tests,
        iters=iters,
        budget=budget,
        max_segments=max_segments,
        timeout=timeout,
    )
    print("\n".join(calibration_report(cal)))
    for warning in cal.warnings:
        print(f"collsim: warning: {warning}", file=sys.stderr)
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
    from validate.calibration.workflow import compare, measurement_source, render_comparison

    where = measurement_source(netlab, local, measured, "--measured")
    result = compare(
        topology,
        calibration,
        out,
        where=where,
        measured=measured or [],
        algorithms=algorithms,
        collective=collective,
        sizes=sizes,
        warmup=warmup,
        iters=iters,
        prefix=prefix,
        timeout=timeout,
        plot=plot,
    )
    print("\n".join(render_comparison(result)))
    for path in result.written:
        print(f"wrote {path}")
