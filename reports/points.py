"""The points of a report's sweep: each one an independent task that any worker can run from its
JSON-able description alone, identified by a hash of its inputs (the cache key).

Two kinds: ``iteration`` (one training iteration, :func:`sim.training.simulate_iteration`) and
``collective`` (one all-reduce at every message size, :func:`sim.simulate.sweep`, sharing the routes).
:func:`run_point` returns a :class:`~reports.records.PointRecord`; an algorithm that cannot run on a
cluster (it raised :class:`~sim.errors.AlgorithmError`) comes back ``skipped`` with the reason.

>>> from reports.spec import parse_spec
>>> spec = parse_spec({"job": {"gradient_bytes": "8MiB", "compute_time": "10ms"}, "algorithms": ["ring"],
...     "cluster": {"builder": "star", "params": {"bandwidth": "100Gbps"}, "sizes": [2, 4]},
...     "sweep": {"message_sizes": "1MiB:4MiB:4"}})
>>> [(p.kind, p.cluster.gpus) for p in report_points(spec)]
[('iteration', 2), ('iteration', 4), ('collective', 2), ('collective', 4)]
>>> rec = run_point(report_points(spec)[1])
>>> rec.status, rec.gpus, round(rec.iteration.iteration_s * 1e3, 4)
('ok', 4, 10.8808)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any

import sim
from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.deadline import Deadline, SimulationTimeout, deadline_at
from sim.errors import AlgorithmError, CollsimError
from sim.results import SimResult
from sim.simulate import sweep
from sim.training import IterationResult, Workload, simulate_iteration

from .clusters import ClusterRef, build_graph, cluster_refs, link_model_of
from .records import PointKind, PointRecord, Status
from .spec import ReportSpec

__all__ = ["MODEL_VERSION", "Point", "report_points", "run_point", "workload_of"]

#: part of every cache key: a new simulator or report model recomputes instead of reusing old points
#: (report-2: `dgx` routes by destination by default, where it hashed; its spec's params are unchanged,
#: so the tag is what keeps points simulated on the hashed fabric from being reused for it; report-3: NCCL's NVLS
#: on one host steps NCCL's iterations, each paying its hand-off, so `nccl` / `nvls` points on one NVLS host
#: changed under an unchanged collsim version)
MODEL_VERSION = f"collsim-{sim.__version__}/report-3"


@dataclass(frozen=True)
class Point:
    """One task of a report's sweep."""

    kind: PointKind
    algorithm: str
    cluster: ClusterRef
    workload: dict[str, Any] = field(default_factory=dict)
    message_sizes: tuple[int, ...] = ()
    gamma: float = 0.0

    @property
    def key(self) -> str:
        """A hash of everything the point's result depends on."""
        ident = {
            "v": MODEL_VERSION,
            "kind": self.kind,
            "algorithm": self.algorithm,
            "cluster": self.cluster.identity(),
            "workload": self.workload,
            "message_sizes": list(self.message_sizes),
            "gamma": self.gamma,
        }
        text = json.dumps(ident, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def record(
        self,
        status: Status,
        *,
        result: IterationResult | tuple[SimResult, ...] | None = None,
        reason: str | None = None,
        wall_s: float = 0.0,
    ) -> PointRecord:
        """This point's record: its identity with how it ended (see :class:`~reports.records.PointRecord`)."""
        return PointRecord(
            key=self.key,
            kind=self.kind,
            algorithm=self.algorithm,
            gpus=self.cluster.gpus,
            cluster=self.cluster.label,
            status=status,
            result=result,
            reason=reason,
            wall_s=wall_s,
        )


def workload_of(spec: ReportSpec) -> Workload:
    """The training iteration a spec describes."""
    job, ddp = spec.job, spec.ddp
    return Workload(
        gradient_bytes=job.total_gradient_bytes,
        forward_s=job.forward_s,
        backward_s=job.backward_s,
        optimizer_s=job.optimizer_time,
        bucket_bytes=ddp.bucket_size,
        first_bucket_bytes=ddp.first_bucket,
        overlap=ddp.overlap,
        concurrent_buckets=ddp.concurrent_buckets,
        samples_per_gpu=job.samples_per_gpu,
    )


def report_points(spec: ReportSpec) -> list[Point]:
    """Every task of a report: an iteration per (algorithm, size), then a collective sweep per
    (algorithm, size) when the spec has message sizes."""
    refs = cluster_refs(spec)
    workload = asdict(workload_of(spec))
    gamma = spec.effective_gamma
    points = [
        Point("iteration", algo, ref, workload=workload, gamma=gamma) for algo in spec.algorithm_specs for ref in refs
    ]
    if spec.sweep.message_sizes:
        sizes = tuple(sorted(set(spec.sweep.message_sizes)))
        points += [
            Point("collective", algo, ref, message_sizes=sizes, gamma=gamma)
            for algo in spec.algorithm_specs
            for ref in refs
        ]
    return points


# A worker keeps its last few clusters (with their routes) for the next points on the same cluster.
_CLUSTERS: OrderedDict[tuple[str, int], Cluster] = OrderedDict()


def _cluster(ref: ClusterRef, spare: int) -> Cluster:
    key = (json.dumps(ref.identity(), sort_keys=True, default=str), spare)
    cluster = _CLUSTERS.get(key)
    if cluster is None:
        # the oracle's convention (tests/oracle.py): spare hosts are in the graph, beyond the ranks
        cluster = Cluster(build_graph(ref, spare_hosts=spare), ranks=ref.gpus, link_model=link_model_of(ref))
        _CLUSTERS[key] = cluster
        while len(_CLUSTERS) > 4:
            _CLUSTERS.popitem(last=False)
    else:
        _CLUSTERS.move_to_end(key)
    return cluster


def run_point(point: Point, bound: Deadline | None = None, limit: float | None = None) -> PointRecord:
    """Run one point.

    Parameters
    ----------
    point : Point
    bound : Deadline, optional
        The report's deadline (``--timeout``; an absolute time, so it means the same in every worker):
        past it the point raises :class:`~sim.deadline.SimulationTimeout` rather than being recorded as
        failed, and the whole report stops.
    limit : float, optional
        Seconds of wall clock this point may take (the spec's ``point_limit``, ``--point-limit``): a point
        still running then comes back ``failed``, the reason naming the limit, and the report goes on.

    Returns
    -------
    PointRecord
        Status ``ok`` with the figures, ``skipped`` with the reason when the algorithm does not apply
        (it raised :class:`~sim.errors.AlgorithmError`), or ``failed`` with the reason when the
        simulation raised another :class:`~sim.errors.CollsimError`.
    """
    with deadline_at(bound):
        if limit is None:
            return _run_point(point)
        started = time.perf_counter()
        own = Deadline(time.time() + limit, limit, "point_limit")
        try:
            with deadline_at(own):
                return _run_point(point)
        except SimulationTimeout as exc:
            if bound is not None and bound.expired():
                raise  # the report's own deadline: the whole report stops
            return point.record("failed", reason=str(exc), wall_s=time.perf_counter() - started)


def _run_point(point: Point) -> PointRecord:
    started = time.perf_counter()
    result: IterationResult | tuple[SimResult, ...] | None = None
    reason: str | None = None
    try:
        algo = get_algorithm("allreduce", point.algorithm)
        p = point.cluster.gpus
        cluster = _cluster(point.cluster, algo.spare_hosts(p))
        if point.kind == "iteration":
            result = simulate_iteration(cluster, algo, Workload(**point.workload), ranks=p, gamma=point.gamma)
        else:
            result = tuple(sweep(cluster, "allreduce", algo, point.message_sizes, ranks=p, gamma=point.gamma))
        status: Status = "ok"
    except AlgorithmError as exc:
        status, reason = "skipped", str(exc)
    except SimulationTimeout:
        raise
    except CollsimError as exc:
        status, reason = "failed", f"{type(exc).__name__}: {exc}"
    return point.record(status, result=result, reason=reason, wall_s=time.perf_counter() - started)
