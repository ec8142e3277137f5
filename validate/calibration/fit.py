"""Fitting a calibration: least squares per link class, piecewise by message size where one line
does not fit (as SimGrid's SMPI calibration does), and γ from local reductions.

Every measured time is a linear model in two unknowns per class, the per-message latency α and
``w = 1 / efficiency`` (the nominal bandwidth B of the class's path is known from the topology):

* a ping-pong one-way time of ``n`` bytes: ``t = α + (n / B)·w``;
* a whole collective (nccl-tests, validate), through the algorithm's closed form with ``a`` messages'
  latency and ``b`` bytes on the bottleneck: ``t = a·α + (b / B)·w + c·γ``.

Points are weighted by their relative standard error (times span six decades, and small messages on
a busy host scatter far more than large ones). A segment is fitted by
non-negative least squares; another segment is taken only while the fit before it misses some point
by more than ``tolerance`` and the Bayesian information criterion says the extra parameters pay for
themselves.

>>> import numpy as np
>>> sizes = 2.0 ** np.arange(10, 25, 2)
>>> pts = [Point(n, 1.0, n / 25e6, 300e-6 + n / (0.95 * 25e6)) for n in sizes]
>>> segs, quality = fit_segments(pts)
>>> [(s.min_bytes, round(s.alpha * 1e6, 3), round(1 / s.w, 6)) for s in segs], quality.max_rel < 1e-9
([(0.0, 300.0, 0.95)], True)
"""

from __future__ import annotations

import datetime
import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.errors import CalibrationError, CollsimError
from sim.linkclass import LINK_CLASSES, classes_of

from .file import MAX_EFFICIENCY, Calibration, ClassCalibration, FitQuality, Residual, Segment, Source
from .inputs import Sample
from .nccl_fit import check_gpu, check_hosts, fit_nccl, is_nccl_schedule, runs_nccl_schedules, stated_release

__all__ = ["Point", "SegmentFit", "fit_calibration", "fit_segments"]

#: γ is fitted to local reductions of at least this many bytes
GAMMA_MIN_BYTES = 64 * 1024
#: at most this many residuals are kept in a fit record
_RESIDUALS = 40
#: rate ratios (sharing, duplex) come from sizes at least this large where there are any
RATIO_MIN_BYTES = 2**20
#: a flow-count factor is applied only when some measured one is further than this from 1
FLOWS_TOLERANCE = 0.03
#: a reverse-traffic factor is applied only when some measured one is further than this from 1
DUPLEX_TOLERANCE = 0.02


@dataclass(frozen=True)
class Point:
    """One measured time ``t`` ~ ``a·α + b·w`` at message size ``size`` (bytes), known to within the
    relative standard error ``sd``."""

    size: float
    a: float
    b: float
    t: float
    sd: float = 0.02


@dataclass(frozen=True)
class SegmentFit:
    min_bytes: float
    alpha: float
    w: float  # 1 / efficiency

    @property
    def efficiency(self) -> float:
        return MAX_EFFICIENCY if self.w <= 1 / MAX_EFFICIENCY else 1.0 / self.w


def _solve(points: Sequence[Point], alpha: float | None = None, relative: bool = True) -> tuple[float, float]:
    """Non-negative least squares for (α, w), with relative weights (else plain); ``alpha`` given:
    fit w alone."""
    a = np.array([p.a for p in points])
    b = np.array([p.b for p in points])
    t = np.array([p.t for p in points])
    wt = 1.0 / (t * np.array([p.sd for p in points])) ** 2 if relative else np.ones_like(t)

    def only_w(fixed: float) -> tuple[float, float]:
        den = float((wt * b * b).sum())
        w = float((wt * b * (t - a * fixed)).sum()) / den if den > 0 else 0.0
        return fixed, max(w, 0.0)

    if alpha is not None:
        return only_w(alpha)
    saa, sab, sbb = (wt * a * a).sum(), (wt * a * b).sum(), (wt * b * b).sum()
    sat, sbt = (wt * a * t).sum(), (wt * b * t).sum()
    det = saa * sbb - sab * sab
    if det > 1e-12 * saa * sbb and len({p.size for p in points}) > 1:
        al = (sat * sbb - sab * sbt) / det
        w = (saa * sbt - sab * sat) / det
        if al >= 0 and w >= 0:
            return float(al), float(w)
    fits = [only_w(0.0)]
    if saa > 0:
        fits.append((float(sat / saa), 0.0))
    return min(fits, key=lambda f: _rss(points, f[0], f[1], relative))


