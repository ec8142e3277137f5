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

Two more reach NCCL itself rather than its tuner's inputs:

* **the NCCL settings it exports** (:func:`exported_env`): the NVLS and NVLS-tree chunk ceilings (512 KiB,
  v1.8.0-aws / v1.9.0-aws on) and ``NCCL_BUFFSIZE`` 8 MiB (v1.16.0 on), which set the chunks the schedules
  move (:func:`sim.nccl.tuner.nvls_chunks`, :func:`sim.nccl.tuner.simple_step`);
* **its own NCCL tuner** (:func:`region_pick`, :func:`tuner_loaded`): loaded by default from v1.16.0, its
  region tables make NCCL run their (algorithm, protocol) on p5 / p5e / p5en from 3 nodes on.

Not modelled: the tuner's tables for other collectives, other GPU counts a node than 8 and P6; its
``getChunkSize`` (v1.21.0 on: p5en Tree/LL128 and PAT with one GPU a node), p3dn, g5, P6.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

__all__ = [
    "FAMILIES",
    "NEWEST_PLUGIN",
    "PRESETS",
    "TUNER_BY_DEFAULT",
    "exported_env",
    "parse_plugin",
    "plugin_text",
    "region_pick",
    "reported_latency",
    "simple_only",
    "tuner_loaded",
]

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


# -- the NCCL settings the plugin exports (setenv without overwriting: a value the user sets wins) ---------
_KIB = 1024
#: NCCL's defaults for the settings below (0 in :class:`sim.nccl.tuner.System`: "not set"): init.cc
#: DEFAULT_BUFFSIZE 4 MiB (Simple's 512 KiB step: :func:`sim.nccl.tuner.simple_step`), transport/nvls.cc
#: NCCL_NVLS_CHUNKSIZE 128 KiB (NCCL_NVLSTREE_MAX_CHUNKSIZE has no value of its own: -2, the NVLS chunk, 64 KiB
#: from 4 nodes)


def exported_env(platform: str, plugin: Version = NEWEST_PLUGIN) -> dict[str, int]:
    """The NCCL settings (bytes) plugin release ``plugin`` exports on ``platform``, as far as they change an
    all-reduce (``NCCL_P2P_NET_CHUNKSIZE`` is for send/receive, ``NCCL_NET_FORCE_FLUSH`` and
    ``NCCL_NETDEVS_POLICY`` change no modelled figure). From the plugin's source:

    * v1.8.0-aws (commit 03ead71a, "Restore NCCL_NVLSTREE_MAX_CHUNKSIZE to 512KiB"): src/platform-aws.c
      ``platform_init`` sets ``NCCL_NVLSTREE_MAX_CHUNKSIZE=524288`` on every platform (built with CUDA): "NCCL
      v2.19.3 reduced the chunk size used when running NVLS Tree algorithm on greater than 4 nodes to 64KiB.
      This drastically impacted performance on AWS";
    * v1.9.0-aws (commit 3defe9e2, "Ensure NVLS and NVLSTree chunksizes are matched"): ``NCCL_NVLS_CHUNKSIZE=
      524288`` too ("The NVLSTree chunk size can not be larger than the NVLS chunk size");
    * v1.16.0 (commit f3f5c40b, "aws: Use default env mechanism"): per platform, src/platform-aws.cpp
      ``platform_data_map[].env``: p4d and p4de ``NCCL_BUFFSIZE=8388608`` (and ``NCCL_P2P_NET_CHUNKSIZE``);
      p5, p5e, p5en the same and both NVLS chunk sizes 524288 (unchanged to v1.21.1).

    >>> exported_env("p5", (1, 7, 3)), exported_env("p5", (1, 8, 1))
    ({}, {'NCCL_NVLSTREE_MAX_CHUNKSIZE': 524288})
    >>> exported_env("p4d") == {"NCCL_BUFFSIZE": 8388608}, sorted(exported_env("p5en"))
    (True, ['NCCL_BUFFSIZE', 'NCCL_NVLSTREE_MAX_CHUNKSIZE', 'NCCL_NVLS_CHUNKSIZE'])
    """
    nvls = {"NCCL_NVLSTREE_MAX_CHUNKSIZE": 512 * _KIB, "NCCL_NVLS_CHUNKSIZE": 512 * _KIB}
    if plugin < (1, 8, 0):
        return {}
    if plugin < (1, 9, 0):
        return {"NCCL_NVLSTREE_MAX_CHUNKSIZE": 512 * _KIB}
    if plugin < (1, 16, 0):
        return nvls
    return {"NCCL_BUFFSIZE": 8 * 1024 * _KIB, **(nvls if platform in ("p5", "p5en") else {})}


