"""NCCL's tuner for all-gather and reduce-scatter: which algorithm and protocol NCCL picks per size, and
its own estimate -- ``tuning.cc: ncclTopoTuneModel`` for ``coll`` = ``ncclFuncAllGather`` /
``ncclFuncReduceScatter``, ``ncclTopoGetAlgoTime``, ``enqueue.cc: topoGetAlgoInfo``, read at every tag
from v2.10.3 to v2.30.7 (docs/nccl.md, "All-gather and reduce-scatter").

What differs from all-reduce's (:mod:`sim.nccl.tuner`), every release:

* ``nsteps = nRanks - 1`` and the ring's network steps ``nInterSteps = nNodes - 1`` (all-reduce: 2 (nRanks -
  1) and 2 (nNodes - 1) or 2 nNodes); algBw = busBw x nRanks / nsteps for the ring;
* NCCL prices ``nBytes = nRanks x count x size`` (``enqueue.cc: ncclFuncMaxSendRecvCount``): the total,
  nccl-tests' size, as collsim's size of these collectives;
* no ring "plateau" and no tree correction (both ``coll == ncclFuncAllReduce`` only);
* until 2.20.5 the ring's LL is busBw / 3 on one node (``nNodes > 1 || coll == ncclFuncAllReduce ||
  coll == ncclFuncReduce ? 1.0/4.0 : 1.0/3.0``), from 2.21.5 x .5 as all-reduce's.

Which algorithms a release prices for them (the ``continue`` at the top of the algorithm loop):

* 2.10.3-2.16.5: Ring only (``coll != ncclFuncAllReduce && a != NCCL_ALGO_RING``);
* 2.17.1: Ring, NVLS (one node in that release: nvls.cc);
* 2.18.1-2.18.6: Ring only;
* 2.19.1-2.20.2: Ring, NVLS; from 2.20.3 CollNetDirect too; from 2.23.4 PAT too.

NVLS (Simple only): 2.17.1 busBw = the ring graph's channels x bwIntra (capped 370 on Hopper) x .75;
2.19.1-2.22.3 channels x min(bwIntra, bwInter) x 5/6; 2.23.4-2.27.7 the same without the ratio (``!(a !=
NCCL_ALGO_RING && (AllGather || ReduceScatter))``: no busBw -> algBw conversion but the ring's); from 2.28.3
channels x min(bwIntra x nvlsEfficiency x (ch - 1) / ch x (ppn - 1) / ppn, bwInter). Across nodes NVLS needs
CollNet (the disable loop: ``a == NCCL_ALGO_NVLS && nNodes > 1``), and from 2.27.3 the plugin's
``iallgather`` / ``ireducescatter`` and no more GPUs a node than CollNet heads.

CollNetDirect (Simple, from 2.20.3, with CollNet; across nodes needs ``iallgather`` / ``ireducescatter`` in the
plugin and no more GPUs a node than heads): 2.20.3-2.26.6 busBw = ppn x bwIntra x (w .85 + (1 - w) .95), w
= (ppn - 1) / 7 ("Measured corrective ratio needed at 1 ppn and 8ppn"); from 2.27.3 ppn x min(bwIntra,
bwInter x .9); no busBw -> algBw conversion.

PAT (Simple, from 2.23.4; ``ncclPatEnable``: one GPU per node, sm60+, no net device offload): the tree
graph's channels x (bwIntra up to 2 nodes, else bwInter) x .85 (2.23.4) / .75 (from 2.24.3), no conversion;
latency 8 + log2i(nNodes) x interLat / 3.5 + nRanks x 2.8 us (interLat: NET Tree's, ppn = 1).

Assumed where the source leaves it to the system: a topology with ``sharp`` switches stands for SHARP with
a CollNet plugin that has ``iallgather`` and ``ireducescatter`` (as for all-reduce it stands for the plugin
and NCCL_COLLNET_ENABLE=1); the network is a host network (``NCCL_NET_DEVICE_HOST``: PAT allowed).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..errors import AlgorithmError
from . import tuner
from .tuner import PROTOS, Candidate, Graph, System
from .versions import NEWEST, Tuning

__all__ = ["AGRS_ALGORITHMS", "NCCL_NAMES", "candidates", "disabled", "enabled", "pick"]

Version = tuple[int, int, int]
#: the algorithms NCCL prices for all-gather and reduce-scatter, in NCCL's index order (device.h:
#: NCCL_ALGO_RING 1, NCCL_ALGO_COLLNET_DIRECT 2, NCCL_ALGO_NVLS 4, NCCL_ALGO_PAT 6)
AGRS_ALGORITHMS = ("ring", "collnet-direct", "nvls", "pat")
NCCL_NAMES = {**tuner.NCCL_NAMES, "pat": "PAT"}  # init.cc ncclAlgoStr
#: PAT's base latency (tuning.cc: 8 us, "Base time", 2.23.4-2.27.7; baseLatencies PAT 8.0 from 2.28.3) and
#: its per-rank linear part ("nRanks * 2.8")
PAT_BASE_US, PAT_PER_RANK_US = 8.0, 2.8


def _first(release: Version) -> dict[str, bool]:
    """What the release ``release`` has (see the module docstring for the tags)."""
    return {
        "nvls": (2, 17, 1) <= release < (2, 18, 1) or release >= (2, 19, 1),
        "collnet-direct": release >= (2, 20, 3),
        "pat": release >= (2, 23, 4),
        "convert_non_ring": release < (2, 23, 4),  # NVLS's busBw -> algBw ratio until 2.22.3
        "ll_third": release < (2, 21, 5),  # ring LL / 3 on one node
        "pat_75": release >= (2, 24, 3),  # PAT x .75 (x .85 in 2.23.4)
        "collnet_min": release >= (2, 27, 3),  # CollNetDirect min(bwIntra, .9 bwInter); heads check for NVLS
    }


def disabled(
    sys: System, graphs: dict[str, Graph], algorithm: str, tuning: Tuning = NEWEST, release: Version | None = None
) -> str | None:
    """Why NCCL (``release``, priced with ``tuning``) would not run ``algorithm`` for all-gather /
    reduce-scatter on ``sys``, or None."""
    release = release or tuning.first
    has = _first(release)
    name = NCCL_NAMES.get(algorithm, algorithm)
    if algorithm not in AGRS_ALGORITHMS:
        return f"is not one NCCL runs all-gather or reduce-scatter with ({', '.join(NCCL_NAMES[a] for a in AGRS_ALGORITHMS)})"
    if algorithm == "ring":  # every release, every topology
        return None
    if not has[algorithm]:
        return f"is not in NCCL {'.'.join(map(str, release))}'s tuner for all-gather and reduce-scatter ({name})"
    if algorithm == "pat":
        # ncclPatEnable: sm60 or later (every GPU collsim builds), one GPU per node, a host network
        return "runs with one GPU per node only (tuning.cc: ncclPatEnable)" if sys.ppn != 1 else None
    if algorithm == "nvls":
        why = tuner.disabled(sys, graphs, "nvls", tuning) if "nvls" in tuning.algorithms else None
        if "nvls" not in graphs:
            return "needs an NVSwitch that reduces (NVLink SHARP)"
        if why:
            return why
        if sys.nodes > 1 and has["collnet_min"] and sys.ppn > _heads(sys, graphs):
            return "across nodes needs a CollNet head for every GPU of a node"
        return None
    why = tuner.disabled(sys, graphs, "collnet-direct", tuning)
    if why:
        return why
    if sys.nodes > 1 and sys.ppn > _heads(sys, graphs):
        return "needs a CollNet head (a GPU with its own NIC) for every GPU of a node"
    return None


def _heads(sys: System, graphs: dict[str, Graph]) -> int:
    """comm->collNetHeadsNum: the CollNet Direct graph's heads."""
    g = graphs.get("collnet-direct")
    return g.channels if g is not None else 0


