"""Fitting nccl-tests logs through the schedule NCCL ran, with parameters that stay physical.

A log of ``all_reduce_perf`` is a set of whole-collective times. Its samples name the schedule
(:class:`~validate.calibration.inputs.Sample` ``algorithm``): ``nccl`` -- NCCL's pick per size -- or
``nccl:algo=...`` where the log (or ``FILE:algorithm=...``) says which NCCL_ALGO ran. The fit simulates
every size through that schedule on the topology and solves for

* per link **group** an efficiency, a fraction of line rate (``<= 1``): ``intra-host`` (NVLink) and the
  cross-host classes together (``same-switch``, ``cross-switch``, ``direct``: the NIC and the fabric);
* per NCCL **protocol** a correction of the fixed cost the schedule charges before data moves (the
  link model's ``nccl_offset``: seconds added to NCCL's latency estimate less its hops between nodes,
  the sum never below 0), so that NCCL's own structure -- its base latency per algorithm, its per-step
  latencies that grow with the ranks, its NET latency per hop between the nodes spanned -- carries to
  other schedules and sizes of cluster, with the links' own latencies at every pipeline step: a 1-node
  fit carries to 2 nodes, a 2-node NVLS-tree fit to a 4-node ring.

The time is piecewise linear in ``w = 1 / efficiency`` and linear in the base latencies, so the fit
linearizes around the current point (one simulation per group for the slopes), solves the bounded
least squares in relative error (``w >= 1``, latency ``>= 0``; every bound combination is tried), steps
only as far along that solution as lowers the rms relative error, and repeats a few times. A group whose unconstrained fit wants more than line rate is clamped at 1 and
named in a warning: the log ran faster than the schedule can, so the schedule likely is not what ran. A
group the unconstrained fit gives no time at all (another group bounds every size) is one the log cannot
see: it stays at line rate, and the warning says that instead. A size slower than a larger size of the same
run by more than :data:`DISTURBED` was disturbed: it is left out, and a warning names it
(:func:`leave_out_disturbed`).
"""

from __future__ import annotations

import itertools
import math
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.errors import CalibrationError, CollsimError
from sim.linkclass import classes_of
from sim.linkmodel import LinkModel
from sim.linkmodel import Segment as ModelSegment
from sim.nccl.tuner import PROTOS
from sim.simulate import simulate
from sim.topology.hgx import HgxParams
from sim.units import format_size

from .file import ClassCalibration, FitQuality, Residual
from .inputs import GPU_NAMES_JOIN, PCIE_CARD, Sample, stated_gpu_model

__all__ = [
    "FIT_MIN_BYTES",
    "NcclFit",
    "check_gpu",
    "check_hosts",
    "fit_nccl",
    "leave_out_disturbed",
    "is_nccl_schedule",
    "runs_nccl_schedules",
    "stated_release",
]

#: sizes from here up are fitted (all sizes when a log has none this large): the sizes the model is judged on
FIT_MIN_BYTES = 2**20
#: at most this many sizes are simulated per fit (spread evenly over the log's sizes)
MAX_FIT_SIZES = 16
#: an unconstrained efficiency above this is warned about (1 is line rate; the rest is measurement noise)
OVER_LINE_RATE = 1.02
#: the link groups: NVLink inside a host, the NIC and fabric between hosts
GROUPS = {"intra-host": ("intra-host",), "cross-host": ("same-switch", "cross-switch", "direct")}
#: ... and only when holding it at line rate costs the fit this much rms relative error
CLAMP_COST = 0.005
#: the coarse grid of ``w = 1 / efficiency`` per group (efficiency 1, 0.67, 0.4, 0.25), on at most
#: this many sizes
GRID = (1.0, 1.5, 2.5, 4.0)
_COARSE_SIZES = 4
#: two fits closer than this in rms relative error are a tie, won by the one nearer line rate
PREFER = 0.005
_ITERATIONS = 4
#: fractions of a linearized step tried, largest first, until one lowers the rms relative error
_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625)
_PROBE = 1.1
_RIDGE = 1e-6
#: a sample more than this fraction slower than a larger size of the same run is a disturbed one, left out of
#: the fit (:func:`leave_out_disturbed`). Published logs (the development set, held-out sets 4-18), from 1 MiB:
#: falls up to 16% are the machine's (both of nccl-tests' measurements show them: NCCL's pick switching where
#: its estimate is off, 4 MiB 750 us and 8 MiB 649 us on Polaris), disturbances 37% and more (docs/calibration.md)
DISTURBED = 0.25
#: a warning names at most this many of the sizes left out
_NAMED = 6


