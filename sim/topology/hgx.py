"""HGX-class GPU servers as they are built: ``hgx:preset=dgx-h100,hosts=2``.

Inside a host, every GPU has one link to the NVSwitch fabric (one node, ``hI``, as NCCL's topology merges
all NVSwitch chips into one NVS node) and reaches its NICs through a PCIe switch (``hI:pcieK``) that it may
share with another GPU; a GPU may own one or two NICs. Between hosts the NICs sit on a rail-optimized
fabric (NIC ``k`` of every host on a leaf of rail ``k``) or a plain fat-tree (a host's NICs on its own
leaf group), leaves linked to every spine.

Routes between hosts take the spine the fabric would: ``ecmp=destination`` (the InfiniBand presets,
DGX H100 and HGX A100: switches forward by destination from the subnet manager's tables, D-mod-K on a
fat-tree) sends every flow towards one host through the same spine and spreads a leaf's hosts over the
spines one each; ``ecmp=hash`` (the RoCE presets, OCI's) hashes source and destination per flow as
Ethernet ECMP does (:mod:`sim.routing`).

Node attributes say what the hardware can do: the NVSwitch node carries ``nvls`` (it reduces and
multicasts, NVLink SHARP: third-generation NVSwitch, HGX H100 and later) and network switches carry
``sharp`` (in-network reduction); the graph carries ``gpu_arch`` (``sm80``/``sm90``/``sm100``), ``cpu_vendor``
and the figures NCCL's tuner reads (:mod:`sim.nccl.tuner`).

Link rates are the figures NCCL's own topology detection assigns (``src/graph/topo.h``, ``topo.cc``):
NVLink ``links x per-link`` (H100 18 x 20.6 GB/s = 370.8 per direction, of 450 line rate; A100 12 x 20 =
240 of 300; B200 18 x 40.1 = 721.8 of 900), PCIe ``Gen4 x16 = 24``, ``Gen5 x16 = 48`` GB/s (``kvDictPciGen`` rate x width / 80), NICs
their port speed (400 Gb/s = 50 GB/s). The presets name their sources.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import networkx as nx
from pydantic import PositiveInt, field_validator

from ..errors import TopologyError
from ..nccl.efa import NEWEST_PLUGIN, parse_plugin, plugin_text
from ..schema import Bandwidth, Spec, Time
from .builders import _check_size, _params, _spec, register_builder
from .graph import ClusterBuilder

__all__ = ["PRESETS", "hgx"]

#: Per-machine figures. Sources: NVIDIA DGX H100 user guide (8x H100 SXM5, 4x NVSwitch gen3, 8x
#: ConnectX-7 400 Gb/s, one per GPU behind its PCIe Gen5 switch; Intel Xeon 8480C); NVIDIA HGX A100
#: / DGX A100 user guide (8x A100 SXM4, 6x NVSwitch gen2 -- no in-switch reduction --, 8x ConnectX-6
#: 200 Gb/s, two GPUs and two NICs per PCIe Gen4 switch; AMD EPYC 7742); Oracle Cloud shape pages
#: BM.GPU.H100.8 (8x H100 80GB, 16x 200 Gb/s RoCE = two per GPU, Intel Xeon 8480+) and BM.GPU4.8
#: (8x A100 40GB SXM4, 16x 100 Gb/s RoCE, two per GPU, AMD EPYC 7542). NVLink per direction from
#: NCCL topo.h (SM90_NVLINK_BW 20.6, SM80_NVLINK_BW 20.0) x links per GPU (18 on H100, 12 on A100).
#: DGX B200: NVIDIA DGX B200 user guide, "Introduction to NVIDIA DGX B200 Systems" (docs.nvidia.com/dgx/
#: dgxb200-user-guide): 8x B200, 2x fifth-generation NVLink switches (14.4 TB/s aggregate = 8 x 1.8 TB/s),
#: 4 OSFP ports for 8x ConnectX-7 single-port cards, InfiniBand up to 400 Gb/s (one per GPU), 2x Intel Xeon
#: 8570 "PCIe Gen5 CPUs"; the ConnectX-7 card is PCIe Gen 5.0 x16 (NVIDIA ConnectX-7 user manual, "Supported
#: Interfaces"), the B200's host link PCIe Gen5 x16 (MLCommons inference v6.0 system description
#: nebius_b200_n1.json: "accelerator_host_interconnect": "PCIe Gen5 x16", "18x 5th Gen NVLink"). One GPU per
#: PCIe switch is DGX H100's layout carried over (the user guide does not draw the PCIe tree; NCCL's tuner
#: does not read it). InfiniBand routes by destination, as on DGX H100.
PRESETS: dict[str, dict[str, Any]] = {
    "dgx-h100": dict(
        gpu="h100",
        nvls=True,
        nics_per_gpu=1,
        nic_bandwidth=50e9,
        pcie_gen=5,
        gpus_per_pcie_switch=1,
        cpu_vendor="intel",
        ecmp="destination",
    ),
    "hgx-a100-200g": dict(
        gpu="a100",
        nvls=False,
        nics_per_gpu=1,
        nic_bandwidth=25e9,
        pcie_gen=4,
        gpus_per_pcie_switch=2,
        cpu_vendor="amd",
        ecmp="destination",
    ),
    "oci-bm-gpu-h100-8": dict(
        gpu="h100",
        nvls=True,
        nics_per_gpu=2,
        nic_bandwidth=25e9,
        pcie_gen=5,
        gpus_per_pcie_switch=1,
        cpu_vendor="intel",
        ecmp="hash",
    ),
    "oci-bm-gpu4-8": dict(
        gpu="a100",
        nvls=False,
        nics_per_gpu=2,
        nic_bandwidth=12.5e9,
        pcie_gen=4,
        gpus_per_pcie_switch=1,
        cpu_vendor="amd",
        ecmp="hash",
    ),
}

#: HGX 4-GPU boards: four SXM GPUs linked to each other directly, no NVSwitch (``nvswitch=False``: every
#: GPU's links split evenly among its three peers, ``links / 3`` each; NVLS refused). Sources:
#:
#: * ``hgx-a100-4gpu``: NVIDIA HGX A100 datasheet ("HGX A100 4-GPU": 4x A100 SXM4 joined by NVLink, no
#:   NVSwitch; 12 third-generation links a GPU, 4 to each peer: ``nvidia-smi topo -m`` shows NV4); ALCF
#:   Polaris' system page (4x A100 SXM4 40 GB a node, 2x HPE Slingshot 11 200 Gb/s NICs, AMD EPYC "Milan"
#:   7543P, PCIe Gen4) and NERSC Perlmutter's architecture page (4x A100 a GPU node, 4x Slingshot 11 NICs of
#:   200 Gb/s, AMD EPYC 7763): the preset is Perlmutter's four NICs; ``nics_per_host=2`` is Polaris.
#: * ``hgx-h100-4gpu``: NVIDIA HGX H100 datasheet ("HGX H100 4-GPU": 4x H100 SXM5, NVLink 900 GB/s a GPU,
#:   no NVSwitch; 18 fourth-generation links, 6 to each peer: NV6); SURF Snellius' hardware page (gpu_h100
#:   partition: 4x H100 SXM5 94 GB, 4x NDR200 200 Gb/s InfiniBand a node, Intel Xeon Platinum 8462Y+,
#:   PCIe Gen5).
#:
#: One GPU and its NIC per PCIe switch (a choice: the pages do not draw the PCIe tree, NCCL's tuner does not
#: read it); InfiniBand and Slingshot route by destination as the other presets' InfiniBand does.
_BOARD4 = dict(nvls=False, nvswitch=False, gpus_per_host=4, nics_per_gpu=1, gpus_per_pcie_switch=1, ecmp="destination")
PRESETS["hgx-a100-4gpu"] = {**_BOARD4, "gpu": "a100", "nic_bandwidth": 25e9, "pcie_gen": 4, "cpu_vendor": "amd"}
PRESETS["hgx-h100-4gpu"] = {**_BOARD4, "gpu": "h100", "nic_bandwidth": 25e9, "pcie_gen": 5, "cpu_vendor": "intel"}

#: GH200 quad nodes (``gh200-quad``): four NVIDIA GH200 Grace Hopper superchips a node, each one H100-class GPU
#: joined to its own Grace CPU (Arm Neoverse V2) by NVLink-C2C, the four GPUs linked to each other directly
#: (no NVSwitch), one NIC per superchip on its Grace CPU's PCIe. Sources:
#:
#: * NVIDIA GH200 Grace Hopper Superchip datasheet / NVIDIA Grace Hopper Superchip Architecture whitepaper:
#:   the GPU's 18 fourth-generation NVLink links (900 GB/s bidirectional, H100's), NVLink-C2C 900 GB/s
#:   bidirectional between the GPU and its Grace CPU (450 GB/s a direction), the Grace CPU's PCIe Gen5 lanes.
#: * HPE Cray EX254n blade (the quad node of CSCS Alps and other HPE Cray EX systems): four GH200 a node, all
#:   pairs linked by NVLink (``nvidia-smi topo -m``: NV6, 6 of a GPU's 18 links to each peer, as the HGX H100
#:   4-GPU board), four HPE Slingshot 11 "Cassini" NICs of 200 Gb/s, one per superchip; CSCS's Alps hardware
#:   page: "four Grace-Hopper modules and four corresponding network interface cards (NICs)" a node.
#:
#: What NCCL sees (NVIDIA/nccl src/graph, v2.23.4-v2.30.7): the NVLink to each peer at 6 x SM90_NVLINK_BW
#: (20.6 GB/s: 123.6 GB/s a pair), no NVS node (no NVLS); a CPU of arch ARM (topo.cc kvDictCpuArch ``arm64``,
#: no vendor), which tuning.cc prices as an Intel CPU (llMaxBws row 0, getNetOverhead 1 us); the NIC reached
#: through the CPU (path PHB; from 2.27.3 PATH_P2C, "a GPU and a NIC using the C2C connection to the CPU and
#: the PCIe connection to the NIC"), which turns LL128 off across nodes before 2.27.3
#: (:attr:`sim.nccl.versions.Tuning.ll128_p2c`). The graph's GPU-to-PCIe link is the C2C link (:data:`C2C`).
PRESETS["gh200-quad"] = {**_BOARD4, "gpu": "gh200", "nic_bandwidth": 25e9, "pcie_gen": 5, "cpu_vendor": "arm"}

# DGX B200: DGX H100's NICs (8 x 400 Gb/s ConnectX-7, one per GPU), PCIe Gen5, Intel CPUs and InfiniBand,
# with B200 GPUs (sources above)
PRESETS["dgx-b200"] = {**PRESETS["dgx-h100"], "gpu": "b200"}

#: AWS EFA instances (``net="efa"``: NCCL reaches EFA through AWS's NET plugin aws-ofi-nccl, not InfiniBand
#: verbs; :mod:`sim.nccl.efa` has what the plugin tells NCCL). Sources:
#:
#: * p4d.24xlarge / p4de.24xlarge: AWS EC2 accelerated-computing instance page (8x A100 SXM4 40 GB / 80 GB,
#:   "400 Gbps" = 4x 100 Gbps EFA, "GPUDirect RDMA", Intel Xeon Scalable "Cascade Lake" 8275CL); the PCIe tree
#:   is the plugin's static topology file that it hands NCCL (aws/aws-ofi-nccl topology/p4d-24xl-topo.xml,
#:   p4de-24xl-topo.xml at 2daf7d3: "2 groups of PCIe hierarchy under each socket. Each group has 2 GPUs and 1
#:   NIC behind a PCIe switch", links "8 GT/s" x16 -- PCIe Gen3 as NCCL reads the file, 12 GB/s --,
#:   vendor GenuineIntel).
#: * p5.48xlarge / p5e.48xlarge: the AWS instance page (8x H100 / H200 SXM, 3,200 Gbps = 32x 100 Gbps EFA,
#:   3rd-generation AMD EPYC); the plugin's p5.48xl-topo.xml (v1.7.0-aws: "4 groups of PCIe hierarchy under
#:   each socket. Each group has 1 GPUs and 4 NIC behind a PCIe switch", "32 GT/s" x16 = Gen5). The plugin's
#:   RDMA protocol groups the NICs of a GPU into one NCCL device whose speed is the rails' sum
#:   (src/nccl_ofi_rdma.cpp at 2daf7d3: ``props->port_speed *= max_group_size``; its tuner model,
#:   src/tuner/nccl_ofi_model.cpp: P5/P5e ``num_rails = 4`` of 12.5 GB/s): one 400 Gb/s NIC per GPU as NCCL
#:   sees it.
#: * p5en.48xlarge: the AWS instance page (8x H200, 3,200 Gbps = 16x 200 Gbps EFAv3, 4th-generation Intel
#:   Xeon "Sapphire Rapids", PCIe Gen5 between CPU and GPU); two NICs a GPU grouped into one device
#:   (the plugin's tuner model: P5en ``num_rails = 2`` of 25 GB/s; src/nccl_ofi_net.cpp: 200 Gbps a link on
#:   P5en); one GPU per PCIe switch as on p5 (no topology file of its own: a choice).
#:
#: ``nic_latency`` is the simulated EFA hop: half of the plugin's measured "2 nodes, 8B RDMA w/imm" latency
#: a side (its tuner model, src/tuner/nccl_ofi_model.cpp at 2daf7d3, ``net_lat``: 20 us P5/P5e, 18 us
#: P5en), so a NIC-to-NIC crossing costs that latency; p4d has no figure of its own there and takes P5's 20
#: (a choice). EFA's SRD sprays a flow's packets over paths: ``ecmp=hash`` (per flow) is the nearest the
#: routing has; no flow of NCCL's schedules crosses a spine up to 32 hosts either way.
_AWS = dict(nvls=False, nics_per_gpu=1, gpus_per_pcie_switch=1, ecmp="hash", net="efa")
PRESETS["aws-p4d"] = {
    **_AWS,
    "gpu": "a100",
    "nic_per_pcie_switch": True,  # 4 NICs on 8 GPUs, one a PCIe switch
    "nic_bandwidth": 12.5e9,
    "pcie_gen": 3,
    "gpus_per_pcie_switch": 2,
    "cpu_vendor": "intel",
    "nic_latency": 10e-6,
    "efa_platform": "p4d",
}
PRESETS["aws-p5"] = {
    **_AWS,
    "gpu": "h100",
    "nvls": True,
    "nic_bandwidth": 50e9,
    "pcie_gen": 5,
    "cpu_vendor": "amd",
    "nic_latency": 10e-6,
    "efa_platform": "p5",
}
PRESETS["aws-p5en"] = {
    **PRESETS["aws-p5"],
    "gpu": "h200",
    "cpu_vendor": "intel",
    "nic_latency": 9e-6,
    "efa_platform": "p5en",
}

#: NVLink as NCCL sees it, per direction per GPU: per-link bandwidth (topo.h SM*_NVLINK_BW) x links.
#: H200 is an H100 with more memory (18 NVLink 4 links); the export parts H800 and A800 keep 8 NVLink links
#: (NVIDIA's H800 / A800 product briefs: 400 GB/s bidirectional), so NCCL counts 8 x its per-link rate.
#: B200: 18 fifth-generation NVLink links (1.8 TB/s bidirectional: DGX B200 user guide; ``nvidia-smi topo -m``
#: shows NV18) at SM100_NVLINK_BW 40.1 GB/s (topo.h from v2.27.5-1; 40.0 in v2.25.1-v2.27.3, and before
#: 2.25.1 NCCL has no sm100 figure: compcap 100 takes SM90_NVLINK_BW) -- what NCCL's tuner sees per release
#: is :data:`sim.nccl.versions.Tuning.sm100_nvlink`; the links are the newest release's count.
NVLINK = {
    "h100": (18, 20.6e9, "sm90"),
    "gh200": (18, 20.6e9, "sm90"),  # the GH200's Hopper GPU: H100's 18 NVLink 4 links (GH200 datasheet)
    "h200": (18, 20.6e9, "sm90"),
    "h800": (8, 20.6e9, "sm90"),
    "a100": (12, 20.0e9, "sm80"),
    "a800": (8, 20.0e9, "sm80"),
    "b200": (18, 40.1e9, "sm100"),
}
#: the GPU generations whose NVSwitch reduces and multicasts (NVLink SHARP: NVSwitch gen3 on HGX H100, the
#: fifth-generation NVLink switch of HGX B200; NCCL's search.cc runs the NVLS pattern from compcap 90)
NVLS_ARCHS = ("sm90", "sm100")
#: the GPUs of an HGX board without an NVSwitch (``nvswitch=False``: HGX A100 / H100 4-GPU)
BOARD_GPUS = 4
#: GPUs joined to their CPU by NVLink-C2C, not PCIe: the GPU-to-CPU link per direction (NVIDIA GH200 datasheet:
#: NVLink-C2C 900 GB/s bidirectional). Their hosts have no NVSwitch (GH200 quad nodes link the GPUs directly),
#: four GPUs by default and an Arm CPU; the NIC sits on the CPU's PCIe (NCCL: the path through the CPU)
C2C = {"gh200": 450e9}
#: PCIe x16 per direction as NCCL rates it (topo.cc kvDictPciGen: GT/s-based value x 16 lanes / 80)
PCIE = {3: 12e9, 4: 24e9, 5: 48e9}


class HgxParams(Spec):
    hosts: PositiveInt
    preset: Literal[
        "dgx-h100",
        "dgx-b200",
        "hgx-a100-200g",
        "oci-bm-gpu-h100-8",
        "oci-bm-gpu4-8",
        "aws-p4d",
        "aws-p5",
        "aws-p5en",
        "hgx-a100-4gpu",
        "hgx-h100-4gpu",
        "gh200-quad",
    ] = "dgx-h100"
    #: GPUs a host (default: the preset's, 8 but on the 4-GPU boards)
    gpus_per_host: PositiveInt | None = None
    gpu: Literal["h100", "h200", "h800", "b200", "a100", "a800", "gh200"] | None = None
    nvls: bool | None = None
    #: whether an NVSwitch joins a host's GPUs (default: the preset's, the 4-GPU boards' False): without one,
    #: every pair of a 4-GPU board has its own NVLink link of ``links / 3`` of a GPU's links (NCCL's topo.cc:
    #: an NVLink to a GPU peer, ``count x`` the per-link rate), and NVLS is refused
    nvswitch: bool | None = None
    sharp: bool = False
    nics_per_gpu: Literal[1, 2] | None = None
    nics_per_host: PositiveInt | None = None
    nic_bandwidth: Bandwidth | None = None
    pcie_gen: Literal[3, 4, 5] | None = None
    gpus_per_pcie_switch: Literal[1, 2] | None = None
    #: the host CPU as NCCL's tuner tells them apart: x86 ``intel`` / ``amd``, or ``arm`` (Grace: NCCL's
    #: NCCL_TOPO_CPU_ARCH_ARM, priced as Intel); a GH200's is its Grace, ``arm``
    cpu_vendor: Literal["intel", "amd", "arm"] | None = None
    fabric: Literal["rail", "fat-tree"] = "rail"
    ecmp: Literal["destination", "hash"] | None = None
    hosts_per_leaf: PositiveInt = 32
    spines: PositiveInt | None = None
    nvlink_latency: Time = 0.3e-6
    pcie_latency: Time = 0.1e-6
    latency: Time = 0.5e-6
    #: the NIC-to-leaf links' latency (default: ``latency``; the EFA presets: half the plugin's 2-node figure)
    nic_latency: Time | None = None
    #: the NET transport NCCL uses: ``ib`` (InfiniBand verbs, RoCE too: net_ib.cc), ``efa`` (AWS's plugin) or
    #: ``cxi`` (AWS's plugin over HPE Slingshot's libfabric provider, :mod:`sim.nccl.ofi`; any preset: the links
    #: stay the preset's, at the ``nic_bandwidth`` given)
    net: Literal["ib", "efa", "cxi"] | None = None
    #: the aws-ofi-nccl release with ``net=efa`` or ``net=cxi`` (default the newest read,
    #: :data:`sim.nccl.efa.NEWEST_PLUGIN`)
    efa_plugin: str | None = None

    @field_validator("efa_plugin")
    @classmethod
    def _plugin(cls, value: str | None) -> str | None:
        if value is not None:
            parse_plugin(value)  # ValueError: not a plugin release
        return value

    @field_validator("nics_per_gpu", "pcie_gen", "gpus_per_pcie_switch", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        """``hgx:nics_per_gpu=2`` arrives as text; a choice of numbers takes it as the number."""
        return int(value) if isinstance(value, str) and value.strip().isdigit() else value


@register_builder("hgx", HgxParams)
def hgx(hosts: int, preset: str = "dgx-h100", **kwargs: Any) -> nx.DiGraph:
    """``hosts`` HGX-class servers of ``preset`` (options override the preset's figures).

    >>> g = hgx(2)
    >>> len(g.graph["ranks"]), g.nodes["h0"]["nvls"], g.edges["h0:gpu0", "h0"]["bandwidth"]
    (16, True, 370800000000.0)
    >>> g.edges["h0:nic0", "leaf0.0"]["bandwidth"], hgx(1, "oci-bm-gpu4-8").graph["nics_per_host"]
    (50000000000.0, 16)
    >>> b = hgx(2, "dgx-b200")
    >>> b.graph["gpu_arch"], b.nodes["h0"]["nvls"], round(b.edges["h0:gpu0", "h0"]["bandwidth"] / 1e9, 1)
    ('sm100', True, 721.8)
    """
    p = _params(HgxParams, "hgx", dict(hosts=hosts, preset=preset, **kwargs))
    fig = {**PRESETS[p.preset], **{k: v for k, v in p.model_dump().items() if v is not None and k in PRESETS[p.preset]}}
    links, per_link, arch = NVLINK[fig["gpu"]]
    c2c = C2C.get(fig["gpu"])  # a Grace Hopper superchip: its GPU's link to its CPU, and the node's shape
    g_per_host = p.gpus_per_host or PRESETS[p.preset].get("gpus_per_host", BOARD_GPUS if c2c else 8)
    nvswitch = PRESETS[p.preset].get("nvswitch", not c2c) if p.nvswitch is None else p.nvswitch
    if c2c:
        _check_superchip(fig, p.cpu_vendor, nvswitch)
    nv_links = links  # a GPU's NVLink links as NCCL sees them (without an NVSwitch: to the peers in the host)
    if not nvswitch:
        _check_board(fig, p.nvls, g_per_host, links)
        nv_links = (g_per_host - 1) * links // (BOARD_GPUS - 1)
    nics = p.nics_per_host or g_per_host * fig["nics_per_gpu"]
    if p.nics_per_host and p.nics_per_host < g_per_host and p.gpus_per_pcie_switch is None:
        fig["gpus_per_pcie_switch"] = g_per_host // p.nics_per_host  # a NIC per PCIe switch, shared
    elif not p.nics_per_host and fig.get("nic_per_pcie_switch"):  # aws-p4d: a NIC per PCIe switch
        nics = max(1, g_per_host // fig["gpus_per_pcie_switch"])
    net = p.net or fig.get("net", "ib")
    platform = fig.get("efa_platform")
    if net == "efa" and platform is None:
        raise TopologyError(
            "hgx: net=efa needs an AWS preset (aws-p4d, aws-p5, aws-p5en): what the EFA plugin tells NCCL depends on "
            "the instance type"
        )
    if p.efa_plugin is not None and net not in ("efa", "cxi"):
        raise TopologyError(
            "hgx: efa_plugin is the aws-ofi-nccl release of net=efa or net=cxi; this topology's network is ib"
        )
    plugin = parse_plugin(p.efa_plugin) if p.efa_plugin else NEWEST_PLUGIN
    nic_latency = p.nic_latency if p.nic_latency is not None else fig.get("nic_latency", p.latency)
    if p.nvls is None and arch not in NVLS_ARCHS:
        fig["nvls"] = False  # a preset's NVLS does not carry over to a GPU whose NVSwitch cannot reduce
    if fig["nvls"] and arch not in NVLS_ARCHS:
        raise TopologyError(
            "hgx: nvls (NVLink SHARP) needs an NVSwitch of the third generation or later (gpu=h100, h200, h800, b200)"
        )
    per_switch = fig["gpus_per_pcie_switch"]
    if g_per_host % per_switch:
        raise TopologyError(f"hgx: {g_per_host} GPUs per host do not share PCIe switches {per_switch} by {per_switch}")
    switches = g_per_host // per_switch
    if nics > 2 * g_per_host:
        raise TopologyError(f"hgx: {nics} NICs per host is more than two per GPU, which the schedules do not lay out")
    if nics % g_per_host and (g_per_host % nics or nics != switches):
        raise TopologyError(
            f"hgx: {nics} NICs per host do not divide among {g_per_host} GPUs; give a multiple of the GPUs, or one "
            f"NIC per PCIe switch ({switches} with gpus_per_pcie_switch={per_switch})"
        )
    # the GPUs that own NICs, and how many each: every GPU its share, or the first GPU of every PCIe switch
    owners = (
        {j: nics // g_per_host for j in range(g_per_host)}
        if nics >= g_per_host
        else {j: 1 for j in range(0, g_per_host, per_switch)}
    )
    groups = math.ceil(hosts / p.hosts_per_leaf)
    in_group = min(hosts, p.hosts_per_leaf)
    rail = p.fabric == "rail"
    leaves_per_group = nics if rail else 1
    spines = p.spines or (in_group if rail else 1)
    uplink = fig["nic_bandwidth"] * in_group * (1 if rail else nics) / spines  # non-blocking
    total = hosts * g_per_host
    _check_size("hgx", total, 4 * total + 2 * hosts * nics + groups * leaves_per_group * spines)
    name = f"{p.preset}-{hosts}"
    b = ClusterBuilder(name, spec=_spec("hgx", p))
    graph = b.graph
    graph.graph.update(
        gpu_arch=arch,
        gpu_model=fig["gpu"],  # the GPU it builds (``gpu=``, else the preset's): what a log of it must name
        cpu_vendor=fig["cpu_vendor"],
        nvlink_bw=nv_links * per_link,
        nvlink_links=nv_links,
        pcie_bw=PCIE[fig["pcie_gen"]],
        nic_bw=float(fig["nic_bandwidth"]),
        nics_per_host=nics,
        nvls=bool(fig["nvls"]),
        sharp=p.sharp,
        ecmp=fig["ecmp"],
    )
    if c2c:  # the NIC reached through the CPU over C2C (NCCL: PHB, P2C from 2.27.3), read by sim.nccl.tuner
        graph.graph["c2c_nic"] = True
    if net == "efa":  # what the plugin tells NCCL (sim.nccl.efa), read by sim.nccl.tuner.describe
        graph.graph.update(net="efa", efa_platform=platform, efa_plugin=plugin_text(plugin))
    elif net == "cxi":  # the plugin over Slingshot (sim.nccl.ofi), read by sim.nccl.tuner.describe
        graph.graph.update(net="cxi", efa_plugin=plugin_text(plugin))
    for s in range(spines):
        b.add_switch(f"spine{s}")
        graph.nodes[f"spine{s}"]["sharp"] = p.sharp
    for group in range(groups):
        for leaf in range(leaves_per_group):
            name_l = f"leaf{leaf}.{group}"
            b.add_switch(name_l)
            graph.nodes[name_l]["sharp"] = p.sharp
            for s in range(spines):
                b.add_link(name_l, f"spine{s}", bandwidth=uplink, latency=p.latency)
    pcie = PCIE[fig["pcie_gen"]]
    for h in range(hosts):
        host = f"h{h}"
        if nvswitch:
            gpus = b.add_host(host, gpus=g_per_host, intra_bandwidth=links * per_link, intra_latency=p.nvlink_latency)
            graph.nodes[host]["nvls"] = bool(fig["nvls"])
        else:
            gpus = _board(b, host, g_per_host, links, per_link, p.nvlink_latency)
        for sw in range(switches):
            b.add_node(f"{host}:pcie{sw}", "switch", host=host)
        n = 0
        for j, gpu in enumerate(gpus):
            sw = f"{host}:pcie{j // per_switch}"
            b.add_link(gpu, sw, bandwidth=c2c or pcie, latency=p.pcie_latency, weight=4.0)
            for _ in range(owners.get(j, 0)):
                nic = f"{host}:nic{n}"
                b.add_node(nic, "nic", host=host)
                graph.nodes[nic]["gpu"] = gpu
                b.add_link(sw, nic, bandwidth=pcie, latency=0.0, weight=4.0)
                leaf = f"leaf{n if rail else 0}.{h // p.hosts_per_leaf}"
                b.add_link(nic, leaf, bandwidth=fig["nic_bandwidth"], latency=nic_latency)
                n += 1
    if not nvswitch:
        graph.graph["nvswitch"] = False  # read by sim.nccl (rings over the direct links)
    return b.build(routing="updown" if nvswitch else "dijkstra")


def _check_superchip(fig: dict[str, Any], cpu: str | None, nvswitch: bool) -> None:
    """A GH200 node: its GPUs linked directly (``nvswitch=true`` refused), its CPU the superchip's Grace (Arm;
    ``cpu_vendor`` intel / amd refused), whatever the preset's."""
    if nvswitch:
        raise TopologyError(
            f"hgx: gpu={fig['gpu']} builds GH200 quad nodes, whose GPUs link to each other directly (no NVSwitch); "
            "nvswitch=true is not built"
        )
    if cpu not in (None, "arm"):
        raise TopologyError(f"hgx: a GH200's CPU is its Grace (Arm): cpu_vendor={cpu} does not build with gpu=gh200")
    fig["cpu_vendor"] = "arm"


