"""``collsim validate run|show|algorithms``: real runs of the simulator's algorithms with torch.distributed.

torch is imported only inside the commands that need it, so that ``collsim simulate`` never loads it.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .app import app

validate_app = typer.Typer(
    help="Run the simulator's algorithms for real (torch.distributed, gloo or NCCL), measured like nccl-tests.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(validate_app, name="validate")


def _runner_help() -> str:
    from validate.options import options_help

    return "\b\nRunner options (forwarded to every rank; also read from the environment):\n" + options_help()


@validate_app.command(
    "run",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": ["-h", "--help"]},
    epilog=_runner_help(),
)
def run_cmd(
    ctx: typer.Context,
    ranks: Annotated[int, typer.Option("--ranks", envvar="COLLSIM_RANKS", help="Local ranks to start.", min=1)],
    master_port: Annotated[
        Optional[int],
        typer.Option("--master-port", envvar="COLLSIM_MASTER_PORT", help="Rendezvous port (default: a free one)."),
    ] = None,
) -> None:
    """Start N local ranks of `python -m validate` on 127.0.0.1 and print nccl-tests' table.

    Example: collsim validate run --ranks 4 --algorithm ring --sizes 1KiB:64MiB --json out.jsonl
    """
    from validate.launch import launch

    launch(ranks, list(ctx.args), master_port=master_port)


@validate_app.command("check")
def check_cmd(
    ranks: Annotated[int, typer.Option("--ranks", envvar="COLLSIM_RANKS", help="Local ranks to start.", min=1)],
    collective: Annotated[
        Optional[str], typer.Option("--collective", envvar="COLLSIM_COLLECTIVE", help="Comma-separated (default: all).")
    ] = None,
    counts: Annotated[
        Optional[str], typer.Option("--counts", help="Elements per rank (default 1,1009,262147).")
    ] = None,
    dtype: Annotated[
        str, typer.Option("--dtype", "-d", envvar="COLLSIM_DTYPE", help="nccl-tests type name.")
    ] = "float",
    gpus_per_host: Annotated[
        Optional[int], typer.Option("--gpus-per-host", envvar="COLLSIM_GPUS_PER_HOST", help="For hierarchical.", min=1)
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", envvar="COLLSIM_TIMEOUT", help="Seconds per collective.")
    ] = 60.0,
    json_path: Annotated[Optional[str], typer.Option("--json", help="Append one JSON line per case.")] = None,
    master_port: Annotated[Optional[int], typer.Option("--master-port", envvar="COLLSIM_MASTER_PORT")] = None,
) -> None:
    """Check every algorithm of every collective exactly, on one element, a prime count and a large buffer."""
    from validate.launch import conformance_job, launch

    argv = ["--dtype", dtype, "--timeout", str(timeout)]
    for flag, value in (
        ("--collective", collective),
        ("--counts", counts),
        ("--gpus-per-host", gpus_per_host),
        ("--json", json_path),
    ):
        if value is not None:
            argv += [flag, str(value)]
    launch(ranks, conformance_job(ranks, argv), master_port=master_port)


@validate_app.command("show")
def show_cmd(
    path: Annotated[str, typer.Argument(help="A JSON-lines file written by --json.")],
) -> None:
    """Print a results file as nccl-tests' table, one block per run."""
    from sim.results import nccl_header
    from validate.results import read_measurements, table_row

    last = None
    for m in read_measurements(path):
        key = (m.run_id, m.collective, m.algorithm, m.ranks)
        if key != last:
            hosts = len(m.environment.get("hosts", [])) or "?"
            print(
                f"# {m.collective} with {m.algorithm}, {m.ranks} ranks on {hosts} host(s), {m.backend}"
                f"  (run {m.run_id or '?'})"
            )
            print(nccl_header())
            last = key
        print(table_row(m))


@validate_app.command("algorithms")
def algorithms_cmd(
    collective: Annotated[Optional[str], typer.Option("--collective", help="Only this collective.")] = None,
) -> None:
    """List what each collective can be run with; '*' marks the names the simulator also has."""
    from sim.algorithms import algorithm_names as sim_names
    from sim.collectives import COLLECTIVES, get_collective
    from validate.algorithms import algorithm_names, get_algorithm

    for coll in [get_collective(collective).name] if collective else list(COLLECTIVES):
        print(f"{coll}:")
        simulated = set(sim_names(coll))
        for name in algorithm_names(coll):
            algo = get_algorithm(coll, name)
            options = ", ".join(algo.Options.model_fields) or "-"
            mark = "*" if name in simulated else " "
            print(f"  {mark} {name:22s} {algo.summary}  (options: {options})")


__all__ = ["algorithms_cmd", "check_cmd", "run_cmd", "show_cmd"]
