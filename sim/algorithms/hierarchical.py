"""Hierarchical all-reduce: ``hierarchical[:inner=ring,outer=ring|tree|halving-doubling]``.

The ranks on each host (G of them, the same number on every host, H hosts):

1. **reduce-scatter inside the host** -- a ring over the host's ranks in chunks of n/G; local rank i
   ends holding chunk (i + 1) mod G summed over the host;
2. **all-reduce across hosts, one per chunk** -- the ranks holding chunk c (one per host, all with the
   same local index: the same rail of a rail-optimized fabric) all-reduce its n/G bytes with the
   ``outer`` algorithm; the G outer all-reduces run side by side on disjoint ranks;
3. **all-gather inside the host** -- the ring again, passing the reduced chunks around.

(ASTRA-sim's multi-dimensional collectives; NCCL's rings over NVLink then NICs.) The algorithm is a
step program (:mod:`sim.program`): the message-level run interprets it rank by rank with the data check,
the fast path runs it vectorized -- in closed form where, as on DGX rails, no two messages contend.

Cost with intra-host (α_i, β_i) and inter-host (α_o, β_o) Hockney parameters, in lock-step
(:func:`two_level_cost`)::

    T = 2(G-1)·α_i + 2(G-1)/G·n·β_i + (G-1)/G·n·γ  +  outer(H, n/G, α_o, β_o, γ)

On a star every host has one GPU (G = 1): the algorithm is its outer algorithm, and so is :meth:`cost`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal

import numpy as np

from ..errors import AlgorithmError
from ..program import Step, StepProgram, concat, merge, run_messages
from ..runtime import Job
from ..schema import Spec
from .base import Algorithm
from .registry import register
from .ring import ring_steps, rings_steps

__all__ = ["Hierarchical", "halving_doubling_program", "host_groups", "tree_program", "two_level_cost"]


class HierarchicalOptions(Spec):
    inner: Literal["ring"] = "ring"
    outer: Literal["ring", "tree", "halving-doubling"] = "ring"


def host_groups(cluster: Any, p: int) -> list[list[int]]:
    """Ranks 0..p-1 grouped by host (hosts in order of their first rank); every host must hold the
    same number of them."""
    groups: dict[str, list[int]] = {}
    for r in range(p):
        groups.setdefault(cluster.host_of(r) if cluster is not None else str(r), []).append(r)
    out = list(groups.values())
    sizes = {len(g) for g in out}
    if len(sizes) > 1:
        raise AlgorithmError(
            f"hierarchical: every host must hold the same number of ranks; these hold {sorted(sizes)} "
            "(choose ranks as a multiple of the GPUs per host)"
        )
    return out


def core_size(q: int) -> int:
    """The largest power of two <= q (halving-doubling's core)."""
    return 1 << (q.bit_length() - 1)


def halving_doubling_program(order: list[int], nbytes: float, endpoints: int, seg_off: int = 0) -> StepProgram:
    """Rabenseifner's all-reduce over ``order`` as a step program: recursive halving reduce-scatter,
    then recursive doubling all-gather, on q' blocks of nbytes/q' (q' = the largest power of two <=
    len(order)). With r = len(order) - q' extra participants, MPICH's folding comes first: position 2i
    sends its buffer to 2i+1 (i < r), which reduces it and takes part in the core; at the end 2i+1 sends
    the result back to 2i."""
    full = list(order)
    q = core_size(len(full))
    extra = len(full) - q
    core = [full[2 * i + 1] for i in range(extra)] + full[2 * extra :]
    order = core
    block = nbytes / q
    everything = dict(endpoints=endpoints, seg=seg_off, seg_width=q)
    fold_in = (
        Step.make(
            [full[2 * i] for i in range(extra)], [full[2 * i + 1] for i in range(extra)], nbytes, nbytes, **everything
        )
        if extra
        else None
    )
    ranges = [(0, q)] * q
    phases: list[tuple[Step, int]] = []
    mask = q >> 1
    while mask:  # recursive halving: send the half the partner keeps, reduce the half received
        src, dst, seg, width = [], [], [], []
        new = []
        for j in range(q):
            lo, hi = ranges[j]
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if j & mask else ((lo, mid), (mid, hi))
            src.append(order[j])
            dst.append(order[j ^ mask])
            seg.append(seg_off + give[0])
            width.append(give[1] - give[0])
            new.append(keep)
        half = np.asarray(width) * block
        phases.append((Step.make(src, dst, half, half, endpoints=endpoints, seg=seg, seg_width=width), 1))
        ranges = new
        mask >>= 1
    mask = 1
    while mask < q:  # recursive doubling: swap everything held, store what arrives
        src, dst, seg, width = [], [], [], []
        for j in range(q):
            lo, hi = ranges[j]
            src.append(order[j])
            dst.append(order[j ^ mask])
            seg.append(seg_off + lo)
            width.append(hi - lo)
        phases.append(
            (Step.make(src, dst, np.asarray(width) * block, 0.0, endpoints=endpoints, seg=seg, seg_width=width), 1)
        )
        ranges = [(min(ranges[j][0], ranges[j ^ mask][0]), max(ranges[j][1], ranges[j ^ mask][1])) for j in range(q)]
        mask <<= 1
    if fold_in is not None:
        fold_out = Step.make(
            [full[2 * i + 1] for i in range(extra)], [full[2 * i] for i in range(extra)], nbytes, 0.0, **everything
        )
        phases = [(fold_in, 1), *phases, (fold_out, 1)]
    return StepProgram(endpoints, tuple(phases))


def tree_program(order: list[int], nbytes: float, endpoints: int, seg_off: int = 0, seg_width: int = 1) -> StepProgram:
    """A binary heap tree over ``order`` (root ``order[0]``, children of position j at 2j+1, 2j+2):
    reduce up one level per step, then broadcast down one level per step; unpipelined. Every message
    carries the whole buffer, data-check segments ``[seg_off, seg_off + seg_width)``."""
    q = len(order)
    depth = [0] * q
    for j in range(1, q):
        depth[j] = depth[(j - 1) // 2] + 1
    d = max(depth)
    phases: list[tuple[Step, int]] = []
    for s in range(d):  # reduce: the nodes at depth d - s send to their parents
        senders = [j for j in range(q) if depth[j] == d - s]
        src = [order[j] for j in senders]
        dst = [order[(j - 1) // 2] for j in senders]
        phases.append((Step.make(src, dst, nbytes, nbytes, endpoints=endpoints, seg=seg_off, seg_width=seg_width), 1))
    for s in range(d):  # broadcast: the nodes at depth s send to their children
        senders = [j for j in range(1, q) if depth[j] == s + 1]
        src = [order[(j - 1) // 2] for j in senders]
        dst = [order[j] for j in senders]
        phases.append((Step.make(src, dst, nbytes, 0.0, endpoints=endpoints, seg=seg_off, seg_width=seg_width), 1))
    return StepProgram(endpoints, tuple(phases))


def _outer_program(outer: str, order: list[int], nbytes: float, endpoints: int, seg_off: int) -> StepProgram:
    if len(order) == 1:
        return StepProgram(endpoints, ())
    if outer == "ring":
        rs, ag = ring_steps(order, nbytes / len(order), endpoints, seg_off=seg_off)
        return StepProgram(endpoints, ((rs, len(order) - 1), (ag, len(order) - 1)))
    if outer == "halving-doubling":
        return halving_doubling_program(order, nbytes, endpoints, seg_off)
    return tree_program(order, nbytes, endpoints, seg_off, seg_width=len(order))


@register
class Hierarchical(Algorithm):
    name = "hierarchical"
    collective = "allreduce"
    Options = HierarchicalOptions
    summary = "reduce-scatter in each host, all-reduce of the 1/G slice across hosts per rail, all-gather"
    examples = ("hierarchical:outer=tree", "hierarchical:outer=halving-doubling")

    options: HierarchicalOptions

    def _per_chunk(self, hosts: int) -> int:
        """Data-check segments per host chunk: the outer algorithm's blocks."""
        return core_size(hosts) if self.options.outer == "halving-doubling" else hosts

    def segments(self, p: int) -> int:
        return self._per_chunk(p)  # a star: one rank per host

    def segments_for(self, p: int, cluster: Any) -> int:
        groups = host_groups(cluster, p)
        return len(groups[0]) * self._per_chunk(len(groups))

    def closed_form_exact(self, p: int) -> bool:
        if self.options.outer == "halving-doubling":
            return p & (p - 1) == 0  # folding adds steps the closed form does not count
        if self.options.outer == "tree":
            return p == 2 or (p + 1) & p == 0  # complete binary trees
        return True

    def check(self, p: int, cluster: Any) -> None:
        host_groups(cluster, p)

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        groups = host_groups(cluster, p)
        g, h = len(groups[0]), len(groups)
        hs = self._per_chunk(h)
        chunk = nbytes / g
        hosts = np.asarray(groups, dtype=np.int64)  # (H, G): host h's ranks
        if g > 1:
            rs_step, ag_step = rings_steps(hosts, chunk, p, seg_scale=hs, seg_width=hs)
            rs, ag = StepProgram(p, ((rs_step, g - 1),)), StepProgram(p, ((ag_step, g - 1),))
        else:
            rs = ag = StepProgram(p, ())
        # after the reduce-scatter, local rank i holds chunk (i + 1) mod G: rail i carries chunk i + 1
        rails = np.roll(hosts, 1, axis=1).T  # rails[c]: the ranks holding chunk c, one per host
        if h == 1:
            outer = StepProgram(p, ())
        elif self.options.outer == "ring":
            o_rs, o_ag = rings_steps(rails, chunk / h, p, seg_off=np.arange(g) * hs)
            outer = StepProgram(p, ((o_rs, h - 1), (o_ag, h - 1)))
        else:
            outer = merge(
                [_outer_program(self.options.outer, rails[c].tolist(), chunk, p, c * hs) for c in range(g)], p
            )
        return concat(rs, outer, ag)

    def run(self, job: Job) -> Generator[Any, Any, None]:
        program = self.program(job.p, job.nbytes, job.net.cluster)
        if program is not None and program.phases:
            yield from run_messages(job, program)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return two_level_cost(self.options.outer, 1, p, n, 0.0, 0.0, alpha, beta, gamma)


def two_level_cost(
    outer: str,
    g: int,
    h: int,
    n: float,
    alpha_in: float,
    beta_in: float,
    alpha_out: float,
    beta_out: float,
    gamma: float = 0.0,
) -> float:
    """Time of hierarchical all-reduce with G ranks per host on H hosts, in lock-step: the intra-host
    ring twice, and the outer algorithm on n/G bytes (its closed form on a star, where exact)."""
    intra = 2 * (g - 1) * alpha_in + 2 * (g - 1) / g * n * beta_in + (g - 1) / g * n * gamma
    m = n / g
    if h == 1:
        return intra
    if outer == "ring":
        out = 2 * (h - 1) * alpha_out + 2 * (h - 1) / h * m * beta_out + (h - 1) / h * m * gamma
    elif outer == "halving-doubling":
        out = 2 * np.log2(h) * alpha_out + 2 * (h - 1) / h * m * beta_out + (h - 1) / h * m * gamma
    else:  # a complete binary tree of depth d: two children share a parent's link
        d = int(np.floor(np.log2(h)))  # the heap tree's depth
        fan = 2 if h > 2 else 1
        out = 2 * d * (alpha_out + fan * m * beta_out) + d * fan * m * gamma
    return float(intra + out)
