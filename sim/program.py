"""Step programs: an algorithm as phases of repeated steps, each step a set of messages.

A step says, for every message, who sends how many bytes to whom, how many of them the receiver reduces
(γ per byte), and which data-check segments the message carries and whether the receiver adds them into
its own copy or stores them. Its meaning is the per-rank model every algorithm in collsim follows:

    **a rank posts the sends of its step, waits until they have left and its receives of the step have
    arrived, reduces what it received (on its own processor), and only then starts its next step.**

Messages are eager: a send starts when its sender reaches the step, whatever the receiver is doing.

The same program runs two ways, which the tests hold to the same times:

* :func:`run_messages` -- message-level: a SimPy process per rank and a flow per message, with the
  symbolic data check (so a program proves it delivers every contribution exactly once);
* :class:`~sim.fastpath.FastExecutor` -- vectorized over ranks (and, for contention-free programs, a
  max-plus recurrence; see :mod:`sim.maxplus`).

Segments of a repeated step move with the repetition ``k`` (a ring's chunk index turns every step): the
message carries segments ``[lo, lo + width)`` with ``lo = off + scale * ((base + k * stride) % mod)``,
or, for a message that looks its place up in the step's table (``at >= 0``: NCCL's rings, where the block
a ring position carries is the rank at position ``i - k`` of that ring, no affine function of ``i - k``),
``lo = off + scale * table[at + (base + k * stride) % mod]``.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._arrays import all_distinct
from ._cores import PURE

__all__ = ["Step", "StepProgram", "concat", "merge", "overlay", "run_messages", "share_routes"]

IntArray = Sequence[int] | np.ndarray | int


def _column(value: Any, n: int, dtype: Any, owned: bool) -> np.ndarray:
    """``value`` as a column of ``n`` of ``dtype`` the step holds: a copy, or with ``owned`` the array
    itself where it already is one of its own (no view of another)."""
    a = np.asarray(value, dtype=dtype)
    if owned and a.shape == (n,) and a.base is None and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.broadcast_to(a, (n,)).copy()


@dataclass(eq=False)
class Step:
    """One step's messages (see the module docstring); build it with :meth:`make`.

    Steps built once and repeated (a ring's every step) share their per-rank counts and their routes.
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    reduce: np.ndarray
    endpoints: int
    combine: np.ndarray
    seg: np.ndarray  # (7, n): off, scale, base, stride, mod, width, at (-1: no table look-up)
    bound: np.ndarray | None = None  # per-message rate cap (wire bytes/s); None: no message has one
    _pids: dict[int, np.ndarray] = field(init=False, repr=False, default_factory=dict)
    #: (step, rows): this step's messages are rows of that step's, whose routes it borrows
    routes_of: tuple[Step, np.ndarray] | None = field(default=None, repr=False)
    #: the segment table the messages with ``at >= 0`` read (None: no message reads one)
    table: np.ndarray | None = field(default=None, repr=False)
    #: an earlier step with the same senders and receivers in the same order, whose routes this one takes
    #: (:func:`share_routes`)
    twin: Step | None = field(init=False, repr=False, default=None)

    @classmethod
    def make(
        cls,
        src: IntArray,
        dst: IntArray,
        nbytes: float | Sequence[float] | np.ndarray,
        reduce: float | Sequence[float] | np.ndarray = 0.0,
        *,
        endpoints: int,
        combine: bool | Sequence[bool] | np.ndarray | None = None,
        seg: IntArray = 0,
        seg_width: IntArray = 1,
        seg_stride: IntArray = 0,
        seg_mod: IntArray = 1 << 62,
        seg_off: IntArray = 0,
        seg_scale: IntArray = 1,
        seg_table: Sequence[int] | np.ndarray | None = None,
        seg_at: IntArray = 0,
        bound: float | Sequence[float] | np.ndarray | None = None,
        pairs_checked: bool = False,
        owned: bool = False,
    ) -> Step:
        """Messages ``src[i] -> dst[i]`` of ``nbytes[i]``; the receiver reduces ``reduce[i]`` bytes and,
        for the data check, adds (``combine``, default: where ``reduce > 0``) or stores segments
        ``[lo, lo + seg_width)``, ``lo = seg_off + seg_scale * ((seg + k * seg_stride) % seg_mod)`` in
        the step's ``k``-th repetition; with ``seg_table``, ``lo = seg_off + seg_scale * seg_table[seg_at +
        (seg + k * seg_stride) % seg_mod]`` (a ring whose block at each step is a rank looked up by ring
        position). ``bound`` caps messages' rates (wire bytes per second; ``inf``:
        none) -- a sender that cannot move data faster, whatever the links give it. ``pairs_checked``: the
        caller has made sure no (sender, receiver) pair repeats (a subset of a checked set). ``owned``: the
        arrays given are the caller's to give (made for this step, held nowhere else): kept, not copied."""
        src = np.atleast_1d(np.asarray(src, dtype=np.int64))
        n = len(src)
        dst = _column(dst, n, np.int64, owned)
        size = _column(nbytes, n, float, owned)
        red = _column(reduce, n, float, owned)
        comb = red > 0 if combine is None else _column(combine, n, bool, owned)
        table = None if seg_table is None else np.asarray(seg_table, dtype=np.int64).ravel()
        at = -1 if table is None else seg_at
        segs = np.empty((7, n), dtype=np.int64)  # each row written once (not a copy per row, then a stack)
        for row, v in zip(segs, (seg_off, seg_scale, seg, seg_stride, seg_mod, seg_width, at), strict=True):
            row[:] = np.broadcast_to(np.asarray(v, dtype=np.int64), (n,))
        if table is not None and n and ((segs[6] < 0).any() or (segs[6] + segs[4] > len(table)).any()):
            raise ValueError(f"step: seg_at + seg_mod must stay within the segment table ({len(table)} entries)")
        if n and ((src < 0).any() or (dst < 0).any() or (src >= endpoints).any() or (dst >= endpoints).any()):
            raise ValueError("step: every endpoint must be in 0..endpoints-1")
        if n and not pairs_checked and not all_distinct(src * endpoints + dst):
            raise ValueError("step: a (sender, receiver) pair may appear once per step")
        caps = None
        if bound is not None:
            caps = _column(bound, n, float, owned)
            if n and not (caps > 0).all():
                raise ValueError("step: a rate bound must be > 0")
            if np.isinf(caps).all():
                caps = None
        return cls(src, dst, size, red, endpoints, comb, segs, caps, table=table)

    # per-rank views, computed when first used (a step merged into a bigger one never needs them)
    @functools.cached_property
    def out_count(self) -> np.ndarray:
        return np.bincount(self.src, minlength=self.endpoints).astype(np.int64)

    @functools.cached_property
    def in_count(self) -> np.ndarray:
        return np.bincount(self.dst, minlength=self.endpoints).astype(np.int64)

    @functools.cached_property
    def reduce_at(self) -> np.ndarray:
        return np.bincount(self.dst, weights=self.reduce, minlength=self.endpoints)

    @functools.cached_property
    def _order(self) -> np.ndarray:
        return np.argsort(self.src, kind="stable")

    @functools.cached_property
    def _ptr(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.out_count)))

    @functools.cached_property
    def _in_order(self) -> np.ndarray:
        return np.argsort(self.dst, kind="stable")

    @functools.cached_property
    def _in_ptr(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.in_count)))

    def __len__(self) -> int:
        return len(self.src)

    def pids(self, network: Any) -> np.ndarray:
        """Interned routes of the messages on ``network``'s cluster (computed once per cluster)."""
        key = id(network.cluster)
        got = self._pids.get(key)
        if got is None and self.twin is not None:
            self._pids[key] = got = self.twin.pids(network)
        if got is None and self.routes_of is not None:
            whole, rows = self.routes_of
            got = whole.pids(network)[rows]
            self._pids[key] = got
        if got is None:
            self._pids[key] = got = network.cluster.path_ids(self.src, self.dst)
        return got

    @functools.cached_property
    def _plain_lists(self) -> tuple[list[int], list[int], list[float], list[float | None], list[float]]:
        bound = [None] * len(self.src) if self.bound is None else self.bound.tolist()
        return self.src.tolist(), self.dst.tolist(), self.nbytes.tolist(), bound, self.reduce_at.tolist()

    def plain(self, rank: int) -> tuple[list[tuple[int, float, float | None]], list[int], float]:
        """Rank ``rank``'s part of the step as :func:`run_messages` reads it, in Python numbers: its
        sends ``(dst, nbytes, bound)`` (bound None where the step has none), its receives' senders,
        and the bytes it reduces."""
        src, dst, nbytes, bound, reduce = self._plain_lists
        sends = [(dst[m], nbytes[m], bound[m]) for m in self.sends_of(rank).tolist()]
        return sends, [src[m] for m in self.recvs_of(rank).tolist()], reduce[rank]

    def plain_ranks(
        self,
    ) -> tuple[list[tuple[tuple[int, float, float | None], ...]], list[tuple[int, ...]], list[float]]:
        """:meth:`plain` for every rank at once, as tuples: per rank its sends, its receives' senders, and the
        bytes it reduces (the same numbers, in the same order; slices of lists rather than of arrays)."""
        src, dst, nbytes, bound, reduce = self._plain_lists
        msgs = list(zip(dst, nbytes, bound, strict=True))
        order, ptr = self._order.tolist(), self._ptr.tolist()
        in_order, in_ptr = self._in_order.tolist(), self._in_ptr.tolist()
        sends = [tuple(map(msgs.__getitem__, order[ptr[r] : ptr[r + 1]])) for r in range(self.endpoints)]
        srcs = [tuple(map(src.__getitem__, in_order[in_ptr[r] : in_ptr[r + 1]])) for r in range(self.endpoints)]
        return sends, srcs, reduce

    def sent_by(self, senders: np.ndarray) -> np.ndarray:
        """Indices of the messages whose sender is in ``senders`` (distinct endpoints)."""
        if len(senders) == self.endpoints:
            return np.arange(len(self.src))
        lo = self._ptr[senders]
        counts = self._ptr[senders + 1] - lo
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        return self._order[np.repeat(lo, counts) + offsets]

    def sends_of(self, rank: int) -> np.ndarray:
        return self._order[self._ptr[rank] : self._ptr[rank + 1]]

    def recvs_of(self, rank: int) -> np.ndarray:
        return self._in_order[self._in_ptr[rank] : self._in_ptr[rank + 1]]

    def from_repetition(self, k: int) -> Step:
        """This step as seen from its ``k``-th repetition on (its data-check segments moved on by k)."""
        if k == 0:
            return self
        seg = self.seg.copy()
        seg[2] += k * seg[3]
        return Step(
            self.src,
            self.dst,
            self.nbytes,
            self.reduce,
            self.endpoints,
            self.combine,
            seg,
            self.bound,
            self._routes(),
            self.table,
        )

    def _routes(self) -> tuple[Step, np.ndarray]:
        """Where a step holding these same messages finds their routes."""
        return self.routes_of or (self, np.arange(len(self.src)))

    def segments(self, m: int, k: int) -> slice:
        """The data-check segments message ``m`` carries in repetition ``k``."""
        off, scale, base, stride, mod, width, at = self.seg[:, m].tolist()
        v = (base + k * stride) % mod
        lo = off + scale * (v if at < 0 else int(self.table[at + v]))  # type: ignore[index]
        return slice(lo, lo + width)


