"""One data-parallel training iteration the way PyTorch DDP runs it, on the simulated network.

The model (../shared/docs/model.md, "What the real libraries do")::

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

**What repeats is simulated once.** A bucket that starts on an idle network and is done before the next
bucket starts has the network to itself, so its all-reduce takes exactly what it takes alone. Such a
bucket is not simulated again: its time alone (and the bytes it puts on every path) is computed once
per bucket size (:func:`isolated_allreduce`, on the fast path where the algorithm has one, closed form
included) and the bucket is moved through in one step. Buckets that overlap others run on the shared
network as before. DDP's hundreds of equal 25 MiB buckets then cost one or two all-reduces whenever the
network keeps up with backward, and always with ``concurrent_buckets=False`` (NCCL's single stream).
``simulate_iteration(..., reuse=False)`` simulates every bucket (the reference the tests compare with).

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
        Buckets in flight share the network (True); False all-reduces them one at a time in order,
        as NCCL's single communication stream does.
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
    concurrent_buckets: bool = True
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
    path (``pids``, ``path_bytes``), its flows and the events it took to simulate."""

    duration_s: float
    pids: np.ndarray
    path_bytes: np.ndarray
    flows: int
    events: int


def isolated_allreduce(run: Run, size: float) -> Isolated:
    """``run``'s all-reduce of ``size`` bytes alone on an idle copy of its network (the fast path where
    the algorithm has a step program, its SimPy process otherwise); the path ids are the cluster's own,
    so the bytes can be booked on another network over the same cluster."""
    env = new_environment()
    net = Network(env, run.cluster)
    program = run.algorithm.program(run.ranks, size, run.cluster)
    plan = None if program is not None else fan_plan(run.algorithm, run.ranks, size, run.cluster)
    job = Job(env, net, run.ranks, size, gamma=run.gamma)
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
    return Isolated(float(env.now), pids, per_path[pids], net.flows, env.scheduled)


def _simulate_iteration(run: Run, workload: Workload, top_links: int, *, reuse: bool = False) -> IterationResult:
    started = time.perf_counter()
    cluster, algo, p, gamma, check = run.cluster, run.algorithm, run.ranks, run.gamma, run.check

    env = new_environment()
    net = Network(env, cluster)
    sizes = bucket_sizes(workload)
    ready = bucket_ready_times(workload)
    backward_end = workload.forward_s + workload.backward_s
    jobs: list[Job] = []
    timings: list[BucketTiming | None] = [None] * len(sizes)
    finished: list[simpy.Event] = []
    alone: dict[float, Isolated] = {}
    busy = [0]  # buckets simulated on the shared network, in flight now
    skipped = [0]  # events of the isolated runs that stood in for buckets

    def next_start(k: int) -> float:
        """The earliest the bucket after ``k`` can start (inf: none, or not before ``k`` ends)."""
        if k + 1 == len(sizes) or not workload.concurrent_buckets:
            return np.inf
        return ready[k + 1] if workload.overlap else backward_end

    def bucket(k: int) -> Generator[simpy.Event, Any, None]:
        start = ready[k] if workload.overlap else backward_end
        yield env.timeout(max(0.0, start - env.now))
        if not workload.concurrent_buckets and k > 0:
            yield finished[k - 1]
        began = env.now
        if reuse and busy[0] == 0:
            solo = alone.get(sizes[k])
            if solo is None:
                solo = alone[sizes[k]] = isolated_allreduce(run, sizes[k])
            if began + solo.duration_s <= next_start(k):
                # the network is idle and stays the bucket's own until it ends: its time alone
                net.account(solo.pids, solo.path_bytes, solo.flows)
                skipped[0] += solo.events
                yield env.timeout(solo.duration_s)
                timings[k] = BucketTiming(float(sizes[k]), ready[k], float(began), float(env.now))
                return
        busy[0] += 1
        program = None if check else algo.program(p, sizes[k], cluster)
        if program is not None:
            # the fast path, without jumps: other buckets share the network
            yield env.process(FastExecutor(net, program, gamma, cluster.compute_scale).run())
        else:
            data = DataCheck("allreduce", p, algo.segments_for(p, cluster)) if check else None
            job = Job(env, net, p, sizes[k], gamma=gamma, data=data)
            jobs.append(job)
            yield env.process(algo.run(job))
        busy[0] -= 1
        timings[k] = BucketTiming(float(sizes[k]), ready[k], float(began), float(env.now))

    for k in range(len(sizes)):
        finished.append(env.process(bucket(k)))
    env.run(until=env.all_of(finished))
    leftover = sum(job.pending_messages() for job in jobs)
    if leftover:
        raise RunError(f"allreduce {algo.spec}: {leftover} message(s) were sent but never received")
    done = [t for t in timings if t is not None]
    comm_start = min(t.start_s for t in done)
    comm_end = max(max(t.end_s for t in done), backward_end)
    iteration = comm_end + workload.optimizer_s
    exposed = comm_end - backward_end
    busiest = net.busiest(iteration, top_links)
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
        link_bytes=float(net.arc_bytes.sum()),
        max_link_utilization=busiest[0].utilization if busiest else 0.0,
        busiest_link=busiest[0].link if busiest else "",
        busiest_links=busiest,
        bucket_timings=tuple(done),
        wrong=sum(len(job.data.wrong_ranks()) for job in jobs) if check else None,
        wall_s=time.perf_counter() - started,
        events=env.scheduled + skipped[0],
        flows=net.flows,
    )