def is_nccl_schedule(sample: Sample) -> bool:
    """Whether ``sample`` is predicted by NCCL's own schedules (``nccl`` or ``nccl:...``)."""
    return sample.algorithm == "nccl" or sample.algorithm.startswith("nccl:")


def stated_release(sample: Sample) -> str | None:
    """The NCCL release ``sample``'s schedule names (``nccl:algo=ring,version=2.26.2`` -> ``2.26.2``), None where
    it names none -- read by the algorithm's own option parser."""
    try:
        options = get_algorithm(sample.collective, sample.algorithm).options
    except CollsimError as exc:
        raise CalibrationError(f"{sample.origin}: {exc}") from None
    return options.version if "version" in options.model_fields_set else None  # type: ignore[attr-defined]


def runs_nccl_schedules(cluster: Cluster) -> bool:
    """Whether ``cluster`` describes NCCL's hardware closely enough to fit through its schedules (an
    ``hgx`` topology: NVLink, NIC and PCIe rates as NCCL's topology detection sees them)."""
    return "nvlink_bw" in cluster.graph.graph


@dataclass
class NcclFit:
    """What :func:`fit_nccl` found: per class entries, the applied parameter names, the base latencies,
    notes and warnings, and the unconstrained efficiency of every group the log measures."""

    entries: dict[str, ClassCalibration]
    calibrated: list[str]
    nccl_offset: dict[str, float]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    wanted: dict[str, float] = field(default_factory=dict)


def _named(s: Sample) -> str:
    return f"{format_size(s.size)} ({s.best_s * 1e6:,.1f} us)"


