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
are divided by NCCL's NVLS efficiency (0.85 on Hopper, 0.74 on Blackwell: ``tuning.cc:nvlsEfficiency``).

Inside one host the pipeline steps as NCCL's one-node kernel does (``device/all_reduce.h``, ``oneNode``):
every channel loops over iterations of one chunk per head (``loopCount = nHeads * chunkSize``), and its
three warp groups -- scatter (the GPU's chunks into the NVLS buffer), reduce (the head's multimem
load-reduce and multicast store) and gather (the result out) -- hand each iteration on with one flag
after a system-scope fence (``prims_simple.h``: ProtoSimple<1, 1>, one step per chunk; ``postPeer``).
So a slice is one iteration of all the channels (:func:`nvls_iterations`: C channels x the chunk per
head), and each iteration of a GPU's channels pays the hand-off of one Simple step over NVLink before its
data moves (:data:`STEP_LATENCY`, NCCL's own figure for it: ``tuning.cc`` hwLatencies NVLink Ring Simple
3.4 us, less the NVLink latency the simulated step pays anyway: :func:`hand_off_s`). The GPU's side of it
is an actor of its own on the GPU (its copy warps), whose messages carry that cost as their per-message
overhead.

Closed form inside one host with per-GPU link (α, β), k iterations and the step's hand-off a (the
pipeline: k + 3 steps, each moving (1 + 1/G)·n/k through the busiest link direction)::

    T = (k + 3)·(α + a + (1 + 1/G)·(n/k)·β / e)      (approximately; stated as a bound)
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from ..errors import AlgorithmError
from ..nccl.layout import (
    channel_endpoints,
    dtree_parent,
    engine,
    host_ranks,
    lags_down,
    lags_up,
    run_program,
    sharp_fabric,
    sharp_forest,
    slices,
)
from ..nccl.pipeline import Streams, hops_cap_rate, launchers, shift
from ..nccl.protocols import nvls_chunk
from ..nccl.tuner import NVLS_CHANNELS_HOPPER, System, describe, nvls_chunks, nvls_tree_cap, nvls_tuning
from ..nccl.versions import NEWEST, Tuning
from ..program import StepProgram
from ..runtime import Job
from .base import Algorithm
from .registry import register

__all__ = [
    "STEP_LATENCY",
    "Nvls",
    "hand_off",
    "hand_off_s",
    "head_slices",
    "nvls_gather_program",
    "nvls_iterations",
    "nvls_program",
]

EFFICIENCY = NEWEST.nvls_efficiency[2]  # Hopper (tuning.cc nvlsEfficiency, 2.28.3 on)


def efficiency(sys: System) -> float:
    """NCCL's NVLS efficiency for ``sys``'s GPUs (tuning.cc nvlsEfficiency, 2.28.3 on: 0.85 Hopper, 0.74
    Blackwell), the hardware's and kernel's throughput the simulation keeps for every release."""
    return NEWEST.nvls_efficiency[3] if sys.arch == "sm100" else EFFICIENCY


#: seconds one iteration of NCCL's one-node NVLS kernel waits on its hand-off (flag after a system-scope
#: fence, ``prims_simple.h: postPeer``; the peers' flags polled through the switch, ``loadStepValue``):
#: NCCL's per-step latency of its Simple protocol over NVLink (``tuning.cc`` hwLatencies, NVLink, Ring,
#: Simple: 3.4 us in every modelled release), which its NVLS estimate has no term for (NVLS: 25 us once)
STEP_LATENCY = NEWEST.hw_lat["nvlink"]["ring"][2] * 1e-6

#: the fewest pipeline slices a head's share is cut into (``device/common.h``: NCCL_STEPS 8 over
#: ALLREDUCE_SLICESTEPS 2 -- the slices one connection keeps in flight)
MIN_SLICES = 4


