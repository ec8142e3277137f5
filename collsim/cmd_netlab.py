"""``collsim netlab up|run|down|status|probe``: an emulated cluster on this Linux machine."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Optional

import typer

from sim.errors import ConfigError, RunError
from sim.units import parse_size, parse_time

from .app import app

netlab_app = typer.Typer(
    name="netlab",
    help="An emulated cluster on this machine: namespaces, bridges and tbf-shaped veths (needs root, ip, tc).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(netlab_app, name="netlab")

SpecArg = Annotated[
    str,
    typer.Argument(
        metavar="SPEC",
        envvar="COLLSIM_TOPOLOGY",
        help="Topology: inline spec, YAML file or bundled name (netlab-star4).",
    ),
]
PrefixOpt = Annotated[
    str,
    typer.Option(
        "--prefix", envvar="COLLSIM_NETLAB_PREFIX", help="Name prefix of everything netlab makes (1-6 of a-z0-9)."
    ),
]
QueueOpt = Annotated[
    str,
    typer.Option(
        "--queue", envvar="COLLSIM_NETLAB_QUEUE", help="tbf queue per link direction, as time at the link's rate."
    ),
]
BurstOpt = Annotated[
    Optional[str],
    typer.Option(
        "--burst",
        envvar="COLLSIM_NETLAB_BURST",
        help="tbf bucket of every link direction (default: 1 ms of its rate, at least 80 KiB).",
    ),
]
MtuOpt = Annotated[int, typer.Option("--mtu", envvar="COLLSIM_NETLAB_MTU", help="MTU of every veth.")]


def _warn(message: str) -> None:
    print(f"collsim: warning: {message}", file=sys.stderr)


@contextlib.contextmanager
def _interruptible(what: Callable[[], str]) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP end the block through its cleanups, then print one line."""
    from netlab import interrupts_as_keyboard
    from sim.lifetime import announce

    try:
        with interrupts_as_keyboard():
            yield
    except KeyboardInterrupt:
        announce(f"collsim: interrupted ({what()})")
        raise


def _burst(text: str | None) -> int | None:
    return None if text is None else int(parse_size(text, "--burst"))


def _rate(bytes_per_s: float) -> str:
    bits = bytes_per_s * 8
    return f"{bits / 1e9:.3g} Gbit/s" if bits >= 1e9 else f"{bits / 1e6:.4g} Mbit/s"


def _spec(spec: str) -> str:
    """A topology file's absolute path (so ranks and later commands find it); other specs as given."""
    path = Path(spec)
    return str(path.resolve()) if path.is_file() else spec


def _describe(plan: object) -> list[str]:
    from netlab.plan import Plan

    assert isinstance(plan, Plan)
    lines = [f"  {'host':<12} {'namespace':<10} {'interface':<10} {'address':<12} {'ranks':<8} link (up / down)"]
    ends = {link.a.ns: link for link in plan.links if link.a.bridge is None}
    for h in plan.hosts:
        link = ends.get(h.ns)
        rates = f"{_rate(link.a.egress.rate)} / {_rate(link.b.egress.rate)}" if link else "loopback only"
        ranks = ",".join(map(str, h.ranks)) or "-"
        lines.append(f"  {h.name[:12]:<12} {h.ns:<10} {h.ifname or '-':<10} {h.address or '-':<12} {ranks:<8} {rates}")
    for sw in plan.switches:
        trunks = [k for k in plan.links if k.a.bridge and sw.ns in (k.a.ns, k.b.ns)]
        uplinks = ", ".join(f"{k.link[:30]} {_rate(k.a.egress.rate)} / {_rate(k.b.egress.rate)}" for k in trunks)
        lines.append(f"  switch {sw.name[:12]:<12} {sw.ns:<10} bridge {sw.bridge}{'; ' + uplinks if uplinks else ''}")
    return lines


def _print_checks(checks: object) -> None:
    from netlab.lab import Checks

    assert isinstance(checks, Checks)
    print(f"check: every host reaches every other ({checks.pairs} pairs)")
    t = checks.transfer
    if t is not None:
        print(
            f"check: {t.src} -> {t.dst} {t.nbytes / 2**20:.1f} MiB in {t.seconds:.3f} s: {_rate(t.rate)}, "
            f"{t.fraction:.1%} of the shaped {_rate(t.shaped)}"
        )


