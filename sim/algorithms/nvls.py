"""NVLS all-reduce (NVLink SHARP): ``nvls`` inside one host, ``nvls-tree`` across hosts.

An NVSwitch of the third generation reduces and multicasts. NCCL's NVLS kernel (``device/all_reduce.h``,
``runNvls``) makes every GPU the *head* of 1/G of each chunk: the head issues a multicast load-reduce,
so the switch reads that part from all G GPUs and returns the sum to the head, then a multicast store,
so the switch writes the head's result into all G GPUs. Modelled with two actors on the host's NVSwitch
node, a reduction engine and a multicast engine (:meth:`sim.cluster.Cluster.add_endpoint`), per slice j:

1. every GPU sends slice j (all G parts) to the reduction engine, which adds them up (for free);
2. the engine sends part q of the sum to head q;
3. head q sends it to the multicast engine (``nvls-tree``: first up and down a tree between the hosts'
   heads q, one half of the part on each of NCCL's two trees, each half an actor of its own on its NIC);
4. the multicast engine sends the whole slice to every GPU.

Every GPU's NVLink thus carries 1 + 1/G times the buffer each way, as on the hardware. The steps are
pipelined over slices of ``NCCL_STEPS`` chunks per head, the chunk NCCL picks for the size
(``enqueue.cc``, at most ``NCCL_NVLS_CHUNKSIZE``; :mod:`sim.nccl.pipeline`). Wire bytes on NVLink
are divided by NCCL's NVLS efficiency (0.85 on Hopper, ``tuning.cc:nvlsEfficiency``).

Closed form inside one host with per-GPU link (α, β) and k slices (the pipeline: k + 3 steps, each
moving (1 + 1/G)·n/k through the busiest link direction)::

    T = (k + 3)·(α + (1 + 1/G)·(n/k)·β / e)      (approximately; stated as a bound)
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from ..errors import AlgorithmError
from ..nccl.layout import (
    channel_endpoint,
    dtree_parent,
    engine,
    host_ranks,
    lags_down,
    lags_up,
    run_program,
    slices,
)
from ..nccl.pipeline import Streams, launchers
from ..nccl.protocols import nvls_chunk
from ..nccl.tuner import NVLS_CHANNELS_HOPPER, NVLS_EFFICIENCY, describe, nvls_tree_cap
from ..program import StepProgram
from ..runtime import Job
from .base import Algorithm
from .registry import register

__all__ = ["Nvls", "nvls_program"]

EFFICIENCY = NVLS_EFFICIENCY[2]  # Hopper


def nvls_slices(nbytes: float, hosts: int, heads: int) -> int:
    """Pipeline slices of an NVLS(-tree) all-reduce: each head's share cut as
    :func:`~sim.nccl.layout.slices` cuts a channel's (``NCCL_STEPS`` chunks a slice), with the chunk NCCL
    picks for this size (:func:`~sim.nccl.protocols.nvls_chunk`: smaller buffers, smaller chunks)."""
    return slices(nbytes / heads, nvls_chunk(nbytes, hosts, NVLS_CHANNELS_HOPPER * heads))


def nvls_program(cluster: Any, p: int, nbytes: float, launch_s: float = 0.0) -> tuple[StepProgram, int]:
    """NVLS (one host) or NVLS-tree (several) as a step program, and its data-check segments."""
    groups = host_ranks(cluster, p)
    h, g = len(groups), len(groups[0])
    q_parts = 2 * g  # head q's part, halved between the two trees
    k = nvls_slices(nbytes, h, g)
    slice_b = nbytes / k
    part_b = slice_b / q_parts
    nvl = 1.0 / EFFICIENCY
    red = [engine(cluster, grp[0], "reduce") for grp in groups]
    mc = [engine(cluster, grp[0], "multicast") for grp in groups]
    # heads[t][host][q]: the actor of head q's half t
    heads = [[[channel_endpoint(cluster, r, ("nvls", t), t) for r in grp] for grp in groups] for t in range(2)]
    actors = [r for grp in groups for r in grp] + [a for t in heads for grp in t for a in grp]
    starts = launchers(cluster, actors, launch_s) if launch_s > 0 else []
    s = Streams(cluster.endpoints, k)
    whole = dict(off=0, scale=q_parts, width=q_parts)
    for host, grp in enumerate(groups):
        s.add(grp, red[host], slice_b * nvl, lag=0, reduce=True, **whole)
    # engine -> heads (lag 1); the heads' tree; heads -> multicast engine; engine -> everyone
    final = np.zeros((2, h), dtype=np.int64)  # step at which head (t, host) holds the result
    for t in range(2):
        parent = [dtree_parent(h, host, t) for host in range(h)]
        up, done = lags_up(parent, 2)
        start = np.full(h, done, dtype=np.int64)
        down = lags_down(parent, start)
        final[t] = down
        for q in range(g):
            actors_q = [heads[t][host][q] for host in range(h)]
            off = 2 * q + t
            for host in range(h):
                s.add([red[host]], [actors_q[host]], part_b * nvl, lag=1, reduce=False, off=off, scale=q_parts)
            kids = [v for v in range(h) if parent[v] >= 0]
            if kids:
                src = [actors_q[v] for v in kids]
                dst = [actors_q[parent[v]] for v in kids]
                s.add(src, dst, part_b, lag=up[kids], reduce=True, off=off, scale=q_parts)
                s.add(dst, src, part_b, lag=down[kids], reduce=False, off=off, scale=q_parts)
    for host in range(h):
        last = 0
        for t in range(2):
            lag = int(final[t][host]) + 1
            last = max(last, lag)
            s.add(
                heads[t][host], mc[host], part_b * nvl, lag=lag, reduce=False, off=2 * np.arange(g) + t, scale=q_parts
            )
        s.add([mc[host]] * g, groups[host], slice_b * nvl, lag=last + 1, reduce=False, **whole)
    if h > 1:  # a head's channel moves a slice in no less than slice_b / cap (NCCL's per-channel SM cap)
        per_slice = slice_b / nvls_tree_cap(describe(cluster, p))
        # the cap is NCCL's end-to-end figure; a step pays its messages' latencies on top of the budget
        hops = [(red[0], heads[0][0][0]), (heads[0][0][0], heads[0][1][0]), (heads[0][0][0], mc[0])]
        latency = max(cluster.alpha_beta(a, b)[0] for a, b in hops)
        s.cap([a for t in heads for grp in t for a in grp], 1.0 / max(per_slice - latency, per_slice / 2))
    return s.program(starts), k * q_parts


class _NvlsBase(Algorithm):
    collective = "allreduce"
    multi_host: ClassVar[bool] = False
    star_oracle: ClassVar[bool] = False  # needs an NVSwitch that reduces: tests/test_nccl.py holds its oracle

    def check(self, p: int, cluster: Any) -> None:
        groups = host_ranks(cluster, p)
        if len(groups[0]) < 2:
            raise AlgorithmError(f"{self.name} needs several GPUs per host on an NVSwitch; {cluster.name} has one")
        for grp in groups:
            engine(cluster, grp[0], "reduce")
        if len(groups) > 1 and not self.multi_host:
            raise AlgorithmError(
                f"nvls reduces inside one NVSwitch; {p} ranks span {len(groups)} hosts (use nvls-tree)"
            )

    def closed_form_exact(self, p: int) -> bool:
        return False

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        return nvls_program(cluster, p, nbytes)[0]

    def run(self, job: Job) -> Generator[Any, Any, None]:
        program, segments = nvls_program(job.net.cluster, job.p, job.nbytes)
        yield from run_program(job, program, segments)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        k = nvls_slices(n, 1, p)
        return (k + 3) * (alpha + (1 + 1 / p) * (n / k) * beta / EFFICIENCY)


@register
class Nvls(_NvlsBase):
    name = "nvls"
    summary = "NVLink SHARP inside one host: the NVSwitch reduces and multicasts, every GPU heads 1/G"
