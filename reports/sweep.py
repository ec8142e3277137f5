"""Running a report's points: on all local cores (worker processes that die with the report), in this process, or on an existing dask
cluster; with a progress bar; resumable, because every finished point is appended to a JSON-lines
cache in the output directory as soon as it arrives, and a rerun computes only the missing ones.

>>> import tempfile
>>> from reports.spec import parse_spec
>>> from reports.points import report_points
>>> spec = parse_spec({"job": {"gradient_bytes": "4MiB", "compute_time": "10ms"}, "algorithms": ["ring"],
...     "cluster": {"builder": "star", "params": {"bandwidth": "100Gbps"}, "sizes": [2, 4]}, "sweep": {"message_sizes": []}})
>>> with tempfile.TemporaryDirectory() as out:
...     first = run_sweep(report_points(spec), PointCache(out), make_executor("serial"), progress=False)
...     again = run_sweep(report_points(spec), PointCache(out), make_executor("serial"), progress=False)
>>> len(first), sorted(r.status for r in first.values()), again == first
(2, ['ok', 'ok'], True)
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from sim import files
from sim.errors import ConfigError

from .points import Point, run_point
from .records import PointRecord

#: the longest record of points.jsonl, and the most the cache may hold (far past any real sweep)
MAX_RECORD_BYTES = 16 * 2**20
MAX_CACHE_BYTES = 1 << 30

__all__ = [
    "EXECUTORS",
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "PointCache",
    "SerialExecutor",
    "available_cores",
    "make_executor",
    "run_sweep",
]

PointFunc = Callable[[Point], PointRecord]


class PointCache:
    """Finished points, one JSON object per line in ``DIR/points.jsonl``.

    Each record is appended (its :meth:`~reports.records.PointRecord.to_dict` form) with a single write
    and flushed to disk before the next point is taken, so an interruption loses at most the points in
    flight; a line cut short by a crash, or one that is not a record, is ignored on reading (and its
    point recomputed). Points that failed are not cached: a rerun retries them.
    """

    FILENAME = "points.jsonl"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / self.FILENAME
        self._checked_tail = False

    def load(self) -> dict[str, PointRecord]:
        """Key -> record of every complete line (the last one, where a key has several)."""
        records: dict[str, PointRecord] = {}
        if not self.path.exists():
            return records
        for _n, raw in files.iter_lines(self.path, max_line=MAX_RECORD_BYTES, limit=MAX_CACHE_BYTES):
            if not raw.endswith(b"\n"):
                continue  # cut short
            try:
                record = PointRecord.from_dict(json.loads(raw, parse_int=files.bounded_int))
            except ValueError:  # not JSON, not UTF-8, a number no point has, or not a record
                continue
            if record.cached:
                records[record.key] = record
        return records

    def clear(self) -> None:
        """Forget every finished point."""
        self.path.unlink(missing_ok=True)

    def add(self, record: PointRecord) -> None:
        """Append one record (a whole line, one write, fsync'ed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record.to_dict(), separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if not self._checked_tail:
                self._checked_tail = True
                if os.fstat(fd).st_size and not self._ends_with_newline():
                    line = b"\n" + line  # end the line an interruption cut short
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"


class Executor(Protocol):
    """Runs ``func`` over ``items`` and yields the results as they finish, in any order."""

    name: str

    def map_unordered(self, func: PointFunc, items: list[Point]) -> Iterator[PointRecord]: ...


def available_cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class SerialExecutor:
    """One point after another in this process."""

    name = "serial"

    def map_unordered(self, func: PointFunc, items: list[Point]) -> Iterator[PointRecord]:
        for item in items:
            yield func(item)


class LocalExecutor:
    """Every point a task on ``jobs`` local worker processes (default: all cores).

    The workers are forked children of this process that die with it, however it ends (``kill -9``
    included: :func:`sim.lifetime.child_init`), ignore Ctrl-C (this process stops them), and are killed
    when the sweep ends early (an interruption, ``--timeout``, an error). Forked workers use no named
    semaphores and no resource tracker, so nothing is left in /dev/shm either.
    """

    name = "local"

    def __init__(self, jobs: int | None = None) -> None:
        if jobs is not None and jobs < 1:
            raise ConfigError(f"--jobs must be >= 1, got {jobs}")
        self.jobs = jobs or available_cores()

    def map_unordered(self, func: PointFunc, items: list[Point]) -> Iterator[PointRecord]:
        if self.jobs == 1 or len(items) <= 1:
            yield from SerialExecutor().map_unordered(func, items)
            return
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        from sim.lifetime import child_init

        pool = ProcessPoolExecutor(
            max_workers=min(self.jobs, len(items)),
            mp_context=multiprocessing.get_context("fork"),
            initializer=child_init,
            initargs=(os.getpid(),),
        )
        try:
            pending = {pool.submit(func, item) for item in items}
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            workers = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for worker in workers:  # a point still running is not waited for
                if worker.is_alive():
                    worker.kill()
            for worker in workers:
                worker.join(timeout=5)
            # let the pool's manager thread see its workers gone and close its wake-up pipe now: left
            # running, it can close the pipe while the interpreter's exit hook writes to it (CPython
            # 3.11's concurrent.futures checks, then writes, unlocked), a traceback after Ctrl-C or kill
            manager = getattr(pool, "_executor_manager_thread", None)
            if manager is not None:
                manager.join(timeout=5)
                if manager.is_alive():  # still closing (a loaded machine): the exit hook must not write to its
                    # pipe as it closes it -- the interpreter's shutdown joins the thread all the same
                    from concurrent.futures import process as _process

                    getattr(_process, "_threads_wakeups", {}).pop(manager, None)


class DaskExecutor:
    """Every point a task on an existing dask.distributed cluster (``--address tcp://HOST:PORT``).

    The workers need collsim installed (the same version: cache keys carry it); points carry their
    clusters as data, so no file has to exist on the workers.
    """

    name = "dask"

    def __init__(self, address: str | None, timeout: str = "20s") -> None:
        if not address:
            raise ConfigError("--executor dask needs --address tcp://HOST:PORT of a running dask scheduler")
        self.address = address
        self.timeout = timeout

    def map_unordered(self, func: PointFunc, items: list[Point]) -> Iterator[PointRecord]:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise ConfigError("--executor dask needs dask.distributed: pip install 'collsim[dask]'") from None
        try:
            client = Client(self.address, timeout=self.timeout)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"--address {self.address}: cannot reach a dask scheduler ({exc})") from None
        futures = []
        try:
            futures = client.map(func, items, pure=False)
            for future in as_completed(futures):
                yield future.result()
        finally:
            if futures:
                client.cancel(futures)
            client.close()


