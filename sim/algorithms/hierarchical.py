"""Hierarchical all-reduce: ``hierarchical[:inner=ring,outer=ring|tree|halving-doubling,chunks=K]``.

The ranks on each host (G of them, the same number on every host, H hosts):

1. **reduce-scatter inside the host** -- a ring over the host's ranks in chunks of n/G; local rank i
   ends holding chunk (i + 1) mod G summed over the host;
2. **all-reduce across hosts, one per chunk** -- the ranks holding chunk c (one per host, all with the
   same local index: the same rail of a rail-optimized fabric) all-reduce its n/G bytes with the
   ``outer`` algorithm; the G outer all-reduces run side by side on disjoint ranks;
3. **all-gather inside the host** -- the ring again, passing the reduced chunks around.

(ASTRA-sim's multi-dimensional collectives; NCCL's rings over NVLink then NICs.)

``chunks=K`` pipelines the three phases: the buffer is cut into K chunks and the phases overlap by
chunk, in rounds: in round r the host's ring reduce-scatters chunk r and then all-gathers chunk r - 2,
while the rails all-reduce chunk r - 1 across hosts (intra-host and inter-host messages of a round share
their steps; a step waits for both). K + 2 rounds of max(2(G-1), outer steps) steps on n/K bytes each
replace one pass on n: the inter-host phase hides under the intra-host one (or the other way round). The algorithm is a
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
from pydantic import Field

from ..errors import AlgorithmError
from ..program import StepProgram, concat, merge, overlay, run_messages
from ..runtime import Job
from ..schema import Spec
from .base import Algorithm
from .common import core_size
from .halving_doubling import halving_doubling_program
from .registry import register
from .ring import ring_steps, rings_steps
from .tree import tree_program

__all__ = ["Hierarchical", "host_groups", "two_level_cost"]


class HierarchicalOptions(Spec):
    inner: Literal["ring"] = "ring"
    outer: Literal["ring", "tree", "halving-doubling"] = "ring"
    chunks: int = Field(1, ge=1, le=4096)


def host_groups(cluster: Any, p: int) -> list[list[int]]:
    """Ranks 0..p-1 grouped by host (hosts in order of their first rank); every host must hold the
    same number of them."""
    hosts = cluster.rank_host[:p] if cluster is not None else np.arange(p)
    counts = np.bincount(hosts)  # the ranks 0..p-1 sit on hosts 0..k-1 (numbered by first rank)
    order = np.argsort(hosts, kind="stable")
    sizes = set(counts.tolist())
    if len(sizes) > 1:
        raise AlgorithmError(
            f"hierarchical: every host must hold the same number of ranks; these hold {sorted(sizes)} "
            "(choose ranks as a multiple of the GPUs per host)"
        )
    return order.reshape(len(counts), -1).tolist()  # hosts of equal size: one row each


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
    examples = ("hierarchical:outer=tree", "hierarchical:outer=halving-doubling", "hierarchical:chunks=4")

    options: HierarchicalOptions

    def _per_chunk(self, hosts: int) -> int:
        """Data-check segments per host chunk: the outer algorithm's blocks."""
        return core_size(hosts) if self.options.outer == "halving-doubling" else hosts

    def segments(self, p: int) -> int:
        return self.options.chunks * self._per_chunk(p)  # a star: one rank per host

    def segments_for(self, p: int, cluster: Any) -> int:
        groups = host_groups(cluster, p)
        return self.options.chunks * len(groups[0]) * self._per_chunk(len(groups))

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
        k = self.options.chunks
        if k == 1:
            return concat(*self._phases(groups, p, nbytes, 0))
        width = len(groups[0]) * self._per_chunk(len(groups))
        parts = [self._phases(groups, p, nbytes / k, c * width) for c in range(k)]
        rounds = []
        for r in range(k + 2):
            intra = [ph for c, i in ((r, 0), (r - 2, 2)) if 0 <= c < k for ph in parts[c][i].phases]
            outer = list(parts[r - 1][1].phases) if 0 <= r - 1 < k else []
            rounds.append(overlay(p, intra, outer))
        return concat(*rounds)

    def _phases(
        self, groups: list[list[int]], p: int, nbytes: float, seg_base: int
    ) -> tuple[StepProgram, StepProgram, StepProgram]:
        """Reduce-scatter in the hosts, all-reduce across them, all-gather in the hosts: one pass over
        ``nbytes``, its data-check segments from ``seg_base`` on."""
        g, h = len(groups[0]), len(groups)
        hs = self._per_chunk(h)
        chunk = nbytes / g
        hosts = np.asarray(groups, dtype=np.int64)  # (H, G): host h's ranks
        if g > 1:
            rs_step, ag_step = rings_steps(hosts, chunk, p, seg_off=seg_base, seg_scale=hs, seg_width=hs)
            rs, ag = StepProgram(p, ((rs_step, g - 1),)), StepProgram(p, ((ag_step, g - 1),))
        else:
            rs = ag = StepProgram(p, ())
        # after the reduce-scatter, local rank i holds chunk (i + 1) mod G: rail i carries chunk i + 1
        rails = np.roll(hosts, 1, axis=1).T  # rails[c]: the ranks holding chunk c, one per host
        if h == 1:
            outer = StepProgram(p, ())
        elif self.options.outer == "ring":
            o_rs, o_ag = rings_steps(rails, chunk / h, p, seg_off=seg_base + np.arange(g) * hs)
            outer = StepProgram(p, ((o_rs, h - 1), (o_ag, h - 1)))
        else:
            outer = merge(
                [_outer_program(self.options.outer, rails[c].tolist(), chunk, p, seg_base + c * hs) for c in range(g)],
                p,
            )
        return rs, outer, ag

    def run(self, job: Job) -> Generator[Any, Any, None]:
        program = self.program(job.p, job.nbytes, job.net.cluster)
        if program is not None and program.phases:
            yield from run_messages(job, program)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        k = self.options.chunks  # on a star (G = 1) the chunks' outer all-reduces run one after the other
        return k * two_level_cost(self.options.outer, 1, p, n / k, 0.0, 0.0, alpha, beta, gamma)


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
