"""``collsim simulate``, ``collsim topology show|list`` and ``collsim algorithms``."""

from __future__ import annotations

import json
import statistics
from typing import Annotated, Optional

import typer

from sim.algorithms import algorithm_names, get_algorithm
from sim.cluster import Cluster
from sim.collectives import COLLECTIVES, get_collective
from sim.errors import ConfigError
from sim.nccl.report import row_with_pick
from sim.results import nccl_header
from sim.simulate import simulate
from sim.topology import BUILDERS, bundled_topologies, load_graph, summarize
from sim.units import format_size, parse_bytes, parse_size_range

from .cli import app
from .progress import delayed_progress
from .timeout import TimeoutOpt, bounded

TopologyOpt = Annotated[
    str,
    typer.Option(
        "--topology",
        "-t",
        envvar="COLLSIM_TOPOLOGY",
        help="Inline spec (star:hosts=8,bandwidth=100Gbps,latency=1us), a YAML file or a bundled name.",
    ),
]
RanksOpt = Annotated[
    Optional[int], typer.Option("--ranks", "-r", envvar="COLLSIM_RANKS", help="Use the first N GPUs.", min=1)
]
CalibrationOpt = Annotated[
    Optional[str],
    typer.Option(
        "--calibration",
        envvar="COLLSIM_CALIBRATION",
        help="A calibration file (collsim validate calibrate) applied to the topology.",
    ),
]
GammaOpt = Annotated[
    Optional[float],
    typer.Option(
        "--gamma", envvar="COLLSIM_GAMMA", help="Reduction cost, seconds per byte (default: calibrated, else 0)."
    ),
]


def calibration_line(calibration: str | None, topology: str | None = None) -> str | None:
    """``# calibration: FILE (calibrated: ...)`` for table headers, or None without one; it names the
    cluster the calibration was fitted on when that is not ``topology`` (the file applies by link class,
    so fitting on a few hosts and predicting many is allowed, but the reader should know)."""
    if calibration is None:
        return None
    from sim.calibration import load_calibration

    cal = load_calibration(calibration)
    fitted = "" if topology in (None, cal.topology) else f"fitted on {cal.topology}; "
    return f"# calibration: {calibration} ({fitted}calibrated: {', '.join(cal.calibrated)}; everything else nominal)"


@app.command("simulate")
def simulate_cmd(
    topology: TopologyOpt,
    collective: Annotated[
        str, typer.Option("--collective", envvar="COLLSIM_COLLECTIVE", help="allreduce, broadcast, ...")
    ] = "allreduce",
    algorithm: Annotated[
        str, typer.Option("--algorithm", "-a", envvar="COLLSIM_ALGORITHM", help="e.g. ring, tree:chunks=8")
    ] = "ring",
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
        _simulate(
            topology,
            collective,
            algorithm,
            size,
            sizes,
            ranks,
            dtype,
            root,
            gamma,
            calibration,
            check,
            as_json,
            engine,
            progress,
        )


def _simulate(
    topology: str,
    collective: str,
    algorithm: str,
    size: str | None,
    sizes: str | None,
    ranks: int | None,
    dtype: str,
    root: int,
    gamma: float | None,
    calibration: str | None,
    check: bool,
    as_json: bool,
    engine: str,
    progress: bool | None,
) -> None:
    if size and sizes:
        raise ConfigError("give --size or --sizes, not both")
    size_list = parse_size_range(sizes, "--sizes") if sizes else [parse_bytes(size or "64MiB", "--size")]
    from sim.calibration import calibrated_graph

    coll = get_collective(collective)
    algo = get_algorithm(coll.name, algorithm)
    # every GPU: dedicated servers use the hosts beyond --ranks
    cluster = Cluster(calibrated_graph(topology, calibration))
    p = ranks or cluster.size
    if p > cluster.size:
        raise ConfigError(f"--ranks {p}: topology {cluster.name!r} has only {cluster.size} GPUs")
    algo.check(p, cluster)  # before the header: an algorithm that cannot run here is just an error line
    if engine not in ("auto", "fast", "message"):
        raise ConfigError(f"--engine: unknown engine {engine!r} (valid: auto, fast, message)")
    if not as_json:
        print(f"# collsim simulate: {coll.name} ({algo.spec}) on {cluster.name}, {p} ranks")
        print(f"# topology: {cluster.graph.graph.get('spec', topology)}")
        if calibration is not None:
            print(calibration_line(calibration, topology))
        print("#")
        print(nccl_header())
    results = []
    with delayed_progress(len(size_list), f"{algo.spec}, {p} ranks", force=progress) as bar:
        for nbytes in size_list:
            bar.describe(f"{algo.spec}, {p} ranks, {format_size(nbytes)}")
            r = simulate(
                cluster,
                coll.name,
                algo,
                nbytes,
                ranks=p,
                dtype=dtype,
                gamma=gamma,
                root=root,
                check=check,
                engine=engine,
            )
            results.append(r)
            bar.advance()
            print(row_with_pick(r, algo, cluster, as_json), flush=True)  # NCCL's pick, for nccl
    if not as_json:
        avg = statistics.fmean(r.busbw_GBps for r in results)
        last = results[-1]
        print(f"# Out of bounds values : {sum(1 for r in results if r.wrong)} {'OK' if check else ''}".rstrip())
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
) -> None:
    """Summarise a cluster: hosts, GPUs, switches, links and bisection bandwidth."""
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
