"""One data-parallel training iteration the way PyTorch DDP runs it, on the simulated network.

The model (docs/model.md, "What the real libraries do")::

    t = 0          forward pass                      (forward_s)
    t = F          backward pass starts; it produces gradient bytes at a constant rate over
                   backward_s, in reverse layer order, and fills DDP's buckets in that order:
                   the first bucket holds first_bucket_bytes (1 MiB), the others bucket_bytes
                   (25 MiB), the last one the remainder.
    bucket k ready at  F + B * (bytes in buckets 0..k) / gradient_bytes
                   each bucket's all-reduce (any registered algorithm, PS push/pull included)
                   starts when it is ready -- with ``overlap`` -- or when backward ends -- without --
                   and shares the network with the other buckets in flight.
    iteration = max(F + B, last all-reduce end) + optimizer_s

so the communication that is *exposed* (not hidden behind backward) is
``max(0, last all-reduce end - (F + B))``. Without overlap every bucket starts at F + B and the whole
exchange is exposed.

Everything runs in one :class:`simpy.Environment` with one :class:`~sim.network.Network` on one
:class:`~sim.cluster.Cluster`; every bucket is its own :class:`~sim.runtime.Job` (its own mailboxes), so
concurrent buckets never mix their messages.

**What repeats is simulated once.** The network goes through busy periods: one starts when a bucket
starts on an idle network and ends when the network is idle again as the next bucket starts. What
happens in one depends only on its buckets (sizes and start times), so each is simulated on its own,
on an idle copy of the network in absolute time, and its bytes booked on the iteration's network:

* a bucket that is done before the next one starts has the network to itself: it takes its
  all-reduce's time alone, computed once per bucket size (:func:`isolated_allreduce`, on the fast
  path where the algorithm has one, closed form included). With ``concurrent_buckets=False`` (NCCL's
  single stream) every bucket is such a bucket, and DDP's hundreds of equal 25 MiB buckets cost one or
  two all-reduces;
* buckets that overlap are simulated together (:func:`_busy_period`). Equal buckets at equal spacing
  can reach a steady state -- the buckets in flight when bucket ``i`` starts are in the state those in
  flight when bucket ``i - q`` started were in, shifted in time -- and then the rest of the equal
  buckets repeat whole periods of q buckets: those are not simulated (the steady state is recognised
  on the fast path, with up to 8 buckets in flight and periods of 1 to 8 buckets);
* buckets that overlap more and more (the network cannot keep up with backward: every bucket joins
  one growing busy period) are simulated flow by flow: the buckets in flight really share the links.

``simulate_iteration(..., reuse=False)`` simulates every bucket on one network (the reference the
tests compare with, message by message with ``check=True``).

>>> w = Workload(gradient_bytes=100 * 2**20, forward_s=0.01, backward_s=0.02)
>>> [round(b / 2**20, 3) for b in bucket_sizes(w)]
[1.0, 25.0, 25.0, 25.0, 24.0]
>>> r = simulate_iteration("star:hosts=4,bandwidth=100Gbps,latency=1us", "ring", w)
>>> r.buckets, round(r.iteration_s * 1e3, 3), r.exposed_fraction < 0.5
(5, 33.032, True)
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import simpy

from . import deadline as _deadline
from .algorithms import Algorithm
from .classes import FanExecutor, fan_plan
from .cluster import Cluster
from .errors import ConfigError, RunError
from .fastpath import FastExecutor
from .linkmodel import LinkModel
from .network import Network
from .prepare import Run, prepare
from .results import LinkUse
from .runtime import DataCheck, Job
from .simulate import new_environment

__all__ = [
    "BucketTiming",
    "IterationResult",
    "Isolated",
    "Workload",
    "bucket_ready_times",
    "bucket_sizes",
    "isolated_allreduce",
    "simulate_iteration",
]

MiB = 2**20


@dataclass(frozen=True)
class Workload:
    """What one GPU does in one iteration, and how DDP synchronizes it.

    Parameters
    ----------
    gradient_bytes : float
        Bytes of gradients all-reduced per iteration (parameters x bytes per gradient element).
    forward_s, backward_s, optimizer_s : float
        Seconds of compute per GPU for the forward pass, the backward pass and the optimizer step.
    bucket_bytes, first_bucket_bytes : float
        DDP's bucket cap (25 MiB) and the cap of the first bucket (1 MiB).
    overlap : bool
        Start each bucket's all-reduce when backward has produced it (DDP's behaviour); if False,
        every bucket starts when backward ends.
    concurrent_buckets : bool
        False (the default): the buckets are all-reduced one at a time, in order, each as soon as
        backward has produced it and the previous one is done -- NCCL runs a communicator's collectives
        on one stream, and DDP all-reduces through one communicator. True: buckets in flight share the
        network (a backend that runs several collectives at once).
    samples_per_gpu : float
        Samples each GPU processes per iteration (for samples/s).
    """

    gradient_bytes: float
    forward_s: float
    backward_s: float
    optimizer_s: float = 0.0
    bucket_bytes: float = 25 * MiB
    first_bucket_bytes: float = 1 * MiB
    overlap: bool = True
    concurrent_buckets: bool = False
    samples_per_gpu: float = 1.0

    def __post_init__(self) -> None:
        for name in ("gradient_bytes", "bucket_bytes", "first_bucket_bytes", "samples_per_gpu"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"workload.{name}: must be > 0, got {value!r}")
        for name in ("forward_s", "backward_s", "optimizer_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"workload.{name}: must be >= 0 seconds, got {value!r}")
        if bucket_count(self) > 1_000_000:
            raise ConfigError(f"workload: {bucket_count(self):,} buckets is too many; raise bucket_bytes")

    @property
    def compute_s(self) -> float:
        """Forward + backward + optimizer: the iteration with free communication."""
        return self.forward_s + self.backward_s + self.optimizer_s


def bucket_count(w: Workload) -> int:
    """Number of DDP buckets the gradients fill."""
    if w.gradient_bytes <= w.first_bucket_bytes:
        return 1
    return 1 + math.ceil((w.gradient_bytes - w.first_bucket_bytes) / w.bucket_bytes - 1e-12)


def bucket_sizes(w: Workload) -> list[float]:
    """Bucket sizes in the order backward fills them: ``first_bucket_bytes``, then ``bucket_bytes``
    each, the last one the remainder (DDP forms buckets from whole parameters; this model treats the
    gradient as continuous)."""
    sizes = [min(w.first_bucket_bytes, w.gradient_bytes)]
    left = w.gradient_bytes - sizes[0]
    for _ in range(bucket_count(w) - 1):
        sizes.append(min(w.bucket_bytes, left))
        left -= sizes[-1]
    return sizes


def bucket_ready_times(w: Workload) -> list[float]:
    """When backward has produced each bucket (seconds from the start of the iteration)."""
    filled = np.cumsum(bucket_sizes(w))
    ready = w.forward_s + w.backward_s * filled / w.gradient_bytes
    ready[-1] = w.forward_s + w.backward_s  # exactly, whatever the rounding
    return [float(t) for t in ready]


@dataclass(frozen=True)
class BucketTiming:
    """One bucket: its size, when backward produced it, and when its all-reduce ran."""

    size_bytes: float
    ready_s: float
    start_s: float
    end_s: float


@dataclass(frozen=True)
class IterationResult:
    """One simulated training iteration on ``ranks`` GPUs (all times in seconds from its start).

    ``exposed_comm_s`` is the communication not hidden behind backward; ``exposed_fraction`` is its
    share of the iteration. ``bytes_sent`` sums what every rank (servers included) injected;
    ``max_rank_bytes`` is the most one rank sent plus received (a master's or server's hotspot);
    ``link_bytes`` sums the bytes over every link direction (bytes x hops). A link's utilization is its
    bytes / (capacity x iteration time).
    """

    topology: str
    algorithm: str
    ranks: int
    gradient_bytes: float
    buckets: int
    overlap: bool
    forward_s: float
    backward_s: float
    optimizer_s: float
    comm_start_s: float
    comm_end_s: float
    iteration_s: float
    exposed_comm_s: float
    exposed_fraction: float
    samples_per_s: float
    bytes_sent: float
    max_rank_bytes: float
    link_bytes: float
    max_link_utilization: float
    busiest_link: str
    busiest_links: tuple[LinkUse, ...] = field(default=(), repr=False)
    bucket_timings: tuple[BucketTiming, ...] = field(default=(), repr=False)
    wrong: int | None = None
    wall_s: float = 0.0
    events: int = 0
    flows: int = 0

    @property
    def comm_s(self) -> float:
        """From the first all-reduce's start to the last one's end."""
        return self.comm_end_s - self.comm_start_s

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["busiest_links"] = [asdict(link) for link in self.busiest_links]
        out["bucket_timings"] = [asdict(b) for b in self.bucket_timings]
        return out


def simulate_iteration(
    topology: str | os.PathLike[str] | nx.Graph | Cluster,
    algorithm: str | Algorithm,
    workload: Workload,
    *,
    ranks: int | None = None,
    gamma: float | None = None,
    check: bool = False,
    top_links: int = 5,
    timeout: float | None = None,
    link_model: LinkModel | None = None,
    reuse: bool = True,
) -> IterationResult:
    """Simulate one training iteration of ``workload`` on ``ranks`` GPUs with an all-reduce algorithm.

    Parameters
    ----------
    topology : spec, path, graph or Cluster
        The cluster (a Cluster is reused as is, with its route cache). Hosts an algorithm needs beyond
        the ranks (dedicated parameter servers) must be in its graph, as in ``tests/oracle.py``.
    algorithm : str or Algorithm
        An all-reduce algorithm spec (``ring``, ``ps:shards=8,placement=dedicated``, ...).
    workload : Workload
    ranks : int, optional
        Data-parallel GPUs (default: every GPU of the cluster).
    gamma : float, optional
        Seconds per byte of reduction arithmetic (default: the link model's γ, else 0).
    check : bool
        Track every bucket's data symbolically; ``wrong`` counts (bucket, rank) pairs with wrong data.
    timeout : float, optional
        Wall-clock seconds the call may take (see :func:`sim.simulate.simulate`).
    link_model : LinkModel, optional
        See :func:`sim.prepare`.
    reuse : bool
        Move a bucket that has the network to itself through in one step, from its all-reduce's time
        alone, computed once per bucket size (see the module docstring; the same times, to rounding).
    """
    with _deadline.deadline(timeout):
        run = prepare(topology, "allreduce", algorithm, ranks=ranks, gamma=gamma, check=check, link_model=link_model)
        return _simulate_iteration(run, workload, top_links, reuse=reuse and not check)


@dataclass(frozen=True)
class Isolated:
    """One all-reduce alone on an idle network: its duration, the bytes it delivered on every interned
    path (``pids``, ``path_bytes``), its flows and the events it took to simulate; ``arcs``: the bytes
    of messages whose routes were never interned (flow classes built from the fabric's structure,
    :mod:`sim.fanblocks`), per link direction, sent and received per rank."""

    duration_s: float
    pids: np.ndarray
    path_bytes: np.ndarray
    flows: int
    events: int
    arcs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def isolated_allreduce(run: Run, size: float) -> Isolated:
    """``run``'s all-reduce of ``size`` bytes alone on an idle copy of its network (the fast path where
    the algorithm has a step program, its SimPy process otherwise); the path ids are the cluster's own,
    so the bytes can be booked on another network over the same cluster."""
    env = new_environment()
    net = Network(env, run.cluster)
    program = run.algorithm.program(run.ranks, size, run.cluster)
    plan = None if program is not None else fan_plan(run.algorithm, run.ranks, size, run.cluster)
    job = Job(env, net, run.ranks, size, gamma=run.gamma)
    fan: FanExecutor | None = None
    if program is not None:
        done = env.process(FastExecutor(net, program, run.gamma, run.cluster.compute_scale, alone=True).run())
    elif plan is not None:  # the parameter server, master-worker: flow classes (sim.classes)
        fan = FanExecutor(
            net, plan, run.gamma, run.cluster.compute_scale, fallback=lambda: run.algorithm.run(job), paths=True
        )
        done = env.process(fan.run())
    else:
        done = env.process(run.algorithm.run(job))
    env.run(until=done)
    if program is None and job.pending_messages():
        raise RunError(
            f"allreduce {run.algorithm.spec}: {job.pending_messages()} message(s) were sent but never received"
        )
    per_path = net.path_bytes()
    pids = np.flatnonzero(per_path)
    arcs = fan.unpathed() if fan is not None else None
    return Isolated(float(env.now), pids, per_path[pids], net.flows, env.scheduled, arcs)


def _every_bucket(
    run: Run, workload: Workload, env: simpy.Environment, net: Network, jobs: list[Job]
) -> tuple[list[BucketTiming], int]:
    """Every bucket simulated on one shared network (the reference for :func:`_reused_buckets`); the
    message-level jobs (data check) are appended to ``jobs``."""
    cluster, algo, p, gamma, check = run.cluster, run.algorithm, run.ranks, run.gamma, run.check
    sizes = bucket_sizes(workload)
    ready = bucket_ready_times(workload)
    backward_end = workload.forward_s + workload.backward_s
    timings: list[BucketTiming | None] = [None] * len(sizes)
    finished: list[simpy.Event] = []

    def bucket(k: int) -> Generator[simpy.Event, Any, None]:
        start = ready[k] if workload.overlap else backward_end
        yield env.timeout(max(0.0, start - env.now))
        if not workload.concurrent_buckets and k > 0:
            yield finished[k - 1]
        began = env.now
        program = None if check else algo.program(p, sizes[k], cluster)
        if program is not None:
            # the fast path, without jumps: other buckets share the network
            yield env.process(FastExecutor(net, program, gamma, cluster.compute_scale).run())
        else:
            data = DataCheck("allreduce", p, algo.segments_for(p, cluster)) if check else None
            job = Job(env, net, p, sizes[k], gamma=gamma, data=data)
            jobs.append(job)
            yield env.process(algo.run(job))
        timings[k] = BucketTiming(float(sizes[k]), ready[k], float(began), float(env.now))

    for k in range(len(sizes)):
        finished.append(env.process(bucket(k)))
    env.run(until=env.all_of(finished))
    return [t for t in timings if t is not None], env.scheduled


@dataclass(frozen=True)
class BusyPeriod:
    """Buckets that kept the network busy from the first one's start to the last one's end, with the
    network idle before the first started and after the last ended: their sizes, their starts and ends
    relative to the first one's start, the bytes they delivered on every path, their flows and the
    events they took (``skipped``: buckets of a steady state of ``period`` buckets that were not
    simulated, see :func:`_busy_period`). What happens in a busy period depends on its buckets alone (sizes and start
    offsets), never on what came before it."""

    sizes: tuple[float, ...]
    offsets: np.ndarray
    ends: np.ndarray
    pids: np.ndarray
    path_bytes: np.ndarray
    flows: int
    events: int
    skipped: int = 0
    period: int = 0

    @property
    def duration_s(self) -> float:
        return float(self.ends.max())


_PERIODIC_TOL = 1e-10  # relative: states equal to this (times: of the bucket spacing) repeat
_PERIODIC_BUCKETS = 8  # steady states of period 1..8 buckets, looked for while at most 8 are in flight


def _same_state(a: list[tuple[int, float, Any]], b: list[tuple[int, float, Any]], spacing: float) -> bool:
    """Whether two moments of a busy period (each: the buckets in flight, as (index relative to the
    bucket starting, size, executor snapshot with its begin time relative to the moment)) are the same
    state shifted in time."""
    if len(a) != len(b):
        return False
    tol = _PERIODIC_TOL * spacing
    for (ia, sa, (xa, ta)), (ib, sb, (xb, tb)) in zip(a, b, strict=True):
        if ia != ib or sa != sb or xa.s0 != xb.s0 or xa.shape != xb.shape or len(xa.ints) != len(xb.ints):
            return False
        if abs(ta - tb) > tol or not np.array_equal(xa.ints, xb.ints):
            return False
        if not np.allclose(xa.times, xb.times, rtol=0.0, atol=tol):
            return False
        if not np.allclose(xa.amounts, xb.amounts, rtol=_PERIODIC_TOL, atol=_PERIODIC_TOL * sa):
            return False
    return True


def _periodic_run(sizes: list[float], starts: np.ndarray, i: int, q: int) -> int:
    """How many buckets from ``i`` on repeat the ``q`` before it (all of one size, each starting the
    same time after the one before), in whole repetitions of ``q``: the buckets a steady state of
    period ``q`` reached at bucket ``i``'s start skips."""
    size, spacing = sizes[i - q], starts[i - q + 1] - starts[i - q]
    if not spacing > 0:
        return 0  # buckets that start together (no overlap with backward) never repeat a state

    def regular(m: int) -> bool:
        return m + 1 < len(sizes) and sizes[m] == size and abs(starts[m + 1] - starts[m] - spacing) <= 1e-12 * spacing

    if not all(regular(m) for m in range(i - q, i)):
        return 0
    m = i
    while regular(m):
        m += 1
    return (m - i) // q * q