@dataclass(frozen=True)
class StepProgram:
    """Phases of repeated steps over ``endpoints`` ranks: ``phases = ((step, times), ...)``.

    ``symmetry``, where the builder states one: a permutation of the endpoints that it believes maps
    the program onto itself (NCCL's channels shifted across the rails); :mod:`sim.symmetry` checks it
    and then runs one member of every orbit."""

    endpoints: int
    phases: tuple[tuple[Step, int], ...]
    symmetry: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def total_steps(self) -> int:
        return sum(times for _, times in self.phases)

    @property
    def messages(self) -> int:
        return sum(len(step) * times for step, times in self.phases)


def share_routes(steps: Sequence[Step]) -> None:
    """Steps whose senders and receivers are another's, message for message (a program's later phase often
    repeats an earlier one's pairs: halving-doubling's all-gather its reduce-scatter's), routed once: each
    takes the first such step as its :attr:`~Step.twin`, whose path ids it reads (the same ids: a pair's
    route is interned once per cluster, and the twin's pairs are its own in the same order)."""
    first: dict[tuple[bytes, bytes], Step] = {}
    for step in steps:
        if not len(step):
            continue
        lead = first.setdefault((step.src.tobytes(), step.dst.tobytes()), step)
        while lead.twin is not None:  # (a step with no twin of its own: never a loop)
            lead = lead.twin
        if lead is not step and step.twin is None:
            step.twin = lead


