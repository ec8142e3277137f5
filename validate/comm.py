"""Transports for schedules: torch.distributed point-to-point (:class:`TorchComm`) and, for tests and
for reading a schedule without processes, threads in one process (:class:`ThreadWorld`).

A failed wait is reported as a :class:`PeerError` that names this rank, the peer it waited on, whether
that peer timed out or closed the connection, and what was running (``comm.where``).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from sim.errors import ConfigError, RunError

from .device import library_message
from .schedule import Local, Transfer
from .status import PEER_CLOSED, PEER_TIMEOUT

__all__ = ["Message", "PeerError", "ThreadComm", "ThreadWorld", "TorchComm", "classify"]

T = TypeVar("T")
#: environment variable that picks how TorchComm posts a step: ``batch`` or ``each``
P2P_VAR = "COLLSIM_VALIDATE_P2P"
#: set to 0 to post every receive only when its step starts (for measuring what early posting buys)
EARLY_VAR = "COLLSIM_VALIDATE_EARLY"


class PeerError(RunError):
    """A point-to-point operation failed: the peer timed out, closed the connection or sent garbage."""

    def __init__(self, message: str, *, peer: int | None, kind: int) -> None:
        super().__init__(message)
        self.peer = peer
        self.kind = kind


def classify(exc: BaseException) -> int:
    """:data:`~validate.status.PEER_TIMEOUT` for a timeout, else :data:`~validate.status.PEER_CLOSED`."""
    text = str(exc).lower()
    return PEER_TIMEOUT if ("timed out" in text or "timeout" in text) else PEER_CLOSED


def describe_failure(rank: int, where: str, peer: int | None, exc: BaseException, timeout: float | None) -> str:
    """One line for a failed wait, e.g. ``rank 0: allreduce (ring) ...: timed out after 10 s waiting for
    rank 3 (it may have hung or died)``."""
    who = f"rank {peer}" if peer is not None else "a peer"
    if classify(exc) == PEER_TIMEOUT:
        limit = f" after {timeout:g} s" if timeout else ""
        what = f"timed out{limit} waiting for {who} (it may have hung or died)"
    else:
        what = f"lost {who}: {library_message(exc)}"
    return f"rank {rank}: {where}: {what}"


class TorchComm:
    """Point-to-point through torch.distributed's default process group.

    gloo: every operation is an ``isend``/``irecv`` of its own (gloo has no coalescing, so
    ``batch_isend_irecv`` would do the same with more Python). NCCL: one ``batch_isend_irecv`` group per
    step, which NCCL needs to post a ring's send and receive together. ``COLLSIM_VALIDATE_P2P=batch``
    (or ``each``) forces one way or the other -- how the tests run NCCL's path on gloo. On gloo a step's
    receives are posted while the step before it runs, where their buffers are free
    (``COLLSIM_VALIDATE_EARLY=0`` turns that off).
    """

    def __init__(self, rank: int, size: int, backend: str, timeout: float | None = None) -> None:
        self.rank = rank
        self.size = size
        self.backend = backend
        self.timeout = timeout
        self.where = "collective"
        mode = os.environ.get(P2P_VAR, "").strip().lower()
        if mode not in ("", "batch", "each"):
            raise ConfigError(f"{P2P_VAR}={mode!r}: expected batch or each")
        self.batched = mode == "batch" or (not mode and backend != "gloo")
        self.early = os.environ.get(EARLY_VAR, "1").strip().lower() not in ("0", "no", "off", "false")

    def post_recvs(self, recvs: Sequence[Transfer]) -> list[Any] | None:
        """Post ``recvs`` now (gloo only: NCCL keeps each step one group); the token goes to :meth:`start`."""
        if self.batched or not self.early:
            return None
        return self._post_recvs(recvs)

    @staticmethod
    def _post_recvs(recvs: Sequence[Transfer]) -> list[Any]:
        return [dist.irecv(t, p, tag=tag) if t.numel() else None for t, p, tag in recvs]

    def start(self, sends: Sequence[Transfer], recvs: Sequence[Transfer], early: list[Any] | None = None) -> Any:
        """Post a step's messages (its receives may have been posted already: ``early``)."""
        live_sends = [op for op in sends if op[0].numel()]
        if self.batched:
            # NCCL ignores tags and matches messages between two ranks in posting order: sort both ends
            order = sorted((i for i, op in enumerate(recvs) if op[0].numel()), key=lambda i: recvs[i][1:])
            live_sends.sort(key=lambda op: (op[1], op[2]))
            p2p = [dist.P2POp(dist.irecv, *recvs[i][:2], tag=recvs[i][2]) for i in order]
            p2p += [dist.P2POp(dist.isend, t, p, tag=tag) for t, p, tag in live_sends]
            works = dist.batch_isend_irecv(p2p) if p2p else []
            recv_works: list[Any] = [None] * len(recvs)
            for i, work in zip(order, works, strict=False):
                recv_works[i] = work
            send_works = works[len(order) :]
        else:
            recv_works = early if early is not None else self._post_recvs(recvs)
            send_works = [dist.isend(t, p, tag=tag) for t, p, tag in live_sends]
        return recv_works, [op[1] for op in recvs], send_works, [op[1] for op in live_sends]

    def finish(self, posted: Any, each: Sequence[Local | None] = ()) -> None:
        """Wait for a step's receives, in order (running ``each[i]`` as receive ``i`` completes), then
        for its sends."""
        recv_works, recv_peers, send_works, send_peers = posted
        thens = list(each) or [None] * len(recv_works)
        for work, peer, then in zip(recv_works, recv_peers, thens, strict=True):
            if work is not None:
                self._wait(work, peer)
            if then is not None:
                then()
        for work, peer in zip(send_works, send_peers, strict=True):
            self._wait(work, peer)

    def _wait(self, work: Any, peer: int) -> None:
        try:
            work.wait()
        except (RuntimeError, dist.DistError) as exc:
            message = describe_failure(self.rank, self.where, peer, exc, self.timeout)
            raise PeerError(message, peer=peer, kind=classify(exc)) from exc

    def exchange(self, sends: Sequence[Transfer], recvs: Sequence[Transfer], each: Sequence[Local | None] = ()) -> None:
        self.finish(self.start(sends, recvs), each)