@netlab_app.command("up")
def up_cmd(
    spec: SpecArg,
    prefix: PrefixOpt = "cs",
    queue: QueueOpt = "100ms",
    mtu: MtuOpt = 1500,
    burst: BurstOpt = None,
    checks: Annotated[bool, typer.Option("--check/--no-check", help="Check connectivity after up.")] = True,
    rate_check: Annotated[
        bool, typer.Option("--rate-check/--no-rate-check", help="Time one transfer and warn when it is off by > 10%.")
    ] = True,
) -> None:
    """Build the emulated cluster of SPEC and check it (it stays up until `collsim netlab down`)."""
    from netlab import up

    start = time.monotonic()
    with _interruptible(lambda: f"netlab {prefix}: nothing was left behind"):
        plan, result = up(
            _spec(spec),
            prefix=prefix,
            queue=parse_time(queue, "--queue"),
            mtu=mtu,
            burst=_burst(burst),
            checks=checks,
            rate_check=rate_check,
            warn=_warn,
        )
    print(
        f"netlab {prefix}: {plan.name} up in {time.monotonic() - start:.2f} s: {len(plan.hosts)} hosts, "
        f"{len(plan.switches)} switch{'es' if len(plan.switches) != 1 else ''}, {len(plan.links)} veth pairs (tbf, queue {plan.queue * 1e3:g} ms, MTU {plan.mtu})"
    )
    for line in _describe(plan):
        print(line)
    if result is not None:
        _print_checks(result)


@netlab_app.command("down")
def down_cmd(prefix: PrefixOpt = "cs") -> None:
    """Remove everything netlab made with this prefix (also after a crash, also without the state file)."""
    from netlab import down

    removed = down(prefix)
    what = f"{len(removed.namespaces)} namespaces" + (f", {len(removed.links)} stray devices" if removed.links else "")
    print(f"netlab {prefix}: removed {what}" if removed else f"netlab {prefix}: nothing to remove")


@netlab_app.command("status")
def status_cmd(
    prefix: PrefixOpt = "cs",
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
) -> int:
    """Show the lab of this prefix. Exit 0 when it is up and whole, 1 otherwise."""
    from netlab import status

    st = status(prefix)
    if as_json:
        print(
            json.dumps(
                {
                    "prefix": prefix,
                    "state": st.state,
                    "healthy": st.healthy,
                    "missing": list(st.missing),
                    "busy": list(st.busy),
                    "present": {"namespaces": list(st.present.namespaces), "links": list(st.present.links)},
                    "plan": st.plan.to_dict() if st.plan else None,
                },
                indent=1,
            )
        )
    elif st.plan is None:
        if st.present:
            found = ", ".join((st.present.namespaces + st.present.links)[:8])
            print(
                f"netlab {prefix}: no state file, but leftovers exist: {found}; `collsim netlab down --prefix {prefix}` removes them"
            )
        else:
            print(f"netlab {prefix}: no lab")
    else:
        health = (
            "up"
            if st.healthy
            else (st.state or "?")
            + (f", missing {', '.join(st.missing)}" if st.missing else "")
            + (
                f", busy: {len(st.busy)} process(es) in its namespaces (pids {', '.join(map(str, st.busy[:8]))})"
                if st.busy
                else ""
            )
        )
        print(f"netlab {prefix}: {st.plan.name} ({st.plan.spec}) {health}; {st.plan.world_size} ranks")
        for line in _describe(st.plan):
            print(line)
    return 0 if st.healthy else 1


@netlab_app.command("probe")
def probe_cmd(
    hosts: Annotated[
        list[str], typer.Argument(metavar="SRC DST [SRC DST ...]", help="Pairs of hosts (topology names).")
    ],
    prefix: PrefixOpt = "cs",
    size: Annotated[str, typer.Option("--size", "-s", help="Bytes per flow.")] = "8MiB",
) -> None:
    """Time TCP transfers on the running lab: one flow per SRC DST pair, all at once (they share links)."""
    from netlab import status, transfers

    if len(hosts) % 2:
        raise ConfigError(f"probe takes pairs SRC DST, got {len(hosts)} host names")
    st = status(prefix)
    if not st.healthy or st.plan is None:
        raise ConfigError(f"no healthy lab with prefix {prefix!r} (see: collsim netlab status --prefix {prefix})")
    nbytes = int(parse_size(size, "--size"))
    flows = transfers(st.plan, list(zip(hosts[::2], hosts[1::2], strict=True)), nbytes)
    for t in flows:
        print(
            f"{t.src} -> {t.dst}: {t.nbytes} B in {t.seconds:.4f} s, {_rate(t.rate)} "
            f"({t.fraction:.1%} of the path's shaped {_rate(t.shaped)})"
        )
    if len(flows) > 1:
        print(f"all {len(flows)} flows done in {max(t.seconds for t in flows):.4f} s")


