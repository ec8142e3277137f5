"""What an algorithm sees while it runs: a :class:`Job` (send, receive, reduce, per rank) and the
symbolic data that proves it delivers every contribution exactly once.

Write an algorithm as a SimPy process over a job::

    def my_allreduce(job):
        def rank(r):
            peer = r ^ 1
            payload = job.data.take(r, slice(None))
            job.send(r, peer, job.nbytes, payload)
            got = yield job.recv(r, peer)
            yield from job.combine(r, slice(None), got, job.nbytes)
        yield job.env.all_of([job.env.process(rank(r)) for r in range(job.p)])

Data is tracked as counts, not values: ``counts[rank, segment, contributor]`` is how many times
``contributor``'s input is folded into ``rank``'s copy of ``segment``. A correct all-reduce ends with
every count equal to one -- a contribution lost reads 0, one added twice reads 2.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import simpy
from simpy.events import Event

from . import network
from .errors import RunError
from .network import Network, settle

__all__ = ["DataCheck", "Job", "NoData"]

_SETTLE = settle  # job_recv and job_deliver settle events as this does
_CORE: Any = network._ops  # the compiled core where it is built (one lookup a message less)
#: Job.post's engine sends with the routes it is given (``sim._ratecore.eng_post``: a loop in C, no pair looked
#: up in the cluster's dict of routes); tests turn it off to compare (tests/test_ps_msg.py)
_POST_CORE = True

Segment = int | slice | np.ndarray | list[int]


class DataCheck:
    """Contribution counts for a collective over ``p`` ranks and ``segments`` buffer segments.

    For all-reduce, reduce and broadcast, ``segments`` divide the per-rank buffer. For the gathering
    and scattering collectives the buffer is the total (nccl-tests' size), divided into ``p`` blocks of
    ``segments // p`` segments; block ``b`` belongs to rank ``b``. For all-to-all, segment ``s * p + d``
    is the block rank ``s`` sends to rank ``d``. For send/recv every rank sends its buffer to the next.
    """

    def __init__(self, collective: str, p: int, segments: int, root: int = 0) -> None:
        if p * segments * p > 50_000_000:
            raise RunError(f"data check for {p} ranks x {segments} segments is too large; run it on fewer ranks")
        self.collective = collective
        self.p = p
        self.segments = segments
        self.root = root
        self.counts = np.zeros((p, segments, p), dtype=np.int32)
        self.expected = np.zeros((p, segments, p), dtype=np.int32)
        self.checked = np.ones(p, dtype=bool)  # which ranks' final buffers matter
        ranks = np.arange(p)
        per = segments // p if collective in ("allgather", "gather", "scatter", "reducescatter") else 0
        owner = np.arange(segments) // per if per else None
        if collective == "allreduce":
            self.counts[ranks, :, ranks] = 1
            self.expected[:] = 1
        elif collective == "reduce":
            self.counts[ranks, :, ranks] = 1
            self.expected[root] = 1
            self.checked[:] = False
            self.checked[root] = True
        elif collective == "broadcast":
            self.counts[root, :, root] = 1
            self.expected[:, :, root] = 1
        elif collective in ("allgather", "gather"):
            for r in ranks:
                self.counts[r, owner == r, r] = 1
            targets = ranks if collective == "allgather" else [root]
            for r in targets:
                self.expected[r, np.arange(segments), owner] = 1
            if collective == "gather":
                self.checked[:] = False
                self.checked[root] = True
        elif collective == "scatter":
            self.counts[root, :, root] = 1
            for r in ranks:
                self.expected[r, owner == r, root] = 1
            self._only_own_blocks(owner)
        elif collective == "reducescatter":
            self.counts[ranks, :, ranks] = 1
            for r in ranks:
                self.expected[r, owner == r, :] = 1
            self._only_own_blocks(owner)
        elif collective == "alltoall":
            if segments != p * p:
                raise RunError(f"alltoall data check needs p*p = {p * p} segments, got {segments}")
            for s in ranks:
                self.counts[s, s * p + ranks, s] = 1
                self.expected[ranks, s * p + ranks, s] = 1
            self._mask = np.zeros((p, segments), dtype=bool)
            for d in ranks:
                self._mask[d, ranks * p + d] = True
        elif collective == "sendrecv":
            self.counts[ranks, :, ranks] = 1
            self.expected[ranks, :, (ranks - 1) % p] = 1
        else:
            raise RunError(f"no data check defined for collective {collective!r}")
        if not hasattr(self, "_mask"):
            self._mask = np.ones((p, segments), dtype=bool)

    def _only_own_blocks(self, owner: np.ndarray) -> None:
        self._mask = owner[None, :] == np.arange(self.p)[:, None]

    # -- what algorithms call ----------------------------------------------------------------
    def take(self, rank: int, seg: Segment) -> np.ndarray:
        """A copy of ``rank``'s segment(s), to send as a message's payload."""
        return self.counts[rank, seg].copy()

    def add(self, rank: int, seg: Segment, payload: np.ndarray | None) -> None:
        """Fold a received payload into ``rank``'s segment(s) (a reduction)."""
        if payload is None:
            raise RunError(f"rank {rank}: received a message without data to reduce")
        self.counts[rank, seg] += payload

    def put(self, rank: int, seg: Segment, payload: np.ndarray | None) -> None:
        """Overwrite ``rank``'s segment(s) with a received payload (a copy)."""
        if payload is None:
            raise RunError(f"rank {rank}: received a message without data to store")
        self.counts[rank, seg] = payload

    # -- the verdict ---------------------------------------------------------------------------
    def wrong_ranks(self) -> list[int]:
        """Ranks whose final buffer differs from the expected one."""
        bad = []
        for r in range(self.p):
            if not self.checked[r]:
                continue
            mask = self._mask[r]
            if not np.array_equal(self.counts[r][mask], self.expected[r][mask]):
                bad.append(r)
        return bad

    def verify(self) -> None:
        """Raise :class:`RunError` describing the first wrong rank and segment."""
        bad = self.wrong_ranks()
        if not bad:
            return
        r = bad[0]
        mask = self._mask[r]
        for seg in np.flatnonzero(mask):
            got, want = self.counts[r, seg], self.expected[r, seg]
            if not np.array_equal(got, want):
                diff = {int(c): int(got[c]) for c in np.flatnonzero(got != want)}
                raise RunError(
                    f"{self.collective}: rank {r} segment {int(seg)} holds contributions {diff} "
                    f"(contributor: times), expected {int(want.max())} of each -- {len(bad)} rank(s) wrong"
                )


class NoData:
    """The data check turned off: every call is free and payloads are ``None``."""

    def take(self, rank: int, seg: Segment) -> None:
        return None

    def add(self, rank: int, seg: Segment, payload: Any) -> None:
        pass

    def put(self, rank: int, seg: Segment, payload: Any) -> None:
        pass

    def wrong_ranks(self) -> list[int]:
        return []

    def verify(self) -> None:
        pass


class Job:
    """One collective in flight: ``p`` ranks, ``nbytes`` (the collective's size), the network, the
    reduction cost ``gamma`` (s/byte) and the data check.

    Messages are eager: a send starts its flow at once and its payload is delivered to the receiver's
    mailbox when the last byte arrives; :meth:`recv` waits for it.
    """

    def __init__(
        self,
        env: simpy.Environment,
        net: Network,
        p: int,
        nbytes: float,
        *,
        gamma: float = 0.0,
        root: int = 0,
        data: DataCheck | NoData | None = None,
    ) -> None:
        self.env = env
        self.net = net
        self.p = p
        self.nbytes = float(nbytes)
        self.gamma = float(gamma)
        self.root = root
        self.data: DataCheck | NoData = data if data is not None else NoData()
        # messages arrived and receives posted, per (src, dst, tag), in order (lists: rarely more than one)
        self._mail: dict[tuple[int, int, int], list[Any]] = {}
        self._waiting: dict[tuple[int, int, int], list[simpy.Event]] = {}
        self._hook: Any = self._deliver  # (one bound method for every message's arrival hook)
        #: the compiled plain ranks' inboxes (sim.program._compiled_ranks), counted with the mailboxes
        self._inboxes: list[Any] = []
        #: the mailboxes' objects for the compiled core's job_recv / job_deliver (None: the Python path)
        self._ctx: tuple[Any, ...] | None = None
        if network._LANE_CORE and network._ops is not network._PyDue and settle is _SETTLE:  # (not a test's)
            self._ctx = (net, env, Event, self._mail, self._waiting)
            self._hook = functools.partial(network._ops.job_deliver, self._ctx)
        # endpoints beyond the p ranks (dedicated servers on spare hosts) compute and send too
        endpoints = max(p, net.cluster.size, len(net.cluster.rank_node))
        self._busy_until = np.zeros(endpoints)
        self.compute_scale = net.cluster.compute_scale
        #: bytes each endpoint (rank, or server beyond the ranks) has sent / received so far

    def send(
        self, src: int, dst: int, nbytes: float, payload: Any = None, tag: int = 0, bound: float | None = None
    ) -> simpy.Event:
        """Send ``nbytes`` with ``payload``; the returned event fires when the last byte arrives.
        ``bound`` caps the message's rate (see :meth:`sim.network.Network.send`)."""
        hook = (self._hook, (src, dst, tag), payload)
        ctx = self.net._lane_ctx
        if ctx is not None:  # (Network.send's first lines: the private lane in C)
            event = _CORE.lane_send(ctx, src, dst, nbytes, bound, hook)
            if event is not None and event is not NotImplemented:
                return event  # type: ignore[no-any-return]
        elif self.net._send_ctx is not None:  # (Network.send's engine lines, in C)
            event = _CORE.eng_send(self.net._send_ctx, src, dst, nbytes, bound, hook)
            if event is not NotImplemented:
                return event  # type: ignore[no-any-return]
        return self.net.send(src, dst, nbytes, bound=bound, on_arrival=hook)

    def post(
        self,
        at: int,
        peers: Sequence[int],
        inbound: bool,
        nbytes: float,
        hook: tuple[Any, ...],
        pids: Sequence[int] | None = None,
    ) -> None:
        """:meth:`send`'s lines for many messages nobody waits on: ``nbytes`` from each of ``peers`` to ``at``
        (``inbound``), or from ``at`` to each of them, in order, each with the arrival ``hook`` (the
        network's ``on_arrival``) and no event returned -- the private lane in C while it is open (it
        closes for good once flows meet), then the engine's single send in C, else :meth:`Network.send`,
        without a Python call a message. ``pids``: the pairs' routes as :meth:`Network.intern` gave them
        (one per peer), which the engine's sends then take as given (``eng_post``) rather than look up."""
        net = self.net
        pairs = [(peer, at) for peer in peers] if inbound else [(at, peer) for peer in peers]
        i, n = 0, len(pairs)
        while i < n and net._lane_ctx is not None:
            event = _CORE.lane_send(net._lane_ctx, *pairs[i], nbytes, None, hook)
            if event is None or event is NotImplemented:
                net.send(*pairs[i], nbytes, on_arrival=hook)
            i += 1
        ctx = net._send_ctx
        if ctx is not None and pids is not None and _POST_CORE:
            srcs, dsts = ([p for p, _ in pairs], [q for _, q in pairs]) if i < n else ([], [])
            route = pids if isinstance(pids, list) else list(pids)
            while i < n:  # (eng_post stops where a send is the Python lines': that one by Network.send)
                i += _CORE.eng_post(ctx, srcs[i:], dsts[i:], route[i:], nbytes, hook)
                if i < n:
                    net.send(*pairs[i], nbytes, on_arrival=hook)
                    i += 1
            return
        send = _CORE.eng_send if ctx is not None else None
        for src, dst in pairs[i:] if i else pairs:
            if ctx is None or send(ctx, src, dst, nbytes, None, hook) is NotImplemented:
                net.send(src, dst, nbytes, on_arrival=hook)

    def _deliver(self, key: tuple[int, int, int], payload: Any) -> None:
        """A message's arrival: its payload to the first receive posted for it, or to the mailbox
        (``sim._ratecore.job_deliver`` does the same in C: the hook where the core is built)."""
        waiting = self._waiting.pop(key, None)  # (the mailboxes stay as small as the messages in flight)
        if waiting is not None:
            event = waiting.pop(0)
            if waiting:
                self._waiting[key] = waiting
            held = self.net._held
            if held is None or not event.callbacks:
                settle(event, payload)
            else:  # (Network.trigger, inline: held to the end of the wake-up)
                event._ok = True
                event._value = payload
                held.append(event)
        else:
            mail = self._mail.get(key)
            if mail is None:
                self._mail[key] = [payload]
            else:
                mail.append(payload)

    def recv(self, dst: int, src: int, tag: int = 0) -> simpy.Event:
        """An event whose value is the payload of the next message ``src`` -> ``dst`` with ``tag``.
        When that message has arrived already, the event comes processed: a process that yields it
        goes on at once (no step of the event loop)."""
        key = (src, dst, tag)
        if self._ctx is not None:  # the lines below, in C (tests/test_lane_core.py holds them equal)
            return _CORE.job_recv(self._ctx, key)  # type: ignore[no-any-return]
        event = Event(self.env)
        mail = self._mail.pop(key, None)
        if mail is not None:
            payload = mail.pop(0)
            if mail:
                self._mail[key] = mail
            event._ok = True  # (settle, inline: nobody waits on a new event)
            event._value = payload
            event.callbacks = None  # type: ignore[assignment]
        else:
            waiting = self._waiting.get(key)
            if waiting is None:
                self._waiting[key] = [event]
            else:
                waiting.append(event)
        return event

    def compute(self, rank: int, seconds: float) -> simpy.Event:
        """Occupy ``rank``'s processor for ``seconds`` (work on one rank runs one piece at a time)."""
        if rank >= len(self._busy_until):  # an endpoint added to the cluster after the job was made
            self._busy_until = np.concatenate([self._busy_until, np.zeros(rank + 1 - len(self._busy_until))])
            self.compute_scale = self.net.cluster.compute_scale
        start = max(self.env.now, self._busy_until[rank])
        end = start + seconds * self.compute_scale[rank]
        self._busy_until[rank] = end
        return self.env.timeout(end - self.env.now)

    def combine(self, rank: int, seg: Segment, payload: Any, nbytes: float) -> Generator[simpy.Event, Any, None]:
        """Reduce a received payload into ``rank``'s segment(s): costs ``nbytes * gamma``."""
        self.data.add(rank, seg, payload)
        if self.gamma > 0 and nbytes > 0:
            yield self.compute(rank, nbytes * self.gamma)

    def pending_receives(self) -> int:
        """Receives posted that no message has matched (a deadlock leaves some)."""
        return sum(len(q) for q in self._waiting.values()) + sum(box.pending()[0] for box in self._inboxes)

    def pending_messages(self) -> int:
        """Messages delivered that nobody received (a correct algorithm leaves none)."""
        return sum(len(q) for q in self._mail.values()) + sum(box.pending()[1] for box in self._inboxes)


#: Job.send and Job.recv as defined here: sim.program's plain ranks call their compiled lines inline only
#: while the class still has these (a test that records the sends puts its own in place)
_JOB_LINES = (Job.send, Job.recv)
