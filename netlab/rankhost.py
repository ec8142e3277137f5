"""``python -m netlab.rankhost HOSTNAME MODULE ARGS...``: run ``python -m MODULE ARGS`` as if on its own host.

netlab starts each rank through this wrapper inside the rank's network namespace: it moves the process
into a new UTS namespace, sets the host name there (so that ``socket.gethostname()`` tells the emulated
hosts apart, as a runner's report of ranks per host expects), and then runs MODULE as ``__main__``
exactly as ``python -m MODULE`` would. The host name is a topology host name when it is a valid one,
else the host's namespace name (netlab chooses; see :func:`netlab.launch.rank_commands`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import runpy
import socket
import sys

CLONE_NEWUTS = 0x04000000


def become(hostname: str) -> None:
    """Give this process a UTS namespace of its own, named ``hostname``."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if libc.unshare(CLONE_NEWUTS) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWUTS): {os.strerror(err)}")
    socket.sethostname(hostname)


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: python -m netlab.rankhost HOSTNAME MODULE [ARGS...]")
    hostname, module, *args = argv
    become(hostname)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