@netlab_app.command("run")
def run_cmd(
    spec: SpecArg,
    args: Annotated[
        Optional[list[str]], typer.Argument(metavar="-- ARGS", help="Arguments for the runner (validate's).")
    ] = None,
    prefix: PrefixOpt = "cs",
    json_path: Annotated[
        Optional[Path],
        typer.Option(
            "--json", envvar="COLLSIM_NETLAB_JSON", help="Rank 0's JSON lines (default netlab-PREFIX.jsonl here)."
        ),
    ] = None,
    timeout: Annotated[
        str, typer.Option("--timeout", envvar="COLLSIM_NETLAB_TIMEOUT", help="Kill every rank after this long.")
    ] = "1800s",
    master_port: Annotated[
        int, typer.Option("--master-port", envvar="COLLSIM_NETLAB_MASTER_PORT", min=1, max=65535)
    ] = 29500,
    python: Annotated[
        str, typer.Option("--python", envvar="COLLSIM_NETLAB_PYTHON", help="Interpreter of the ranks.")
    ] = sys.executable,
    module: Annotated[
        str, typer.Option("--module", envvar="COLLSIM_NETLAB_MODULE", help="Runner module (python -m).")
    ] = "validate",
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave a lab this command brought up running afterwards.")
    ] = False,
    grace: Annotated[
        str,
        typer.Option(
            "--grace",
            envvar="COLLSIM_NETLAB_GRACE",
            help="Once rank 0 has ended or a rank has failed, how long the others get to end on their own.",
        ),
    ] = "10s",
    queue: QueueOpt = "100ms",
    mtu: MtuOpt = 1500,
    burst: BurstOpt = None,
) -> int:
    """Run the validate runner on the emulated cluster of SPEC, one rank per GPU; exit with rank 0's code.

    Uses the lab of this prefix if it is up with SPEC; otherwise brings one up and removes it afterwards.
    """
    from netlab import down, launch, make_plan, rank_commands, results_path, running_plan, up
    from netlab.launch import refuse_busy
    from netlab.state import locked, read_state
    from netlab.system import require

    args = list(args or [])
    if json_path is not None and any(a == "--json" or a.startswith("--json=") for a in args):
        raise ConfigError("give --json before `--` or among the runner's arguments, not both")
    seconds = parse_time(timeout, "--timeout")
    grace_s = parse_time(grace, "--grace")
    if not (seconds > 0 and grace_s >= 0):
        raise ConfigError(f"--timeout must be > 0 and --grace >= 0, got {timeout!r} and {grace!r}")
    wanted = make_plan(_spec(spec), prefix=prefix, queue=parse_time(queue, "--queue"), mtu=mtu, burst=_burst(burst))
    require()
    cpus = os.cpu_count() or 1
    if wanted.world_size > 2 * cpus:
        _warn(
            f"{wanted.world_size} ranks share {cpus} CPUs: the CPU, not the shaped links, may be the bottleneck (docs/netlab.md)"
        )
    state = read_state(prefix)
    own = state is None
    left = (
        "the ranks are stopped and the lab this run brought up is removed"
        if own
        else "the ranks are stopped; the lab stays up"
    )
    with _interruptible(lambda: f"netlab {prefix}: {left}"), locked(prefix, "run"):
        if own:
            plan, _ = up(
                _spec(spec),
                prefix=prefix,
                queue=wanted.queue,
                mtu=mtu,
                burst=_burst(burst),
                rate_check=False,
                warn=_warn,
            )
        else:
            assert state is not None
            plan = running_plan(state, wanted, prefix)
        try:
            refuse_busy(prefix, plan.namespaces)  # an older run's ranks: before a word about this one
            print(
                f"netlab {prefix}: {plan.world_size} ranks of `python -m {module}` on {len(plan.hosts)} hosts of {plan.name}",
                file=sys.stderr,
            )
            path = results_path(args, json_path or Path(f"netlab-{prefix}.jsonl"))
            commands = rank_commands(
                plan, args, json_path=path, topology=_spec(spec), module=module, python=python, master_port=master_port
            )
            outcome = launch(
                commands, json_path=path, timeout=seconds, grace=grace_s, echo=lambda m: print(m, file=sys.stderr)
            )
        finally:
            if own and not keep:
                down(prefix)
    if outcome.timed_out:
        raise RunError(f"ranks still running after {timeout} (--timeout): killed; logs in {outcome.log_dir}")
    if outcome.failed:
        _warn(f"{outcome.describe([c.host for c in commands])}; logs in {outcome.log_dir}")
    print(
        f"netlab {prefix}: rank 0 exited {outcome.rank0} after {outcome.seconds:.1f} s; {outcome.records} records in {outcome.json_path}",
        file=sys.stderr,
    )
    return outcome.rank0
