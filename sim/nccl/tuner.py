"""NCCL's tuner for all-reduce: which algorithm, protocol and channel count NCCL would run, and its own
estimate of the time -- ported from NVIDIA/nccl master 5067397c (v2.30.7); the tables and rules of the
releases from v2.10.3 on are :mod:`sim.nccl.versions` (``tuning=`` of :func:`search`, :func:`candidates`,
:func:`pick`; the newest by default).

* :func:`describe` reads what NCCL's topology detection would see from a cluster: GPUs per node, GPU
  generation, NVLink/PCIe/NIC rates, whether the NVSwitch reduces (NVLS), the CPU vendor.
* :func:`search` summarises the graph search (``src/graph/search.cc``: ``ncclTopoCompute``) as
  docs/nccl.md describes it: per-channel speeds from NCCL's speed arrays, one ring/tree channel per NIC
  across nodes, channel duplication (``ncclTopoDupChannels``), one NVLS channel per head GPU; with
  CollNet on (SHARP switches, two nodes or more) the CollNet Direct and CollNet Chain graphs.
* :func:`disabled` / :func:`enabled`: which algorithms NCCL runs here (CollNet's rules from ``init.cc``,
  ``enqueue.cc`` and ``tuning.cc``).
* :func:`candidates` fills NCCL's latency and bandwidth tables (``src/graph/tuning.cc``:
  ``ncclTopoTuneModel``) and prices a size (``ncclTopoGetAlgoTime``); :func:`pick` takes the minimum as
  ``enqueue.cc:topoGetAlgoInfo`` does (ties keep the lower algorithm, then protocol, index).

Every constant below names the table or function of NCCL it comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ..errors import AlgorithmError
from . import efa, ofi
from .layout import NCCL_STEPS
from .protocols import NVLS_CHUNK, get_protocol
from .versions import NEWEST, Tuning

__all__ = [
    "ALGORITHMS",
    "NCCL_NAMES",
    "Candidate",
    "System",
    "candidates",
    "describe",
    "disabled",
    "enabled",
    "nvls_chunks",
    "nvls_tuning",
    "pick",
    "plugin_pick",
    "search",
    "simple_step",
]

#: NCCL's algorithm and protocol indices (``src/include/device.h``: ``NCCL_ALGO_*``, ``NCCL_PROTO_*``)
ALGORITHMS = ("tree", "ring", "collnet-direct", "collnet-chain", "nvls", "nvls-tree")
#: the names NCCL prints and NCCL_ALGO takes (``init.cc``: ``ncclAlgoStr``), in that order
NCCL_NAMES = dict(zip(ALGORITHMS, ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree"), strict=True))
PROTOS = ("ll", "ll128", "simple")
Names = set[str] | None  # algorithms or protocols a choice is restricted to (None: any)
_COMPCAP = {"sm70": 0, "sm80": 1, "sm90": 2, "sm100": 3}

_COLLNET = ("collnet-direct", "collnet-chain")
# The constants of every modelled release are in :mod:`sim.nccl.versions` (:data:`NEWEST`: v2.30.7)
# fmt: off
#: tuning.cc: treeCorrectionFactor[protocol][log2(bytes / 64)], one row per protocol as there
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0),  # LL
    (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0),  # LL128
    (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9),  # Simple
)
# fmt: on
NVLS_CHANNELS_HOPPER = 16  # nvls.cc: ncclNvlsTuning (runtime NVLS channels on Hopper; 16 since 2.18)
_KIB = 1024
#: CollNet needs at least this many nodes (init.cc: NCCL_COLLNET_NODE_THRESHOLD, default 2)
COLLNET_NODE_THRESHOLD = 2
#: CollNet Direct heads per node at most, and CollNet's limit on GPUs per node (device.h:
#: NCCL_MAX_DIRECT_ARITY + 1; search.cc caps the Direct graph's channels, enqueue.cc: updateCollCostTable
#: skips both CollNet algorithms above it)
COLLNET_MAX_LOCAL = 7 + 1
#: the tree all-reduce's refinement (tuning.cc, ncclTopoTuneModel: ``busBw = std::min(busBw*.92,
#: nChannels*perChMaxTreeBw)`` in every release from 2.10.3 to 2.30.7): the tree kernel's throughput as a
#: fraction of its links'. The tuner prices with it, and ``nccl-tree`` moves its bytes at it
TREE_EFFICIENCY = 0.92


@dataclass(frozen=True)
class System:
    """What NCCL's topology detection sees (GB/s per direction, as NCCL counts them)."""

    nodes: int
    ppn: int
    arch: str = "sm90"
    cpu_vendor: str = "intel"
    nvlink_bw: float = 0.0  # a GPU's NVLink total; 0: GPUs talk over PCIe
    pcie_bw: float = 24.0
    nic_bw: float = 25.0
    nics_per_node: int = 1
    nvls: bool = False
    sharp: bool = False
    nvlink_links: int = 0  # a GPU's NVLink links (0: unknown); sm100's NVLink is links x the release's figure
    #: the NET plugin's inter-node latency (µs, ``ncclNetProperties.latency``: search.cc copies it into every
    #: graph's ``latencyInter``); 0 for NCCL's own InfiniBand transport (net_ib.cc: "Not set")
    net_latency: float = 0.0
    #: why the NET plugin sets NCCL_PROTO=simple on this system (a phrase), "" where it does not
    simple_only: str = ""
    #: AWS's EFA plugin (:mod:`sim.nccl.efa`): its platform (``p5``) and release (``1.16.3``), "" without it;
    #: its own tuner decides where it loads (:func:`pick`)
    efa_platform: str = ""
    efa_plugin: str = ""
    #: NCCL settings in bytes (0: NCCL's default), as the NET plugin exports them or the user sets them:
    #: NCCL_BUFFSIZE (Simple's buffer: its step is an eighth), NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE
    buffsize: int = 0
    nvls_chunksize: int = 0
    nvlstree_max_chunksize: int = 0
    #: whether a GPU reaches its NIC through its CPU over NVLink-C2C (GH200: ``hgx`` graphs' ``c2c_nic``), which
    #: NCCL types PATH_PHB, PATH_P2C from 2.27.3: LL128 off across nodes before (:func:`ll128_default_off`)
    c2c_nic: bool = False

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn

    @property
    def nic_gpus(self) -> int:
        """GPUs of a node that own a NIC (every GPU, or the first of each PCIe switch where NICs are fewer):
        the heads NCCL's CollNet Direct search finds, one per GPU with a local NIC (search.cc:
        ncclTopoSearchRecNet, no duplicate head where a GPU has several NICs)."""
        return min(self.ppn, self.nics_per_node)

    @property
    def collnet(self) -> bool:
        """Whether CollNet is on: switches that reduce (SHARP, with NCCL's plugin) and enough nodes
        (init.cc: ``collNetSupport``, NCCL_COLLNET_NODE_THRESHOLD)."""
        return self.sharp and self.nodes >= COLLNET_NODE_THRESHOLD