def _listed(names: list[str]) -> str:
    """``names`` once each, at most :data:`_NAMED` of them, then how many more."""
    names = list(dict.fromkeys(names))
    return ", ".join(names[:_NAMED]) + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def leave_out_disturbed(samples: Sequence[Sample], tol: float = DISTURBED) -> tuple[list[Sample], list[str]]:
    """``samples`` less the disturbed ones, and one warning for each run that had any.

    NCCL's tuner takes the schedule it estimates fastest at every size, so a clean run's time does not fall
    as the message grows (up to noise). A sample of :data:`FIT_MIN_BYTES` or more whose time
    (:attr:`~validate.calibration.inputs.Sample.best_s`, the time the fit fits) exceeds ``(1 + tol)`` x that
    of a larger size of the same run -- the same log (``run_id`` and file), collective, ranks and forced
    algorithm / protocol (``label``) -- was disturbed (another job on the fabric, a GPU clock dip, a warm-up: a
    disturbance adds time, so the smaller, slower sample is the disturbed one), and no schedule fits it: it is
    left out. Where that would keep fewer than half of a run's sizes, or fewer than 2, the run is kept whole
    (its time falls as the message grows: the run, not a disturbance of it) and the warning says so. Smaller
    sizes are never left out: there NCCL's protocol switches make real falls (a held-out reduce: 79.8 us at
    91 KiB, 22.1 us at 95 KiB, in both of nccl-tests' measurements).

    >>> from validate.calibration.inputs import Sample
    >>> run = [Sample(size=2**k, time_s=t * 1e-6, collective="allreduce", origin=f"LOG:{k}")
    ...        for k, t in ((20, 100.0), (21, 191.3), (22, 151.1), (23, 250.0))]
    >>> kept, warnings = leave_out_disturbed(run)
    >>> [s.size for s in kept]
    [1048576, 4194304, 8388608]
    >>> print(warnings[0][:79])
    LOG: left out of the fit: 2MiB (191.3 us) slower than 4MiB (151.1 us) -- a dist
    """
    runs: dict[tuple[str, str, str, int, str], list[Sample]] = {}
    for s in samples:
        runs.setdefault((s.run_id, s.origin.rsplit(":", 1)[0], s.collective, s.ranks, s.label), []).append(s)
    gone: set[int] = set()
    warnings = []
    for (run_id, log, *_), run in runs.items():
        slower: list[tuple[Sample, Sample]] = []  # (a disturbed sample, the faster sample of a larger size)
        fastest: Sample | None = None  # the fastest sample of the sizes above the one at hand
        for size, group in itertools.groupby(sorted(run, key=lambda s: -s.size), key=lambda s: s.size):
            same = list(group)
            if fastest is not None and size >= FIT_MIN_BYTES:
                slower += [(s, fastest) for s in same if s.best_s > (1 + tol) * fastest.best_s]
            fastest = min([*same, fastest] if fastest else same, key=lambda s: s.best_s)
        if not slower:
            continue
        left = {id(s) for s, _ in slower}
        sizes, kept = {s.size for s in run}, {s.size for s in run if id(s) not in left}
        by_larger: dict[str, list[str]] = {}  # the faster, larger size -> the sizes slower than it
        for s, f in sorted(slower, key=lambda pair: pair[0].size):
            by_larger.setdefault(_named(f), []).append(_named(s))
        said = ", and ".join(f"{_listed(ss)} slower than {f}" for f, ss in by_larger.items())
        if len(kept) < max(2, len(sizes) / 2):
            verdict = f"kept in the fit (leaving them out would keep {len(kept)} of {len(sizes)} sizes)"
        else:
            verdict, gone = "left out of the fit", gone | left
        warnings.append(
            f"{log or run_id or 'a run'}: {verdict}: {said} -- a disturbed run? (sizes whose time falls as the "
            "message grows cannot be fitted by any schedule)"
        )
    return [s for s in samples if id(s) not in gone], warnings


def _spread(samples: list[Sample]) -> list[Sample]:
    sizes = sorted({s.size for s in samples})
    if len(sizes) > MAX_FIT_SIZES:
        keep = {sizes[round(i * (len(sizes) - 1) / (MAX_FIT_SIZES - 1))] for i in range(MAX_FIT_SIZES)}
        samples = [s for s in samples if s.size in keep]
    return samples


class _Sim:
    """Simulated times of the samples under per-group ``w`` (NCCL's own base latencies), cached."""

    def __init__(self, cluster: Cluster, samples: list[Sample], groups: dict[str, tuple[str, ...]]) -> None:
        self.cluster, self.samples, self.groups = cluster, samples, groups
        self.cache: dict[tuple[float, ...], np.ndarray] = {}

    def __call__(self, w: dict[str, float]) -> np.ndarray:
        key = tuple(round(w[g], 9) for g in self.groups)
        if key not in self.cache:
            classes = {
                cls: (ModelSegment(0.0, None, 1.0 / w[g]),) for g, members in self.groups.items() for cls in members
            }
            cluster = self.cluster.with_link_model(LinkModel(classes=classes, source="nccl fit"))
            out = []
            for s in self.samples:
                try:
                    r = simulate(cluster, s.collective, s.algorithm, s.size, ranks=s.ranks, gamma=0.0)
                except CollsimError as exc:
                    raise CalibrationError(f"{s.origin}: {exc}") from None
                out.append(r.time_s)
            self.cache[key] = np.array(out)
        return self.cache[key]


