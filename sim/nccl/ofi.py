"""What AWS's NET plugin (aws/aws-ofi-nccl) tells NCCL, by libfabric provider: ``efa`` (AWS EFA,
:mod:`sim.nccl.efa`) or ``cxi`` (HPE Slingshot 11's Cassini NIC: ALCF Polaris and Sirius, NERSC Perlmutter,
CSCS Alps).

The plugin is one library; what it reports to NCCL depends on the provider it selects and on whether it was
built for AWS (``--enable-platform-aws``, which ``configure`` turns on by itself only on an EC2 instance:
m4/ax_platform_aws.m4 ``AX_CHECK_EC2_INSTANCE``). A Slingshot system builds it without the AWS platform file
(src/platform-aws.c), so none of that file's choices reach NCCL there. On ``cxi``, from the plugin's source
(``git show TAG:PATH`` of aws/aws-ofi-nccl):

* **latency** (``ncclNetProperties.latency``, µs; NCCL's graph search copies it into ``latencyInter``):
  before v1.2.0-aws unset (NCCL's 0); v1.2.0-aws to v1.5.0-aws 150 on every provider
  (src/nccl_ofi_net.c:1363 at v1.2.0-aws, :1654 at v1.5.0-aws; the v1.2.0, v1.3.0, v1.4.0 tags without
  "-aws" set none); v1.6.0 150 only ``if (IS_EFA_PROVIDER(...))`` (src/nccl_ofi_net.c:1540-1552), else 0;
  v1.7.0-aws on ``net_latency >= .0 ? net_latency : .0`` (src/nccl_ofi_net.c:1252) with the NET_LATENCY
  parameter's default -1 (include/nccl_ofi_param.h:191), which only the AWS platform file replaces
  (src/platform-aws.c:436-441): 0; v1.19.0 on the parameter's default is 0.0 itself (include/nccl_ofi_param.h
  :221, src/nccl_ofi_net.cpp:447; :481 at v1.21.1): 0. So every release but v1.2.0-aws .. v1.5.0-aws reports
  what NCCL's own InfiniBand transport does (net_ib.cc: not set): :func:`reported_latency`;
* **speed** (``props->speed``, Mb/s; NCCL's topology sets the NIC's bandwidth from it, hence its channels and
  its tuner's bandwidth): ``link_attr->speed / 1e6`` (src/nccl_ofi_net.c:1622 at v1.6.0; src/nccl_ofi_net.cpp
  :603 at v1.21.1, whose 200 Gb/s override is for p5en.48xlarge only). libfabric's cxi provider reports the
  netdev's ``/sys/class/net/<hsn>/speed`` (Mb/s) times 1e6 (ofiwg/libfabric v1.21.0, the provider's first
  upstream release: prov/cxi/src/cxip_if.c:412-435, prov/cxi/src/cxip_nic.c:387): the port's own rate, 200 Gb/s
  on Slingshot 11 -- the NIC speed ``hgx`` already takes from the log, so nothing is modelled for it;
* **protocol**: NCCL_PROTO is left alone (``configure_nccl_proto`` is in the AWS platform file only), so LL and
  LL128 stay as NCCL's defaults: :func:`simple_only` is ``""``. The plugin's transfer protocol is SENDRECV
  (tagged sends; include/nccl_ofi_param.h:121 at v1.21.1; RDMA is picked per AWS platform only), which changes
  no figure NCCL's tuner reads;
* **exported settings and its own tuner** (NCCL_BUFFSIZE, the NVLS chunk sizes, NCCL_TUNER_PLUGIN): set by the
  AWS platform file only: none on cxi (:func:`exported_env`; the plugin's tuner: ``sim.nccl.tuner.describe``
  keeps the EFA fields, and with them :func:`sim.nccl.efa.tuner_loaded`, for EFA only);
* GPUDirect: ``ptrSupport`` has NCCL_PTR_CUDA where the provider has FI_HMEM (src/nccl_ofi_net.c:1567-1575
  at v1.6.0), which cxi has with CUDA: NCCL runs GPUDirect RDMA as over InfiniBand (the logs' ``GDRDMA``);
  ``maxRecvs`` 1 (include/nccl_ofi.h:67 at v1.6.0, to v1.19.x) groups no receives, which an all-reduce does not
  use (NCCL aggregates receives for all-to-all through PXN only).

Not modelled: HPE's own libfabric drops before the upstream provider (Cray libfabric 1.15.x), some of which
multiplied the netdev's Mb/s by 1000 only (``link_attr->speed = nic_if->speed * 1000``), which would make the
plugin report 1/1000 of the port's rate; no log at hand says which one it ran.
"""

from __future__ import annotations

from . import efa
from .efa import Version

__all__ = [
    "PROVIDERS",
    "exported_env",
    "reported_latency",
    "simple_only",
]

#: the libfabric providers modelled: AWS EFA and HPE Slingshot's cxi
PROVIDERS = ("efa", "cxi")


def _provider(provider: str) -> str:
    if provider not in PROVIDERS:
        raise ValueError(f"aws-ofi-nccl over libfabric's {provider!r} provider is not modelled (it models {PROVIDERS})")
    return provider


def reported_latency(provider: str, platform: str, plugin: Version = efa.NEWEST_PLUGIN) -> float:
    """The inter-node latency (µs) plugin release ``plugin`` reports to NCCL over ``provider`` (``platform``:
    the EFA instance family; unused on cxi).

    >>> reported_latency("cxi", "", (1, 1, 5)), reported_latency("cxi", "", (1, 5, 0)), reported_latency("cxi", "")
    (0.0, 150.0, 0.0)
    >>> reported_latency("efa", "p5", (1, 7, 0)) == efa.reported_latency("p5", (1, 7, 0))
    True
    """
    if _provider(provider) == "efa":
        return efa.reported_latency(platform, plugin)
    return 150.0 if (1, 2, 0) <= plugin < (1, 6, 0) else 0.0


def simple_only(provider: str, platform: str, plugin: Version = efa.NEWEST_PLUGIN) -> str:
    """Why the plugin sets NCCL_PROTO=simple over ``provider`` (a phrase), ``""`` where it does not: never
    on cxi (the AWS platform file sets it).

    >>> simple_only("cxi", ""), simple_only("efa", "p4d") == efa.simple_only("p4d")
    ('', True)
    """
    return efa.simple_only(platform, plugin) if _provider(provider) == "efa" else ""


def exported_env(provider: str, platform: str, plugin: Version = efa.NEWEST_PLUGIN) -> dict[str, int]:
    """The NCCL settings (bytes) the plugin exports over ``provider``: the AWS platform file's
    (:func:`sim.nccl.efa.exported_env`), none on cxi.

    >>> exported_env("cxi", "", (1, 16, 0)), exported_env("efa", "p4d") == efa.exported_env("p4d")
    ({}, True)
    """
    return efa.exported_env(platform, plugin) if _provider(provider) == "efa" else {}
