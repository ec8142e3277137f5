"""The library's own collectives (algorithm ``builtin``): what torch.distributed does with the backend
-- for gloo a ring all-reduce pipelined in segments of at most 1 MiB, a binomial-tree broadcast, a ring
all-gather, flat gather and scatter (model.md); for NCCL whatever its tuner picks. They are the
reference the point-to-point schedules are compared with.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.distributed as dist

from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["BUILTINS"]

# torch >= 2.10 renamed the single-tensor forms; fall back to the older names elsewhere
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _allreduce(t: Task) -> Callable[[], None]:
    return lambda: dist.all_reduce(t.out)


def _broadcast(t: Task) -> Callable[[], None]:
    return lambda: dist.broadcast(t.out, src=t.root)


def _reduce(t: Task) -> Callable[[], None]:
    return lambda: dist.reduce(t.out, dst=t.root)


def _allgather(t: Task) -> Callable[[], None]:
    return lambda: _all_gather(t.out, t.inp)


def _reducescatter(t: Task) -> Callable[[], None]:
    return lambda: _reduce_scatter(t.out, t.inp)


def _gather(t: Task) -> Callable[[], None]:
    blocks = list(t.out.tensor_split(t.p)) if t.rank == t.root else None
    return lambda: dist.gather(t.inp, gather_list=blocks, dst=t.root)


def _scatter(t: Task) -> Callable[[], None]:
    blocks = list(t.inp.tensor_split(t.p)) if t.rank == t.root else None
    return lambda: dist.scatter(t.out, scatter_list=blocks, src=t.root)


def _alltoall(t: Task) -> Callable[[], None]:
    return lambda: dist.all_to_all_single(t.out, t.inp)


def _sendrecv(t: Task) -> Callable[[], None]:
    nxt, prv = (t.rank + 1) % t.p, (t.rank - 1) % t.p

    def run() -> None:
        ops = [dist.P2POp(dist.irecv, t.out, prv), dist.P2POp(dist.isend, t.inp, nxt)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    if t.p == 1:
        return lambda: t.out.copy_(t.inp)
    return run


BUILTINS: dict[str, Callable[[Task], Callable[[], None]]] = {
    "allreduce": _allreduce,
    "broadcast": _broadcast,
    "reduce": _reduce,
    "allgather": _allgather,
    "reducescatter": _reducescatter,
    "gather": _gather,
    "scatter": _scatter,
    "alltoall": _alltoall,
    "sendrecv": _sendrecv,
}


def _builtin_class(collective: str) -> type[RealAlgorithm]:
    factory = BUILTINS[collective]

    class Builtin(RealAlgorithm):
        name = "builtin"
        summary = f"torch.distributed's own {collective} (the backend's algorithm)"
        library = True

        def plan(self, task: Task) -> Callable[[], None]:
            return factory(task)

    Builtin.collective = collective
    Builtin.__name__ = Builtin.__qualname__ = f"Builtin_{collective}"
    return Builtin


for _collective in BUILTINS:
    register(_builtin_class(_collective))
