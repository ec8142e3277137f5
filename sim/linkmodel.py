"""The link model: what the simulator is told about the links beyond the topology's nominal figures.

A topology gives every link a bandwidth and a latency, and every GPU a per-message overhead; the
**nominal** model simulates with exactly those. A :class:`LinkModel` changes them per *link class*
(:mod:`sim.linkclass`: intra-host, same-switch, cross-switch, direct) and adds what a topology cannot say:

* per class, piecewise by message size (:class:`Segment`): the start delay α of a message (instead of
  the path's latency plus the sender's overhead; ``None`` keeps that) and the **efficiency** -- the
  share of a link's rate that reaches the application, so that a message of ``n`` bytes drains
  ``n / efficiency`` bytes at its max-min share;
* ``gamma``: the reduction cost in seconds per byte (the default of :func:`sim.simulate`);
* ``nccl_latency``: per NCCL protocol (``ll``, ``ll128``, ``simple``), the fixed cost in seconds that NCCL's
  schedules (``nccl``) charge before any data moves, in place of NCCL's own latency estimate
  (``tuning.cc``) less its hops between nodes: NCCL's per-hop NET latencies are added for the nodes the
  schedule spans, and the links' latencies are paid at every pipeline step as before;
* ``nccl_offset``: per NCCL protocol, seconds added to NCCL's own latency estimate less its hops between
  nodes (what a calibration fits: NCCL's per-algorithm, per-step structure kept, the machine's difference
  added; the sum is never below 0) -- the alternative to ``nccl_latency``, which replaces that part
  outright (a file may give one of the two);
* ``nccl_version``: the NCCL release whose schedules a calibration was fitted through -- the tuner the
  ``nccl`` schedules use where the algorithm names no ``version`` (:func:`sim.prepare`), so that a log's
  fit predicts through the release that ran it;
* sharing factors: ``duplex`` scales a link direction's capacity by the number of flows on its reverse
  direction, ``flows`` by the number of flows on it (TCP's measured departures from max-min).

It is the one interface calibration (``validate.calibration``) hands to the simulator: a calibration
file becomes a link model, given to :class:`~sim.cluster.Cluster` or to :func:`sim.prepare` /
:func:`sim.simulate` as ``link_model=``. Without one, :data:`NOMINAL` applies.

>>> from sim import simulate
>>> model = LinkModel(classes={"same-switch": (Segment(0, 4e-4, 0.95),)}, gamma=1.5e-10)
>>> nominal = simulate("netlab-star4", "sendrecv", "direct", 2**20).time_s
>>> modelled = simulate("netlab-star4", "sendrecv", "direct", 2**20, link_model=model).time_s
>>> round(nominal * 1e3, 3), round(modelled * 1e3, 3)     # 1 MiB at 25 MB/s; then 4e-4 + 1 MiB / (0.95 * 25 MB/s)
(41.943, 44.551)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError
from .linkclass import LINK_CLASSES

__all__ = ["MAX_EFFICIENCY", "MAX_GAMMA", "NCCL_PROTOCOLS", "NOMINAL", "LinkModel", "Segment"]

#: the protocols ``nccl_latency`` may name (sim/nccl/protocols.py)
NCCL_PROTOCOLS = ("ll", "ll128", "simple")
#: the largest NCCL base latency accepted, seconds
MAX_NCCL_LATENCY = 1.0

#: The largest reduction cost accepted, seconds per byte (a byte per second: slower than any processor).
MAX_GAMMA = 1.0
#: The largest efficiency a segment may claim (a size range where time hardly grows with size).
MAX_EFFICIENCY = 1000.0
#: Sharing factors are given for 1..MAX_FLOWS flows.
MAX_FLOWS = 4096


@dataclass(frozen=True)
class Segment:
    """Messages of ``min_bytes`` bytes and more (up to the next segment of the class).

    ``latency``: the start delay α in seconds, or None for the nominal one (path latency + sender
    overhead); ``efficiency``: the share of the link rate the message gets (wire bytes = n / efficiency).
    """

    min_bytes: float
    latency: float | None
    efficiency: float = 1.0


def _positive_finite(value: float, what: str, top: float = math.inf) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and 0 < value <= top):
        raise ConfigError(f"{what}: must be > 0 and <= {top:g}, got {value!r}")


@dataclass(frozen=True)
class LinkModel:
    """Per-class message parameters, γ and sharing factors (see the module docstring).

    Parameters
    ----------
    classes : mapping of link class -> tuple of Segment
        Segments ordered by ``min_bytes``, the first at 0. Classes not named stay nominal.
    gamma : float, optional
        Reduction cost, seconds per byte; None: not modelled (simulations default to 0).
    duplex, flows : mapping of int -> float
        Capacity factor by the number of flows on the reverse direction (duplex) or on the direction
        itself (flows); a count between keys takes the factor of the key below it.
    nccl_latency : mapping of str -> float
        Per NCCL protocol, the fixed cost of the ``nccl`` schedules (seconds).
    nccl_offset : mapping of str -> float
        Per NCCL protocol, seconds added to NCCL's estimate less its hops (may be negative).
    nccl_version : str, optional
        The NCCL release (``2.26.2``) the ``nccl`` schedules' tuner defaults to; None: the newest modelled.
    source : str
        Where the model came from, for headers and reports ("nominal", a calibration file's name).
    """

    classes: Mapping[str, tuple[Segment, ...]] = field(default_factory=dict)
    gamma: float | None = None
    duplex: Mapping[int, float] = field(default_factory=dict)
    flows: Mapping[int, float] = field(default_factory=dict)
    nccl_latency: Mapping[str, float] = field(default_factory=dict)
    nccl_offset: Mapping[str, float] = field(default_factory=dict)
    nccl_version: str | None = None
    source: str = "nominal"

    def __post_init__(self) -> None:
        for cls, segments in self.classes.items():
            if cls not in LINK_CLASSES:
                raise ConfigError(f"link_model: unknown link class {cls!r} (valid: {', '.join(LINK_CLASSES)})")
            if not segments:
                raise ConfigError(f"link_model.classes[{cls!r}]: give at least one segment")
            if segments[0].min_bytes != 0:
                raise ConfigError(f"link_model.classes[{cls!r}]: the first segment must start at 0 bytes")
            for i, seg in enumerate(segments):
                where = f"link_model.classes[{cls!r}][{i}]"
                if i and not seg.min_bytes > segments[i - 1].min_bytes:
                    raise ConfigError(f"{where}.min_bytes: must be more than the segment before")
                if seg.latency is not None and not (math.isfinite(seg.latency) and seg.latency >= 0):
                    raise ConfigError(f"{where}.latency: must be >= 0 seconds, got {seg.latency!r}")
                _positive_finite(seg.efficiency, f"{where}.efficiency", MAX_EFFICIENCY)
        if self.gamma is not None and not (math.isfinite(self.gamma) and 0 <= self.gamma <= MAX_GAMMA):
            raise ConfigError(f"gamma must be between 0 and {MAX_GAMMA:g} s/byte, got {self.gamma}")
        for name in ("duplex", "flows"):
            for count, factor in getattr(self, name).items():
                if not 1 <= count <= MAX_FLOWS:
                    raise ConfigError(f"link_model.{name}: keys are numbers of flows (1..{MAX_FLOWS}), got {count}")
                _positive_finite(factor, f"link_model.{name}[{count}]", MAX_EFFICIENCY)
        for proto, seconds in self.nccl_latency.items():
            if proto not in NCCL_PROTOCOLS:
                raise ConfigError(
                    f"link_model.nccl_latency: unknown protocol {proto!r} (valid: {', '.join(NCCL_PROTOCOLS)})"
                )
            ok = isinstance(seconds, int | float) and math.isfinite(seconds) and 0 <= seconds <= MAX_NCCL_LATENCY
            if not ok:
                raise ConfigError(
                    f"link_model.nccl_latency[{proto!r}]: must be between 0 and {MAX_NCCL_LATENCY:g} s, got {seconds!r}"
                )
        for proto, seconds in self.nccl_offset.items():
            if proto not in NCCL_PROTOCOLS:
                raise ConfigError(
                    f"link_model.nccl_offset: unknown protocol {proto!r} (valid: {', '.join(NCCL_PROTOCOLS)})"
                )
            ok = isinstance(seconds, int | float) and math.isfinite(seconds) and abs(seconds) <= MAX_NCCL_LATENCY
            if not ok:
                raise ConfigError(
                    f"link_model.nccl_offset[{proto!r}]: must be between -{MAX_NCCL_LATENCY:g} and "
                    f"{MAX_NCCL_LATENCY:g} s, got {seconds!r}"
                )
        if self.nccl_offset and self.nccl_latency:
            raise ConfigError("link_model: give nccl_latency or nccl_offset, not both")
        if self.nccl_version is not None:
            from .nccl.versions import parse_version

            try:
                parse_version(self.nccl_version)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"link_model.nccl_version: {exc}") from None

    @property
    def is_nominal(self) -> bool:
        """Whether the model changes nothing (the topology's own figures, γ unset)."""
        return (
            not self.classes
            and self.gamma is None
            and not self.duplex
            and not self.flows
            and not self.nccl_latency
            and not self.nccl_offset
            and self.nccl_version is None
        )

    @property
    def size_dependent(self) -> bool:
        """Whether some class's parameters change with the message size (more than one segment)."""
        return any(len(segments) > 1 for segments in self.classes.values())

    @property
    def shares(self) -> bool:
        """Whether a link direction's capacity depends on the flows around it (duplex or flows factors)."""
        return bool(self.duplex) or bool(self.flows)

    def describe(self) -> dict[str, Any]:
        """The model as plain data (for JSON records and reports)."""
        return {
            "source": self.source,
            "classes": {
                cls: [{"min_bytes": s.min_bytes, "latency": s.latency, "efficiency": s.efficiency} for s in segs]
                for cls, segs in self.classes.items()
            },
            "gamma": self.gamma,
            "duplex": dict(self.duplex),
            "flows": dict(self.flows),
            "nccl_latency": dict(self.nccl_latency),
            "nccl_offset": dict(self.nccl_offset),
            "nccl_version": self.nccl_version,
        }


#: The default: the topology's own latencies, bandwidths and overheads; γ unset.
NOMINAL = LinkModel()
