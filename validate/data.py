"""Buffers of one benchmarked size, filled so that every result can be checked exactly (``-c 1``).

Rank ``r``'s input element ``i`` is a small whole number ``v(x, i)`` that depends on its owner ``x``
(the rank, or for all-to-all the (sender, receiver) block) and on ``i``. For the reducing collectives
the values are small enough that every partial sum, in any order, is a whole number the type holds
exactly (``p·max v`` below 2^24 for float, 2048 for half, 256 for bfloat16, 127 for int8, ...), so the
result can be compared with ``==``. Outputs start filled with a sentinel no correct result holds, so an
element an algorithm forgets to write is counted. ``#wrong`` is the number of wrong elements, summed
over ranks, as nccl-tests counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from sim.errors import ConfigError, RunError

from .layout import Layout

__all__ = ["TORCH_DTYPES", "Buffers", "make_buffers", "pattern"]

TORCH_DTYPES: dict[str, torch.dtype] = {
    "int8": torch.int8,
    "uint8": torch.uint8,
    "half": torch.float16,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "float": torch.float32,
    "float32": torch.float32,
    "int64": torch.int64,
    "double": torch.float64,
    "float64": torch.float64,
}

#: largest whole number each type holds exactly (and every smaller one)
_EXACT: dict[torch.dtype, int] = {
    torch.int8: 127,
    torch.uint8: 255,
    torch.float16: 2048,
    torch.bfloat16: 256,
    torch.int32: 2**31 - 1,
    torch.float32: 2**24,
    torch.int64: 2**62,
    torch.float64: 2**53,
}
_MAX_MODULUS = 1 << 20
_IN_PLACE = ("allreduce", "broadcast", "reduce")


def torch_dtype(name: str) -> torch.dtype:
    """The torch type of an nccl-tests type name."""
    if name not in TORCH_DTYPES:
        raise ConfigError(f"type {name!r} cannot be reduced by torch on every backend (use: {', '.join(TORCH_DTYPES)})")
    return TORCH_DTYPES[name]


def modulus(dtype: torch.dtype, p: int, reduces: bool) -> int:
    """Values are taken mod this, so that sums of ``p`` of them (or single values) stay exact and
    below the sentinel."""
    limit = _EXACT[dtype]
    if reduces:
        return max(2, min((limit - 1) // p + 1, _MAX_MODULUS))
    return min(limit, _MAX_MODULUS)


def pattern(x: int, count: int, m: int, offset: int = 0) -> torch.Tensor:
    """``v(x, i)`` for ``i = offset .. offset + count - 1``, as int64 in ``[0, m)``."""
    i = torch.arange(offset, offset + count, dtype=torch.int64)
    return (i * 40503 + x * 2654435761 + (i * (x + 1)) % 9973) % m


@dataclass
class Buffers:
    """One rank's input and output, what to restore before each iteration, and the expected output."""

    inp: torch.Tensor
    out: torch.Tensor
    start: torch.Tensor | None  # what ``out`` (and, in place, ``inp``) holds before every iteration
    expected: torch.Tensor | None  # None on ranks whose result is not checked (non-roots of reduce/gather)

    def reset(self) -> None:
        """Put the buffers back as they were before the first iteration."""
        if self.start is not None:
            self.out.copy_(self.start)

    def wrong(self) -> int:
        """How many elements of ``out`` differ from the expected result."""
        if self.expected is None:
            return 0
        return int((self.out != self.expected).sum().item())


def make_buffers(
    lay: Layout, rank: int, root: int, device: str | torch.device = "cpu", *, check: bool = True
) -> Buffers:
    """Filled buffers of ``lay`` for ``rank``, with the expected result unless ``check`` is False.

    Raises :class:`~sim.errors.RunError` (one line) when the memory for them cannot be had."""
    try:
        return _make_buffers(lay, rank, root, device, check)
    except (MemoryError, RuntimeError) as exc:
        if not isinstance(exc, (MemoryError, torch.OutOfMemoryError)) and "alloc" not in str(exc).lower():
            raise
        raise RunError(
            f"rank {rank}: cannot allocate the buffers of {lay.collective} at {lay.size_bytes} B ({lay.dtype}) "
            f"on {device}: out of memory (try smaller sizes or fewer ranks per machine)"
        ) from None


def _make_buffers(lay: Layout, rank: int, root: int, device: str | torch.device, check: bool) -> Buffers:
    dtype = torch_dtype(lay.dtype)
    p, count, block, coll = lay.ranks, lay.count, lay.block, lay.collective
    m = modulus(dtype, p, coll in ("allreduce", "reduce", "reducescatter"))
    sentinel = _EXACT[dtype]

    def cast(t: torch.Tensor) -> torch.Tensor:
        return t.to(dtype=dtype, device=device)

    def want(make: Callable[[], torch.Tensor], here: bool = True) -> torch.Tensor | None:
        return cast(make()) if check and here else None

    def filled(n: int) -> torch.Tensor:
        return torch.full((n,), sentinel, dtype=dtype, device=device)

    empty = torch.empty(0, dtype=dtype, device=device)
    expected: torch.Tensor | None
    if coll in _IN_PLACE:
        if coll == "broadcast":
            start = cast(pattern(root, count, m)) if rank == root else filled(count)
            expected = want(lambda: pattern(root, count, m))
        else:
            start = cast(pattern(rank, count, m))
            expected = want(lambda: sum(pattern(r, count, m) for r in range(p)), coll == "allreduce" or rank == root)
        buf = start.clone()
        return Buffers(buf, buf, start, expected)
    if coll in ("allgather", "gather"):
        inp = cast(pattern(rank, block, m))
        at_root = coll == "allgather" or rank == root
        out = filled(count) if at_root else empty
        expected = want(lambda: torch.cat([pattern(b, block, m) for b in range(p)]), at_root)
    elif coll == "scatter":
        inp = cast(torch.cat([pattern(b, block, m) for b in range(p)])) if rank == root else empty
        out, expected = filled(block), want(lambda: pattern(rank, block, m))
    elif coll == "reducescatter":
        inp = cast(pattern(rank, count, m))
        out = filled(block)
        expected = want(lambda: sum(pattern(r, block, m, offset=rank * block) for r in range(p)))
    elif coll == "alltoall":
        inp = cast(torch.cat([pattern(rank * p + d, block, m) for d in range(p)]))
        out = filled(count)
        expected = want(lambda: torch.cat([pattern(s * p + rank, block, m) for s in range(p)]))
    elif coll == "sendrecv":
        inp, out = cast(pattern(rank, count, m)), filled(count)
        expected = want(lambda: pattern((rank - 1) % p, count, m))
    else:  # pragma: no cover  (sim.collectives lists no other)
        raise ConfigError(f"no buffers defined for {coll!r}")
    return Buffers(inp, out, out.clone() if out.numel() else None, expected)