def enabled(sys: System, graphs: dict[str, Graph], tuning: Tuning = NEWEST, release: Version | None = None) -> set[str]:
    return {a for a in AGRS_ALGORITHMS if disabled(sys, graphs, a, tuning, release) is None}


def _bandwidth(
    sys: System, a: str, proto: str, graphs: dict[str, Graph], tuning: Tuning, has: dict[str, bool]
) -> float:
    """tuning.cc ncclTopoTuneModel's bandwidths[coll][a][p] (algBw, GB/s) for all-gather / reduce-scatter."""
    n, nodes, ppn = sys.ranks, sys.nodes, sys.ppn
    cc = tuner._indices(sys, tuning)[0]
    g = graphs["tree" if a == "pat" else a]
    if a == "nvls":
        if tuning.nvls_bw == "2.28":
            if g.channels < 2:  # "NVLS/NVLStree needs at least 2 channels"
                return 0.0
            intra = g.bw_intra * tuning.nvls_efficiency[cc] * (g.channels - 1) / g.channels * (ppn - 1) / ppn
            return g.channels * min(intra, g.bw_inter)
        if tuning.nvls_bw == "2.17":
            bus = tuner._capped(g.channels * g.bw_intra, tuning, cc)
        else:
            bus = g.channels * min(g.bw_intra, g.bw_inter)
        return bus * tuning.nvls_ratio if has["convert_non_ring"] else bus
    if a == "collnet-direct":
        if has["collnet_min"]:
            return ppn * min(g.bw_intra, g.bw_inter * 0.9)
        w = (ppn - 1) / (8 - 1)
        return ppn * g.bw_intra * (w * 0.85 + (1 - w) * 0.95)
    bus = tuner._capped(g.channels * (g.bw_intra if nodes <= 2 else g.bw_inter), tuning, cc)
    if a == "pat":
        return bus * (0.75 if has["pat_75"] else 0.85)
    ll_factor = 1.0 / 3.0 if has["ll_third"] and nodes == 1 else tuning.ring_ll
    return (
        tuner.ring_protocol_bw(bus, proto, sys, g, tuning, ll_factor) * n / (n - 1)
    )  # ratio nRanks / nsteps, nsteps = nRanks - 1