def nvls_slices(
    nbytes: float, hosts: int, heads: int, tree: bool = True, tuning: Tuning = NEWEST, sys: System | None = None
) -> int:
    """Pipeline slices of an NVLS(-tree) all-reduce: each head's share cut as
    :func:`~sim.nccl.layout.slices` cuts a channel's (``NCCL_STEPS`` chunks a slice), with the chunk NCCL
    picks for this size (:func:`~sim.nccl.protocols.nvls_chunk`: smaller buffers, smaller chunks) -- but
    into at least :data:`MIN_SLICES` (at most one a chunk). A share of a few chunks would otherwise be one
    slice, stored and forwarded whole through every stage, where NCCL streams it: its Simple protocol
    keeps ``NCCL_STEPS / ALLREDUCE_SLICESTEPS`` = 4 slices in flight on a connection. The chunk rules are
    ``tuning``'s release's, with its NVLS channels and NVLS-tree chunk for ``sys``
    (:func:`~sim.nccl.tuner.nvls_tuning`; without ``sys`` Hopper's)."""
    channels = nvls_tuning(sys, tuning)[0] if sys is not None else NVLS_CHANNELS_HOPPER
    first, start, cap4 = nvls_chunks(sys, tuning)
    return head_slices(
        nbytes / heads,
        nvls_chunk(nbytes, hosts, channels * heads, tree, start, cap4, tuning.nvls_chunk_first, first),
    )


def hand_off_s(cluster: Any, gpus: list[int]) -> float:
    """Seconds an iteration of NCCL's one-node NVLS kernel waits on its hand-off beyond what the simulated
    step pays anyway: :data:`STEP_LATENCY`, NCCL's latency of a whole Simple step over NVLink (a ring hop
    GPU -> NVSwitch -> GPU), less the latency of that hop's links in the topology, which the step's messages
    pay (hgx: 2 x 0.3 us, so 2.8 us); never below 0."""
    a, b = gpus[0], gpus[1]
    return hand_off(cluster.alpha_beta(a, b)[0] - cluster.overhead[a])


def hand_off(hop_latency: float) -> float:
    """:data:`STEP_LATENCY` less the ``hop_latency`` (s) a simulated step already pays, never below 0."""
    return max(0.0, STEP_LATENCY - hop_latency)


def nvls_iterations(nbytes: float, heads: int, tuning: Tuning = NEWEST, sys: System | None = None) -> int:
    """Iterations of NCCL's one-node NVLS all-reduce kernel per channel (``device/all_reduce.h``,
    ``oneNode``: ``loopCount = nHeads * chunkSize``): the buffer over channels x heads x the chunk NCCL
    picks for the size (:func:`~sim.nccl.protocols.nvls_chunk`, ``tuning``'s release, the runtime NVLS
    channels of ``sys``'s GPUs: :func:`~sim.nccl.tuner.nvls_tuning`; without ``sys`` Hopper's 16). Every
    channel steps through them together (the buffer is split evenly among them), so one step of the
    simulated pipeline is one iteration of all of them."""
    channels = nvls_tuning(sys, tuning)[0] if sys is not None else NVLS_CHANNELS_HOPPER
    start = nvls_chunks(sys, tuning)[0]
    chunk = nvls_chunk(nbytes, 1, channels * heads, False, first=tuning.nvls_chunk_first, start=start)
    return max(1, math.ceil(nbytes / (heads * channels * chunk) - 1e-9))


def head_slices(share: float, chunk: float) -> int:
    """Pipeline slices of a head's ``share`` moved in ``chunk``-byte chunks: ``NCCL_STEPS`` chunks a slice
    (:func:`~sim.nccl.layout.slices`), but at least :data:`MIN_SLICES` (at most one a chunk)."""
    return max(slices(share, chunk), min(MIN_SLICES, math.ceil(share / chunk - 1e-9)))


def _forest(
    cluster: Any, groups: list[list[int]], actors: list[int], q: int, t: int, sharp: bool
) -> tuple[list[int], list[int]]:
    """The reduction forest between the hosts' head actors ``actors`` (one per host) of head ``q``'s
    half ``t``: (its nodes, their parents, -1 at roots). NCCL's double binary tree between the heads, or
    with ``sharp`` the switches (:func:`sharp_forest`)."""
    if not sharp:
        return list(actors), [dtree_parent(len(actors), host, t) for host in range(len(actors))]
    return sharp_forest(cluster, [grp[q] for grp in groups], actors, t, 2 * q + t, ("sharp", q, t))


