"""A progress bar (rich, on stderr) that appears only when the work takes longer than a second.

Short runs print nothing extra; long sweeps show where they are. Output on stdout (tables, JSON lines)
is never touched. When stderr is not a terminal no bar is drawn; a run still going after
:data:`PLAIN_DELAY` seconds says so in a plain line (then every :data:`PLAIN_EVERY` seconds), so that a
log shows what a long simulation is doing. ``--no-progress`` (``force=False``) silences both.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PLAIN_DELAY", "PLAIN_EVERY", "delayed_progress"]

#: seconds before the first plain progress line (stderr not a terminal), and between lines
PLAIN_DELAY = 10.0
PLAIN_EVERY = 30.0


class _Tracker:
    def __init__(self, total: int, description: str, delay: float, enabled: bool, plain: bool = False) -> None:
        self.total = total
        self.done = 0
        self.label = description
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self._started = time.monotonic()
        self._closed = False
        self._timer: threading.Timer | None = None
        if enabled:
            self._start_timer(delay, self._show)
        elif plain:
            self._start_timer(PLAIN_DELAY, self._line)

    def _start_timer(self, delay: float, action: Any) -> None:
        self._timer = threading.Timer(delay, action)
        self._timer.daemon = True
        self._timer.start()

    def _line(self) -> None:
        with self._lock:
            if self._closed:
                return
            elapsed = time.monotonic() - self._started
            print(
                f"collsim: {self.label}: {self.done}/{self.total} done, still running after {elapsed:.0f} s "
                "(--timeout bounds it)",
                file=sys.stderr,
                flush=True,
            )
            self._start_timer(PLAIN_EVERY, self._line)

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with self._lock:
            if self._closed:
                return
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )
            self._task = self._progress.add_task(self.label, total=self.total, completed=self.done)
            self._progress.start()

    def advance(self, label: str | None = None) -> None:
        with self._lock:
            self.done += 1
            if label is not None:
                self.label = label
            if self._progress is not None:
                self._progress.update(self._task, completed=self.done, description=self.label)

    def describe(self, label: str) -> None:
        with self._lock:
            self.label = label
            if self._progress is not None:
                self._progress.update(self._task, description=label)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._progress is not None:
                self._progress.stop()


@contextmanager
def delayed_progress(
    total: int, description: str, *, delay: float = 1.0, force: bool | None = None
) -> Iterator[_Tracker]:
    """Yield a tracker with ``advance()`` / ``describe()``; a bar appears after ``delay`` seconds
    when stderr is a terminal (or ``force``); otherwise plain lines for a long run (unless ``force`` is
    False)."""
    enabled = sys.stderr.isatty() if force is None else force
    tracker = _Tracker(total, description, delay, enabled, plain=force is None and not enabled)
    try:
        yield tracker
    finally:
        tracker.close()