# -- the plugin's own NCCL tuner (src/tuner/) ----------------------------------------------------------------
#: the first release that loads its tuner by default: v1.16.0 sets ``NCCL_TUNER_PLUGIN`` to its own library
#: unless the user set it (src/platform-aws.cpp ``configure_tuner``, commit 05889cda "tuner: Work around NCCL
#: dlopen bug"); before, only a user's ``NCCL_TUNER_PLUGIN`` loads it
TUNER_BY_DEFAULT: Version = (1, 16, 0)
#: the region tables' coordinates are log2(bytes), log2(ranks) from v1.19.0 (commit 09c2351d, ``transform_log2``
#: in src/tuner/nccl_ofi_regions.cpp); linear before
_LOG2_FROM: Version = (1, 19, 0)
#: include/tuner/nccl_ofi_tuner_region.h: the largest size and rank count the tables reach
_MAX_SIZE, _MAX_RANKS = 100.0 * 1024**3, 1024.0 * 1024

Point = tuple[float, float]
#: extend_region(a, b, (TUNER_MAX_SIZE, TUNER_MAX_RANKS)) of the tables, named by their (a, b)
_Ext = tuple[Point, Point]
Region = tuple[str, str, tuple[Point | _Ext, ...]]

# src/tuner/nccl_ofi_regions.cpp, region_init_internal_p5_p5e, nRanks == 8 * nNodes, ncclFuncAllReduce
# (the same from v1.16.0 to v1.21.1): (algorithm, protocol, vertices), the first region holding the point wins
_P5_TREE_LL128: _Ext = ((402653184, 2048), (402653184, 4096))
_P5_NVLSTREE_1: _Ext = ((8053063680, 160), (9663676416, 192))
_P5_8PPN: tuple[Region, ...] = (
    (
        "tree",
        "ll128",
        (
            (0, 16),
            (31457280, 16),
            (37748736, 32),
            (117440512, 64),
            (301989888, 128),
            (301989888, 256),
            (335544320, 512),
            (536870912, 1024),
            (402653184, 2048),
            (402653184, 4096),
            _P5_TREE_LL128,
            ("x0", _P5_TREE_LL128),
        ),
    ),
    ("nvls-tree", "simple", ((31457281, 16), (_MAX_SIZE, 16), (31457281, 16))),
    (
        "ring",
        "ll128",
        (
            (31457280, 17),
            (1073741824, 17),
            (2147483648, 64),
            (2147483648, 128),
            (1342177280, 160),
            (2147483648, 256),
            (1074790400, 256),
            (444596224, 160),
            (301989888, 128),
            (117440512, 64),
            (37748736, 32),
        ),
    ),
    (
        "nvls-tree",
        "simple",
        (
            (2147483648, 128),
            (6442450944, 128),
            (8053063680, 160),
            (9663676416, 192),
            _P5_NVLSTREE_1,
            _P5_TREE_LL128,
            (402653184, 4096),
            (402653184, 2048),
            (536870912, 1024),
            (335544320, 512),
            (301989888, 256),
            (310378496, 160),
            (444596224, 160),
            (1074790400, 256),
            (2684354560, 256),
            (2147483648, 224),
            (1342177280, 160),
        ),
    ),
    (
        "ring",
        "simple",
        (
            (1073741824, 17),
            ("x17", _P5_NVLSTREE_1),
            _P5_NVLSTREE_1,
            (9663676416, 192),
            (8053063680, 160),
            (2684354560, 64),
            (1610612736, 32),
        ),
    ),
)
# region_init_internal_p5en, nRanks == 8 * nNodes, ncclFuncAllReduce: v1.17.0 to v1.21.1
_P5EN_LL: _Ext = ((196608, 192), (196608, 1024))
_P5EN_LL128: _Ext = ((129499136, 127), (218103808, 1024))
_P5EN_NVLSTREE: _Ext = ((7516192768, 256), (17179869184, 448))
_P5EN_8PPN: tuple[Region, ...] = (
    ("tree", "ll", ((0, 16), (196608, 16), (196608, 1024), _P5EN_LL, (0, _MAX_RANKS))),
    (
        "tree",
        "ll128",
        (_P5EN_LL, (196608, 1024), (196608, 16), (13107200, 16), (129499136, 127), (218103808, 1024), _P5EN_LL128),
    ),
    (
        "ring",
        "ll128",
        ((129499136, 127), (13107200, 16), (29884416, 16), (293601280, 32), (589299712, 64), (549453824, 128)),
    ),
    (
        "nvls-tree",
        "simple",
        (
            _P5EN_LL128,
            (218103808, 1024),
            (129499136, 127),
            (549453824, 128),
            (589299712, 64),
            (293601280, 32),
            (29884416, 16),
            (_MAX_SIZE, 16),
            (509607936, 32),
            (7516192768, 256),
            (17179869184, 448),
            _P5EN_NVLSTREE,
        ),
    ),
    ("ring", "simple", (_P5EN_NVLSTREE, (17179869184, 448), (7516192768, 256), (509607936, 32), (_MAX_SIZE, 16))),
)
# the same at v1.16.x
_P5EN_LL_16: _Ext = ((262144, 192), (262144, 1024))
_P5EN_LL128_16: _Ext = ((150994944, 128), (251658240, 1024))
_P5EN_NVLSTREE_16: _Ext = ((6442450944, 256), (17179869184, 768))
_P5EN_8PPN_16: tuple[Region, ...] = (
    ("tree", "ll", ((0, 16), (262144, 16), (262144, 1024), _P5EN_LL_16)),
    (
        "tree",
        "ll128",
        (
            _P5EN_LL_16,
            (262144, 1024),
            (262144, 16),
            (14680064, 16),
            (150994944, 128),
            (251658240, 1024),
            _P5EN_LL128_16,
        ),
    ),
    ("ring", "ll128", ((150994944, 128), (14680064, 16), (33554432, 16), (536870912, 32), (536870912, 128))),
    (
        "nvls-tree",
        "simple",
        (
            _P5EN_LL128_16,
            (251658240, 1024),
            (150994944, 128),
            (536870912, 128),
            (536870912, 32),
            (6442450944, 256),
            (17179869184, 768),
            _P5EN_NVLSTREE_16,
        ),
    ),
    (
        "ring",
        "simple",
        (
            _P5EN_NVLSTREE_16,
            (17179869184, 768),
            (6442450944, 256),
            (536870912, 32),
            (33554432, 16),
            (1073741824, 16),
            (_MAX_SIZE, 16),
        ),
    ),
)


