"""Flat (one-to-all and all-to-one) broadcast, gather and scatter, built from the fan-in / fan-out
steps of :mod:`sim.algorithms.common`.

Every message of a flat step starts at once, so on a star the ``q`` flows into (or out of) one host
share its link: the step takes ``α + q·m·β`` for ``q`` messages of ``m`` bytes.

* broadcast ``flat``: the root sends the whole buffer to every other rank at once::

      T = α + (p-1)·n·β

* gather ``flat`` (n = the total gathered): every rank sends its block of n/p to the root at once::

      T = α + (p-1)/p·n·β

* scatter ``flat`` (n = the total scattered): the root sends every rank its block at once::

      T = α + (p-1)/p·n·β
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..runtime import Job
from .base import Algorithm
from .common import fan_in, fan_out, receive_into, spread, storing
from .registry import register

__all__ = ["FlatBroadcast", "FlatGather", "FlatScatter"]


@register
class FlatBroadcast(Algorithm):
    name = "flat"
    collective = "broadcast"
    summary = "the root sends the whole buffer to every rank at once"

    def segments(self, p: int) -> int:
        return 1

    def run(self, job: Job) -> Generator[Any, Any, None]:
        root, others = job.root, [r for r in range(job.p) if r != job.root]
        sends = fan_out(job, root, others, job.nbytes, lambda _d: job.data.take(root, 0), tag=0)
        yield spread(job, [receive_into(job, r, root, 0, 0) for r in others])
        yield job.env.all_of(sends)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 0.0 if p == 1 else alpha + (p - 1) * n * beta


@register
class FlatGather(Algorithm):
    name = "flat"
    collective = "gather"
    summary = "every rank sends its block to the root at once"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        root, others = job.root, [r for r in range(job.p) if r != job.root]
        chunk = job.nbytes / job.p
        sends = [job.send(r, root, chunk, job.data.take(r, r), 0) for r in others]

        yield from fan_in(job, root, others, 0, storing(job, root, lambda src: src))
        yield job.env.all_of(sends)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 0.0 if p == 1 else alpha + (p - 1) / p * n * beta


@register
class FlatScatter(Algorithm):
    name = "flat"
    collective = "scatter"
    summary = "the root sends every rank its block at once"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        root, others = job.root, [r for r in range(job.p) if r != job.root]
        chunk = job.nbytes / job.p
        sends = fan_out(job, root, others, chunk, lambda d: job.data.take(root, d), tag=0)
        yield spread(job, [receive_into(job, r, root, r, 0) for r in others])
        yield job.env.all_of(sends)

    cost = FlatGather.cost  # the mirror image: same time on a star
