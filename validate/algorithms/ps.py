"""Parameter server, sharded and co-located: the buffer is cut into ``S`` shards and shard ``k`` is
served by rank ``k``. Every rank pushes shard ``k`` to server ``k`` for all ``k`` at once; each server
adds the ``p - 1`` pushes of its shard to its own copy; then every rank pulls every shard from its server
at once -- the simulator's ``ps`` with ``placement=colocated`` (``S = p``: model.md's
``2α + 2·(p-1)/p·n·β + (p-1)/p·n·γ``). ``shards`` defaults to the number of ranks.

``placement=dedicated`` (servers on hosts of their own) needs processes beyond the ranks being measured,
which a real run of ``p`` ranks does not have; it is refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from pydantic import Field

from sim.schema import Spec

from ..schedule import Add, Op, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["PSOptions", "ParameterServerAllReduce"]


class PSOptions(Spec):
    """``shards``: number of shards/servers (default: one per rank); ``placement``: colocated only."""

    shards: int | None = Field(None, ge=1)
    placement: Literal["colocated", "dedicated"] = "colocated"


@register
class ParameterServerAllReduce(RealAlgorithm):
    name = "ps"
    collective = "allreduce"
    Options = PSOptions
    summary = "sharded parameter server co-located on the ranks: push every shard to its server, then pull"

    def check(self, p: int, gpus_per_host: int = 1) -> None:
        opts: PSOptions = self.options  # type: ignore[assignment]
        if opts.placement == "dedicated":
            raise self.refuse("real runs place servers on the measured ranks (placement=colocated)")
        if opts.shards is not None and opts.shards > p:
            raise self.refuse(f"{opts.shards} shards need at least as many ranks, got {p}")

    def plan(self, task: Task) -> Callable[[], None]:
        self.check(task.p)
        buf, me, p = task.out, task.rank, task.p
        shards_n = self.options.shards or p  # type: ignore[attr-defined]
        shards = torch.tensor_split(buf, shards_n)
        servers = [k for k in range(shards_n) if k != me]
        push = [(shards[k], k, 0) for k in servers]
        pull = [(shards[k], k, 1) for k in servers]
        if me < shards_n:  # this rank serves shard `me`
            workers = [w for w in range(p) if w != me]
            mine = shards[me]
            tmps = {w: torch.empty_like(mine) for w in workers}
            steps = [
                Op(
                    sends=tuple(push),
                    recvs=tuple((tmps[w], w, 0) for w in workers),
                    after=tuple(Add(mine, mine, tmps[w]) for w in workers),
                ),
                Op(sends=tuple((mine, w, 1) for w in workers), recvs=tuple(pull)),
            ]
        else:
            steps = [Op(sends=tuple(push)), Op(recvs=tuple(pull))]
        return schedule_plan(task.comm, steps)
