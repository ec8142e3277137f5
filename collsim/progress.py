"""A progress bar (rich, on stderr) that appears only when the work takes longer than a second.

Short runs print nothing extra; long sweeps show where they are. Output on stdout (tables, JSON lines)
is never touched, and nothing is drawn when stderr is not a terminal unless forced.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["delayed_progress"]


class _Tracker:
    def __init__(self, total: int, description: str, delay: float, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.label = description
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self._timer = threading.Timer(delay, self._show) if enabled else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with self._lock:
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
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._progress is not None:
                self._progress.stop()


@contextmanager
def delayed_progress(
    total: int, description: str, *, delay: float = 1.0, force: bool | None = None
) -> Iterator[_Tracker]:
    """Yield a tracker with ``advance()`` / ``describe()``; a bar appears after ``delay`` seconds
    when stderr is a terminal (or ``force``)."""
    enabled = sys.stderr.isatty() if force is None else force
    tracker = _Tracker(total, description, delay, enabled)
    try:
        yield tracker
    finally:
        tracker.close()
