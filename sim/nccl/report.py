"""NCCL's pick beside a simulated row, as ``NCCL_DEBUG=INFO`` prints it with each collective."""

from __future__ import annotations

import json
from typing import Any

from ..results import SimResult, nccl_row
from .agrs import NCCL_NAMES  # the tuner's names and PAT

__all__ = ["pick_of", "row_with_pick"]

_PROTOS = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}


def pick_of(algo: Any, p: int, nbytes: float, cluster: Any) -> dict[str, Any] | None:
    """``{"algorithm", "protocol", "channels", "nccl_estimate_us", "tuner"}`` (the NCCL release whose tuner
    picked; ``picked_by`` too where a NET plugin's own tuner chose) for an algorithm that has NCCL's
    tuner behind it (``nccl``), else None. NCCL's p2p path (all-to-all, send/recv) has no tuner:
    ``{"algorithm": "P2P", "protocol", "channels" (a peer), "p2p_channels", "pxn", "charged_us", "tuner"}``."""
    choice = getattr(algo, "choice", None)
    if choice is None or p < 2:
        return None
    c = choice(p, nbytes, cluster)
    if hasattr(c, "pxn"):  # NCCL's p2p path (sim.nccl.p2p.P2pPick): no tuner, no estimate of NCCL's
        return {
            "algorithm": "P2P",
            "protocol": "+".join(_PROTOS.get(x, x) for x in c.protocol.split("+")),
            "channels": c.channels,
            "p2p_channels": c.p2p_channels,
            "pxn": c.pxn,
            "charged_us": round(c.latency_us, 3),
            "tuner": c.tuner,
        }
    pick = {
        "algorithm": NCCL_NAMES.get(c.algorithm, c.algorithm),
        "protocol": _PROTOS.get(c.protocol, c.protocol),
        "channels": c.channels,
        "nccl_estimate_us": round(c.time_us, 3),
        "tuner": c.tuner,
    }
    if getattr(c, "picked_by", ""):  # a NET plugin's own tuner chose (sim.nccl.tuner.plugin_pick)
        pick["picked_by"] = c.picked_by
    return pick


def row_with_pick(r: SimResult, algo: Any, cluster: Any, as_json: bool) -> str:
    """The table row (or JSON line) of ``r``, with NCCL's pick where there is one (a comment line after
    the row; a ``nccl`` object in JSON)."""
    pick = pick_of(algo, r.ranks, r.size_bytes, cluster)
    if as_json:
        if pick is None:
            return r.to_json()
        record = json.loads(r.to_json())
        record["nccl"] = pick
        return json.dumps(record, allow_nan=False)
    row = nccl_row(r)
    if pick is None:
        return row
    # a comment line of its own, as NCCL_DEBUG=INFO prints its choice: the row keeps nccl-tests' columns
    if "pxn" in pick:
        return (
            f"{row}\n#   NCCL: {pick['algorithm']}/{pick['protocol']}, {pick['channels']} channel"
            f"{'s' if pick['channels'] != 1 else ''} a peer of {pick['p2p_channels']}, {'PXN' if pick['pxn'] else 'no PXN'}; charged {pick['charged_us']:.1f} us "
            f"(one hop: NCCL's tuner prices no p2p); NCCL {pick['tuner']}"
        )
    who = f"picked by {pick['picked_by']} in NCCL" if "picked_by" in pick else "tuner of NCCL"
    return (
        f"{row}\n#   NCCL: {pick['algorithm']}/{pick['protocol']}, {pick['channels']} channels, "
        f"NCCL's estimate {pick['nccl_estimate_us']:.1f} us; {who} {pick['tuner']}"
    )
