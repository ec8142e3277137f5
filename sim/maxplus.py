"""Contention-free step programs in closed form: the per-step max-plus recurrence.

When no two messages that can be in flight together ever share a link direction, every message drains
alone at the narrowest bandwidth of its path, so its time is its Hockney cost
``d = path latency + sender overhead + bytes / bottleneck``, and the step semantics of
:mod:`sim.program` become a recurrence over per-rank begin times ``B`` (seconds):

    C[m]   = B[src m] + d[m]                                   (message m done)
    F[r]   = max(B[r], max over r's sends and receives of C) + γ·scale[r]·reduced[r]
    B'[r]  = F[r]                                              (the next step begins)

evaluated step by step with numpy over all ranks at once -- a few array operations per step, whatever
the number of ranks, and exactly the times the event-driven engine gives (to rounding).

A program is contention-free on a cluster when every link direction is crossed by the messages of at
most one (sender, receiver) pair in the whole program (messages of one pair never overlap in time: a
rank waits for its sends before its next step) and no pair appears twice in a step. A ring over a star,
a rail-aligned ring over DGX hosts, and the intra-host and per-rail phases of hierarchical all-reduce
are; fan-ins and ECMP collisions are not, and go to the event-driven executor.
"""

from __future__ import annotations

import numpy as np

from .network import Network, _gather_arcs
from .program import Step, StepProgram

__all__ = ["contention_free", "run_maxplus"]


def contention_free(program: StepProgram, net: Network) -> bool:
    """Whether no two messages of ``program`` that can overlap in time share a link direction."""
    pairs = []
    for step, _ in program.phases:
        if len(step):
            pairs.append(step.src * program.endpoints + step.dst)
    if not pairs:
        return True
    keys = np.unique(np.concatenate(pairs))
    src, dst = np.divmod(keys, program.endpoints)
    path_id = net.cluster.path_id
    pids = np.fromiter((path_id(s, d) for s, d in zip(src.tolist(), dst.tolist(), strict=True)), np.int64, len(keys))
    owner, arcs = _gather_arcs(net.cluster.paths, pids)
    if not len(arcs):
        return True
    # each arc must belong to one pair only
    first = np.full(net.cluster.num_arcs, -1, dtype=np.int64)
    first[arcs] = owner
    return bool((first[arcs] == owner).all())


def _isolated_times(step: Step, net: Network) -> np.ndarray:
    """Each message's time alone on its path: latency + sender overhead + bytes / narrowest link."""
    cl = net.cluster
    pids = step.pids(net)
    paths = cl.paths
    overhead = cl.overhead[step.src]
    lens = paths.length[pids]
    d = paths.latency[pids] + overhead
    moving = (lens > 0) & (step.nbytes > 0)
    if moving.any():
        flow, arcs = _gather_arcs(paths, pids[moving])
        starts = np.concatenate(([0], np.cumsum(lens[moving])[:-1]))
        narrowest = np.minimum.reduceat(cl.capacity[arcs], starts)
        d = d.copy()
        d[moving] = (paths.latency[pids[moving]] + overhead[moving]) + step.nbytes[moving] / narrowest
    return d


def _scatter_max(target: np.ndarray, index: np.ndarray, values: np.ndarray, unique: bool) -> None:
    if unique:
        target[index] = np.maximum(target[index], values)
    else:
        np.maximum.at(target, index, values)


def run_maxplus(net: Network, program: StepProgram, gamma: float, scale: np.ndarray, start: float) -> float:
    """Evaluate a contention-free ``program`` begun at ``start``; account its bytes and flows on
    ``net`` and return the time the last rank finishes."""
    e = program.endpoints
    begin = np.full(e, float(start))
    end = start
    for step, times in program.phases:
        if times == 0:
            continue
        d = _isolated_times(step, net)
        src_unique = len(np.unique(step.src)) == len(step)
        dst_unique = len(np.unique(step.dst)) == len(step)
        compute = gamma * scale[:e] * step.reduce_at if gamma > 0 else None
        for _ in range(times):
            done = begin[step.src] + d
            finish = begin.copy()
            _scatter_max(finish, step.src, done, src_unique)
            _scatter_max(finish, step.dst, done, dst_unique)
            if compute is not None:
                finish += compute
            begin = finish
        pids = step.pids(net)
        net.account(pids, step.nbytes * times, len(step) * times)
    end = float(begin.max()) if e else start
    return end