def _predict(p: Point, alpha: float, w: float) -> float:
    return p.a * alpha + p.b * w


def _rss(points: Sequence[Point], alpha: float, w: float, relative: bool = True) -> float:
    """χ² (residuals in units of each point's standard error), or the plain sum of squares."""
    return float(sum(((p.t - _predict(p, alpha, w)) / (p.t * p.sd if relative else 1.0)) ** 2 for p in points))


def _quality(points: Sequence[Point], fitted: Sequence[float]) -> FitQuality:
    t = np.array([p.t for p in points])
    f = np.array(fitted)
    rel = (f - t) / t
    total = float(((t - t.mean()) ** 2).sum())
    r2 = 1.0 - float(((t - f) ** 2).sum()) / total if total > 0 and len(points) > 2 else None
    order = np.argsort([p.size for p in points], kind="stable")
    step = max(1, math.ceil(len(points) / _RESIDUALS))
    residuals = [
        Residual(size_bytes=points[i].size, measured_s=float(t[i]), fitted_s=float(max(f[i], 0.0)), rel=float(rel[i]))
        for i in order[::step]
    ]
    return FitQuality(
        points=len(points),
        r2=None if r2 is None or not math.isfinite(r2) else r2,
        rms_rel=float(np.sqrt((rel**2).mean())),
        max_rel=float(np.abs(rel).max()),
        residuals=residuals,
    )


def _evaluate(points: Sequence[Point], segs: Sequence[SegmentFit]) -> list[float]:
    mins = [s.min_bytes for s in segs]
    out = []
    for p in points:
        i = max(0, int(np.searchsorted(mins, p.size, side="right")) - 1)
        out.append(_predict(p, segs[i].alpha, segs[i].w))
    return out


def _partitions(m: int, k: int, least: int) -> list[tuple[int, ...]]:
    """Cut indices 0 < c1 < ... < c(k-1) < m with every block at least ``least`` long."""
    out = []
    for cuts in itertools.combinations(range(least, m - least + 1), k - 1):
        bounds = (0, *cuts, m)
        if all(b - a >= least for a, b in itertools.pairwise(bounds)):
            out.append(bounds)
    return out


def fit_segments(
    points: Sequence[Point],
    *,
    max_segments: int = 4,
    min_sizes: int = 2,
    tolerance: float = 0.03,
    alpha: float | None = None,
) -> tuple[list[SegmentFit], FitQuality]:
    """Piecewise (α, w) by message size; ``alpha`` fixes α (when one size cannot separate it from w)."""
    if not points:
        raise CalibrationError("no points to fit")
    sizes = sorted({p.size for p in points})
    if len(sizes) < 2 and alpha is None:
        raise CalibrationError("one message size cannot separate latency from bandwidth")
    best: list[SegmentFit] = []
    best_score = math.inf
    best_max = math.inf
    for k in range(1, max(1, max_segments) + 1):
        if alpha is not None and k > 1:
            break
        candidates = _partitions(len(sizes), k, min_sizes if k > 1 else 1)
        trial: list[SegmentFit] | None = None
        trial_rss = math.inf
        for bounds in candidates:
            segs = []
            for lo, hi in itertools.pairwise(bounds):
                block = [p for p in points if sizes[lo] <= p.size <= sizes[hi - 1]]
                al, w = _solve(block, alpha)
                start = 0.0 if lo == 0 else math.sqrt(sizes[lo - 1] * sizes[lo])
                segs.append(SegmentFit(start, al, w))
            rss = sum(((p.t - f) / (p.t * p.sd)) ** 2 for p, f in zip(points, _evaluate(points, segs), strict=True))
            if rss < trial_rss:
                trial, trial_rss = segs, rss
        if trial is None:
            break
        fitted = _evaluate(points, trial)
        worst = max(abs(f - p.t) / p.t for p, f in zip(points, fitted, strict=True))
        # Bayesian information criterion on χ²: a segment (3 more parameters) must pay for itself
        score = trial_rss + (3 * k - 1) * math.log(len(points))
        if k == 1 or (best_max > tolerance and score < best_score):
            best, best_score, best_max = trial, score, worst
        else:
            break
    return best, _quality(points, _evaluate(points, best))


