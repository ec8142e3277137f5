"""Ring all-reduce, and the ring pieces other algorithms reuse -- the simulator's
``sim/algorithms/ring.py``, message for message.

Rank ``order[i]`` (successor ``order[i+1]``, predecessor ``order[i-1]``), buffer cut into ``q`` chunks:
in reduce-scatter step ``s`` it sends chunk ``i - s`` to its successor, receives chunk ``i - s - 1``
from its predecessor and adds it to its own; after ``q - 1`` steps it holds chunk ``i + 1`` reduced. The
all-gather then passes the reduced chunks on for ``q - 1`` more steps, each rank overwriting the chunk it
receives. Chunks follow :func:`torch.tensor_split` (the first ``count % q`` chunks one element longer),
so any count works; a chunk of zero elements is not sent by either end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..schedule import Add, Copy, Step, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["RingAllReduce", "ring_allgather", "ring_allreduce", "ring_reduce_scatter", "scratch_for"]


def scratch_for(chunks: Sequence[torch.Tensor]) -> torch.Tensor:
    """One receive buffer as long as the longest chunk."""
    longest = max((c.numel() for c in chunks), default=0)
    return torch.empty(longest, dtype=chunks[0].dtype, device=chunks[0].device)


def ring_reduce_scatter(
    order: Sequence[int],
    i: int,
    chunks: Sequence[torch.Tensor],
    tag: int = 0,
    *,
    offset: int = 0,
    out: torch.Tensor | None = None,
) -> list[Step]:
    """Rank ``order[i]``'s reduce-scatter steps over ``chunks`` (one per rank of ``order``).

    In place by default: chunks are reduced where they lie and ``order[i]`` ends holding chunk
    ``(i + 1 + offset) % q``. With ``out``, ``chunks`` are read only (the caller's input) and the chunk
    this rank ends with is written to ``out`` instead; partial sums travel in a scratch buffer.
    """
    q = len(order)
    if q == 1:
        return [Step(after=(Copy(out, chunks[0]),))] if out is not None else []
    nxt, prv = order[(i + 1) % q], order[(i - 1) % q]
    tmp = scratch_for(chunks)
    acc = scratch_for(chunks) if out is not None else None
    steps = []
    for s in range(q - 1):
        k_send, k_recv = (i - s + offset) % q, (i - s - 1 + offset) % q
        got = tmp[: chunks[k_recv].numel()]
        if out is None:
            send, target, base = chunks[k_send], chunks[k_recv], chunks[k_recv]
        else:
            assert acc is not None
            send = chunks[k_send] if s == 0 else acc[: chunks[k_send].numel()]
            target = out if s == q - 2 else acc[: chunks[k_recv].numel()]
            base = chunks[k_recv]
        steps.append(Step(sends=((send, nxt, tag + s),), recvs=((got, prv, tag + s),), after=(Add(target, base, got),)))
    return steps


def ring_allgather(
    order: Sequence[int], i: int, chunks: Sequence[torch.Tensor], tag: int = 0, *, first: int = 1
) -> list[Step]:
    """Rank ``order[i]``'s all-gather steps: it starts holding chunk ``(i + first) % q`` and ends holding
    all ``q``."""
    q = len(order)
    nxt, prv = order[(i + 1) % q], order[(i - 1) % q]
    return [
        Step(
            sends=((chunks[(i + first - s) % q], nxt, tag + s),),
            recvs=((chunks[(i + first - s - 1) % q], prv, tag + s),),
        )
        for s in range(q - 1)
    ]


def ring_allreduce(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0) -> list[Step]:
    """Rank ``order[i]``'s ring all-reduce of ``buf`` in place among the ranks ``order``."""
    q = len(order)
    chunks = torch.tensor_split(buf, q)
    return ring_reduce_scatter(order, i, chunks, tag) + ring_allgather(order, i, chunks, tag + q)


@register
class RingAllReduce(RealAlgorithm):
    name = "ring"
    collective = "allreduce"
    summary = "reduce-scatter + all-gather around a ring, chunks of n/p (isend/irecv)"

    def plan(self, task: Task) -> Callable[[], None]:
        return schedule_plan(task.comm, ring_allreduce(range(task.p), task.rank, task.out))
