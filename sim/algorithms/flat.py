"""Flat (one-to-all and all-to-one) collectives, and the fan-in / fan-out steps that master-worker and
the parameter server are built from.

Every message of a flat step starts at once, so on a star the ``q`` flows into (or out of) one host
share its link: the step takes ``α + q·m·β`` for ``q`` messages of ``m`` bytes.

* broadcast ``flat``: the root sends the whole buffer to every other rank at once::

      T = α + (p-1)·n·β

* gather ``flat`` (n = the total gathered): every rank sends its block of n/p to the root at once::

      T = α + (p-1)/p·n·β

* scatter ``flat`` (n = the total scattered): the root sends every rank its block at once::

      T = α + (p-1)/p·n·β
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

from ..runtime import Job, Segment
from .base import Algorithm
from .registry import register

__all__ = ["FlatBroadcast", "FlatGather", "FlatScatter", "fan_in", "fan_out", "receive_into", "spread", "storing"]


def spread(job: Job, bodies: Sequence[Generator[Any, Any, None]]) -> Any:
    """One SimPy process per body; the returned event fires when all of them are done."""
    return job.env.all_of([job.env.process(body) for body in bodies])


def fan_in(
    job: Job,
    at: int,
    peers: Sequence[int],
    tag: int,
    fold: Callable[[int, Any], Generator[Any, Any, None]],
) -> Generator[Any, Any, None]:
    """``at`` receives one message with ``tag`` from each of ``peers`` and handles each one with
    ``fold(src, payload)`` in the order they arrive (ties in ``peers`` order): a reduction there is
    serialized on ``at``'s processor, as a master or a server reduces one buffer after another.
    """
    pending = {src: job.recv(at, src, tag) for src in peers}
    while pending:
        if not any(event.triggered for event in pending.values()):
            yield job.env.any_of(list(pending.values()))
        for src in [s for s, event in pending.items() if event.triggered]:
            payload = pending.pop(src).value
            yield from fold(src, payload)


def storing(job: Job, at: int, seg_of: Callable[[int], Segment]) -> Callable[[int, Any], Generator[Any, Any, None]]:
    """A ``fold`` for :func:`fan_in` that stores the message from ``src`` as ``at``'s copy of
    ``seg_of(src)`` (a copy, no reduction)."""

    def fold(src: int, payload: Any) -> Generator[Any, Any, None]:
        job.data.put(at, seg_of(src), payload)
        yield from ()

    return fold


def fan_out(
    job: Job, at: int, peers: Sequence[int], nbytes: float, payload: Callable[[int], Any], tag: int
) -> list[Any]:
    """``at`` sends ``nbytes`` to each of ``peers`` at once (payload ``payload(peer)``); returns the
    send events."""
    return [job.send(at, dst, nbytes, payload(dst), tag) for dst in peers]


def receive_into(job: Job, rank: int, src: int, seg: Segment, tag: int) -> Generator[Any, Any, None]:
    """``rank`` receives one message from ``src`` and stores it as its copy of ``seg``."""
    got = yield job.recv(rank, src, tag)
    job.data.put(rank, seg, got)


@register
class FlatBroadcast(Algorithm):
    name = "flat"
    collective = "broadcast"
    summary = "the root sends the whole buffer to every rank at once"

    def segments(self, p: int) -> int:
        return 1

    def run(self, job: Job) -> Generator[Any, Any, None]:
        root, others = job.root, [r for r in range(job.p) if r != job.root]
        sends = fan_out(job, root, others, job.nbytes, lambda _d: job.data.take(root, 0), tag=0)
        yield spread(job, [receive_into(job, r, root, 0, 0) for r in others])
        yield job.env.all_of(sends)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 0.0 if p == 1 else alpha + (p - 1) * n * beta


@register
class FlatGather(Algorithm):
    name = "flat"
    collective = "gather"
    summary = "every rank sends its block to the root at once"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        root, others = job.root, [r for r in range(job.p) if r != job.root]
        chunk = job.nbytes / job.p
        sends = [job.send(r, root, chunk, job.data.take(r, r), 0) for r in others]

        yield from fan_in(job, root, others, 0, storing(job, root, lambda src: src))
        yield job.env.all_of(sends)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 0.0 if p == 1 else alpha + (p - 1) / p * n * beta


@register
class FlatScatter(Algorithm):
    name = "flat"
    collective = "scatter"
    summary = "the root sends every rank its block at once"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        root, others = job.root, [r for r in range(job.p) if r != job.root]
        chunk = job.nbytes / job.p
        sends = fan_out(job, root, others, chunk, lambda d: job.data.take(root, d), tag=0)
        yield spread(job, [receive_into(job, r, root, r, 0) for r in others])
        yield job.env.all_of(sends)

    cost = FlatGather.cost  # the mirror image: same time on a star