# -- from samples to a calibration -----------------------------------------------------------------


def _nominal(cluster: Cluster, pairs: Sequence[tuple[int, int]]) -> tuple[float, float]:
    """(α, bandwidth) of a class's representative pair: the first pair (the one the probes use)."""
    alpha, beta = cluster.alpha_beta(*pairs[0])
    return alpha, (1.0 / beta if beta > 0 else math.inf)


def _ratio_factor(
    samples: Sequence[Sample],
    single: dict[int, float],
    latency: Callable[[float], float],
    bandwidth: float,
    flows: int,
) -> float | None:
    """Median over bandwidth-dominated sizes of ``flows`` · (one flow's time) / (the measured time),
    the fitted latency at that size taken off both: the rate a link gives ``flows`` concurrent transfers
    relative to one alone (1.0 = max-min sharing of the single flow's rate)."""
    ratios = {}
    for s in samples:
        alone = single.get(s.size)
        lat = latency(s.size)
        if alone is None or s.size / bandwidth < 4 * lat or s.time_s <= lat or alone <= lat:
            continue
        ratios.setdefault(s.size, []).append(flows * (alone - lat) / (s.time_s - lat))
    # a shaper's bucket lets a message that starts on an idle link skip ahead: large sizes only, where
    # that head start is a small part of the time
    large = [r for size, rs in ratios.items() if size >= RATIO_MIN_BYTES for r in rs]
    chosen = large or [r for rs in ratios.values() for r in rs]
    return statistics.median(chosen) if chosen else None


def _class_from_probes(
    name: str, samples: list[Sample], cluster: Cluster, pairs: list[tuple[int, int]], **kw: float
) -> tuple[ClassCalibration, list[str], list[str]]:
    _, bandwidth = _nominal(cluster, pairs)
    pings = [s for s in samples if s.test == "pingpong"]
    streams = [s for s in samples if s.test == "stream"]
    base = streams or pings  # back-to-back messages are what a collective's steps are
    if not base:
        raise CalibrationError(f"{name}: probes without stream or ping-pong times cannot be fitted")
    segs, quality = fit_segments([Point(s.size, 1.0, s.size / bandwidth, s.time_s, s.spread) for s in base], **kw)  # type: ignore[arg-type]
    notes = [f"{name}: fitted to {'streams of back-to-back messages' if streams else 'ping-pong one-way times'}"]

    def by_size(chosen: list[Sample]) -> dict[int, float]:
        return {
            size: statistics.median(s.time_s for s in chosen if s.size == size) for size in {s.size for s in chosen}
        }

    # rates relative to one flow alone: the stream's (a ping-pong after an idle link gets a shaper's
    # bucket to itself, which k concurrent flows share)
    single = by_size(base)

    def latency(size: float) -> float:
        """The fitted α of the segment that holds ``size`` (the model's own latency there)."""
        return next((seg.alpha for seg in reversed(segs) if size >= seg.min_bytes), segs[0].alpha)

    duplex = _ratio_factor([s for s in samples if s.test == "bidir"], single, latency, bandwidth, 1)
    sharing: dict[int, float] = {}
    dense: dict[int, float] = {}
    for tests, table in ((("fanin", "fanout"), sharing), (("alltoall",), dense)):
        for fan in sorted({s.fan for s in samples if s.test in tests}):
            chosen = [s for s in samples if s.test in tests and s.fan == fan]
            factor = _ratio_factor(chosen, single, latency, bandwidth, fan)
            if factor is not None:
                table[fan] = round(factor, 4)
    last = segs[-1]
    entry = ClassCalibration(
        latency=last.alpha,
        efficiency=last.efficiency,
        bandwidth=bandwidth * last.efficiency,
        nominal_bandwidth=bandwidth,
        segments=[Segment(min_bytes=s.min_bytes, latency=s.alpha, efficiency=s.efficiency) for s in segs]
        if len(segs) > 1
        else [],
        sharing=sharing,
        duplex=None if duplex is None else round(duplex, 4),
        dense=dense,
        fit=quality,
        pair=list(pairs[0]),
    )
    fitted = [f"{name}.segments"] if len(segs) > 1 else [f"{name}.latency", f"{name}.efficiency"]
    return entry, fitted, notes


