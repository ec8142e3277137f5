"""``collsim validate run --ranks N``: start N local ranks of ``python -m validate`` and watch them.

The ranks rendezvous on 127.0.0.1 at a free port (or ``--master-port``), in one process group of their
own, with ``OMP_NUM_THREADS=1`` and ``GLOO_SOCKET_IFNAME=lo`` unless the environment says otherwise
(torchrun does the same with threads). Their output is forwarded line by line -- rank 0's table as is,
everything else prefixed ``[rank k]``. Every rank keeps a slot on a shared status board (what it is
doing, since when, where), so that when a rank dies, or stops making progress for longer than
``--timeout``, the launcher stops the whole group and ends with one line that names the culprit and the
collective it was in. Ctrl-C (or SIGTERM) stops the group too; ranks also die with the launcher if it
is killed outright (``PR_SET_PDEATHSIG``). No torch here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from sim.errors import ConfigError, RunError
from sim.lifetime import announce, die_with_parent, interrupt_on_signals

from .env import STATUS_VAR
from .options import RunnerOptions, parse_options
from .rank import PARENT_VAR
from .status import (
    CONNECTING,
    DONE,
    FAILED,
    IN_COLLECTIVE,
    PEER_CLOSED,
    PEER_TIMEOUT,
    STARTING,
    WRONG_RESULTS,
    SlotState,
    create_board,
    read_board,
)

__all__ = ["Job", "conformance_job", "diagnose", "free_port", "launch", "runner_job"]

#: The most ranks one machine's launcher starts: every rank is a Python process with torch (~300 MB), so
#: 256 of them already need ~75 GB; a typo like --ranks 1000000 is refused before anything starts.
MAX_LOCAL_RANKS = 256
#: seconds the ranks get, beyond --timeout, to import torch and join before the launcher gives up
STARTUP_GRACE = 60.0
#: seconds the launcher lets the other ranks report after the first failure
REPORT_GRACE = 2.0
_POLL = 0.05


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_port(port: int, host: str = "127.0.0.1") -> None:
    if not 1 <= port <= 65535:
        raise ConfigError(f"--master-port {port}: not a TCP port (1..65535)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"--master-port {port}: cannot listen on {host}:{port} ({exc.strerror})") from None


def _rank_environ(base: Mapping[str, str], rank: int, ranks: int, port: int, board: str) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith(("TORCHELASTIC_", "SLURM_"))}
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(ranks),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(ranks),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PYTHONUNBUFFERED="1",
    )
    env[STATUS_VAR] = board
    env[PARENT_VAR] = str(os.getpid())
    env.setdefault("OMP_NUM_THREADS", "1")
    if sys.platform.startswith("linux") and any(name == "lo" for _, name in socket.if_nameindex()):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, base.get("PYTHONPATH")]))
    return env


def _forward(stream: IO[bytes], out: IO[str], prefix: str, lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        with lock:
            out.write(prefix + line if prefix else line)
            out.flush()
    stream.close()


def _where(s: SlotState, what: str, warmup: int) -> str:
    if s.state in (0, STARTING, CONNECTING) or s.size_bytes <= 0:
        return f"{what}, while {'starting' if s.state in (0, STARTING) else 'joining the process group'}"
    it = s.iteration
    label = f"warm-up {it + 1}" if 0 <= it < warmup else f"iteration {it - warmup + 1}"
    return f"{what} at {s.size_bytes} B, {label}"


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def diagnose(
    slots: Sequence[SlotState],
    codes: Sequence[int | None],
    what: str,
    warmup: int,
    now: float,
) -> str:
    """One line naming the rank that caused a failed run, from the board and the exit statuses.

    A rank that exited abnormally without having lost a peer died; otherwise a live rank that the
    others timed out on (the one that made the least progress, preferring one outside the collective)
    hung; otherwise the first rank that reported a failure speaks.
    """
    lost_peer = {s.rank for s in slots if s.state == FAILED and s.error in (PEER_TIMEOUT, PEER_CLOSED)}
    died = [r for r, c in enumerate(codes) if c not in (None, 0) and r not in lost_peer]
    wrong = [s.rank for s in slots if s.state == FAILED and s.error == WRONG_RESULTS]
    if died and not (wrong and set(died) <= set(wrong)):
        r = died[0]
        code = codes[r]
        assert code is not None
        also = f" (and rank(s) {', '.join(map(str, died[1:]))})" if len(died) > 1 else ""
        return f"rank {r} {_exit_text(code)} during {_where(slots[r], what, warmup)}{also}; stopped the other ranks"
    finishing = {s.rank for s in slots if s.state == DONE} | set(wrong)
    alive = [r for r, c in enumerate(codes) if c is None and r not in finishing]
    if alive:

        def progress(r: int) -> tuple[int, int, int, float]:
            s = slots[r]
            return (s.state == IN_COLLECTIVE, s.size_bytes, s.iteration, -s.since)

        r = min(alive, key=progress)
        s = slots[r]
        inside = "inside" if s.state == IN_COLLECTIVE else "outside"
        waited = sorted(set(range(len(codes))) - {r})
        return (
            f"rank {r} stopped responding during {_where(s, what, warmup)} ({inside} the collective, no progress "
            f"for {max(0.0, now - s.since):.0f} s); rank(s) {', '.join(map(str, waited))} waited for it"
        )
    if wrong:
        return f"{what}: wrong results (see the #wrong column)"
    failed = [s for s in slots if s.state == FAILED]
    if failed:
        s = min(failed, key=lambda s: s.since)
        peer = f" lost rank {s.peer}" if s.peer >= 0 else " failed"
        return f"rank {s.rank}{peer} during {_where(s, what, warmup)}"
    return f"{what}: the ranks failed (exit statuses {list(codes)})"


def _stop(procs: Sequence[subprocess.Popen[bytes]], groups: set[int]) -> None:
    """SIGTERM the ranks' process groups, then SIGKILL what is left, and reap every rank."""
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(_POLL)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5)


