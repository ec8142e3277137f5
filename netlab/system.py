"""The only place netlab calls ``ip`` and ``tc``: argument lists (never a shell), batched where it can.

Every function raises :class:`NetlabError` with the command and its error output when a command fails,
and :func:`require` raises :class:`NetlabUnavailable` saying what is missing (root, ``ip``, ``tc``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import NetlabError, NetlabUnavailable

__all__ = ["NETNS_DIR", "batch", "links", "missing", "netns_list", "netns_pids", "require", "run"]

#: Where ``ip netns`` keeps the named namespaces (``/var/run/netns`` is a link to it on most systems).
NETNS_DIR = Path("/run/netns")
TOOLS = ("ip", "tc")


def missing() -> list[str]:
    """What this machine lacks for netlab, as phrases ('root', '`ip`', ...); empty when nothing."""
    lacks = [] if os.geteuid() == 0 else ["root (CAP_NET_ADMIN to create namespaces, veths and qdiscs)"]
    lacks += [f"`{tool}` (iproute2)" for tool in TOOLS if shutil.which(tool) is None]
    return lacks


def require() -> None:
    """Raise :class:`NetlabUnavailable` naming what is missing, if anything is."""
    lacks = missing()
    if lacks:
        raise NetlabUnavailable(f"netlab needs {' and '.join(lacks)}; missing on this machine")


def run(argv: Sequence[str], *, stdin: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
    """Run ``argv`` and return its stdout; raise :class:`NetlabError` when it fails and ``check``."""
    try:
        done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise NetlabUnavailable(f"netlab needs `{argv[0]}` (iproute2); not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise NetlabError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from None
    if check and done.returncode != 0:
        detail = " | ".join(line.strip() for line in done.stderr.strip().splitlines()[-3:]) or f"exit {done.returncode}"
        raise NetlabError(f"`{' '.join(argv)}` failed: {detail}")
    return done.stdout


def batch(argv: Sequence[str], lines: Iterable[Sequence[str]], *, force: bool = False) -> None:
    """Run many ``ip``/``tc`` commands in one process: ``argv -batch -`` with one command per line.

    Each line's words must not contain whitespace (netlab's names and numbers never do). With ``force``
    the batch continues past failing lines (for removal, where some may already be gone).
    """
    text = []
    for words in lines:
        for word in words:
            if not word or any(c.isspace() for c in word):
                raise NetlabError(f"refusing batch word {word!r}: empty or contains whitespace")
        text.append(" ".join(words))
    if text:
        run([*argv, *(["-force"] if force else []), "-batch", "-"], stdin="\n".join(text) + "\n", check=not force)


def netns_list() -> list[str]:
    """Names of all named network namespaces."""
    out = run(["ip", "-j", "netns", "list"]).strip()
    return [entry["name"] for entry in json.loads(out)] if out else []


def links(ns: str | None = None) -> list[str]:
    """Names of the network devices in namespace ``ns`` (the root namespace when None)."""
    out = run(["ip", *(["-n", ns] if ns else []), "-j", "link", "show"]).strip()
    return [entry["ifname"] for entry in json.loads(out)] if out else []


def netns_pids(ns: str) -> list[int]:
    """Process ids running in namespace ``ns`` (empty when the namespace is gone). A process that has
    exited but not yet been reaped (a zombie: a killed rank whose parent died too waits for init) runs
    nothing -- no port, no CPU, no writes -- and is not counted."""
    out = run(["ip", "netns", "pids", ns], check=False)
    return [pid for pid in (int(word) for word in out.split() if word.isdigit()) if _running(pid)]


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and has not exited (its /proc state is not Z or X)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    # the state follows the command name, which is in parentheses and may itself hold ") "
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