EXECUTORS = ("local", "serial", "dask")


def make_executor(name: str, jobs: int | None = None, address: str | None = None) -> Executor:
    """The executor called ``name``: ``local`` (``jobs`` worker processes), ``serial`` or ``dask``."""
    if name == "local":
        return LocalExecutor(jobs)
    if name == "serial":
        return SerialExecutor()
    if name == "dask":
        return DaskExecutor(address)
    raise ConfigError(f"--executor: unknown executor {name!r} (valid: {', '.join(EXECUTORS)})")


def _cost(point: Point) -> float:
    """A rough relative cost, to start the big points first (the sweep then ends sooner)."""
    if point.kind == "collective":
        return point.cluster.gpus**2 * len(point.message_sizes)
    return point.cluster.gpus**2 * (1 + point.workload["gradient_bytes"] / point.workload["bucket_bytes"])


def run_sweep(
    points: Iterable[Point],
    cache: PointCache,
    executor: Executor,
    *,
    progress: bool = True,
    func: PointFunc = run_point,
    on_record: Callable[[PointRecord], None] | None = None,
) -> dict[str, PointRecord]:
    """Run the points not yet in ``cache``; returns key -> record for every point (cached or new).

    ``on_record`` is called after each new record has been stored (a hook for monitoring).
    """
    points = list(points)
    done = cache.load()
    wanted = {p.key for p in points}
    todo = sorted({p.key: p for p in points if p.key not in done}.values(), key=_cost, reverse=True)
    reused = len(wanted) - len(todo)
    bar = _Progress(len(wanted), reused, enabled=progress)
    if reused and progress:
        print(f"resuming: {reused} of {len(wanted)} points already in {cache.path}", file=sys.stderr)
    with bar:
        for record in executor.map_unordered(func, todo):
            if record.cached:
                cache.add(record)
            done[record.key] = record
            bar.advance(record)
            if on_record is not None:
                on_record(record)
    return {key: done[key] for key in (p.key for p in points)}


class _Progress:
    """A rich progress bar on a terminal; a line every tenth of the way otherwise."""

    def __init__(self, total: int, completed: int, enabled: bool) -> None:
        self.total, self.completed, self.enabled = total, completed, enabled
        self.started = time.perf_counter()
        self._bar: Any = None
        self._next_line = 0.1

    def __enter__(self) -> _Progress:
        if not self.enabled or self.completed == self.total:
            return self
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("simulating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("points"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("sweep", total=self.total, completed=self.completed)
        return self

    def advance(self, record: PointRecord) -> None:
        self.completed += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.completed)
        elif self.enabled and self.completed >= self._next_line * self.total:
            elapsed = time.perf_counter() - self.started
            print(f"simulated {self.completed}/{self.total} points ({elapsed:.1f} s)", file=sys.stderr, flush=True)
            while self._next_line * self.total <= self.completed:
                self._next_line += 0.1

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
