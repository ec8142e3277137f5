"""One rank of a benchmark run: ``python -m validate [options]``.

It finds its place in the job (torchrun's variables, SLURM's, or the local launcher's), joins the
process group, measures every size of the sweep and, on rank 0, prints nccl-tests' table and appends
one JSON line per size to ``--json FILE``. A collective that fails -- a peer that died, hung past
``--timeout`` or closed its connection -- ends the rank with one line naming the rank, the collective,
the size and the iteration, and exit status 1; bad options end it with status 2.
"""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.errors import CollsimError, ConfigError, RunError, one_line

from .env import STATUS_VAR, RankEnv, rank_env
from .faults import FAULT_VAR, parse_fault
from .nccl_picks import PickLog, debug_environ
from .options import RunnerOptions, check_nccl_forcing, nccl_environ, parse_options
from .status import CONNECTING, DONE, FAILED, IDLE, OWN_ERROR, STARTING, WRONG_RESULTS, NullSlot, RankSlot

__all__ = ["gpus_per_host", "main"]

#: the local launcher's pid, for ranks that must not outlive it
PARENT_VAR = "COLLSIM_VALIDATE_PARENT"


def _die_with_parent() -> None:
    """Under the local launcher: be killed when the launcher dies, whatever kills it (Linux)."""
    parent = os.environ.get(PARENT_VAR)
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != int(parent):  # the launcher is already gone
        os._exit(1)


def gpus_per_host(opts: RunnerOptions, ranks: int) -> int:
    """``--gpus-per-host``, else the GPUs per host of ``--topology`` (when every host has as many), else 1.

    ``--topology`` may also be just a label (a cluster the simulator does not know): that is an error only
    for ``hierarchical``, which needs the grouping.
    """
    if opts.gpus_per_host is not None:
        return opts.gpus_per_host
    if not opts.topology:
        return 1
    from sim.algorithms.registry import parse_algorithm_spec
    from sim.topology import hosts_of, load_graph

    needed = parse_algorithm_spec(opts.algorithm)[0] == "hierarchical"
    try:
        per_host = {len(gpus) for gpus in hosts_of(load_graph(opts.topology)).values()}
    except (CollsimError, OSError) as exc:
        if needed:
            raise ConfigError(f"--topology {opts.topology}: {exc} (or give --gpus-per-host)") from None
        return 1
    if len(per_host) != 1:
        if needed:
            raise ConfigError(f"--topology {opts.topology}: hosts hold different numbers of GPUs; give --gpus-per-host")
        return 1
    return per_host.pop()


def _versions() -> dict[str, Any]:
    import torch

    import sim

    nccl = None
    if torch.cuda.is_available():
        try:
            nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        except (RuntimeError, AttributeError):
            nccl = None
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl,
        "python": platform.python_version(),
        "collsim": sim.__version__,
    }


def environment_record(
    env: RankEnv,
    opts: RunnerOptions,
    backend: str,
    device: str,
    ranks_seen: list[tuple[str, int, str]],
    g: int,
) -> dict[str, Any]:
    """What the run ran on: hosts, ranks, backend, library versions, interface, topology."""
    import torch

    from .device import interface_of, local_address

    hosts = sorted({host for host, _, _ in ranks_seen})
    return {
        "hosts": hosts,
        "ranks": env.world_size,
        "ranks_per_host": {h: sum(1 for host, _, _ in ranks_seen if host == h) for h in hosts},
        "backend": backend,
        "device": device.split(":")[0],
        "launcher": env.launcher,
        "master": f"{env.master_addr}:{env.master_port}",
        "interface": interface_of(backend),
        "local_address": local_address(env.master_addr, env.master_port),
        "topology": opts.topology,
        "gpus_per_host": g,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "timeout_s": opts.timeout,
        "timing": "median over iterations of the slowest rank's time; no barrier between iterations",
        **nccl_in_effect(backend),
        **_versions(),
    }