def concat(*programs: StepProgram) -> StepProgram:
    """One program after the other (each rank moves on to the next when it is done with its part)."""
    endpoints = max(p.endpoints for p in programs)
    if any(p.endpoints != endpoints for p in programs):
        raise ValueError("concat: programs over different endpoint counts")
    return StepProgram(endpoints, tuple(phase for p in programs for phase in p.phases if phase[1] > 0))


def merge(programs: Sequence[StepProgram], endpoints: int) -> StepProgram:
    """Programs over disjoint sets of ranks run side by side: step k of the result holds step k of
    each. The programs must have the same phase structure (the same repetition counts)."""
    if not programs:
        return StepProgram(endpoints, ())
    shape = [times for _, times in programs[0].phases]
    if any([times for _, times in p.phases] != shape for p in programs):
        raise ValueError("merge: programs must have the same phases")
    phases = [
        (_together([p.phases[k][0] for p in programs], endpoints, "merge"), times) for k, times in enumerate(shape)
    ]
    return StepProgram(endpoints, tuple(phases))


def overlay(endpoints: int, *sequences: Sequence[tuple[Step, int]]) -> StepProgram:
    """Phase sequences run side by side, step k of the result holding step k of each (a sequence that has
    ended contributes nothing; phases of different lengths are cut where any of them changes); their
    (sender, receiver) pairs must differ."""
    cuts = sorted({0} | {int(c) for seq in sequences for c in np.cumsum([t for _, t in seq])})
    phases = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=False):
        parts = []
        for seq in sequences:
            start = 0
            for step, times in seq:
                if start <= a < start + times:
                    parts.append(step.from_repetition(a - start))
                    break
                start += times
        phases.append((_together(parts, endpoints, "overlay"), b - a))
    return StepProgram(endpoints, tuple(phases))


