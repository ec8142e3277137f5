"""A status board shared by the local launcher and its ranks: one small slot per rank in a file that
every rank maps into memory and rewrites as it goes (what it is doing, since when, at which size and
iteration, and -- when it fails -- why and waiting on whom). Updating a slot is a memory write, cheap
enough to do around every iteration; the launcher reads the board to tell a dead or hung rank from the
ranks that only waited for it. No torch here.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "board")
>>> board = create_board(path, 2)
>>> slot = RankSlot(path, 1)
>>> slot.update(IN_COLLECTIVE, size_bytes=4096, iteration=3)
>>> s = read_board(path, 2)[1]
>>> (s.state_name, s.size_bytes, s.iteration, s.pid == os.getpid())
('in-collective', 4096, 3, True)
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from dataclasses import dataclass

__all__ = [
    "CONNECTING",
    "DONE",
    "FAILED",
    "IDLE",
    "IN_COLLECTIVE",
    "NullSlot",
    "PEER_CLOSED",
    "PEER_TIMEOUT",
    "RankSlot",
    "STARTING",
    "SlotState",
    "create_board",
    "read_board",
]

STARTING, CONNECTING, IDLE, IN_COLLECTIVE, DONE, FAILED = 1, 2, 3, 4, 5, 6
STATE_NAMES = {
    0: "not started",
    1: "starting",
    2: "connecting",
    3: "between iterations",
    4: "in-collective",
    5: "done",
    6: "failed",
}
#: why a rank failed (``SlotState.error``)
NO_ERROR, PEER_TIMEOUT, PEER_CLOSED, OWN_ERROR, WRONG_RESULTS = 0, 1, 2, 3, 4

_SLOT = struct.Struct("<qqqqqqd")  # pid, state, size_bytes, iteration, peer, error, since
_SLOT_BYTES = 64


@dataclass(frozen=True)
class SlotState:
    """What one rank last wrote on the board."""

    rank: int
    pid: int
    state: int
    size_bytes: int
    iteration: int
    peer: int
    error: int
    since: float  # time.monotonic() when the state was entered (one clock for all local processes)

    @property
    def state_name(self) -> str:
        return STATE_NAMES.get(self.state, f"state {self.state}")


def create_board(path: str, ranks: int) -> str:
    """Create a zeroed board for ``ranks`` ranks at ``path``."""
    with open(path, "wb") as fh:
        fh.write(b"\0" * (_SLOT_BYTES * max(ranks, 1)))
    return path


def read_board(path: str, ranks: int) -> list[SlotState]:
    """Every rank's slot (a rank that never wrote reads as state 0)."""
    with open(path, "rb") as fh:
        data = fh.read()
    out = []
    for r in range(ranks):
        if len(data) < (r + 1) * _SLOT_BYTES:
            out.append(SlotState(r, 0, 0, 0, -1, -1, 0, 0.0))
            continue
        pid, state, size, it, peer, error, since = _SLOT.unpack_from(data, r * _SLOT_BYTES)
        out.append(SlotState(r, pid, state, size, it, peer, error, since))
    return out


class RankSlot:
    """A rank's writable slot on the board at ``path``."""

    def __init__(self, path: str, rank: int) -> None:
        self.rank = rank
        self._fd = os.open(path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, 0)
        self._offset = rank * _SLOT_BYTES
        if self._offset + _SLOT_BYTES > len(self._map):
            raise ValueError(f"status board {path} has no slot for rank {rank}")
        self._size = 0
        self._iteration = -1

    def update(
        self,
        state: int,
        *,
        size_bytes: int | None = None,
        iteration: int | None = None,
        peer: int = -1,
        error: int = NO_ERROR,
    ) -> None:
        """Record ``state`` (and where the rank is) from now on."""
        if size_bytes is not None:
            self._size = size_bytes
        if iteration is not None:
            self._iteration = iteration
        _SLOT.pack_into(
            self._map, self._offset, os.getpid(), state, self._size, self._iteration, peer, error, time.monotonic()
        )

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)


class NullSlot:
    """No board (under torchrun or srun): every update is free."""

    rank = -1

    def update(self, state: int, **_: object) -> None:
        pass

    def close(self) -> None:
        pass
