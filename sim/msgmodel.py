"""The per-message model of a cluster: start delay and wire bytes of every message, and link capacities.

Every :class:`~sim.cluster.Cluster` has one, built from its :class:`~sim.linkmodel.LinkModel` (the
nominal one unless a link model was given). Under the nominal model a message of ``n`` bytes from rank
``s`` on path ``P`` starts draining after ``latency(P) + overhead(s)`` and drains ``n`` bytes. A link
model changes that for the messages of the link classes it names: a message on a path of such a class
starts after the class's α for its size (None keeps the nominal delay) and drains ``n / efficiency``
bytes -- efficiency is the share of a link's rate that reaches the application (TCP/IP headers,
protocol and stack costs). The engine (:mod:`sim.network`), the max-plus path (:mod:`sim.maxplus`) and
the closed forms all ask this one object, so every path gives the same times.

A link model may also make a link direction's capacity depend on the traffic on it (``flows``: a factor
by the number of flows sharing it) and on its reverse direction (``duplex``: a factor by the number of
flows going the other way -- TCP's acknowledgements queue behind that data). The max-min computation
then uses those capacities (:meth:`MessageModel.capacity`); programs whose times depend on them are not
contention-free, so the max-plus path steps aside (:func:`sim.maxplus.contention_free`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ._arrays import floats
from .linkclass import path_class
from .linkmodel import NOMINAL, LinkModel

if TYPE_CHECKING:
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


def _table(factors: Mapping[int, float]) -> np.ndarray:
    """Factor by count 0..max key: 1 for none, each key's factor held up to the next key."""
    top = max(factors)
    table = np.ones(top + 1)
    value = 1.0
    for count in range(1, top + 1):
        value = factors.get(count, value)
        table[count] = value
    return table


class MessageModel:
    """Start delay and wire-byte factor of each message on ``cluster`` under ``link_model``."""

    def __init__(self, cluster: Cluster, link_model: LinkModel = NOMINAL) -> None:
        self.cluster = cluster
        self.link_model = link_model
        self._models: dict[str, _ClassModel | None] = {}
        self._by_pid: list[_ClassModel | None] = []
        #: whether some class's parameters change with the message size
        self.size_dependent = link_model.size_dependent
        self._duplex = _table(link_model.duplex) if link_model.duplex else None
        self._flows = _table(link_model.flows) if link_model.flows else None
        #: whether a link direction's capacity depends on the flows on it (or on its reverse)
        self.shares = link_model.shares
        self._reverse: np.ndarray | None = None
        for cls, segments in link_model.classes.items():
            self._models[cls] = _ClassModel(
                [s.min_bytes for s in segments],
                [s.latency for s in segments],
                [1.0 / s.efficiency for s in segments],
            )
        if not self._models:  # every message nominal: skip the per-path class lookup
            self._latency = cluster.paths.latency_list  # grows in place as routes are interned
            self._overhead = cluster.overhead.tolist()
            self.one = self._nominal_one  # type: ignore[method-assign]
            self.many = self._nominal_many  # type: ignore[method-assign]

    def _nominal_one(self, pid: int, src: int, nbytes: float) -> tuple[float, float]:
        overhead = self._overhead
        if src >= len(overhead):  # an endpoint added after the model was made (Cluster.add_endpoint)
            overhead = self._overhead = self.cluster.overhead.tolist()
        return self._latency[pid] + overhead[src], nbytes

    def _nominal_many(
        self, pids: np.ndarray, srcs: np.ndarray, nbytes: np.ndarray | float
    ) -> tuple[np.ndarray, np.ndarray]:
        paths = self.cluster.paths
        return paths.latency[pids] + self.cluster.overhead[srcs], floats(nbytes, np.shape(pids))

    def _model(self, pid: int) -> _ClassModel | None:
        if not self._models:
            return None
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
        sizes = floats(nbytes, pids.shape)
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
