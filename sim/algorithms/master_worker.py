"""Master-worker all-reduce (seed 003, "Master - Worker 방식"): every worker sends its whole buffer to
the master at once, the master reduces the buffers one after another as they arrive, then sends the
result to every worker at once. The master is rank ``root`` (0 by default).

Cost on a star: the p-1 pushes share the master's link (each drains at B/(p-1)), the master reduces
p-1 buffers of n bytes serially, and the p-1 pulls share the master's link again::

    T = 2α + 2(p-1)·n·β + (p-1)·n·γ

This is exact on a star for every p: all pushes start together and drain at the same rate, so they
arrive together; the reductions then run back to back. Traffic: the master receives and sends
(p-1)·n bytes -- seed 003's "T = (P - 1) * N".
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..classes import FanPlan
from ..runtime import Job
from .base import Algorithm
from .common import fan_in, fan_out, receive_into, spread
from .registry import register

__all__ = ["MasterWorker"]


@register
class MasterWorker(Algorithm):
    name = "master-worker"
    collective = "allreduce"
    summary = "all workers send to the master at once, it reduces and sends the result to all"

    def segments(self, p: int) -> int:
        return 1

    def fan(self, p: int, nbytes: float, cluster: Any, root: int = 0) -> FanPlan:
        return FanPlan(p, (root,), nbytes)

    def run(self, job: Job) -> Generator[Any, Any, None]:
        master = job.root
        workers = [r for r in range(job.p) if r != master]
        n, data = job.nbytes, job.data
        pushes = [job.send(w, master, n, data.take(w, 0), 0) for w in workers]

        def reduce(_src: int, payload: Any) -> Generator[Any, Any, None]:
            yield from job.combine(master, 0, payload, n)

        yield from fan_in(job, master, workers, 0, reduce)
        pulls = fan_out(job, master, workers, n, lambda _w: data.take(master, 0), tag=1)
        yield spread(job, [receive_into(job, w, master, 0, 1) for w in workers])
        yield job.env.all_of(pushes + pulls)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        if p == 1:
            return 0.0
        return 2 * alpha + 2 * (p - 1) * n * beta + (p - 1) * n * gamma