def _link_sharing(entries: dict[str, ClassCalibration]) -> tuple[dict[int, float], dict[int, float], list[str]]:
    """The network-wide ``duplex`` and ``flows`` tables from every class's measured ratios (medians
    over classes); each is empty -- not applied -- when all its factors are within tolerance of 1."""
    fans: dict[int, list[float]] = {}
    reverse: dict[int, list[float]] = {}
    for entry in entries.values():
        for k, v in entry.sharing.items():
            fans.setdefault(k, []).append(v)
        if entry.duplex is not None:
            reverse.setdefault(1, []).append(entry.duplex)
        for k, v in entry.dense.items():
            reverse.setdefault(k, []).append(v)
    flows = {k: round(statistics.median(v), 4) for k, v in sorted(fans.items())}
    notes = []
    if flows and max(abs(f - 1) for f in flows.values()) <= FLOWS_TOLERANCE:
        notes.append(
            f"flows: k flows on one link direction got {', '.join(f'{f:.3f}' for f in flows.values())} of the single "
            f"flow's rate (k = {', '.join(map(str, flows))}): within {FLOWS_TOLERANCE:.0%} of max-min sharing, not applied"
        )
        flows = {}
    # all-to-all moves k flows each way on a link: its ratio holds both factors; the duplex is the rest
    duplex = {
        k: round(statistics.median(v) / (flows.get(k, 1.0) if k > 1 else 1.0), 4) for k, v in sorted(reverse.items())
    }
    if duplex and max(abs(d - 1) for d in duplex.values()) <= DUPLEX_TOLERANCE:
        notes.append(f"duplex: within {DUPLEX_TOLERANCE:.0%} of 1 ({duplex}), not applied")
        duplex = {}
    return duplex, flows, notes


def _bottleneck(cluster: Cluster, p: int) -> tuple[list[str], float, dict[str, list[tuple[int, int]]]]:
    """The classes among the first ``p`` ranks whose paths have the lowest nominal bandwidth."""
    classes = classes_of(cluster, p)
    lowest: dict[str, float] = {}
    for name, pairs in classes.items():
        lowest[name] = min(1.0 / b if b > 0 else math.inf for b in (cluster.alpha_beta(*pair)[1] for pair in pairs))
    floor = min(lowest.values())
    return [c for c in classes if lowest[c] <= floor * (1 + 1e-9)], floor, classes


