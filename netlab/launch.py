"""Starting one process per rank inside the lab's namespaces, torchrun-style, and collecting rank 0's
results on this machine.

Each rank runs ``ip netns exec NS PYTHON -m netlab.rankhost HOST MODULE ARGS --topology SPEC --json FILE``
in its host's namespace -- ``python -m MODULE ARGS ...`` in a UTS namespace of its own whose host name
is the topology's host name (when that is a valid host name; the namespace's name otherwise) -- with ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` (the first
host's address), ``MASTER_PORT`` and ``GLOO_SOCKET_IFNAME`` (the host's interface) set, and
``OMP_NUM_THREADS=1`` unless already set (all ranks share this machine's CPUs). The namespaces share
this machine's file system, so the JSON file rank 0 writes is directly here. Rank 0's output goes to
this terminal; the others' to log files, whose tails are printed when a rank fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sim.lifetime import die_with_parent

from .errors import NetlabError
from .plan import Plan

__all__ = [
    "DEFAULT_MASTER_PORT",
    "RankCommand",
    "RunOutcome",
    "busy_pids",
    "launch",
    "rank_commands",
    "refuse_busy",
    "results_path",
]

DEFAULT_MASTER_PORT = 29500
#: A topology host name that is also a valid host name becomes the rank's host name; others do not.
_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class RankCommand:
    rank: int
    host: str
    ns: str
    argv: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True)
class RunOutcome:
    """How a launch ended: every rank's exit code (negative: killed by that signal)."""

    codes: tuple[int, ...]
    json_path: Path
    records: int
    seconds: float
    timed_out: bool
    log_dir: Path | None
    stopped: tuple[int, ...] = ()  # ranks still running when the launcher stopped them

    @property
    def rank0(self) -> int:
        """Rank 0's exit code as a shell reports it (128 + signal when it was killed)."""
        code = self.codes[0]
        return 128 - code if code < 0 else code

    @property
    def failed(self) -> list[int]:
        return [r for r, code in enumerate(self.codes) if code != 0]

    def describe(self, hosts: Sequence[str]) -> str:
        """How the failed ranks ended, the cause first: ``rank 1 (h1) was killed by SIGKILL; rank 0 (h0)
        was still running and was stopped; ranks 2, 3 exited with status 1``."""
        killed = [r for r in self.failed if self.codes[r] < 0 and r not in self.stopped]
        exited: dict[int, list[int]] = {}
        for r in self.failed:
            if self.codes[r] > 0:
                exited.setdefault(self.codes[r], []).append(r)
        parts = [f"rank {r} ({hosts[r]}) was killed by {_signal_name(-self.codes[r])}" for r in killed]
        parts += [f"rank {r} ({hosts[r]}) was still running and was stopped" for r in self.stopped]
        for code, ranks in exited.items():
            which = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
            parts.append(f"{which} exited with status {code}")
        return "; ".join(parts)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _option(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def rank_commands(
    plan: Plan,
    args: Sequence[str],
    *,
    json_path: Path,
    topology: str | None = None,
    module: str = "validate",
    python: str = sys.executable,
    master_port: int = DEFAULT_MASTER_PORT,
    base_env: dict[str, str] | None = None,
) -> list[RankCommand]:
    """The command and environment of every rank (pure: nothing is started).

    ``--topology`` and ``--json`` are added unless ``args`` already has them.

    >>> from netlab.plan import make_plan
    >>> cmds = rank_commands(make_plan("netlab-star4"), ["-n", "5"], json_path=Path("/tmp/r.jsonl"), python="py", base_env={})
    >>> cmds[1].argv
    ('ip', 'netns', 'exec', 'cs-h1', 'py', '-m', 'netlab.rankhost', 'h1', 'validate', '-n', '5', '--topology', 'netlab-star4', '--json', '/tmp/r.jsonl')
    >>> {k: cmds[1].env[k] for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "GLOO_SOCKET_IFNAME")}
    {'RANK': '1', 'WORLD_SIZE': '4', 'MASTER_ADDR': '10.213.0.1', 'GLOO_SOCKET_IFNAME': 'cs-l1a'}
    """
    hosts = plan.rank_hosts()
    if not hosts:
        raise NetlabError(f"{plan.name} has no ranks to run")
    extra: list[str] = []
    if _option(args, "--topology") is None:
        extra += ["--topology", topology or plan.spec]
    if _option(args, "--json") is None:
        extra += ["--json", str(json_path)]
    master = hosts[0]
    env0 = dict(os.environ if base_env is None else base_env)
    env0.setdefault("OMP_NUM_THREADS", "1")
    env0.setdefault("PYTHONUNBUFFERED", "1")
    commands = []
    for rank, host in enumerate(hosts):
        env = {
            **env0,
            "RANK": str(rank),
            "WORLD_SIZE": str(len(hosts)),
            "LOCAL_RANK": str(host.ranks.index(rank)),
            "LOCAL_WORLD_SIZE": str(len(host.ranks)),
            "MASTER_ADDR": master.address or "127.0.0.1",
            "MASTER_PORT": str(master_port),
            "GLOO_SOCKET_IFNAME": host.ifname or "lo",
            "COLLSIM_NETLAB_PREFIX": plan.prefix,
        }
        hostname = host.name if _HOSTNAME.fullmatch(host.name) else host.ns
        argv = ("ip", "netns", "exec", host.ns, python, "-m", "netlab.rankhost", hostname, module, *args, *extra)
        commands.append(RankCommand(rank, host.name, host.ns, argv, env))
    return commands


def results_path(args: Sequence[str], default: Path) -> Path:
    """Where rank 0 writes its JSON lines: the runner's own ``--json`` if ``args`` has one, else ``default``."""
    return Path(_option(args, "--json") or default).absolute()


def launch(
    commands: Sequence[RankCommand],
    *,
    json_path: Path,
    timeout: float = 600.0,
    grace: float = 10.0,
    echo: Callable[[str], None] | None = None,
) -> RunOutcome:
    """Run every rank (from :func:`rank_commands`), wait for them, and return how they ended.

    When rank 0 ends, or any rank fails, the others get ``grace`` seconds to end on their own; after that,
    on ``timeout``, on an exception or on Ctrl-C, every rank still running is terminated (its whole
    process group), then killed. Logs of the other ranks are removed when all succeed, kept otherwise.
    ``json_path`` is where rank 0 writes (see :func:`results_path`); the records it adds are counted.
    """
    echo = echo or (lambda m: print(m, file=sys.stderr))
    if not commands:
        raise NetlabError("no ranks to launch")
    prefix = commands[0].env.get("COLLSIM_NETLAB_PREFIX", "lab")
    refuse_busy(prefix, sorted({c.ns for c in commands}))
    offset = json_path.stat().st_size if json_path.exists() else 0
    log_dir = Path(tempfile.mkdtemp(prefix=f"collsim-netlab-{prefix}-"))
    procs: list[subprocess.Popen[bytes]] = []
    timed_out = False
    start = time.monotonic()
    try:
        for cmd in commands:
            if cmd.rank == 0:
                out = None
            else:
                out = open(log_dir / f"rank{cmd.rank}.log", "wb")  # noqa: SIM115  (closed below)
            try:
                procs.append(
                    subprocess.Popen(
                        cmd.argv,
                        env=cmd.env,
                        stdout=out,
                        stderr=subprocess.STDOUT if out else None,
                        start_new_session=True,
                        # SIGKILL when this launcher ends, however it ends (kill -9 included): it lasts
                        # through `ip netns exec` and the rank's exec of python
                        preexec_fn=die_with_parent(),  # noqa: PLW1509 - only prctl and getppid
                    )
                )
            finally:
                if out:
                    out.close()
        timed_out = _wait(procs, start + timeout, grace)
    except BaseException:  # interrupted: nobody will be told where the logs are
        _stop(procs)
        shutil.rmtree(log_dir, ignore_errors=True)
        raise
    stopped = tuple(r for r, p in enumerate(procs) if p.poll() is None)
    _stop(procs)
    seconds = time.monotonic() - start
    codes = tuple(p.returncode if p.returncode is not None else -signal.SIGKILL for p in procs)
    records = _count_records(json_path, offset)
    outcome = RunOutcome(codes, json_path, records, seconds, timed_out, log_dir, stopped)
    if outcome.failed or timed_out:
        for rank in outcome.failed[:4]:
            tail = _tail(log_dir / f"rank{rank}.log")
            if tail:
                echo(
                    f"netlab: rank {rank} ({commands[rank].host}) exited {codes[rank]}; last lines of its log:\n{tail}"
                )
    else:
        shutil.rmtree(log_dir, ignore_errors=True)
        outcome = RunOutcome(codes, json_path, records, seconds, timed_out, None, stopped)
    return outcome


def busy_pids(namespaces: Sequence[str]) -> list[int]:
    """Processes that live in ``namespaces`` (an earlier run's ranks, a probe), this one excepted."""
    from .system import netns_pids

    me = os.getpid()
    return sorted({pid for ns in namespaces for pid in netns_pids(ns)} - {me})


def refuse_busy(prefix: str, namespaces: Sequence[str]) -> None:
    """A one-line :class:`NetlabError` when processes already live in the lab's namespaces: a run never
    starts beside an older run's ranks (their port, their CPU, their records in the JSON file)."""
    pids = busy_pids(namespaces)
    if pids:
        shown = ", ".join(map(str, pids[:8])) + (", ..." if len(pids) > 8 else "")
        raise NetlabError(
            f"prefix {prefix!r}: {len(pids)} process(es) of an earlier run still live in the lab's namespaces "
            f"(pids {shown}); wait for them to end or run `collsim netlab down --prefix {prefix}`"
        )


def _wait(procs: list[subprocess.Popen[bytes]], deadline: float, grace: float) -> bool:
    """Wait for the ranks; True when the deadline passed first."""
    ending_at: float | None = None
    while True:
        codes = [p.poll() for p in procs]
        if all(code is not None for code in codes):
            return False
        now = time.monotonic()
        if ending_at is None and (codes[0] is not None or any(code not in (None, 0) for code in codes)):
            ending_at = now + grace
        if ending_at is not None and now >= ending_at:
            return False
        if now >= deadline:
            return True
        time.sleep(0.05)


def _stop(procs: list[subprocess.Popen[bytes]], wait: float = 3.0) -> None:
    """Terminate, then kill, the process group of every rank while anything in it lives; reap all."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        groups = [p for p in procs if _group_alive(p)]
        if not groups:
            return
        for p in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_group_alive(p) for p in groups):
            time.sleep(0.05)


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    """Whether anything of the process group ``proc`` leads still runs (reaping ``proc`` itself)."""
    proc.poll()
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _count_records(path: Path, offset: int) -> int:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return sum(1 for line in fh if line.strip())
    except FileNotFoundError:
        return 0


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join("    " + line for line in text.splitlines()[-lines:])
