"""The ring: all-reduce, all-gather, reduce-scatter, reduce and broadcast, and the ring pieces other
algorithms reuse -- the simulator's ``sim/algorithms/ring.py``, message for message.

Rank ``order[i]`` (successor ``order[i+1]``, predecessor ``order[i-1]``), buffer cut into ``q`` chunks:
in reduce-scatter step ``s`` it sends chunk ``i - s`` to its successor, receives chunk ``i - s - 1``
from its predecessor and adds it to its own; after ``q - 1`` steps it holds chunk ``i + 1`` reduced. The
all-gather then passes the reduced chunks on for ``q - 1`` more steps, each rank overwriting the chunk it
receives. Chunks follow :func:`torch.tensor_split` (the first ``count % q`` chunks one element longer),
so any count works; a chunk of zero elements is not sent by either end.

* allgather ``ring``: each rank puts its block in place, then the ring all-gather.
* reducescatter ``ring``: the ring reduce-scatter, out of place (the input is read, partial sums travel
  in a scratch buffer, rank ``r`` ends with block ``r``).
* reduce ``ring``: a ring from the root reduce-scatters, then every rank sends its reduced chunk
  straight to the root, as gloo does.
* broadcast ``ring``: a chain root, root+1, ... pipelined in ``chunks`` pieces (a rank forwards a piece
  once it has it and its previous forward has arrived).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

import torch
from pydantic import BeforeValidator, Field

from sim.schema import Chunks, Spec
from sim.units import parse_size

from ..schedule import Add, Copy, Op, schedule_plan, segment_tag, segments
from .base import RealAlgorithm, Task
from .common import pipeline_ops
from .registry import register

__all__ = [
    "RingAllGather",
    "RingAllReduce",
    "RingBroadcast",
    "RingReduce",
    "RingReduceScatter",
    "ring_allgather_ops",
    "ring_allreduce_ops",
    "ring_reduce_scatter_ops",
    "scratch_for",
]


def scratch_for(chunks: Sequence[torch.Tensor]) -> torch.Tensor:
    """One receive buffer as long as the longest chunk."""
    longest = max((c.numel() for c in chunks), default=0)
    return torch.empty(longest, dtype=chunks[0].dtype, device=chunks[0].device)


def ring_reduce_scatter_ops(
    order: Sequence[int],
    i: int,
    chunks: Sequence[torch.Tensor],
    tag: int = 0,
    *,
    offset: int = 0,
    out: torch.Tensor | None = None,
    segment: int = 0,
) -> list[Op]:
    """Rank ``order[i]``'s reduce-scatter steps over ``chunks`` (one per rank of ``order``).

    In place by default: chunks are reduced where they lie and ``order[i]`` ends holding chunk
    ``(i + 1 + offset) % q``. With ``out``, ``chunks`` are read only (the caller's input) and the chunk
    this rank ends with is written to ``out`` instead; partial sums travel in a scratch buffer. With
    ``segment`` > 0, each step's chunk moves as messages of at most ``segment`` elements, all posted at
    once, and each is added as soon as it has arrived.
    """
    q = len(order)
    if q == 1:
        return [Op(after=(Copy(out, chunks[0]),))] if out is not None else []
    nxt, prv = order[(i + 1) % q], order[(i - 1) % q]
    # two receive buffers, used in turn, so that a step's receive can be posted while the step before
    # it is still adding from the other one
    tmps = (scratch_for(chunks), scratch_for(chunks)) if q > 2 else (scratch_for(chunks),)
    # out of place, partial sums alternate between two buffers: a step adds into one while its send
    # may still be reading the other
    accs = (scratch_for(chunks), scratch_for(chunks)) if out is not None else ()
    steps = []
    for s in range(q - 1):
        k_send, k_recv = (i - s + offset) % q, (i - s - 1 + offset) % q
        got = tmps[s % len(tmps)][: chunks[k_recv].numel()]
        if out is None:
            send, target, base = chunks[k_send], chunks[k_recv], chunks[k_recv]
        else:
            send = chunks[k_send] if s == 0 else accs[(s - 1) % 2][: chunks[k_send].numel()]
            target = out if s == q - 2 else accs[s % 2][: chunks[k_recv].numel()]
            base = chunks[k_recv]
        pieces = zip(segments(target, segment), segments(base, segment), segments(got, segment), strict=True)
        adds = tuple(Add(t, b, g) for t, b, g in pieces)
        steps.append(
            Op(
                sends=tuple((x, nxt, segment_tag(tag + s, j)) for j, x in enumerate(segments(send, segment))),
                recvs=tuple((x, prv, segment_tag(tag + s, j)) for j, x in enumerate(segments(got, segment))),
                each=adds,
            )
        )
    return steps


def ring_allgather_ops(
    order: Sequence[int], i: int, chunks: Sequence[torch.Tensor], tag: int = 0, *, first: int = 1
) -> list[Op]:
    """Rank ``order[i]``'s all-gather steps: it starts holding chunk ``(i + first) % q`` and ends holding
    all ``q``."""
    q = len(order)
    nxt, prv = order[(i + 1) % q], order[(i - 1) % q]
    return [
        Op(
            sends=((chunks[(i + first - s) % q], nxt, tag + s),),
            recvs=((chunks[(i + first - s - 1) % q], prv, tag + s),),
        )
        for s in range(q - 1)
    ]


def ring_allreduce_ops(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0, segment: int = 0) -> list[Op]:
    """Rank ``order[i]``'s ring all-reduce of ``buf`` in place among the ranks ``order`` (reduce-scatter
    steps in segments of at most ``segment`` elements when > 0)."""
    q = len(order)
    chunks = torch.tensor_split(buf, q)
    return ring_reduce_scatter_ops(order, i, chunks, tag, segment=segment) + ring_allgather_ops(
        order, i, chunks, tag + q
    )


def _size(value: object) -> int:
    number = parse_size(value, "segment")
    if number != int(number):
        raise ValueError(f"expected a whole number of bytes, got {value!r}")
    return int(number)


class RingOptions(Spec):
    """``segment``: largest message of a reduce-scatter step, in bytes; ``0`` (the default) sends each
    step's chunk as one message, exactly the simulated schedule. (Segments of 1 MiB, added as they
    arrive, measured slower on CPUs: docs/validate.md.)"""

    segment: Annotated[int, BeforeValidator(_size), Field(ge=0)] = 0


@register
class RingAllReduce(RealAlgorithm):
    name = "ring"
    collective = "allreduce"
    Options = RingOptions
    summary = "reduce-scatter + all-gather around a ring, chunks of n/p (isend/irecv)"

    def plan(self, task: Task) -> Callable[[], None]:
        elements = self.options.segment // task.out.element_size()  # type: ignore[attr-defined]
        if self.options.segment and not elements:  # type: ignore[attr-defined]
            elements = 1
        return schedule_plan(task.comm, ring_allreduce_ops(range(task.p), task.rank, task.out, 0, elements))


@register
class RingAllGather(RealAlgorithm):
    name = "ring"
    collective = "allgather"
    summary = "blocks passed around a ring, p-1 steps"

    def plan(self, task: Task) -> Callable[[], None]:
        blocks = torch.tensor_split(task.out, task.p)
        steps = [Op(before=(Copy(blocks[task.rank], task.inp),))]
        steps += ring_allgather_ops(range(task.p), task.rank, blocks, 0, first=0)
        return schedule_plan(task.comm, steps)


@register
class RingReduceScatter(RealAlgorithm):
    name = "ring"
    collective = "reducescatter"
    summary = "ring reduce-scatter, p-1 steps of n/p, out of place"

    def plan(self, task: Task) -> Callable[[], None]:
        blocks = torch.tensor_split(task.inp, task.p)
        return schedule_plan(
            task.comm, ring_reduce_scatter_ops(range(task.p), task.rank, blocks, 0, offset=-1, out=task.out)
        )


@register
class RingReduce(RealAlgorithm):
    name = "ring"
    collective = "reduce"
    summary = "ring reduce-scatter, then every rank sends its reduced chunk to the root (as gloo)"

    def plan(self, task: Task) -> Callable[[], None]:
        p, root = task.p, task.root
        order = [(root + j) % p for j in range(p)]  # the ring starts at the root
        i = order.index(task.rank)
        chunks = torch.tensor_split(task.out, p)
        steps = ring_reduce_scatter_ops(order, i, chunks, 0)
        if p > 1 and i:
            steps.append(Op(sends=((chunks[(i + 1) % p], root, p),)))
        elif p > 1:
            steps.append(Op(recvs=tuple((chunks[(j + 1) % p], order[j], p) for j in range(1, p))))
        return schedule_plan(task.comm, steps)


class ChunksOptions(Spec):
    """``chunks``: pieces the pipelined chain moves the buffer in."""

    chunks: Chunks = 8


@register
class RingBroadcast(RealAlgorithm):
    name = "ring"
    collective = "broadcast"
    Options = ChunksOptions
    summary = "a chain from the root, pipelined in `chunks` pieces"

    def plan(self, task: Task) -> Callable[[], None]:
        p, i = task.p, (task.rank - task.root) % task.p
        pieces = torch.tensor_split(task.out, self.options.chunks)  # type: ignore[attr-defined]
        prev = [(task.rank - 1) % p] if i > 0 else []
        nxt = [(task.rank + 1) % p] if i < p - 1 else []
        return schedule_plan(task.comm, pipeline_ops(pieces, prev, nxt, 0, reduce=False))