def _log2(p: Point, log2: bool) -> Point:
    if not log2:
        return p
    return math.log2(p[0] or 1e-6), math.log2(p[1] or 1e-6)


def _extend(a: Point, b: Point, log2: bool) -> Point:
    """nccl_ofi_regions.cpp ``extend_region(a, b, (TUNER_MAX_SIZE, TUNER_MAX_RANKS))``: the farthest point of
    the line through ``a`` and ``b`` with the largest size or rank count (in the tables' coordinates)."""
    (ax, ay), (bx, by), (zx, zy) = _log2(a, log2), _log2(b, log2), _log2((_MAX_SIZE, _MAX_RANKS), log2)
    if ax == bx:
        out = (ax, zy)
    elif ay == by:
        out = (zx, ay)
    else:
        m = (ay - by) / (ax - bx)
        c = by - m * bx
        y = m * zx + c
        out = (zx, y) if y < zy else ((zy - c) / m, zy)
    return (2.0 ** out[0], 2.0 ** out[1]) if log2 else out


def _vertex(v: Any, log2: bool) -> Point:
    """A table's vertex: a point, an extended one (``(a, b)``), or ``("x0", ext)`` / ``("x17", ext)``: the
    extended point's y at size 0, its x at 17 ranks (``{0, extended.y}``, ``{extended.x, 17}``)."""
    if isinstance(v[0], str):
        e = _extend(*v[1], log2)
        return (0.0, e[1]) if v[0] == "x0" else (e[0], 17.0)
    if isinstance(v[0], tuple):
        return _extend(v[0], v[1], log2)
    return float(v[0]), float(v[1])


def _intersect(x0: Point, x1: Point, y0: Point, y1: Point, eps: float) -> tuple[int, Point]:
    """nccl_ofi_regions.cpp ``intersect``: whether segment x0-x1 crosses y0-y1 (1, -1; 0 too close to an
    end of y0-y1 or parallel), and where the lines meet -- in exact arithmetic (the C code's long double
    keeps a point on an edge on it, where doubles would miss it by their rounding)."""
    x0, x1, y0, y1 = ((Fraction(p[0]), Fraction(p[1])) for p in (x0, x1, y0, y1))
    dx, dy = (x1[0] - x0[0], x1[1] - x0[1]), (y1[0] - y0[0], y1[1] - y0[1])
    d = dy[0] * dx[1] - dy[1] * dx[0]
    if abs(d) < eps:
        return 0, (0.0, 0.0)
    a = ((x0[0] * dx[1] - x0[1] * dx[0]) - (y0[0] * dx[1] - y0[1] * dx[0])) / d
    sect = (y0[0] + a * dy[0], y0[1] + a * dy[1])
    if a < -eps or a > 1 + eps:
        return -1, sect
    if a < eps or a > 1 - eps:
        return 0, sect
    b = ((x0[0] * dy[1] - x0[1] * dy[0]) - (y0[0] * dy[1] - y0[1] * dy[0])) / d
    return (-1 if b < 0 or b > 1 else 1), sect


