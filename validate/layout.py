"""How a requested size becomes buffers, with nccl-tests' conventions (see :mod:`sim.collectives`).

All-reduce, broadcast, reduce and send/recv move a per-rank buffer of ``count`` elements. The gathering
and scattering collectives (all-gather, reduce-scatter, gather, scatter, all-to-all) are sized by their
total: ``p`` blocks of ``block`` elements, with the requested size rounded down to a whole number of
elements per rank, as nccl-tests does. The size reported is the size actually moved.

>>> layout("allreduce", 1000, 3, "float")
Layout(collective='allreduce', ranks=3, dtype='float', elt=4, count=250, block=250, size_bytes=1000)
>>> layout("allgather", 1000, 3, "float").size_bytes   # 83 floats per rank
996
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.collectives import DTYPES, get_collective
from sim.errors import ConfigError

__all__ = ["Layout", "layout"]


@dataclass(frozen=True)
class Layout:
    """Element counts of one size: ``count`` in nccl-tests' column, ``block`` per rank's block."""

    collective: str
    ranks: int
    dtype: str
    elt: int
    count: int
    block: int
    size_bytes: int

    @property
    def blocked(self) -> bool:
        """Whether the buffers are ``ranks`` blocks of ``block`` elements (the gathering collectives)."""
        return get_collective(self.collective).size_is_total


def layout(collective: str, size_bytes: int, ranks: int, dtype: str) -> Layout:
    """The element counts for ``size_bytes`` of ``collective`` on ``ranks`` ranks."""
    coll = get_collective(collective)
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r} (valid: {', '.join(DTYPES)})")
    elt = DTYPES[dtype]
    if coll.size_is_total:
        block = int(size_bytes) // (elt * ranks)
        if block < 1:
            raise ConfigError(
                f"{coll.name} of {size_bytes} B on {ranks} ranks: less than one {dtype} per rank "
                f"(the smallest size is {elt * ranks} B)"
            )
        count = block * ranks
    else:
        count = int(size_bytes) // elt
        if count < 1:
            raise ConfigError(f"{coll.name} of {size_bytes} B: less than one {dtype} ({elt} B)")
        block = count
    return Layout(coll.name, ranks, dtype, elt, count, block, count * elt)
