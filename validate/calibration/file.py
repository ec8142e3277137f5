"""Calibration files: measured link-class parameters, and the link model they give the simulator.

A calibration file (YAML, or JSON when its name ends in ``.json``) holds, per link class
(:mod:`sim.linkclass`), the fitted per-message latency α, the bandwidth as an **efficiency** relative to
the nominal link rate (so that it transfers to links of other rates), optional piecewise **segments** by
message size (SimGrid/SMPI style: each with its own α and efficiency), the reduction cost γ, the
fit quality, the runs it came from, and ``calibrated``: the parameters that were fitted and are applied.
Everything not listed stays nominal (the topology's own latencies, bandwidths and overheads).

:meth:`Calibration.link_model` is the one place a calibration meets the simulator: it turns what is
listed in ``calibrated`` into a :class:`sim.linkmodel.LinkModel`, which the caller hands to
:class:`~sim.cluster.Cluster` or :func:`sim.prepare` / :func:`sim.simulate` as ``link_model=``.

>>> cal = Calibration.model_validate({
...     "topology": "netlab-star4",
...     "classes": {"same-switch": {"latency": 4e-4, "efficiency": 0.95}},
...     "gamma": 1.5e-10,
...     "calibrated": ["same-switch.latency", "same-switch.efficiency", "gamma"]})
>>> model = cal.link_model()
>>> model.gamma, model.classes["same-switch"]
(1.5e-10, (Segment(min_bytes=0.0, latency=0.0004, efficiency=0.95),))

A message of ``n`` bytes on a path of a calibrated class then starts after α (instead of the path's
latency plus the sender's overhead) and drains ``n / efficiency`` bytes at its max-min share -- the
header-and-protocol overhead a real transport pays on the wire:

>>> from sim import simulate
>>> nominal = simulate("netlab-star4", "sendrecv", "direct", 2**20).time_s
>>> calibrated = simulate("netlab-star4", "sendrecv", "direct", 2**20, link_model=model).time_s
>>> round(nominal * 1e3, 3), round(calibrated * 1e3, 3)     # 1 MiB at 25 MB/s; then 4e-4 + 1 MiB / (0.95 * 25 MB/s)
(41.943, 44.551)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from sim import files
from sim.errors import CalibrationError, ConfigError, one_line
from sim.linkclass import LINK_CLASSES
from sim.linkmodel import MAX_EFFICIENCY, MAX_NCCL_LATENCY, LinkModel
from sim.linkmodel import Segment as ModelSegment
from sim.nccl.versions import Release
from sim.schema import Bandwidth, Spec, Time, check_kind, validate_spec
from sim.topology.load import read_yaml

__all__ = [
    "Calibration",
    "ClassCalibration",
    "FitQuality",
    "Residual",
    "Segment",
    "Source",
    "atomic_write",
    "load_calibration",
    "nominal_parameters",
    "save_calibration",
]

FORMAT = "collsim-calibration"
#: calibration files larger than this are refused (a real one is a few KiB)
MAX_FILE_BYTES = 16 * 2**20
#: the most segments of a link class (a fit makes a handful; each message looks its size up among them)
MAX_SEGMENTS = 1024
#: the most residuals a fit records
MAX_RESIDUALS = 100_000

Efficiency = Annotated[float, Field(gt=0, le=MAX_EFFICIENCY, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
NcclLatency = Annotated[float, Field(ge=0, le=MAX_NCCL_LATENCY, allow_inf_nan=False)]
NcclOffset = Annotated[float, Field(ge=-MAX_NCCL_LATENCY, le=MAX_NCCL_LATENCY, allow_inf_nan=False)]


class Segment(Spec):
    """Messages of ``min_bytes`` bytes and more (up to the next segment): α and efficiency."""

    min_bytes: NonNegative
    latency: Time
    efficiency: Efficiency


class Residual(Spec):
    size_bytes: NonNegative
    measured_s: NonNegative
    fitted_s: NonNegative
    rel: Finite


class FitQuality(Spec):
    """How well the fitted model reproduces the points it was fitted to (relative residuals)."""

    points: int = Field(ge=0)
    r2: Finite | None = None
    rms_rel: NonNegative = 0.0
    max_rel: NonNegative = 0.0
    residuals: list[Residual] = Field(default_factory=list, max_length=MAX_RESIDUALS)


class ClassCalibration(Spec):
    """One link class. Only what ``Calibration.calibrated`` names is applied; the rest is a record."""

    latency: Time | None = None
    efficiency: Efficiency | None = None
    bandwidth: Bandwidth | None = None
    nominal_bandwidth: Bandwidth | None = None
    segments: list[Segment] = Field(default_factory=list, max_length=MAX_SEGMENTS)
    sharing: dict[int, Efficiency] = Field(default_factory=dict)
    duplex: Efficiency | None = None
    dense: dict[int, Efficiency] = Field(default_factory=dict)
    fit: FitQuality | None = None
    pair: list[int] | None = None

    @field_validator("segments")
    @classmethod
    def _ordered(cls, value: list[Segment]) -> list[Segment]:
        if value and value[0].min_bytes != 0:
            raise ValueError(f"the first segment must start at min_bytes 0, got {value[0].min_bytes:g}")
        for a, b in zip(value, value[1:], strict=False):
            if not b.min_bytes > a.min_bytes:
                raise ValueError(f"min_bytes must increase from segment to segment ({a.min_bytes:g}, {b.min_bytes:g})")
        return value

    @field_validator("sharing", "dense")
    @classmethod
    def _fans(cls, value: dict[int, float]) -> dict[int, float]:
        bad = [k for k in value if k < 1]
        if bad:
            raise ValueError(f"keys are numbers of flows (>= 1), got {bad[0]}")
        return value


class Source(Spec):
    """One input a calibration was fitted from."""

    kind: Literal["probes", "validate", "nccl-tests", "nccl-tests-json"]
    path: str
    run_ids: list[str] = Field(default_factory=list)
    records: int = Field(default=0, ge=0)
    detail: str = ""
    #: NCCL settings the log states that the model does not represent (``NCCL_MIN_CTAS=24``, ...)
    unmodelled: list[str] = Field(default_factory=list)


ClassName = Literal["intra-host", "same-switch", "cross-switch", "direct"]
_PARAMS = ("latency", "efficiency", "segments")


class Calibration(Spec):
    """A calibration file (see the module docstring)."""

    format: Literal["collsim-calibration"] = FORMAT
    version: Literal[1] = 1
    topology: str = Field(min_length=1)
    created: str = ""
    sources: list[Source] = Field(default_factory=list)
    classes: dict[ClassName, ClassCalibration] = Field(default_factory=dict)
    gamma: NonNegative | None = None
    gamma_fit: FitQuality | None = None
    duplex: dict[int, Efficiency] = Field(default_factory=dict)
    flows: dict[int, Efficiency] = Field(default_factory=dict)
    #: per NCCL protocol the fixed cost in place of NCCL's estimate less its hops (files before nccl_offset)
    nccl_latency: dict[Literal["ll", "ll128", "simple"], NcclLatency] = Field(default_factory=dict)
    #: per NCCL protocol the seconds added to NCCL's estimate less its hops (what the fit writes)
    nccl_offset: dict[Literal["ll", "ll128", "simple"], NcclOffset] = Field(default_factory=dict)
    #: the NCCL release whose schedules the nccl-tests times were fitted through (the one the log states):
    #: the ``nccl`` schedules' default tuner under this calibration
    nccl_version: Release | None = None
    calibrated: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @field_validator("duplex", "flows")
    @classmethod
    def _counts(cls, value: dict[int, float]) -> dict[int, float]:
        bad = [k for k in value if not 1 <= k <= 4096]
        if bad:
            raise ValueError(f"keys are numbers of flows (1..4096), got {bad[0]}")
        return dict(sorted(value.items()))

    @model_validator(mode="after")
    def _listed_exist(self) -> Calibration:
        if "nccl_latency" in self.calibrated and "nccl_offset" in self.calibrated:
            raise ValueError(
                "calibrated: list nccl_latency or nccl_offset, not both (one replaces NCCL's fixed cost, the other corrects it)"
            )
        seen: set[str] = set()
        for i, name in enumerate(self.calibrated):
            if name in seen:
                raise ValueError(f"calibrated[{i}]: {name!r} is listed twice")
            seen.add(name)
            if name in ("gamma", "duplex", "flows", "nccl_latency", "nccl_offset"):
                if getattr(self, name) is None or getattr(self, name) == {}:
                    raise ValueError(f"calibrated[{i}]: {name!r} is listed but {name} has no value")
                continue
            cls, _, param = name.partition(".")
            if cls not in LINK_CLASSES or param not in _PARAMS:
                valid = ", ".join(f"CLASS.{p}" for p in _PARAMS)
                raise ValueError(
                    f"calibrated[{i}]: {name!r} is not a parameter (valid: gamma, duplex, flows, nccl_latency, nccl_offset, {valid}; "
                    f"classes: {', '.join(LINK_CLASSES)})"
                )
            entry = self.classes.get(cls)  # type: ignore[call-overload]
            value = None if entry is None else getattr(entry, param)
            if value is None or value == []:
                raise ValueError(f"calibrated[{i}]: {name!r} is listed but classes.{cls}.{param} has no value")
        return self

    def applied(self, cls: str) -> tuple[float | None, float | None, list[Segment]]:
        """(latency or None, efficiency or None, segments) applied to messages of class ``cls``."""
        entry = self.classes.get(cls)  # type: ignore[call-overload]
        if entry is None:
            return None, None, []
        if f"{cls}.segments" in self.calibrated:
            return None, None, list(entry.segments)
        latency = entry.latency if f"{cls}.latency" in self.calibrated else None
        efficiency = entry.efficiency if f"{cls}.efficiency" in self.calibrated else None
        return latency, efficiency, []

    @property
    def run_ids(self) -> set[str]:
        return {rid for source in self.sources for rid in source.run_ids if rid}

    def link_model(self, source: str | None = None) -> LinkModel:
        """What this calibration applies, as the simulator's link model: per class the listed segments,
        latency and efficiency (the rest nominal), γ, and the duplex / flows factors -- only what
        ``calibrated`` names. ``source`` names the model in headers (default: the fitted topology)."""
        classes: dict[str, tuple[ModelSegment, ...]] = {}
        for cls in self.classes:
            latency, efficiency, segments = self.applied(cls)
            if segments:
                classes[cls] = tuple(ModelSegment(s.min_bytes, s.latency, s.efficiency) for s in segments)
            elif latency is not None or efficiency is not None:
                classes[cls] = (ModelSegment(0.0, latency, 1.0 if efficiency is None else efficiency),)
        return LinkModel(
            classes=classes,
            gamma=self.gamma if "gamma" in self.calibrated else None,
            duplex=dict(self.duplex) if "duplex" in self.calibrated else {},
            flows=dict(self.flows) if "flows" in self.calibrated else {},
            nccl_latency=dict(self.nccl_latency) if "nccl_latency" in self.calibrated else {},
            nccl_offset=dict(self.nccl_offset) if "nccl_offset" in self.calibrated else {},
            nccl_version=self.nccl_version,
            source=source or f"calibration of {self.topology}",
        )


def nominal_parameters(cal: Calibration, classes: list[str] | None = None) -> list[str]:
    """What stays nominal under ``cal``, in words, for reports (``classes``: those the cluster has)."""
    out = []
    for cls in classes if classes is not None else list(LINK_CLASSES):
        latency, efficiency, segments = cal.applied(cls)
        if segments:
            continue
        missing = [name for name, value in (("latency", latency), ("bandwidth", efficiency)) if value is None]
        if missing:
            out.append(f"{cls}.{' and '.join(missing)} (topology's nominal values)")
    if "gamma" not in cal.calibrated:
        out.append("gamma (0 unless given)")
    if "duplex" not in cal.calibrated:
        out.append("a link direction's rate does not depend on traffic in the other direction")
    if "flows" not in cal.calibrated:
        out.append("flows share a link direction max-min fair at its full rate, however many")
    if "nccl_latency" not in cal.calibrated and "nccl_offset" not in cal.calibrated:
        out.append("NCCL's base latencies (tuning.cc) for the nccl schedules")
    return out


# -- reading and writing ------------------------------------------------------------------------


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A json object_pairs_hook that refuses a key given twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CalibrationError(f"duplicate key {key!r}")
        out[key] = value
    return out


def loads_strict(text: str, what: str, *, line: bool = True) -> Any:
    """JSON as calibration reads it: no key twice, no NaN or Infinity (``what`` says what they are
    not), integers bounded before they are converted; every problem one :class:`CalibrationError`
    (naming the line where ``line``)."""

    def no_constant(name: str) -> Any:
        raise CalibrationError(f"{name} is not {what}")

    try:
        return json.loads(
            text,
            object_pairs_hook=no_duplicate_keys,
            parse_constant=no_constant,
            parse_int=files.int_parser(CalibrationError),
        )
    except json.JSONDecodeError as exc:
        raise CalibrationError(
            f"line {exc.lineno}: invalid JSON ({exc.msg})" if line else f"not JSON ({exc.msg})"
        ) from None
    except RecursionError:
        raise CalibrationError("JSON nested too deeply") from None


def load_calibration(path: str | os.PathLike[str]) -> Calibration:
    """Read and validate a calibration file; every problem is one :class:`CalibrationError` line."""
    p = Path(path)
    is_json = p.suffix.lower() == ".json"
    text = files.read_text(p, limit=MAX_FILE_BYTES, error=CalibrationError, noun="calibration file") if is_json else ""
    try:
        if is_json:
            data = loads_strict(text, "a number calibration accepts")
        else:
            data = read_yaml(p, noun="calibration file")
    except CalibrationError as exc:
        raise CalibrationError(f"{p}: {exc}") from None
    except ConfigError as exc:
        raise CalibrationError(str(exc)) from None
    except OSError as exc:
        raise CalibrationError(f"{p}: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise CalibrationError(f"{p}: expected a mapping at the top level, got {type(data).__name__}")
    if data.get("format") not in (None, FORMAT):
        raise CalibrationError(f"{p}: format: expected {FORMAT!r}, got {str(data.get('format'))[:40]!r}")
    try:
        check_kind(Calibration, data, "calibration")
        return validate_spec(Calibration, data)  # type: ignore[no-any-return]
    except ConfigError as exc:
        raise CalibrationError(f"{p}: {one_line(str(exc).removeprefix('(top level): '))}") from None


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise CalibrationError(f"cannot write a non-finite number ({value}) to a calibration file")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def save_calibration(cal: Calibration, path: str | os.PathLike[str]) -> Path:
    """Write ``cal`` (JSON for ``*.json``, else YAML) atomically: a temporary file, then a rename."""
    import yaml

    p = Path(path)
    data = _json_safe(cal.model_dump(mode="json", exclude_none=True))
    if p.suffix.lower() == ".json":
        text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    else:
        text = "# collsim calibration file (docs/calibration.md)\n" + yaml.safe_dump(data, sort_keys=False, width=120)
    atomic_write(p, text.encode("utf-8"))
    return p


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, push it to disk, then rename it over ``path``:
    a reader sees the old file or the whole new one, never a part (permissions as a new file's)."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
