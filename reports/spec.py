"""The report spec: a YAML file naming the training job, the cluster sizes, the algorithms to compare,
DDP's bucketing and the message-size sweep. Validated by a schema; errors are one path-qualified line.

>>> spec = parse_spec({"job": {"parameters": "25.6M", "compute_time": "120ms"},
...                    "cluster": {"builder": "star", "params": {"bandwidth": "25Gbps"}, "sizes": "4..16"}})
>>> spec.job.total_gradient_bytes, round(spec.job.forward_s, 6), spec.cluster_sizes
(102400000.0, 0.04, [4, 8, 16])
>>> parse_spec({"job": {"parameters": 1e6}, "cluster": {"topology": "netlab-star4"}})
Traceback (most recent call last):
...
sim.errors.ConfigError: job: give compute_time, or flops_per_iteration with gpu_peak_flops and utilization
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator, model_validator

from sim.algorithms import algorithm_names, get_algorithm
from sim.errors import AlgorithmError, ConfigError
from sim.schema import PositiveSize, Spec, Time, check_kind, validate_spec
from sim.simulate import MAX_GAMMA
from sim.topology.load import read_yaml
from sim.units import MAX_SIZE, MAX_SWEEP, parse_size_range

__all__ = [
    "BUNDLED_SPECS",
    "DTYPE_BYTES",
    "ClusterSpec",
    "DdpSpec",
    "JobSpec",
    "ReportSpec",
    "SweepSpec",
    "bundled_specs",
    "load_spec",
    "parse_count",
    "parse_flops",
    "parse_gpu_sizes",
    "parse_spec",
]

#: where the bundled report specs live (``collsim report default`` reads ``default.yaml`` from here)
BUNDLED_SPECS = Path(__file__).resolve().parent / "specs"

#: bytes per gradient element
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4,
    "float32": 4,
    "float": 4,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "bf16": 2,
    "bfloat16": 2,
    "fp8": 1,
    "fp64": 8,
    "float64": 8,
    "double": 8,
}

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "b": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_NUMBER = r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_COUNT = re.compile(rf"^\s*{_NUMBER}\s*([kKmMgGbBtT]?)\s*$")
_FLOPS = re.compile(rf"^\s*{_NUMBER}\s*([kKmMgGtTpPeE]?)\s*(?:flops?|flop/s)?\s*$", re.IGNORECASE)


def _number(value: Any, pattern: re.Pattern[str], what: str, example: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number or a string like {example}, got {value!r}")
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str) and (match := pattern.match(value)):
        result = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
    else:
        raise ValueError(f"cannot read {value!r} as {what} (expected e.g. {example})")
    if not (math.isfinite(result) and result > 0):
        raise ValueError(f"must be > 0, got {value!r}")
    return result


def parse_count(value: Any) -> float:
    """A count with an optional decimal suffix: ``25.6M``, ``1.3B`` (billions), ``7e9``.

    >>> parse_count("1.3B"), parse_count("25.6M"), parse_count(1000)
    (1300000000.0, 25600000.0, 1000.0)
    """
    return _number(value, _COUNT, "a count", "'25.6M', '1.3B', 7e9")


def parse_flops(value: Any) -> float:
    """Floating-point operations (or per second): ``312TFLOPS``, ``1.2PFLOP``, ``4e15``.

    >>> parse_flops("312TFLOPS") == 312e12, parse_flops("4.5PFLOP") == parse_flops(4.5e15)
    (True, True)
    """
    return _number(value, _FLOPS, "FLOPs", "'312TFLOPS', '1.2PFLOP', 4e15")


def parse_gpu_sizes(value: Any) -> list[int]:
    """Cluster sizes in GPUs: ``"8..16384"`` (powers of two), ``"8..64:4"`` (factor 4), ``"8,24,32"``
    or a list.

    >>> parse_gpu_sizes("8..64"), parse_gpu_sizes("4..64:4"), parse_gpu_sizes([32, 8, 8])
    ([8, 16, 32, 64], [4, 16, 64], [8, 32])
    """
    if isinstance(value, int) and not isinstance(value, bool):
        items: list[Any] = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str) and ".." in value:
        low_text, _, rest = value.partition("..")
        high_text, _, factor_text = rest.partition(":")
        try:
            low, high = int(low_text), int(high_text)
            factor = int(factor_text) if factor_text else 2
        except ValueError:
            raise ValueError(f"expected MIN..MAX[:FACTOR] in GPUs, e.g. '8..1024', got {value!r}") from None
        if not 1 <= low <= high or factor < 2:
            raise ValueError(f"need 1 <= MIN <= MAX and FACTOR >= 2, got {value!r}")
        items = []
        size = low
        while size <= high:
            items.append(size)
            size *= factor
    elif isinstance(value, str):
        items = [part.strip() for part in value.split(",") if part.strip()]
    else:
        raise ValueError(f"expected a list of GPU counts or 'MIN..MAX', got {value!r}")
    sizes = set()
    for item in items:
        try:
            size = int(item)
        except (TypeError, ValueError):
            raise ValueError(f"expected whole GPU counts, got {item!r}") from None
        if isinstance(item, float) and item != size or size < 1:
            raise ValueError(f"expected GPU counts >= 1, got {item!r}")
        sizes.add(size)
    if not sizes:
        raise ValueError("needs at least one size")
    return sorted(sizes)


class JobSpec(Spec):
    """The training job, per GPU and per iteration."""

    name: str = "model"
    parameters: float | None = None
    gradient_dtype: str = "fp32"
    gradient_bytes: PositiveSize | None = None
    compute_time: Time | None = None
    flops_per_iteration: float | None = None
    gpu_peak_flops: float | None = None
    utilization: float | None = Field(default=None, gt=0, le=1)
    forward_fraction: float = Field(default=1 / 3, gt=0, lt=1)
    optimizer_time: Time = 0.0
    samples_per_gpu: float = Field(default=1.0, gt=0, allow_inf_nan=False)

    @field_validator("parameters", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        return None if value is None else parse_count(value)

    @field_validator("flops_per_iteration", "gpu_peak_flops", mode="before")
    @classmethod
    def _flops(cls, value: Any) -> Any:
        return None if value is None else parse_flops(value)

    @field_validator("gradient_dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        if value.lower() not in DTYPE_BYTES:
            raise ValueError(f"unknown dtype {value!r} (valid: {', '.join(DTYPE_BYTES)})")
        return value.lower()

    @model_validator(mode="after")
    def _one_of_each(self) -> JobSpec:
        if (self.parameters is None) == (self.gradient_bytes is None):
            raise ValueError("give parameters (with gradient_dtype) or gradient_bytes, not both or neither")
        by_flops = (self.flops_per_iteration, self.gpu_peak_flops, self.utilization)
        if self.compute_time is not None and any(v is not None for v in by_flops):
            raise ValueError("give compute_time or flops_per_iteration/gpu_peak_flops/utilization, not both")
        if self.compute_time is None and any(v is None for v in by_flops):
            raise ValueError("give compute_time, or flops_per_iteration with gpu_peak_flops and utilization")
        return self

    @property
    def total_gradient_bytes(self) -> float:
        if self.gradient_bytes is not None:
            return float(self.gradient_bytes)
        assert self.parameters is not None
        return self.parameters * DTYPE_BYTES[self.gradient_dtype]

    @property
    def compute_s(self) -> float:
        """Forward + backward seconds per iteration per GPU."""
        if self.compute_time is not None:
            return float(self.compute_time)
        assert self.flops_per_iteration and self.gpu_peak_flops and self.utilization
        return self.flops_per_iteration / (self.gpu_peak_flops * self.utilization)

    @property
    def forward_s(self) -> float:
        return self.compute_s * self.forward_fraction

    @property
    def backward_s(self) -> float:
        return self.compute_s - self.forward_s


class ClusterSpec(Spec):
    """The clusters: a builder scaled to every size, one topology used at several sizes (its first N
    GPUs), or a list of topologies used whole."""

    builder: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    topology: str | None = None
    topologies: list[str] | None = Field(default=None, min_length=1)
    sizes: list[int] | None = None

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        return None if value is None else parse_gpu_sizes(value)

    @model_validator(mode="after")
    def _one_form(self) -> ClusterSpec:
        forms = [name for name in ("builder", "topology", "topologies") if getattr(self, name) is not None]
        if len(forms) != 1:
            raise ValueError("give exactly one of builder (+ params, sizes), topology (+ sizes) or topologies")
        if self.builder is not None and self.sizes is None:
            raise ValueError("sizes: required with builder (e.g. sizes: 8..1024)")
        if self.topologies is not None and self.sizes is not None:
            raise ValueError("sizes: not used with topologies (each topology is used whole)")
        if self.params and self.builder is None:
            raise ValueError("params: only meaningful with builder")
        return self


class DdpSpec(Spec):
    """PyTorch DDP's gradient bucketing."""

    bucket_size: PositiveSize = 25 * 2**20
    first_bucket: PositiveSize = 1 * 2**20
    overlap: bool = True
    concurrent_buckets: bool = False  # NCCL's one stream per communicator: DDP's all-reduces run in order


