"""Binomial trees rooted at ``root`` (MPICH's and gloo's broadcast and reduce), ranks renumbered
relative to the root (``rel = (rank - root) mod p``).

* broadcast ``binomial-tree``: rel receives from rel - lowbit(rel), then sends to rel + 2^j for the
  powers of two below lowbit(rel), the farthest first, one send after the other. Every rank receives
  once and sends one message at a time, so the ⌈log2 p⌉ rounds are lockstep on a star::

      T = ⌈log2 p⌉·(α + n·β)                   (exact for every p)

* reduce ``binomial-tree``: the mirror image. In round j, rel with bit j set (and lower bits clear)
  sends its partial sum to rel - 2^j; the receiver reduces it (n·γ) before its own send::

      T = log2 p·(α + n·β + n·γ)               (exact for p a power of two)

  For other p a rank whose subtree is short sends early and its message shares the receiver's link
  with another round's message: with p = 3, ranks 1 and 2 both send to 0 at once, and
  T = α + 2n·β + 2n·γ instead of 2·(α + n·β + n·γ). :meth:`BinomialReduce.cost` returns the
  round-by-round form and says it is not exact there.

* gather ``binomial-tree`` (n = the total, blocks of n/p): the reduce's tree, but a rank passes on
  the blocks of its whole subtree (2^j of them in round j) instead of one reduced buffer::

      T = log2 p·α + (p-1)/p·n·β               (exact for p a power of two, for the reduce's reason)

* scatter ``binomial-tree``: the broadcast's tree, a rank passing each child the blocks of the
  child's subtree. The root sends ⌈log2 p⌉ messages, p-1 blocks in all, one after the other, and no
  chain is longer, so for every p::

      T = ⌈log2 p⌉·α + (p-1)/p·n·β
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from ..runtime import Job
from .base import Algorithm
from .common import ceil_log2, spread
from .registry import register

__all__ = ["BinomialBroadcast", "BinomialGather", "BinomialReduce", "BinomialScatter"]


def _lowbit(rel: int, p: int) -> int:
    """The lowest set bit of ``rel`` (the root's is the first power of two >= p)."""
    return rel & -rel if rel else 1 << ceil_log2(p)


@register
class BinomialBroadcast(Algorithm):
    name = "binomial-tree"
    collective = "broadcast"
    summary = "binomial tree from the root, ⌈log2 p⌉ rounds of the whole buffer"

    def segments(self, p: int) -> int:
        return 1

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p

        def member(rel: int) -> Generator[Any, Any, None]:
            me = (rel + job.root) % p
            low = _lowbit(rel, p)
            if rel:
                parent = (rel - low + job.root) % p
                job.data.put(me, 0, (yield job.recv(me, parent, 0)))
            mask = low >> 1
            while mask:
                if rel + mask < p:
                    yield job.send(me, (rel + mask + job.root) % p, job.nbytes, job.data.take(me, 0), 0)
                mask >>= 1

        yield spread(job, [member(rel) for rel in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return ceil_log2(p) * (alpha + n * beta)


@register
class BinomialReduce(Algorithm):
    name = "binomial-tree"
    collective = "reduce"
    summary = "binomial tree to the root, log2 p rounds of the whole buffer and its reduction"

    def segments(self, p: int) -> int:
        return 1

    def closed_form_exact(self, p: int) -> bool:
        return p & (p - 1) == 0

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p = job.p

        def member(rel: int) -> Generator[Any, Any, None]:
            me = (rel + job.root) % p
            mask = 1
            while mask < p:
                if rel & mask:
                    yield job.send(me, (rel - mask + job.root) % p, job.nbytes, job.data.take(me, 0), 0)
                    return
                if rel + mask < p:
                    got = yield job.recv(me, (rel + mask + job.root) % p, 0)
                    yield from job.combine(me, 0, got, job.nbytes)
                mask <<= 1

        yield spread(job, [member(rel) for rel in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return ceil_log2(p) * (alpha + n * beta + n * gamma)


def _subtree(job: Job, rel: int, size: int) -> np.ndarray:
    """The blocks (absolute ranks) of the ``size`` relative ranks from ``rel`` on."""
    return (np.arange(rel, rel + size) + job.root) % job.p


@register
class BinomialGather(Algorithm):
    name = "binomial-tree"
    collective = "gather"
    summary = "binomial tree to the root, each rank passing on its subtree's blocks"

    def closed_form_exact(self, p: int) -> bool:
        return p & (p - 1) == 0

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, block = job.p, job.nbytes / job.p

        def member(rel: int) -> Generator[Any, Any, None]:
            me, held, mask = (rel + job.root) % p, 1, 1
            while mask < p:
                if rel & mask:
                    blocks = _subtree(job, rel, held)
                    yield job.send(me, (rel - mask + job.root) % p, held * block, job.data.take(me, blocks), 0)
                    return
                if rel + mask < p:
                    size = min(mask, p - rel - mask)
                    got = yield job.recv(me, (rel + mask + job.root) % p, 0)
                    job.data.put(me, _subtree(job, rel + mask, size), got)
                    held += size
                mask <<= 1

        yield spread(job, [member(rel) for rel in range(p)])

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return ceil_log2(p) * alpha + (p - 1) / p * n * beta


@register
class BinomialScatter(Algorithm):
    name = "binomial-tree"
    collective = "scatter"
    summary = "binomial tree from the root, each child getting its subtree's blocks"

    def run(self, job: Job) -> Generator[Any, Any, None]:
        p, block = job.p, job.nbytes / job.p

        def member(rel: int) -> Generator[Any, Any, None]:
            me = (rel + job.root) % p
            low = _lowbit(rel, p)
            if rel:
                got = yield job.recv(me, (rel - low + job.root) % p, 0)
                job.data.put(me, _subtree(job, rel, min(low, p - rel)), got)
            mask = low >> 1
            while mask:
                if rel + mask < p:
                    size = min(mask, p - rel - mask)
                    blocks = _subtree(job, rel + mask, size)
                    yield job.send(me, (rel + mask + job.root) % p, size * block, job.data.take(me, blocks), 0)
                mask >>= 1

        yield spread(job, [member(rel) for rel in range(p)])

    cost = BinomialGather.cost  # the same form, exact for every p here
