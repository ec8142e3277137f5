"""The state file of a lab: which namespace, interface and address stands for which topology host, so that
``status``, ``run`` and ``down`` work from another process and after a crash.

One JSON file per prefix, ``$COLLSIM_NETLAB_STATE_DIR/<prefix>.json`` (default ``/run/collsim-netlab``,
which the kernel empties at reboot, as it does the namespaces), written atomically (temp file, fsync,
rename). A lock file beside it keeps two commands from building or removing the same prefix at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sim import files
from sim.errors import ConfigError

from . import names
from .errors import NetlabError

__all__ = ["STATE_VERSION", "locked", "read_state", "remove_state", "state_dir", "state_path", "write_state"]

STATE_VERSION = 1
#: a state file is a few KiB; a larger one is not netlab's
MAX_STATE_BYTES = 16 * 2**20


def state_dir() -> Path:
    """Where state files live (``COLLSIM_NETLAB_STATE_DIR`` overrides ``/run/collsim-netlab``)."""
    return Path(os.environ.get("COLLSIM_NETLAB_STATE_DIR") or "/run/collsim-netlab")


def state_path(prefix: str) -> Path:
    return state_dir() / f"{names.check_prefix(prefix)}.json"


def write_state(prefix: str, data: dict[str, Any]) -> Path:
    """Write ``data`` as the state of ``prefix``, atomically; returns the path."""
    path = state_path(prefix)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{prefix}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": STATE_VERSION, **data}, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def read_state(prefix: str) -> dict[str, Any] | None:
    """The state of ``prefix``, or None when there is none or it cannot be read as a netlab state."""
    try:
        data = json.loads(files.read_text(state_path(prefix), limit=MAX_STATE_BYTES), parse_int=files.bounded_int)
    except (ConfigError, ValueError, RecursionError):  # missing, not a regular file, too large, not JSON
        return None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION or data.get("prefix") != prefix:
        return None
    return data


def remove_state(prefix: str) -> bool:
    """Remove the state file of ``prefix``; whether there was one."""
    try:
        state_path(prefix).unlink()
    except FileNotFoundError:
        return False
    return True


@contextlib.contextmanager
def locked(prefix: str, kind: str = "lock") -> Iterator[None]:
    """Hold the lock of ``prefix`` (fails at once, naming the holder, when another command has it).

    ``kind`` ``"lock"`` is up and down's; ``"run"`` is held by a run for as long as its ranks live, so
    that two runs never share a lab."""
    path = state_dir() / f"{names.check_prefix(prefix)}.{kind}"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            doing = "running ranks on" if kind == "run" else "building or removing"
            raise NetlabError(f"another collsim netlab command (pid {holder}) is {doing} prefix {prefix!r}") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
