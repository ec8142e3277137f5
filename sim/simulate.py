"""The simulator's front door: one collective, one algorithm, one size -> a :class:`SimResult`.

>>> r = simulate("star:hosts=4,bandwidth=100Gbps,latency=1us", "allreduce", "ring", 2**20)
>>> round(r.time_s * 1e6, 3), round(r.time_s / r.closed_form_s, 12)
(137.829, 1.0)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator

import networkx as nx
import numpy as np
import simpy

from .algorithms import Algorithm, get_algorithm
from .cluster import Cluster
from .collectives import DTYPES, get_collective
from .errors import ConfigError, RunError
from .network import Network
from .results import LinkUse, SimResult
from .runtime import DataCheck, Job
from .units import parse_size

__all__ = ["CountingEnvironment", "closed_form", "simulate", "sweep"]


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts the events it schedules (the simulator's own cost)."""

    def __init__(self, initial_time: float = 0) -> None:
        super().__init__(initial_time)
        self.scheduled = 0

    def schedule(self, event: simpy.Event, priority: int = 1, delay: float = 0) -> None:  # type: ignore[override]
        self.scheduled += 1
        super().schedule(event, priority, delay)


def _uniform_alpha_beta(cluster: Cluster, p: int) -> tuple[float, float] | None:
    """α, β when every rank pair (as seen from rank 0, both ways) costs the same, else None."""
    if p < 2:
        return None
    first = cluster.alpha_beta(0, 1)
    for d in range(1, p):
        if cluster.alpha_beta(0, d) != first or cluster.alpha_beta(d, 0) != first:
            return None
    if len(set(cluster.overhead[:p].tolist())) != 1:
        return None
    return first


def closed_form(algorithm: Algorithm, cluster: Cluster, p: int, nbytes: float, gamma: float = 0.0) -> float | None:
    """The algorithm's closed form with α, β read off the cluster, where one α-β pair fits all ranks."""
    ab = _uniform_alpha_beta(cluster, p)
    if ab is None:
        return None
    return algorithm.cost(p, nbytes, ab[0], ab[1], gamma)


def simulate(
    topology: str | os.PathLike[str] | nx.Graph | Cluster,
    collective: str = "allreduce",
    algorithm: str | Algorithm = "ring",
    size: float | str = 2**20,
    *,
    ranks: int | None = None,
    dtype: str = "float",
    gamma: float = 0.0,
    root: int = 0,
    check: bool = False,
    check_links: bool = False,
    until: float | None = None,
) -> SimResult:
    """Simulate one collective of ``size`` bytes (nccl-tests' size convention).

    Parameters
    ----------
    topology : spec, path, graph or Cluster
        The cluster (a Cluster is reused as is, with its route cache).
    collective, algorithm : str
        E.g. ``"allreduce"`` and ``"ring"`` (see :func:`sim.algorithms.algorithm_names`).
    size : float or str
        Bytes: the per-rank buffer for all-reduce/broadcast/reduce, the total for the gathering ones.
    ranks : int, optional
        Use the first ``ranks`` GPUs.
    gamma : float
        Seconds per byte of reduction arithmetic.
    check : bool
        Track every contribution symbolically and count the ranks that end with wrong data.
    check_links : bool
        Verify that no link direction ever carries more than its capacity.
    until : float, optional
        Stop with :class:`RunError` if the collective has not finished by this simulated time.
    """
    started = time.perf_counter()
    coll = get_collective(collective)
    # the cluster keeps every GPU: algorithms with servers (dedicated PS) use the hosts beyond the ranks
    cluster = topology if isinstance(topology, Cluster) else Cluster(topology)
    p = cluster.size if ranks is None else ranks
    if p < 1:
        raise ConfigError(f"--ranks must be >= 1, got {p}")
    if p > cluster.size:
        raise ConfigError(f"--ranks {p}: the cluster has only {cluster.size} GPUs")
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r} (valid: {', '.join(DTYPES)})")
    size = parse_size(size) if isinstance(size, str) else float(size)
    if not size > 0 or not np.isfinite(size):
        raise ConfigError(f"size must be > 0 bytes, got {size}")
    if not 0 <= root < p:
        raise ConfigError(f"root {root} is not a rank (0..{p - 1})")
    if not gamma >= 0:
        raise ConfigError(f"gamma must be >= 0 s/byte, got {gamma}")
    algo = get_algorithm(coll.name, algorithm)
    algo.check(p, cluster)

    env = CountingEnvironment()
    net = Network(env, cluster, check=check_links)
    data = DataCheck(coll.name, p, algo.segments(p), root) if check else None
    job = Job(env, net, p, size, gamma=gamma, root=root, data=data)
    done = env.process(algo.run(job))
    env.run(until=done if until is None else env.any_of([done, env.timeout(until)]))
    if not done.triggered:
        raise RunError(f"{coll.name} {algo.spec} did not finish within {until} simulated seconds")
    if job.pending_messages():
        raise RunError(f"{coll.name} {algo.spec}: {job.pending_messages()} message(s) were sent but never received")
    elapsed = float(env.now)
    wrong = len(job.data.wrong_ranks()) if check else None

    algbw = size / elapsed / 1e9 if elapsed > 0 else float("inf")
    with np.errstate(divide="ignore", invalid="ignore"):
        drain = net.arc_bytes / cluster.capacity
    top = np.argsort(-drain, kind="stable")[:5]
    busiest = tuple(
        LinkUse(cluster.arc_name(int(a)), float(net.arc_bytes[a]), float(drain[a] / elapsed) if elapsed > 0 else 0.0)
        for a in top
        if net.arc_bytes[a] > 0
    )
    sent, received = job.sent_bytes, job.received_bytes
    return SimResult(
        topology=cluster.name,
        collective=coll.name,
        algorithm=algo.spec,
        ranks=p,
        size_bytes=int(size),
        count=int(size // DTYPES[dtype]),
        dtype=dtype,
        root=root,
        time_s=elapsed,
        algbw_GBps=float(algbw),
        busbw_GBps=float(coll.busbw(algbw, p)),
        link_bytes=float(net.arc_bytes.sum()),
        max_link_utilization=busiest[0].utilization if busiest else 0.0,
        busiest_link=busiest[0].link if busiest else "",
        wrong=wrong,
        closed_form_s=closed_form(algo, cluster, p, size, gamma) if p <= 4096 else None,
        busiest_links=busiest,
        wall_s=time.perf_counter() - started,
        events=env.scheduled,
        flows=net.flows,
        traffic_bytes=float(sent.sum()),
        max_sent_bytes=float(sent.max()),
        max_received_bytes=float(received.max()),
        root_sent_bytes=float(sent[root]),
        root_received_bytes=float(received[root]),
    )


def sweep(
    topology: str | os.PathLike[str] | nx.Graph | Cluster,
    collective: str,
    algorithm: str | Algorithm,
    sizes: Iterable[float],
    *,
    ranks: int | None = None,
    **kwargs: object,
) -> Iterator[SimResult]:
    """:func:`simulate` for each size in turn, sharing one cluster (and its routes)."""
    cluster = topology if isinstance(topology, Cluster) else Cluster(topology)
    for size in sizes:
        yield simulate(cluster, collective, algorithm, size, ranks=ranks, **kwargs)  # type: ignore[arg-type]
