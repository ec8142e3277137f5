"""``collsim simulate``, ``collsim topology show|list`` and ``collsim algorithms``."""

from __future__ import annotations

import json
import statistics
from typing import Annotated, Optional

import typer

from sim.algorithms import algorithm_names, get_algorithm
from sim.collectives import COLLECTIVES, get_collective
from sim.errors import ConfigError
from sim.nccl.report import row_with_pick
from sim.prepare import Run, prepare
from sim.results import nccl_header
from sim.topology import BUILDERS, bundled_topologies, load_graph, summarize
from sim.units import format_size, parse_bytes, parse_size_range

from .app import app
from .options import CalibrationOpt, GammaOpt, RanksOpt, TopologyOpt, read_calibration
from .progress import delayed_progress
from .timeout import TimeoutOpt, bounded


@app.command("simulate")
def simulate_cmd(
    topology: TopologyOpt,
    collective: Annotated[
        str, typer.Option("--collective", envvar="COLLSIM_COLLECTIVE", help="allreduce, broadcast, ...")
    ] = "allreduce",
    algorithm: Annotated[
        Optional[str],
        typer.Option(
            "--algorithm",
            "-a",
            envvar="COLLSIM_ALGORITHM",
            help="e.g. ring, tree:chunks=8 (default: the collective's first in `collsim algorithms`: ring for allreduce).",
        ),
    ] = None,
    size: Annotated[Optional[str], typer.Option("--size", "-s", help="One size, e.g. 64MiB.")] = None,
    sizes: Annotated[
        Optional[str],
        typer.Option("--sizes", envvar="COLLSIM_SIZES", help="Sweep MIN:MAX[:FACTOR] (powers of 2), or a list a,b,c."),
    ] = None,
    ranks: RanksOpt = None,
    dtype: Annotated[
        str, typer.Option("--dtype", "-d", envvar="COLLSIM_DTYPE", help="nccl-tests type name.")
    ] = "float",
    root: Annotated[int, typer.Option("--root", help="Root rank of rooted collectives.")] = 0,
    gamma: GammaOpt = None,
    calibration: CalibrationOpt = None,
    check: Annotated[
        bool, typer.Option("--check", "-c", help="Track every contribution; #wrong counts the ranks with wrong data.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per size instead of the table.")] = False,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            envvar="COLLSIM_ENGINE",
            help="auto (the fast path where an algorithm has one), fast, or message (a flow per message).",
        ),
    ] = "auto",
    progress: Annotated[
        Optional[bool],
        typer.Option(
            "--progress/--no-progress", help="Progress bar on stderr for runs over a second (default: on a terminal)."
        ),
    ] = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Simulate a collective and print nccl-tests' columns (or JSON lines)."""
    with bounded(timeout):
        _print_sweep(
            _prepare(
                topology,
                collective,
                algorithm,
                size=size,
                sizes=sizes,
                ranks=ranks,
                dtype=dtype,
                root=root,
                gamma=gamma,
                calibration=calibration,
                check=check,
                engine=engine,
                progress=progress,
            ),
            topology,
            as_json,
            progress,
        )


def _prepare(
    topology: str,
    collective: str,
    algorithm: str | None,
    *,
    size: str | None,
    sizes: str | None,
    ranks: int | None,
    dtype: str,
    root: int,
    gamma: float | None,
    calibration: str | None,
    check: bool,
    engine: str,
    progress: bool | None,
) -> tuple[Run, str | None]:
    """The flags as a prepared run (sizes parsed once, the calibration read once) and its header line."""
    if size and sizes:
        raise ConfigError("give --size or --sizes, not both")
    size_list = parse_size_range(sizes, "--sizes") if sizes else [parse_bytes(size or "64MiB", "--size")]
    link_model, header = read_calibration(calibration, topology)
    with delayed_progress(1, f"building {topology[:60]}", force=progress):
        run = prepare(
            topology,
            collective,
            algorithm,
            size_list,
            ranks=ranks,
            dtype=dtype,
            root=root,
            gamma=gamma,
            engine=engine,
            check=check,
            link_model=link_model,
        )
    return run, header


