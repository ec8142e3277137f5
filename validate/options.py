"""The runner's options: one table read by ``python -m validate`` (argparse) and forwarded by
``collsim validate run``; every option also reads an environment variable ``COLLSIM_*``.

Flags follow nccl-tests (``-b/-e/-f`` sizes, ``-w`` warm-up, ``-n`` iterations, ``-c`` check).
This module does not import torch.

>>> o = parse_options(["-b", "1K", "-e", "8K", "-n", "3", "-a", "tree:chunks=4"], environ={})
>>> o.sizes, o.iters, o.algorithm
((1024, 2048, 4096, 8192), 3, 'tree:chunks=4')
>>> parse_options(["--sizes", "1MiB"], environ={"COLLSIM_ITERS": "7"}).iters
7
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.collectives import DTYPES, get_collective
from sim.errors import ConfigError, one_line
from sim.units import parse_size, parse_size_range, parse_time

__all__ = ["OPTIONS", "RunnerOptions", "build_parser", "options_help", "parse_options"]

#: nccl-tests' default sweep (``-b 32M -e 32M``)
DEFAULT_BYTES = 32 * 2**20


@dataclass(frozen=True)
class RunnerOptions:
    """What one rank runs: a collective and algorithm over a sweep of sizes."""

    collective: str = "allreduce"
    algorithm: str = "ring"
    sizes: tuple[int, ...] = (DEFAULT_BYTES,)
    stepfactor: float = 2.0
    warmup: int = 5
    iters: int = 20
    check: bool = True
    dtype: str = "float"
    root: int = 0
    backend: str | None = None
    device: str | None = None
    json: str | None = None
    timeout: float = 60.0
    topology: str | None = None
    gpus_per_host: int | None = None
    nccl_algo: str | None = None
    nccl_proto: str | None = None
    nccl_picks: bool = False


@dataclass(frozen=True)
class _Option:
    flags: tuple[str, ...]
    dest: str
    env: str
    convert: Callable[[str], Any]
    help: str
    metavar: str


def int_at_least(low: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise ValueError(f"must be >= {low}, got {value}")
        return value

    return convert


def _factor(text: str) -> float:
    value = float(text)
    if not value > 1:
        raise ValueError(f"must be > 1, got {text!r}")
    return value


def _check(text: str) -> bool:
    if text.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if text.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected 0 or 1, got {text!r}")


def _bytes(text: str) -> int:
    value = parse_size(text, "size")
    if value <= 0 or value != int(value):
        raise ValueError(f"expected a whole number of bytes > 0, got {text!r}")
    return int(value)


def _timeout(text: str) -> float:
    value = parse_time(text, "timeout")
    if not value > 0:
        raise ValueError(f"must be > 0 seconds, got {text!r}")
    return value


def _choice(*valid: str) -> Callable[[str], str]:
    def convert(text: str) -> str:
        if text not in valid:
            raise ValueError(f"expected one of {', '.join(valid)}, got {text!r}")
        return text

    return convert


#: NCCL's names for NCCL_ALGO and NCCL_PROTO (``src/graph/tuning.cc``: ``ncclAlgoStr``, ``ncclProtoStr``)
NCCL_ALGOS = ("ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
NCCL_PROTOCOLS = ("ll", "ll128", "simple")


def _nccl_list(valid: tuple[str, ...], what: str) -> Callable[[str], str]:
    """An NCCL_ALGO / NCCL_PROTO value: names separated by commas, optionally after ``^`` (exclude)."""

    def convert(text: str) -> str:
        body = text.strip()
        items = [x.strip() for x in body.lstrip("^").split(",")]
        bad = [x for x in items if x.lower() not in valid]
        if not body or bad:
            raise ValueError(f"unknown NCCL {what} {(bad or [body])[0]!r} (valid: {', '.join(valid)}; ^ excludes)")
        return ("^" if body.startswith("^") else "") + ",".join(items)

    return convert


def _dtype(text: str) -> str:
    if text not in DTYPES:
        raise ValueError(f"unknown type {text!r} (valid: {', '.join(DTYPES)})")
    return text


def _collective(text: str) -> str:
    try:
        return get_collective(text).name
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


OPTIONS: tuple[_Option, ...] = (
    _Option(
        ("--collective",),
        "collective",
        "COLLSIM_COLLECTIVE",
        _collective,
        "allreduce, broadcast, reduce, allgather, reducescatter, gather, scatter, alltoall, sendrecv "
        "(default allreduce)",
        "NAME",
    ),
    _Option(
        ("-a", "--algorithm"),
        "algorithm",
        "COLLSIM_ALGORITHM",
        str,
        "algorithm and options, e.g. ring, tree:chunks=8, builtin (default ring)",
        "SPEC",
    ),
    _Option(
        ("-b", "--minbytes"),
        "minbytes",
        "COLLSIM_MINBYTES",
        _bytes,
        "smallest size, nccl-tests style (1K = 1024 B; default 32M)",
        "SIZE",
    ),
    _Option(("-e", "--maxbytes"), "maxbytes", "COLLSIM_MAXBYTES", _bytes, "largest size (default 32M)", "SIZE"),
    _Option(
        ("-f", "--stepfactor"),
        "stepfactor",
        "COLLSIM_STEPFACTOR",
        _factor,
        "multiply the size by this between steps (default 2)",
        "F",
    ),
    _Option(
        ("--sizes",),
        "sizes",
        "COLLSIM_SIZES",
        str,
        "the sweep as MIN:MAX[:F] or a list a,b,c (instead of -b/-e/-f)",
        "RANGE",
    ),
    _Option(
        ("-w", "--warmup"),
        "warmup",
        "COLLSIM_WARMUP",
        int_at_least(0),
        "warm-up iterations per size, not timed (default 5)",
        "N",
    ),
    _Option(
        ("-n", "--iters"), "iters", "COLLSIM_ITERS", int_at_least(1), "timed iterations per size (default 20)", "N"
    ),
    _Option(
        ("-c", "--check"),
        "check",
        "COLLSIM_CHECK",
        _check,
        "1: verify every timed iteration's result exactly (#wrong); 0: don't (default 1)",
        "0|1",
    ),
    _Option(("-d", "--dtype"), "dtype", "COLLSIM_DTYPE", _dtype, "nccl-tests type name (default float)", "TYPE"),
    _Option(
        ("--root",),
        "root",
        "COLLSIM_ROOT",
        int_at_least(0),
        "root rank of broadcast, reduce, gather, scatter, and master of master-worker (default 0)",
        "RANK",
    ),
    _Option(
        ("--backend",),
        "backend",
        "COLLSIM_BACKEND",
        _choice("gloo", "nccl"),
        "gloo or nccl (default: nccl on CUDA devices, gloo on CPUs)",
        "NAME",
    ),
    _Option(
        ("--device",),
        "device",
        "COLLSIM_DEVICE",
        _choice("cpu", "cuda"),
        "cpu or cuda (default: cuda when GPUs are visible and the backend allows, else cpu)",
        "KIND",
    ),
    _Option(
        ("--json",),
        "json",
        "COLLSIM_JSON",
        str,
        "append one JSON line per size to FILE (rank 0), as each size completes",
        "FILE",
    ),
    _Option(
        ("--timeout",),
        "timeout",
        "COLLSIM_TIMEOUT",
        _timeout,
        "seconds a collective may take before the run ends with an error (default 60)",
        "SECONDS",
    ),
    _Option(
        ("--topology",),
        "topology",
        "COLLSIM_TOPOLOGY",
        str,
        "name of the cluster (recorded; also gives --gpus-per-host)",
        "NAME",
    ),
    _Option(
        ("--gpus-per-host",),
        "gpus_per_host",
        "COLLSIM_GPUS_PER_HOST",
        int_at_least(1),
        "ranks per host for hierarchical (default: from --topology, else 1)",
        "G",
    ),
    _Option(
        ("--nccl-algo",),
        "nccl_algo",
        "COLLSIM_NCCL_ALGO",
        _nccl_list(NCCL_ALGOS, "algorithm"),
        "NCCL_ALGO for the ranks (builtin with the nccl backend): Ring, Tree, NVLS, NVLSTree, ...",
        "ALGO",
    ),
    _Option(
        ("--nccl-proto",),
        "nccl_proto",
        "COLLSIM_NCCL_PROTO",
        _nccl_list(NCCL_PROTOCOLS, "protocol"),
        "NCCL_PROTO for the ranks (builtin with the nccl backend): LL, LL128, Simple",
        "PROTO",
    ),
    _Option(
        ("--nccl-picks",),
        "nccl_picks",
        "COLLSIM_NCCL_PICKS",
        _check,
        "1: record the algorithm and protocol NCCL ran per size, from its TUNING log on rank 0 (builtin with "
        "the nccl backend; a log line per call; default 0)",
        "0|1",
    ),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, no usage dump (arguments may hold line breaks)
        raise ConfigError(one_line(message))


def _argparse_type(opt: _Option) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return opt.convert(text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc) or f"invalid value {text!r}") from None

    convert.__name__ = opt.dest
    return convert


def build_parser(prog: str = "python -m validate") -> argparse.ArgumentParser:
    """The runner's argument parser (defaults are applied by :func:`parse_options`)."""
    parser = _Parser(
        prog=prog,
        description="One rank of a collective benchmark in nccl-tests' style (launch with torchrun, srun "
        "or `collsim validate run --ranks N`).",
        allow_abbrev=False,
    )
    for opt in OPTIONS:
        parser.add_argument(
            *opt.flags,
            dest=opt.dest,
            type=_argparse_type(opt),
            default=None,
            metavar=opt.metavar,
            help=f"{opt.help} [env {opt.env}]",
        )
    return parser


