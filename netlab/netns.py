"""Doing things inside a lab's network namespaces from this process, without spawning one per host.

A socket belongs to the network namespace its creating thread was in, and keeps it. :func:`call_in`
runs a function in a short-lived thread that first joins the namespace (``setns(2)``), so the checks
after ``up`` open sockets in every host from one process; the calling thread never changes namespace.
:func:`enter` moves the calling thread for good (for a child process that works in one namespace).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import NetlabError
from .system import NETNS_DIR

__all__ = ["call_in", "enter", "socket_in"]

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
_libc: Any = None


def enter(ns: str) -> None:
    """Move the calling thread into the named network namespace ``ns``."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    try:
        fd = os.open(NETNS_DIR / ns, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NetlabError(f"network namespace {ns!r} does not exist (is the lab up?)") from None
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise NetlabError(f"cannot enter network namespace {ns!r}: {os.strerror(err)}")
    finally:
        os.close(fd)


def call_in(ns: str, func: Callable[[], T]) -> T:
    """Return ``func()`` computed by a fresh thread inside namespace ``ns``."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            enter(ns)
            box["value"] = func()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=work, name=f"netns-{ns}", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def socket_in(ns: str) -> socket.socket:
    """A new TCP/IPv4 socket in namespace ``ns``."""
    return call_in(ns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