def _together(steps: Sequence[Step], endpoints: int, who: str) -> Step:
    """One step holding every message of ``steps`` (their rate bounds kept); a (sender, receiver) pair
    may still appear once."""
    cat = {f: np.concatenate([getattr(st, f) for st in steps]) for f in ("src", "dst", "nbytes", "reduce", "combine")}
    seg = np.concatenate([st.seg for st in steps], axis=1)
    table = None
    if any(st.table is not None for st in steps):  # the tables end to end; each ``at`` moves with its table
        starts = np.cumsum([0] + [0 if st.table is None else len(st.table) for st in steps])
        shift = np.repeat(starts[:-1], [len(st) for st in steps])
        seg[6] = np.where(seg[6] >= 0, seg[6] + shift, -1)
        table = np.concatenate([st.table for st in steps if st.table is not None])
    bound = None
    if any(st.bound is not None for st in steps):
        bound = np.concatenate([np.full(len(st), np.inf) if st.bound is None else st.bound for st in steps])
    step = Step(
        cat["src"], cat["dst"], cat["nbytes"], cat["reduce"], endpoints, cat["combine"], seg, bound, table=table
    )
    if not all_distinct(step.src * endpoints + step.dst):
        raise ValueError(f"{who}: the programs share a (sender, receiver) pair in a step")
    return step


