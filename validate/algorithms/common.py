"""Schedule pieces several real algorithms share: a pipelined chain of pieces (the tree's levels, the
ring broadcast's chain) and MPICH's fold of a rank count onto a power of two (halving-doubling and
recursive doubling).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..schedule import Add, Op

__all__ = ["PowerOfTwoFold", "fold", "pipeline_ops"]


def pipeline_ops(
    pieces: Sequence[torch.Tensor], sources: Sequence[int], targets: Sequence[int], tag: int, *, reduce: bool
) -> list[Op]:
    """Steps ``c = 0 .. K``: receive piece ``c`` (tag ``tag + c``) from every source -- adding it to the
    piece when ``reduce``, else storing it -- and send piece ``c - 1`` to every target."""
    k = len(pieces)
    longest = max((p.numel() for p in pieces), default=0)
    # two receive buffers per source, used in turn, so that a step's receives can be posted early
    scratch = {
        s: [torch.empty(longest, dtype=pieces[0].dtype, device=pieces[0].device) for _ in range(2)]
        for s in (sources if reduce else ())
    }
    steps = []
    for c in range(k + 1):
        recvs, each = [], []
        if c < k:
            for s in sources:
                if reduce:
                    got = scratch[s][c % 2][: pieces[c].numel()]
                    recvs.append((got, s, tag + c))
                    each.append(Add(pieces[c], pieces[c], got))
                else:
                    recvs.append((pieces[c], s, tag + c))
                    each.append(None)
        sends = [(pieces[c - 1], t, tag + c - 1) for t in targets] if c else []
        steps.append(Op(sends=tuple(sends), recvs=tuple(recvs), each=tuple(each)))
    return steps


@dataclass(frozen=True)
class PowerOfTwoFold:
    """The non-power-of-two step: ``pre`` and ``post`` steps, this rank's new rank (None when it sits
    out), ``pof2`` and ``real(new_rank)`` -> rank."""

    pre: list[Op]
    post: list[Op]
    new_rank: int | None
    pof2: int
    real: Callable[[int], int]


def fold(order: Sequence[int], i: int, buf: torch.Tensor, tag: int) -> PowerOfTwoFold:
    """Fold ``len(order)`` ranks onto a power of two (MPICH): uses tags ``tag`` and ``tag + 1``."""
    q = len(order)
    pof2 = 1 << (q.bit_length() - 1)
    rem = q - pof2

    def real(new: int) -> int:
        return order[2 * new + 1] if new < rem else order[new + rem]

    if i >= 2 * rem:
        return PowerOfTwoFold([], [], i - rem, pof2, real)
    if i % 2 == 0:
        up = order[i + 1]
        return PowerOfTwoFold([Op(sends=((buf, up, tag),))], [Op(recvs=((buf, up, tag + 1),))], None, pof2, real)
    down, tmp = order[i - 1], torch.empty_like(buf)
    pre = [Op(recvs=((tmp, down, tag),), after=(Add(buf, buf, tmp),))]
    return PowerOfTwoFold(pre, [Op(sends=((buf, down, tag + 1),))], i // 2, pof2, real)
