"""Hierarchical all-reduce: reduce-scatter inside each host, all-reduce of each 1/G slice across hosts
(one "rail" per local index), all-gather inside each host.

Hosts are consecutive blocks of ``G`` ranks (``--gpus-per-host G``; the default comes from
``--topology``, else 1), the way torchrun and srun number ranks. Local rank ``j`` of host ``h`` is rank
``h·G + j``. Inside a host the ``inner`` ring reduce-scatters the buffer into ``G`` slices so that local
rank ``j`` holds slice ``j`` summed over its host; the ``H = p/G`` ranks holding slice ``j`` (rail
``j``) all-reduce it with the ``outer`` algorithm (ring, tree or halving-doubling, over the slice);
the inner ring all-gather then gives every rank every slice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch

from sim.schema import Spec

from ..schedule import Op, schedule_plan
from .base import RealAlgorithm, Task
from .halving_doubling import halving_doubling_allreduce_ops
from .registry import register
from .ring import ring_allgather_ops, ring_allreduce_ops, ring_reduce_scatter_ops
from .tree import tree_allreduce_ops

__all__ = ["HierarchicalAllReduce", "HierarchicalOptions"]

OUTER: dict[str, Callable[[Sequence[int], int, torch.Tensor, int], list[Op]]] = {
    "ring": ring_allreduce_ops,
    "tree": tree_allreduce_ops,
    "halving-doubling": halving_doubling_allreduce_ops,
}
#: tags of the three phases start this far apart
_PHASE = 1 << 16


class HierarchicalOptions(Spec):
    """``inner``: the intra-host algorithm (ring); ``outer``: the inter-host one."""

    inner: Literal["ring"] = "ring"
    outer: Literal["ring", "tree", "halving-doubling"] = "ring"


@register
class HierarchicalAllReduce(RealAlgorithm):
    name = "hierarchical"
    collective = "allreduce"
    Options = HierarchicalOptions
    summary = "ring reduce-scatter in each host, all-reduce of each slice across hosts, ring all-gather in host"

    def check(self, p: int, gpus_per_host: int = 1) -> None:
        if p % gpus_per_host:
            raise self.refuse(f"{p} ranks are not a whole number of hosts of {gpus_per_host} (--gpus-per-host)")

    def plan(self, task: Task) -> Callable[[], None]:
        g = task.gpus_per_host
        self.check(task.p, g)
        host, j = divmod(task.rank, g)
        local = [host * g + k for k in range(g)]
        rail = [h * g + j for h in range(task.p // g)]
        slices = torch.tensor_split(task.out, g)
        # the inner reduce-scatter leaves local rank j with slice j (offset -1), as the all-gather expects
        steps = ring_reduce_scatter_ops(local, j, slices, 0, offset=-1)
        outer = OUTER[self.options.outer]  # type: ignore[attr-defined]
        steps += outer(rail, host, slices[j], _PHASE)
        steps += ring_allgather_ops(local, j, slices, 2 * _PHASE, first=0)
        return schedule_plan(task.comm, steps)
