"""NCCL's tree all-reduce: ``nccl-tree[:channels=K,proto=simple]``.

Per channel, the GPUs of every host form a chain (NCCL's intra-node tree is a chain through the GPUs,
``connect.cc:connectTrees``) whose first GPU -- the head -- owns the channel's NIC; the heads of all hosts
form one of the two trees of NCCL's double binary tree (``trees.cc:ncclGetDtree``): channel ``c`` runs on
rail ``c mod R`` (R NICs per host) and on tree ``(c div R) mod 2``, as NCCL's channel ``c`` and its duplicate
``c + nChannels`` take tree 0 and tree 1. The buffer is split among the channels and cut into slices of
NCCL's chunk size (LL128's halved for smaller buffers, as NCCL halves it); slices are reduced up the
chain and the tree and broadcast back down, pipelined: every edge carries slice ``j`` one step after the
edges feeding it (:mod:`sim.nccl.pipeline`). Each channel is its own actor on every GPU (an SM of its
own). Every byte goes on the wire at 1 / 0.92 of its size: NCCL's tuner rates the tree at 0.92 of its
links (``tuning.cc``, the tree refinement, the same in every release) and the simulation moves the
tree's bytes at that rate, as it moves NVLS's at NCCL's NVLS efficiency.

Closed form, a pipelined reduce + broadcast of k slices over depth d (inexact: stated as a bound)::

    T ~ (2d + k - 1)·(α + (n/(K·k))·β)
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal

import numpy as np
from pydantic import NonNegativeInt

from ..nccl import tuner
from ..nccl.layout import (
    channel_endpoints,
    dtree_parent,
    host_ranks,
    lags_down,
    lags_up,
    nics_of,
    run_program,
    sharp_forest,
    slices,
)
from ..nccl.pipeline import Streams, hops_cap_rate, launchers, shift
from ..nccl.protocols import collnet_chunk, get_protocol, tree_ll128_chunk
from ..nccl.versions import NEWEST, Release, Tuning, parse_version, tuning_for
from ..program import StepProgram
from ..runtime import Job
from ..schema import Spec
from .base import Algorithm
from .registry import register

__all__ = ["NcclTree", "tree_program"]


class NcclTreeOptions(Spec):
    channels: NonNegativeInt = 0
    proto: Literal["ll", "ll128", "simple"] = "simple"
    #: NCCL's per-channel caps of the tree (perChMaxTreeBws, perChMaxTreeLL128Bws), of the release ``version``
    caps: bool = False
    version: Release = NEWEST.last


def rails(cluster: Any, groups: list[list[int]]) -> list[tuple[int, int]]:
    """(local GPU index, its NIC index) for every NIC of a host, in NIC order; one per GPU without NICs."""
    out = []
    for i, r in enumerate(groups[0]):
        out.extend((i, k) for k in range(len(nics_of(cluster, r))))
    return out or [(i, 0) for i in range(len(groups[0]))]


def default_channels(cluster: Any, p: int) -> int:
    groups = host_ranks(cluster, p)
    return 2 * len(rails(cluster, groups)) if len(groups) > 1 else len(groups[0])


def tree_program(
    cluster: Any,
    p: int,
    nbytes: float,
    channels: int,
    proto: str,
    launch_s: float = 0.0,
    sharp: bool = False,
    tuning: Tuning | None = None,
    sys: tuner.System | None = None,
    slots: int = 1,
) -> tuple[StepProgram, int]:
    """The pipelined chain + double-binary-tree all-reduce as a step program (see the module docstring),
    and the data-check segments it uses; with ``tuning``, its actors capped as that release caps the tree's
    channels (:func:`~sim.nccl.tuner.tree_cap`; None: no cap). With ``sharp``, CollNet Chain
    (:mod:`~sim.algorithms.collnet_chain`): the heads' NICs' switches reduce between the hosts in place of
    the trees, in CollNet Chain's chunks (no per-channel cap). Simple moves NCCL_BUFFSIZE / NCCL_STEPS a
    step: ``sys``'s settings (default: what :func:`~sim.nccl.tuner.describe` reads off the cluster).
    ``slots``: slices in flight per connection (:meth:`~sim.nccl.pipeline.Streams.program`)."""
    groups = host_ranks(cluster, p)
    h, g = len(groups), len(groups[0])
    rail = rails(cluster, groups)
    k_ch = channels or default_channels(cluster, p)
    protocol = get_protocol(proto)
    per = nbytes / k_ch
    if sharp or protocol.name == "LL128":  # NCCL's chunk rules, for the channels NCCL runs (the simulation
        # splits among k_ch): CollNet Chain's, or the tree's with LL128
        runs = tuner.search(tuner.describe(cluster, p))["collnet-chain" if sharp else "tree"].runtime_channels
        if sharp:  # (from the Simple step, NCCL_BUFFSIZE / NCCL_STEPS, of sys's settings)
            chunk = collnet_chunk(nbytes, runs, 1, g, chain=True, step=tuner.simple_step(sys))
        else:
            chunk = tree_ll128_chunk(nbytes, runs, h, g)
        k = slices(per, chunk)
    elif protocol.name == "Simple":  # NCCL_BUFFSIZE / NCCL_STEPS of sys (default: the cluster's NET plugin's)
        k = slices(per, tuner.simple_step(sys or tuner.describe(cluster, p)))
    else:
        k = slices(per, protocol.step)
    # the tree kernel moves its bytes at NCCL's tree efficiency of its links' rate (CollNet Chain has none)
    wire = protocol.wire(per / k) / (1.0 if sharp else tuner.TREE_EFFICIENCY)
    actors: list[int] = []
    parent: list[int] = []
    chan: list[int] = []
    bounds: list[tuple[int, int]] = []  # each channel's actors: actors[first:end]
    for c in range(k_ch):
        head, nic = rail[c % len(rail)]
        tree = (c // len(rail)) % 2
        base = len(actors)
        chains = [groups[host][(head + i) % g] for host in range(h) for i in range(g)]
        actors.extend(channel_endpoints(cluster, chains, ("collnet-chain" if sharp else "tree", c), nic))
        chan.extend([c] * len(chains))
        for host in range(h):
            for i in range(g):
                if i:
                    parent.append(base + host * g + i - 1)
                else:
                    up = -1 if sharp else dtree_parent(h, host, tree)
                    parent.append(-1 if up < 0 else base + up * g)
        if sharp:  # the heads under their NICs' switches, which join the channel's actors
            heads = [base + host * g for host in range(h)]
            key = ("sharp", "collnet-chain", c)
            ranks = [groups[host][head] for host in range(h)]
            nodes, up_of = sharp_forest(cluster, ranks, [actors[v] for v in heads], nic, c, key)
            top = len(actors) - h
            actors.extend(nodes[h:])
            chan.extend([c] * (len(nodes) - h))
            parent.extend(-1 if x < 0 else top + x for x in up_of[h:])
            for host, v in enumerate(heads):
                parent[v] = top + up_of[host]
        bounds.append((base, len(actors)))
    up_lag, _ = lags_up(parent, 0)
    up = np.asarray(parent)
    start = np.zeros(len(parent), dtype=np.int64)
    # each channel's root starts broadcasting once its own tree is reduced
    channel = np.asarray(chan)
    for v in np.flatnonzero(up < 0).tolist():
        members = channel == chan[v]
        start[v] = int(up_lag[members & (up >= 0)].max()) + 1 if members.sum() > 1 else 0
    down_lag = lags_down(parent, start)
    starts = launchers(cluster, actors, launch_s) if launch_s > 0 else []
    s = Streams(cluster.endpoints, k)
    kids = [v for v in range(len(parent)) if parent[v] >= 0]
    src = [actors[v] for v in kids]
    dst = [actors[parent[v]] for v in kids]
    off = [chan[v] for v in kids]
    s.add(src, dst, wire, lag=up_lag[kids], reduce=True, off=off, scale=k_ch)
    s.add(dst, src, wire, lag=down_lag[kids], reduce=False, off=off, scale=k_ch)
    if tuning is not None and not sharp:  # the channels move slice j in no less than (n / k) / cap: NCCL's caps
        per_slice = nbytes / k / tuner.tree_cap(tuner.describe(cluster, p), proto, tuning)
        # channel 0's chain hop (head -> next GPU) and its head's tree hop: the latencies a step pays
        hops = [(actors[v], actors[parent[v]]) for v in (1, next((v for v in kids if v % g == 0), None)) if v in kids]
        s.cap(actors, hops_cap_rate(cluster, per_slice, hops))
    program = s.program(starts, cluster=cluster, slots=slots)
    # channel c's image: the channel of the same tree whose head is the next GPU, on the same NIC index
    # (its chain is c's with every GPU index moved up by one; sim.symmetry checks the rest)
    where = {(c // len(rail), rail[c % len(rail)]): c for c in range(k_ch)}
    image = [
        where.get((c // len(rail), ((rail[c % len(rail)][0] + 1) % g, rail[c % len(rail)][1]))) for c in range(k_ch)
    ]
    # (a channel's actors: host by host each host's chain in order, then with ``sharp`` its switches' engines)
    if all(i is not None for i in image) and len({end - first for first, end in bounds}) == 1:
        moved = np.concatenate([np.arange(*bounds[i]) for i in image])  # type: ignore[index]
        sigma = s.renamed(shift(cluster.endpoints, actors, np.asarray(actors)[moved], starts))
        program = StepProgram(program.endpoints, program.phases, symmetry=sigma[: program.endpoints])
    return program, k_ch * k


@register
class NcclTree(Algorithm):
    name = "nccl-tree"
    collective = "allreduce"
    Options = NcclTreeOptions
    summary = "NCCL's tree: per channel a chain through each host's GPUs feeding a double binary tree, pipelined"
    examples = ("nccl-tree:channels=1", "nccl-tree:channels=3,proto=ll128")
    options: NcclTreeOptions

    def check(self, p: int, cluster: Any) -> None:
        host_ranks(cluster, p)

    def closed_form_exact(self, p: int) -> bool:
        return False

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        if p == 1:
            return None
        return self._program(cluster, p, nbytes)[0]

    def _program(self, cluster: Any, p: int, nbytes: float) -> tuple[StepProgram, int]:
        o = self.options
        tuning = tuning_for(parse_version(o.version))[0] if o.caps else None
        return tree_program(cluster, p, nbytes, o.channels, o.proto, tuning=tuning)

    def run(self, job: Job) -> Generator[Any, Any, None]:
        if job.p > 1:
            yield from run_program(job, *self._program(job.net.cluster, job.p, job.nbytes))

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        k_ch = max(1, self.options.channels or 2)
        d = max(1, (p - 1).bit_length())
        return (2 * d) * (alpha + n / k_ch * beta)