#: without the data check, each rank runs :func:`_plain_rank` (the same sends, receives and waits, with
#: no payloads); tests turn it off to hold it to the lines of :func:`run_messages`
_PLAIN_RANKS = not PURE


def _plain_rank(job: Any, program: StepProgram, r: int) -> Generator[Any, Any, None]:
    """Rank ``r``'s process of :func:`run_messages` without the data check (``job.data`` a
    :class:`~sim.runtime.NoData`): the same calls of ``job.send`` / ``job.recv`` / ``job.compute`` in the
    same order, with the step's numbers read off Python lists (:meth:`Step.plain`) rather than numpy
    scalars, no payloads, and an event that comes processed not yielded (SimPy's process would go on at
    once: :meth:`simpy.events.Process._resume` loops over a processed event without a step). Where the
    compiled core is built, :func:`_compiled_ranks` runs these steps in C (``sim._ratecore.Crank``); this is
    their reference and the path without the core."""
    send, recv = job.send, job.recv
    compute = job.gamma > 0
    s = 0
    for step, times in program.phases:
        sends, srcs, reduce = step.plain(r)
        if not sends and not srcs:
            s += times
            continue
        for _ in range(times):
            # (bound by keyword, as run_messages' own rank passes it)
            sent = [
                send(r, dst, nbytes, None, s) if bound is None else send(r, dst, nbytes, None, s, bound=bound)
                for dst, nbytes, bound in sends
            ]
            for src in srcs:
                event = recv(r, src, s)
                if event.callbacks is not None:
                    yield event
            for event in sent:
                if event.callbacks is not None:
                    yield event
            if reduce > 0 and compute:
                yield job.compute(r, reduce * job.gamma)
            s += 1


#: the plain ranks as compiled loops (``sim._ratecore.Crank``: no generator, no SimPy process) where the core is
#: built and the job's receives are its compiled lines; tests turn it off to hold it to :func:`_plain_rank`
_CRANKS = _PLAIN_RANKS


