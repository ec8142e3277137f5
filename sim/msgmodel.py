"""The per-message model a calibration puts on a cluster: start delay and wire bytes of every message.

Without a calibration a message of ``n`` bytes from rank ``s`` on path ``P`` starts draining after
``latency(P) + overhead(s)`` and drains ``n`` bytes. With one (:func:`sim.calibration.apply_calibration`)
a message on a path of a calibrated link class starts after the class's fitted α for its size and drains
``n / efficiency`` bytes -- efficiency is the share of a link's rate that reaches the application (TCP/IP
headers, protocol and stack costs). Classes or parameters the calibration does not name keep the nominal
values. The engine (:mod:`sim.network`), the max-plus path (:mod:`sim.maxplus`) and the closed forms all
ask this one object, so every path gives the same times.

A calibration may also make a link direction's capacity depend on the traffic on it (``flows``: a factor
by the number of flows sharing it) and on its reverse direction (``duplex``: a factor by the number of
flows going the other way -- TCP's acknowledgements queue behind that data). The max-min computation
then uses those capacities; programs whose times depend on them are not contention-free, so the
max-plus path steps aside (:func:`sim.maxplus.contention_free`).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import numpy as np

from .linkclass import path_class

if TYPE_CHECKING:
    from .calibration import Calibration
    from .cluster import Cluster

__all__ = ["MessageModel"]


class _ClassModel:
    """Segments of one class: sizes where each starts, their α (None: nominal) and 1/efficiency."""

    def __init__(self, mins: list[float], delays: list[float | None], factors: list[float]) -> None:
        self.mins = mins
        self.delays = delays
        self.factors = factors

    def at(self, nbytes: float) -> tuple[float | None, float]:
        i = bisect.bisect_right(self.mins, nbytes) - 1 if len(self.mins) > 1 else 0
        return self.delays[max(i, 0)], self.factors[max(i, 0)]


def _table(factors: dict[int, float]) -> np.ndarray:
    """Factor by count 0..max key: 1 for none, each key's factor held up to the next key."""
    top = max(factors)
    table = np.ones(top + 1)
    value = 1.0
    for count in range(1, top + 1):
        value = factors.get(count, value)
        table[count] = value
    return table


class MessageModel:
    """Start delay and wire-byte factor of each message on ``cluster`` under ``calibration``."""

    def __init__(self, cluster: Cluster, calibration: Calibration) -> None:
        self.cluster = cluster
        self.calibration = calibration
        self._models: dict[str, _ClassModel | None] = {}
        self._by_pid: list[_ClassModel | None] = []
        self.size_dependent = False
        self._duplex = _table(calibration.duplex) if "duplex" in calibration.calibrated else None
        self._flows = _table(calibration.flows) if "flows" in calibration.calibrated else None
        #: whether a link direction's capacity depends on the flows on it (or on its reverse)
        self.shares = self._duplex is not None or self._flows is not None
        self._reverse: np.ndarray | None = None
        for cls in calibration.classes:
            latency, efficiency, segments = calibration.applied(cls)
            if segments:
                self._models[cls] = _ClassModel(
                    [s.min_bytes for s in segments],
                    [s.latency for s in segments],
                    [1.0 / s.efficiency for s in segments],
                )
                self.size_dependent = self.size_dependent or len(segments) > 1
            elif latency is not None or efficiency is not None:
                self._models[cls] = _ClassModel([0.0], [latency], [1.0 / (efficiency or 1.0)])

    def _model(self, pid: int) -> _ClassModel | None:
        by_pid = self._by_pid
        while len(by_pid) <= pid:
            by_pid.append(self._models.get(path_class(self.cluster, len(by_pid))))
        return by_pid[pid]

    def one(self, pid: int, src: int, nbytes: float) -> tuple[float, float]:
        """(start delay in seconds, wire bytes) of one message."""
        nominal = self.cluster.paths.latency_list[pid] + float(self.cluster.overhead[src])
        model = self._model(pid)
        if model is None:
            return nominal, nbytes
        delay, factor = model.at(nbytes)
        return (nominal if delay is None else delay), nbytes * factor

    def many(self, pids: np.ndarray, srcs: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start delays, wire bytes) of many messages (arrays of one length)."""
        pids = np.asarray(pids, dtype=np.int64)
        sizes = np.broadcast_to(np.asarray(nbytes, dtype=float), pids.shape)
        delay = self.cluster.paths.latency[pids] + self.cluster.overhead[srcs]
        wire = np.array(sizes, dtype=float, copy=True)
        if len(pids):
            self._model(int(pids.max()))
        cache: dict[tuple[int, float], tuple[float | None, float]] = {}
        for i, (pid, n) in enumerate(zip(pids.tolist(), sizes.tolist(), strict=True)):
            model = self._by_pid[pid]
            if model is None:
                continue
            key = (id(model), n)
            hit = cache.get(key)
            if hit is None:
                hit = cache[key] = model.at(n)
            if hit[0] is not None:
                delay[i] = hit[0]
            wire[i] = n * hit[1]
        return delay, wire

    def capacity(self, arc: np.ndarray) -> np.ndarray:
        """Every link direction's capacity while flows cross the directions ``arc`` (one entry per flow
        and direction crossed): scaled by the ``flows`` factor of its own count of flows and by the
        ``duplex`` factor of the count on its reverse direction."""
        cl = self.cluster
        counts = np.bincount(arc, minlength=cl.num_arcs)
        factor = np.ones(cl.num_arcs)
        if self._flows is not None:
            factor *= self._flows[np.minimum(counts, len(self._flows) - 1)]
        if self._duplex is not None:
            rev = self._reverse_arcs()
            reverse = np.where(rev >= 0, counts[np.maximum(rev, 0)], 0)
            factor *= self._duplex[np.minimum(reverse, len(self._duplex) - 1)]
        return np.asarray(cl.capacity * factor)

    def _reverse_arcs(self) -> np.ndarray:
        if self._reverse is None:
            cl = self.cluster
            index = {(int(u), int(v)): i for i, (u, v) in enumerate(zip(cl.arc_u, cl.arc_v, strict=True))}
            self._reverse = np.array([index.get((int(v), int(u)), -1) for u, v in zip(cl.arc_u, cl.arc_v, strict=True)])
        return self._reverse

    def alpha_beta(self, src: int, dst: int, nbytes: float) -> tuple[float, float]:
        """Hockney α and β of the route src -> dst for a message of ``nbytes`` under the model."""
        pid = self.cluster.path_id(src, dst)
        alpha, beta = self.cluster.alpha_beta(src, dst)
        model = self._model(pid)
        if model is None:
            return alpha, beta
        delay, factor = model.at(nbytes)
        return (alpha if delay is None else delay), beta * factor
