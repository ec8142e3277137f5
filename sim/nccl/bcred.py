"""NCCL's tuner for broadcast and reduce: the protocol NCCL picks for its ring per size, and its own
estimate -- ``tuning.cc: ncclTopoTuneModel`` for ``coll`` = ``ncclFuncBroadcast`` / ``ncclFuncReduce``,
``ncclTopoGetAlgoTime``, read at every tag from v2.10.3 to v2.30.7 (docs/nccl.md, "Broadcast and reduce").

What differs from all-reduce's (:mod:`sim.nccl.tuner`), every release:

* Ring only: the ``continue`` at the top of the algorithm loop (``coll != ncclFuncAllReduce && a !=
  NCCL_ALGO_RING`` until 2.16.5; ``coll == ncclFuncBroadcast && a != NCCL_ALGO_RING`` and the same for
  ``ncclFuncReduce`` from 2.17.1; one line for both from 2.23.4): no Tree, NVLS, CollNet or PAT, and no
  kernel for them either (``device/broadcast.h``, ``device/reduce.h``: ``NCCL_ALGO_RING`` only);
* ``nsteps = nRanks``, so the busBw -> algBw ratio nRanks / nsteps is 1 (nccl-tests' busbw = algbw);
* the latency is no per-step sum of intra- and inter-node hops: ``baseLat + lat`` where the ring graph has
  ``sameChannels`` (every channel the same GPU order), else ``baseLat + nRanks x lat``, ``lat`` the ring's
  hwLat of the hardware the ring crosses (NVLink or PCI on one node, NET across nodes) -- the Tree's for
  Simple ("Add some chunk latency, waiting for proper chunk modeling"). No network overhead floor, no NET
  plugin ``latencyInter`` (it enters ``interLat`` only), no plateau and no tree correction. The pick is
  made by that estimate; the simulation charges :func:`chunked`'s (one hop), since it runs the chunks;
* until 2.20.5 the ring's LL is busBw / 3 for a broadcast on one node (``nNodes > 1 || coll ==
  ncclFuncAllReduce || coll == ncclFuncReduce ? 1.0/4.0 : 1.0/3.0``: reduce keeps 1/4), from 2.21.5 x .5;
* NCCL prices ``nBytes = count x size``: the buffer, nccl-tests' size.

``sameChannels`` is the search's (``search.cc: ncclTopoCompute``): it first asks every channel to replay
the first one's GPUs; across nodes with several NICs a node, a replayed channel cannot leave by another
GPU's NIC, the search retries with channels of their own, and that graph (more channels) is kept. Taken
here as: one node, one GPU a node or one NIC a node -> same channels; otherwise not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import AlgorithmError
from . import tuner
from .tuner import PROTOS, Candidate, Graph, System
from .versions import NEWEST, Tuning

__all__ = [
    "BCRED_ALGORITHMS",
    "BCRED_COLLECTIVES",
    "candidates",
    "chunked",
    "disabled",
    "one_hop",
    "pick",
    "same_channels",
]

#: the one algorithm NCCL prices (and runs) for broadcast and reduce
BCRED_ALGORITHMS = ("ring",)
BCRED_COLLECTIVES = ("broadcast", "reduce")


def same_channels(sys: System) -> bool:
    """Whether NCCL's ring graph on ``sys`` keeps ``sameChannels`` (see the module docstring)."""
    return sys.nodes == 1 or sys.ppn == 1 or sys.nics_per_node <= 1


def disabled(sys: System, graphs: dict[str, Graph], algorithm: str, tuning: Tuning = NEWEST) -> str | None:
    """Why NCCL would not run ``algorithm`` for broadcast / reduce, or None (the ring: never)."""
    if algorithm in BCRED_ALGORITHMS:
        return None
    return "is not one NCCL runs broadcast or reduce with (Ring only: tuning.cc, device/broadcast.h, reduce.h)"


def _bandwidth(sys: System, proto: str, g: Graph, tuning: Tuning, collective: str) -> float:
    """bandwidths[coll][Ring][p] (algBw = busBw, GB/s) for broadcast / reduce."""
    cc = tuner._indices(sys, tuning)[0]
    bus = tuner._capped(g.channels * (g.bw_intra if sys.nodes <= 2 else g.bw_inter), tuning, cc)
    third = tuning.ring_ll < 0.5 and sys.nodes == 1 and collective == "broadcast"  # until 2.20.5
    return tuner.ring_protocol_bw(bus, proto, sys, g, tuning, 1.0 / 3.0 if third else tuning.ring_ll)