def _compiled_ranks(job: Any, program: StepProgram) -> list[Any] | None:
    """The ranks of :func:`run_messages` without the data check as ``sim._ratecore.Crank`` loops, each started
    by an event scheduled as SimPy's ``Initialize`` is (urgent, in rank order) and ending with an event
    that stands for its process (triggered and scheduled as ``Process._resume`` does): those events, or
    None where :func:`_plain_rank`'s processes must run (no compiled core, Job.send / Job.recv another's,
    the job's receives not compiled). A rank's messages arrive in its own inbox (by sender and step) rather
    than in the job's mailboxes; the job counts what the inboxes hold (:meth:`~sim.runtime.Job.pending_receives`).
    An event is made only where a rank waits on a receive or a send that has not come (see the core's
    notes above ``Crank``)."""
    core, own = runtime_core()
    crank = getattr(core, "Crank", None)
    if not _CRANKS or crank is None or (type(job).send, type(job).recv) != own or job._ctx is None:
        return None
    from simpy.events import URGENT, Event  # noqa: PLC0415 - (SimPy's event internals, as sim.network's)

    from . import network  # noqa: PLC0415 - (as in runtime_core)

    msg_core = network._MSG_CORE  # (the ranks' routes and send records kept: read at the start of the run)
    env = job.env
    ranks: list[Any] = []
    dummy = Event(env)  # (each compiled send's own event: processed, nobody waits on it)
    dummy._ok = True  # type: ignore[attr-defined]
    dummy._value = None  # type: ignore[attr-defined]
    dummy.callbacks = None  # type: ignore[assignment]
    dones = []
    parts = {id(step): step for step, _ in program.phases}  # every rank's part of a step at once
    parts = {key: step.plain_ranks() for key, step in parts.items()}  # (a step repeated in phases: once)
    phases = [(int(times), parts[id(step)]) for step, times in program.phases]
    for r in range(program.endpoints):
        plan = [(times, sends[r], srcs[r], float(reduce[r])) for times, (sends, srcs, reduce) in phases]
        done = Event(env)
        rank = crank(r, tuple(plan), (job, job.net, ranks, env, done, job.gamma > 0, dummy, msg_core))
        ranks.append(rank)
        start = Event(env)  # (simpy.events.Initialize's lines)
        start.callbacks = [rank]
        start._ok = True  # type: ignore[attr-defined]
        start._value = None  # type: ignore[attr-defined]
        env.schedule(start, URGENT)
        dones.append(done)
    job._inboxes.extend(ranks)  # (the messages that arrive in the ranks' inboxes, not the job's mailboxes)
    return dones


def runtime_core() -> tuple[Any, tuple[Any, Any]]:
    """The compiled core as :mod:`sim.runtime` calls it (``sim.network._ops``), and Job.send and Job.recv
    as the module defines them."""
    from . import runtime  # noqa: PLC0415 - (sim.runtime imports the network; this module does not)

    return runtime._CORE, runtime._JOB_LINES


def _without_data(data: Any) -> bool:
    """Whether a job runs without the data check (its data a :class:`~sim.runtime.NoData`)."""
    from .runtime import NoData  # noqa: PLC0415 - (as in runtime_core)

    return isinstance(data, NoData)


def run_messages(job: Any, program: StepProgram) -> Generator[Any, Any, None]:
    """Run ``program`` message-level: a SimPy process per rank, a flow per message, payloads for the
    data check (``job.data``), reductions on each rank's processor."""
    env = job.env
    data = job.data
    if _PLAIN_RANKS and _without_data(data):
        procs = _compiled_ranks(job, program)
        if procs is None:
            procs = [env.process(_plain_rank(job, program, r)) for r in range(program.endpoints)]
        yield env.all_of(procs)
        return

    def rank(r: int) -> Generator[Any, Any, None]:
        s = 0
        for step, times in program.phases:
            sends = step.sends_of(r).tolist()
            recvs = step.recvs_of(r).tolist()
            reduce = float(step.reduce_at[r])
            for k in range(times):
                if not sends and not recvs:
                    s += times - k
                    break
                sent = [
                    job.send(r, int(step.dst[m]), float(step.nbytes[m]), data.take(r, step.segments(m, k)), s)
                    if step.bound is None
                    else job.send(
                        r,
                        int(step.dst[m]),
                        float(step.nbytes[m]),
                        data.take(r, step.segments(m, k)),
                        s,
                        bound=float(step.bound[m]),
                    )
                    for m in sends
                ]
                got = []
                for m in recvs:
                    got.append((m, (yield job.recv(r, int(step.src[m]), s))))
                for event in sent:  # noqa: UP028 - SimPy sends into the generator; a list iterator cannot take it
                    yield event
                for m, payload in got:
                    if step.combine[m]:
                        data.add(r, step.segments(m, k), payload)
                    else:
                        data.put(r, step.segments(m, k), payload)
                if reduce > 0 and job.gamma > 0:
                    yield job.compute(r, reduce * job.gamma)
                s += 1

    procs = [env.process(rank(r)) for r in range(program.endpoints)]
    yield env.all_of(procs)
