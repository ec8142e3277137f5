"""Pipelined schedules as step programs, and the actors NCCL has besides ranks.

NCCL cuts a buffer into chunks and streams them through a fixed graph (a chain, a tree, the NVSwitch):
every edge of the graph carries chunk ``j`` one step after the edge that feeds it carried it. A
:class:`Streams` collects such edges -- each a message that repeats once per slice, starting at its *lag*
(the step at which it carries slice 0) -- and :meth:`Streams.program` turns them into a
:class:`~sim.program.StepProgram`: between two lags the set of active edges is constant, so each stretch
is one step repeated, its data-check segments moving one slice per repetition.

The actors are endpoints of the cluster (:meth:`sim.cluster.Cluster.add_endpoint`): ranks, a rank's other
channels (an NCCL channel runs on its own SM: it progresses on its own), and NVSwitch reduction engines.
:class:`EndpointData` lets the data check follow them: a channel's copy is its rank's buffer (channels touch
disjoint segments), an engine has a buffer of its own that starts empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._arrays import all_distinct, distinct
from ..program import Step, StepProgram

__all__ = ["EndpointData", "Streams", "cap_rate", "hops_cap_rate", "launchers", "pipelined_s", "shift"]


def _column(values: Any, n: int) -> np.ndarray:
    """``values`` (a number or ``n`` of them) as ``n`` int64s; np.broadcast_to's checks cost more than
    the rest of :meth:`Streams.add` (tens of thousands of calls at 16k GPUs)."""
    got = np.asarray(values, dtype=np.int64)
    if got.shape == (n,):
        return got
    if got.ndim == 0:
        return np.full(n, got, dtype=np.int64)
    return np.broadcast_to(got, (n,))


def cap_rate(per_slice: float, latency: float) -> float:
    """Slices per second of an actor that NCCL's per-channel cap lets move a slice in no less than
    ``per_slice`` seconds. The cap is NCCL's end-to-end figure, and a simulated step pays its messages'
    ``latency`` on top of their bytes, so the budget is the time left after it -- but never less than half
    of ``per_slice`` (a latency about the size of the slice's time leaves the cap to the links). Slices in
    flight (:meth:`Streams._windowed`) take latency off an actor's steps and give its budget exactly as much
    back: a step the cap binds still lasts ``per_slice``."""
    return 1.0 / max(per_slice - latency, per_slice / 2)


def hops_cap_rate(cluster: Any, per_slice: float, hops: Iterable[tuple[int, int]]) -> float:
    """:func:`cap_rate` with the latency a step pays: the longest of its messages' ``hops`` (endpoint pairs)
    on ``cluster``."""
    return cap_rate(per_slice, max(cluster.alpha_beta(a, b)[0] for a, b in hops))


def pipelined_s(hops: int, slices: int, latency: float, transfer: float, slots: int = 1) -> float:
    """The closed form of a chain of ``hops`` hops streaming ``slices`` slices alone on its links (each hop
    ``latency`` + ``transfer`` a slice) with ``slots`` slices in flight per connection
    (:meth:`Streams._windowed`): the fill pays every hop in full, each further slice max(transfer, (transfer
    + latency) / slots) -- with one slot, (hops + slices - 1) · (latency + transfer)."""
    return hops * (latency + transfer) + (slices - 1) * max(transfer, (transfer + latency) / slots)


class Streams:
    """Messages repeated once per slice (``slices`` of them), each from its own lag on.

    A message carries, in slice ``j``, data-check segments ``[off + scale*j, ... + width)``.
    """

    def __init__(self, endpoints: int, slices: int) -> None:
        self.endpoints = endpoints
        self.slices = slices
        self._cols: list[list[Any]] = [[] for _ in range(8)]
        self._rate = np.zeros(endpoints)  # per actor: slices per second at most (0: no cap)
        #: every endpoint's stand-in after :meth:`_windowed` (None: no actor replaced), and the new launchers
        self.rename: np.ndarray | None = None
        self._launcher: dict[int, int] = {}  # (actor -> its launcher)

    def add(
        self,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        nbytes: float,
        *,
        lag: int | Sequence[int] | np.ndarray,
        reduce: bool,
        off: int | Sequence[int] | np.ndarray,
        scale: int,
        width: int | Sequence[int] = 1,
    ) -> None:
        """Edges ``src[i] -> dst[i]`` of ``nbytes`` per slice; the receiver adds (``reduce``) or stores."""
        src = np.atleast_1d(np.asarray(src, dtype=np.int64))
        n = len(src)
        if not n:
            return
        cols = (
            src,
            _column(dst, n),
            np.full(n, float(nbytes)),
            np.full(n, bool(reduce)),
            _column(lag, n),
            _column(off, n),
            np.full(n, int(scale), dtype=np.int64),
            _column(width, n),
        )
        for store, col in zip(self._cols, cols, strict=True):
            store.append(col)

    def cap(self, actors: Sequence[int] | np.ndarray, slices_per_s: float) -> None:
        """Actors that move at most ``slices_per_s`` slices' worth of their messages per second: NCCL's
        per-channel SM caps. An actor's budget is every byte it sends or receives per slice (its edges in
        the steady state, when every edge carries a slice each step); in a step where only some of its
        edges are active (the pipeline filling or draining) they share the whole budget, each in
        proportion to its bytes, so the actor's messages of a step end together."""
        self._rate[np.asarray(actors, dtype=np.int64)] = slices_per_s

    def _budgets(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> Any:
        """A function of a step's active edges giving their rate bounds (None when no actor is capped)."""
        rate = self._rate
        if not (rate > 0).any():
            return None
        e = self.endpoints
        full = np.bincount(src, weights=size, minlength=e) + np.bincount(dst, weights=size, minlength=e)

        def bounds(on: np.ndarray) -> np.ndarray:
            s, d, w = src[on], dst[on], size[on]
            now = np.bincount(s, weights=w, minlength=e) + np.bincount(d, weights=w, minlength=e)
            out = np.full(len(w), np.inf)
            for end in (s, d):
                capped = rate[end] > 0
                share = w[capped] * rate[end[capped]] * full[end[capped]] / now[end[capped]]
                out[capped] = np.minimum(out[capped], share)
            return out

        return bounds

    def program(self, launch: Sequence[tuple[int, int]] = (), *, cluster: Any = None, slots: int = 1) -> StepProgram:
        """The step program; ``launch`` (from :func:`launchers`): (launcher, actor) pairs, each actor
        waiting first for its launcher's zero-byte message. ``slots`` > 1 (with the ``cluster``): NCCL's
        slices in flight per connection (:meth:`_windowed`; 1: every step pays its hops' latency)."""
        phases = []
        cols = [np.concatenate(c) for c in self._cols] if self._cols[0] else None
        if cols is not None and slots > 1 and cluster is not None:
            cols[0], cols[1], launch = self._windowed(cluster, slots, cols[0], cols[1], cols[2], cols[4], launch)
        if len(launch):
            pairs = np.asarray(launch, dtype=np.int64)
            start = Step.make(pairs[:, 0], pairs[:, 1], 0.0, endpoints=self.endpoints, seg_width=0)
            phases.append((start, 1))
        if cols is None:
            return StepProgram(self.endpoints, tuple(phases))
        src, dst, size, red, lag, off, scale, width = cols
        budget = self._budgets(src, dst, size)
        k = self.slices
        cuts = distinct(np.concatenate([lag, lag + k]))
        # every step holds a subset of the edges: when no pair repeats among them all, none repeats in a step
        unique_pairs = all_distinct(src * self.endpoints + dst)
        # the steps' routes are looked up once, per edge (an edge is in up to k + (the lags) steps)
        edges = (
            Step.make(src, dst, 0.0, endpoints=self.endpoints, seg_width=0, pairs_checked=True)
            if unique_pairs
            else None
        )
        for t0, t1 in zip(cuts[:-1], cuts[1:], strict=True):
            on = (lag <= t0) & (t0 < lag + k)
            if not on.any():
                continue
            step = Step.make(
                src[on],
                dst[on],
                size[on],
                np.where(red[on], size[on], 0.0),
                endpoints=self.endpoints,
                combine=red[on],
                seg=t0 - lag[on],
                seg_stride=1,
                seg_off=off[on],
                seg_scale=scale[on],
                seg_width=width[on],
                bound=None if budget is None else budget(on),
                pairs_checked=unique_pairs,
                owned=True,  # (every array above made here for this step)
            )
            if edges is not None:
                step.routes_of = (edges, np.flatnonzero(on))
            phases.append((step, int(t1 - t0)))
        return StepProgram(self.endpoints, tuple(phases))

    def _windowed(
        self,
        cluster: Any,
        slots: int,
        src: np.ndarray,
        dst: np.ndarray,
        size: np.ndarray,
        lag: np.ndarray,
        launch: Sequence[tuple[int, int]],
    ) -> tuple[np.ndarray, np.ndarray, Sequence[tuple[int, int]]]:
        """The edges and launches with ``slots`` slices in flight per connection (NCCL_STEPS buffer slots: a
        sender waits only for a free slot, so a hop's latency overlaps the other slices' transfers).

        In the steady state a slice then costs max(t, (t + α) / slots) rather than t + α (t: the actor's
        largest slice alone on its path; α: its longest hop's latency), so a sending actor's steps charge
        α' = max(0, (t + α) / slots - t): the actor is replaced by one on the same GPU (or switch) and NIC
        whose per-message overhead is the relief r = α - α' lower (no more than its shortest hop's latency:
        every delay stays >= 0; the engines charge a message its sender's overhead, so the relief is the
        actor's, not each hop's). A capped actor gets it too, and its budget (1 / rate: the slice's time
        less the latency, :func:`cap_rate`) grows by the same r: a step its cap binds lasts NCCL's
        end-to-end figure as before, one its links bind (two heads sharing a GPU's PCIe link, where t
        counts only its own bytes) pays only what the slots leave of its hops. The fill pays the latency in
        full: every actor starts later by the relief of the chain (per lag, its most relieved sender's), by
        its launcher's message (which carries NCCL's fixed cost, if any, as well). The caps move to the new
        actors; :meth:`renamed` moves a builder's symmetry."""
        rate = self._rate
        relief: dict[int, float] = {}
        for a in distinct(src).tolist():
            out = dst[src == a].tolist()
            ab = [cluster.alpha_beta(a, b) for b in out]
            alpha = max(x for x, _ in ab)
            t = max(float(n) * beta for n, (_, beta) in zip(size[src == a].tolist(), ab, strict=True))
            r = min(alpha - max(0.0, (t + alpha) / slots - t), min(x for x, _ in ab))
            if r > 0:
                relief[a] = r
        if not relief:
            return src, dst, launch
        names, size0 = cluster.nodes, cluster.size
        rename = np.arange(cluster.endpoints)
        for a, r in relief.items():
            over = float(cluster.overhead[a]) - r
            rank = a if a < size0 else cluster.endpoint_rank[a - size0]
            via = cluster._via.get(a)
            via_name = None if via is None else names[via]
            key = ("slots", a, slots)
            if rank >= 0:
                rename[a] = cluster.add_endpoints([rank], [via_name], keys=[key], overhead=over)[0]
            else:
                node = names[int(cluster.rank_node[a])]
                rename[a] = cluster.add_endpoint(node=node, via=via_name, key=key, overhead=over)
        # the fill: the longest chain of hops pays each hop's relief back (the most relieved sender per lag)
        got = np.array([relief.get(a, 0.0) for a in src.tolist()])
        levels = np.zeros(int(lag.max()) + 1)
        np.maximum.at(levels, lag, got)
        fill = float(levels.sum())
        own = {int(x): float(cluster.overhead[w]) for w, x in launch}
        for a in distinct(np.concatenate([src, dst])).tolist():
            x = int(rename[a])
            rank = x if x < size0 else cluster.endpoint_rank[x - size0]
            if rank >= 0:  # (its fixed cost and the fill's latency; an engine waits for its first message)
                seconds = own.get(a, 0.0) + fill
                w = cluster.add_endpoints([rank], [None], keys=[("launch", x)], overhead=seconds)[0]
                self._launcher[x] = w
        self.rename = np.concatenate([rename, np.arange(len(rename), cluster.endpoints)])
        self.endpoints = cluster.endpoints
        grown = np.zeros(self.endpoints)
        grown[self.rename[: len(rate)]] = rate
        for a, r in relief.items():  # a capped actor's budget takes back the latency its steps no longer pay
            if rate[a] > 0:
                grown[rename[a]] = 1.0 / (1.0 / rate[a] + r)
        self._rate = grown
        return self.rename[src], self.rename[dst], [(w, x) for x, w in self._launcher.items()]

    def renamed(self, sigma: np.ndarray) -> np.ndarray:
        """``sigma`` (a permutation of the endpoints the builder named, as :func:`shift` makes it) on the
        actors and launchers :meth:`_windowed` put in their place (itself where it put none)."""
        rename = self.rename
        if rename is None:
            return sigma
        out = np.arange(len(rename))
        m = min(len(sigma), len(rename))
        out[rename[:m]] = rename[sigma[:m]]
        for x, w in self._launcher.items():
            out[w] = self._launcher.get(int(out[x]), w)
        return out


def launchers(cluster: Any, actors: Sequence[int], seconds: float) -> list[tuple[int, int]]:
    """(launcher, actor) pairs: for every actor on a GPU, a launcher on the same GPU whose zero-byte
    message to it takes ``seconds`` (its per-message overhead) -- NCCL's fixed cost of a collective,
    paid before any data moves."""
    ranks, launched = [], []
    size, endpoint_rank = cluster.size, cluster.endpoint_rank
    for a in dict.fromkeys(int(x) for x in actors):
        rank = a if a < size else endpoint_rank[a - size]
        if rank >= 0:
            ranks.append(rank)
            launched.append(a)
    keys: list[object] = [("launch", a) for a in launched]
    made = cluster.add_endpoints(ranks, [None] * len(ranks), overhead=seconds, keys=keys)
    return list(zip(made, launched, strict=True))


def shift(
    endpoints: int,
    src: Sequence[int] | np.ndarray,
    dst: Sequence[int] | np.ndarray,
    launch: Sequence[tuple[int, int]] = (),
) -> np.ndarray:
    """A permutation of ``endpoints`` endpoints taking actor ``src[i]`` to ``dst[i]``, each actor's
    launcher (``launch``: (launcher, actor) pairs) to its image's, and every other endpoint to itself:
    the symmetry a schedule states for :mod:`sim.symmetry` (which checks it)."""
    sigma = np.arange(endpoints)
    sigma[np.asarray(src, dtype=np.int64)] = np.asarray(dst, dtype=np.int64)
    if len(launch):
        pairs = np.asarray(launch, dtype=np.int64)
        launcher = np.full(endpoints, -1, dtype=np.int64)
        launcher[pairs[:, 1]] = pairs[:, 0]
        image = launcher[sigma[pairs[:, 1]]]
        sigma[pairs[:, 0]] = np.where(image >= 0, image, pairs[:, 0])
    return sigma


class EndpointData:
    """The data check (:class:`~sim.runtime.DataCheck`) seen by endpoints beyond the ranks."""

    def __init__(self, data: Any, cluster: Any, p: int) -> None:
        self.data = data
        self.size = cluster.size
        self.rank_of = list(cluster.endpoint_rank)
        self.own: dict[int, np.ndarray] = {}
        counts = getattr(data, "counts", None)
        self.shape = None if counts is None else counts.shape[1:]

    def _row(self, e: int) -> tuple[Any, int]:
        if e < self.size:
            return None, e
        r = self.rank_of[e - self.size]
        if r >= 0:
            return None, r
        if e not in self.own:
            self.own[e] = np.zeros(self.shape, dtype=np.int32)
        return self.own[e], -1

    def take(self, e: int, seg: Any) -> Any:
        if self.shape is None:
            return None
        own, r = self._row(e)
        return own[seg].copy() if own is not None else self.data.take(r, seg)

    def add(self, e: int, seg: Any, payload: Any) -> None:
        if self.shape is None:
            return
        own, r = self._row(e)
        if own is not None:
            own[seg] += payload
        else:
            self.data.add(r, seg, payload)

    def put(self, e: int, seg: Any, payload: Any) -> None:
        if self.shape is None:
            return
        own, r = self._row(e)
        if own is not None:
            own[seg] = payload
        else:
            self.data.put(r, seg, payload)

    def wrong_ranks(self) -> list[int]:
        return self.data.wrong_ranks()

    def verify(self) -> None:
        self.data.verify()