def nvls_program(
    cluster: Any,
    p: int,
    nbytes: float,
    launch_s: float = 0.0,
    sharp: bool = False,
    tuning: Tuning = NEWEST,
    sys: System | None = None,
    slots: int = 1,
) -> tuple[StepProgram, int]:
    """NVLS (one host), NVLS-tree (several; with ``sharp`` the switches reduce between the hosts in
    place of the heads' tree) as a step program, and its data-check segments; chunks as ``tuning``'s
    release cuts them with the NCCL settings of ``sys`` (default: what :func:`~sim.nccl.tuner.describe`
    reads off the cluster). ``slots``: slices in flight per connection across hosts
    (:meth:`~sim.nccl.pipeline.Streams.program`; one host's iterations each pay their hand-off)."""
    groups = host_ranks(cluster, p)
    h, g = len(groups), len(groups[0])
    sharp = sharp and h > 1
    slots = slots if h > 1 else 1
    q_parts = 2 * g  # head q's part, halved between the two trees
    sys = sys or describe(cluster, p)
    # one host: NCCL's iterations, each paying its hand-off (module docstring); across hosts the slices
    k = nvls_iterations(nbytes, g, tuning, sys) if h == 1 else nvls_slices(nbytes, h, g, not sharp, tuning, sys)
    slice_b = nbytes / k
    part_b = slice_b / q_parts
    nvl = 1.0 / efficiency(sys)
    red = [engine(cluster, grp[0], "reduce") for grp in groups]
    mc = [engine(cluster, grp[0], "multicast") for grp in groups]
    # heads[t][host][q]: the actor of head q's half t
    flat = [r for grp in groups for r in grp]
    # the GPUs' side of the pipeline: on one host an actor on each GPU (its channels' copy warps) whose
    # every message first pays the iteration's hand-off; across hosts the ranks themselves
    gpus = groups
    if h == 1:  # (the GPU's own per-message overhead, a straggler's say, comes on top)
        over, hand_off = cluster.overhead, hand_off_s(cluster, flat)
        gpus = [[cluster.add_endpoint(r, key=("nvls", "copy"), overhead=over[r] + hand_off) for r in flat]]
    ends = [channel_endpoints(cluster, flat, ("nvls", t), t) for t in range(2)]
    heads = [[ends[t][i * g : (i + 1) * g] for i in range(h)] for t in range(2)]
    actors = [r for grp in gpus for r in grp] + [a for t in heads for grp in t for a in grp]
    starts = launchers(cluster, actors, launch_s) if launch_s > 0 else []
    forests = {  # built before the streams: the switches' engines are endpoints too
        (t, q): _forest(cluster, groups, [heads[t][host][q] for host in range(h)], q, t, sharp)
        for t in range(2)
        for q in range(g)
    }
    s = Streams(cluster.endpoints, k)
    whole = dict(off=0, scale=q_parts, width=q_parts)
    # (one call for what a call per host added, in the same order: the streams keep their order)
    s.add([r for grp in gpus for r in grp], np.repeat(red, g), slice_b * nvl, lag=0, reduce=True, **whole)
    # engine -> heads (lag 1); the heads' tree; heads -> multicast engine; engine -> everyone
    final = np.zeros((2, h), dtype=np.int64)  # step at which head (t, host) holds the result
    for t in range(2):
        for q in range(g):
            actors_q = [heads[t][host][q] for host in range(h)]
            nodes, parent = forests[(t, q)]
            up, done = lags_up(parent, 2)
            down = lags_down(parent, np.full(len(nodes), done, dtype=np.int64))
            final[t] = down[:h]
            off = 2 * q + t
            s.add(red, actors_q, part_b * nvl, lag=1, reduce=False, off=off, scale=q_parts)
            kids = [v for v in range(len(nodes)) if parent[v] >= 0]
            if kids:
                src = [nodes[v] for v in kids]
                dst = [nodes[parent[v]] for v in kids]
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
        s.add([mc[host]] * g, gpus[host], slice_b * nvl, lag=last + 1, reduce=False, **whole)
    if h > 1 and not sharp:  # a head's channel moves a slice in no less than slice_b / cap (perChMaxNVLSTreeBws)
        per_slice = slice_b / nvls_tree_cap(sys)
        # the cap is NCCL's end-to-end figure; a step pays its messages' latencies on top of the budget
        hops = [(red[0], heads[0][0][0]), (heads[0][0][0], heads[0][1][0]), (heads[0][0][0], mc[0])]
        s.cap([a for t in heads for grp in t for a in grp], hops_cap_rate(cluster, per_slice, hops))
    program = s.program(starts, cluster=cluster, slots=slots)
    if not sharp:  # head q + 1 is head q with every GPU index of a host moved up by one (sim.symmetry)
        mine = np.array([list(grp) for grp in gpus] + [grp for t in heads for grp in t], dtype=np.int64)
        sigma = s.renamed(shift(program.endpoints, mine.ravel(), np.roll(mine, -1, axis=1).ravel(), starts))
        program = StepProgram(program.endpoints, program.phases, symmetry=sigma)
    return program, k * q_parts


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
        if len(groups) > 1 and not self.multi_host and not sharp_fabric(cluster, groups):
            raise AlgorithmError(
                f"nvls reduces inside one NVSwitch; {p} ranks span {len(groups)} hosts whose switches do not "
                "reduce (SHARP: hgx:...,sharp=true) -- use nvls-tree"
            )

    def closed_form_exact(self, p: int) -> bool:
        return False

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        return nvls_program(cluster, p, nbytes, sharp=not self.multi_host)[0]

    def run(self, job: Job) -> Generator[Any, Any, None]:
        program, segments = nvls_program(job.net.cluster, job.p, job.nbytes, sharp=not self.multi_host)
        yield from run_program(job, program, segments)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        k = nvls_iterations(n, p)
        return (k + 3) * (alpha + hand_off(2 * alpha) + (1 + 1 / p) * (n / k) * beta / EFFICIENCY)


