"""The other collectives on a ring, built from :mod:`sim.algorithms.ring`'s reduce-scatter and
all-gather steps (one α-β message of a chunk per step, as in the ring all-reduce).

* all-gather ``ring`` (n = the total gathered, blocks of n/p): p-1 steps of one block::

      T = (p-1)·α + (p-1)/p·n·β

* reduce-scatter ``ring`` (n = the total, blocks of n/p): p-1 steps of one block and its reduction::

      T = (p-1)·α + (p-1)/p·n·β + (p-1)/p·n·γ

* reduce ``ring`` (as gloo does it): a ring reduce-scatter of the buffer in chunks of n/p, then every
  rank sends its reduced chunk straight to the root at once (p-1 flows share the root's link)::

      T = (p-1)·(α + n/p·β + n/p·γ) + α + (p-1)/p·n·β = p·α + 2·(p-1)/p·n·β + (p-1)/p·n·γ

* broadcast ``ring`` (pipelined chain, ``chunks=K``): the root sends K chunks down the chain
  root -> root+1 -> ... ; every rank forwards a chunk once it has it and its previous forward has
  arrived. A chunk needs p-1 hops and a new one leaves the root every hop, so::

      T = (p + K - 2)·(α + n/K·β)

All four are exact on a star for every p: every step's messages use disjoint links, or (the reduce's
last step) start together and share the root's link evenly.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..runtime import Job
from ..schema import Chunks, Spec
from .base import Algorithm
from .flat import fan_in, spread, storing
from .registry import register
from .ring import ring_allgather, ring_reduce_scatter

__all__ = ["RingAllGather", "RingBroadcast", "RingReduce", "RingReduceScatter"]


@register
class RingAllGather(Algorithm):
    name = "ring"
    collective = "allgather"
    summary = "p-1 steps around a ring, one block per step"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p
        if p == 1:
            return
        order, segments = list(range(p)), list(range(p))
        yield spread(job, [ring_allgather(job, order, i, segments, job.nbytes / p, 0, first=0) for i in order])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return (p - 1) * alpha + (p - 1) / p * n * beta


@register
class RingReduceScatter(Algorithm):
    name = "ring"
    collective = "reducescatter"
    summary = "p-1 steps around a ring, one block and its reduction per step"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p
        if p == 1:
            return
        order = list(range(p))
        # the ring leaves rank i with chunk i+1: name chunk k after block k-1 so that it holds block i
        segments = [(k - 1) % p for k in range(p)]
        yield spread(job, [ring_reduce_scatter(job, order, i, segments, job.nbytes / p, 0) for i in order])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return (p - 1) * alpha + (p - 1) / p * n * (beta + gamma)


@register
class RingReduce(Algorithm):
    name = "ring"
    collective = "reduce"
    summary = "ring reduce-scatter, then every rank sends its reduced chunk to the root (gloo)"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, root = job.p, job.root
        if p == 1:
            return
        order = [(root + i) % p for i in range(p)]
        segments = list(range(p))
        chunk = job.nbytes / p
        position = {rank: i for i, rank in enumerate(order)}

        def member(i: int) -> Generator[Any, Any, None]:
            yield from ring_reduce_scatter(job, order, i, segments, chunk, 0)
            if i:
                yield job.send(order[i], root, chunk, job.data.take(order[i], (i + 1) % p), p)

        collect = fan_in(job, root, order[1:], p, storing(job, root, lambda src: (position[src] + 1) % p))
        yield spread(job, [*(member(i) for i in range(p)), collect])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        if p == 1:
            return 0.0
        return p * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma


class ChainOptions(Spec):
    chunks: Chunks = 8


@register
class RingBroadcast(Algorithm):
    name = "ring"
    collective = "broadcast"
    Options = ChainOptions
    summary = "pipelined chain from the root, in `chunks` pieces"
    examples = ("ring:chunks=1", "ring:chunks=3")

    options: ChainOptions

    def segments(self, p: int) -> int:
        return self.options.chunks

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, k = job.p, self.options.chunks
        if p == 1:
            return
        order = [(job.root + i) % p for i in range(p)]
        chunk = job.nbytes / k

        def member(i: int) -> Generator[Any, Any, None]:
            me, sent = order[i], None
            for c in range(k):
                if i:
                    job.data.put(me, c, (yield job.recv(me, order[i - 1], c)))
                if i + 1 < p:
                    if sent is not None:
                        yield sent
                    sent = job.send(me, order[i + 1], chunk, job.data.take(me, c), c)
            if sent is not None:
                yield sent

        yield spread(job, [member(i) for i in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        if p == 1:
            return 0.0
        k = self.options.chunks
        return (p + k - 2) * (alpha + n / k * beta)
