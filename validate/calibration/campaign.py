"""Where calibration and comparison measure: an emulated cluster (netlab) or local ranks on loopback.

A :class:`Target` runs a runner module (``validate`` for collectives, ``validate.calibration.probes`` for
calibration probes) with some arguments, one rank per GPU, and leaves rank 0's JSON lines in a file.
:func:`netlab_target` brings up (or reuses) a lab for the whole block and removes what it brought up on
the way out, whatever happens; :func:`local_target` runs every rank on this machine's loopback, which is
only what the topology says when all its GPUs are on one host. No torch here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sim.errors import ConfigError, RunError

__all__ = ["Run", "Target", "load_average", "local_target", "netlab_target", "run_and_read"]

#: a whole netlab run may take this many times the per-operation timeout (at least an hour)
RUN_LIMIT_FACTOR = 50


def load_average() -> float | None:
    """This machine's one-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


@dataclass(frozen=True)
class Run:
    """One finished run of a runner: where its records went and what they were."""

    module: str
    args: tuple[str, ...]
    json_path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    load_before: float | None = None
    load_after: float | None = None


class Target(Protocol):
    """Runs ``python -m MODULE ARGS --json FILE`` as one rank per GPU of the topology."""

    description: str
    ranks: int

    def launch(self, module: str, args: Sequence[str], json_path: Path, timeout: float) -> None: ...


@dataclass
class _Local:
    ranks: int
    description: str

    def launch(self, module: str, args: Sequence[str], json_path: Path, timeout: float) -> None:
        from ..launch import Job, launch

        launch(self.ranks, Job(module, (*args, "--json", str(json_path)), f"{module} {' '.join(args)}"[:120], timeout))


@dataclass
class _Netlab:
    plan: Any
    spec: str
    ranks: int
    description: str

    def launch(self, module: str, args: Sequence[str], json_path: Path, timeout: float) -> None:
        from netlab import launch, rank_commands

        commands = rank_commands(
            self.plan, [*args, "--json", str(json_path)], json_path=json_path, topology=self.spec, module=module
        )
        # the ranks end a hung operation themselves after ``timeout``; this only bounds the whole run
        limit = max(3600.0, RUN_LIMIT_FACTOR * timeout)
        outcome = launch(commands, json_path=json_path, timeout=limit, echo=lambda m: print(m, file=sys.stderr))
        if outcome.timed_out:
            raise RunError(f"netlab: {module} still running after {limit:.0f} s: killed")
        if outcome.failed:
            raise RunError(
                f"netlab: {module} failed on rank(s) {', '.join(map(str, outcome.failed))} "
                f"(exit codes {[outcome.codes[r] for r in outcome.failed]})"
            )


@contextlib.contextmanager
def local_target(topology: Any) -> Iterator[Target]:
    """Every rank of ``topology`` on this machine, over loopback: refused unless every GPU of the
    topology is on one host (loopback is not the topology's network otherwise)."""
    from sim.topology import hosts_of, load_graph

    graph = load_graph(topology)
    hosts = hosts_of(graph)
    if len(hosts) != 1:
        raise ConfigError(
            f"--local runs every rank on this machine's loopback, so the topology must have all its GPUs on one "
            f"host (e.g. star:hosts=1,gpus_per_host=4,bandwidth=1Gbps,intra_bandwidth=2GB/s); "
            f"{graph.graph.get('name')!r} has {len(hosts)} hosts (use --netlab, or --from / --measured files)"
        )
    ranks = len(graph.graph["ranks"])
    if ranks < 2:
        raise ConfigError("--local: the topology needs at least 2 GPUs")
    yield _Local(ranks, f"{ranks} local ranks on loopback")


@contextlib.contextmanager
def netlab_target(topology: str, prefix: str) -> Iterator[Target]:
    """An emulated cluster of ``topology`` under ``prefix``: the lab of that prefix if it is up with the
    same topology, else one brought up now and removed when the block ends (also on errors and
    interrupts)."""
    from netlab import down, interrupts_as_keyboard, make_plan, running_plan, up
    from netlab.state import read_state
    from netlab.system import require

    spec = str(Path(topology).resolve()) if Path(topology).is_file() else topology
    wanted = make_plan(spec, prefix=prefix)
    require()
    state = read_state(prefix)
    own = state is None
    with interrupts_as_keyboard():
        if own:
            plan, _ = up(spec, prefix=prefix, rate_check=False)
        else:
            assert state is not None
            plan = running_plan(state, wanted, prefix)
        try:
            yield _Netlab(plan, spec, plan.world_size, f"netlab {plan.name} ({plan.world_size} ranks, prefix {prefix})")
        finally:
            if own:
                down(prefix)


def _records_after(path: Path, offset: int) -> list[dict[str, Any]]:
    import json

    if not path.exists():
        return []
    out = []
    with open(path, encoding="utf-8") as fh:
        fh.seek(offset)
        for line in fh:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    raise RunError(f"{path}: the runner wrote a line that is not JSON") from None
    return out


def run_and_read(target: Target, module: str, args: Sequence[str], json_path: Path, timeout: float) -> Run:
    """Run ``module`` on ``target`` appending to ``json_path``; returns the records this run added."""
    offset = json_path.stat().st_size if json_path.exists() else 0
    before = load_average()
    started = time.monotonic()
    target.launch(module, args, json_path, timeout)
    seconds = time.monotonic() - started
    records = _records_after(json_path, offset)
    if not records:
        raise RunError(f"{module} {' '.join(args)}: the run wrote no records to {json_path}")
    return Run(module, tuple(args), json_path, records, seconds, before, load_average())