def _inside(p: Point, poly: list[Point], log2: bool) -> bool:
    """nccl_ofi_regions.cpp ``is_inside_region``: on an edge (within 1e-10) or inside, by ray casting towards
    twice the tables' largest point (a crossing too close to a vertex does not count, as in a release build,
    whose ``assert`` is compiled out)."""
    eps = 1e-10
    n = len(poly)
    xs, ys = [v[0] for v in poly], [v[1] for v in poly]
    if not (min(xs) - 1e-9 <= p[0] <= max(xs) + 1e-9 and min(ys) - 1e-9 <= p[1] <= max(ys) + 1e-9):
        return False  # (outside the bounding box, no edge is within eps either: the exact tests are skipped)
    for i in range(n):  # on an edge: inside
        y0, y1 = poly[i], poly[(i + 1) % n]
        r, s = _intersect(p, (p[0] + y1[1] - y0[1], p[1] - (y1[0] - y0[0])), y0, y1, eps)
        if r != -1 and (s[0] - Fraction(p[0])) ** 2 + (s[1] - Fraction(p[1])) ** 2 < eps * eps:
            return True
    if not (min(xs) <= p[0] <= max(xs) and min(ys) <= p[1] <= max(ys)):
        return False
    far = _log2((2.0 * _MAX_SIZE, 2.0 * _MAX_RANKS), log2)
    crosses = sum(_intersect(p, far, poly[i], poly[(i + 1) % n], eps)[0] == 1 for i in range(n))
    return crosses % 2 == 1


def tuner_loaded(plugin: Version, nccl: Version) -> bool:
    """Whether NCCL release ``nccl`` runs the plugin's tuner by default with plugin release ``plugin``: from
    v1.16.0 (:data:`TUNER_BY_DEFAULT`), with an NCCL that loads tuner plugins: 2.19 and 2.20 look for
    ``ncclTunerPlugin_v1`` (src/include/nccl_tuner.h from v2.19.1-1), which the plugin exports up to v1.19.x;
    2.21.5 on for v2 and later, which it exports from v1.16.0 (``git grep ncclTunerPlugin_v`` at each tag)."""
    if plugin < TUNER_BY_DEFAULT or nccl < (2, 19, 0):
        return False
    return nccl >= (2, 21, 5) or plugin < (1, 20, 0)


def region_pick(
    platform: str, plugin: Version, nodes: int, ranks: int, nbytes: float, available: Iterable[tuple[str, str]]
) -> tuple[str, str] | None:
    """The (algorithm, protocol) the plugin's region tuner makes NCCL run for an all-reduce of ``nbytes`` on
    ``ranks`` ranks of ``nodes`` nodes, or None where it leaves the choice to NCCL's tuner. Its regions
    (src/tuner/nccl_ofi_regions.cpp; ``region_get_coll_info_internal_v3``) are polygons in (size, ranks),
    tried in order; the first holding the point whose (algorithm, protocol) NCCL has in its cost table
    (``available``: not ``NCCL_ALGO_PROTO_IGNORE``) gets cost 0, so NCCL takes it. It skips 2 nodes or fewer
    ("the regions are not well defined", every release) and sizes above 100 GiB. Ported: p5 / p5e and p5en
    with 8 GPUs a node (p5en's table of v1.16.x and of v1.17.0 on); other layouts: None."""
    if nodes <= 2 or ranks != 8 * nodes or nbytes > _MAX_SIZE or platform not in ("p5", "p5en"):
        return None
    return _region_pick(platform, plugin, ranks, float(nbytes), frozenset(available))


@functools.lru_cache(maxsize=4096)
def _region_pick(
    platform: str, plugin: Version, ranks: int, nbytes: float, available: frozenset[tuple[str, str]]
) -> tuple[str, str] | None:
    table = _P5_8PPN if platform == "p5" else _P5EN_8PPN if plugin >= (1, 17, 0) else _P5EN_8PPN_16
    log2 = plugin >= _LOG2_FROM
    point = _log2((float(nbytes), float(ranks)), log2)
    for algo, proto, vertices in table:
        if (algo, proto) not in available:
            continue
        if _inside(point, [_log2(_vertex(v, log2), log2) for v in vertices], log2):
            return algo, proto
    return None