def _print_sweep(prepared: tuple[Run, str | None], topology: str, as_json: bool, progress: bool | None) -> None:
    run, header = prepared
    algo, p = run.algorithm, run.ranks
    if not as_json:
        print(f"# collsim simulate: {run.collective.name} ({algo.spec}) on {run.cluster.name}, {p} ranks")
        print(f"# topology: {run.cluster.spec or topology}")
        if header is not None:
            print(header)
        print("#")
        print(nccl_header())
    results = []
    with delayed_progress(len(run.sizes), f"{algo.spec}, {p} ranks", force=progress) as bar:
        for nbytes in run.sizes:
            bar.describe(f"{algo.spec}, {p} ranks, {format_size(nbytes)}")
            r = run.simulate(nbytes)
            results.append(r)
            bar.advance()
            print(row_with_pick(r, algo, run.cluster, as_json), flush=True)  # NCCL's pick, for nccl
    if not as_json:
        avg = statistics.fmean(r.busbw_GBps for r in results)
        last = results[-1]
        print(f"# Out of bounds values : {sum(1 for r in results if r.wrong)} {'OK' if run.check else ''}".rstrip())
        print(f"# Avg bus bandwidth    : {avg:.4g}")
        if last.busiest_link:
            print(
                f"# Busiest link at {last.size_bytes} B: {last.busiest_link}, "
                f"{last.max_link_utilization:.1%} busy over the collective"
            )
        if last.traffic_bytes:
            print(
                f"# Traffic at {last.size_bytes} B: {format_size(last.traffic_bytes)} in messages; one endpoint sent "
                f"at most {format_size(last.max_sent_bytes)}, received at most {format_size(last.max_received_bytes)}; "
                f"rank {last.root} {format_size(last.root_sent_bytes)} out, {format_size(last.root_received_bytes)} in"
            )


topology_app = typer.Typer(help="Inspect cluster topologies.", no_args_is_help=True)
app.add_typer(topology_app, name="topology")


@topology_app.command("show")
def topology_show(
    spec: Annotated[str, typer.Argument(help="Inline spec, YAML file or bundled name.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Summarise a cluster: hosts, GPUs, switches, links and bisection bandwidth."""
    with bounded(timeout), delayed_progress(1, f"building {spec[:60]}"):
        summary = summarize(load_graph(spec))
    if as_json:
        from dataclasses import asdict

        print(json.dumps(asdict(summary)))
    else:
        print("\n".join(summary.lines()))


@topology_app.command("list")
def topology_list() -> None:
    """List the builders (for inline specs) and the bundled topology files."""
    print("builders (use as KIND:key=value,...):")
    for name, (_func, model) in sorted(BUILDERS.items()):
        fields = []
        for key, info in sorted(model.model_fields.items(), key=lambda kv: not kv[1].is_required()):
            fields.append(key if info.is_required() else f"[{key}]")
        print(f"  {name}: {', '.join(fields)}")
    print("bundled files:")
    for name, path in bundled_topologies().items():
        graph = load_graph(path)
        print(f"  {name}: {len(graph.graph['ranks'])} GPUs  ({path})")


@app.command("algorithms")
def algorithms_cmd(
    collective: Annotated[Optional[str], typer.Option("--collective", help="Only this collective.")] = None,
) -> None:
    """List the algorithms of every collective."""
    names = [get_collective(collective).name] if collective else list(COLLECTIVES)
    for coll in names:
        algos = algorithm_names(coll)
        if not algos:
            continue
        print(f"{coll}:")
        for name in algos:
            algo = get_algorithm(coll, name)
            options = ", ".join(algo.Options.model_fields) or "-"
            print(f"  {name:22s} {algo.summary}  (options: {options})")


__all__ = ["algorithms_cmd", "simulate_cmd", "topology_list", "topology_show"]
