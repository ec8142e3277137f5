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

A program is contention-free on a cluster when every link direction is crossed only by messages of one
sender, at most one per step: a rank waits for its sends before its next step, so its messages never
overlap in time, while messages of different senders might. A ring over a star, a rail-aligned ring over
DGX hosts, and the intra-host and per-rail phases of hierarchical all-reduce are contention-free; fan-ins
(trees, parameter servers), partners that take turns sending into one rank (halving-doubling) and ECMP
collisions are not, and go to the event-driven executor.
"""

from __future__ import annotations

import numpy as np

from ._arrays import all_distinct, distinct
from .deadline import check as check_deadline
from .network import Network
from .program import Step, StepProgram
from .rates import gather_arcs

__all__ = ["contention_free", "run_maxplus"]


def contention_free(program: StepProgram, net: Network) -> bool:
    """Whether every link direction is crossed only by one sender's messages, at most one per step
    (and the link model does not make a direction's capacity depend on the traffic around it)."""
    if net.cluster.message_model.shares:
        return False
    owner = np.full(net.cluster.num_arcs, -1, dtype=np.int64)  # the one sender crossing each direction
    for step, _ in program.phases:  # phase by phase, to stop at the first conflict
        if not len(step):
            continue
        flow, arcs = gather_arcs(net.cluster.paths, step.pids(net))
        src = step.src[flow]
        if not all_distinct(arcs):
            return False  # two messages of one step on one link direction
        held = owner[arcs]
        if ((held >= 0) & (held != src)).any():
            return False
        owner[arcs] = src
    return True


def _isolated_times(step: Step, net: Network) -> np.ndarray:
    """Each message's time alone on its path: latency + sender overhead + bytes / narrowest link."""
    cl = net.cluster
    pids = step.pids(net)
    paths = cl.paths
    lens = paths.length[pids]
    delay, wire = cl.message_model.many(pids, step.src, step.nbytes)  # as the engine applies it
    d = delay
    moving = (lens > 0) & (step.nbytes > 0)
    if moving.any():
        flow, arcs = gather_arcs(paths, pids[moving])
        starts = np.concatenate(([0], np.cumsum(lens[moving])[:-1]))
        narrowest = np.minimum.reduceat(cl.capacity[arcs], starts)
        if step.bound is not None:
            narrowest = np.minimum(narrowest, step.bound[moving])
        d = d.copy()
        d[moving] = delay[moving] + wire[moving] / narrowest
    return d


def _scatter_max(target: np.ndarray, index: np.ndarray, values: np.ndarray, unique: bool) -> None:
    if unique:
        target[index] = np.maximum(target[index], values)
    else:
        np.maximum.at(target, index, values)


def run_maxplus(net: Network, program: StepProgram, gamma: float, scale: np.ndarray, start: float) -> float:
    """Evaluate a contention-free ``program`` begun at ``start``; account its bytes and flows on
    ``net`` and return the time the last rank finishes.

    A repeated step is a max-plus map ``f`` that is homogeneous (f(B + λ) = f(B) + λ) and does not
    expand differences. So once one repetition adds the same λ to every rank taking part (ranks idle in
    the step keep their times), every later one does too, and the remaining repetitions are added in
    one move: the answer is the step-by-step one to within the rounding of the detected λ.
    """
    e = program.endpoints
    begin = np.full(e, float(start))
    for step, times in program.phases:
        if times == 0:
            continue
        d = _isolated_times(step, net)
        src_unique = all_distinct(step.src)
        dst_unique = all_distinct(step.dst)
        compute = gamma * scale[:e] * step.reduce_at if gamma > 0 else None
        members = distinct(np.concatenate([step.src, step.dst])) if times > 2 else None
        k = 0
        while k < times:
            check_deadline()
            done = begin[step.src] + d
            finish = begin.copy()
            _scatter_max(finish, step.src, done, src_unique)
            _scatter_max(finish, step.dst, done, dst_unique)
            if compute is not None:
                finish += compute
            k += 1
            if members is not None and k < times:
                rise = finish[members] - begin[members]
                lam = float(rise.max())
                if lam - float(rise.min()) <= 1e-12 * max(lam, 1e-300):
                    finish[members] += (times - k) * lam
                    k = times
            begin = finish
        pids = step.pids(net)
        net.account(pids, step.nbytes * times, len(step) * times)
    return float(begin.max()) if e else start
