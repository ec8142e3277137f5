"""Results as flat, frozen records, and their renderings: nccl-tests' table and JSON lines.

Reports, plots and CSV read these records only, never the simulator's internals.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["LinkUse", "SimResult", "json_safe", "nccl_header", "nccl_row"]


@dataclass(frozen=True)
class LinkUse:
    """Traffic on one link direction during a collective."""

    link: str
    bytes: float
    utilization: float


@dataclass(frozen=True)
class SimResult:
    """One simulated collective (one size).

    ``size_bytes`` follows nccl-tests (per-rank buffer for all-reduce, total for the gathering
    collectives); ``algbw_GBps`` = size / time in GB/s (1e9), ``busbw_GBps`` = algbw x the collective's
    bus factor. ``link_bytes`` sums the bytes carried over every link direction;
    ``max_link_utilization`` is the busiest direction's bytes / (capacity x time).

    Traffic at the endpoints (seed 003's comparison): ``traffic_bytes`` sums the bytes of every message
    (each counted once, however many links it crosses); ``max_sent_bytes`` / ``max_received_bytes`` are
    the most any one endpoint (a rank, or a dedicated server) sent / received; ``root_sent_bytes`` /
    ``root_received_bytes`` are those of rank ``root`` (the master of master-worker, the tree root).
    """

    topology: str
    collective: str
    algorithm: str
    ranks: int
    size_bytes: int
    count: int
    dtype: str
    root: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    link_bytes: float
    max_link_utilization: float
    busiest_link: str
    wrong: int | None = None
    closed_form_s: float | None = None
    busiest_links: tuple[LinkUse, ...] = field(default=(), repr=False)
    wall_s: float = 0.0
    events: int = 0
    flows: int = 0
    engine: str = "message"  # or "fast:maxplus" / "fast:events" (sim.fastpath), "fast:dataflow" (sim.dataflow)
    traffic_bytes: float = 0.0
    max_sent_bytes: float = 0.0
    max_received_bytes: float = 0.0
    root_sent_bytes: float = 0.0
    root_received_bytes: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["busiest_links"] = [asdict(link) for link in self.busiest_links]
        return out

    def to_json(self) -> str:
        """One line of JSON; a value that is not a finite number (the algbw of a collective that took no
        time, on one rank) is ``null``."""
        return json.dumps(json_safe(self.to_dict()), allow_nan=False)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float, however deeply nested, replaced by None (JSON has no inf)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def nccl_header() -> str:
    """nccl-tests' column header."""
    return (
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
    )


def nccl_row(r: SimResult, redop: str = "sum") -> str:
    """One row in nccl-tests' columns."""
    wrong = "N/A" if r.wrong is None else str(r.wrong)
    root = r.root if r.collective in ("broadcast", "reduce", "gather", "scatter") else -1
    op = redop if r.collective in ("allreduce", "reduce", "reducescatter") else "none"
    return (
        f"{r.size_bytes:12d}  {r.count:12d}  {r.dtype:>8s}  {op:>6s}  {root:6d}  "
        f"{_us(r.time_s):>7s}  {r.algbw_GBps:6.2f}  {r.busbw_GBps:6.2f}  {wrong:>6s}"
    )


def _us(seconds: float) -> str:
    """Microseconds the way nccl-tests prints them: more decimals for short times."""
    us = seconds * 1e6
    if us < 1e4:
        return f"{us:.2f}"
    if us < 1e6:
        return f"{us:.1f}"
    return f"{us:.0f}"
