"""What NCCL's tuner computes for all-reduce, release by release, from v2.10.3 to v2.30.7.

Each :class:`Tuning` is the set of constants and rules of one range of NVIDIA/nccl releases, from the
release that introduced them up to the next entry's; every field names where in NCCL's source (at the
tag of its range) it comes from: ``src/graph/tuning.cc`` (``ncclTopoTuneModel``,
``ncclTopoGetAlgoTime``), ``src/graph/search.cc`` (speed arrays), ``src/graph/connect.cc``
(``ncclTopoPostset``: runtime channels), ``src/transport/nvls.cc`` and ``MAXCHANNELS``
(``src/include/devcomm.h``, ``device.h``). :data:`NEWEST` is the tuner of v2.30.7 (master 5067397c), the
default. Before v2.18.1 there is no NVLSTree, before v2.17.1 no NVLS (2.17.1: one node only), before
v2.14.3 one CollNet algorithm; the rules of those releases the later ones dropped are fields whose
defaults are the later behaviour (``algorithms``, ``bus_cap``, ``ll_intra_factor``, ``net_overhead``,
``plateau_rule``, ...). Releases older than v2.10.3 (2.3.7-2.9.9) are modelled as v2.10.3, and say so
(:func:`tuning_for`). Blackwell (sm100) has its own figures from v2.25.1, the first release that knows it
(``blackwell``, ``sm100_nvlink``, ``nvls_channels_sm100``, the ``"sm100"`` speed arrays, ...); before, NCCL's
``>= 90`` branches take compcap 100 as Hopper, and so does the model. The sm100 figures that changed inside
2.25.1-2.27.7 are :data:`BLACKWELL_STEPS`, applied by :func:`tuning_for`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Annotated

from pydantic import AfterValidator

__all__ = ["BLACKWELL_STEPS", "C2C_STEPS", "NEWEST", "RELEASES", "TUNINGS", "Tuning", "parse_version", "tuning_for"]

Version = tuple[int, int, int]
Lat = tuple[float, float, float]  # (LL, LL128, Simple) us
Rows = tuple[tuple[float, float, float], ...]  # [compcap index: Volta, Ampere, Hopper, Blackwell][N1/N2/N4]

#: NCCL's 2.x releases (the ``v2.X.Y-1`` tags of NVIDIA/nccl)
RELEASES: tuple[Version, ...] = tuple(
    tuple(int(x) for x in v.split("."))  # type: ignore[misc]
    for v in (
        "2.3.7 2.4.2 2.4.6 2.4.7 2.4.8 2.5.6 2.5.7 2.6.4 2.7.3 2.7.5 2.7.6 2.7.8 2.8.3 2.8.4 2.9.6 2.9.8 2.9.9 "
        "2.10.3 2.11.4 2.12.7 2.12.10 2.12.12 2.13.4 2.14.3 2.15.1 2.15.5 2.16.2 2.16.5 2.17.1 2.18.1 2.18.3 "
        "2.18.5 2.18.6 2.19.1 2.19.3 2.19.4 2.20.3 2.20.5 2.21.5 2.22.3 2.23.4 2.24.3 2.25.1 2.26.2 2.26.3 "
        "2.26.5 2.26.6 2.27.3 2.27.5 2.27.6 2.27.7 2.28.3 2.28.7 2.28.9 2.29.2 2.29.3 2.29.7 2.30.3 2.30.4 2.30.7"
    ).split()
)


def _text(v: Version) -> str:
    return ".".join(map(str, v))


@dataclass(frozen=True)
class Tuning:
    """The all-reduce tuner of the releases from ``first`` on (up to the next :data:`TUNINGS` entry)."""

    first: Version
    #: baseLatencies / baseLat [algorithm] -> (LL, LL128, Simple) us
    base_lat: dict[str, tuple[float, float, float]]
    #: hwLatencies / hwLat [nvlink|pci|net][algorithm] -> (LL, LL128, Simple) us
    hw_lat: dict[str, dict[str, tuple[float, float, float]]]
    ll_max_bw: Rows  # llMaxBws [Volta-N1/Intel, Ampere-N1/AMD, Hopper-N1, Blackwell-N1][N1/N2/N4]
    per_ch_max_ring_ll128: Rows  # perChMaxRingLL128Bws (ll128MaxBwPerCh for every node count in 2.18.1)
    per_ch_max_tree_ll128: Rows  # perChMaxTreeLL128Bws (likewise)
    per_ch_max_tree: Rows  # perChMaxTreeBws
    #: perChMaxNVLSTreeBws (since 2.28.3); None: no such cap
    per_ch_max_nvls_tree: Rows | None
    #: NVLS(-tree) bandwidth: "2.18" busBw = channels x bwIntra (bwInter from 3 nodes); "2.19" channels x
    #: min(bwIntra, bwInter) (NVLSTree: bwInter / 2 from 3 nodes), both times ``nvls_ratio``; "2.28" the
    #: nvlsEfficiency form (bwIntra x eff x (ch - 1) / ch x 2, NVLSTree bwInter x 2 on 2 nodes, per-channel
    #: cap) times nRanks / nsteps
    nvls_bw: str
    nvls_ratio: float  # algBw / busBw for NVLS ("2.18", "2.19": .75 in 2.18.1, 5/6 from 2.18.3)
    #: NVLSTree's algBw / busBw: .70 nNodes / (2 (nNodes - 1)) in 2.18.x; None: ``nvls_ratio``
    nvls_tree_ratio: float | None
    nvls_efficiency: tuple[float, float, float, float]  # nvlsEfficiency (since 2.28.3)
    #: NVLS(-tree) latency: "2.18" base + NET (NVLS) / base + 2 (nNodes - 1) NET (NVLSTree); "2.19"
    #: intra + NET / base + intra + 2 log2(nNodes) NET (interLat)
    nvls_lat: str
    ring_ll: float  # ring LL busBw factor: 1/4 (until 2.20), .5 (from 2.21.5)
    ring_ll128_one_ppn: float  # ring LL128 factor with one GPU per node: 0.7 until 2.22, then .92 as others
    #: ring's network steps: 2 nNodes (until 2.22: nInterSteps), 2 (nNodes - 1) from 2.23.4
    ring_inter_steps_all: bool
    tree_pattern: bool  # tree x.85 where the tree graph is pattern TREE (since 2.18.3)
    one_ppn_tree_net: bool  # with one GPU per node the NET latency is Tree's (since 2.23.4)
    blackwell: bool  # a compcap index of its own for sm100 (since 2.25.1; before: Hopper's)
    speed_intra: dict[str, tuple[float, ...]]  # search.cc: speedArrayIntra / sm90SpeedArrayIntra
    speed_inter: dict[str, tuple[float, ...]]  # search.cc: speedArrayInter / sm90SpeedArrayInter
    max_channels: int  # MAXCHANNELS: 32 until 2.24, 64 from 2.25.1
    #: connect.cc: channels doubled again on sm90 across nodes with ring bwIntra > 45 while nChannels < 16
    #: (from 2.21.5); before, while 2 nChannels <= MAXCHANNELS
    double_below_16: bool
    #: enqueue.cc calcCollChunking: NVLS-tree's first chunk, NCCL_NVLS_CHUNKSIZE 128 KiB from 2.21.5, the
    #: Simple step before (4 MiB NCCL_BUFFSIZE / NCCL_STEPS 8 = 512 KiB), and its 64 KiB from 4 nodes (2.19+)
    nvls_tree_chunk: int
    nvls_tree_cap4: bool
    #: search.cc ncclTopoDupChannels: 2.18.1 duplicates where (ccMin <= 80 and bwIntra >= 25) or (ccMin <= 90
    #: and bwIntra >= 50); from 2.18.3 where bwIntra >= 25 unless ccMin > 80, bwIntra < 50 and > 4 channels
    dup_from_50: bool = False
    # -- fields for the releases before 2.18.1 (their defaults are 2.18.1's and later rules) --
    #: the algorithms the release's tuner has (device.h NCCL_ALGO_*): Tree, Ring and one CollNet until
    #: 2.13 (priced as "collnet-direct"), CollNet Direct and Chain from 2.14.3, NVLS from 2.17.1, NVLSTree
    #: from 2.18.1
    algorithms: tuple[str, ...] = ("tree", "ring", "collnet-direct", "collnet-chain", "nvls", "nvls-tree")
    #: search.cc ncclTopoCompute: channels duplicated wherever bwIntra >= 25, whatever the compcap (until 2.16.2)
    dup_any_arch: bool = False
    #: connect.cc ncclTopoPostset: Hopper's runtime channels doubled again across nodes (from 2.18.1)
    hopper_double: bool = True
    #: tuning.cc "Various model refinements": busBw capped per compcap index (0: none) before the others
    #: (sm80 235 until 2.17; Hopper 370 in 2.17.1)
    bus_cap: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    #: tuning.cc: intraLat x 1.8 for LL across nodes (until 2.17)
    ll_intra_factor: float = 1.0
    #: tuning.cc getNetOverhead: a ring step is at least the network overhead (1 / 2 us, x3 Simple; from 2.18.1)
    net_overhead: bool = True
    #: ncclTopoGetAlgoTime, ring plateau: "2.18" from nBytes / (nChannels nRanks) >= 64; "2.10" from
    #: nBytes >= nRanks / 16 x 64 KiB (until 2.17)
    plateau_rule: str = "2.18"
    #: the plateau's latency factor per compcap index (1.9 before sm80, 1.4 from 2.18.1; 1.9 everywhere
    #: until 2.16, 1.5 for Hopper in 2.17.1)
    plateau: tuple[float, float, float, float] = (1.9, 1.4, 1.4, 1.4)
    #: compcap indices where LL128 is on by default (tuning.cc protoEnable; None: every one): sm70 and sm80
    #: until 2.14, sm90 too from 2.15.1
    ll128_archs: tuple[int, ...] | None = None
    #: CollNet: "2.18" Direct on its own graph (heads), x.85 on Hopper, Chain + NET latency; "2.14" Direct
    #: and Chain on one collNetGraph (pattern TREE, the ring's channels), Chain x .75 and no NET latency,
    #: Direct without the Hopper x.85; "2.10" one CollNet (NCCL_ALGO_COLLNET, priced as Direct's latency,
    #: busBw channels x bwIntra, no GPU/NIC factor, no NVSwitch needed)
    collnet: str = "2.18"
    #: enqueue.cc computeColl: NVLS's chunk halves to 64 KiB below this many chunks a channel and head (32 in
    #: 2.17.1, 64 from 2.18.1)
    nvls_chunk_first: int = 64
    collnet_arity_lat: float = 0.4  # CollNet Direct's arity serialization latency per local GPU (0.5 until 2.18)
    # -- Blackwell (sm100; NCCL knows it from 2.25.1, "Add Blackwell/SM100 support"); the defaults are 2.30.3's --
    #: topo.h SM100_NVLINK_BW: NVLink GB/s per link NCCL counts for compcap >= 100 (40.0 from 2.25.1, 40.1
    #: from 2.27.5); before 2.25.1 compcap 100 takes SM90_NVLINK_BW (20.6, as the model counts H100)
    sm100_nvlink: float = 40.1
    #: nvls.cc: NVLS channels on sm100, (one node, several): NVLS_NCHANNELS_SM100 32 from 2.25.1, one node
    #: NVLS_NCHANNELS_SM100_NVL 24 from 2.27.3; before 2.25.1 Hopper's 16
    nvls_channels_sm100: tuple[int, int] = (24, 32)
    #: nvls.cc ncclNvlsTreeSm100Tuning (from 2.30.3): on sm100 across nodes the NVLS channels and NVLS-tree's
    #: chunk by node count, GPUs per node and NIC speed (:func:`sim.nccl.tuner.nvls_tuning`)
    nvls_sm100_tuning: bool = True
    #: tuning.cc ncclTopoGetAlgoTime (from 2.29.2): NVLSTree's bandwidth x treeCorrectionFactor below 2^24 x
    #: 64 B on sm100 with an x86 CPU
    nvls_tree_correction: bool = True
    #: tuning.cc interLat and a NET plugin's ``graphs[a]->latencyInter`` (search.cc, from the plugin's
    #: ``ncclNetProperties.latency``): "none" not read (until 2.11); "replace" ``latencyInter ? latencyInter :
    #: hwLat[NET]`` (2.12.7-2.17.1); "add" hwLat[NET] + latencyInter, + latencyInter again for Simple (2.18.1 on)
    latency_inter: str = "add"
    #: tuning.cc protoEnable: LL128 across nodes where the GPU reaches its NIC through its CPU over NVLink-C2C
    #: (GH200: :attr:`sim.nccl.tuner.System.c2c_nic`). From 2.27.3 paths.cc types that path PATH_P2C ("a GPU and
    #: a NIC using the C2C connection to the CPU and the PCIe connection to the NIC") and LL128 runs up to it
    #: (``typeInter <= (ncclParamLl128C2c() ? PATH_P2C : PATH_PXN)``, NCCL_LL128_C2C default 1); before, the
    #: path is PATH_PHB, past ``typeInter <= PATH_PXB || (minCompCap >= 90 && typeInter <= PATH_PXN)``: off
    ll128_p2c: bool = True
    notes: tuple[str, ...] = field(default=(), compare=False)  # what changed at ``first``, for docs and tests

    @property
    def release(self) -> str:
        return _text(self.first)

    @property
    def last(self) -> str:
        """The last release of this range."""
        later = [t.first for t in TUNINGS if t.first > self.first]
        nxt = min(later) if later else None
        return _text(max(v for v in RELEASES if v >= self.first and (nxt is None or v < nxt)))

    @property
    def span(self) -> str:
        return self.release if self.release == self.last else f"{self.release}-{self.last}"


def _row(tree: Lat, ring: Lat, *simple: float) -> dict[str, Lat]:
    """One row of NCCL's latency tables: Tree's and Ring's (LL, LL128, Simple), then CollNet Direct,
    CollNet Chain, NVLS and NVLSTree, which run Simple only (their LL and LL128 entries are 0)."""
    rest = ("collnet-direct", "collnet-chain", "nvls", "nvls-tree")
    return {"tree": tree, "ring": ring, **{a: (0.0, 0.0, float(x)) for a, x in zip(rest, simple, strict=True)}}


_SM80_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_SM80_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12)
_TAIL = (6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
# search.cc sm100SpeedArrayIntra / sm100SpeedArrayInter (2.25.1 on; their changes are the ranges' notes)
_SM100_INTRA_19 = (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0)  # 2.25.1-2.26.6
_SM100_INTRA_18 = (*_SM100_INTRA_19, 18.0)  # 2.27.3-2.28.9
_SM100_INTRA_45 = (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)  # 2.29.2 on
_SM100_INTER_45 = (42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, *_TAIL)  # the tail from 42
_SM100_INTER_48 = (48.0, 45.1, *_SM100_INTER_45)  # 2.27.5 (2.27.6 on after 96; 2.29.7 after 96, 80; ...)

# v2.30.3 - v2.30.7 (master 5067397c): tuning.cc ncclTunerConstantsDefaults, nvlsEfficiency
V2_30_3 = Tuning(
    first=(2, 30, 3),
    base_lat=_row((6.8, 14.0, 8.4), (6.6, 14.0, 8.4), 0, 0, 0, 0),
    hw_lat={  # NCCL's table rows, in its order: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree
        "nvlink": _row((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), 3.7, 2.8, 25, 25),
        "pci": _row((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), 3.7, 2.8, 0, 0),
        "net": _row((5.0, 8.5, 14), (2.7, 4.0, 14.0), 31, 30, 18, 20.9),
    },
    ll_max_bw=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0)),
    per_ch_max_ring_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (40.0,) * 3),
    per_ch_max_tree_ll128=((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0)),
    per_ch_max_tree=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0)),
    per_ch_max_nvls_tree=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0)),
    nvls_bw="2.28",
    nvls_ratio=5.0 / 6.0,
    nvls_tree_ratio=None,
    nvls_efficiency=(0.0, 0.0, 0.85, 0.74),
    nvls_lat="2.19",
    ring_ll=0.5,
    ring_ll128_one_ppn=0.92,
    ring_inter_steps_all=False,
    tree_pattern=True,
    one_ppn_tree_net=True,
    blackwell=True,
    speed_intra={
        "sm80": _SM80_INTRA,
        "sm90": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
        "sm100": _SM100_INTRA_45,
    },
    speed_inter={
        "sm80": _SM80_INTER,
        "sm90": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, *_TAIL),
        "sm100": (96.0, 86.0, 80.0, *_SM100_INTER_48),
    },
    max_channels=64,
    double_below_16=True,
    nvls_tree_chunk=128 * 1024,
    nvls_tree_cap4=True,
    notes=("Blackwell perChMaxNVLSTreeBws N4 43.8 -> 80",),
)
_BW = V2_30_3.per_ch_max_nvls_tree
assert _BW is not None
V2_29_7 = replace(
    V2_30_3,
    first=(2, 29, 7),
    per_ch_max_nvls_tree=(*_BW[:3], (0.0, 96.0, 43.8)),
    speed_inter={**V2_30_3.speed_inter, "sm100": (96.0, 80.0, *_SM100_INTER_48)},
    nvls_sm100_tuning=False,
    notes=(
        "Blackwell perChMaxRingLL128Bws 34.5/34.6/34.5 -> 40",
        "sm100 inter speed 80 added",
    ),
)
V2_29_2 = replace(
    V2_29_7,
    first=(2, 29, 2),
    per_ch_max_ring_ll128=(*V2_30_3.per_ch_max_ring_ll128[:3], (34.5, 34.6, 34.5)),
    speed_inter={**V2_30_3.speed_inter, "sm100": (96.0, *_SM100_INTER_48)},
    notes=(
        "Blackwell perChMaxRingLL128Bws 73.4/34.6/73.4 -> 34.5/34.6/34.5",
        "sm100 intra speed 45 added; NVLSTree x treeCorrectionFactor on sm100 with an x86 CPU",
    ),
)
V2_28_9 = replace(
    V2_29_2,
    first=(2, 28, 9),
    per_ch_max_ring_ll128=(*V2_30_3.per_ch_max_ring_ll128[:3], (2 * 36.7, 34.6, 2 * 36.7)),
    speed_intra={**V2_30_3.speed_intra, "sm100": _SM100_INTRA_18},
    nvls_tree_correction=False,
    notes=("NVLSTree NET hwLat 14 -> 20.9 us", "Blackwell perChMaxNVLSTreeBws N4 43.1 -> 43.8"),
)
V2_28_7 = replace(
    V2_28_9,
    first=(2, 28, 7),
    hw_lat={**V2_30_3.hw_lat, "net": {**V2_30_3.hw_lat["net"], "nvls-tree": (0, 0, 14)}},
    per_ch_max_nvls_tree=(*_BW[:3], (0.0, 96.0, 43.1)),
    notes=("Blackwell perChMaxRingLL128Bws N2 73.4 -> 34.6",),
)
V2_28_3 = replace(
    V2_28_7,
    first=(2, 28, 3),
    per_ch_max_ring_ll128=(*V2_30_3.per_ch_max_ring_ll128[:3], (2 * 36.7,) * 3),
    notes=(
        "NVLS(-tree) bandwidth from nvlsEfficiency (0.85 Hopper) x (ch - 1) / ch x 2, NVLSTree bwInter x 2 on "
        "2 nodes and perChMaxNVLSTreeBws, times nRanks / nsteps (was channels x min(bwIntra, bwInter) x 5/6)",
        "Blackwell rows perChMaxTreeLL128Bws 55.6/31.67/20, perChMaxTreeBws 70/42.8/24 (were 2 x Hopper's)",
    ),
)
_HOPPER2 = (
    (2 * 36.7,) * 3,
    (2 * 36.7, 2 * 36.7, 2 * 29.0),
    (2 * 38.7, 2 * 41.4, 2 * 36.0),
)
V2_25_1 = replace(
    V2_28_3,
    first=(2, 25, 1),
    ll128_p2c=False,  # (from 2.27.3 on: :data:`C2C_STEPS`)
    per_ch_max_tree_ll128=(*V2_30_3.per_ch_max_tree_ll128[:3], _HOPPER2[1]),
    per_ch_max_tree=(*V2_30_3.per_ch_max_tree[:3], _HOPPER2[2]),
    per_ch_max_nvls_tree=None,
    nvls_bw="2.19",
    speed_intra={**V2_30_3.speed_intra, "sm100": _SM100_INTRA_19},
    speed_inter={**V2_30_3.speed_inter, "sm100": (48.0, 45.0, *_SM100_INTER_45)},
    sm100_nvlink=40.0,
    nvls_channels_sm100=(32, 32),
    notes=(
        "MAXCHANNELS 32 -> 64 (device.h)",
        "Blackwell compcap index of its own (llMaxBws and per-channel caps 2 x Hopper's)",
        "sm100 (first release that knows it): SM100_NVLINK_BW 40, sm100 speed arrays (intra 90, 80, 70 ... 19; "
        "inter Hopper's), NVLS_NCHANNELS_SM100 32, the x2 runtime channels for compcap >= 90",
    ),
)
#: sm100's figures that changed inside 2.25.1-2.27.7, whose tuner is otherwise one (:func:`tuning_for`
#: applies them to the releases from each): 2.27.3 intra speed 18, inter 47.9 (was 48) and one node's
#: NVLS_NCHANNELS_SM100_NVL 24; 2.27.5 SM100_NVLINK_BW 40.1, inter 48, 45.1; 2.27.6 inter 96 added
BLACKWELL_STEPS: tuple[tuple[Version, dict[str, object]], ...] = (
    (
        (2, 27, 3),
        dict(
            speed_intra={**V2_25_1.speed_intra, "sm100": _SM100_INTRA_18},
            speed_inter={**V2_25_1.speed_inter, "sm100": (47.9, 45.0, *_SM100_INTER_45)},
            nvls_channels_sm100=(24, 32),
        ),
    ),
    ((2, 27, 5), dict(speed_inter={**V2_25_1.speed_inter, "sm100": _SM100_INTER_48}, sm100_nvlink=40.1)),
    ((2, 27, 6), dict(speed_inter={**V2_25_1.speed_inter, "sm100": (96.0, *_SM100_INTER_48)})),
)
#: the rule on GH200's GPU-to-NIC path that changed inside 2.25.1-2.27.7 (:attr:`Tuning.ll128_p2c`: PATH_P2C
#: and NCCL_LL128_C2C from 2.27.3), applied by :func:`tuning_for` as :data:`BLACKWELL_STEPS` are
C2C_STEPS: tuple[tuple[Version, dict[str, object]], ...] = (((2, 27, 3), dict(ll128_p2c=True)),)
V2_23_4 = replace(
    V2_25_1,
    first=(2, 23, 4),
    max_channels=32,
    blackwell=False,
    sm100_nvlink=20.6,
    nvls_channels_sm100=(16, 16),
    notes=(
        "Tree/Simple latency: base 0 -> 8.4, hwLat NVLink/PCI/NET 28/28/28 -> 4/4/14 us",
        "ring network steps 2 nNodes -> 2 (nNodes - 1)",
        "ring LL128 with one GPU per node 0.7 -> 0.92",
        "one GPU per node: NET latency of Tree for every algorithm",
    ),
)
V2_21_5 = replace(
    V2_23_4,
    first=(2, 21, 5),
    base_lat={**V2_30_3.base_lat, "tree": (6.8, 14.0, 0.0)},
    hw_lat={
        "nvlink": {**V2_30_3.hw_lat["nvlink"], "tree": (0.6, 1.25, 28)},
        "pci": {**V2_30_3.hw_lat["pci"], "tree": (1.0, 1.9, 28)},
        "net": {**V2_28_7.hw_lat["net"], "tree": (5.0, 8.5, 28)},
    },
    ring_ll128_one_ppn=0.7,
    ring_inter_steps_all=True,
    one_ppn_tree_net=False,
    notes=(
        "NVLS/NVLSTree NVLink hwLat 23 -> 25 us",
        "llMaxBws Hopper-N1 87.7 -> 141 (row 45/35)",
        "ring LL busBw x 1/4 -> x .5",
        "sm90 intra speed 11 added; channels doubled again while nChannels < 16 (was 2 nChannels <= 32)",
        "NVLS-tree's first chunk NCCL_NVLS_CHUNKSIZE 128 KiB (was the Simple step, 512 KiB)",
    ),
)
V2_19_3 = replace(
    V2_21_5,
    first=(2, 19, 3),
    hw_lat={
        **V2_21_5.hw_lat,
        "nvlink": {**V2_21_5.hw_lat["nvlink"], "nvls": (0, 0, 23), "nvls-tree": (0, 0, 23)},
    },
    ll_max_bw=(*V2_30_3.ll_max_bw[:2], (87.7, 22.5, 19.0), V2_30_3.ll_max_bw[3]),
    ring_ll=0.25,
    speed_intra={**V2_30_3.speed_intra, "sm90": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)},
    double_below_16=False,
    nvls_tree_chunk=512 * 1024,
    notes=("sm90 inter speed 22 added",),
)
V2_19_1 = replace(
    V2_19_3,
    first=(2, 19, 1),
    speed_inter={**V2_30_3.speed_inter, "sm90": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, *_TAIL)},
    notes=(
        "NVLS: channels x min(bwIntra, bwInter), NVLSTree min(bwIntra, bwInter / 2 from 3 nodes), both x 5/6; "
        "latency NVLink hwLat 23 + NET (NVLS), + 2 log2(nNodes) NET 14 (NVLSTree) (was base 23, NET 19 per node)",
        "Tree/Simple hwLat 4/6/14 -> 28/28/28 us; sm90 intra speed 50 added",
        "NVLS-tree chunk 64 KiB from 4 nodes",
        "CollNet Direct/Chain latencies: base 0 (was 6.8/14 for LL/LL128), hwLat NVLink 3.7/2.8, PCI 3.7/2.8, "
        "NET 31/30 us (were 8/4.75, 8/8, 10.7/14)",
    ),
)
V2_18_3 = replace(
    V2_19_1,
    first=(2, 18, 3),
    base_lat={
        **V2_21_5.base_lat,
        "collnet-direct": (6.8, 14.0, 0),
        "collnet-chain": (6.8, 14.0, 0),
        "nvls": (0, 0, 23.0),
        "nvls-tree": (0, 0, 23.0),
    },
    hw_lat={
        "nvlink": {
            **V2_30_3.hw_lat["nvlink"],
            "collnet-direct": (0, 0, 8.0),
            "collnet-chain": (0, 0, 4.75),
            "nvls": (0, 0, 0),
            "nvls-tree": (0, 0, 0),
        },
        "pci": {
            **V2_30_3.hw_lat["pci"],
            "tree": (1.0, 1.9, 6),
            "collnet-direct": (0, 0, 8.0),
            "collnet-chain": (0, 0, 8.0),
        },
        "net": {
            **V2_30_3.hw_lat["net"],
            "collnet-direct": (0, 0, 10.7),
            "collnet-chain": (0, 0, 14),
            "nvls-tree": (0, 0, 19),
        },
    },
    nvls_bw="2.18",
    nvls_tree_ratio=0.70,
    nvls_lat="2.18",
    speed_intra={**V2_30_3.speed_intra, "sm90": (60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)},
    nvls_tree_cap4=False,
    notes=(
        "NVLS ratio .75 -> 5/6; Tree/Simple hwLat 28/28/28 -> 4/6/14 us",
        "perChMaxRingLL128Bws / perChMaxTreeLL128Bws (Hopper tree N4 29) from one ll128MaxBwPerCh; "
        "perChMaxTreeBws Hopper N4 33 -> 36; tree x.85 for pattern TREE; sm90 inter speeds 20, 17.5 added",
    ),
)
V2_18_1 = replace(
    V2_18_3,
    first=(2, 18, 1),
    hw_lat={
        **V2_18_3.hw_lat,
        "nvlink": {**V2_18_3.hw_lat["nvlink"], "tree": (0.6, 1.25, 28)},
        "pci": {**V2_18_3.hw_lat["pci"], "tree": (1.0, 1.9, 28)},
        "net": {**V2_18_3.hw_lat["net"], "tree": (5.0, 8.5, 28)},
    },
    per_ch_max_ring_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (36.7,) * 3),
    per_ch_max_tree_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (36.7,) * 3),
    per_ch_max_tree=(*V2_30_3.per_ch_max_tree[:2], (38.7, 41.4, 33.0), (38.7, 41.4, 33.0)),
    nvls_ratio=0.75,
    tree_pattern=False,
    dup_from_50=True,
    speed_inter={**V2_30_3.speed_inter, "sm90": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 15.0, 12.0, *_TAIL)},
    notes=(
        "NVLS and NVLSTree in the tuner (NVLSTree's first release)",
        "a NET plugin's latencyInter added to the NET hwLat (twice for Simple), no longer in its place",
    ),
)

# v2.17.1 (tuning.cc, search.cc, connect.cc, nvls.cc of v2.17.1-1): 2.18.1's tables differ in
# baseLat/hwLat, the busBw caps, LL's intra x1.8, the plateau, no network overhead, no NVLSTree
_LL_V, _LL_A = V2_30_3.ll_max_bw[0], V2_30_3.ll_max_bw[1]
_TREE_V, _TREE_A = V2_30_3.per_ch_max_tree[0], V2_30_3.per_ch_max_tree[1]
_SM80_INTRA_17 = (44.0, 30.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_SM80_INTER_15 = (48.0, 30.0, 28.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, *_TAIL[2:])
_SM80_INTER_10 = (48.0, 30.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, *_TAIL[2:])
V2_17_1 = replace(
    V2_18_1,
    first=(2, 17, 1),
    # baseLat { Tree, Ring, CollNetDirect, CollNetChain, NVLS }; NVLSTree absent (0)
    base_lat=_row((4.4, 4.4, 0.0), (3.6, 10.0, 8.4), 0, 0, 40.0, 0),
    hw_lat={
        "nvlink": _row((0.52, 1.25, 28), (0.47, 1.9, 3.4), 8.0, 8.0, 0, 0),
        "pci": _row((1.0, 1.9, 28), (1.0, 2.5, 5.7), 8.0, 8.0, 0, 0),
        "net": _row((5.0, 8.5, 28), (2.7, 4.0, 9.6), 10.7, 10.7, 0, 0),
    },
    # ll128MaxBwPerCh[compCapIndex] { 20, 20, 36.7 }, one figure for ring and tree at every node count
    per_ch_max_ring_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (36.7,) * 3),
    per_ch_max_tree_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (36.7,) * 3),
    algorithms=("tree", "ring", "collnet-direct", "collnet-chain", "nvls"),
    nvls_bw="2.17",
    nvls_lat="2.17",
    nvls_ratio=0.75,
    nvls_chunk_first=32,
    speed_intra={"sm80": _SM80_INTRA_17, "sm90": (66.0, 33.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)},
    speed_inter={"sm80": _SM80_INTER_15, "sm90": (48.0, 45.0, 30.0, 24.0, 15.0, 12.0, *_TAIL)},
    hopper_double=False,
    bus_cap=(0.0, 235.0, 370.0, 370.0),
    ll_intra_factor=1.8,
    net_overhead=False,
    plateau_rule="2.10",
    plateau=(1.9, 1.9, 1.5, 1.5),
    ll128_archs=(0, 1, 2),
    collnet="2.14",
    collnet_arity_lat=0.5,
    latency_inter="replace",
    notes=(
        "NVLS in the tuner, one node only (nvls.cc: off across nodes): busBw ring channels x bwIntra, x .75, "
        "latency baseLat 40 us",
        "Hopper: ll128MaxBwPerCh 36.7, perChMaxTreeBws 38.7/41.4/33, busBw cap 370, ring plateau x1.5; "
        "compcap index from minCompCap (sm100 as Hopper)",
    ),
)
V2_16_5 = replace(
    V2_17_1,
    first=(2, 16, 5),
    base_lat=_row((4.4, 4.4, 0.0), (3.6, 10.0, 8.4), 0, 0, 0, 0),
    per_ch_max_ring_ll128=((20.0,) * 3,) * 4,
    per_ch_max_tree_ll128=((20.0,) * 3,) * 4,
    per_ch_max_tree=(_TREE_V, _TREE_A, _TREE_A, _TREE_A),
    algorithms=("tree", "ring", "collnet-direct", "collnet-chain"),
    bus_cap=(0.0, 235.0, 0.0, 0.0),
    plateau=(1.9,) * 4,
    notes=(
        "sm90 speed arrays of their own (intra 66, 33, 24, 20 ..., inter 48, 45, 30, 24 ...); channels "
        "duplicated on Hopper only from bwIntra 50",
    ),
)
V2_15_1 = replace(
    V2_16_5,
    first=(2, 15, 1),
    speed_intra={"sm80": _SM80_INTRA_17, "sm90": _SM80_INTRA_17},
    speed_inter={"sm80": _SM80_INTER_15, "sm90": _SM80_INTER_15},
    dup_from_50=False,
    dup_any_arch=True,
    notes=(
        "a Hopper compcap index: llMaxBws / perChMaxTreeBws Hopper rows = Ampere's (were Volta's); LL128 on "
        "for sm90 (2.15.5: not for ring on 2 ranks with CUDA 11.8, not modelled)",
        "inter speed 28 added",
    ),
)
V2_14_3 = replace(
    V2_15_1,
    first=(2, 14, 3),
    ll_max_bw=(_LL_V, _LL_A, _LL_V, _LL_V),
    per_ch_max_tree=(_TREE_V, _TREE_A, _TREE_V, _TREE_V),
    speed_intra={"sm80": _SM80_INTRA_17, "sm90": _SM80_INTRA_17},
    speed_inter={"sm80": _SM80_INTER_10, "sm90": _SM80_INTER_10},
    ll128_archs=(0, 1),
    notes=(
        "CollNet split into CollNet Direct (GPU/NIC factor) and CollNet Chain (x .75, latency 2 (ppn - 1) "
        "intra only) on one collNetGraph; Direct off without an NVSwitch",
        "ring NET Simple hwLat 28 -> 9.6 us",
    ),
)
V2_12_7 = replace(
    V2_14_3,
    first=(2, 12, 7),
    hw_lat={**V2_14_3.hw_lat, "net": _row((5.0, 8.5, 28), (2.7, 4.0, 28), 10.7, 10.7, 0, 0)},
    algorithms=("tree", "ring", "collnet-direct"),
    collnet="2.10",
    latency_inter="replace",
    notes=(
        "ring NET Simple hwLat 9.6 -> 28 us",
        "ring network steps 2 (nNodes - 1) -> 2 nNodes (nInterSteps)",
        "a NET plugin's latency (graph latencyInter) read, in place of the NET hwLat where it is not 0",
    ),
)
V2_10_3 = replace(
    V2_12_7,
    first=(2, 10, 3),
    hw_lat=V2_14_3.hw_lat,
    ring_inter_steps_all=False,
    latency_inter="none",
    notes=(
        "the oldest modelled: Tree, Ring and one CollNet; no Hopper index (sm90 takes Volta's rows), LL128 on "
        "sm70/sm80 only; busBw cap 235 on sm80; LL intra latency x1.8 across nodes; ring plateau x1.9 from "
        "nRanks / 16 x 64 KiB; no network overhead; channels duplicated from bwIntra 25 on every arch",
    ),
)

#: every modelled range, oldest first
TUNINGS: tuple[Tuning, ...] = (
    V2_10_3,
    V2_12_7,
    V2_14_3,
    V2_15_1,
    V2_16_5,
    V2_17_1,
    V2_18_1,
    V2_18_3,
    V2_19_1,
    V2_19_3,
    V2_21_5,
    V2_23_4,
    V2_25_1,
    V2_28_3,
    V2_28_7,
    V2_28_9,
    V2_29_2,
    V2_29_7,
    V2_30_3,
)
NEWEST = TUNINGS[-1]

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?$")


def parse_version(text: str) -> Version:
    """An NCCL release from ``2.26.2`` (also ``v2.26.2-1``) or ``2.26`` (its last release: 2.26.6);
    one that is not a 2.x release of NVIDIA/nccl is a ValueError.

    >>> parse_version("2.26.2"), parse_version("2.26"), parse_version("v2.9.9-1")
    ((2, 26, 2), (2, 26, 6), (2, 9, 9))
    """
    m = _VERSION.match(text.strip())
    if not m:
        raise ValueError(f"NCCL version {text!r} is not a version like 2.26.2 or 2.26")
    major, minor = int(m.group(1)), int(m.group(2))
    if m.group(3) is not None:
        v = (major, minor, int(m.group(3)))
        if v in RELEASES:
            return v
    else:
        same = [v for v in RELEASES if v[:2] == (major, minor)]
        if same:
            return max(same)
    raise ValueError(
        f"NCCL version {text.strip()!r} is not a release of NCCL (releases {_text(RELEASES[0])} to "
        f"{_text(RELEASES[-1])})"
    )


def checked_release(text: str) -> str:
    """``text`` stripped, where it names an NCCL release (:func:`parse_version`; else its ValueError)."""
    parse_version(text)
    return text.strip()


#: an option naming an NCCL release (``version=2.26.2`` or ``2.26``), checked as it is read
Release = Annotated[str, AfterValidator(checked_release)]


def tuning_for(version: Version) -> tuple[Tuning, str]:
    """The tuner of NCCL ``version`` and a one-line description: ``2.26.2 (as 2.25.1-2.27.7)``; a release
    before the oldest modelled one is modelled as that one and says so."""
    if version < TUNINGS[0].first:
        t = TUNINGS[0]
        return t, (
            f"{_text(version)}, older than the modelled releases ({t.release}-{NEWEST.last}): modelled as {t.release}"
        )
    t = max((t for t in TUNINGS if t.first <= version), key=lambda t: t.first)
    for first, changes in (*BLACKWELL_STEPS, *C2C_STEPS):  # sm100's figures (GH200's rule) changed inside the range
        if t.first < first <= version:
            t = replace(t, **changes)  # type: ignore[arg-type]
    return t, f"{_text(version)} (as {t.span})"