def _validate_up_front(opts: RunnerOptions, ranks: int, environ: Mapping[str, str] | None = None) -> None:
    """Refuse what every rank would refuse, before starting any: each in one line naming the option."""
    from importlib.util import find_spec

    from .faults import FAULT_VAR, parse_fault

    if find_spec("torch") is None:
        raise ConfigError("validate needs torch (pip install 'collsim[validate]')")
    parse_fault((environ or {}).get(FAULT_VAR))
    if opts.json is not None:
        check_output_file(opts.json, "--json")
    if opts.backend == "nccl" or opts.device == "cuda":
        import torch

        from .device import resolve

        available = bool(torch.cuda.is_available())
        gpus = torch.cuda.device_count() if available else 0
        resolve(opts.backend, opts.device, cuda_available=available, gpus=gpus, local_rank=0, local_world_size=ranks)
    from .algorithms import get_algorithm
    from .layout import layout
    from .rank import gpus_per_host

    get_algorithm(opts.collective, opts.algorithm).check(ranks, gpus_per_host(opts, ranks))
    if not 0 <= opts.root < ranks:
        raise ConfigError(f"--root {opts.root} is not a rank (0..{ranks - 1})")
    for size in opts.sizes:
        layout(opts.collective, size, ranks, opts.dtype)
    _check_memory(opts, ranks)


def check_output_file(path: str, option: str) -> None:
    """Refuse, in one line, an output file rank 0 could not append to: a directory, a named pipe or a
    device, a folder that does not exist, no permission."""
    import stat

    if not path.strip():
        raise ConfigError(f"{option}: an empty file name")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ConfigError(f"{option} {path}: no such directory {folder}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ConfigError(f"{option} {path}: cannot create a file in {folder} (permission denied)") from None
        return
    except OSError as exc:
        raise ConfigError(f"{option} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{option} {path}: is a directory, not a file")
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):  # /dev/null is fine; a named pipe would block rank 0
        raise ConfigError(f"{option} {path}: not a regular file")
    if not os.access(path, os.W_OK):
        raise ConfigError(f"{option} {path}: permission denied")


