"""All-to-all ``pairwise`` (n = each rank's whole buffer, p blocks of n/p): in step s = 1..p-1 rank r
sends its block for r+s and receives the block from r-s, both before the next step. On a star every
step is one message in and one out of each host, so for every p exactly::

    T = (p-1)·(α + n/p·β)
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..runtime import Job
from .base import Algorithm
from .common import spread
from .registry import register

__all__ = ["PairwiseAllToAll"]


@register
class PairwiseAllToAll(Algorithm):
    name = "pairwise"
    collective = "alltoall"
    summary = "p-1 steps; in step s every rank sends to rank+s and receives from rank-s"

    def segments(self, p: int) -> int:
        return p * p

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, block = job.p, job.nbytes / job.p

        def member(r: int) -> Generator[Any, Any, None]:
            for s in range(1, p):
                dst, src = (r + s) % p, (r - s) % p
                sent = job.send(r, dst, block, job.data.take(r, r * p + dst), s)
                job.data.put(r, src * p + r, (yield job.recv(r, src, s)))
                yield sent

        yield spread(job, [member(r) for r in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return (p - 1) * (alpha + n / p * beta)