@dataclass(frozen=True)
class Graph:
    """A search result: ``channels`` search channels of ``bw_intra`` / ``bw_inter`` GB/s each."""

    channels: int
    bw_intra: float
    bw_inter: float
    nvlink: bool
    tree_pattern: bool = False  # ended as pattern TREE (all NIC traffic through one GPU): tuner x0.85
    runtime_channels: int = 0


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) of the tuner's tables, priced for one size (µs, GB/s algbw)."""

    algorithm: str
    protocol: str
    latency_us: float
    bandwidth: float
    time_us: float
    channels: int
    net_latency_us: float = 0.0  # the part of latency_us that is hops between nodes (NET per-hop latencies)
    tuner: str = ""  # the NCCL release whose tuner priced it (sim.nccl.versions; Nccl.choice describes it)
    #: the part of latency_us that is the NET plugin's latencyInter (System.net_latency): a figure the plugin
    #: sets to steer NCCL's choice, not charged as time (the simulated links carry the network's latency)
    plugin_latency_us: float = 0.0
    #: who chose it where NCCL's own tuner did not: ``aws-ofi-nccl's tuner 1.16.3`` (:func:`pick`)
    picked_by: str = ""


def describe(cluster: Any, p: int) -> System:
    """The :class:`System` of the first ``p`` ranks of ``cluster`` (graph attributes of :mod:`hgx
    <sim.topology.hgx>` topologies where present, else read off the links)."""
    g = cluster.graph
    hosts: dict[str, int] = {}
    for r in range(p):
        hosts[cluster.host_of(r)] = hosts.get(cluster.host_of(r), 0) + 1
    nodes = len(hosts)
    ppn = max(hosts.values())
    a = g.graph
    net: dict[str, Any] = {}
    if (provider := a.get("net")) in ofi.PROVIDERS:  # AWS's plugin (sim.nccl.ofi), loaded at init on one node too
        plugin = efa.parse_plugin(a["efa_plugin"])
        platform = a.get("efa_platform", "")
        env = ofi.exported_env(provider, platform, plugin)
        net = dict(
            net_latency=ofi.reported_latency(provider, platform, plugin),
            simple_only=ofi.simple_only(provider, platform, plugin),
            buffsize=env.get("NCCL_BUFFSIZE", 0),
            nvls_chunksize=env.get("NCCL_NVLS_CHUNKSIZE", 0),
            nvlstree_max_chunksize=env.get("NCCL_NVLSTREE_MAX_CHUNKSIZE", 0),
        )
        if provider == "efa":  # (its own tuner loads over EFA only: the AWS platform file sets NCCL_TUNER_PLUGIN)
            net.update(efa_platform=platform, efa_plugin=a["efa_plugin"])
    if "nvlink_bw" in a:
        return System(
            nodes,
            ppn,
            a["gpu_arch"],
            a["cpu_vendor"],
            a["nvlink_bw"] / 1e9,
            a["pcie_bw"] / 1e9,
            a["nic_bw"] / 1e9,
            a["nics_per_host"],
            bool(a["nvls"]),
            bool(a["sharp"]),
            int(a.get("nvlink_links", 0)),
            **net,
            c2c_nic=bool(a.get("c2c_nic", False)),
        )
    nvlink = 0.0
    if ppn > 1:
        nvlink = cluster.alpha_beta(0, 1)[1]
        nvlink = 1.0 / nvlink / 1e9 if nvlink > 0 else 0.0
    nic = 25.0
    if nodes > 1:
        other = next(r for r in range(p) if cluster.host_of(r) != cluster.host_of(0))
        beta = cluster.alpha_beta(0, other)[1]
        nic = 1.0 / beta / 1e9 if beta > 0 else 25.0
    return System(nodes, ppn, nvlink_bw=nvlink, pcie_bw=max(nic, 24.0), nic_bw=nic, nics_per_node=ppn)


def _speed(speeds: tuple[float, ...], limit: float) -> float:
    for s in speeds:
        if s <= limit * (1 + 1e-9):
            return s
    return speeds[-1]


def blackwell(sys: System, tuning: Tuning = NEWEST) -> bool:
    """Whether ``tuning``'s release treats ``sys``'s GPUs as Blackwell (sm100 from 2.25.1; before, NCCL knows
    no compcap 100 and its ``>= 90`` branches take it as Hopper: index, speed arrays, NVLink per link)."""
    return sys.arch == "sm100" and tuning.blackwell


def nvlink_total(sys: System, tuning: Tuning = NEWEST) -> float:
    """A GPU's NVLink GB/s as ``tuning``'s release counts it (topo.cc ncclTopoAddNvLinks: links x topo.h
    ncclTopoNVLinkBw): sm100's per-link figure changed from release to release
    (:attr:`~sim.nccl.versions.Tuning.sm100_nvlink`)."""
    if sys.arch == "sm100" and sys.nvlink_links:
        return sys.nvlink_links * tuning.sm100_nvlink
    return sys.nvlink_bw