def nccl_in_effect(backend: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The NCCL algorithm and protocol in effect for NCCL's own collectives: NCCL_ALGO / NCCL_PROTO as set
    (``--nccl-algo`` / ``--nccl-proto`` or the environment), "default" (NCCL's tuner picks per size), or
    None where the backend is not NCCL.

    >>> nccl_in_effect("nccl", {"NCCL_ALGO": "Ring"})
    {'nccl_algo': 'Ring', 'nccl_proto': 'default'}
    >>> nccl_in_effect("gloo", {})
    {'nccl_algo': None, 'nccl_proto': None}
    """
    environ = os.environ if environ is None else environ
    if backend != "nccl":
        return {"nccl_algo": None, "nccl_proto": None}
    return {
        "nccl_algo": environ.get("NCCL_ALGO", "").strip() or "default",
        "nccl_proto": environ.get("NCCL_PROTO", "").strip() or "default",
    }


def _header(
    opts: RunnerOptions, algo_spec: str, env: RankEnv, backend: str, device: str, ranks_seen: list[tuple[str, int, str]]
) -> list[str]:
    from sim.results import nccl_header

    hosts = len({h for h, _, _ in ranks_seen})
    lines = [
        f"# collsim validate: {opts.collective} with {algo_spec}, {env.world_size} ranks on {hosts} host(s), "
        f"{backend} on {device.split(':')[0]}",
        f"# minBytes {opts.sizes[0]} maxBytes {opts.sizes[-1]} step: {opts.stepfactor:g}(factor) "
        f"warmup iters: {opts.warmup} iters: {opts.iters} validation: {int(opts.check)} timeout: {opts.timeout:g} s",
        "# time: median over iterations of the slowest rank's time (no barrier between iterations)",
        "#",
        "# Using devices",
    ]
    for r, (host, pid, dev) in enumerate(ranks_seen):
        lines.append(f"#  Rank {r:2d} Pid {pid:7d} on {host:>10s} device {dev}")
    lines += ["#", nccl_header()]
    return lines


def join(
    env: RankEnv, backend: str | None, device: str | None, timeout: float, slot: RankSlot | NullSlot
) -> tuple[str, str, list[tuple[str, int, str]]]:
    """Pick the backend and device, join the process group, and learn every rank's (host, pid, device)."""
    import torch
    import torch.distributed as dist

    from .device import init_process_group, resolve

    cuda = torch.cuda.is_available()
    backend, device, note = resolve(
        backend,
        device,
        cuda_available=cuda,
        gpus=torch.cuda.device_count() if cuda else 0,
        local_rank=env.local_rank,
        local_world_size=env.local_world_size,
    )
    if note and env.rank == 0:
        print(f"# backend: {note}", file=sys.stderr, flush=True)
    slot.update(CONNECTING)
    init_process_group(env, backend, device, timeout)
    slot.update(IDLE)
    seen: list[Any] = [None] * env.world_size
    dist.all_gather_object(seen, (socket.gethostname(), os.getpid(), device))
    return backend, device, seen


def run_rank(opts: RunnerOptions, env: RankEnv, slot: RankSlot | NullSlot) -> int:
    """Measure every size; returns the exit status (0, or 1 when results were wrong)."""
    from .algorithms import get_algorithm
    from .data import torch_dtype
    from .layout import layout

    p = env.world_size
    algo = get_algorithm(opts.collective, opts.algorithm)
    g = gpus_per_host(opts, p)
    algo.check(p, g)
    if not 0 <= opts.root < p:
        raise ConfigError(f"--root {opts.root} is not a rank (0..{p - 1})")
    layouts = [layout(opts.collective, size, p, opts.dtype) for size in opts.sizes]
    torch_dtype(opts.dtype)
    os.environ.update(nccl_environ(opts))  # before NCCL starts in this process
    picks = None  # rank 0 with --nccl-picks: NCCL's TUNING log, read size by size
    if opts.nccl_picks and env.rank == 0:
        picks = PickLog(Path(tempfile.mkdtemp(prefix="collsim-nccl-log-")))
        os.environ.update(debug_environ(picks.folder))
    try:
        return _measure_all(opts, env, slot, algo, g, layouts, picks)
    finally:
        if picks is not None:
            shutil.rmtree(picks.folder, ignore_errors=True)


def _measure_all(
    opts: RunnerOptions,
    env: RankEnv,
    slot: RankSlot | NullSlot,
    algo: Any,
    g: int,
    layouts: list[Any],
    picks: PickLog | None,
) -> int:
    """Join the group, then measure every size of ``layouts`` (:func:`run_rank`)."""
    import torch.distributed as dist

    from .bench import SizeRun, measure
    from .comm import TorchComm
    from .results import append_jsonl, measurement, table_row

    fault = parse_fault(os.environ.get(FAULT_VAR))
    p = env.world_size
    backend, device, seen = join(env, opts.backend, opts.device, opts.timeout, slot)
    check_nccl_forcing(opts, backend)
    record = environment_record(env, opts, backend, device, seen, g) if env.rank == 0 else {}
    run_id = f"{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}"
    ctx = SizeRun(
        TorchComm(env.rank, p, backend, opts.timeout),
        device,
        opts.root,
        g,
        opts.warmup,
        opts.iters,
        opts.check,
        slot,
        fault,
    )
    if env.rank == 0:
        print("\n".join(_header(opts, algo.spec, env, backend, device, seen)), flush=True)
    results = []
    for index, lay in enumerate(layouts):
        times, wrong = measure(ctx, algo, lay, index)
        if env.rank != 0:
            continue
        # NCCL logs a call's bytes: the whole buffer's, or a rank's part of a gathering collective's
        pick = picks.take(lay.collective, {lay.size_bytes, lay.block * lay.elt}) if picks else None
        m = measurement(
            collective=lay.collective,
            algorithm=algo.spec,
            backend=backend,
            ranks=p,
            size_bytes=lay.size_bytes,
            count=lay.count,
            dtype=opts.dtype,
            root=opts.root,
            times_s=times,
            wrong=wrong,
            warmup=opts.warmup,
            run_id=run_id,
            environment=record,
            nccl_pick=pick,
        )
        results.append(m)
        print(table_row(m), flush=True)
        if picks is not None:
            print(_pick_line(m.nccl_pick, p), flush=True)
        if opts.json:
            append_jsonl(opts.json, m)
    bad = sum(m.wrong or 0 for m in results)
    if env.rank == 0:
        verdict = "N/A" if not opts.check else ("OK" if not bad else "FAILED")
        avg = sum(m.busbw_GBps for m in results) / len(results)
        print(f"# Out of bounds values : {bad} {verdict}\n# Avg bus bandwidth    : {avg:.6g}\n#", flush=True)
    dist.destroy_process_group()
    slot.update(FAILED if bad else DONE, error=WRONG_RESULTS if bad else 0)
    if bad:
        print(f"validate: error: {bad} wrong element(s) in {opts.collective} ({algo.spec})", file=sys.stderr)
    return 1 if bad else 0


def _pick_line(pick: Mapping[str, Any] | None, ranks: int) -> str:
    """The comment line under a size's row that says what NCCL ran (``--nccl-picks 1``).

    >>> _pick_line({"nccl": "NVLSTree/Simple", "calls": 25, "of": 26}, 16)
    '#   NCCL ran: NVLSTree/Simple (25 of 26 calls)'
    >>> _pick_line(None, 1)
    '#   NCCL ran: not logged (one rank: NCCL copies locally without its tuner)'
    """
    if pick is not None:
        return f"#   NCCL ran: {pick['nccl']} ({pick['calls']} of {pick['of']} calls)"
    why = "one rank: NCCL copies locally without its tuner" if ranks == 1 else "no TUNING line for this size"
    return f"#   NCCL ran: not logged ({why})"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m validate``: run this rank; returns its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        from .options import build_parser

        build_parser().print_help()
        return 0
    return rank_main(lambda a, env, slot: run_rank(parse_options(a), env, slot), args)


def rank_main(body: Callable[[Sequence[str], RankEnv, RankSlot | NullSlot], int], argv: Sequence[str] | None) -> int:
    """Run ``body(argv, env, slot)`` as one rank, turning failures into one line and an exit status:
    2 for bad input, 1 for a failed run (then leaving at once: gloo would wait on peers that are gone),
    130 for Ctrl-C."""
    _die_with_parent()
    # every failure is reported as one line of ours; torch's C++ log would add pages of stack traces
    # (set TORCH_CPP_LOG_LEVEL=WARNING to see them)
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    slot: RankSlot | NullSlot = NullSlot()
    try:
        env = rank_env(os.environ)
        if os.environ.get(STATUS_VAR):
            slot = RankSlot(os.environ[STATUS_VAR], env.rank)
        slot.update(STARTING)
        return body(sys.argv[1:] if argv is None else argv, env, slot)
    except KeyboardInterrupt:
        print("validate: interrupted", file=sys.stderr, flush=True)
        return 130
    except RunError as exc:
        kind, peer = getattr(exc, "kind", OWN_ERROR), getattr(exc, "peer", None)
        slot.update(FAILED, peer=-1 if peer is None else peer, error=kind)
        print(f"validate: error: {one_line(exc)}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(1)
    except (CollsimError, OSError) as exc:
        slot.update(FAILED, error=OWN_ERROR)
        print(f"validate: error: {one_line(exc)}", file=sys.stderr, flush=True)
        return 2
