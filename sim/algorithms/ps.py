"""Sharded parameter server (synchronous): ``ps:shards=S,placement=colocated|dedicated``.

The buffer is cut into S shards of n/S bytes; server k owns shard k. Every worker pushes shard k to
server k (all S pushes at once), each server reduces the p contributions to its shard one after
another as they arrive (the first it receives from a remote worker is folded into its own copy when
the server is co-located, copied when it is dedicated), then sends the reduced shard back to every
worker (all pulls at once). ``shards`` defaults to one per rank.

* ``colocated`` (BytePS co-located mode): server k runs on rank k's host (S <= p); it keeps its own
  contribution locally. On a star every push and pull drains at B/(p-1) -- each server's link carries
  p-1 flows of n/S, each worker's at most S -- so::

      T = 2α + 2·(p-1)·(n/S)·β + (p-1)·(n/S)·γ

  which for S = p is model.md's 2α + 2·(p-1)/p·n·β + (p-1)/p·n·γ, and for S = 1 is master-worker.
* ``dedicated``: the S servers run on hosts that hold no rank (``--ranks`` smaller than the GPU
  count; one server per such host, in rank order). Each worker's link carries S flows of n/S, each
  server's p, so every flow drains at B/max(p, S)::

      T = 2α + 2·max(1, p/S)·n·β + (p-1)·(n/S)·γ

  (BytePS' max(M/B, n·M/(k·B)) per direction.)

Both are exact on a star for every p: every flow of a phase starts together and drains at one rate.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal, Optional

import numpy as np
from pydantic import PositiveInt

from ..classes import FanPlan
from ..errors import AlgorithmError
from ..runtime import Job
from ..schema import Spec
from .base import Algorithm
from .common import fan_in, fan_out, receive_into, spread
from .registry import register

__all__ = ["ParameterServer", "server_hosts"]


class PSOptions(Spec):
    shards: Optional[PositiveInt] = None
    placement: Literal["colocated", "dedicated"] = "colocated"


def server_hosts(cluster: Any, p: int) -> list[int]:
    """Endpoints for dedicated servers: the first GPU of every host that holds none of the ``p``
    ranks, in the topology's rank order (endpoint indices beyond the ranks)."""
    taken = {cluster.host_of(r) for r in range(p)}
    out: list[int] = []
    for q in range(p, cluster.size):
        host = cluster.host_of(q)
        if host not in taken:
            taken.add(host)
            out.append(q)
    return out


@register
class ParameterServer(Algorithm):
    name = "ps"
    collective = "allreduce"
    Options = PSOptions
    summary = "sharded parameter server: push shards, servers reduce, pull (synchronous)"
    examples = ("ps:shards=2", "ps:placement=dedicated", "ps:placement=dedicated,shards=2")

    options: PSOptions

    def shards(self, p: int) -> int:
        return self.options.shards or p

    @property
    def dedicated(self) -> bool:
        return self.options.placement == "dedicated"

    def spare_hosts(self, p: int) -> int:
        return self.shards(p) if self.dedicated else 0

    def segments(self, p: int) -> int:
        return self.shards(p)

    def check(self, p: int, cluster: Any) -> None:
        s = self.shards(p)
        if not self.dedicated:
            if s > p:
                raise AlgorithmError(
                    f"{self.spec}: {s} co-located servers need {s} ranks, there are {p} "
                    "(use shards <= ranks, or placement=dedicated)"
                )
            return
        free = server_hosts(cluster, p)
        if len(free) < s:
            gpus = cluster.size
            raise AlgorithmError(
                f"{self.spec}: {s} dedicated server(s) need {s} host(s) that hold no rank; {cluster.name} with "
                f"{p} of its {gpus} GPUs as ranks leaves {len(free)} "
                f"(use shards={max(len(free), 1)} or fewer ranks)"
                if free
                else f"{self.spec}: dedicated servers need hosts that hold no rank, and {p} ranks on "
                f"{cluster.name} ({gpus} GPUs) leave none (use fewer ranks, or placement=colocated)"
            )

    def fan(self, p: int, nbytes: float, cluster: Any, root: int = 0) -> FanPlan:
        s = self.shards(p)
        servers = server_hosts(cluster, p)[:s] if self.dedicated else list(range(s))
        return FanPlan(p, tuple(servers), nbytes / s, first_free=self.dedicated)

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, s = job.p, self.shards(job.p)
        shard = job.nbytes / s
        data = job.data
        servers = server_hosts(job.net.cluster, p)[:s] if self.dedicated else list(range(s))
        procs = []
        # every route of the pushes (server by server, workers in order), then of the pulls, at once
        to = np.repeat(np.asarray(servers, dtype=np.int64), p)
        by = np.tile(np.arange(p, dtype=np.int64), len(servers))
        by, to = by[by != to], to[by != to]
        job.net.intern(by, to)
        job.net.intern(to, by)
        for k, server in enumerate(servers):
            workers = [w for w in range(p) if w != server]
            procs.append(self._serve(job, k, server, workers, shard))
            for w in workers:
                job.send(w, server, shard, data.take(w, k), 0)
                procs.append(receive_into(job, w, server, k, 1))
        yield spread(job, procs)

    def _serve(self, job: Job, k: int, server: int, workers: list[int], shard: float) -> Generator[Any, Any, None]:
        """Server ``k``: reduce the pushed shard as it arrives, then send it back to every worker."""
        held: list[Any] = []

        def fold(_src: int, payload: Any) -> Generator[Any, Any, None]:
            if server < job.p:  # co-located: the server's rank holds its own contribution already
                yield from job.combine(server, k, payload, shard)
            elif not held:  # dedicated: the first contribution is a copy
                held.append(payload)
            else:
                if payload is not None:
                    held[0] = held[0] + payload
                if job.gamma > 0:
                    yield job.compute(server, shard * job.gamma)

        yield from fan_in(job, server, workers, 0, fold)
        result = (lambda _w: job.data.take(server, k)) if server < job.p else (lambda _w: held[0])
        yield job.env.all_of(fan_out(job, server, workers, shard, result, tag=1))

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        s = self.shards(p)
        if self.dedicated:
            return 2 * alpha + 2 * max(1.0, p / s) * n * beta + (p - 1) * (n / s) * gamma
        if p == 1:
            return 0.0
        return 2 * alpha + 2 * (p - 1) * (n / s) * beta + (p - 1) * (n / s) * gamma