def search(sys: System, tuning: Tuning = NEWEST) -> dict[str, Graph]:
    """The ring, tree and NVLS graphs NCCL's search would settle on (see the module docstring), with the
    speed arrays and channel limits of ``tuning``'s release."""
    cc = _COMPCAP.get(sys.arch, 2)
    arch = "sm100" if blackwell(sys, tuning) else ("sm90" if cc >= 2 else "sm80")  # search.cc: by ccMin
    nvl = sys.nvlink_bw > 0
    nvlink = nvlink_total(sys, tuning)
    total = nvlink if nvl else sys.pcie_bw  # search.cc getTotalBw: a GPU's NVLink (or PCI) sum
    max_ring = tuning.max_channels // 2
    intra_speeds, inter_speeds = tuning.speed_intra[arch], tuning.speed_inter[arch]
    if sys.nodes == 1:
        speed = _speed(intra_speeds, total)
        ch = max(1, min(max_ring, int(total / speed + 1e-9)))
        bw_intra = bw_inter = speed
    else:
        per_nic = min(sys.nic_bw, sys.pcie_bw)
        speed = _speed(inter_speeds, per_nic)
        ch = max(1, min(sys.nics_per_node, max_ring, math.ceil(total / speed)))
        bw_intra = bw_inter = speed
    # search.cc: ncclTopoDupChannels (2.18.1: Hopper and later only from 50 GB/s)
    if tuning.dup_any_arch:  # until 2.16.2: from bwIntra 25 whatever the compcap
        dup_ok = bw_intra >= 25.0
    elif tuning.dup_from_50:
        dup_ok = (cc <= 1 and bw_intra >= 25.0) or (cc <= 2 and bw_intra >= 50.0)
    else:
        dup_ok = bw_intra >= 25.0 and not (cc >= 2 and bw_intra < 50.0 and ch > 4)
    if dup_ok:
        dup = min(2 * ch, max_ring)
        bw_intra /= math.ceil(dup / ch)
        bw_inter /= math.ceil(dup / ch)
        ch = dup
    collnet = _collnet_graphs(sys, inter_speeds, ch, bw_inter, total, tuning) if sys.collnet else {}
    runtime = 2 * ch  # connect.cc: ncclTopoPostset duplicates the channels
    chain = collnet.get("collnet-chain", collnet.get("collnet-direct"))  # until 2.13: the one collNetGraph
    if chain is not None and chain.bw_intra > chain.bw_inter and sys.ppn > 1:
        runtime = min(
            tuning.max_channels, runtime + runtime // 2
        )  # connect.cc: CollNet adds channels to saturate NVLink
    # ... and on Hopper across nodes doubles them again (2.21+: below 16; before: while they fit MAXCHANNELS)
    below = runtime < 16 if tuning.double_below_16 else 2 * runtime <= tuning.max_channels
    if tuning.hopper_double and cc >= 2 and (cc == 2 or tuning.blackwell) and sys.nodes > 1 and bw_intra > 45 and below:
        runtime *= 2
    ring = Graph(ch, bw_intra, bw_inter, nvl, runtime_channels=min(runtime, tuning.max_channels))
    tree_intra = bw_intra
    if sys.nodes > 1:  # pass 2 for trees: bwIntra may rise up to 2 x bwInter while the channels fit
        for s in intra_speeds:
            if bw_inter <= s <= 2 * bw_inter and ch * s <= total * (1 + 1e-9):
                tree_intra = max(tree_intra, s)
                break
    out = {"ring": ring, "tree": replace(ring, bw_intra=tree_intra, tree_pattern=cc >= 2)}
    out.update((a, replace(g, runtime_channels=ring.runtime_channels)) for a, g in collnet.items())
    if "nvls" in tuning.algorithms and tuning.nvls_bw == "2.17" and sys.nvls and nvl and sys.ppn > 1:
        # 2.17.1: NVLS is priced on the ring graph ("we only need the NVSwitch speed for NVLS")
        out["nvls"] = replace(ring, runtime_channels=NVLS_CHANNELS_HOPPER)
    elif "nvls" in tuning.algorithms and sys.nvls and nvl and sys.ppn > 1:
        heads = min(32, sys.ppn)
        intra = _speed(intra_speeds, nvlink / heads)
        inter = (
            intra_speeds[0]
            if sys.nodes == 1
            else _speed(inter_speeds, min(sys.nic_bw * sys.nics_per_node / sys.ppn, sys.pcie_bw))
        )
        out["nvls"] = Graph(heads, intra, inter, True, runtime_channels=nvls_tuning(sys, tuning)[0])
        if "nvls-tree" in tuning.algorithms:
            out["nvls-tree"] = out["nvls"]
    return out


def _climb(speeds: tuple[float, ...], bw_inter: float, fits: Any) -> float:
    """search.cc ncclTopoCompute, pass 2 for a tree-like graph ("increase bwIntra for trees (2 nodes or
    collnet)"): from ``bw_inter`` up the speed array one speed at a time while the last one is below
    2 x bwInter and the next one ``fits``."""
    i = speeds.index(bw_inter) if bw_inter in speeds else len(speeds) - 1
    intra = bw_inter
    while i > 0 and intra < 2 * bw_inter and fits(speeds[i - 1]):
        i -= 1
        intra = speeds[i]
    return intra