def _bounded_lstsq(a: np.ndarray, y: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """min |a x - y|^2 subject to x >= lower: every combination of bounds held, the best feasible one."""
    n = a.shape[1]
    best, best_rss = lower.copy(), math.inf
    for fixed in itertools.product((False, True), repeat=n):
        x = lower.copy()
        free = [i for i in range(n) if not fixed[i]]
        rhs = y - a[:, [i for i in range(n) if fixed[i]]] @ lower[[i for i in range(n) if fixed[i]]]
        if free:
            x[free] = np.linalg.lstsq(a[:, free], rhs, rcond=None)[0]
        if (x < lower - 1e-12).any():
            continue
        rss = float(((a @ x - y) ** 2).sum())
        if rss < best_rss - 1e-15:
            best, best_rss = x, rss
    return best


def _latency_columns(picks: list[tuple[str, str]], protos: list[str]) -> np.ndarray:
    return np.array([[1.0 if q == pr else 0.0 for pr in protos] for _, q in picks]).reshape(len(picks), len(protos))


def _start(
    cluster: Cluster,
    chosen: list[Sample],
    groups: dict[str, tuple[str, ...]],
    picks: list[tuple[str, str]],
    floor: np.ndarray,
    measured: np.ndarray,
    protos: list[str],
) -> tuple[dict[str, float], list[str]]:
    """The coarse grid: every combination of :data:`GRID` per group on a few sizes, the fixed costs'
    corrections (at least ``floor``) solved at each; returns the best point and the groups the log exercises. (The time is flat in a
    group's ``w`` until that group becomes the bottleneck, so slopes at line rate alone cannot find
    a slow NIC behind a fast NVLink schedule.)"""
    idx = sorted({round(i * (len(chosen) - 1) / max(1, _COARSE_SIZES - 1)) for i in range(_COARSE_SIZES)})
    sub = [chosen[i] for i in idx]
    sim = _Sim(cluster, sub, groups)
    base = sim(dict.fromkeys(groups, 1.0))
    active = [g for g in groups if np.max(np.abs(sim({**dict.fromkeys(groups, 1.0), g: GRID[-1]}) / base - 1)) > 1e-4]
    cols = _latency_columns([picks[i] for i in idx], protos)
    weight = 1.0 / measured[idx]
    best, best_rss = dict.fromkeys(groups, 1.0), math.inf
    for combo in itertools.product(GRID, repeat=len(active)):
        w = {**dict.fromkeys(groups, 1.0), **dict(zip(active, combo, strict=True))}
        a = cols * weight[:, None]
        y = (measured[idx] - sim(w)) * weight
        b = _bounded_lstsq(a, y, floor) if protos else np.zeros(0)
        rss = float(((a @ b - y) ** 2).sum())
        if rss < best_rss:
            best, best_rss = w, rss
    return best, active


def check_hosts(samples: Sequence[Sample], cluster: Cluster) -> None:
    """Refuse a log whose rank lines name more hosts than the topology puts its ranks on (a 2-node run of
    one GPU a node on an 8-GPU host): what crossed the network would be fitted to NVLink."""
    runs = {(s.ranks, s.hosts): s.origin for s in samples if s.hosts > 1}
    for (ranks, hosts), origin in runs.items():
        placed = len({cluster.host_of(r) for r in range(ranks)})
        if placed < hosts:
            per = (
                f" of {ranks // hosts} GPU(s) (hgx:hosts={hosts},gpus_per_host={ranks // hosts})"
                if ranks % hosts == 0
                else ""
            )
            raise CalibrationError(
                f"{origin}: the log ran its {ranks} ranks on {hosts} hosts, but the topology puts them on "
                f"{placed} host(s): what crossed the network would be fitted to the links inside a host; give a "
                f"topology of {hosts} hosts{per}"
            )


#: the GPU models ``hgx`` builds (its ``gpu=`` values)
_HGX_GPUS = typing.get_args(typing.get_args(HgxParams.model_fields["gpu"].annotation)[0])


def topology_gpu(cluster: Cluster) -> str | None:
    """The GPU model an ``hgx`` topology builds (its ``gpu=``, else its preset's: the graph's ``gpu_model``),
    None for another topology (a YAML file, ``dgx:...``: no GPU model stated).

    >>> topology_gpu(Cluster("hgx:hosts=2,gpu=a100")), topology_gpu(Cluster("hgx:hosts=1,preset=dgx-b200"))
    ('a100', 'b200')
    >>> topology_gpu(Cluster("hgx:hosts=2")), topology_gpu(Cluster("dgx:hosts=2"))
    ('h100', None)
    """
    model = cluster.graph.graph.get("gpu_model")
    return str(model) if model else None


def check_gpu(samples: Sequence[Sample], cluster: Cluster) -> None:
    """Refuse samples whose log's device lines name another GPU than the ``hgx`` topology builds (an RTX 5090
    log on ``gpu=h100``, a GB300 log on ``gpu=b200``): the fit would carry one GPU's times to another's links.
    A log of the topology's GPU on a PCIe card (``NVIDIA H200 NVL``: NVLink bridges, no NVSwitch) is refused too,
    unless its rank lines put one GPU on each host (no link inside a host is crossed).
    A log whose device lines name two models in one run (hosts of different GPUs) is refused on any of them.
    A log that names no GPU, or a topology that states none, is not checked."""
    built = topology_gpu(cluster)
    if built is None:
        return
    for s in samples:
        if GPU_NAMES_JOIN in s.gpu:
            names = s.gpu.split(GPU_NAMES_JOIN)
            raise CalibrationError(
                f"{s.origin}: the log's device lines name {len(names)} GPU models ({', '.join(map(repr, names))}): "
                f"hosts of different GPUs, but hgx builds hosts of one model (the topology's {built.upper()})"
            )
        model = stated_gpu_model(s.gpu) if s.gpu else ""
        if model and model != built:
            fix = f"give -t hgx:...,gpu={model}" if model in _HGX_GPUS else f"hgx does not build {s.gpu}"
            raise CalibrationError(
                f"{s.origin}: the log's device lines name {s.gpu!r}, but the topology builds {built.upper()} GPUs "
                f"(one GPU's times would be fitted to, or judged against, another's links); {fix}"
            )
        one_a_host = s.hosts > 1 and s.ranks == s.hosts  # a card's missing NVSwitch is never crossed
        if model == built and PCIE_CARD.search(s.gpu) and not one_a_host:  # an H200 NVL, an A100 PCIe: not its board
            raise CalibrationError(
                f"{s.origin}: the log's device lines name {s.gpu!r}, a PCIe card without an NVSwitch, but the "
                f"topology builds {built.upper()} GPUs on an HGX board's NVSwitch; hgx does not build {s.gpu}"
            )


def fit_nccl(samples: Sequence[Sample], cluster: Cluster, *, min_bytes: float = FIT_MIN_BYTES) -> NcclFit:
    """Fit efficiencies (<= 1) per link group and base latencies per protocol to ``samples`` (all run
    by NCCL's schedules) on ``cluster`` (see the module docstring)."""
    for s in samples:
        if s.ranks > cluster.size:
            raise CalibrationError(f"{s.origin}: {s.ranks} ranks, but the topology has {cluster.size} GPUs")
        if s.ranks < 2:
            raise CalibrationError(f"{s.origin}: one rank moves no data; nothing to calibrate")
    check_hosts(samples, cluster)
    check_gpu(samples, cluster)
    fitted, disturbed = leave_out_disturbed([s for s in samples if s.size >= min_bytes] or list(samples))
    chosen = _spread(fitted)
    p = max(s.ranks for s in chosen)
    present = set(classes_of(cluster, p))
    groups = {g: tuple(c for c in members if c in present) for g, members in GROUPS.items()}
    groups = {g: members for g, members in groups.items() if members}
    sim = _Sim(cluster, chosen, groups)
    measured = np.array([s.best_s for s in chosen])  # the faster of out-of-place and in-place
    picks: list[tuple[str, str]] = []
    launches: list[float] = []
    for s in chosen:
        try:
            algo = get_algorithm(s.collective, s.algorithm)
            c = algo.choice(s.ranks, s.size, cluster)  # type: ignore[attr-defined]
            e = algo.charged(s.ranks, s.size, cluster, c)  # type: ignore[attr-defined]
        except CollsimError as exc:
            raise CalibrationError(f"{s.origin}: {exc}") from None
        picks.append((c.algorithm, c.protocol))
        launches.append((e.latency_us - e.net_latency_us) * 1e-6)  # the part nccl_offset corrects
    nominal_base = np.array(launches)
    sizes_of = {pr: {s.size for s, (_, q) in zip(chosen, picks, strict=True) if q == pr} for pr in PROTOS}
    protos = [pr for pr in PROTOS if len(sizes_of[pr]) >= 2]  # a protocol seen at one size keeps NCCL's latency
    # a correction takes no fitted schedule's fixed cost below 0
    floor = np.array([-min(nominal_base[i] for i, (_, q) in enumerate(picks) if q == pr) for pr in protos])
    grid_best, active = _start(cluster, chosen, groups, picks, floor, measured, protos)
    names = active + protos
    lower = np.concatenate([np.ones(len(active)), floor])
    weight = 1.0 / measured

    def bases_at(w: dict[str, float]) -> np.ndarray:
        """``w`` and the corrections that fit best with it (the time is linear in them)."""
        cols = _latency_columns(picks, protos) * weight[:, None]
        y = (measured - sim(w)) * weight
        b = _bounded_lstsq(cols, y, floor) if protos else np.zeros(0)
        return np.concatenate([[w[g] for g in active], b])

    def refine(w: dict[str, float]) -> tuple[dict[str, float], np.ndarray, np.ndarray, float]:
        """Linearized bounded least squares from ``w``: (w, solution, unconstrained solution, clamp cost).
        A step is taken only as far as it lowers the rms relative error: the time is flat in a group's ``w``
        until the group is the bottleneck, so a slope taken at line rate can send ``w`` far past the point
        where that group starts to bound the large sizes."""
        x = bases_at(w)
        current = rms(w, x)
        unconstrained = np.full(len(names), np.nan)
        clamp_cost = 0.0
        for _ in range(_ITERATIONS):
            t0 = sim(w)
            cols = []
            for g in active:
                t1 = sim({**w, g: w[g] * _PROBE})
                cols.append((t1 - t0) / (w[g] * (_PROBE - 1)))
            for pr in protos:
                cols.append(np.array([1.0 if q == pr else 0.0 for _, q in picks]))
            const = t0 - sum(cols[i] * w[g] for i, g in enumerate(active))
            a = np.column_stack(cols) * weight[:, None] if cols else np.zeros((len(chosen), 0))
            y = (measured - const) * weight
            # a little ridge towards line rate: a group a log barely measures stays at 1
            ridge = math.sqrt(_RIDGE)
            a_r = np.vstack([a, ridge * np.eye(len(names))[: len(active)]]) if active else a
            y_r = np.concatenate([y, ridge * np.ones(len(active))]) if active else y
            if not names:
                break
            unconstrained = np.linalg.lstsq(a_r, y_r, rcond=None)[0]
            new = _bounded_lstsq(a_r, y_r, lower)
            clamp_cost = math.sqrt(float(((a_r @ new - y_r) ** 2).mean())) - math.sqrt(
                float(((a_r @ unconstrained - y_r) ** 2).mean())
            )
            moved = max((abs(new[i] - w[g]) / w[g] for i, g in enumerate(active)), default=0.0)
            for step in _STEPS:
                tried = {**w, **{g: w[g] + step * (float(new[i]) - w[g]) for i, g in enumerate(active)}}
                x_tried = new if step == 1.0 else bases_at(tried)
                if (score := rms(tried, x_tried)) <= current + 1e-12:
                    w, x, current = tried, x_tried, score
                    break
            else:
                break  # no step along the linearized solution improves the fit
            if moved < 2e-3:
                break
        return w, x, unconstrained, clamp_cost

    def rms(w: dict[str, float], x: np.ndarray) -> float:
        shift = {pr: x[len(active) + j] for j, pr in enumerate(protos)}
        t = sim(w) + np.array([shift.get(q, 0.0) for _, q in picks])
        return float(np.sqrt((((t - measured) / measured) ** 2).mean()))

    # from line rate and from the grid's best: the better fit wins; within PREFER of each other, the one
    # nearer line rate (a log rarely tells a slow NVLink from a slow NIC; hardware runs at its rate unless
    # the times say otherwise)
    starts = [dict.fromkeys(groups, 1.0)] + ([grid_best] if grid_best != dict.fromkeys(groups, 1.0) else [])
    fits = [(rms(*r[:2]), r) for r in (refine(dict(st)) for st in starts)]
    best_rms = min(f[0] for f in fits)
    near = [f for f in fits if f[0] <= best_rms + PREFER]
    _, (w, x, unconstrained, clamp_cost) = min(near, key=lambda f: sum(f[1][0][g] - 1 for g in active))
    bases = {pr: float(min(x[len(active) + j], 1.0)) for j, pr in enumerate(protos)}
    fitted = sim(w) + np.array([bases.get(q, 0.0) for _, q in picks])
    rel = (fitted - measured) / measured
    quality = FitQuality(
        points=len(chosen),
        r2=None,
        rms_rel=float(np.sqrt((rel**2).mean())),
        max_rel=float(np.abs(rel).max()),
        residuals=[
            Residual(size_bytes=s.size, measured_s=m, fitted_s=float(max(f, 0.0)), rel=float(r))
            for s, m, f, r in sorted(zip(chosen, measured, fitted, rel, strict=True), key=lambda t: t[0].size)
        ],
    )
    schedule = ", ".join(dict.fromkeys(f"{a}/{pr}" for a, pr in picks))
    out = NcclFit({}, [], bases, warnings=disturbed)
    for i, g in enumerate(active):
        wanted = 1.0 / unconstrained[i] if unconstrained[i] > 0 else math.inf
        out.wanted[g] = wanted
        if math.isinf(wanted) and clamp_cost > CLAMP_COST:
            # a slope of zero or below: the other groups' fit explains the times better with this group
            # taking no time at all -- not "faster than line rate", but a log that cannot see it
            others = [o for o in active if o != g]
            out.warnings.append(
                f"{g}: the log does not separate it from {' and '.join(others) or 'the fixed costs'} "
                f"(unconstrained, the fit gives the {'/'.join(groups[g])} links no time at all); kept at line "
                "rate. Likely cause: another link is far below its stated rate and bounds every size (an "
                "underperforming network), or the schedule does not match what ran (give FILE:algorithm=...)"
            )
        elif wanted > OVER_LINE_RATE and clamp_cost > CLAMP_COST:
            out.warnings.append(
                f"{g}: the log ran faster than {schedule} can at line rate (the fit wants {wanted:.2f} of the "
                f"{'/'.join(groups[g])} rate); clamped at 1. Likely cause: the schedule does not match what ran "
                "(NCCL_ALGO or NCCL_PROTO set, another NCCL version's pick: give FILE:algorithm=...), or the "
                "topology's link rate is below the hardware's"
            )
        for cls in groups[g]:
            nominal_bw = _class_bandwidth(cluster, cls)
            eff = 1.0 / w[g]
            out.entries[cls] = ClassCalibration(
                efficiency=eff,
                bandwidth=None if nominal_bw is None else nominal_bw * eff,
                nominal_bandwidth=nominal_bw,
                fit=quality,
            )
            out.calibrated.append(f"{cls}.efficiency")
    if bases:
        out.calibrated.append("nccl_offset")
    sizes = sorted({s.size for s in chosen})
    out.notes.append(
        f"nccl-tests: fitted through NCCL's schedules ({schedule}) at {len(sizes)} size(s) from {sizes[0]} B; "
        f"efficiencies are fractions of line rate; NCCL's latency estimate corrected per protocol by "
        + (", ".join(f"{pr} {b * 1e6:+.1f} us" for pr, b in bases.items()) or "nothing (too few sizes per protocol)")
    )
    for g in groups:
        if g not in active:
            out.notes.append(f"{g}: the log does not exercise it; nominal")
    return out


def _class_bandwidth(cluster: Cluster, cls: str) -> float | None:
    pairs = classes_of(cluster).get(cls)
    if not pairs:
        return None
    beta = cluster.alpha_beta(*pairs[0])[1]
    return 1.0 / beta if beta > 0 else None
