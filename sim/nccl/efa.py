"""What AWS's NET plugin for EFA (aws/aws-ofi-nccl) tells NCCL, by plugin release and instance type.

NCCL reaches EFA (the network of AWS p4d, p5, p5en instances) through the plugin, not InfiniBand verbs;
two of the plugin's choices reach NCCL's tuner (:mod:`sim.nccl.tuner`):

* **the inter-node latency** it reports (``ncclNetProperties.latency``, µs), which NCCL's graph search
  copies into ``graph->latencyInter`` (search.cc, from v2.12.7) and ``tuning.cc`` prices per release
  (:attr:`sim.nccl.versions.Tuning.latency_inter`): :func:`reported_latency`;
* **the protocol**: where the EFA endpoint cannot deliver 128-byte stores in order, LL and LL128 could
  corrupt data, and the plugin sets ``NCCL_PROTO=simple`` itself: :func:`simple_only`.

Every figure names the plugin's source at its tag (``git show TAG:src/...`` of aws/aws-ofi-nccl):

* before v1.2.0-aws (2022-03): no latency reported (``props->latency`` unset: NCCL's 0);
* v1.2.0-aws .. v1.6.0: ``props->latency = 150`` on every platform (src/nccl_ofi_net.c, built against
  NCCL >= 2.12: "chose the correct algorithm (tree or ring) most times");
* v1.7.0-aws on (commit d87d61e, "Variable internode latency reported to NCCL"): per platform
  (src/platform-aws.c ``platform_data_map``): p4d, p4de, p5 75 us; others the default 150 (75 from
  v1.13.0-aws); p5en is in the table from v1.13.0-aws (75 us) and 35 us from v1.15.0 (commit a985b8cb,
  "Updating latency value for p5en and p6 based on empirical search");
* ``NCCL_PROTO=simple``: never before v1.6.0; v1.6.0 (src/platform-aws.c ``force_proto_simple``) on p4d,
  p4de, p3dn and on every platform not in its table (p5 and p5en among them: ``!platform_data ||
  force_proto_simple``); from v1.7.0-aws where the EFA endpoint does not support
  ``FI_OPT_EFA_{SENDRECV,WRITE}_IN_ORDER_ALIGNED_128_BYTES`` ("whenever we know that the LL/LL128 protocols
  are not safe, such as on P4d/P4e"; ``configure_nccl_proto``): p4d always; p5 until v1.7.3-aws skips the
  check on P5 with the RDMA protocol (commit a21f4dfd, "Do not force NCCL_PROTO=simple on P5"; from
  v1.11.0-aws EFA reports in-order writes there and the check passes, commit ece41f0c); p5en until
  v1.13.0-aws skips it on P5en ("Skipping NCCL_PROTO checks on P5en + RDMA", commit 7475f7ed).

Not modelled: the plugin's own NCCL tuner (loaded by default from v1.16.0, ``NCCL_TUNER_PLUGIN``: its
region tables override NCCL's picks on p5 / p5en), and the NCCL settings it exports (``NCCL_BUFFSIZE``
8 MiB, ``NCCL_P2P_NET_CHUNKSIZE``, on p5 ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` 512 KiB).
"""

from __future__ import annotations

import re

__all__ = ["FAMILIES", "NEWEST_PLUGIN", "PRESETS", "parse_plugin", "plugin_text", "reported_latency", "simple_only"]

Version = tuple[int, int, int]
#: AWS's EFA GPU instance types -> the family (platform) whose row of the plugin's table they take: p4de is
#: p4d's, p5e p5's (the same rows, but that p5e is in the table only from v1.11.0)
FAMILIES = {"p4d": "p4d", "p4de": "p4d", "p5": "p5", "p5e": "p5", "p5en": "p5en"}
#: each family's ``hgx`` preset (:mod:`sim.topology.hgx`)
PRESETS = {"p4d": "aws-p4d", "p5": "aws-p5", "p5en": "aws-p5en"}
#: the newest plugin release read (tag v1.21.1 of aws/aws-ofi-nccl), what a topology gets by default
NEWEST_PLUGIN: Version = (1, 21, 1)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-?aws|-\w+)?$")


def parse_plugin(text: str) -> Version:
    """An aws-ofi-nccl release from ``1.7.0``, ``v1.7.4-aws`` or ``1.14`` (its .0); ValueError otherwise.

    >>> parse_plugin("1.7.0"), parse_plugin("v1.9.1-aws"), parse_plugin("1.14")
    ((1, 7, 0), (1, 9, 1), (1, 14, 0))
    """
    m = _VERSION.match(text.strip())
    if not m or int(m.group(1)) != 1:
        raise ValueError(f"aws-ofi-nccl version {text!r} is not a 1.x release like 1.7.0")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def plugin_text(v: Version) -> str:
    return ".".join(map(str, v))


def reported_latency(platform: str, plugin: Version = NEWEST_PLUGIN) -> float:
    """The inter-node latency (µs) plugin release ``plugin`` reports to NCCL on ``platform`` (see the module
    docstring for the sources).

    >>> reported_latency("p4d", (1, 1, 5)), reported_latency("p4d", (1, 5, 0)), reported_latency("p5", (1, 7, 0))
    (0.0, 150.0, 75.0)
    >>> reported_latency("p5en", (1, 9, 1)), reported_latency("p5en", (1, 13, 0)), reported_latency("p5en")
    (150.0, 75.0, 35.0)
    """
    if plugin < (1, 2, 0):
        return 0.0
    if plugin < (1, 7, 0):
        return 150.0
    if platform == "p5en":
        return 150.0 if plugin < (1, 13, 0) else 75.0 if plugin < (1, 15, 0) else 35.0
    return 75.0


def simple_only(platform: str, plugin: Version = NEWEST_PLUGIN) -> str:
    """Why plugin release ``plugin`` sets ``NCCL_PROTO=simple`` on ``platform`` (a phrase), or ``""`` where it
    leaves LL and LL128 on.

    >>> simple_only("p4d", (1, 5, 0)), simple_only("p5"), simple_only("p5en")
    ('', '', '')
    >>> simple_only("p4d")[:42]
    'aws-ofi-nccl sets NCCL_PROTO=simple on p4d'
    """
    if plugin < (1, 6, 0):
        return ""
    v = plugin_text(plugin)
    if plugin < (1, 7, 0):
        why = "its platform table forces it" if platform == "p4d" else "an instance type not in its table"
        return f"aws-ofi-nccl sets NCCL_PROTO=simple on {platform} ({v}: {why})"
    if platform == "p4d" or (platform == "p5" and plugin < (1, 7, 3)) or (platform == "p5en" and plugin < (1, 13, 0)):
        return (
            f"aws-ofi-nccl sets NCCL_PROTO=simple on {platform} ({v}: its EFA endpoint does not deliver 128-byte "
            "stores in order, so LL and LL128 could corrupt data)"
        )
    return ""