def _latency(sys: System, a: str, pi: int, graphs: dict[str, Graph], tuning: Tuning) -> tuple[float, float]:
    """latencies[coll][a][p] (us) for all-gather / reduce-scatter, and its network part."""
    n, nodes, ppn = sys.ranks, sys.nodes, sys.ppn
    g = graphs["tree" if a == "pat" else a]
    net_lat = tuning.hw_lat["net"]
    inter = net_lat["tree" if ppn == 1 and tuning.one_ppn_tree_net else a if a in net_lat else "tree"][pi]
    inter = tuner.inter_latency(inter, sys, PROTOS[pi], tuning)  # and the NET plugin's latencyInter
    if a == "pat":  # interLat: NET Tree's with one GPU a node (every release that has PAT)
        hops = int(math.log2(nodes)) * tuner.inter_latency(net_lat["tree"][pi], sys, PROTOS[pi], tuning) / 3.5
        return PAT_BASE_US + hops + n * PAT_PER_RANK_US, hops
    intra = tuning.hw_lat["nvlink" if g.nvlink else "pci"][a][pi]
    lat = tuning.base_lat[a][pi]
    if a == "ring":
        intra = max(tuner.ll_intra(intra, sys, PROTOS[pi], tuning), tuner.net_overhead(sys, PROTOS[pi], tuning))
        steps, inter_steps = n - 1, nodes - 1
        return lat + (steps - inter_steps) * intra + inter_steps * inter, inter_steps * inter
    if a == "collnet-direct":
        net = inter
        return lat + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * tuning.collnet_arity_lat) + net, net
    # NVLS: the all-reduce's latency (computed for every coll)
    if tuning.nvls_lat == "2.17":
        return lat, 0.0
    if tuning.nvls_lat == "2.18":
        net = net_lat["nvls"][pi] if nodes > 1 else 0.0
        return lat + net, net
    net = inter if nodes > 1 else 0.0
    return intra + net, net


def candidates(
    sys: System,
    nbytes: float,
    algos: set[str] | None = None,
    protos: set[str] | None = None,
    tuning: Tuning = NEWEST,
    release: Version | None = None,
) -> list[Candidate]:
    """Every enabled (algorithm, protocol) for an all-gather / reduce-scatter of ``nbytes`` in all, priced
    as ncclTopoGetAlgoTime does (lat + nBytes / (1000 bw)), in NCCL's order."""
    release = release or tuning.first
    has = _first(release)
    graphs = tuner.search(sys, tuning)
    allowed = enabled(sys, graphs, tuning, release) if algos is None else algos
    ll128_off = tuner.ll128_default_off(sys, tuning)
    protos = tuner.platform_protocols(sys, protos)
    plain = replace(sys, net_latency=0.0)  # the latency less the NET plugin's latencyInter
    out = []
    for a in AGRS_ALGORITHMS:
        if a not in allowed:
            continue
        for pi, proto in enumerate(PROTOS):
            if a != "ring" and proto != "simple":  # NVLS, CollNet: Simple; PAT: "p != NCCL_PROTO_SIMPLE"
                continue
            if protos is not None and proto not in protos:
                continue
            if proto == "ll128" and ll128_off and protos is None:
                continue
            bw = _bandwidth(sys, a, proto, graphs, tuning, has)
            if bw <= 0:
                continue
            lat, net = _latency(sys, a, pi, graphs, tuning)
            plugin = lat - _latency(plain, a, pi, graphs, tuning)[0] if sys.net_latency else 0.0
            g = graphs["tree" if a == "pat" else a]
            ch = g.runtime_channels or g.channels  # (NVLS's: the release's NVLS channels, tuner.nvls_tuning)
            out.append(Candidate(a, proto, lat, bw, lat + nbytes / (1000 * bw), ch, net, tuning.release, plugin))
    return out


def pick(sys: System, nbytes: float, *args: Any, **kw: Any) -> Candidate:
    """NCCL's choice, :func:`candidates`' arguments (strict minimum, the first wins ties: enqueue.cc
    topoGetAlgoInfo; ``min`` keeps the first of equals)."""
    found = candidates(sys, nbytes, *args, **kw)
    if not found:
        raise AlgorithmError("nccl: no algorithm and protocol allowed here can run this collective")
    return min(found, key=lambda c: c.time_us)