class SweepSpec(Spec):
    """The collective sweep behind the bus-bandwidth curves and the crossover map."""

    message_sizes: list[Annotated[int, Field(ge=1, le=int(MAX_SIZE))]] = Field(
        default_factory=lambda: parse_size_range("4KiB:256MiB:4"), max_length=MAX_SWEEP
    )

    @field_validator("message_sizes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return parse_size_range(value, "message_sizes")
            except ConfigError as exc:
                raise ValueError(str(exc).removeprefix("message_sizes: ")) from None
        return value


def _algorithm(spec: str) -> str:
    try:
        return get_algorithm("allreduce", spec).spec
    except AlgorithmError as exc:
        raise ValueError(str(exc)) from None


AlgorithmSpec = Annotated[str, AfterValidator(_algorithm)]


class ReportSpec(Spec):
    """A capacity report: what to simulate and compare."""

    name: str = "capacity report"
    description: str = ""
    job: JobSpec
    cluster: ClusterSpec
    algorithms: list[AlgorithmSpec] | None = Field(default=None, min_length=1)
    ddp: DdpSpec = DdpSpec()
    sweep: SweepSpec = SweepSpec()
    gamma: float = Field(default=0.0, ge=0, le=MAX_GAMMA)
    calibration: str | None = None  # a calibration file (validate.calibration), applied to every cluster
    tolerance: float = Field(default=0.05, gt=0, lt=1)
    #: seconds of wall clock one point may take; a point still running then is recorded as failed with
    #: the reason (not cached: a rerun tries it again) and the report goes on. None: no limit
    point_limit: Time | None = None

    @field_validator("point_limit")
    @classmethod
    def _limit(cls, value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise ValueError(f"must be > 0 seconds, got {value:g}")
        return value

    @field_validator("algorithms")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            twice = next(a for a in value if value.count(a) > 1)
            raise ValueError(f"{twice!r} is listed twice")
        return value

    @property
    def algorithm_specs(self) -> list[str]:
        """The algorithms to compare: the listed ones, or every registered all-reduce algorithm."""
        return list(self.algorithms) if self.algorithms else algorithm_names("allreduce")

    @property
    def cluster_sizes(self) -> list[int] | None:
        """The sizes in GPUs (None for ``topologies``, whose sizes are their GPU counts)."""
        return self.cluster.sizes

    @property
    def parameters_label(self) -> str:
        """``nominal`` unless a calibration was applied (every number in the report carries it)."""
        return "nominal" if self.calibration is None else "calibrated"

    @property
    def effective_gamma(self) -> float:
        """γ: the spec's own when it sets one, else the calibration's (when it calibrated γ), else 0."""
        if "gamma" in self.model_fields_set or self.calibration is None:
            return self.gamma
        from validate.calibration import load_calibration

        cal = load_calibration(self.calibration)
        return float(cal.gamma) if "gamma" in cal.calibrated and cal.gamma is not None else self.gamma


def parse_spec(data: Any, base_dir: str | Path = ".", where: str = "") -> ReportSpec:
    """Validate a spec given as a mapping (relative paths are taken from ``base_dir``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'spec'}: expected a mapping at the top level, got {type(data).__name__}")
    prefix = f"{where}: " if where else ""
    try:
        if where:  # a file: one of another kind is not echoed
            check_kind(ReportSpec, data, "report spec")
        spec: ReportSpec = validate_spec(ReportSpec, data)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc}") from None
    spec = spec.model_copy(update={"cluster": _resolve_paths(spec.cluster, Path(base_dir))})
    if spec.calibration is not None:
        from sim.errors import CalibrationError
        from validate.calibration import load_calibration

        path = Path(base_dir) / spec.calibration
        if not path.is_file():
            raise ConfigError(f"{prefix}calibration: no such file {str(path)!r}")
        try:
            load_calibration(path)
        except CalibrationError as exc:
            raise ConfigError(f"{prefix}calibration: {exc}") from None
        spec = spec.model_copy(update={"calibration": str(path.resolve())})
    return spec


def _resolve_paths(cluster: ClusterSpec, base: Path) -> ClusterSpec:
    """Topology files named relative to the spec file are read from beside it."""

    def resolve(name: str) -> str:
        candidate = base / name
        return str(candidate) if not Path(name).is_absolute() and candidate.is_file() else name

    update: dict[str, Any] = {}
    if cluster.topology is not None:
        update["topology"] = resolve(cluster.topology)
    if cluster.topologies is not None:
        update["topologies"] = [resolve(t) for t in cluster.topologies]
    return cluster.model_copy(update=update)


def bundled_specs() -> dict[str, Path]:
    """Name -> path of the bundled report specs (``default`` is the one ``make demo`` runs)."""
    return {p.stem: p for p in sorted(BUNDLED_SPECS.glob("*.yaml"))}


def load_spec(source: str | Path) -> tuple[ReportSpec, Path]:
    """Read a spec file (or a bundled spec's name); returns the spec and the file it came from."""
    path = Path(source)
    if not path.exists() and str(source) in bundled_specs():
        path = bundled_specs()[str(source)]
    elif not path.exists():
        names = ", ".join(bundled_specs()) or "none"
        raise ConfigError(f"{source}: no such report spec (not a file, nor a bundled spec: {names})")
    return parse_spec(read_yaml(path), path.parent, str(path)), path