def _collnet_graphs(
    sys: System, speeds: tuple[float, ...], ring_channels: int, bw_inter: float, total: float, tuning: Tuning = NEWEST
) -> dict[str, Graph]:
    """The CollNet Direct and CollNet Chain graphs (init.cc: ``collNetDirectGraph``, ``collNetChainGraph``),
    summarised as the other graphs are: the inter-node speed is the ring's (one NIC per channel), and
    pass 2 raises bwIntra up the release's inter-node ``speeds`` while the GPUs' NVLink carries it.

    * Direct (pattern COLLNET_DIRECT): one channel per head -- a GPU with a local NIC, at most
      ``COLLNET_MAX_LOCAL`` (search.cc: maxChannels); a head's channel moves bwIntra to the other GPUs,
      1/(G-1) each, and back (search.cc: ``ncclTopoSearchTryCollnetDirect``), so a GPU's NVLink carries
      its own head's bwIntra plus (H-1)/(G-1) of the other heads'. Channel duplication leaves H channels
      at ``maxChannels`` as they are.
    * Chain (pattern TREE, as many channels as the ring graph, init.cc): per channel a chain through the
      node's GPUs, G-1 NVLink hops shared by G GPUs: ch x bwIntra x (G-1)/G per GPU.
    """
    g = sys.ppn
    nvlink = total * (1 + 1e-9)
    heads = min(COLLNET_MAX_LOCAL, sys.nic_gpus)

    def direct_fits(s: float) -> bool:
        return g == 1 or s * (1 + (heads - 1) / (g - 1)) <= nvlink

    def chain_fits(s: float) -> bool:
        return ring_channels * s * (g - 1) / g <= nvlink

    nvl = sys.nvlink_bw > 0
    chain = Graph(ring_channels, _climb(speeds, bw_inter, chain_fits), bw_inter, nvl)
    if tuning.collnet != "2.18":  # until 2.17: one collNetGraph (pattern TREE, the ring's channels) for both
        return {a: chain for a in _COLLNET if a in tuning.algorithms}
    return {
        "collnet-direct": Graph(heads, _climb(speeds, bw_inter, direct_fits), bw_inter, nvl),
        "collnet-chain": chain,
    }


def _nvls_bw(sys: System, a: str, g: Graph, tuning: Tuning, cc: int, i2: int) -> float:
    """NVLS / NVLSTree algBw (GB/s) by ``tuning``'s formula (see :class:`~sim.nccl.versions.Tuning`)."""
    n, nodes = sys.ranks, sys.nodes
    if tuning.nvls_bw == "2.17":  # the ring graph's channels x bwIntra (one node), capped per compcap, x .75
        cap = tuning.bus_cap[cc]
        return min(g.channels * g.bw_intra, cap if cap > 0 else math.inf) * tuning.nvls_ratio
    if tuning.nvls_bw == "2.28":
        intra = g.bw_intra * tuning.nvls_efficiency[cc] * (g.channels - 1) / g.channels * 2.0
        inter = g.bw_inter * (2 if nodes <= 2 and a == "nvls-tree" else 1)
        caps = tuning.per_ch_max_nvls_tree
        bw = min(intra, inter, caps[cc][i2] if a == "nvls-tree" and caps else math.inf)
        return g.channels * bw * n / (2 * (n - 1))
    if tuning.nvls_bw == "2.19":
        inter = g.bw_inter if a == "nvls" or nodes <= 2 else g.bw_inter / 2
        bw = min(g.bw_intra, inter)
    else:  # "2.18"
        bw = g.bw_intra if nodes <= 2 else g.bw_inter
    ratio = tuning.nvls_ratio
    if a == "nvls-tree" and tuning.nvls_tree_ratio is not None:  # (off on one node)
        ratio = tuning.nvls_tree_ratio * nodes / (2 * (nodes - 1)) if nodes > 1 else 0.0
    return g.channels * bw * ratio


def _capped(bus: float, tuning: Tuning, cc: int) -> float:
    """busBw under the release's per-compcap cap (``tuning.bus_cap``: sm80 235 until 2.17, Hopper 370 in 2.17)."""
    cap = tuning.bus_cap[cc]
    return min(bus, cap) if cap > 0 else bus


def _indices(sys: System, tuning: Tuning) -> tuple[int, int, int]:
    """tuning.cc's table indices: the compcap index (before 2.25.1 sm100 takes Hopper's), the llMaxBws row
    (the compcap's on one node, else the CPU vendor's) and the node-count column (N1 / N2 / N4)."""
    cc = _COMPCAP.get(sys.arch, 2)
    if cc == 3 and not tuning.blackwell:
        cc = 2
    i2 = 0 if sys.nodes == 1 else (1 if sys.nodes == 2 else 2)
    i1 = cc if sys.nodes == 1 else (1 if sys.cpu_vendor == "amd" else 0)
    return cc, i1, i2


def ring_protocol_bw(bus: float, proto: str, sys: System, g: Graph, tuning: Tuning, ll_factor: float) -> float:
    """The ring's busBw under its protocol (tuning.cc, the same for every collective but LL's factor,
    ``ll_factor``): LL x the factor up to llMaxBws, LL128 x .92 (x ``ring_ll128_one_ppn`` at one GPU a node) up
    to the channels' perChMaxRingLL128Bws, Simple as it is."""
    cc, i1, i2 = _indices(sys, tuning)
    if proto == "ll":
        return min(tuning.ll_max_bw[i1][i2], bus * ll_factor)
    if proto == "ll128":
        factor = tuning.ring_ll128_one_ppn if sys.ppn < 2 else 0.92
        return min(bus * factor, g.channels * tuning.per_ch_max_ring_ll128[cc][i2])
    return bus


def ll_intra(intra: float, sys: System, proto: str, tuning: Tuning) -> float:
    """An intra-node hop's latency with LL across nodes (until 2.17: ``intraLat *= 1.8``)."""
    return intra * tuning.ll_intra_factor if sys.nodes > 1 and proto == "ll" else intra