def _classes_from_collectives(
    samples: list[Sample], cluster: Cluster, gamma: float | None, **kw: float
) -> tuple[dict[str, ClassCalibration], list[str], list[str]]:
    groups: dict[tuple[str, ...], list[Point]] = {}
    alpha_nominal: dict[tuple[str, ...], float] = {}
    for s in samples:
        if s.ranks > cluster.size:
            raise CalibrationError(f"{s.origin}: {s.ranks} ranks, but the topology has {cluster.size} GPUs")
        if s.ranks < 2:
            raise CalibrationError(f"{s.origin}: one rank moves no data; nothing to calibrate")
        names, bandwidth, classes = _bottleneck(cluster, s.ranks)
        try:
            algo = get_algorithm(s.collective, s.algorithm)
            a = algo.cost(s.ranks, s.size, 1.0, 0.0, 0.0)
            b = algo.cost(s.ranks, s.size, 0.0, 1.0, 0.0)
            c = algo.cost(s.ranks, s.size, 0.0, 0.0, 1.0)
        except CollsimError as exc:
            raise CalibrationError(f"{s.origin}: {exc}") from None
        t = s.time_s - (c * gamma if gamma else 0.0)
        if not (a > 0 and b > 0 and t > 0):
            raise CalibrationError(
                f"{s.origin}: {s.collective} ({s.algorithm}) on {s.ranks} ranks has no latency and bandwidth terms to fit"
            )
        key = tuple(names)
        groups.setdefault(key, []).append(Point(b / a, a, b / bandwidth, t, s.spread))
        alpha_nominal[key] = _nominal(cluster, classes[names[0]])[0]
    out: dict[str, ClassCalibration] = {}
    fitted: list[str] = []
    notes: list[str] = []
    for key, points in groups.items():
        one_size = len({p.size for p in points}) < 2
        segs, quality = fit_segments(points, alpha=alpha_nominal[key] if one_size else None, **kw)  # type: ignore[arg-type]
        last = segs[-1]
        if one_size:
            notes.append(f"{', '.join(key)}: one message size only, so the latency stays nominal; bandwidth fitted")
        for name in key:
            nominal_bw = _nominal(cluster, classes_of(cluster)[name])[1]
            out[name] = ClassCalibration(
                latency=None if one_size else last.alpha,
                efficiency=last.efficiency,
                bandwidth=nominal_bw * last.efficiency,
                nominal_bandwidth=nominal_bw,
                segments=[Segment(min_bytes=s.min_bytes, latency=s.alpha, efficiency=s.efficiency) for s in segs]
                if len(segs) > 1
                else [],
                fit=quality,
            )
            if len(segs) > 1:
                fitted.append(f"{name}.segments")
            else:
                fitted += ([] if one_size else [f"{name}.latency"]) + [f"{name}.efficiency"]
        notes.append(
            f"{', '.join(key)}: fitted from whole collectives through their closed forms (bottleneck class{'es' if len(key) > 1 else ''} of the ranks measured)"
        )
    return out, fitted, notes


