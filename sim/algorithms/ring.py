"""The ring: all-reduce, and all-gather, reduce-scatter, reduce and broadcast built from its steps.

**all-reduce** ``ring``: a reduce-scatter then an all-gather around the ranks, in chunks of n/p.

Schedule (rank r, successor r+1, predecessor r-1, all mod p): in step s = 0..p-2 of the reduce-scatter,
r sends chunk (r - s) to r+1, receives chunk (r - s - 1) from r-1 and adds it to its own; after p-1 steps
r holds chunk (r + 1) fully reduced. The all-gather then passes the reduced chunks around for p-1 more
steps, each rank overwriting the chunk it receives. A rank starts a step when its previous send has
left and its previous receive (and reduction) is done.

Cost on an uncongested star (every step is one α-β message of n/p bytes, and a reduction of n/p):

    T = 2(p-1)·α + 2·(p-1)/p·n·β + (p-1)/p·n·γ

The other collectives on the ring use the all-reduce's reduce-scatter and all-gather processes (one
α-β message of a chunk per step):

* all-gather ``ring`` (n = the total gathered, blocks of n/p): p-1 steps of one block::

      T = (p-1)·α + (p-1)/p·n·β

* reduce-scatter ``ring`` (n = the total, blocks of n/p): p-1 steps of one block and its reduction::

      T = (p-1)·α + (p-1)/p·n·β + (p-1)/p·n·γ

* reduce ``ring`` (as gloo does it): a ring reduce-scatter of the buffer in chunks of n/p, then every
  rank sends its reduced chunk straight to the root at once (p-1 flows share the root's link)::

      T = (p-1)·(α + n/p·β + n/p·γ) + α + (p-1)/p·n·β = p·α + 2·(p-1)/p·n·β + (p-1)/p·n·γ

* broadcast ``ring`` (pipelined chain, ``chunks=K``): the root sends K chunks down the chain
  root -> root+1 -> ... ; every rank forwards a chunk once it has it and its previous forward has
  arrived. A chunk needs p-1 hops and a new one leaves the root every hop, so::

      T = (p + K - 2)·(α + n/K·β)

All four are exact on a star for every p: every step's messages use disjoint links, or (the reduce's
last step) start together and share the root's link evenly.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import PositiveInt

from ..program import Step, StepProgram, run_messages
from ..runtime import Job, NoData
from ..schema import Chunks, Spec
from .base import Algorithm
from .common import fan_in, spread, storing
from .registry import register

__all__ = [
    "RingAllGather",
    "RingAllReduce",
    "RingBroadcast",
    "RingReduce",
    "RingReduceScatter",
    "gathering_steps",
    "ring_allgather",
    "ring_order",
    "ring_program",
    "ring_reduce_scatter",
    "ring_steps",
    "rings_steps",
]


def ring_reduce_scatter(
    job: Job, order: Sequence[int], i: int, segments: Sequence[Any], chunk: float, tag: int = 0
) -> Generator[Any, Any, None]:
    """Rank ``order[i]``'s part of a ring reduce-scatter over the ranks ``order``.

    ``segments[k]`` is the data-check segment of chunk ``k`` (``len(segments) == len(order)``); each
    chunk is ``chunk`` bytes. Ends with ``order[i]`` holding chunk ``(i + 1) % len(order)`` reduced.
    """
    q = len(order)
    me, nxt, prv = order[i], order[(i + 1) % q], order[(i - 1) % q]
    data = job.data
    check = not isinstance(data, NoData)  # payloads only for the data check (no call per message without)
    reduce = job.gamma > 0 and chunk > 0  # job.combine's reduction, inline (no generator per message)
    for s in range(q - 1):
        sent = job.send(me, nxt, chunk, data.take(me, segments[(i - s) % q]) if check else None, tag + s)
        got = yield job.recv(me, prv, tag + s)
        if sent.callbacks is not None:  # not processed yet (yielding a processed event goes on at once)
            yield sent
        if check:
            data.add(me, segments[(i - s - 1) % q], got)
        if reduce:
            yield job.compute(me, chunk * job.gamma)


def ring_allgather(
    job: Job, order: Sequence[int], i: int, segments: Sequence[Any], chunk: float, tag: int = 0, first: int = 1
) -> Generator[Any, Any, None]:
    """Rank ``order[i]``'s part of a ring all-gather: it starts holding chunk ``(i + first) % q`` and
    ends holding all ``q`` chunks."""
    q = len(order)
    me, nxt, prv = order[i], order[(i + 1) % q], order[(i - 1) % q]
    data = job.data
    check = not isinstance(data, NoData)
    for s in range(q - 1):
        sent = job.send(me, nxt, chunk, data.take(me, segments[(i + first - s) % q]) if check else None, tag + s)
        got = yield job.recv(me, prv, tag + s)
        if sent.callbacks is not None:
            yield sent
        if check:
            data.put(me, segments[(i + first - s - 1) % q], got)


#: the single ring without the data check runs message-level as its step program's ranks
#: (:func:`~sim.program.run_messages`: compiled loops where the core is built; 1.3-1.7x less CPU at 512-1,024
#: GPUs, docs/performance-log.md); the rank generators above stay its reference, and run with the data check.
#: Tests turn it off to hold the generators to the fast path, and on and off to hold the two message levels
#: to the same results
_FROM_PROGRAM = True


def _by_program(alg: Algorithm, job: Job) -> StepProgram | None:
    """The single ring's step program where its message level runs it (:data:`_FROM_PROGRAM`, no data
    check), else None."""
    if not _FROM_PROGRAM or not isinstance(job.data, NoData):
        return None
    return alg.program(job.p, job.nbytes, job.net.cluster)


class RingOptions(Spec):
    order: Literal["auto", "rank", "rail"] = "auto"
    channels: PositiveInt = 1


def ring_order(cluster: Any, p: int, mode: str = "auto") -> list[int]:
    """The ring's order of ranks 0..p-1.

    ``rank`` is rank order. ``rail`` groups ranks by host (hosts in order of their first rank) and walks
    each host's ranks up on even hosts and down on odd ones, so that consecutive hosts meet on the same
    local GPU index -- the same rail of a rail-optimized fabric, as NCCL's rings do on DGX systems -- and
    no ring hop between hosts needs a spine. ``auto`` is ``rail`` when some host holds several of the
    ranks, else ``rank``.
    """
    if mode == "rank" or cluster is None:
        return list(range(p))
    hosts: dict[str, list[int]] = {}
    for r in range(p):
        hosts.setdefault(cluster.host_of(r), []).append(r)
    if mode == "auto" and all(len(members) == 1 for members in hosts.values()):
        return list(range(p))
    order: list[int] = []
    for h, members in enumerate(hosts.values()):
        order.extend(members if h % 2 == 0 else members[::-1])
    return order


@register
class RingAllReduce(Algorithm):
    name = "ring"
    collective = "allreduce"
    Options = RingOptions
    summary = "reduce-scatter + all-gather around a ring, chunks of n/p (rail-aligned on multi-GPU hosts)"
    examples = ("ring:order=rank", "ring:order=rail", "ring:channels=3")

    options: RingOptions

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p
        if p == 1:
            return
        if self.options.channels > 1:  # NCCL's channels (sim.nccl.rings)
            from ..nccl.layout import run_program
            from ..nccl.rings import rings_program

            k = self.options.channels
            yield from run_program(job, rings_program(job.net.cluster, p, job.nbytes, k), k * p)
            return
        program = _by_program(self, job)
        if program is not None:
            yield from run_messages(job, program)
            return
        order = ring_order(job.net.cluster, p, self.options.order)
        segments = list(range(p))
        chunk = job.nbytes / p

        def rank(i: int) -> Generator[Any, Any, None]:
            yield from ring_reduce_scatter(job, order, i, segments, chunk, tag=0)
            yield from ring_allgather(job, order, i, segments, chunk, tag=p)

        yield job.env.all_of([job.env.process(rank(i)) for i in range(p)])

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        """Every step: rank r sends n/p bytes to r+1; in the reduce-scatter half the receiver reduces
        them, in the all-gather half it copies them."""
        if p == 1:
            return None
        if self.options.channels > 1:
            from ..nccl.rings import rings_program

            return rings_program(cluster, p, nbytes, self.options.channels)
        return ring_program(ring_order(cluster, p, self.options.order), nbytes / p, p)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        # with K channels every rank's K actors reduce their chunks side by side (one SM each)
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma / self.options.channels


def ring_steps(
    order: Sequence[int], chunk: float, endpoints: int, seg_off: int = 0, seg_scale: int = 1, seg_width: int = 1
) -> tuple[Step, Step]:
    """The two step patterns of a ring over ``order``: reduce-scatter (reducing) and all-gather.

    In repetition k, ``order[i]`` sends chunk (i - k) mod q while reducing, chunk (i + 1 - k) mod q
    while gathering; chunk c is data-check segments ``[seg_off + seg_scale*c, ... + seg_width)``.
    """
    return rings_steps(np.asarray(order, dtype=np.int64)[None, :], chunk, endpoints, seg_off, seg_scale, seg_width)


def rings_steps(
    orders: np.ndarray,
    chunk: float,
    endpoints: int,
    seg_off: int | np.ndarray = 0,
    seg_scale: int = 1,
    seg_width: int = 1,
    bound: float | None = None,
) -> tuple[Step, Step]:
    """:func:`ring_steps` for many disjoint rings at once: ``orders[g]`` is ring g's order, and
    ``seg_off`` may differ per ring (an array of one value per ring); ``bound`` caps every message's rate
    (wire bytes/s: NCCL's per-channel cap, :func:`sim.nccl.rings.ring_bound`)."""
    orders = np.asarray(orders, dtype=np.int64)
    rings, q = orders.shape
    src = orders.ravel()
    dst = np.roll(orders, -1, axis=1).ravel()
    pos = np.tile(np.arange(q), rings)
    off = np.repeat(np.broadcast_to(np.asarray(seg_off, dtype=np.int64), (rings,)), q)
    common = dict(
        endpoints=endpoints,
        seg_stride=-1,
        seg_mod=q,
        seg_off=off,
        seg_scale=seg_scale,
        seg_width=seg_width,
        bound=bound,
    )
    return (
        Step.make(src, dst, chunk, chunk, seg=pos, **common),
        Step.make(src, dst, chunk, 0.0, seg=pos + 1, **common),
    )


def ring_program(
    order: Sequence[int], chunk: float, endpoints: int, seg_off: int = 0, seg_scale: int = 1, seg_width: int = 1
) -> StepProgram:
    """Ring all-reduce over ``order`` in chunks of ``chunk`` bytes, as a step program."""
    q = len(order)
    rs, ag = ring_steps(order, chunk, endpoints, seg_off, seg_scale, seg_width)
    return StepProgram(endpoints, ((rs, q - 1), (ag, q - 1)))


def gathering_steps(
    orders: np.ndarray,
    ranks: np.ndarray,
    chunk: float,
    endpoints: int,
    reduce: bool,
    wire: float = 1.0,
    bound: float | None = None,
) -> tuple[tuple[Step, int], ...]:
    """The p - 1 steps of ring all-gathers (``reduce`` False) or reduce-scatters over the rings
    ``orders[c]`` (actors; ``ranks[c]`` their ranks), blocks of ``chunk`` bytes (``wire`` x on the wire):
    one step repeated p - 1 times. Data-check segments ``r K + c`` (K = the number of rings): ring c's
    part of rank r's block.

    All-gather: in step s the actor at ring position i sends the block of the rank at position i - s (its
    own first), which the next stores. Reduce-scatter: it sends its partial sum of the block of the rank at
    position i - s - 1, which the next adds to its own, so that after p - 1 steps every actor holds its
    own rank's block reduced. The ring position whose block a message carries, (i - s - reduce) mod q, is
    affine in the repetition s; the rank there is looked up in the step's segment table ``ranks``
    (:class:`~sim.program.Step`: NCCL's ring reads it from ``ring->userRanks``), or, where every ring's
    position j holds rank j (the rank-order ring), is that position itself. ``bound`` caps every message's
    rate (wire bytes/s: NCCL's per-channel cap, :func:`sim.nccl.rings.ring_bound`)."""
    orders = np.asarray(orders, dtype=np.int64)
    ranks = np.asarray(ranks, dtype=np.int64)
    k, q = orders.shape
    src, dst = orders.ravel(), np.roll(orders, -1, axis=1).ravel()
    lane = np.repeat(np.arange(k, dtype=np.int64), q)
    position = np.tile(np.arange(q, dtype=np.int64), k)
    in_order = bool((ranks == np.arange(q)).all())
    step = Step.make(
        src,
        dst,
        chunk * wire,
        chunk if reduce else 0.0,
        endpoints=endpoints,
        combine=reduce,
        seg=position - int(reduce),
        seg_stride=-1,
        seg_mod=q,
        seg_off=lane,
        seg_scale=k,
        seg_table=None if in_order else ranks,
        seg_at=lane * q,
        bound=bound,
    )
    return ((step, q - 1),)


class _RingGathering(Algorithm):
    """All-gather and reduce-scatter around a ring; with ``channels=K`` NCCL's K rings
    (:func:`sim.nccl.rings.rings_gather_program`: laid out as the all-reduce's, the buffer split among
    them, each ring's p - 1 steps)."""

    # all-reduce's options: ``order`` is the single ring's; ``channels=K`` rings are NCCL's, laid out as its
    # all-reduce's whatever ``order`` says
    Options = RingOptions
    examples = ("ring:channels=3", "ring:order=rail")
    options: RingOptions

    def _order(self, p: int, cluster: Any) -> list[int]:
        """The single ring's order of the ranks."""
        return ring_order(cluster, p, self.options.order)

    def run(self, job: Job) -> Generator[Any, Any, None]:
        """NCCL's K rings (``channels=K``), else the single ring: its step program where its message level
        runs it (:func:`_by_program`), else its rank generators (:meth:`_ranks`)."""
        p = job.p
        if p == 1:
            return
        if self.options.channels > 1:
            from ..nccl.layout import run_program

            k = self.options.channels
            yield from run_program(job, self.program(p, job.nbytes, job.net.cluster), k * p)
            return
        program = _by_program(self, job)
        if program is not None:
            yield from run_messages(job, program)
            return
        yield spread(job, self._ranks(job, self._order(p, job.net.cluster)))

    def _ranks(self, job: Job, order: list[int]) -> list[Generator[Any, Any, None]]:
        """The single ring's rank generators, position i holding rank ``order[i]``."""
        raise NotImplementedError

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        if p == 1:
            return None
        if self.options.channels == 1:  # the ring over the ranks in the option's order, as run() does
            order = np.asarray(self._order(p, cluster), dtype=np.int64)[None, :]
            return StepProgram(p, gathering_steps(order, order, nbytes / p, p, self.collective == "reducescatter"))
        from ..nccl.rings import rings_gather_program

        return rings_gather_program(cluster, p, nbytes, self.options.channels, self.collective)


@register
class RingAllGather(_RingGathering):
    name = "ring"
    collective = "allgather"
    summary = "p-1 steps around a ring, one block per step (channels=K: NCCL's K rings, the buffer split)"

    def _ranks(self, job: Job, order: list[int]) -> list[Generator[Any, Any, None]]:
        # position i starts with (and passes on) rank order[i]'s block
        return [ring_allgather(job, order, i, order, job.nbytes / job.p, 0, first=0) for i in range(job.p)]

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return (p - 1) * alpha + (p - 1) / p * n * beta


@register
class RingReduceScatter(_RingGathering):
    name = "ring"
    collective = "reducescatter"
    summary = "p-1 steps around a ring, one block and its reduction per step (channels=K: NCCL's K rings)"

    def _ranks(self, job: Job, order: list[int]) -> list[Generator[Any, Any, None]]:
        p = job.p
        # the ring leaves position i with chunk i+1: name chunk k after the block of the rank at position
        # k-1 so that it holds its own rank's block
        segments = [order[(k - 1) % p] for k in range(p)]
        return [ring_reduce_scatter(job, order, i, segments, job.nbytes / p, 0) for i in range(p)]

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        # with K channels every rank's K actors reduce their parts side by side (one SM each)
        return (p - 1) * alpha + (p - 1) / p * n * (beta + gamma / self.options.channels)


@register
class RingReduce(Algorithm):
    name = "ring"
    collective = "reduce"
    summary = "ring reduce-scatter, then every rank sends its reduced chunk to the root (gloo)"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, root = job.p, job.root
        if p == 1:
            return
        order = [(root + i) % p for i in range(p)]
        segments = list(range(p))
        chunk = job.nbytes / p
        position = {rank: i for i, rank in enumerate(order)}

        def member(i: int) -> Generator[Any, Any, None]:
            yield from ring_reduce_scatter(job, order, i, segments, chunk, 0)
            if i:
                yield job.send(order[i], root, chunk, job.data.take(order[i], (i + 1) % p), p)

        collect = fan_in(job, root, order[1:], p, storing(job, root, lambda src: (position[src] + 1) % p))
        yield spread(job, [*(member(i) for i in range(p)), collect])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        if p == 1:
            return 0.0
        return p * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma


class ChainOptions(Spec):
    chunks: Chunks = 8


@register
class RingBroadcast(Algorithm):
    name = "ring"
    collective = "broadcast"
    Options = ChainOptions
    summary = "pipelined chain from the root, in `chunks` pieces"
    examples = ("ring:chunks=1", "ring:chunks=3")

    options: ChainOptions

    def segments(self, p: int) -> int:
        return self.options.chunks

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, k = job.p, self.options.chunks
        if p == 1:
            return
        order = [(job.root + i) % p for i in range(p)]
        chunk = job.nbytes / k

        def member(i: int) -> Generator[Any, Any, None]:
            me, sent = order[i], None
            for c in range(k):
                if i:
                    job.data.put(me, c, (yield job.recv(me, order[i - 1], c)))
                if i + 1 < p:
                    if sent is not None:
                        yield sent
                    sent = job.send(me, order[i + 1], chunk, job.data.take(me, c), c)
            if sent is not None:
                yield sent

        yield spread(job, [member(i) for i in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        if p == 1:
            return 0.0
        k = self.options.chunks
        return (p + k - 2) * (alpha + n / k * beta)
