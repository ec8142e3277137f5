"""NCCL's rings: ``ring:channels=K`` -- K rings, each its own actor on every GPU, the buffer split
among them, each entering and leaving every host through its own NIC.

As NCCL's ring search builds them on NVSwitch hosts (docs/nccl.md): the GPUs of a host in index order,
starting at the GPU whose NIC the ring enters by (``search.cc:ncclTopoSearchNextGpuSort``, neighbours
first). Channel ``c`` starts at local GPU ``c mod G`` on even hosts and walks up; on odd hosts it enters
at the GPU it left the previous host from and walks down, so consecutive hosts meet on one rail, as
NCCL's cross-NIC pairing and its swap of channels on odd nodes arrange (``ncclTopoPostset``). A GPU with
several NICs gives its ``i``-th channel the ``i``-th NIC.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..program import StepProgram
from .layout import MAX_SLICES, channel_endpoints, host_ranks, leaf_period
from .pipeline import Streams, hops_cap_rate, launchers, shift

__all__ = [
    "capped_ring_s",
    "chain_slices",
    "channel_orders",
    "direct_cycles",
    "ring_bound",
    "rings_chain_program",
    "rings_gather_program",
    "rings_program",
]


def direct_cycles(cluster: Any, groups: list[list[int]]) -> list[tuple[int, ...]]:
    """The rings of one host whose GPUs are linked directly (``hgx:nvswitch=false``): every directed
    Hamiltonian cycle of its G GPUs from local GPU 0, in lexicographic order ((G-1)! of them: 6 on four
    GPUs), which together cross every GPU-to-GPU link equally often ((G-2)! times) -- NCCL's ring search
    (search.cc) fills the board's 12 links 2 channels each (A100: 6 channels of 40 GB/s on 4 x 20 GB/s a pair,
    its optimum totalBw) only with all six. Empty where an NVSwitch joins the GPUs or the rings cross hosts
    (there a channel enters and leaves by its NICs, and the NICs bound it, not the links: the NVSwitch
    layout's chains in index order)."""
    if cluster.graph.graph.get("nvswitch", True) or len(groups) != 1 or len(groups[0]) < 3:
        return []
    return [(0, *rest) for rest in itertools.permutations(range(1, len(groups[0])))]


def channel_orders(cluster: Any, p: int, channels: int) -> list[list[int]]:
    """Each channel's ring as actors (endpoints), in ring order (channel c on one host without an NVSwitch:
    :func:`direct_cycles` c mod their number)."""
    groups = host_ranks(cluster, p, even=False)
    cycles = direct_cycles(cluster, groups)
    out = []
    for c in range(channels):
        order = []
        for h, grp in enumerate(groups):
            g = len(grp)
            a = c % g
            local = [(a + i) % g for i in range(g)] if h % 2 == 0 else [(a - 1 - i) % g for i in range(g)]
            if cycles:
                local = list(cycles[c % len(cycles)])
            order.extend(channel_endpoints(cluster, [grp[i] for i in local], ("ring", c), c // len(groups[0])))
        out.append(order)
    return out


def _symmetry(cluster: Any, p: int, orders: np.ndarray, starts: list[tuple[int, int]]) -> Any:
    """The shifts that map the rings onto themselves: channel c + 1 is channel c with every GPU index of a
    host moved up by one; and where the hosts hang from leaf switches in equal groups, every ring's
    position i is position i + (a leaf group's positions) shifted (host h onto h + hosts per leaf: the
    ring's hosts alternate up and down, so by an even number of hosts). :mod:`sim.symmetry` checks both."""
    if direct_cycles(cluster, host_ranks(cluster, p, even=False)):
        return None  # the cycles map onto each other only with channels renumbered
    endpoints = cluster.endpoints
    sigma = shift(endpoints, orders.ravel(), np.roll(orders, -1, axis=0).ravel(), starts)
    groups = host_ranks(cluster, p, even=False)
    period = leaf_period(cluster, groups, 2)
    if not period:
        return sigma
    step = period * len(groups[0])  # the positions of `period` hosts in one ring
    return sigma, shift(endpoints, orders.ravel(), np.roll(orders, -step, axis=1).ravel(), starts)


def ring_bound(cluster: Any, orders: np.ndarray, chunk: float, wire: float, bus_cap: float) -> float | None:
    """The rate bound (wire bytes/s) of every message of the rings ``orders`` under NCCL's per-channel cap
    of the ring (``bus_cap``: busBw, bytes/s of data, all channels together; ``inf``: none): the K rings
    together move their ``chunk``-byte blocks of a step at most at ``bus_cap``, so a step lasts no less than
    K·chunk / bus_cap, less the latency its messages pay (:func:`~sim.nccl.pipeline.cap_rate`, as the NVLS
    and tree caps are applied: the longest of ring 0's hops, its first inside a host and every one between
    hosts). Where the cap binds, a step then lasts K·chunk / bus_cap exactly, and the all-reduce NCCL's
    fixed cost + 2(p-1)/p · n / bus_cap (all-gather, reduce-scatter: (p-1)/p · n / bus_cap). None where no
    cap."""
    if math.isinf(bus_cap):
        return None
    ring = [int(a) for a in orders[0]]
    p = len(ring)
    g = len(host_ranks(cluster, p, even=False)[0])
    hops = {(ring[0], ring[1 % p])} | {(ring[i - 1], ring[i % p]) for i in range(g, p + 1, g)}
    return chunk * wire * hops_cap_rate(cluster, len(orders) * chunk / bus_cap, hops)


def capped_ring_s(p: int, nbytes: float, bus_cap: float, collective: str = "allreduce") -> float:
    """The closed form of the rings where the per-channel cap ``bus_cap`` (busBw, bytes/s) binds
    (:func:`ring_bound`): every step lasts K·chunk / bus_cap, so the data take 2(p-1)/p · n / bus_cap for
    the all-reduce and (p-1)/p · n / bus_cap for all-gather and reduce-scatter, after NCCL's fixed cost."""
    steps = 2 * (p - 1) if collective == "allreduce" else p - 1
    return steps / p * nbytes / bus_cap


def rings_program(
    cluster: Any,
    p: int,
    nbytes: float,
    channels: int,
    wire: float = 1.0,
    launch_s: float = 0.0,
    bus_cap: float = math.inf,
) -> StepProgram:
    """K-channel ring all-reduce: every channel a reduce-scatter then an all-gather over its ring, in
    chunks of n/(K·p) (``wire`` bytes on the wire per byte of data), the channels' busBw capped at
    ``bus_cap`` (:func:`ring_bound`); data-check segments ``c·p + i``."""
    from ..algorithms.ring import rings_steps

    orders = np.asarray(channel_orders(cluster, p, channels), dtype=np.int64)
    starts, chunk, bound = _laid_out(cluster, orders, nbytes, wire, launch_s, bus_cap)
    rs, ag = rings_steps(orders, chunk * wire, cluster.endpoints, seg_off=np.arange(channels) * p, bound=bound)
    return _launched(cluster, p, orders, starts, ((rs, p - 1), (ag, p - 1)))


def _laid_out(
    cluster: Any, orders: np.ndarray, nbytes: float, wire: float, launch_s: float, bus_cap: float
) -> tuple[list[tuple[int, int]], float, float | None]:
    """What the rings ``orders`` of :func:`rings_program` and :func:`rings_gather_program` share: their actors'
    launches (``launch_s``: NCCL's fixed cost, paid by each launcher before its first step; the launchers are
    added to the cluster's endpoints, so read ``cluster.endpoints`` after this), their chunk of n/(K·p) bytes
    and their messages' rate bound (:func:`ring_bound`)."""
    starts = launchers(cluster, orders.ravel(), launch_s) if launch_s > 0 else []
    chunk = nbytes / orders.size
    return starts, chunk, ring_bound(cluster, orders, chunk, wire, bus_cap)


def _launched(
    cluster: Any, p: int, orders: np.ndarray, starts: list[tuple[int, int]], phases: tuple[Any, ...]
) -> StepProgram:
    """The rings' ``phases`` after their launches ``starts``, with the fabric's symmetry the rings have."""
    if starts:
        phases = Streams(cluster.endpoints, 1).program(starts).phases + tuple(phases)
    return StepProgram(cluster.endpoints, tuple(phases), symmetry=_symmetry(cluster, p, orders, starts))


def rings_gather_program(
    cluster: Any,
    p: int,
    nbytes: float,
    channels: int,
    collective: str,
    wire: float = 1.0,
    launch_s: float = 0.0,
    bus_cap: float = math.inf,
) -> StepProgram:
    """K-channel ring all-gather or reduce-scatter (``collective``) of ``nbytes`` in all (nccl-tests'
    size): every channel's ring over the same actors as :func:`rings_program`'s, its p - 1 steps each
    moving one block of n/(K·p) bytes (``wire`` bytes on the wire per byte of data) to the next actor.
    Data-check segments ``r·K + c``: channel c's part of rank r's block
    (:func:`sim.algorithms.ring.gathering_steps`). The channels' busBw is capped at ``bus_cap``
    (:func:`ring_bound`)."""
    from ..algorithms.ring import gathering_steps

    if collective not in ("allgather", "reducescatter"):
        raise ValueError(f"rings_gather_program: {collective!r} is not allgather or reducescatter")
    orders = np.asarray(channel_orders(cluster, p, channels), dtype=np.int64)
    size, endpoint_rank = cluster.size, np.asarray(cluster.endpoint_rank, dtype=np.int64)
    ranks = np.where(orders < size, orders, endpoint_rank[np.maximum(orders - size, 0)])
    starts, chunk, bound = _laid_out(cluster, orders, nbytes, wire, launch_s, bus_cap)
    phases = gathering_steps(orders, ranks, chunk, cluster.endpoints, collective == "reducescatter", wire, bound)
    return _launched(cluster, p, orders, starts, phases)


def chain_slices(per_channel: float, chunk: float) -> int:
    """The chunks a channel's ``per_channel`` bytes are cut into along NCCL's broadcast / reduce chain:
    ``chunk`` bytes each (NCCL's chunk: the protocol's step, BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1),
    the channel's bytes split evenly among them; at most :data:`~sim.nccl.layout.MAX_SLICES`."""
    return int(min(MAX_SLICES, max(1, math.ceil(per_channel / chunk - 1e-9))))


def rings_chain_program(
    cluster: Any,
    p: int,
    nbytes: float,
    channels: int,
    collective: str,
    root: int = 0,
    chunk: float = 512 * 1024,
    wire: float = 1.0,
    launch_s: float = 0.0,
    slots: int = 1,
) -> tuple[StepProgram, int]:
    """NCCL's ring broadcast or reduce (``collective``) of ``nbytes`` (the buffer) over the K = ``channels``
    rings of :func:`rings_program` (the same actors), and the data-check segments it uses: the buffer split
    among the channels, each channel's part cut into :func:`chain_slices` chunks of about ``chunk`` bytes
    (``wire`` bytes on the wire per byte of data) that stream along the channel's ring as a chain
    (:class:`~sim.nccl.pipeline.Streams`, ``slots`` chunks in flight per connection). Broadcast
    (``device/broadcast.h``): from the root along the ring -- the root sends, the ranks after it
    receive, store and send on, the one before the root only receives. Reduce (``device/reduce.h``): the
    rank after the root sends its own, each next one adds what it receives to its own and sends the sum
    on, the root adds the last. Segment ``c + K j``: channel c's chunk j."""
    if collective not in ("broadcast", "reduce"):
        raise ValueError(f"rings_chain_program: {collective!r} is not broadcast or reduce")
    orders = np.asarray(channel_orders(cluster, p, channels), dtype=np.int64)
    size, endpoint_rank = cluster.size, np.asarray(cluster.endpoint_rank, dtype=np.int64)
    ranks = np.where(orders < size, orders, endpoint_rank[np.maximum(orders - size, 0)])
    per = nbytes / channels
    k = chain_slices(per, chunk)
    starts = launchers(cluster, orders.ravel(), launch_s) if launch_s > 0 else []
    streams = Streams(cluster.endpoints, k)
    reduce = collective == "reduce"
    for c in range(channels):
        at = int(np.flatnonzero(ranks[c] == root)[0])
        chain = np.roll(orders[c], -(at + 1) if reduce else -at)  # reduce: ends at the root
        streams.add(chain[:-1], chain[1:], per / k * wire, lag=np.arange(p - 1), reduce=reduce, off=c, scale=channels)
    return streams.program(starts, cluster=cluster, slots=slots), channels * k
