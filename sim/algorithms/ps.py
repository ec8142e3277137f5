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

from collections.abc import Callable, Generator
from typing import Any, Literal, Optional

import numpy as np
from pydantic import PositiveInt
from simpy.events import Event

from .._cores import PURE
from ..classes import FanPlan
from ..errors import AlgorithmError
from ..runtime import _JOB_LINES, Job, NoData
from ..schema import Spec
from .base import Algorithm
from .common import fan_in, fan_out, receive_into, spread
from .registry import register

__all__ = ["ParameterServer", "server_hosts"]

#: without the data check and with free reductions (gamma = 0), :meth:`ParameterServer.run` counts the
#: arrivals of the pushes and pulls in their arrival hooks (:class:`_Counted`) rather than running a
#: process per server and per pull; tests turn it off to hold it to the processes' times
_COUNTED = not PURE


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
        push = job.net.intern(by, to)
        pull = job.net.intern(to, by)
        if _COUNTED and _countable(job, servers, shard):
            yield from _Counted(job, servers, shard, (push.tolist(), pull.tolist())).run()
            return
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


def _countable(job: Job, servers: list[int], shard: float) -> bool:
    """Whether :class:`_Counted` runs ``job``: no data check, no reduction cost, ``Job.send`` / ``Job.recv``
    the module's own (not a test's recording stand-in), a shard of some bytes (no flow that could arrive
    as it is sent) and every server with a worker."""
    return (
        isinstance(job.data, NoData)
        and not job.gamma > 0
        and (type(job).send, type(job).recv) == _JOB_LINES
        and shard > 0
        and all(job.p > 1 or server >= job.p for server in servers)
    )


class _Counted:
    """:meth:`ParameterServer.run` without the data check and with free reductions: the same sends at the
    same instants in the same order, and the same events at every instant where a send or the end could
    hang on them, with no process per pull and no receive per message.

    The processes' run, step by step, which this one follows:

    * a server's process waits on ``any_of`` its pushes not in yet; the first push to arrive while it waits
      triggers its receive (an event held to the end of the network's wake-up, or scheduled), whose step
      triggers the ``any_of``, whose step resumes the server: it takes every push in by then (reducing is
      free) and waits again, or, when all are in, sends the pulls. Here a push's arrival counts it in, the
      first one while the server waits triggers an event in the receive's place, and two steps on (the
      receive's, the ``any_of``'s) the server takes what is in and sends the pulls when all are;
    * the last pull of a server to arrive triggers its send event, whose step completes the server's
      ``all_of``, whose step ends its process, whose step completes the ``all_of`` of every process once it
      is the last server's, whose step resumes :meth:`ParameterServer.run`. Here the last pull triggers an
      event in the send event's place, three steps on the server is done, and the step of the last one's
      ``done`` resumes the run. (A pull's receive ran in a process of its own, which sent nothing: its
      steps are gone.)

    tests/test_ps_msg.py holds every time to the processes' (``_COUNTED`` off), bit for bit.
    """

    def __init__(self, job: Job, servers: list[int], shard: float, routes: tuple[list[int], list[int]]) -> None:
        self.job, self.net, self.env = job, job.net, job.env
        self.servers, self.shard = servers, shard
        self.workers = [[w for w in range(job.p) if w != server] for server in servers]
        # the routes of the pushes and of the pulls (Network.intern's, server by server, workers in order)
        ends = np.cumsum([0] + [len(workers) for workers in self.workers]).tolist()
        blocks = list(zip(ends[:-1], ends[1:], strict=True))
        self.push_routes = [routes[0][a:b] for a, b in blocks]
        self.pull_routes = [routes[1][a:b] for a, b in blocks]
        self.pushes = [len(workers) for workers in self.workers]  # not taken in yet, per server
        self.arrived = [0] * len(servers)  # arrived, not taken in yet
        self.armed = [False] * len(servers)  # an arrival has triggered the receive's stand-in
        self.pulls = [len(workers) for workers in self.workers]  # in flight, per server
        self.serving = len(servers)
        self.done = Event(self.env)

    def run(self) -> Generator[Any, Any, None]:
        pushed = self._pushed
        for k, server in enumerate(self.servers):
            self.job.post(server, self.workers[k], True, self.shard, (pushed, k, None), self.push_routes[k])
        yield self.done

    def _later(self, k: int, steps: int, then: Callable[[int], None]) -> None:
        """An event triggered now as a message's arrival triggers the event a process waits on
        (``Network.trigger``); ``then(k)`` in the step ``steps`` steps after its own."""
        event = Event(self.env)
        event.callbacks.append(self._step)  # type: ignore[union-attr]
        self.net.trigger(event, (k, steps, then))

    def _step(self, event: Event) -> None:
        k, steps, then = event._value
        if not steps:
            then(k)
            return
        nxt = Event(self.env)
        nxt.callbacks.append(self._step)  # type: ignore[union-attr]
        nxt.succeed((k, steps - 1, then))

    def _pushed(self, k: int, _payload: Any) -> None:
        self.arrived[k] += 1
        if not self.armed[k]:  # the server waits: the receive's step, then the any_of's
            self.armed[k] = True
            self._later(k, 1, self._take)

    def _take(self, k: int) -> None:
        """Server ``k`` resumed: it takes the pushes in; with all of them, it sends the pulls."""
        self.pushes[k] -= self.arrived[k]
        self.arrived[k] = 0
        self.armed[k] = False
        if not self.pushes[k]:
            self.job.post(
                self.servers[k], self.workers[k], False, self.shard, (self._pulled, k, None), self.pull_routes[k]
            )

    def _pulled(self, k: int, _payload: Any) -> None:
        self.pulls[k] -= 1
        if not self.pulls[k]:  # the send event's step, the all_of's, the process's
            self._later(k, 2, self._served)

    def _served(self, _k: int) -> None:
        self.serving -= 1
        if not self.serving:  # the all_of of every process, whose step resumes the run
            self.done.succeed()