def net_overhead(sys: System, proto: str, tuning: Tuning) -> float:
    """tuning.cc getNetOverhead (the ring's floor on an intra-node hop across nodes): 1 us Intel, 2 us AMD,
    x3 for Simple; 0 on one node and in releases without it. An Arm CPU (``arm``, Grace: NCCL_TOPO_CPU_ARCH_ARM,
    no vendor) is not x86 Intel or AMD: getNetOverhead's ``return 1.0``, and llMaxBws' row 0 (not AMD) in
    :func:`_indices`, as Intel."""
    if sys.nodes == 1 or not tuning.net_overhead:
        return 0.0
    return (2.0 if sys.cpu_vendor == "amd" else 1.0) * (3 if proto == "simple" else 1)


def inter_latency(hw_net: float, sys: System, proto: str, tuning: Tuning) -> float:
    """tuning.cc's ``interLat`` from the NET ``hwLat`` ``hw_net`` and the NET plugin's latency
    (``graphs[a]->latencyInter``, :attr:`System.net_latency`) as ``tuning``'s release combines them: not
    read before 2.12.7; 2.12.7-2.17.1 ``latencyInter ? latencyInter : hwLat[NET]``; from 2.18.1 ``hwLat[NET]
    + latencyInter``, and ``latencyInter`` once more for Simple ("the flush extra latency")."""
    if tuning.latency_inter == "none" or not sys.net_latency:
        return hw_net
    if tuning.latency_inter == "replace":
        return sys.net_latency
    return hw_net + sys.net_latency * (2 if proto == "simple" else 1)


def ll128_default_off(sys: System, tuning: Tuning) -> bool:
    """Whether ``tuning``'s release leaves LL128 off by default on ``sys``'s GPUs (tuning.cc protoEnable: on
    only where tested), or across ``sys``'s nodes: a NIC reached through the CPU over C2C (GH200) is past
    LL128's path limit before 2.27.3 (:attr:`~sim.nccl.versions.Tuning.ll128_p2c`; on one node NCCL drops the
    NICs and LL128 runs)."""
    if sys.c2c_nic and sys.nodes > 1 and not tuning.ll128_p2c:
        return True
    return tuning.ll128_archs is not None and min(_COMPCAP.get(sys.arch, 2), 2) not in tuning.ll128_archs


def _tables(
    sys: System, graphs: dict[str, Graph], tuning: Tuning = NEWEST
) -> dict[tuple[str, str], tuple[float, float, float]]:
    """tuning.cc ncclTopoTuneModel for all-reduce, as of ``tuning``'s release: (algorithm, protocol) ->
    (latency µs, algBw GB/s, the latency's network part µs)."""
    n, nodes = sys.ranks, sys.nodes
    cc, i1, i2 = _indices(sys, tuning)
    ll_max = tuning.ll_max_bw[i1][i2]
    nsteps = 2 * (n - 1)
    out: dict[tuple[str, str], tuple[float, float, float]] = {}
    for a, g in graphs.items():
        intra_hw = "nvlink" if g.nvlink else "pci"
        for pi, proto in enumerate(PROTOS):
            if a in _COLLNET and proto != "simple":  # CollNet: "Not used"
                continue
            if a in ("nvls", "nvls-tree"):
                if proto != "simple" or (tuning.nvls_bw == "2.28" and g.channels < 2):
                    continue
                algbw = _nvls_bw(sys, a, g, tuning, cc, i2)
            elif a in _COLLNET:
                bus = _capped(g.channels * g.bw_intra, tuning, cc)
                if a == "collnet-direct" and tuning.collnet != "2.10":  # "requires all GPUs to have a local NIC"
                    factor = sys.ppn / g.channels  # GPU/NIC ratio
                    bus /= factor - (factor - 1) / 2
                    if cc >= 2 and tuning.collnet == "2.18":
                        bus *= 0.85
                if a == "collnet-chain" and tuning.collnet == "2.14":
                    bus *= 0.75
                algbw = bus * 0.5
            else:
                bus = _capped(g.channels * (g.bw_intra if nodes <= 2 else g.bw_inter), tuning, cc)
                if a == "ring":
                    bus = ring_protocol_bw(bus, proto, sys, g, tuning, tuning.ring_ll)
                if a == "tree":
                    bus = min(bus * TREE_EFFICIENCY, g.channels * tuning.per_ch_max_tree[cc][i2])
                    if proto == "ll":
                        bus = min(bus / 3.8, ll_max)
                    if proto == "ll128":
                        bus = min(
                            bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0),
                            g.channels * tuning.per_ch_max_tree_ll128[cc][i2],
                        )
                    if g.tree_pattern and tuning.tree_pattern:
                        bus *= 0.85
                algbw = bus * (n / nsteps if a != "tree" else 0.5)
            lat = tuning.base_lat[a][pi]
            intra_lat = ll_intra(tuning.hw_lat[intra_hw][a][pi], sys, proto, tuning)
            net_lat = tuning.hw_lat["net"]
            inter_lat = inter_latency(
                net_lat["tree" if sys.ppn == 1 and tuning.one_ppn_tree_net else a][pi], sys, proto, tuning
            )
            if a == "ring":
                intra_lat = max(intra_lat, net_overhead(sys, proto, tuning))
                # nInterSteps: 2 (nNodes - 1) since 2.23.4; 2 nNodes before
                inter_steps = 0 if nodes == 1 else 2 * nodes - (0 if tuning.ring_inter_steps_all else 2)
                lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
                net = inter_steps * inter_lat
            elif a == "tree":
                lat += 2 * ((sys.ppn - 1) * intra_lat + int(math.log2(nodes)) * inter_lat)
                net = 2 * int(math.log2(nodes)) * inter_lat
            elif a == "collnet-direct":  # with 0.4 us "arity serialization latency" per local peer
                lat += 2 * (min(1, sys.ppn - 1) * intra_lat + (sys.ppn - 1) * tuning.collnet_arity_lat) + inter_lat
                net = inter_lat
            elif a == "collnet-chain":  # 2.14-2.17: no NET latency
                net = inter_lat if tuning.collnet == "2.18" else 0.0
                lat += 2 * (sys.ppn - 1) * intra_lat + net
            elif tuning.nvls_lat == "2.17":  # baseLat only (NVLS: one node)
                net = 0.0
            elif tuning.nvls_lat == "2.18":  # base + hwLat[NET] (NVLS) or 2 (nNodes - 1) of them (NVLSTree)
                hops = (1 if nodes > 1 else 0) if a == "nvls" else 2 * (nodes - 1)
                net = hops * net_lat[a][pi]
                lat += net
            elif a == "nvls":
                lat = intra_lat + (inter_lat if nodes > 1 else 0.0)
                net = inter_lat if nodes > 1 else 0.0
            else:  # nvls-tree
                lat += intra_lat + 2 * int(math.log2(nodes)) * inter_lat
                net = 2 * int(math.log2(nodes)) * inter_lat
            out[(a, proto)] = (lat, algbw, net)
    return out