def _check_memory(opts: RunnerOptions, ranks: int) -> None:
    """Refuse a sweep whose buffers cannot fit in this machine's memory, before any rank allocates them.

    Counted low on purpose (two buffers of the size per rank -- the buffer and the copy it is restored
    from -- or one, at the root only, for gather and scatter), so that nothing that fits is refused."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        return
    largest = max(opts.sizes)
    need = largest * (1 if opts.collective in ("gather", "scatter") else 2 * ranks)
    if need > memory:
        raise ConfigError(
            f"sizes up to {largest} B on {ranks} local rank(s) need at least {need / 2**30:.1f} GiB of buffers, "
            f"more than this machine's {memory / 2**30:.1f} GiB of memory"
        )


@dataclass(frozen=True)
class Job:
    """What the launcher runs and how it names it: ``python -m <module> *argv`` (or ``python <module>
    *argv`` when ``module`` is the path of a script)."""

    module: str
    argv: tuple[str, ...]
    what: str
    timeout: float
    warmup: int = 0


def runner_job(ranks: int, argv: Sequence[str], environ: Mapping[str, str]) -> Job:
    """The benchmark (``python -m validate``), refusing up front what every rank would refuse."""
    opts = parse_options(argv, environ)
    _validate_up_front(opts, ranks, environ)
    return Job("validate", tuple(argv), f"{opts.collective} ({opts.algorithm})", opts.timeout, opts.warmup)


def conformance_job(ranks: int, argv: Sequence[str]) -> Job:
    """The conformance check (``python -m validate.conformance``)."""
    from .conformance import _parse

    args = _parse(argv, ranks)
    return Job("validate.conformance", tuple(argv), "the conformance check", args.timeout)


def launch(
    ranks: int,
    argv: Sequence[str] | Job,
    *,
    master_port: int | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run ``python -m validate *argv`` (or a :class:`Job`) as ``ranks`` local ranks; returns 0 or
    raises :class:`~sim.errors.RunError` with the one-line diagnosis."""
    if ranks < 1:
        raise ConfigError(f"--ranks must be >= 1, got {ranks}")
    if ranks > MAX_LOCAL_RANKS:
        raise ConfigError(f"--ranks {ranks}: at most {MAX_LOCAL_RANKS} local ranks on one machine")
    environ = dict(os.environ if environ is None else environ)
    job = argv if isinstance(argv, Job) else runner_job(ranks, argv, environ)
    if master_port is None:
        port = free_port()
    else:
        _check_port(master_port)
        port = master_port
    out, err = stdout or sys.stdout, stderr or sys.stderr
    entry = [job.module] if job.module.endswith(".py") else ["-m", job.module]
    command = [sys.executable, *entry, *job.argv]
    with tempfile.TemporaryDirectory(prefix="collsim-validate-") as tmp, interrupt_on_signals():
        board = create_board(os.path.join(tmp, "board"), ranks)
        procs: list[subprocess.Popen[bytes]] = []
        groups: set[int] = set()
        threads: list[threading.Thread] = []
        lock = threading.Lock()
        try:
            for r in range(ranks):
                env = _rank_environ(environ, r, ranks, port, board)
                try:
                    proc = _spawn(command, env, next(iter(groups)) if groups else 0)
                except PermissionError:  # the group's leader is gone already: a group of its own
                    proc = _spawn(command, env, 0)
                procs.append(proc)
                groups.add(os.getpgid(proc.pid) if proc.poll() is None else proc.pid)
                for stream, sink, prefix in (
                    (proc.stdout, out, "" if r == 0 else f"[rank {r}] "),
                    (proc.stderr, err, f"[rank {r}] "),
                ):
                    t = threading.Thread(target=_forward, args=(stream, sink, prefix, lock), daemon=True)
                    t.start()
                    threads.append(t)
            message = _watch(procs, board, job)
            if message and all(sl.state == DONE for sl in read_board(board, ranks)):
                # every rank reported its work done, after leaving the process group: the results are all
                # written; what failed came on the way out (a library's teardown), so it is a warning
                announce(f"collsim: warning: {message}, after every rank had finished; the results stand", file=err)
                message = None
        except KeyboardInterrupt:
            _stop(procs, groups)
            announce(f"collsim: interrupted: stopped the {len(procs)} rank(s)", file=err)
            raise
        finally:
            if any(p.poll() is None for p in procs):
                _stop(procs, groups)
            for t in threads:
                t.join(timeout=5)
    if message:
        raise RunError(message)
    return 0


def _spawn(command: list[str], env: dict[str, str], group: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        process_group=group,
        preexec_fn=die_with_parent(),  # noqa: PLW1509 - only prctl and getppid, no locks
    )


def _watch(procs: Sequence[subprocess.Popen[bytes]], board: str, job: Job) -> str | None:
    """Wait for the ranks; None when all succeed, else the diagnosis (the ranks are then stopped)."""
    n = len(procs)
    started = time.monotonic()
    limit = job.timeout + max(5.0, 0.25 * job.timeout)  # the ranks' own timeouts fire first
    while True:
        codes = [p.poll() for p in procs]
        if all(c == 0 for c in codes):
            return None
        slots = read_board(board, n)
        now = time.monotonic()
        failed = any(c not in (None, 0) for c in codes)
        stuck = any(s.state == IN_COLLECTIVE and now - s.since > limit for s in slots)
        joining = (
            any(s.state in (0, STARTING, CONNECTING) for s in slots) and now - started > job.timeout + STARTUP_GRACE
        )
        if failed or stuck or joining:
            break
        time.sleep(_POLL)
    deadline = time.monotonic() + REPORT_GRACE
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        slots = read_board(board, n)
        if all(s.state in (FAILED, DONE) or procs[s.rank].poll() is not None for s in slots):
            break
        time.sleep(_POLL)
    slots = read_board(board, n)
    if all(s.state in (FAILED, DONE) for s in slots):  # every rank is on its way out: let them finish
        deadline = time.monotonic() + REPORT_GRACE
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(_POLL)
    codes = [p.poll() for p in procs]
    slots = read_board(board, n)
    return diagnose(slots, codes, job.what, job.warmup, time.monotonic())