@register
class Nvls(_NvlsBase):
    name = "nvls"
    summary = (
        "NVLink SHARP: the NVSwitch reduces and multicasts, every GPU heads 1/G; across hosts the switches "
        "reduce between them (SHARP)"
    )


def nvls_gather_program(
    cluster: Any, p: int, nbytes: float, collective: str, launch_s: float = 0.0, tuning: Tuning = NEWEST
) -> tuple[StepProgram, int]:
    """NVLS all-gather or reduce-scatter inside one host (``collective``), as a step program, and its
    data-check segments: every GPU heads its own block (NCCL's NVLS kernels for these collectives,
    ``device/all_gather.h`` / ``reduce_scatter.h``: a multicast store of the GPU's block, a multicast
    load-reduce of the GPU's block). Per slice j of the n/G-byte blocks:

    * all-gather: GPU r sends its slice to multicast engine r of the NVSwitch, which writes it into every
      GPU of the host (itself included, as a multicast store does);
    * reduce-scatter: every GPU sends its copy of block r's slice to reduction engine r, which adds them
      up (for free) and sends the sum to GPU r.

    One engine per block, so that no (sender, receiver) pair repeats in a step; the engines share the
    NVSwitch's links to the GPUs as one engine would. Wire bytes on NVLink are divided by NCCL's NVLS
    efficiency for the GPUs (:func:`efficiency`), and the blocks are cut into the all-reduce's NVLS slices
    of ``tuning``'s release (:func:`nvls_slices`; NCCL's chunk rules for these collectives are not ported). Data-check segments ``r k + j``."""
    groups = host_ranks(cluster, p)
    if len(groups) > 1:
        raise AlgorithmError(f"nvls {collective} is built inside one host; {p} ranks span {len(groups)} hosts")
    gpus = groups[0]
    g = len(gpus)
    sys = describe(cluster, p)
    k = nvls_slices(nbytes, 1, g, tuning=tuning, sys=sys)
    block_slice = nbytes / g / k * (1.0 / efficiency(sys))
    reduce = collective == "reducescatter"
    engines = [engine(cluster, r, f"{'reduce' if reduce else 'multicast'}-{b}") for b, r in enumerate(gpus)]
    starts = launchers(cluster, gpus, launch_s) if launch_s > 0 else []
    s = Streams(cluster.endpoints, k)
    for b, eng in enumerate(engines):
        off = b * k  # block b's slice j: segment b k + j
        if reduce:
            s.add(gpus, [eng] * g, block_slice, lag=0, reduce=True, off=off, scale=1)
            s.add([eng], [gpus[b]], block_slice, lag=1, reduce=False, off=off, scale=1)
        else:
            s.add([gpus[b]], [eng], block_slice, lag=0, reduce=False, off=off, scale=1)
            s.add([eng] * g, gpus, block_slice, lag=1, reduce=False, off=off, scale=1)
    return s.program(starts), k * g
