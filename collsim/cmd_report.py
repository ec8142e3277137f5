"""``collsim report SPEC --out DIR``: a capacity report for a training job at several cluster sizes."""

from __future__ import annotations

import importlib.util
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from sim.deadline import SimulationTimeout
from sim.lifetime import announce, interrupt_on_signals

from .app import app, fail
from .timeout import TimeoutOpt, bounded, timeout_seconds

__all__ = ["report_cmd"]


@app.command("report")
def report_cmd(
    spec: Annotated[str, typer.Argument(help="Report spec (YAML file), or a bundled spec's name such as 'default'.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", envvar="COLLSIM_REPORT_OUT", help="Output directory (created if missing).")
    ] = Path("collsim-report"),
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            "-e",
            envvar="COLLSIM_EXECUTOR",
            help="local (worker processes on this machine's cores), serial (this process) or dask (an existing cluster).",
        ),
    ] = "local",
    jobs: Annotated[
        Optional[int],
        typer.Option("--jobs", "-j", envvar="COLLSIM_JOBS", min=1, help="Local processes (default: all cores)."),
    ] = None,
    address: Annotated[
        Optional[str],
        typer.Option(
            "--address", envvar="COLLSIM_DASK_ADDRESS", help="Scheduler address for --executor dask, tcp://HOST:PORT."
        ),
    ] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Forget the points finished by earlier runs into --out and compute all.")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", envvar="COLLSIM_PROGRESS", help="Show a progress bar.")
    ] = True,
    timeout: TimeoutOpt = None,
    point_limit: Annotated[
        Optional[str],
        typer.Option(
            "--point-limit",
            envvar="COLLSIM_POINT_LIMIT",
            help="Give up on a point after this long (wall clock), e.g. 30s: it is listed as failed and the "
            "report goes on (default: the spec's point_limit, else none).",
        ),
    ] = None,
) -> None:
    """Simulate a training job at every cluster size with every algorithm, and write index.html, report.md,
    results.csv and results.json into --out. Finished points are kept in --out/points.jsonl: a rerun after
    an interruption computes only the rest."""
    try:
        from reports import build_report, load_spec
        from reports.sweep import PointCache, make_executor
    except ModuleNotFoundError as exc:  # pragma: no cover - an install without the package
        fail(f"collsim report needs the reports package ({exc})")
    for module in ("matplotlib", "jinja2"):
        if importlib.util.find_spec(module) is None:
            fail(f"collsim report needs {module}: pip install 'collsim[report]'")

    limit = timeout_seconds(point_limit, "--point-limit")
    started = time.perf_counter()
    run = make_executor(executor, jobs=jobs, address=address)
    loaded, path = load_spec(spec)
    if fresh:
        PointCache(out).clear()
    command = f"collsim report {shlex.quote(spec)} --out {shlex.quote(str(out))}"
    try:
        with bounded(timeout), interrupt_on_signals():
            outcome = build_report(loaded, out, executor=run, progress=progress, command=command, point_limit=limit)
    except SimulationTimeout as exc:
        saved = len(PointCache(out).load())
        fail(
            f"{exc}; no report written, {saved} finished point(s) are kept in {out / PointCache.FILENAME}: "
            "run again (with a longer --timeout) to resume"
        )
    except KeyboardInterrupt:
        saved = len(PointCache(out).load())
        announce(
            f"collsim: interrupted; {saved} finished point(s) are kept in {out / PointCache.FILENAME}: "
            "run the same command again to resume"
        )
        raise SystemExit(130) from None
    data = outcome.data
    print(f"collsim report: {loaded.name} ({path}) -> {out}", file=sys.stderr)
    print(
        f"{outcome.computed} points simulated, {outcome.reused} reused from {out / 'points.jsonl'}, "
        f"{len(data.skipped)} skipped, {len(data.failed)} failed, in {time.perf_counter() - started:.1f} s "
        f"({data.parameters} link parameters)",
        file=sys.stderr,
    )
    for sentence in data.summary[:3]:
        print(f"  {sentence}", file=sys.stderr)
    print(f"report: {outcome.paths['index.html'].resolve()}")
    if data.failed:
        print(f"collsim: {len(data.failed)} point(s) failed; the report lists them", file=sys.stderr)
        raise SystemExit(1)
