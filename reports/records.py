"""What one point of a report's sweep came to: a :class:`PointRecord`, and its JSON form (a line of the
sweep's cache, ``points.jsonl``, and an entry of ``results.json``'s ``points``).

A record names its point (the cache key, the kind, the algorithm, the cluster's size and label), says
how it ended and carries what that gave: with status ``ok``, the figures -- an
:class:`~sim.training.IterationResult` for an ``iteration`` point, one :class:`~sim.results.SimResult`
per message size for a ``collective`` point -- and otherwise (``skipped``: the algorithm does not apply;
``failed``: the simulation raised) the reason. ``wall_s`` is how long the point took.

>>> rec = PointRecord(key="3f2a", kind="iteration", algorithm="ps", gpus=8, cluster="star (8 hosts)",
...                   status="skipped", reason="ps needs a spare host", wall_s=0.25)
>>> rec.to_dict()
{'key': '3f2a', 'kind': 'iteration', 'algorithm': 'ps', 'gpus': 8, 'cluster': 'star (8 hosts)', 'status': 'skipped', 'reason': 'ps needs a spare host', 'wall_s': 0.25}
>>> PointRecord.from_dict(rec.to_dict()) == rec, rec.cached, rec.iteration
(True, True, None)
>>> PointRecord.from_dict({**rec.to_dict(), "status": "ok"})
Traceback (most recent call last):
...
ValueError: not a PointRecord: status ok needs a result and no reason
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sim.results import LinkUse, SimResult
from sim.training import BucketTiming, IterationResult

from .jsonform import build

__all__ = [
    "CACHED",
    "PointKind",
    "PointRecord",
    "Status",
    "collective_from_dict",
    "iteration_from_dict",
]

PointKind = Literal["iteration", "collective"]
Status = Literal["ok", "skipped", "failed"]

#: the statuses worth keeping in the cache (a failed point is retried by the next run)
CACHED: tuple[Status, ...] = ("ok", "skipped")

_KEYS = ("key", "kind", "algorithm", "gpus", "cluster", "status", "wall_s")


def iteration_from_dict(data: Any) -> IterationResult:
    """The :class:`~sim.training.IterationResult` whose ``to_dict()`` is ``data`` (:class:`ValueError`
    when it is not one)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"not an IterationResult: {type(data).__name__}, not a mapping")
    return build(
        IterationResult,
        data,
        busiest_links=tuple(build(LinkUse, link) for link in _list(data.get("busiest_links"))),
        bucket_timings=tuple(build(BucketTiming, b) for b in _list(data.get("bucket_timings"))),
    )


def collective_from_dict(data: Any) -> SimResult:
    """The :class:`~sim.results.SimResult` whose ``to_dict()`` is ``data`` (:class:`ValueError` when it
    is not one)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"not a SimResult: {type(data).__name__}, not a mapping")
    return build(
        SimResult, data, busiest_links=tuple(build(LinkUse, link) for link in _list(data.get("busiest_links")))
    )


def _list(value: Any) -> list[Any]:
    if value is None:
        return []  # build() reports the missing key
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class PointRecord:
    """One finished point of a sweep.

    Attributes
    ----------
    key : str
        The point's cache key (:attr:`reports.points.Point.key`).
    kind : {"iteration", "collective"}
    algorithm : str
        The all-reduce algorithm's spec.
    gpus : int
        Data-parallel GPUs.
    cluster : str
        The cluster's label.
    status : {"ok", "skipped", "failed"}
    result : IterationResult or tuple of SimResult, optional
        The figures, with status ``ok`` only: an iteration's, or the collective sweep's (one per
        message size, smallest first).
    reason : str, optional
        Why there are no figures, with status ``skipped`` or ``failed`` only.
    wall_s : float
        Seconds the point took to simulate.
    """

    key: str
    kind: PointKind
    algorithm: str
    gpus: int
    cluster: str
    status: Status
    result: IterationResult | tuple[SimResult, ...] | None = None
    reason: str | None = None
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in get_args(PointKind):
            raise ValueError(f"kind must be one of {', '.join(get_args(PointKind))}, got {self.kind!r}")
        if self.status not in get_args(Status):
            raise ValueError(f"status must be one of {', '.join(get_args(Status))}, got {self.status!r}")
        if self.status == "ok":
            if self.result is None or self.reason is not None:
                raise ValueError("status ok needs a result and no reason")
            want = IterationResult if self.kind == "iteration" else tuple
            if not isinstance(self.result, want):
                raise ValueError(
                    f"a {self.kind} point's result must be {want.__name__}, got {type(self.result).__name__}"
                )
        elif self.result is not None or self.reason is None:
            raise ValueError(f"status {self.status} needs a reason and no result")

    @property
    def cached(self) -> bool:
        """Whether the sweep keeps this record for a rerun (a failed point is retried instead)."""
        return self.status in CACHED

    @property
    def iteration(self) -> IterationResult | None:
        """The iteration's figures, for a finished ``iteration`` point; else None."""
        return self.result if isinstance(self.result, IterationResult) else None

    @property
    def collectives(self) -> tuple[SimResult, ...]:
        """The collective sweep's figures, for a finished ``collective`` point; else empty."""
        return self.result if isinstance(self.result, tuple) else ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``key, kind, algorithm, gpus, cluster``, then ``result, status`` (ok) or
        ``status, reason``, then ``wall_s`` -- the order the sweep has always written."""
        out: dict[str, Any] = {
            "key": self.key,
            "kind": self.kind,
            "algorithm": self.algorithm,
            "gpus": self.gpus,
            "cluster": self.cluster,
        }
        if isinstance(self.result, IterationResult):
            out["result"] = self.result.to_dict()
        elif self.result is not None:
            out["result"] = [r.to_dict() for r in self.result]
        out["status"] = self.status
        if self.reason is not None:
            out["reason"] = self.reason
        out["wall_s"] = self.wall_s
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PointRecord:
        """The record whose :meth:`to_dict` is ``data``: a cache line written by any collsim version
        with this record format. :class:`ValueError` when ``data`` is not one."""
        try:
            if not isinstance(data, Mapping):
                raise ValueError(f"{type(data).__name__}, not a mapping")
            missing = [k for k in _KEYS if k not in data]
            unknown = [k for k in data if k not in (*_KEYS, "result", "reason")]
            if missing or unknown:
                raise ValueError(f"missing {missing}, unknown {unknown}")
            if "result" in data and data["result"] is None:
                raise ValueError("result is null")
            if "reason" in data and not isinstance(data["reason"], str):
                raise ValueError("reason is not a string")
            raw = data.get("result")
            result: IterationResult | tuple[SimResult, ...] | None = None
            if raw is not None and data["kind"] == "iteration":
                result = iteration_from_dict(raw)
            elif raw is not None and data["kind"] == "collective":
                result = tuple(collective_from_dict(r) for r in _list(raw))
            return cls(
                key=data["key"],
                kind=data["kind"],
                algorithm=data["algorithm"],
                gpus=data["gpus"],
                cluster=data["cluster"],
                status=data["status"],
                result=result,
                reason=data.get("reason"),
                wall_s=data["wall_s"],
            )
        except ValueError as exc:
            raise ValueError(f"not a PointRecord: {exc}") from None
