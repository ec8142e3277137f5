"""Binary-tree all-reduce, pipelined in ``chunks`` pieces: a reduce up the tree, then a broadcast down.

The tree is the binary heap over the ranks (rank ``order[j]``'s children are ``order[2j+1]`` and
``order[2j+2]``; the root is ``order[0]``, rank 0 by default). The buffer is cut into ``K`` pieces that
flow through the tree in rounds, as the closed form ``(2d + K - 1)·(α + 2(n/K)β)`` counts them: a node
of height ``h`` sends piece ``k`` to its parent in round ``h + k`` (after receiving and adding its
children's piece ``k`` in earlier rounds); the root, at depth 0 of a tree of height ``d``, sends piece
``k`` down in round ``d + k``, and a node at depth ``t`` forwards it in round ``d + t + k``. A node posts
everything of one round together (two children share its link, as on a single-port host) and starts the
next round when they are done. ``chunks=1`` is the unpipelined tree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from pydantic import Field

from sim.schema import Spec

from ..schedule import Add, Local, Step, Transfer, schedule_plan
from .base import RealAlgorithm, Task
from .registry import register

__all__ = ["Tree", "TreeAllReduce", "TreeOptions", "heap_tree", "pipelined_tree", "rounds_to_steps"]


@dataclass(frozen=True)
class Tree:
    """A rooted tree over ranks: ``parent[r]`` (None at the root) and ``children[r]``."""

    root: int
    parent: dict[int, int | None]
    children: dict[int, list[int]]

    def depth(self, r: int) -> int:
        d = 0
        while (up := self.parent[r]) is not None:
            r, d = up, d + 1
        return d

    def height(self, r: int) -> int:
        kids = self.children[r]
        return 0 if not kids else 1 + max(self.height(c) for c in kids)


def heap_tree(order: Sequence[int]) -> Tree:
    """The binary heap over ``order``: ``order[0]`` is the root, ``order[j]`` has children
    ``order[2j+1]`` and ``order[2j+2]``."""
    q = len(order)
    parent = {order[j]: (order[(j - 1) // 2] if j else None) for j in range(q)}
    children = {order[j]: [order[c] for c in (2 * j + 1, 2 * j + 2) if c < q] for j in range(q)}
    return Tree(order[0], parent, children)


@dataclass
class Round:
    """What one rank posts in one round."""

    sends: list[Transfer] = field(default_factory=list)
    recvs: list[Transfer] = field(default_factory=list)
    after: list[Local] = field(default_factory=list)


def pipelined_tree(
    tree: Tree, me: int, pieces: Sequence[torch.Tensor], tag: Callable[[int], int], rounds: dict[int, Round]
) -> None:
    """Add ``me``'s part of a pipelined reduce + broadcast over ``tree`` to ``rounds`` (round -> what to
    post). ``pieces`` are views of the buffer, reduced in place; ``tag(t)`` is the tag of round ``t``."""
    d = tree.height(tree.root)
    depth = tree.depth(me)
    up = tree.parent[me]
    longest = max((p.numel() for p in pieces), default=0)
    for child in tree.children[me]:
        tmp = torch.empty(longest, dtype=pieces[0].dtype, device=pieces[0].device)  # one per child
        h = tree.height(child)
        for k, piece in enumerate(pieces):
            got = tmp[: piece.numel()]
            rounds[h + k].recvs.append((got, child, tag(h + k)))
            rounds[h + k].after.append(Add(piece, piece, got))
            rounds[d + depth + k].sends.append((piece, child, tag(d + depth + k)))
    if up is not None:
        h = tree.height(me)
        for k, piece in enumerate(pieces):
            rounds[h + k].sends.append((piece, up, tag(h + k)))
            rounds[d + depth - 1 + k].recvs.append((piece, up, tag(d + depth - 1 + k)))


def rounds_to_steps(rounds: dict[int, Round]) -> list[Step]:
    """One step per non-empty round, in round order."""
    return [
        Step(sends=tuple(r.sends), recvs=tuple(r.recvs), after=tuple(r.after))
        for _, r in sorted(rounds.items())
        if r.sends or r.recvs or r.after
    ]


def tree_allreduce(order: Sequence[int], i: int, buf: torch.Tensor, tag: int = 0, chunks: int = 1) -> list[Step]:
    """Rank ``order[i]``'s pipelined binary-tree all-reduce of ``buf`` among ``order``."""
    rounds: dict[int, Round] = defaultdict(Round)
    pipelined_tree(heap_tree(order), order[i], torch.tensor_split(buf, chunks), lambda t: tag + t, rounds)
    return rounds_to_steps(rounds)


class TreeOptions(Spec):
    """``chunks``: pieces the buffer is pipelined in (1 = unpipelined)."""

    chunks: int = Field(1, ge=1)


@register
class TreeAllReduce(RealAlgorithm):
    name = "tree"
    collective = "allreduce"
    Options = TreeOptions
    summary = "binary tree (heap order) reduce then broadcast, pipelined in `chunks` pieces"

    def plan(self, task: Task) -> Callable[[], None]:
        chunks = self.options.chunks  # type: ignore[attr-defined]
        return schedule_plan(task.comm, tree_allreduce(range(task.p), task.rank, task.out, 0, chunks))
