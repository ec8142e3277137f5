"""Measured results as flat, frozen records; nccl-tests' table rows (the simulator's renderer) and JSON
lines appended one per size, so that a run that dies keeps every size it finished. No torch here.

Timing: each rank times every iteration of the collective on its own clock, with no barrier between
iterations (one barrier before the timed loop, as nccl-tests); an iteration's time is the slowest rank's
(the collective is done when the last rank is). ``time_s`` is the median of those per-iteration times
over the ``iters`` timed iterations; ``time_min_s``, ``time_p99_s`` and ``time_mean_s`` (nccl-tests'
own figure is a mean) come with it, and ``times_s`` lists them all. ``algbw_GBps = size_bytes / time_s
/ 1e9`` and ``busbw_GBps`` applies nccl-tests' factor for the collective (:mod:`sim.collectives`).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from sim import files
from sim.collectives import get_collective
from sim.errors import ConfigError
from sim.results import nccl_row

__all__ = ["Measurement", "append_jsonl", "measurement", "read_measurements", "table_row"]


@dataclass(frozen=True)
class Measurement:
    """One size of a real run (the fields of a JSON line)."""

    collective: str
    algorithm: str
    backend: str
    ranks: int
    size_bytes: int
    count: int
    dtype: str
    root: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    wrong: int | None
    iters: int
    warmup: int
    time_min_s: float
    time_p99_s: float
    time_mean_s: float
    times_s: tuple[float, ...] = field(repr=False)
    run_id: str = ""
    source: str = "validate"
    environment: Mapping[str, Any] = field(default_factory=dict, repr=False)
    #: what NCCL ran for this size, from its TUNING log (``--nccl-picks 1``; validate/nccl_picks.py): the
    #: algorithm and protocol as the simulator names them, NCCL's names, and how many of the calls said so
    nccl_pick: Mapping[str, Any] | None = None

    @property
    def time_median_s(self) -> float:
        return self.time_s

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["times_s"] = list(self.times_s)
        out["environment"] = dict(self.environment)
        out["time_median_s"] = self.time_s
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        names = {f.name for f in fields(cls)}
        missing = [n for n in ("collective", "algorithm", "ranks", "size_bytes", "time_s") if n not in data]
        if missing:
            raise ConfigError(f"measurement record lacks {', '.join(missing)}")
        values = {k: v for k, v in data.items() if k in names}
        values["times_s"] = tuple(values.get("times_s", ()))
        return cls(**values)


def _p99(values: Sequence[float]) -> float:
    """The 99th percentile, nearest-rank (the largest value for fewer than 100 samples)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def measurement(
    *,
    collective: str,
    algorithm: str,
    backend: str,
    ranks: int,
    size_bytes: int,
    count: int,
    dtype: str,
    root: int,
    times_s: Sequence[float],
    wrong: int | None,
    warmup: int,
    run_id: str = "",
    environment: Mapping[str, Any] | None = None,
    nccl_pick: Mapping[str, Any] | None = None,
) -> Measurement:
    """A :class:`Measurement` from the per-iteration times (each the slowest rank's)."""
    if not times_s:
        raise ValueError("no timed iterations")
    median = statistics.median(times_s)
    algbw = size_bytes / median / 1e9 if median > 0 else math.inf
    coll = get_collective(collective)
    return Measurement(
        collective=coll.name,
        algorithm=algorithm,
        backend=backend,
        ranks=ranks,
        size_bytes=size_bytes,
        count=count,
        dtype=dtype,
        root=root if coll.rooted else -1,
        time_s=median,
        algbw_GBps=algbw,
        busbw_GBps=coll.busbw(algbw, ranks),
        wrong=wrong,
        iters=len(times_s),
        warmup=warmup,
        time_min_s=min(times_s),
        time_p99_s=_p99(times_s),
        time_mean_s=statistics.fmean(times_s),
        times_s=tuple(times_s),
        run_id=run_id,
        environment=dict(environment or {}),
        nccl_pick=dict(nccl_pick) if nccl_pick else None,
    )


def table_row(m: Measurement) -> str:
    """nccl-tests' columns for one measurement (the simulator's renderer)."""
    return nccl_row(m)  # type: ignore[arg-type]  (it reads the same field names as SimResult's)


def append_jsonl(path: str | os.PathLike[str], m: Measurement) -> None:
    """Append ``m`` as one line and push it to disk before returning."""
    line = m.to_json() + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_measurements(path: str | os.PathLike[str]) -> Iterator[Measurement]:
    """The measurements in a JSON-lines file (blank lines skipped; a torn last line is an error), read by
    :func:`sim.files.iter_lines` (a regular file of at most 1 GiB, lines of at most 16 MiB)."""
    for n, raw in files.iter_lines(path, max_line=16 * 2**20, limit=1 << 30, line_of="a measurement"):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw, parse_int=files.int_parser(ConfigError))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{n}: not a JSON line ({exc.msg})") from None
        except (UnicodeDecodeError, RecursionError):
            raise ConfigError(f"{path}:{n}: not a JSON line") from None
        except ConfigError as exc:
            raise ConfigError(f"{path}:{n}: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}:{n}: not a measurement record (a JSON object)")
        try:
            yield Measurement.from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"{path}:{n}: {exc}") from None
        except (TypeError, ValueError):
            raise ConfigError(f"{path}:{n}: not a measurement record") from None
