"""The one way collsim reads a file it was given: topology and report YAML, calibration files, ``--from``
measurement logs, JSON lines.

Every read goes through :func:`read_bytes` / :func:`read_text` / :func:`iter_lines`, which

* open without blocking and refuse anything but a regular file (a named pipe, a device such as
  ``/dev/zero`` -- directly or through a symbolic link --, a socket or a directory) in one line,
  before reading a byte;
* refuse a file larger than a cap (``limit``, 16 MiB unless the caller says otherwise) from its size, and
  never read more than the cap even if the file grows while it is read;
* check the ``--timeout`` deadline in force (:mod:`sim.deadline`) between chunks.

Numbers are bounded before Python converts them: :func:`bounded_int` is a ``parse_int`` hook for
:func:`json.loads` (and the YAML loader's integer constructor), refusing integers of more than
:data:`MAX_INT_DIGITS` digits -- Python itself refuses more than 4,300 with a traceback-worthy ValueError,
and nothing collsim reads needs more than 19.

>>> import os, tempfile
>>> try:
...     read_bytes("/dev/zero")
... except ConfigError as exc:
...     print(exc)
/dev/zero: is a character device, not a regular file
>>> bounded_int("-42")
-42
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import deadline
from .errors import CollsimError, ConfigError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "bounded_int",
    "int_parser",
    "iter_lines",
    "check_regular",
    "read_bytes",
    "read_head",
    "read_text",
]

#: The largest file collsim reads unless a caller says otherwise (16 MiB): far above any real
#: topology, report spec or calibration, and a bound on what a runaway generated file can cost.
MAX_FILE_BYTES = 16 * 2**20
#: The most digits of an integer collsim converts: 2^63 has 19; more is never a count, a size or a time.
MAX_INT_DIGITS = 30
_CHUNK = 1 << 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


@contextlib.contextmanager
def _open_regular(path: str | os.PathLike[str], error: type[Exception], noun: str = "file") -> Iterator[int]:
    """A file descriptor of ``path`` if it is a regular file; ``error`` (one line naming it) otherwise.

    Opened with O_NONBLOCK, so that opening a named pipe with no writer does not wait for one.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise error(f"{name}: no such {noun}") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not a regular file") from None
    except PermissionError:
        raise error(f"{name}: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing only
            raise error(f"{name}: not a regular file") from None
        raise error(f"{name}: cannot read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{name}: is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        yield fd
    finally:
        os.close(fd)


def _too_large(name: str, limit: int) -> str:
    shown = f"{limit // 2**20} MiB" if limit >= 2**20 and limit % 2**20 == 0 else f"{limit:,} bytes"
    return f"{name}: larger than {shown}, too large for a file collsim reads"


def read_bytes(
    path: str | os.PathLike[str],
    *,
    limit: int = MAX_FILE_BYTES,
    error: type[Exception] = ConfigError,
    noun: str = "file",
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (a larger file is refused).

    Every problem is one ``error`` line naming the file: missing, not a regular file, too large,
    unreadable, or past the ``--timeout`` in force (then :class:`sim.deadline.SimulationTimeout`).
    """
    name = os.fspath(path)
    with _open_regular(name, error, noun) as fd:
        if os.fstat(fd).st_size > limit:
            raise error(_too_large(name, limit))
        parts: list[bytes] = []
        total = 0
        while True:
            deadline.check()
            try:
                chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            except OSError as exc:
                raise error(f"{name}: cannot read ({exc.strerror or exc})") from None
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(_too_large(name, limit))
        return b"".join(parts)


def read_text(
    path: str | os.PathLike[str],
    *,
    limit: int = MAX_FILE_BYTES,
    error: type[Exception] = ConfigError,
    noun: str = "file",
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (anything else is one ``error`` line)."""
    raw = read_bytes(path, limit=limit, error=error, noun=noun)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{os.fspath(path)}: not a UTF-8 text file") from None


def iter_lines(
    path: str | os.PathLike[str],
    *,
    max_line: int,
    limit: int = MAX_FILE_BYTES,
    error: type[Exception] = ConfigError,
    line_of: str = "",
) -> Iterator[tuple[int, bytes]]:
    """Numbered raw lines of the regular file ``path``: a line longer than ``max_line`` bytes, or more
    than ``limit`` bytes in all, is one ``error`` line (the deadline in force is checked per line)."""
    name = os.fspath(path)
    with _open_regular(name, error) as fd:
        if os.fstat(fd).st_size > limit:
            raise error(_too_large(name, limit))
        with os.fdopen(os.dup(fd), "rb") as fh:
            total = 0
            for n, raw in enumerate(iter(lambda: fh.readline(max_line + 1), b""), 1):
                if n % 1024 == 0:
                    deadline.check()
                if len(raw) > max_line:
                    what = f" is not {line_of}" if line_of else ""
                    raise error(f"{name}:{n}: a line of more than {max_line:,} bytes{what}")
                total += len(raw)
                if total > limit:
                    raise error(_too_large(name, limit))
                yield n, raw


def read_head(path: str | os.PathLike[str], n: int, *, error: type[Exception] = ConfigError) -> bytes:
    """The first ``n`` bytes (or fewer) of the regular file ``path``."""
    with _open_regular(path, error) as fd:
        try:
            return os.read(fd, n)
        except OSError as exc:
            raise error(f"{os.fspath(path)}: cannot read ({exc.strerror or exc})") from None


def check_regular(path: str | os.PathLike[str], error: type[Exception] = ConfigError) -> Path:
    """``path`` if it names a regular file (without reading it); ``error`` otherwise."""
    with _open_regular(path, error):
        pass
    return Path(path)


class NumberTooLong(CollsimError, ValueError):
    """An integer with more digits than :data:`MAX_INT_DIGITS`."""


def _digits_message(text: str) -> str:
    digits = sum(c.isdigit() for c in text)
    return f"an integer of {digits:,} digits is out of range (at most {MAX_INT_DIGITS})"


def bounded_int(text: str) -> int:
    """``int(text)`` for at most :data:`MAX_INT_DIGITS` digits; :class:`NumberTooLong` otherwise."""
    if len(text) > MAX_INT_DIGITS and len(text.replace("_", "").lstrip("+-")) > MAX_INT_DIGITS:
        raise NumberTooLong(_digits_message(text))
    return int(text)


def int_parser(error: type[Exception]) -> Any:
    """A ``parse_int`` hook for :func:`json.loads` raising ``error`` for too many digits."""

    def parse(text: str) -> int:
        try:
            return bounded_int(text)
        except NumberTooLong as exc:
            raise error(str(exc)) from None

    return parse