def _check_board(fig: dict[str, Any], nvls: bool | None, gpus: int, links: int) -> None:
    """An HGX 4-GPU board (no NVSwitch): no NVLS (``nvls=true`` refused), at most four GPUs a host, a GPU's
    links split evenly among its three peers."""
    if nvls:
        board = "a GH200 quad node links its GPUs directly" if fig["gpu"] in C2C else "nvswitch=false builds none"
        raise TopologyError(f"hgx: nvls (NVLink SHARP) needs an NVSwitch that reduces; {board}")
    fig["nvls"] = False
    if gpus > BOARD_GPUS:
        raise TopologyError(
            f"hgx: nvswitch=false builds HGX {BOARD_GPUS}-GPU boards (GPUs linked directly); {gpus} GPUs a host "
            "need an NVSwitch"
        )
    if links % (BOARD_GPUS - 1):
        raise TopologyError(
            f"hgx: nvswitch=false links every pair of a {BOARD_GPUS}-GPU board directly: gpu={fig['gpu']}'s "
            f"{links} NVLink links do not split evenly among {BOARD_GPUS - 1} peers"
        )


def _board(b: ClusterBuilder, host: str, gpus: int, links: int, per_link: float, latency: float) -> list[str]:
    """``host``'s GPUs (``gpus`` of an HGX 4-GPU board) linked pairwise, ``links / 3`` NVLink links of
    ``per_link`` each way a pair (topo.cc ncclTopoAddNvLinks: a GPU peer's link is ``count x
    ncclTopoNVLinkBw``), no NVSwitch node."""
    names = [f"{host}:gpu{i}" for i in range(gpus)]
    for gpu in names:
        b.add_node(gpu, "gpu", host=host)
    for i in range(gpus):
        for j in range(i + 1, gpus):
            b.add_link(names[i], names[j], bandwidth=links // (BOARD_GPUS - 1) * per_link, latency=latency)
    return names