def nvls_tree_cap(sys: System) -> float:
    """The all-reduce bandwidth (algBw, bytes/s) NCCL's per-channel cap allows NVLS-tree: ``perChMaxNVLSTreeBws``
    (busBw per channel, an SM-throughput figure: a channel's warps copy between the NVSwitch and the
    network buffers) times the NVLS graph's channels, as algBw for ``sys.ranks`` ranks. ``inf`` on one
    node (NVLS alone has no such cap) or where NCCL has none."""
    cc = _COMPCAP.get(sys.arch, 2)
    caps = NEWEST.per_ch_max_nvls_tree
    cap = caps[cc][1 if sys.nodes == 2 else 2] if caps else 0.0
    if sys.nodes < 2 or cap <= 0:
        return math.inf
    n = sys.ranks
    return min(32, sys.ppn) * cap * 1e9 * n / (2 * (n - 1))


def ring_ll128_cap(sys: System, tuning: Tuning = NEWEST) -> float:
    """The busBw (bytes/s of data) NCCL's per-channel cap allows the ring with LL128, for every collective:
    ``perChMaxRingLL128Bws`` (busBw per channel, an SM-throughput figure: what a channel's thread block
    moves) times the ring graph's channels, of ``tuning``'s release (tuning.cc, ncclTopoTuneModel:
    ``min(busBw*.92, nChannels*perChMaxRingLL128Bw)``). The ring's other protocols have no per-channel cap."""
    cc, _, i2 = _indices(sys, tuning)
    return search(sys, tuning)["ring"].channels * tuning.per_ch_max_ring_ll128[cc][i2] * 1e9


def tree_cap(sys: System, proto: str, tuning: Tuning = NEWEST) -> float:
    """The all-reduce bandwidth (algBw, bytes/s of data) NCCL's per-channel caps allow the tree with
    ``proto``, of ``tuning``'s release (tuning.cc, ncclTopoTuneModel): ``perChMaxTreeBws`` times the tree
    graph's channels bounds the busBw before the protocol (``min(busBw*.92, nChannels*perChMaxTreeBw)``),
    so the data moves at most the protocol's payload fraction of it (LL128's 120/128, as NCCL multiplies;
    LL's 1/2, where NCCL's LL factor is 1/3.8 of the whole); LL128 then at most ``perChMaxTreeLL128Bws``
    times the channels. algBw is half the busBw (``ratio *= .5``). NCCL's x0.85 for pattern TREE scales
    every tree bandwidth, capped or not, and is not a cap."""
    cc, _, i2 = _indices(sys, tuning)
    per = tuning.per_ch_max_tree[cc][i2] * get_protocol(proto).payload
    if proto == "ll128":
        per = min(per, tuning.per_ch_max_tree_ll128[cc][i2])
    return 0.5 * search(sys, tuning)["tree"].channels * per * 1e9


def disabled(sys: System, graphs: dict[str, Graph], algorithm: str, tuning: Tuning = NEWEST) -> str | None:
    """Why NCCL would not run ``algorithm`` on ``sys`` (a phrase), or None where it may. CollNet is on
    where the topology's switches have ``sharp`` (standing for SHARP switches, NCCL's CollNet plugin
    and NCCL_COLLNET_ENABLE=1) across at least NCCL_COLLNET_NODE_THRESHOLD nodes (init.cc); then
    (tuning.cc, the disable loop, and enqueue.cc: updateCollCostTable)
    CollNet Direct needs an NVSwitch (``nvsCount``) and both need at most 8 GPUs a node
    (NCCL_MAX_DIRECT_ARITY + 1). NVLS across nodes runs over CollNet too. ``tuning``'s release may not have
    the algorithm at all (before 2.18.1 no NVLSTree, before 2.17.1 no NVLS, before 2.14.3 one CollNet), and
    2.17.1 runs NVLS inside one node only (nvls.cc)."""
    if algorithm not in tuning.algorithms:
        return f"is not in the tuner of NCCL {tuning.span}"
    if algorithm == "nvls" and tuning.nvls_bw == "2.17" and sys.nodes > 1:
        return f"runs inside one host in NCCL {tuning.span} (nvls.cc)"
    if algorithm in ("nvls", "nvls-tree") and "nvls" not in graphs:
        return "needs an NVSwitch that reduces (NVLink SHARP)"
    if algorithm == "nvls-tree" and sys.nodes == 1:
        return "is off on a single host"
    if algorithm == "nvls" and sys.nodes > 1 and not sys.collnet:
        return "runs inside one host unless the switches reduce (hgx:...,sharp=true)"
    if algorithm not in _COLLNET:
        return None
    if sys.nodes < COLLNET_NODE_THRESHOLD:
        return f"needs at least {COLLNET_NODE_THRESHOLD} hosts (NCCL_COLLNET_NODE_THRESHOLD)"
    if not sys.sharp:
        return "needs switches that reduce (SHARP: hgx:...,sharp=true)"
    if sys.ppn > COLLNET_MAX_LOCAL:
        return f"takes at most {COLLNET_MAX_LOCAL} GPUs per host"
    if algorithm == "collnet-direct" and sys.nvlink_bw <= 0 and tuning.collnet != "2.10":
        return "needs an NVSwitch in every host"
    return None