@dataclass(frozen=True)
class Message:
    """One message of a traced schedule."""

    src: int
    dst: int
    nbytes: int
    tag: int


class ThreadWorld:
    """``size`` ranks as threads of this process, exchanging tensors through mailboxes.

    Sends are eager (copied into the receiver's mailbox), receives wait up to ``timeout`` seconds.
    Every message is recorded in :attr:`trace` in the order it was posted.

    >>> world = ThreadWorld(2)
    >>> def swap(comm):
    ...     got = torch.empty(1)
    ...     comm.exchange([(torch.tensor([float(comm.rank)]), 1 - comm.rank, 0)], [(got, 1 - comm.rank, 0)])
    ...     return got.item()
    >>> world.run(swap)
    [1.0, 0.0]
    """

    def __init__(self, size: int, timeout: float = 30.0) -> None:
        self.size = size
        self.timeout = timeout
        self.trace: list[Message] = []
        self._boxes: dict[tuple[int, int, int], queue.Queue[torch.Tensor]] = {}
        self._lock = threading.Lock()

    def box(self, src: int, dst: int, tag: int) -> queue.Queue[torch.Tensor]:
        with self._lock:
            return self._boxes.setdefault((src, dst, tag), queue.Queue())

    def record(self, message: Message) -> None:
        with self._lock:
            self.trace.append(message)

    def comm(self, rank: int) -> ThreadComm:
        return ThreadComm(self, rank)

    def run(self, body: Callable[[ThreadComm], T]) -> list[T]:
        """Run ``body(comm)`` for every rank on its own thread; returns the results in rank order and
        re-raises the first error."""
        results: list[Any] = [None] * self.size
        errors: list[BaseException] = []

        def target(rank: int) -> None:
            try:
                results[rank] = body(self.comm(rank))
            except BaseException as exc:  # noqa: BLE001  (re-raised below)
                errors.append(exc)

        threads = [threading.Thread(target=target, args=(r,), daemon=True) for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        leftover = {k: q.qsize() for k, q in self._boxes.items() if q.qsize()}
        if leftover:
            raise RunError(f"messages sent but never received (src, dst, tag): {leftover}")
        return results


class ThreadComm:
    """One rank of a :class:`ThreadWorld`."""

    def __init__(self, world: ThreadWorld, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.size = world.size
        self.where = "collective"

    def post_recvs(self, recvs: Sequence[Transfer]) -> None:
        return None  # mailboxes need no posting

    def start(self, sends: Sequence[Transfer], recvs: Sequence[Transfer], early: Any = None) -> Any:
        sent = []
        for tensor, peer, tag in sends:
            if tensor.numel():
                self.world.record(Message(self.rank, peer, tensor.numel() * tensor.element_size(), tag))
                copy = tensor.clone()
                self.world.box(self.rank, peer, tag).put(copy)
                sent.append((tensor, copy, peer))
        return recvs, sent

    def finish(self, posted: Any, each: Sequence[Local | None] = ()) -> None:
        recvs, sent = posted
        for (tensor, peer, tag), then in zip(recvs, list(each) or [None] * len(recvs), strict=True):
            if tensor.numel():
                self._receive(tensor, peer, tag)
            if then is not None:
                then()
        # a real send may still be reading its buffer until the step ends: nothing may change it
        for tensor, copy, peer in sent:
            if not torch.equal(tensor, copy):
                raise RunError(f"rank {self.rank}: {self.where}: the step changed a buffer while sending it to {peer}")

    def exchange(self, sends: Sequence[Transfer], recvs: Sequence[Transfer], each: Sequence[Local | None] = ()) -> None:
        self.finish(self.start(sends, recvs), each)

    def _receive(self, tensor: torch.Tensor, peer: int, tag: int) -> None:
        try:
            got = self.world.box(peer, self.rank, tag).get(timeout=self.world.timeout)
        except queue.Empty:
            exc = TimeoutError(f"timed out waiting for tag {tag}")
            raise PeerError(
                describe_failure(self.rank, self.where, peer, exc, self.world.timeout), peer=peer, kind=PEER_TIMEOUT
            ) from None
        if got.numel() != tensor.numel():
            raise PeerError(
                f"rank {self.rank}: {self.where}: rank {peer} sent {got.numel()} elements with tag {tag}, "
                f"expected {tensor.numel()}",
                peer=peer,
                kind=PEER_CLOSED,
            )
        tensor.copy_(got)
