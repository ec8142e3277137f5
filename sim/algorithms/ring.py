"""Ring all-reduce: a reduce-scatter then an all-gather around the ranks, in chunks of n/p.

Schedule (rank r, successor r+1, predecessor r-1, all mod p): in step s = 0..p-2 of the reduce-scatter,
r sends chunk (r - s) to r+1, receives chunk (r - s - 1) from r-1 and adds it to its own; after p-1 steps
r holds chunk (r + 1) fully reduced. The all-gather then passes the reduced chunks around for p-1 more
steps, each rank overwriting the chunk it receives. A rank starts a step when its previous send has
left and its previous receive (and reduction) is done.

Cost on an uncongested star (every step is one α-β message of n/p bytes, and a reduction of n/p):

    T = 2(p-1)·α + 2·(p-1)/p·n·β + (p-1)/p·n·γ
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import PositiveInt

from ..program import Step, StepProgram
from ..runtime import Job
from ..schema import Spec
from .base import Algorithm
from .registry import register

__all__ = [
    "RingAllReduce",
    "ring_allgather",
    "ring_order",
    "ring_program",
    "ring_reduce_scatter",
    "ring_steps",
    "rings_steps",
]


def ring_reduce_scatter(
    job: Job, order: Sequence[int], i: int, segments: Sequence[Any], chunk: float, tag: int = 0
) -> Generator[Any, Any, None]:
    """Rank ``order[i]``'s part of a ring reduce-scatter over the ranks ``order``.

    ``segments[k]`` is the data-check segment of chunk ``k`` (``len(segments) == len(order)``); each
    chunk is ``chunk`` bytes. Ends with ``order[i]`` holding chunk ``(i + 1) % len(order)`` reduced.
    """
    q = len(order)
    me, nxt, prv = order[i], order[(i + 1) % q], order[(i - 1) % q]
    data = job.data
    for s in range(q - 1):
        sent = job.send(me, nxt, chunk, data.take(me, segments[(i - s) % q]), tag + s)
        got = yield job.recv(me, prv, tag + s)
        yield sent
        yield from job.combine(me, segments[(i - s - 1) % q], got, chunk)


def ring_allgather(
    job: Job, order: Sequence[int], i: int, segments: Sequence[Any], chunk: float, tag: int = 0, first: int = 1
) -> Generator[Any, Any, None]:
    """Rank ``order[i]``'s part of a ring all-gather: it starts holding chunk ``(i + first) % q`` and
    ends holding all ``q`` chunks."""
    q = len(order)
    me, nxt, prv = order[i], order[(i + 1) % q], order[(i - 1) % q]
    data = job.data
    for s in range(q - 1):
        sent = job.send(me, nxt, chunk, data.take(me, segments[(i + first - s) % q]), tag + s)
        got = yield job.recv(me, prv, tag + s)
        yield sent
        data.put(me, segments[(i + first - s - 1) % q], got)


class RingOptions(Spec):
    order: Literal["auto", "rank", "rail"] = "auto"
    channels: PositiveInt = 1


def ring_order(cluster: Any, p: int, mode: str = "auto") -> list[int]:
    """The ring's order of ranks 0..p-1.

    ``rank`` is rank order. ``rail`` groups ranks by host (hosts in order of their first rank) and walks
    each host's ranks up on even hosts and down on odd ones, so that consecutive hosts meet on the same
    local GPU index -- the same rail of a rail-optimized fabric, as NCCL's rings do on DGX systems -- and
    no ring hop between hosts needs a spine. ``auto`` is ``rail`` when some host holds several of the
    ranks, else ``rank``.
    """
    if mode == "rank" or cluster is None:
        return list(range(p))
    hosts: dict[str, list[int]] = {}
    for r in range(p):
        hosts.setdefault(cluster.host_of(r), []).append(r)
    if mode == "auto" and all(len(members) == 1 for members in hosts.values()):
        return list(range(p))
    order: list[int] = []
    for h, members in enumerate(hosts.values()):
        order.extend(members if h % 2 == 0 else members[::-1])
    return order


@register
class RingAllReduce(Algorithm):
    name = "ring"
    collective = "allreduce"
    Options = RingOptions
    summary = "reduce-scatter + all-gather around a ring, chunks of n/p (rail-aligned on multi-GPU hosts)"
    examples = ("ring:order=rank", "ring:order=rail", "ring:channels=3")

    options: RingOptions

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p
        if p == 1:
            return
        if self.options.channels > 1:  # NCCL's channels (sim.nccl.rings)
            from ..nccl.layout import run_program
            from ..nccl.rings import rings_program

            k = self.options.channels
            yield from run_program(job, rings_program(job.net.cluster, p, job.nbytes, k), k * p)
            return
        order = ring_order(job.net.cluster, p, self.options.order)
        segments = list(range(p))
        chunk = job.nbytes / p

        def rank(i: int) -> Generator[Any, Any, None]:
            yield from ring_reduce_scatter(job, order, i, segments, chunk, tag=0)
            yield from ring_allgather(job, order, i, segments, chunk, tag=p)

        yield job.env.all_of([job.env.process(rank(i)) for i in range(p)])

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        """Every step: rank r sends n/p bytes to r+1; in the reduce-scatter half the receiver reduces
        them, in the all-gather half it copies them."""
        if p == 1:
            return None
        if self.options.channels > 1:
            from ..nccl.rings import rings_program

            return rings_program(cluster, p, nbytes, self.options.channels)
        return ring_program(ring_order(cluster, p, self.options.order), nbytes / p, p)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        # with K channels every rank's K actors reduce their chunks side by side (one SM each)
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma / self.options.channels


def ring_steps(
    order: Sequence[int], chunk: float, endpoints: int, seg_off: int = 0, seg_scale: int = 1, seg_width: int = 1
) -> tuple[Step, Step]:
    """The two step patterns of a ring over ``order``: reduce-scatter (reducing) and all-gather.

    In repetition k, ``order[i]`` sends chunk (i - k) mod q while reducing, chunk (i + 1 - k) mod q
    while gathering; chunk c is data-check segments ``[seg_off + seg_scale*c, ... + seg_width)``.
    """
    return rings_steps(np.asarray(order, dtype=np.int64)[None, :], chunk, endpoints, seg_off, seg_scale, seg_width)


def rings_steps(
    orders: np.ndarray,
    chunk: float,
    endpoints: int,
    seg_off: int | np.ndarray = 0,
    seg_scale: int = 1,
    seg_width: int = 1,
) -> tuple[Step, Step]:
    """:func:`ring_steps` for many disjoint rings at once: ``orders[g]`` is ring g's order, and
    ``seg_off`` may differ per ring (an array of one value per ring)."""
    orders = np.asarray(orders, dtype=np.int64)
    rings, q = orders.shape
    src = orders.ravel()
    dst = np.roll(orders, -1, axis=1).ravel()
    pos = np.tile(np.arange(q), rings)
    off = np.repeat(np.broadcast_to(np.asarray(seg_off, dtype=np.int64), (rings,)), q)
    common = dict(endpoints=endpoints, seg_stride=-1, seg_mod=q, seg_off=off, seg_scale=seg_scale, seg_width=seg_width)
    return (
        Step.make(src, dst, chunk, chunk, seg=pos, **common),
        Step.make(src, dst, chunk, 0.0, seg=pos + 1, **common),
    )


def ring_program(
    order: Sequence[int], chunk: float, endpoints: int, seg_off: int = 0, seg_scale: int = 1, seg_width: int = 1
) -> StepProgram:
    """Ring all-reduce over ``order`` in chunks of ``chunk`` bytes, as a step program."""
    q = len(order)
    rs, ag = ring_steps(order, chunk, endpoints, seg_off, seg_scale, seg_width)
    return StepProgram(endpoints, ((rs, q - 1), (ag, q - 1)))