def enabled(sys: System, graphs: dict[str, Graph], tuning: Tuning = NEWEST) -> set[str]:
    """Algorithms NCCL (``tuning``'s release) enables by default: those :func:`disabled` has no reason against."""
    return {a for a in ALGORITHMS if disabled(sys, graphs, a, tuning) is None}


def candidates(
    sys: System, nbytes: float, algos: Names = None, protos: Names = None, tuning: Tuning = NEWEST
) -> list[Candidate]:
    """Every enabled (algorithm, protocol) priced for ``nbytes`` (ncclTopoGetAlgoTime), in NCCL's order,
    by the tuner of ``tuning``'s release."""
    graphs = search(sys, tuning)
    allowed = enabled(sys, graphs, tuning) if algos is None else algos
    protos = platform_protocols(sys, protos)
    tables = _tables(sys, graphs, tuning)
    plain = _tables(replace(sys, net_latency=0.0), graphs, tuning) if sys.net_latency else tables
    log_size = int(math.log2(nbytes / 64)) if nbytes >= 64 else -1
    cc = _COMPCAP.get(sys.arch, 2)
    ll128_off = ll128_default_off(sys, tuning)
    nvls_tree_corrected = tuning.nvls_tree_correction and blackwell(sys, tuning)  # (hgx's CPUs are all x86)
    nvls_channels = nvls_tuning(sys, tuning)[0]
    out = []
    for a in ALGORITHMS:
        if a not in allowed:
            continue
        for pi, proto in enumerate(PROTOS):
            if (a, proto) not in tables or (protos is not None and proto not in protos):
                continue
            if proto == "ll128" and ll128_off and protos is None:  # tuning.cc: LL128 on by default where tested
                continue
            lat, bw, net = tables[(a, proto)]
            plugin = lat - plain[(a, proto)][0]
            if bw <= 0:
                continue
            if a == "tree" and 0 <= log_size < 23:
                bw *= TREE_CORRECTION[pi][log_size]
            if a == "nvls-tree" and nvls_tree_corrected and 0 <= log_size < 24:  # 2.29.2 on: sm100, x86 CPU
                bw *= TREE_CORRECTION[pi][log_size]
            if a == "ring" and proto == "simple" and sys.nodes > 1 and _plateau(sys, nbytes, graphs[a], tuning):
                plateau = tuning.plateau[cc]  # "plateau effect of ring"
                lat, net, plugin = lat * plateau, net * plateau, plugin * plateau
            g = graphs[a]
            ch = g.runtime_channels if a not in ("nvls", "nvls-tree") else nvls_channels
            out.append(Candidate(a, proto, lat, bw, lat + nbytes / (1000 * bw), ch, net, tuning.release, plugin))
    return out


def platform_protocols(sys: System, protos: Names) -> Names:
    """The protocols NCCL may use on ``sys`` of ``protos`` (None: any): Simple alone where the NET plugin sets
    NCCL_PROTO=simple (:attr:`System.simple_only`, :mod:`sim.nccl.efa`). A restriction to protocols without
    Simple there is an AlgorithmError saying why (the plugin leaves a user's NCCL_PROTO as it is, with a
    warning that the endpoint may corrupt data: collsim does not simulate that)."""
    if not sys.simple_only:
        return protos
    if protos is not None and "simple" not in protos:
        raise AlgorithmError(f"nccl: protocol {'|'.join(sorted(protos))} cannot run here: {sys.simple_only}")
    return {"simple"}


def nvls_tuning(sys: System, tuning: Tuning = NEWEST) -> tuple[int, int | None]:
    """NCCL's runtime NVLS channels on ``sys`` and NVLS-tree's first chunk where the release sets one of its
    own (None: the release's rule, :func:`sim.nccl.protocols.nvls_chunk`) -- transport/nvls.cc. Hopper (and
    sm100 before 2.25.1) 16 channels; sm100 ``tuning.nvls_channels_sm100`` (one node, several), and from
    2.30.3 across nodes ncclNvlsTreeSm100Tuning: 2 nodes with NICs of 48 GB/s or more 32 channels, the chunk
    min(NCCL_NVLS_CHUNKSIZE, tree ceiling) 256 KiB up to 4 GPUs a node, 64 KiB from 16 or up to 8 with NICs
    under 96 GB/s behind the GPU's PCIe switch (every hgx NIC: PATH_PIX), else 128 KiB; more nodes with NICs
    of 96 GB/s 24 channels and 256 KiB up to 8 GPUs a node, else 32 and 128 KiB (64 from 32 GPUs); with
    48-96 GB/s 24 channels and 64 KiB (PATH_PXB or closer); slower NICs keep the defaults."""
    if not blackwell(sys, tuning):
        return NVLS_CHANNELS_HOPPER, None
    one, several = tuning.nvls_channels_sm100
    if sys.nodes == 1:
        return one, None
    if not tuning.nvls_sm100_tuning:
        return several, None
    nic, ppn = sys.nic_bw, sys.ppn
    if sys.nodes == 2 and nic >= 48.0:
        if ppn <= 4:
            return 32, 256 * _KIB
        return 32, (64 if ppn >= 16 or (ppn <= 8 and nic < 96.0) else 128) * _KIB
    if nic >= 96.0:
        return (24, 256 * _KIB) if ppn <= 8 else (32, (128 if ppn < 32 else 64) * _KIB)
    if nic >= 48.0:
        return 24, 64 * _KIB
    return several, None


