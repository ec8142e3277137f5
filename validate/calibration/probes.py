"""Calibration probes: ``python -m validate.calibration.probes --topology SPEC [options]``, one rank each.

What calibration fits its link model to, measured with torch.distributed point-to-point like every
validate run (gloo on CPUs, NCCL on GPUs), on representative rank pairs of every link class the topology
has (:mod:`sim.linkclass`):

============  ===================================================================================
test          what one timed iteration is (``time_s`` of a record)
============  ===================================================================================
``pingpong``  ``a`` sends ``n`` bytes to ``b``, ``b`` sends them back; half the round trip (one way)
``stream``    ``a`` sends ``m`` messages of ``n`` bytes to ``b`` back to back, each once the one
              before has left (as a collective's steps follow each other); time per message
``bidir``     the same stream in both directions at once (``a`` to ``b`` and ``b`` to ``a``); time
              per message
``fanin``     ``k`` senders each send ``n`` bytes to one receiver at once; until all have arrived
``fanout``    one sender sends ``n`` bytes to each of ``k`` receivers at once; until all have arrived
``alltoall``  each of ``k + 1`` ranks sends ``n`` bytes to every other, all at once (dense traffic in
              both directions of every link, as a sharded parameter server's push); until all arrived
``reduce``    every rank (``ranks``) adds two local buffers of ``n`` bytes at once (γ under the
              contention collectives see); the slowest rank's time
============  ===================================================================================

A stream sends ``m = clamp(4 MiB / n, 2, 16)`` messages per iteration (``messages`` in the record).

Every iteration starts after a barrier; a record holds the median over the timed iterations of the
slowest involved rank's time. The number of timed iterations adapts to the time a warm-up iteration
took (all ranks agree on it): ``--iters`` at most, ``--min-iters`` at least, about ``--budget``
seconds per probe. Rank 0 appends one JSON line per probe to ``--json`` as soon as it is measured
(``source: "collsim-probe"``); ``collsim validate calibrate --from FILE`` fits them.

The plan is pure and needs no torch:

>>> probes = plan_probes("netlab-2rack", [1024, 2**20], tests=("pingpong", "fanin"))
>>> [(p.test, p.link_class, p.ranks, p.size) for p in probes][:3]
[('pingpong', 'same-switch', (0, 1), 1024), ('pingpong', 'same-switch', (0, 1), 1048576), ('pingpong', 'cross-switch', (0, 2), 1024)]
>>> [(p.link_class, p.ranks) for p in probes if p.test == "fanin"]
[('cross-switch', (0, 2, 3))]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.errors import ConfigError
from sim.units import parse_size_range, parse_time

from ..options import int_at_least
from .inputs import PROBE_TESTS as TESTS

__all__ = ["TESTS", "Probe", "ProbeOptions", "main", "parse_probe_options", "plan_probes"]

SOURCE = "collsim-probe"


@dataclass(frozen=True)
class Probe:
    """One measurement: a test, the link class it exercises, the ranks involved and the size.

    ``ranks``: pingpong, stream and bidir ``(a, b)``; fanin ``(receiver, *senders)``; fanout
    ``(sender, *receivers)``; alltoall the members; reduce the ranks that reduce at once.
    """

    test: str
    link_class: str
    ranks: tuple[int, ...]
    size: int

    @property
    def fan(self) -> int:
        return len(self.ranks) - 1 if self.test in ("fanin", "fanout", "alltoall") else 1


def _fans(peers: int, max_fan: int) -> list[int]:
    """Fan widths to measure: 2, 4, 8, ... and the widest, up to ``max_fan``."""
    top = min(peers, max_fan)
    fans = [k for k in (2, 4, 8, 16, 32) if k < top]
    return [*fans, top] if top >= 2 else []


def plan_probes(
    topology: Any,
    sizes: Sequence[int],
    *,
    ranks: int | None = None,
    tests: Sequence[str] = TESTS,
    max_fan: int = 8,
    fan_min_bytes: int = 256 * 1024,
    fan_max_bytes: int = 4 * 2**20,
) -> list[Probe]:
    """Every probe of a calibration run, in the order every rank runs them."""
    from sim.cluster import Cluster
    from sim.linkclass import classes_of

    cluster = topology if isinstance(topology, Cluster) else Cluster(topology)
    p = cluster.size if ranks is None else ranks
    unknown = sorted(set(tests) - set(TESTS))
    if unknown:
        raise ConfigError(f"--tests: unknown test {unknown[0]!r} (valid: {', '.join(TESTS)})")
    classes = classes_of(cluster, p)
    out: list[Probe] = []
    # bidir and fan tests measure rates relative to one flow: only sizes where bandwidth dominates
    fan_sizes = [s for s in sizes if fan_min_bytes <= s <= fan_max_bytes] or [max(sizes)]
    for test in TESTS:
        if test not in tests:
            continue
        if test == "reduce":
            out += [Probe("reduce", "local", tuple(range(p)), s) for s in sizes]
            continue
        for name, pairs in classes.items():
            if test in ("pingpong", "stream", "bidir"):
                # streams calibrate every size; ping-pong (single messages after an idle link, the
                # reference of the fan tests) is not needed beyond the fan sizes
                chosen = {"stream": sizes, "bidir": fan_sizes}.get(test, [s for s in sizes if s <= fan_max_bytes])
                out += [Probe(test, name, pairs[0], s) for s in chosen or sizes]
                continue
            # the rank with the most peers of this class, as receiver (fanin) or sender (fanout)
            side = 1 if test == "fanin" else 0
            peers: dict[int, list[int]] = {}
            for pair in pairs:
                peers.setdefault(pair[side], []).append(pair[1 - side])
            hub = max(sorted(peers), key=lambda r: len(peers[r]))
            for k in _fans(len(peers[hub]), max_fan):
                out += [Probe(test, name, (hub, *sorted(peers[hub])[:k]), s) for s in fan_sizes]
    return out


# -- options ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeOptions:
    topology: str
    sizes: tuple[int, ...] = tuple(parse_size_range("1KiB:64MiB"))
    tests: tuple[str, ...] = TESTS
    max_fan: int = 8
    fan_min_bytes: int = 256 * 1024
    fan_max_bytes: int = 4 * 2**20
    warmup: int = 1
    iters: int = 40
    min_iters: int = 3
    budget: float = 1.0
    timeout: float = 120.0
    json: str | None = None
    backend: str | None = None
    device: str | None = None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise ConfigError(message)


_ENV = {
    "topology": "COLLSIM_TOPOLOGY",
    "sizes": "COLLSIM_PROBE_SIZES",
    "tests": "COLLSIM_PROBE_TESTS",
    "max_fan": "COLLSIM_PROBE_MAX_FAN",
    "fan_min_bytes": "COLLSIM_PROBE_FAN_MIN_BYTES",
    "fan_max_bytes": "COLLSIM_PROBE_FAN_MAX_BYTES",
    "warmup": "COLLSIM_PROBE_WARMUP",
    "iters": "COLLSIM_PROBE_ITERS",
    "min_iters": "COLLSIM_PROBE_MIN_ITERS",
    "budget": "COLLSIM_PROBE_BUDGET",
    "timeout": "COLLSIM_TIMEOUT",
    "json": "COLLSIM_JSON",
    "backend": "COLLSIM_BACKEND",
    "device": "COLLSIM_DEVICE",
}


def _seconds(text: str) -> float:
    value = parse_time(text, "value")
    if not value > 0:
        raise ValueError(f"must be > 0 seconds, got {text!r}")
    return value


def _tests(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in names if t not in TESTS]
    if bad or not names:
        raise ValueError(f"expected a comma-separated list of {', '.join(TESTS)}, got {text!r}")
    return names


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(parse_size_range(text, "value"))


def _one_size(text: str) -> int:
    sizes = parse_size_range(text, "value")
    if len(sizes) != 1:
        raise ValueError(f"expected one size, got {text!r}")
    return sizes[0]


_CONVERT: dict[str, Any] = {
    "topology": str,
    "sizes": _sizes,
    "tests": _tests,
    "max_fan": int_at_least(2),
    "fan_min_bytes": _one_size,
    "fan_max_bytes": _one_size,
    "warmup": int_at_least(0),
    "iters": int_at_least(1),
    "min_iters": int_at_least(1),
    "budget": _seconds,
    "timeout": _seconds,
    "json": str,
    "backend": str,
    "device": str,
}


def parse_probe_options(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> ProbeOptions:
    """Options from ``argv``, environment variables (``COLLSIM_PROBE_*``) as defaults; one-line errors.

    >>> o = parse_probe_options(["--topology", "netlab-star4", "--sizes", "1KiB:1MiB:32"], environ={})
    >>> o.sizes, o.tests[:2]
    ((1024, 32768, 1048576), ('pingpong', 'stream'))
    """
    environ = os.environ if environ is None else environ
    parser = _Parser(
        prog="python -m validate.calibration.probes", description="One rank of a calibration run.", allow_abbrev=False
    )
    for dest in _CONVERT:
        parser.add_argument("--" + dest.replace("_", "-"), dest=dest, default=None, help=f"[env {_ENV[dest]}]")
    args = vars(parser.parse_args(list(argv)))
    values: dict[str, Any] = {}
    for dest, convert in _CONVERT.items():
        text, where = args[dest], "--" + dest.replace("_", "-")
        if text is None and environ.get(_ENV[dest], "").strip():
            text, where = environ[_ENV[dest]].strip(), _ENV[dest]
        if text is None:
            continue
        try:
            values[dest] = convert(text)
        except (ValueError, ConfigError) as exc:
            raise ConfigError(f"{where}: {str(exc).removeprefix('value: ')}") from None
    if "topology" not in values:
        raise ConfigError("--topology is required: the link classes to probe come from it")
    opts = ProbeOptions(**values)
    if opts.min_iters > opts.iters:
        raise ConfigError(f"--min-iters {opts.min_iters} is above --iters {opts.iters}")
    return opts


# -- measuring (torch from here on) -------------------------------------------------------------


def stream_messages(nbytes: int) -> int:
    """Messages per iteration of a stream: 4 MiB in all, at least 2 and at most 16."""
    return max(2, min(16, (4 * 2**20) // max(1, nbytes)))


def _iterations(first: float, opts: ProbeOptions) -> int:
    if first <= 0:
        return opts.iters
    return max(opts.min_iters, min(opts.iters, int(opts.budget / first)))


class _Runner:
    """Runs probes on one rank (every rank calls :meth:`measure` for every probe, in the same order)."""

    def __init__(self, comm: Any, device: str, rank: int, size: int) -> None:
        import torch

        self.torch = torch
        self.comm = comm
        self.device = device
        self.rank = rank
        self.size = size
        self._bufs: dict[int, Any] = {}

    def buf(self, nbytes: int, which: int = 0) -> Any:
        key = nbytes * 64 + which
        if key not in self._bufs:
            self._bufs[key] = self.torch.ones(max(1, nbytes // 4), dtype=self.torch.float32, device=self.device)
        return self._bufs[key]

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def once(self, probe: Probe) -> float:
        """One iteration of ``probe`` on this rank (0.0 when not involved)."""
        r, ranks, n = self.rank, probe.ranks, probe.size
        if r not in ranks:
            return 0.0
        comm, test = self.comm, probe.test
        self.sync()
        start = time.perf_counter()
        if test == "pingpong":
            a, b = ranks
            peer = b if r == a else a
            if r == a:
                comm.exchange([(self.buf(n), peer, 1)], [])
                comm.exchange([], [(self.buf(n, 1), peer, 2)])
            else:
                comm.exchange([], [(self.buf(n, 1), peer, 1)])
                comm.exchange([(self.buf(n), peer, 2)], [])
        elif test == "stream":
            a, b = ranks
            for _ in range(stream_messages(n)):
                if r == a:
                    comm.exchange([(self.buf(n), b, 6)], [])
                else:
                    comm.exchange([], [(self.buf(n, 1), a, 6)])
        elif test == "bidir":
            peer = ranks[1] if r == ranks[0] else ranks[0]
            for _ in range(stream_messages(n)):
                comm.exchange([(self.buf(n), peer, 3)], [(self.buf(n, 1), peer, 3)])
        elif test == "fanin":
            hub, others = ranks[0], ranks[1:]
            if r == hub:
                comm.exchange([], [(self.buf(n, i + 1), s, 4) for i, s in enumerate(others)])
            else:
                comm.exchange([(self.buf(n), hub, 4)], [])
        elif test == "fanout":
            hub, others = ranks[0], ranks[1:]
            if r == hub:
                comm.exchange([(self.buf(n), d, 5) for d in others], [])
            else:
                comm.exchange([], [(self.buf(n, 1), hub, 5)])
        elif test == "alltoall":
            peers = [q for q in ranks if q != r]
            comm.exchange(
                [(self.buf(n), q, 7) for q in peers], [(self.buf(n, i + 1), q, 7) for i, q in enumerate(peers)]
            )
        else:  # reduce
            self.buf(n).add_(self.buf(n, 1))
        self.sync()
        elapsed = time.perf_counter() - start
        if test in ("stream", "bidir"):
            return elapsed / stream_messages(n)
        return elapsed / 2 if test == "pingpong" else elapsed

    def measure(self, probe: Probe, opts: ProbeOptions) -> list[float]:
        """Warm-up, then the timed iterations; every rank returns the slowest involved rank's times."""
        import torch.distributed as dist

        from ..bench import barrier

        torch = self.torch
        first = 0.0
        for _ in range(max(1, opts.warmup)):
            barrier(self.device)
            first = self.once(probe)
        agreed = torch.tensor([first], dtype=torch.float64, device=self.device)
        dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
        iters = _iterations(float(agreed.item()), opts)
        times = torch.zeros(iters, dtype=torch.float64)
        for i in range(iters):
            barrier(self.device)
            times[i] = self.once(probe)
        times = times.to(self.device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        return [float(t) for t in times.cpu().tolist()]


def _record(
    probe: Probe, times: list[float], opts: ProbeOptions, p: int, backend: str, run_id: str, env: dict[str, Any]
) -> dict[str, Any]:
    return {
        "source": SOURCE,
        "test": probe.test,
        "link_class": probe.link_class,
        "ranks": list(probe.ranks),
        "fan": probe.fan,
        "messages": stream_messages(probe.size) if probe.test in ("stream", "bidir") else 1,
        "size_bytes": probe.size,
        "time_s": statistics.median(times),
        "time_min_s": min(times),
        "times_s": times,
        "iters": len(times),
        "warmup": opts.warmup,
        "world_size": p,
        "backend": backend,
        "topology": opts.topology,
        "run_id": run_id,
        "environment": env,
    }


def run(opts: ProbeOptions, env: Any, slot: Any) -> int:
    """Measure every probe of the plan on this rank; rank 0 prints and appends the records."""
    import json

    import torch.distributed as dist

    from ..comm import TorchComm
    from ..options import RunnerOptions
    from ..rank import environment_record, join
    from ..status import DONE

    p = env.world_size
    probes = plan_probes(
        opts.topology,
        opts.sizes,
        ranks=p,
        tests=opts.tests,
        max_fan=opts.max_fan,
        fan_min_bytes=opts.fan_min_bytes,
        fan_max_bytes=opts.fan_max_bytes,
    )
    if not probes:
        raise ConfigError(f"{opts.topology}: nothing to probe with {p} rank(s)")
    backend, device, seen = join(env, opts.backend, opts.device, opts.timeout, slot)
    record_env = (
        environment_record(env, RunnerOptions(topology=opts.topology, timeout=opts.timeout), backend, device, seen, 1)
        if env.rank == 0
        else {}
    )
    run_id = f"probe-{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}"
    comm = TorchComm(env.rank, p, backend, opts.timeout)
    runner = _Runner(comm, device, env.rank, p)
    if env.rank == 0:
        print(f"# collsim probes: {len(probes)} probes on {p} ranks of {opts.topology}, {backend} on {device}")
        print(f"# {'test':9s} {'class':13s} {'fan':>3s} {'size (B)':>10s} {'time (us)':>12s} {'iters':>5s}  ranks")
    for probe in probes:
        comm.where = f"probe {probe.test} ({probe.link_class}) of {probe.size} B between ranks {list(probe.ranks)}"
        times = runner.measure(probe, opts)
        if env.rank != 0:
            continue
        rec = _record(probe, times, opts, p, backend, run_id, record_env)
        print(
            f"  {probe.test:9s} {probe.link_class:13s} {probe.fan:3d} {probe.size:10d} {rec['time_s'] * 1e6:12.1f} "
            f"{len(times):5d}  {list(probe.ranks)}",
            flush=True,
        )
        if opts.json:
            line = json.dumps(rec, allow_nan=False) + "\n"
            with open(opts.json, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
    dist.destroy_process_group()
    slot.update(DONE)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m validate.calibration.probes``: run this rank; returns its exit status."""
    from ..rank import rank_main

    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        print(__doc__)
        return 0
    return rank_main(lambda a, env, slot: run(parse_probe_options(a), env, slot), args)


if __name__ == "__main__":
    raise SystemExit(main())