def options_help() -> str:
    """The runner options as lines of text (for ``collsim validate run --help``)."""
    lines = []
    for opt in OPTIONS:
        flags = ", ".join(opt.flags) + f" {opt.metavar}"
        lines.append(f"  {flags:28s} {opt.help} [{opt.env}]")
    return "\n".join(lines)


def parse_options(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> RunnerOptions:
    """Runner options from ``argv``, with ``COLLSIM_*`` environment variables as defaults.

    Raises :class:`~sim.errors.ConfigError` with one line on bad input.
    """
    environ = os.environ if environ is None else environ
    args = vars(build_parser().parse_args(list(argv)))
    given_on_line = {k for k, v in args.items() if v is not None}
    for opt in OPTIONS:
        if args[opt.dest] is None and environ.get(opt.env, "").strip():
            try:
                args[opt.dest] = opt.convert(environ[opt.env].strip())
            except (ValueError, ConfigError) as exc:
                raise ConfigError(f"{opt.env}={environ[opt.env]!r}: {exc}") from None
    range_on_line = bool({"minbytes", "maxbytes", "stepfactor"} & given_on_line)
    if "sizes" in given_on_line and range_on_line:
        raise ConfigError("give --sizes or -b/-e/-f, not both")
    if args["sizes"] is not None and not range_on_line:
        sizes = tuple(parse_size_range(args["sizes"], "--sizes"))
        parts = args["sizes"].split(":")
        factor = float(parts[2]) if len(parts) == 3 else 2.0
    else:
        low = args["minbytes"] or DEFAULT_BYTES
        high = args["maxbytes"] or DEFAULT_BYTES
        factor = args["stepfactor"] or 2.0
        if high < low:
            raise ConfigError(f"-e/--maxbytes {high} is below -b/--minbytes {low}")
        sizes = tuple(parse_size_range(f"{low}:{high}:{factor}", "-b/-e/-f"))
    fields = {k: v for k, v in args.items() if v is not None and k not in ("minbytes", "maxbytes", "sizes")}
    fields["stepfactor"] = factor
    opts = RunnerOptions(sizes=sizes, **fields)
    check_nccl_forcing(opts, opts.backend)
    return opts


def check_nccl_forcing(opts: RunnerOptions, backend: str | None) -> None:
    """``--nccl-algo`` / ``--nccl-proto`` force NCCL's own collectives and ``--nccl-picks`` records what
    they ran: they need ``--algorithm builtin`` and the nccl backend (``backend`` None: not known yet; the
    rank checks again once it is)."""
    if opts.nccl_algo or opts.nccl_proto:
        flag = "--nccl-algo" if opts.nccl_algo else "--nccl-proto"
        reads, does = "sets NCCL_ALGO/NCCL_PROTO, which only the nccl backend reads", "forces NCCL's own collectives"
    elif opts.nccl_picks:
        flag = "--nccl-picks"
        reads, does = (
            "reads NCCL's TUNING log, which only the nccl backend writes",
            "records what NCCL's own collectives ran",
        )
    else:
        return
    if backend is not None and backend != "nccl":
        raise ConfigError(f"{flag}: {reads} (backend: {backend})")
    if opts.algorithm.split(":")[0] != "builtin":
        raise ConfigError(f"{flag}: {does}; use it with --algorithm builtin (got {opts.algorithm!r})")


def nccl_environ(opts: RunnerOptions) -> dict[str, str]:
    """The NCCL variables a rank sets before NCCL starts (``--nccl-algo`` / ``--nccl-proto``)."""
    out = {}
    if opts.nccl_algo:
        out["NCCL_ALGO"] = opts.nccl_algo
    if opts.nccl_proto:
        out["NCCL_PROTO"] = opts.nccl_proto
    return out
