"""Transports for schedules: torch.distributed point-to-point (:class:`TorchComm`) and, for tests and
for reading a schedule without processes, threads in one process (:class:`ThreadWorld`).

A failed wait is reported as a :class:`PeerError` that names this rank, the peer it waited on, whether
that peer timed out or closed the connection, and what was running (``comm.where``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from sim.errors import RunError

from .device import library_message
from .schedule import Transfer
from .status import PEER_CLOSED, PEER_TIMEOUT

__all__ = ["Message", "PeerError", "ThreadComm", "ThreadWorld", "TorchComm", "classify"]

T = TypeVar("T")


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
    step, which NCCL needs to post a ring's send and receive together.
    """

    def __init__(self, rank: int, size: int, backend: str, timeout: float | None = None) -> None:
        self.rank = rank
        self.size = size
        self.backend = backend
        self.timeout = timeout
        self.where = "collective"
        self.batched = backend != "gloo"

    def exchange(self, sends: Sequence[Transfer], recvs: Sequence[Transfer]) -> None:
        live_recvs = [op for op in recvs if op[0].numel()]
        live_sends = [op for op in sends if op[0].numel()]
        if self.batched:
            # NCCL ignores tags and matches messages between two ranks in posting order: sort both ends
            live_recvs.sort(key=lambda op: (op[1], op[2]))
            live_sends.sort(key=lambda op: (op[1], op[2]))
            ops = [dist.P2POp(dist.irecv, t, p, tag=tag) for t, p, tag in live_recvs]
            ops += [dist.P2POp(dist.isend, t, p, tag=tag) for t, p, tag in live_sends]
            works = dist.batch_isend_irecv(ops) if ops else []
        else:
            works = [dist.irecv(t, p, tag=tag) for t, p, tag in live_recvs]
            works += [dist.isend(t, p, tag=tag) for t, p, tag in live_sends]
        peers = [op[1] for op in live_recvs] + [op[1] for op in live_sends]
        for work, peer in zip(works, peers, strict=True):
            try:
                work.wait()
            except (RuntimeError, dist.DistError) as exc:
                raise PeerError(
                    describe_failure(self.rank, self.where, peer, exc, self.timeout), peer=peer, kind=classify(exc)
                ) from exc


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

    def exchange(self, sends: Sequence[Transfer], recvs: Sequence[Transfer]) -> None:
        for tensor, peer, tag in sends:
            if tensor.numel():
                self.world.record(Message(self.rank, peer, tensor.numel() * tensor.element_size(), tag))
                self.world.box(self.rank, peer, tag).put(tensor.clone())
        for tensor, peer, tag in recvs:
            if not tensor.numel():
                continue
            try:
                got = self.world.box(peer, self.rank, tag).get(timeout=self.world.timeout)
            except queue.Empty:
                exc = TimeoutError(f"timed out waiting for tag {tag}")
                raise PeerError(
                    describe_failure(self.rank, self.where, peer, exc, self.world.timeout),
                    peer=peer,
                    kind=PEER_TIMEOUT,
                ) from None
            if got.numel() != tensor.numel():
                raise PeerError(
                    f"rank {self.rank}: {self.where}: rank {peer} sent {got.numel()} elements with tag {tag}, "
                    f"expected {tensor.numel()}",
                    peer=peer,
                    kind=PEER_CLOSED,
                )
            tensor.copy_(got)