def _busy_period(run: Run, sizes: list[float], starts: np.ndarray, k: int) -> BusyPeriod:
    """Simulate buckets ``k, k+1, ...`` from bucket ``k``'s start on an idle copy of the network, each
    starting at its offset from bucket ``k``'s, until the network is idle when the next one starts.

    Equal buckets at equal spacing can reach a steady state: when the buckets in flight as bucket
    ``i`` starts (all on the fast path, at most 8) are in the state those in flight as bucket ``i - q``
    started were in (q = 1..8), shifted in time -- the same executor and flow states to 1e-10 -- the
    evolution is deterministic, so every later run of q equal buckets at the same spacing repeats the
    intervals of buckets ``i - q .. i - 1``. Those intervals are not simulated: the buckets that ended
    in them give the ends of the skipped ones (shifted by whole periods), their bytes and flows are
    booked again per period, and the simulation goes on from the same state, its buckets renumbered
    and its clock read shifted, as the first bucket after the repeating ones starts."""
    cluster, algo, p, gamma = run.cluster, run.algorithm, run.ranks, run.gamma
    t0 = float(starts[k])
    env = new_environment(t0)  # absolute times: the arithmetic of simulating every bucket
    net = Network(env, cluster)
    running: dict[int, FastExecutor | None] = {}  # live index -> its executor (None: message-level)
    ended: dict[int, float] = {}  # bucket -> end, relative to bucket k's start
    interval_of: dict[int, int] = {}  # bucket -> the bucket whose start came last before it ended
    shift = [0, 0.0, 0]  # buckets and seconds skipped (bucket = live index + shift[0], time = live +
    # shift[1]), and the period
    now_i = [k]
    jobs: list[Job] = []
    skipped = [np.zeros(0), 0, 0]  # path bytes, flows and events of the skipped intervals

    def bucket(live: int, done: simpy.Event) -> Generator[simpy.Event, Any, None]:
        yield done
        del running[live]
        ended[live + shift[0]] = env.now + shift[1] - t0
        interval_of[live + shift[0]] = now_i[0]

    def start(i: int) -> simpy.Process:
        live = i - shift[0]
        program = algo.program(p, sizes[i], cluster)
        if program is not None:
            executor = FastExecutor(net, program, gamma, cluster.compute_scale)
            running[live] = executor
            return env.process(bucket(live, env.process(executor.run())))
        job = Job(env, net, p, sizes[i], gamma=gamma)
        jobs.append(job)
        running[live] = None
        return env.process(bucket(live, env.process(algo.run(job))))

    def state(i: int) -> tuple[list[tuple[int, float, Any]], np.ndarray, int, int] | None:
        if len(running) > _PERIODIC_BUCKETS or any(x is None for x in running.values()):
            return None
        live_now = i - shift[0]
        flight = []
        for live, x in sorted(running.items()):
            assert x is not None
            snap = x.snapshot()
            flight.append((live - live_now, sizes[live + shift[0]], (snap, snap.t0 - env.now)))
        return flight, net.path_bytes(), net.flows, env.scheduled

    history: list[tuple[int, Any]] = []  # the states at the last buckets' starts

    def steady(i: int, now: Any) -> int:
        """The period (in buckets) of a steady state reached at bucket ``i``'s start, 0 if none."""
        for q in range(1, len(history) + 1):
            at, before = history[-q]
            if at != i - q or before is None:
                break
            if _periodic_run(sizes, starts, i, q) and _same_state(now[0], before[0], float(starts[i] - starts[i - q])):
                return q
        return 0

    def jump(i: int, q: int, now: Any) -> int:
        """Skip the whole periods after bucket ``i``'s start; returns the buckets skipped."""
        skip = _periodic_run(sizes, starts, i, q)
        before = history[-q][1]
        repeated = [(b, at) for b, at in interval_of.items() if i - q <= at < i]
        for r in range(1, skip // q + 1):
            for b, at in repeated:
                ended[b + r * q] = ended[b] + float(starts[at + r * q] - starts[at])
        reps = skip // q
        skipped[0] = (now[1] - before[1]) * reps
        skipped[1] = (now[2] - before[2]) * reps
        skipped[2] = (now[3] - before[3]) * reps
        shift[:] = [skip, float(starts[i + skip] - starts[i]), q]
        return skip

    def driver() -> Generator[simpy.Event, Any, None]:
        members = []
        i = k
        while i < len(sizes):
            at = float(starts[i]) - shift[1]
            if at > env.now:
                yield env.timeout(at - env.now)
            if i > k and not running:
                break  # the network went idle before bucket i: the busy period is over
            if shift[0] == 0 and i > k:
                now = state(i)
                q = steady(i, now) if now is not None else 0
                if q:
                    # a steady state of period q: the intervals of buckets i .. i + skip - 1 repeat those
                    # of buckets i - q .. i - 1, shifted by whole periods
                    i += jump(i, q, now)
                else:
                    history.append((i, now))
                    del history[:-_PERIODIC_BUCKETS]
            now_i[0] = i
            members.append(start(i))
            i += 1
        yield env.all_of(members)

    env.run(until=env.process(driver()))
    leftover = sum(job.pending_messages() for job in jobs)
    if leftover:
        raise RunError(f"allreduce {algo.spec}: {leftover} message(s) were sent but never received")
    m = len(ended)
    per_path = net.path_bytes()
    if len(skipped[0]):
        per_path[: len(skipped[0])] += skipped[0]
    pids = np.flatnonzero(per_path)
    return BusyPeriod(
        tuple(sizes[k : k + m]),
        starts[k : k + m] - starts[k],
        np.array([ended[k + j] for j in range(m)]),
        pids,
        per_path[pids],
        net.flows + int(skipped[1]),
        env.scheduled + int(skipped[2]),
        shift[0],
        shift[2],
    )


def _reused_buckets(run: Run, workload: Workload, net: Network) -> tuple[list[BucketTiming], int]:
    """Every bucket's timing, one busy period of the network at a time (see the module docstring): a
    bucket alone from its all-reduce's time alone (once per size), buckets that overlap on an idle copy
    of the network (:func:`_busy_period`). The bytes and flows are booked on ``net``; returns the
    timings and the events simulated."""
    sizes = bucket_sizes(workload)
    ready = bucket_ready_times(workload)
    backward_end = workload.forward_s + workload.backward_s
    starts = np.asarray(ready if workload.overlap else [backward_end] * len(sizes), dtype=float)
    alone: dict[float, Isolated] = {}
    booked: Counter[float] = Counter()  # buckets of each size done alone: booked once, times their count
    timings: list[BucketTiming] = []
    events = 0
    k = 0
    previous_end = -np.inf
    while k < len(sizes):
        solo = alone.get(sizes[k])
        if solo is None:
            solo = alone[sizes[k]] = isolated_allreduce(run, sizes[k])
        if not workload.concurrent_buckets:
            # one at a time: a bucket starts when it is ready and the one before has ended
            began = max(float(starts[k]), previous_end)
            previous_end = began + solo.duration_s
            booked[sizes[k]] += 1
            events += solo.events
            timings.append(BucketTiming(float(sizes[k]), ready[k], began, previous_end))
            k += 1
            continue
        t0 = float(starts[k])
        if k + 1 == len(sizes) or t0 + solo.duration_s <= starts[k + 1]:
            booked[sizes[k]] += 1
            events += solo.events
            timings.append(BucketTiming(float(sizes[k]), ready[k], t0, t0 + solo.duration_s))
            k += 1
            continue
        period = _busy_period(run, sizes, starts, k)
        net.account(period.pids, period.path_bytes, period.flows)
        events += period.events
        for i, end in enumerate(period.ends.tolist()):
            timings.append(BucketTiming(float(sizes[k + i]), ready[k + i], float(starts[k + i]), t0 + end))
        k += len(period.sizes)
    for size, count in booked.items():  # (5,341 buckets of a 70B job: three bookings, not 5,341)
        solo = alone[size]
        net.account(solo.pids, solo.path_bytes * count, solo.flows * count)
        if solo.arcs is not None:
            net.account_arcs(*(part * count for part in solo.arcs), 0)
    return timings, events


def _simulate_iteration(run: Run, workload: Workload, top_links: int, *, reuse: bool = False) -> IterationResult:
    started = time.perf_counter()
    cluster, algo, p, check = run.cluster, run.algorithm, run.ranks, run.check
    env = new_environment()
    net = Network(env, cluster)
    sizes = bucket_sizes(workload)
    backward_end = workload.forward_s + workload.backward_s
    jobs: list[Job] = []
    if reuse:
        done, events = _reused_buckets(run, workload, net)
    else:
        done, events = _every_bucket(run, workload, env, net, jobs)
    leftover = sum(job.pending_messages() for job in jobs)
    if leftover:
        raise RunError(f"allreduce {algo.spec}: {leftover} message(s) were sent but never received")
    comm_start = min(t.start_s for t in done)
    comm_end = max(max(t.end_s for t in done), backward_end)
    iteration = comm_end + workload.optimizer_s
    exposed = comm_end - backward_end
    arc_bytes = net.arc_bytes
    busiest = net.busiest(iteration, top_links, arc_bytes=arc_bytes)
    sent, received = net.rank_bytes()
    traffic = sent + received
    return IterationResult(
        topology=cluster.name,
        algorithm=algo.spec,
        ranks=p,
        gradient_bytes=float(workload.gradient_bytes),
        buckets=len(sizes),
        overlap=workload.overlap,
        forward_s=workload.forward_s,
        backward_s=workload.backward_s,
        optimizer_s=workload.optimizer_s,
        comm_start_s=float(comm_start),
        comm_end_s=float(max(t.end_s for t in done)),
        iteration_s=float(iteration),
        exposed_comm_s=float(exposed),
        exposed_fraction=float(exposed / iteration) if iteration > 0 else 0.0,
        samples_per_s=float(p * workload.samples_per_gpu / iteration) if iteration > 0 else math.inf,
        bytes_sent=float(sent.sum()),
        max_rank_bytes=float(traffic.max()),
        link_bytes=float(arc_bytes.sum()),
        max_link_utilization=busiest[0].utilization if busiest else 0.0,
        busiest_link=busiest[0].link if busiest else "",
        busiest_links=busiest,
        bucket_timings=tuple(done),
        wrong=sum(len(job.data.wrong_ranks()) for job in jobs) if check else None,
        wall_s=time.perf_counter() - started,
        events=events,
        flows=net.flows,
    )
