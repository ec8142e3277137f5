"""Checks and measurements on a running lab, with plain TCP sockets opened inside its namespaces.

:func:`reachability` connects every host to every other; :func:`transfers` times concurrent bulk
transfers (the rate check after ``up``, the tests and ``collsim netlab probe``). Sizes count application
bytes; shaped rates count Ethernet frames, so a perfect link delivers 1448/1514 = 95.6% of its shaped
rate to the application (TCP timestamps on, MTU 1500).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from .errors import NetlabError
from .netns import socket_in
from .plan import HostPlan, Plan

__all__ = ["Transfer", "reachability", "transfer", "transfers"]

CHUNK = 1 << 20


@dataclass(frozen=True)
class Transfer:
    """One timed transfer of ``nbytes`` from host ``src`` to host ``dst`` (topology names)."""

    src: str
    dst: str
    nbytes: int
    seconds: float
    shaped: float  # the bottleneck shaped rate of the path, bytes/s

    @property
    def rate(self) -> float:
        """Achieved application rate, bytes/s."""
        return self.nbytes / self.seconds

    @property
    def fraction(self) -> float:
        """Achieved rate over the shaped rate."""
        return self.rate / self.shaped


def _listener(host: HostPlan) -> socket.socket:
    if host.address is None:
        raise NetlabError(f"host {host.name!r} has no network interface")
    sock = socket_in(host.ns)
    sock.bind((host.address, 0))
    sock.listen(128)
    return sock


def reachability(plan: Plan, *, timeout: float = 5.0) -> list[str]:
    """Connect every host to every other over TCP; return one message per pair that failed (empty: all
    reach all). A pair is retried until ``timeout`` seconds have passed since the check began."""
    hosts = [h for h in plan.hosts if h.address is not None]
    listeners = {h.index: _listener(h) for h in hosts}
    failures: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        for lis in listeners.values():
            lis.settimeout(timeout)
        for src in hosts:
            for dst in hosts:
                if src.index != dst.index:
                    error = _connect_once(src, dst, listeners[dst.index], deadline)
                    if error:
                        failures.append(
                            f"{src.name!r} ({src.address}) cannot reach {dst.name!r} ({dst.address}): {error}"
                        )
    finally:
        for lis in listeners.values():
            lis.close()
    return failures


def _connect_once(src: HostPlan, dst: HostPlan, listener: socket.socket, deadline: float) -> str | None:
    port = listener.getsockname()[1]
    while True:
        with socket_in(src.ns) as sock:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                sock.connect((dst.address, port))
                peer, (addr, _) = listener.accept()
                peer.close()
                return None if addr == src.address else f"arrived from {addr}, expected {src.address}"
            except OSError as exc:
                if time.monotonic() >= deadline:
                    return str(exc) or type(exc).__name__
        time.sleep(0.05)


def transfers(plan: Plan, pairs: list[tuple[str, str]], nbytes: int, *, timeout: float | None = None) -> list[Transfer]:
    """Run one transfer of ``nbytes`` per (src, dst) pair, all at once, and time each at its sender."""
    if nbytes < 1 or not pairs:
        raise ValueError("transfers need nbytes >= 1 and at least one pair")
    ends = [(plan.host(s), plan.host(d)) for s, d in pairs]
    shaped = [plan.path_rate(s, d) for s, d in pairs]
    if timeout is None:
        timeout = 10.0 + 5.0 * len(pairs) * nbytes / min(shaped)
    conns: list[tuple[socket.socket, socket.socket]] = []
    try:
        for src, dst in ends:
            with _listener(dst) as lis:
                lis.settimeout(timeout)
                out = socket_in(src.ns)
                conns.append((out, out))  # placeholder so a failing connect still gets closed
                out.settimeout(timeout)
                out.connect(lis.getsockname())
                inn, _ = lis.accept()
                inn.settimeout(timeout)
                conns[-1] = (out, inn)
        seconds = _timed(conns, nbytes)
    except OSError as exc:
        raise NetlabError(f"transfer of {nbytes} B failed: {exc}") from None
    finally:
        for out, inn in conns:
            out.close()
            inn.close()
    return [Transfer(s, d, nbytes, secs, rate) for (s, d), secs, rate in zip(pairs, seconds, shaped, strict=True)]


def _timed(conns: list[tuple[socket.socket, socket.socket]], nbytes: int) -> list[float]:
    start = threading.Barrier(len(conns))
    seconds = [0.0] * len(conns)
    errors: list[BaseException] = []
    zeros = memoryview(bytes(min(CHUNK, nbytes)))

    def send(i: int, sock: socket.socket) -> None:
        try:
            start.wait()
            t0 = time.perf_counter()
            left = nbytes
            while left:
                n = min(left, len(zeros))
                sock.sendall(zeros[:n])
                left -= n
            if sock.recv(1) != b"k":
                raise OSError("receiver closed before acknowledging")
            seconds[i] = time.perf_counter() - t0
        except BaseException as exc:
            errors.append(exc)
            start.abort()

    def receive(sock: socket.socket) -> None:
        try:
            buf = bytearray(CHUNK)
            got = 0
            while got < nbytes:
                n = sock.recv_into(buf, min(CHUNK, nbytes - got))
                if not n:
                    raise OSError(f"sender closed after {got} of {nbytes} bytes")
                got += n
            sock.sendall(b"k")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=receive, args=(inn,), daemon=True) for _, inn in conns]
    threads += [threading.Thread(target=send, args=(i, out), daemon=True) for i, (out, _) in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        first = errors[0]
        raise first if isinstance(first, OSError) else OSError(str(first))
    return seconds


def transfer(plan: Plan, src: str, dst: str, nbytes: int) -> Transfer:
    """One timed transfer of ``nbytes`` from host ``src`` to host ``dst``."""
    return transfers(plan, [(src, dst)], nbytes)[0]