def nvls_chunks(sys: System | None, tuning: Tuning = NEWEST) -> tuple[int, int, bool]:
    """The first chunks NCCL's NVLS and NVLS-tree all-reduces start from on ``sys`` (before halving for
    smaller buffers: :func:`sim.nccl.protocols.nvls_chunk`), and whether NVLS-tree's 64 KiB from 4 nodes
    applies -- with ``sys``'s NCCL settings (:attr:`System.buffsize`, ``nvls_chunksize``,
    ``nvlstree_max_chunksize``: AWS's EFA plugin exports them, :func:`sim.nccl.efa.exported_env`), as
    ``enqueue.cc`` (calcCollChunking / computeCollChunkInfo) and ``transport/nvls.cc`` read them:

    * from 2.21.5: NVLS ``min(Simple step, NCCL_NVLS_CHUNKSIZE)`` (the step: NCCL_BUFFSIZE / NCCL_STEPS);
      NVLS-tree ``min(NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE)``, the latter unset: the NVLS chunk,
      64 KiB from 4 nodes;
    * before: NVLS ``min(step, 128 KiB)``; NVLS-tree the step, ``min(step, NCCL_NVLSTREE_MAX_CHUNKSIZE)``
      where that is set (2.20.3's rule; 2.18 and 2.19 did not read it: a simplification, the tuner's
      releases run 2.19.3-2.20.5 as one).

    Without settings (and with sm100's own NVLS-tree tuning, :func:`nvls_tuning`) the release's figures:
    128 KiB, ``tuning.nvls_tree_chunk``, ``tuning.nvls_tree_cap4``."""
    tree_start = nvls_tuning(sys, tuning)[1] if sys is not None else None
    if tree_start:
        return NVLS_CHUNK, tree_start, False
    if sys is None or not (sys.buffsize or sys.nvls_chunksize or sys.nvlstree_max_chunksize):
        return NVLS_CHUNK, tuning.nvls_tree_chunk, tuning.nvls_tree_cap4
    step = simple_step(sys)  # NCCL_BUFFSIZE / NCCL_STEPS, NCCL's 4 MiB / 8 where unset
    tree_max = sys.nvlstree_max_chunksize
    if tuning.nvls_tree_chunk == NVLS_CHUNK:  # 2.21.5 on: NCCL_NVLS_CHUNKSIZE
        nvls = sys.nvls_chunksize or NVLS_CHUNK
        return min(step, nvls), min(nvls, tree_max) if tree_max else nvls, tuning.nvls_tree_cap4 and not tree_max
    return min(step, NVLS_CHUNK), min(step, tree_max) if tree_max else step, tuning.nvls_tree_cap4 and not tree_max


def simple_step(sys: System | None) -> int:
    """Simple's step (payload bytes a buffer slot holds): NCCL_BUFFSIZE / NCCL_STEPS (init.cc, enqueue.cc:
    ``stepSize = comm->buffSizes[protocol] / NCCL_STEPS``), 512 KiB by default."""
    if sys is None or not sys.buffsize:
        return get_protocol("simple").step
    return sys.buffsize // NCCL_STEPS


def _plateau(sys: System, nbytes: float, ring: Graph, tuning: Tuning) -> bool:
    """Whether NCCL's ring/Simple "plateau" factor applies (ncclTopoGetAlgoTime): from 2.18.1 where each
    channel of each rank gets at least 64 bytes, until 2.17 from nRanks / 16 x 64 KiB."""
    if tuning.plateau_rule == "2.10":
        return nbytes >= sys.ranks / 16.0 * 65536
    return nbytes / (ring.runtime_channels * sys.ranks) >= 64


def pick(sys: System, nbytes: float, algos: Names = None, protos: Names = None, tuning: Tuning = NEWEST) -> Candidate:
    """NCCL's choice for an all-reduce of ``nbytes`` per rank (strict minimum, first wins ties)."""
    found = candidates(sys, nbytes, algos, protos, tuning)
    if not found:
        what = f"algorithms {sorted(algos)}" if algos else "algorithms"
        raise AlgorithmError(
            f"nccl: no {what} with protocols {sorted(protos) if protos else 'any'} can run on this topology"
        )
    best = found[0]
    for c in found[1:]:
        if c.time_us < best.time_us:
            best = c
    if sys.efa_plugin:
        return plugin_pick(sys, nbytes, found, tuning, algos is not None or protos is not None) or best
    return best


def plugin_pick(
    sys: System, nbytes: float, found: list[Candidate], tuning: Tuning = NEWEST, restricted: bool = False
) -> Candidate | None:
    """The candidate of ``found`` that AWS's EFA plugin's own tuner makes NCCL run (cost 0 in NCCL's table:
    :func:`sim.nccl.efa.region_pick`), where ``tuning``'s release loads it (:func:`sim.nccl.efa.tuner_loaded`)
    and its regions decide; else None (NCCL's own pick stands). With NCCL_ALGO / NCCL_PROTO set
    (``restricted``) the plugin's v1 and v2 tuner APIs, which NCCL takes before 2.22.3, do not load
    (src/tuner/nccl_ofi_tuner.cpp ``nccl_ofi_tuner_init_v2``: "The tuner plugin can not be loaded when
    explicitly choosing an algorithm or protocol"); v3 on skips the regions NCCL left out of its table. (2.22.3
    runs as 2.21.5's tuner here: taken as before 2.22.3.)"""
    plugin = efa.parse_plugin(sys.efa_plugin)
    if not efa.tuner_loaded(plugin, tuning.first) or (restricted and tuning.first < (2, 22, 3)):
        return None
    chosen = efa.region_pick(
        sys.efa_platform, plugin, sys.nodes, sys.ranks, nbytes, {(c.algorithm, c.protocol) for c in found}
    )
    if chosen is None:
        return None
    c = next(c for c in found if (c.algorithm, c.protocol) == chosen)
    return replace(c, picked_by=f"aws-ofi-nccl's tuner {sys.efa_plugin}")
