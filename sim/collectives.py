"""The collectives collsim simulates, with nccl-tests' conventions for sizes and bus bandwidth.

``size`` is what nccl-tests prints in its size column: the per-rank buffer for all-reduce, broadcast,
reduce and send/recv, and the total (count x ranks) for the gathering and scattering collectives.
algbw = size / time; busbw = algbw x factor(p) (nccl-tests PERFORMANCE.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import AlgorithmError

__all__ = ["COLLECTIVES", "DTYPES", "Collective", "get_collective"]


@dataclass(frozen=True)
class Collective:
    name: str
    busbw_factor: Callable[[int], float]
    rooted: bool
    size_is_total: bool
    reduces: bool
    aliases: tuple[str, ...] = ()
    nccl_test: str = ""

    def busbw(self, algbw: float, ranks: int) -> float:
        return algbw * self.busbw_factor(ranks)


def _allreduce(p: int) -> float:
    return 2.0 * (p - 1) / p


def _gathering(p: int) -> float:
    return (p - 1) / p


def _one(p: int) -> float:
    return 1.0


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective("allreduce", _allreduce, False, False, True, ("all-reduce", "all_reduce"), "all_reduce_perf"),
        Collective("broadcast", _one, True, False, False, ("bcast",), "broadcast_perf"),
        Collective("reduce", _one, True, False, True, (), "reduce_perf"),
        Collective("allgather", _gathering, False, True, False, ("all-gather", "all_gather"), "all_gather_perf"),
        Collective(
            "reducescatter", _gathering, False, True, True, ("reduce-scatter", "reduce_scatter"), "reduce_scatter_perf"
        ),
        Collective("gather", _gathering, True, True, False, (), "gather_perf"),
        Collective("scatter", _gathering, True, True, False, (), "scatter_perf"),
        Collective("alltoall", _gathering, False, True, False, ("all-to-all", "all_to_all"), "alltoall_perf"),
        Collective("sendrecv", _one, False, False, False, ("send-recv", "send_recv", "p2p"), "sendrecv_perf"),
    )
}

_ALIASES = {alias: c.name for c in COLLECTIVES.values() for alias in (c.name, *c.aliases)}

#: nccl-tests' type names and their sizes in bytes
DTYPES: dict[str, int] = {
    "int8": 1,
    "uint8": 1,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}


def get_collective(name: str) -> Collective:
    """The collective called ``name`` (or one of its aliases, e.g. ``all-reduce``)."""
    key = _ALIASES.get(name.strip().lower())
    if key is None:
        raise AlgorithmError(f"unknown collective {name!r} (valid: {', '.join(COLLECTIVES)})")
    return COLLECTIVES[key]