def _latency(sys: System, pi: int, g: Graph, tuning: Tuning) -> tuple[float, float]:
    """latencies[coll][Ring][p] (us) for broadcast / reduce, and its network part (all of the hops' part
    across nodes, where NCCL prices every hop at NET's latency)."""
    hw = "net" if sys.nodes > 1 else ("nvlink" if g.nvlink else "pci")
    if same_channels(sys):
        return one_hop(tuning, hw, pi, sys.nodes > 1)
    # "Add some chunk latency": the Tree's hwLat for Simple, nsteps = nRanks of them
    hops = sys.ranks * tuning.hw_lat[hw]["tree" if PROTOS[pi] == "simple" else "ring"][pi]
    return tuning.base_lat["ring"][pi] + hops, hops if sys.nodes > 1 else 0.0


def one_hop(tuning: Tuning, hw: str, pi: int, across: bool) -> tuple[float, float]:
    """NCCL's latency where the ring graph has ``sameChannels`` -- baseLat[Ring] + one hop of ``hw``'s Ring
    hwLat, protocol ``pi`` -- and its network part (the hop, where the ring crosses nodes: ``across``)."""
    hop = tuning.hw_lat[hw]["ring"][pi]
    return tuning.base_lat["ring"][pi] + hop, hop if across else 0.0


def chunked(c: Candidate, tuning: Tuning = NEWEST) -> Candidate:
    """The estimate ``c`` (a :func:`candidates` entry) with the latency NCCL prices where the ring graph has
    ``sameChannels`` -- one hop -- whatever the graph: what a simulation that runs the chain chunk by chunk
    charges before the data moves. NCCL's nRanks hops elsewhere are "some chunk latency, waiting for proper
    chunk modeling" (``tuning.cc``): the kernel is the same, and the simulated chain pays its own fill. One
    node (no network part) always has ``sameChannels``: ``c`` as it is."""
    if c.net_latency_us == 0.0:
        return c
    lat, hop = one_hop(tuning, "net", PROTOS.index(c.protocol), True)
    return replace(c, latency_us=lat, net_latency_us=hop)


def candidates(
    collective: str,
    sys: System,
    nbytes: float,
    algos: set[str] | None = None,
    protos: set[str] | None = None,
    tuning: Tuning = NEWEST,
) -> list[Candidate]:
    """Every enabled Ring protocol for a broadcast / reduce (``collective``) of ``nbytes``, priced as
    ncclTopoGetAlgoTime does (lat + nBytes / (1000 bw)), in NCCL's order."""
    if collective not in BCRED_COLLECTIVES:
        raise ValueError(f"bcred: {collective!r} is not broadcast or reduce")
    if algos is not None and "ring" not in algos:
        return []
    g = tuner.search(sys, tuning)["ring"]
    ll128_off = tuner.ll128_default_off(sys, tuning)
    protos = tuner.platform_protocols(sys, protos)
    out = []
    for pi, proto in enumerate(PROTOS):
        if protos is not None and proto not in protos:
            continue
        if proto == "ll128" and ll128_off and protos is None:
            continue
        bw = _bandwidth(sys, proto, g, tuning, collective)
        if bw <= 0:
            continue
        lat, net = _latency(sys, pi, g, tuning)
        ch = g.runtime_channels or g.channels
        out.append(Candidate("ring", proto, lat, bw, lat + nbytes / (1000 * bw), ch, net, tuning.release))
    return out


def pick(collective: str, sys: System, nbytes: float, *args: Any, **kw: Any) -> Candidate:
    """NCCL's choice, :func:`candidates`' arguments (strict minimum, the first wins ties: ``min`` keeps the
    first of equals). A NET plugin's tuner is not consulted (as for all-gather and reduce-scatter)."""
    found = candidates(collective, sys, nbytes, *args, **kw)
    if not found:
        raise AlgorithmError("nccl: no protocol allowed here can run this collective")
    return min(found, key=lambda c: c.time_us)
