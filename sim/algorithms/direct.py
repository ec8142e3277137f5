"""Send/recv ``direct`` (nccl-tests' sendrecv_perf): every rank sends its buffer to rank+1 and receives
rank-1's, all at once. On a star, exactly for every p::

    T = α + n·β
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..runtime import Job
from .base import Algorithm
from .common import spread
from .registry import register

__all__ = ["DirectSendRecv"]


@register
class DirectSendRecv(Algorithm):
    name = "direct"
    collective = "sendrecv"
    summary = "every rank sends its buffer to rank+1 (and receives rank-1's)"

    def segments(self, p: int) -> int:
        return 1

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p
        if p == 1:
            return

        def member(r: int) -> Generator[Any, Any, None]:
            sent = job.send(r, (r + 1) % p, job.nbytes, job.data.take(r, 0), 0)
            job.data.put(r, 0, (yield job.recv(r, (r - 1) % p, 0)))
            yield sent

        yield spread(job, [member(r) for r in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 0.0 if p == 1 else alpha + n * beta
