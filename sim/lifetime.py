"""Every process collsim starts dies with it: report workers, validate's local ranks, netlab's ranks.

* :func:`die_with_parent` is a ``preexec_fn`` for :class:`subprocess.Popen` (and :func:`child_init` an
  ``initializer`` for a process pool): the child asks the kernel for SIGKILL when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``), and kills itself at once if the parent died before it asked. It holds
  across ``exec`` (of anything but a set-user-ID program) and ``ip netns exec``, and fires on every end of
  the parent, ``kill -9`` included.
* :func:`interrupt_on_signals` turns SIGTERM and SIGHUP into :class:`KeyboardInterrupt` for a block, so that
  ``kill PID`` stops a command the way Ctrl-C does: its children stopped, a one-line message, exit 130.

The parent-death signal follows the *thread* that started the child; start children from the thread
that lives as long as they should (the main thread, in collsim).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

__all__ = [
    "Terminated",
    "announce",
    "announced",
    "child_init",
    "die_with_parent",
    "interrupt_on_signals",
    "received",
    "reset",
]

_PR_SET_PDEATHSIG = 1
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _LIBC = None


def _ask_for_death_signal(parent: int, sig: int) -> None:
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request: too late for the kernel to tell
        os.kill(os.getpid(), sig)


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets ``sig`` when this process (its parent) ends, however it ends."""
    parent = os.getpid()

    def preexec() -> None:
        _ask_for_death_signal(parent, sig)

    return preexec


def child_init(parent: int, ignore_interrupt: bool = True) -> None:
    """A process pool's ``initializer``: die with ``parent``; leave Ctrl-C to the parent (which stops the
    pool) unless ``ignore_interrupt`` is false."""
    _ask_for_death_signal(parent, signal.SIGKILL)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # the parent's handlers (interrupt_on_signals) are not ours
        signal.signal(sig, signal.SIG_DFL)
    if ignore_interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: handled as Ctrl-C is (children stopped, exit 130)."""


#: the signal that interrupted this process (None: none), and whether a line has said so already
_STATE: dict[str, object] = {"received": None, "announced": False}


def reset() -> None:
    """Forget an earlier interruption (the CLI calls this as a command starts)."""
    _STATE.update(received=None, announced=False)


def received() -> int | None:
    """The signal :func:`interrupt_on_signals` turned into an interrupt, if one did."""
    return _STATE["received"]  # type: ignore[return-value]


def announce(message: str, file: IO[str] | None = None) -> None:
    """Print the one line that says how an interruption ended (and remember that it was said)."""
    print(message, file=file or sys.stderr, flush=True)
    _STATE["announced"] = True


def announced() -> bool:
    return bool(_STATE["announced"])


@contextlib.contextmanager
def interrupt_on_signals(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Within the block, ``signals`` raise :class:`Terminated` (a KeyboardInterrupt) in the main thread.

    A handler's exception can be swallowed: a signal that lands while Python runs code whose exceptions
    it ignores (a ``__del__``, a weakref callback, logging's fork handlers) only prints "Exception
    ignored in ...". Such an interruption is not lost: it is not printed, and the block raises it as it
    ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        _STATE["received"] = signum
        if signum == signal.SIGINT:
            raise KeyboardInterrupt()
        raise Terminated()

    hook = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and _STATE["received"] is not None):
            hook(unraisable)

    before = _STATE["received"]
    previous = {s: signal.signal(s, handler) for s in signals}
    sys.unraisablehook = quiet
    try:
        yield
        if before is None and _STATE["received"] is not None:  # raised where it was ignored
            raise KeyboardInterrupt() if _STATE["received"] == signal.SIGINT else Terminated()
    finally:
        sys.unraisablehook = hook
        for s, old in previous.items():
            signal.signal(s, old)
