"""``collsim compare``: every all-reduce algorithm (or every algorithm of another collective) on one
cluster and one size, side by side, fastest first."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from sim.algorithms import split_algorithm_specs
from sim.collectives import get_collective
from sim.compare import Comparison, compare
from sim.units import format_size, parse_bytes

from .app import app
from .options import CalibrationOpt, GammaOpt, RanksOpt, TopologyOpt, read_calibration
from .timeout import TimeoutOpt, bounded

__all__ = ["compare_cmd", "render_table"]

_HEADER = (
    f"# {'algorithm':<32s}  {'time':>10s}  {'algbw':>7s}  {'busbw':>7s}  {'busiest link':>20s}  {'util':>6s}"
    f"  {'traffic':>10s}  {'max/endpoint':>12s}\n"
    f"# {'':<32s}  {'(us)':>10s}  {'(GB/s)':>7s}  {'(GB/s)':>7s}  {'':>20s}  {'':>6s}  {'(total)':>10s}  {'(in or out)':>12s}"
)


def _row(row: Comparison) -> str:
    r = row.result
    assert r is not None
    endpoint = max(r.max_sent_bytes, r.max_received_bytes)
    return (
        f"  {row.algorithm:<32s}  {r.time_s * 1e6:10.2f}  {r.algbw_GBps:7.2f}  {r.busbw_GBps:7.2f}  "
        f"{r.busiest_link:>20s}  {r.max_link_utilization:6.1%}  {format_size(r.traffic_bytes):>10s}  "
        f"{format_size(endpoint):>12s}"
    )


def render_table(rows: list[Comparison]) -> list[str]:
    """The table's lines: the header, one row per algorithm that ran, then one line per skipped one."""
    lines = [_HEADER]
    lines += [_row(row) for row in rows if row.result is not None]
    for row in rows:
        if row.result is None:
            reason = row.skipped.removeprefix(f"{row.algorithm}: ")
            lines.append(f"# skipped {row.algorithm}: {reason}")
    return lines


@app.command("compare")
def compare_cmd(
    topology: TopologyOpt,
    size: Annotated[str, typer.Option("--size", "-s", envvar="COLLSIM_SIZE", help="The size, e.g. 64MiB.")] = "64MiB",
    ranks: RanksOpt = None,
    collective: Annotated[
        str, typer.Option("--collective", envvar="COLLSIM_COLLECTIVE", help="allreduce (default), broadcast, ...")
    ] = "allreduce",
    algorithms: Annotated[
        Optional[str],
        typer.Option(
            "--algorithms",
            envvar="COLLSIM_ALGORITHMS",
            help="Only these, comma-separated (e.g. ring,tree:chunks=8,ps:shards=2,placement=dedicated).",
        ),
    ] = None,
    gamma: GammaOpt = None,
    calibration: CalibrationOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per algorithm instead of the table.")
    ] = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Simulate every algorithm of a collective on one cluster and size; print them fastest first.

    Columns: time, nccl-tests' algbw and busbw, the busiest link direction and how busy it was over the
    collective, the bytes of all messages, and the most one endpoint sent or received. Algorithms that
    cannot run on the cluster are listed as skipped, with the reason.
    """
    coll = get_collective(collective)
    nbytes = parse_bytes(size, "--size")
    chosen = split_algorithm_specs(algorithms) if algorithms else None
    link_model, header = read_calibration(calibration, topology)
    with bounded(timeout):
        rows = compare(
            topology, nbytes, collective=coll.name, ranks=ranks, gamma=gamma, algorithms=chosen, link_model=link_model
        )
    if as_json:
        for row in rows:
            print(
                row.result.to_json() if row.result else json.dumps({"algorithm": row.algorithm, "skipped": row.skipped})
            )
        return
    first = next((row.result for row in rows if row.result), None)
    where = f"{first.topology}, {first.ranks} ranks" if first else topology
    print(f"# collsim compare: {coll.name}, {format_size(nbytes)} ({int(nbytes)} B) on {where}, fastest first")
    if header is not None:
        print(header)
    if any(row.algorithm == "nccl" and row.result is not None for row in rows):
        print(
            "# nccl: what NCCL would run here (its tuner's pick, simulated) -- the realistic reference on GPU clusters"
        )
    print("#")
    print("\n".join(render_table(rows)))
