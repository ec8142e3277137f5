"""NCCL's point-to-point path for a group of ``ncclSend`` / ``ncclRecv``: nccl-tests' ``alltoall_perf`` (every
rank sends count/p to each peer in one group) and ``sendrecv_perf`` (to rank+1, from rank-1), as NCCL
plans them (``enqueue.cc``: ``scheduleP2pTasksToPlan``, ``addP2pToPlan``) and which transport each pair
takes (NVLink P2P in a host, the network across hosts, PXN). Read at v2.26.2-1 and v2.30.7-1; lines are
v2.30.7-1's unless they say (docs/nccl.md, "All-to-all and send/recv", has the table).

* **No tuner.** NCCL prices no p2p operation (``tuning.cc`` fills ``latencies`` / ``bandwidths`` for the
  collectives only; ``enqueue.cc`` never calls ``ncclTopoGetAlgoTime`` for p2p). The fixed cost charged
  here is the Ring's one-hop latency of the protocol and hardware crossed (``tuning.cc`` baseLat +
  hwLat, as :func:`sim.nccl.bcred.one_hop` prices sameChannels' broadcast): an assumption, not NCCL's.
* **Channels.** ``p2pnChannels`` = pow2Up(min(comm->nChannels, NCCL_MAX_P2P_NCHANNELS)) (``paths.cc:
  ncclTopoComputeP2pChannels``); ``p2pnChannelsPerPeer`` = pow2Up of the least channels any peer asks
  (``ncclTopoGetNchannels``): NVLink 2 x (the pair's NVLink / one link's), PCI 2, the network 2 (until
  2.28: halved while 2 x nRanks > 4 x p2pnChannels, at least the GPU's NICs) or, from 2.29.2, max(NICs,
  ceil(their GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14)), then halved while perPeer x ceil(nRanks / 8) >
  p2pnChannels. Each op starts on nChannelsMin channels (perPeer halved while x nRanks > p2pnChannels) and
  doubles up to perPeer while its part exceeds maxPartSize (``addP2pToPlan``).
* **Protocol.** LL where the connection has LL buffers -- NVLink / PCI P2P yes; the network only with
  NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (``init.cc``, ``transport/net.cc``: shared p2p buffers are Simple's) --
  and the op is at most NCCL_P2P_LL_THRESHOLD = 16 KiB per channel (from 2.29.2 x its channels, before x
  perPeer); Simple otherwise. LL128 never.
* **PXN.** A send to a GPU on another host leaves by the NIC of the local GPU with the peer's device index,
  the data first crossing NVLink to that GPU, whose proxy posts it (``search.cc: ncclTopoGetNetDev``,
  NCCL_P2P_PXN_LEVEL = 2), unless NCCL_PXN_DISABLE=1 (``paths.cc``) or the GPUs share no NVLink.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..program import Step, StepProgram
from .bcred import one_hop
from .layout import host_ranks, nics_of
from .pipeline import Streams, launchers
from .tuner import PROTOS, Candidate, System, search
from .versions import NEWEST, Tuning

__all__ = [
    "P2P_COLLECTIVES",
    "P2pPick",
    "Setup",
    "alltoall_pairs",
    "op_plan",
    "p2p_program",
    "pairs_of",
    "sendrecv_pairs",
    "setup",
]

P2P_COLLECTIVES = ("alltoall", "sendrecv")
#: NCCL_P2P_LL_THRESHOLD (enqueue.cc:859): LL up to this many bytes per channel
LL_THRESHOLD = 16384
#: NCCL_P2P_NET_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE, NCCL_P2P_NVL_CHUNKSIZE (init.cc:818-820)
NET_CHUNK, PCI_CHUNK, NVL_CHUNK = 1 << 17, 1 << 17, 1 << 19
#: NCCL_P2P_PER_CHANNEL_NET_BW (paths.cc:918, from 2.29.2): GB/s one channel moves over the network
PER_CHANNEL_NET_BW = 14
#: NCCL_MAX_DEV_WORK_P2P_PER_BATCH (device.h:391): ops of different rounds one channel's batch runs
P2P_PER_BATCH = 8
#: Simple's buffer (init.cc:813: DEFAULT_BUFFSIZE) and LL's (init.cc:810: 8 lines x 512 threads x
#: NCCL_STEPS x 16 B), each NCCL_STEPS steps
DEFAULT_BUFFSIZE, LL_BUFFSIZE, NCCL_STEPS = 1 << 22, 8 * 512 * 8 * 16, 8
#: the first release with the 2.29 channel rules (P2P_PER_CHANNEL_NET_BW, LL per channel)
NEW_RULES = (2, 29, 2)


def _pow2up(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


@dataclass(frozen=True)
class Setup:
    """What NCCL's init fixes for p2p on a system: ``p2pnChannels``, ``p2pnChannelsPerPeer``,
    ``p2pChunkSize`` (bytes), nChannelsMin of ``scheduleP2pTasksToPlan``, and whether sends between hosts
    go by PXN."""

    p2p_channels: int
    per_peer: int
    chunk: int
    min_channels: int
    pxn: bool
    nodes: int
    release: tuple[int, int, int]


def _nic_count_bw(sys: System) -> tuple[int, float]:
    """``ncclTopoGetLocalNetCountByBw``: a GPU's local NICs counted until they carry its PCIe link, and their
    GB/s (each NIC's path is at most the PCIe link)."""
    per_gpu = max(1, sys.nics_per_node // max(1, sys.ppn))
    each = min(sys.nic_bw, sys.pcie_bw)
    count, total = 0, 0.0
    while count < per_gpu and (count == 0 or total < sys.pcie_bw):
        total += each
        count += 1
    return count, total


def setup(
    sys: System, release: tuple[int, int, int], nvswitch: bool = True, pxn: bool = True, tuning: Tuning = NEWEST
) -> Setup:
    """:class:`Setup` of ``sys`` for NCCL ``release`` (paths.cc: ncclTopoGetNchannels,
    ncclTopoComputeP2pChannels[PerPeer]; init.cc: computeBuffSizes). ``nvswitch``: the GPUs of a host
    meet in an NVSwitch (else each pair has its third of a 4-GPU board's links); ``pxn``: not
    NCCL_PXN_DISABLE=1. ``tuning``: the release's tuner (its ring graph's channels are comm->nChannels)."""
    new = release >= NEW_RULES
    ring = search(sys, tuning)["ring"]
    n_channels = min(ring.runtime_channels or ring.channels, tuning.max_channels)  # comm->nChannels (capped)
    asks = []
    if sys.ppn > 1:
        if sys.nvlink_bw > 0:
            links = sys.nvlink_links or 1
            pair = links if nvswitch else max(1, links // 3)
            asks.append(2 * max(1, pair))  # 2 x (path bw / one link's bw)
        else:
            asks.append(2)
    if sys.nodes > 1:
        count, bw = _nic_count_bw(sys)
        if new:
            asks.append(max(count, -(-int(bw) // PER_CHANNEL_NET_BW)))
        else:
            most = 2
            while most * sys.ranks > n_channels * 4 and most > 1:
                most //= 2
            asks.append(max(count, most))
    p2pn = min(_pow2up(n_channels), tuning.max_channels)
    if new:
        per_peer = _pow2up(min([tuning.max_channels, *asks]))
        if sys.nodes > 1:
            while per_peer * -(-sys.ranks // P2P_PER_BATCH) > p2pn and per_peer > 1:
                per_peer //= 2
        else:
            per_peer = min(p2pn, per_peer)
    else:
        per_peer = min(_pow2up(min([n_channels, *asks])), p2pn)
    chunk = NET_CHUNK if sys.nodes > 1 else (NVL_CHUNK if sys.nvlink_bw > 0 else PCI_CHUNK)
    chunk = min(chunk, (sys.buffsize or DEFAULT_BUFFSIZE) // NCCL_STEPS)
    least = per_peer
    while least * sys.ranks > p2pn and least > 1:
        least //= 2
    relay = pxn and sys.nodes > 1 and sys.ppn > 1 and sys.nvlink_bw > 0
    return Setup(p2pn, per_peer, chunk, least, relay, sys.nodes, release)


@dataclass(frozen=True)
class Op:
    """One send of the group as ``addP2pToPlan`` plans it: its channels and protocol (``ll`` / ``simple``)."""

    channels: int
    protocol: str


def op_plan(s: Setup, nbytes: float, network: bool, ll_threshold: int = LL_THRESHOLD) -> Op:
    """The channels and protocol of a send of ``nbytes`` (``network``: to another host) under ``s``."""
    b = int(nbytes)
    ll_ok = not network and ll_threshold > 0 and b > 0
    new = s.release >= NEW_RULES
    if not new:  # until 2.28: the protocol first, by perPeer x the threshold; LL's step sizes the parts
        ll = ll_ok and b <= s.per_peer * ll_threshold
        step = LL_BUFFSIZE // NCCL_STEPS if ll else s.chunk
    else:
        step = s.chunk
    if b <= 0:
        channels = 1
    else:
        lo, hi = (step // 2, step) if s.nodes > 1 else (step // 8, step * 32)
        channels = min(s.min_channels, -(-b // lo))
        part = max(lo, -(-b // channels))
        while part > hi and channels <= s.per_peer // 2:
            channels *= 2
            part = -(-b // channels)
    if new:
        ll = ll_ok and b <= channels * ll_threshold
    return Op(channels, "ll" if ll else "simple")


def alltoall_pairs(p: int) -> list[tuple[int, int, int]]:
    """(sender, receiver, segment) of nccl-tests' all-to-all: every rank to every other, block s·p + d (the
    send to itself is a local copy: no message)."""
    return [(s, d, s * p + d) for s in range(p) for d in range(p) if s != d]


def sendrecv_pairs(p: int) -> list[tuple[int, int, int]]:
    """(sender, receiver, segment) of nccl-tests' send/recv: rank r to r + 1, its whole buffer (segment 0)."""
    return [(r, (r + 1) % p, 0) for r in range(p)] if p > 1 else []


def pairs_of(collective: str, p: int) -> tuple[list[tuple[int, int, int]], float]:
    """The pairs of ``collective`` and the fraction of nccl-tests' size each carries (1/p for all-to-all,
    whose size is the whole send buffer; 1 for send/recv)."""
    if collective == "alltoall":
        return alltoall_pairs(p), 1.0 / p
    if collective == "sendrecv":
        return sendrecv_pairs(p), 1.0
    raise ValueError(f"p2p: {collective!r} is not alltoall or sendrecv")


def _hosts(cluster: Any, p: int) -> tuple[list[list[int]], dict[int, int], dict[int, int]]:
    """The ranks of each host (:func:`~sim.nccl.layout.host_ranks`), each rank's host and its index there."""
    groups = host_ranks(cluster, p)
    host_of = {r: h for h, grp in enumerate(groups) for r in grp}
    local = {r: i for grp in groups for i, r in enumerate(grp)}
    return groups, host_of, local


def _relay(
    groups: list[list[int]], host_of: dict[int, int], local: dict[int, int], src: int, dst: int, cluster: Any
) -> int | None:
    """PXN's proxy (a rank) for a send ``src`` -> ``dst`` between hosts, or None: the GPU of ``src``'s host
    with ``dst``'s device index, or the nearest below it that owns a NIC (the NIC shared by a PCIe switch's
    GPUs); None where that is ``src`` itself."""
    grp = groups[host_of[src]]
    j = local[dst] % len(grp)
    while j > 0 and not nics_of(cluster, grp[j]):
        j -= 1
    return None if grp[j] == src else grp[j]


def _actors(
    cluster: Any,
    groups: list[list[int]],
    host_of: dict[int, int],
    local: dict[int, int],
    a: int,
    b: int,
    op: Op,
    across: bool,
    pxn: bool,
) -> list[tuple[int, float, bool]]:
    """Who sends rank ``a``'s op ``op`` to ``b``, the share each moves, and whether it is a relay that ``a``
    hands the block to first (:func:`p2p_program`'s hand-off step). Inside a host: ``a``. Between hosts, the
    op's channels spread over a GPU's NICs (NCCL gives channel c the GPU's NIC c mod its NICs:
    ``ncclTopoGetLocalNet``): ``min(channels, NICs)`` parts. By PXN (the proxy GPU :func:`_relay`, another
    than ``a``'s): one part an actor whose route crosses NVLink to the proxy GPU and leaves by the NIC
    routing picks; several parts, one relay actor a part on the proxy GPU's node, leaving by its NIC k (a
    route cannot both cross NVLink to a GPU and pick that GPU's NIC: the NVLink leg is the hand-off, without
    bytes). Without PXN, or where the proxy is ``a``'s own GPU: ``a``'s own NICs, one actor a part (one part:
    ``a``, by the NIC routing picks)."""
    if not across:
        return [(a, 1.0, False)]
    proxy = _relay(groups, host_of, local, a, b, cluster) if pxn else None
    nics = nics_of(cluster, a if proxy is None else proxy)
    parts = min(op.channels, len(nics))
    if parts <= 1:
        if proxy is None:
            return [(a, 1.0, False)]
        return [(cluster.add_endpoint(rank=a, via=cluster.ranks[proxy], key=("pxn", proxy)), 1.0, False)]
    first = local[b] % len(nics)
    picked = [nics[(first + i) % len(nics)] for i in range(parts)]
    if proxy is None:
        return [(e, 1.0 / parts, False) for e in cluster.add_endpoints([a] * parts, picked, ("p2p", a))]
    node = cluster.ranks[proxy]
    key = ("pxn", a, host_of[b])  # (one relay a sender, host and NIC: one hand-off message each)
    return [(cluster.add_endpoint(node=node, via=nic, key=key), 1.0 / parts, True) for nic in picked]


@dataclass(frozen=True)
class P2pPick(Candidate):
    """NCCL's plan of a p2p group for one size, shown as ``NCCL_DEBUG=INFO`` would (:mod:`sim.nccl.report`):
    ``channels`` a peer (of the largest send), ``p2p_channels`` in all, PXN or not. ``latency_us`` is the
    fixed cost charged (NCCL prices none); ``protocol`` the sends' (``ll+simple``: LL in a host, Simple
    across)."""

    p2p_channels: int = 0
    pxn: bool = False


def plan(
    cluster: Any,
    p: int,
    nbytes: float,
    collective: str,
    s: Setup,
    ll_threshold: int = LL_THRESHOLD,
    tuning: Tuning = NEWEST,
    tuner: str = "",
) -> tuple[P2pPick, list[tuple[int, int, int, Op, bool]]]:
    """The pick of a ``collective`` of ``nbytes`` and its sends: (sender, receiver, segment, op, across
    hosts). The fixed cost is the dearest send's: one Ring hop (``tuning.cc`` baseLat + hwLat, ``tuning``'s
    tables) of the protocol it takes and the hardware it crosses (NET across hosts, else NVLink, or PCI
    where the GPUs have no NVLink)."""
    pairs, share = pairs_of(collective, p)
    _, host_of, _ = _hosts(cluster, p)
    intra = "nvlink" if cluster.graph.graph.get("nvlink_bw", 1.0) > 0 else "pci"
    sends = []
    for src, dst, seg in pairs:
        across = host_of[src] != host_of[dst]
        sends.append((src, dst, seg, op_plan(s, nbytes * share, across, ll_threshold), across))
    lat, hop = max(
        (one_hop(tuning, "net" if a else intra, PROTOS.index(op.protocol), a) for *_, op, a in sends),
        default=(0.0, 0.0),
    )
    protos = "+".join(sorted({op.protocol for *_, op, _ in sends})) or "simple"
    widest = max((op.channels for *_, op, _ in sends), default=1)
    net = any(a for *_, a in sends)
    pick = P2pPick("p2p", protos, lat, 0.0, lat, widest, hop, tuner, p2p_channels=s.p2p_channels, pxn=s.pxn and net)
    return pick, sends


def p2p_program(
    cluster: Any,
    p: int,
    sends: list[tuple[int, int, int, Op, bool]],
    nbytes: float,
    collective: str,
    pxn: bool,
    launch_s: float = 0.0,
) -> tuple[StepProgram, int]:
    """The group as one step: every send a message posted at once (NCCL's group: one kernel, every round's
    ops on their channels together), sharing links max-min; LL sends 2 bytes on the wire per byte; a send
    between hosts by the actors :func:`_actors` gives it (PXN's relay; a part a NIC where a GPU has several),
    capped at its channels x NCCL_P2P_PER_CHANNEL_NET_BW. Before it, NCCL's fixed cost ``launch_s`` (paid by
    every sender's launcher), then, where relays on a proxy GPU send, a hand-off step (no bytes: each relay
    gets its blocks). Data-check segments: p·p for all-to-all, 1 for send/recv."""
    _, share = pairs_of(collective, p)
    per = nbytes * share
    groups, host_of, local = _hosts(cluster, p)
    src, dst, size, seg, bound = [], [], [], [], []
    handed: list[tuple[int, int, int]] = []  # (rank, relay, segment): the hand-off step's messages
    for a, b, sg, op, across in sends:
        wire = 2.0 if op.protocol == "ll" else 1.0
        for actor, part, relay in _actors(cluster, groups, host_of, local, a, b, op, across, pxn):
            src.append(actor)
            dst.append(b)
            size.append(per * wire * part)
            seg.append(sg)  # (every part stores the block: the data check's segment is the whole block)
            bound.append(op.channels * part * PER_CHANNEL_NET_BW * 1e9 * wire if across else math.inf)
            if relay:
                handed.append((a, actor, sg))
    starts = (
        launchers(
            cluster, [x for x in src if x < cluster.size or cluster.endpoint_rank[x - cluster.size] >= 0], launch_s
        )
        if launch_s > 0
        else []
    )
    endpoints = cluster.endpoints
    phases: tuple[Any, ...] = ()
    if starts:
        phases = Streams(endpoints, 1).program(starts).phases
    if handed:  # each relay holds its blocks before it sends: a hand-off of no bytes over NVLink
        h = np.asarray(handed, dtype=np.int64)
        hand = Step.make(h[:, 0], h[:, 1], 0.0, endpoints=endpoints, combine=False, seg=h[:, 2])
        phases = (*phases, (hand, 1))
    if src:
        step = Step.make(
            np.asarray(src, dtype=np.int64),
            np.asarray(dst, dtype=np.int64),
            np.asarray(size),
            endpoints=endpoints,
            combine=False,
            seg=np.asarray(seg, dtype=np.int64),
            bound=np.asarray(bound),
        )
        phases = (*phases, (step, 1))
    segments = p * p if collective == "alltoall" else 1
    return StepProgram(endpoints, phases), segments