def fit_calibration(
    samples: Sequence[Sample],
    topology: str | Cluster,
    sources: Sequence[Source],
    *,
    max_segments: int = 4,
    tolerance: float = 0.03,
) -> Calibration:
    """Fit every class the samples measure (probes first; whole collectives for classes probes leave
    out) and γ, into a :class:`Calibration` whose ``calibrated`` names exactly what was fitted."""
    cluster = topology if isinstance(topology, Cluster) else Cluster(topology)
    kw = {"max_segments": max_segments, "tolerance": tolerance}
    probes = [s for s in samples if s.is_probe]
    collectives = [s for s in samples if not s.is_probe]
    classes = classes_of(cluster)
    entries: dict[str, ClassCalibration] = {}
    calibrated: list[str] = []
    notes: list[str] = []
    gamma = gamma_fit = None
    reduce = [s for s in probes if s.test == "reduce"]
    if reduce:
        points = [Point(s.size, 1.0, s.size, s.time_s, s.spread) for s in reduce]
        # γ matters where reductions are large: fit the sizes from 64 KiB up (all, if none is that large)
        large = [p for p in points if p.size >= GAMMA_MIN_BYTES] or points
        per_call, gamma = _solve(large, relative=len({p.size for p in large}) > 1)
        gamma_fit = _quality(large, [_predict(p, per_call, gamma) for p in large])
        segs = [SegmentFit(0.0, per_call, gamma)]
        calibrated.append("gamma")
        notes.append(
            f"gamma: local reductions by all ranks at once, sizes from {int(large[0].size)} B; "
            f"{segs[0].alpha * 1e6:.1f} us per call not modelled"
        )
    for name in LINK_CLASSES:
        mine = [s for s in probes if s.link_class == name]
        if not mine:
            continue
        if name not in classes:
            raise CalibrationError(
                f"{mine[0].origin}: the topology {cluster.name!r} has no {name} pairs; wrong --topology?"
            )
        entry, fitted, more = _class_from_probes(name, mine, cluster, classes[name], **kw)
        entries[name] = entry
        calibrated += fitted
        notes += more
    duplex, flows, more = _link_sharing(entries)
    notes += more
    if flows:
        calibrated.append("flows")
    if duplex:
        calibrated.append("duplex")
    warnings: list[str] = []
    scheduled = [s for s in collectives if is_nccl_schedule(s)] if runs_nccl_schedules(cluster) else []
    collectives = [s for s in collectives if s not in scheduled]
    nccl_offset: dict[str, float] = {}
    nccl_version: str | None = None
    if scheduled:
        got = fit_nccl(scheduled, cluster)
        for name, entry in got.entries.items():
            if name in entries:
                notes.append(f"{name}: point-to-point probes take precedence over the nccl-tests times")
                continue
            entries[name] = entry
            calibrated.append(f"{name}.efficiency")
        if got.nccl_offset:
            nccl_offset = got.nccl_offset
            calibrated.append("nccl_offset")
        releases = {stated_release(s) for s in scheduled}
        if len(releases) == 1:  # one log, or logs of one release (None: none stated, the newest modelled)
            nccl_version = releases.pop()
        else:
            named = ", ".join(sorted(r if r else "one not stated" for r in releases))
            notes.append(
                f"nccl-tests: logs of NCCL releases {named} fitted together; nccl schedules under this "
                "calibration use the newest modelled release's tuner unless nccl:version=... says otherwise"
            )
        notes += got.notes
        warnings += got.warnings
        for src in sources:
            newer = [u for u in src.unmodelled if u.startswith("NCCL ")]  # (a release: inputs.newer_release)
            if settings := [u for u in src.unmodelled if u not in newer]:
                warnings.append(
                    f"{src.path}: sets {', '.join(settings)}, which the model does not represent (channel "
                    "counts, threads, buffers, QPs, NIC choice): the fit absorbs their effect into the "
                    "efficiencies, so predictions for runs without these settings may be off"
                )
            if newer:
                warnings.append(
                    f"{src.path}: ran {newer[0]}: its tuner's algorithm and protocol picks and latencies are "
                    "not modelled; the fit absorbs any change into the efficiencies"
                )
    if collectives:
        check_hosts(collectives, cluster)  # as for NCCL's schedules: a log's hosts and GPU bind any whole collective
        check_gpu(collectives, cluster)
        coll_entries, fitted, more = _classes_from_collectives(collectives, cluster, gamma, **kw)
        for name, entry in coll_entries.items():
            if name in entries:
                notes.append(f"{name}: point-to-point probes take precedence over the collective times")
                continue
            entries[name] = entry
            calibrated += [f for f in fitted if f.startswith(name + ".")]
        notes += more
    if not calibrated:
        raise CalibrationError("nothing to calibrate: the inputs hold no usable measurements")
    missing = [c for c in classes if c not in entries]
    if missing:
        notes.append(f"not measured, nominal: {', '.join(missing)}")
    return Calibration(
        topology=str(cluster.graph.graph.get("spec", cluster.name)),
        created=f"{datetime.datetime.now(datetime.UTC):%Y-%m-%dT%H:%M:%SZ}",
        sources=list(sources),
        classes=entries,  # type: ignore[arg-type]
        gamma=gamma,
        gamma_fit=gamma_fit,
        duplex=duplex,
        flows=flows,
        nccl_offset=nccl_offset,
        nccl_version=nccl_version,
        calibrated=calibrated,
        notes=notes,
        warnings=warnings,
    )
