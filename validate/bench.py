"""The timed loop of one size on one rank, nccl-tests' way: ``-w`` warm-up iterations, one barrier, then
``-n`` timed iterations back to back.

Each rank times every iteration of the collective alone (``perf_counter`` around it, with
``torch.cuda.synchronize`` on both sides on GPUs); the restore of the inputs and the check of the result
(``-c 1``) happen outside the timed region, on every rank alike. After the loop the per-iteration times
are reduced with MAX over ranks and the wrong-element counts with SUM.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .algorithms import RealAlgorithm, Task
from .comm import PeerError, TorchComm, classify, describe_failure
from .data import Buffers, make_buffers
from .faults import Fault
from .layout import Layout
from .status import IDLE, IN_COLLECTIVE, NullSlot, RankSlot

__all__ = ["SizeRun", "barrier", "measure"]


@dataclass(frozen=True)
class SizeRun:
    """What one rank needs to measure sizes: who it is and how to run and time things."""

    comm: TorchComm
    device: str
    root: int
    gpus_per_host: int
    warmup: int
    iters: int
    check: bool
    slot: RankSlot | NullSlot
    fault: Fault | None = None

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()


def barrier(device: str) -> None:
    """A barrier that works on every backend: an all-reduce of one element on the run's device."""
    dist.all_reduce(torch.zeros(1, device=device))


def _guarded(run: Callable[[], None], comm: TorchComm) -> Callable[[], None]:
    """``run`` with library errors (the builtin collectives') turned into :class:`PeerError`."""

    def call() -> None:
        try:
            run()
        except PeerError:
            raise
        except (RuntimeError, dist.DistError) as exc:
            message = describe_failure(comm.rank, comm.where, None, exc, comm.timeout)
            raise PeerError(message, peer=None, kind=classify(exc)) from exc

    return call


def measure(
    ctx: SizeRun, algo: RealAlgorithm, lay: Layout, size_index: int, bufs: Buffers | None = None
) -> tuple[list[float], int | None]:
    """Run ``algo`` on ``lay`` and return (per-iteration times of the slowest rank, wrong elements over
    all ranks -- None without the check). Every rank returns the same. ``bufs`` (from
    :func:`~validate.data.make_buffers`) may be reused across calls."""
    comm = ctx.comm
    if bufs is None:
        ctx.slot.update(IDLE, size_bytes=lay.size_bytes, iteration=0)  # a failure here is at this size
        bufs = make_buffers(lay, comm.rank, ctx.root, ctx.device, check=ctx.check)
    run = _guarded(algo.plan(Task(comm, bufs.inp, bufs.out, ctx.root, ctx.gpus_per_host)), comm)
    times = torch.zeros(ctx.iters, dtype=torch.float64)
    wrong = 0
    what = f"{lay.collective} ({algo.spec}), {lay.size_bytes} B"
    for it in range(ctx.warmup + ctx.iters):
        timed = it >= ctx.warmup
        if it == ctx.warmup:
            barrier(ctx.device)
        if ctx.check:
            bufs.reset()
        ctx.slot.update(IDLE, size_bytes=lay.size_bytes, iteration=it)
        if ctx.fault is not None:
            ctx.fault.maybe_fire(comm.rank, size_index, lay.size_bytes, it)
        label = f"iteration {it - ctx.warmup + 1} of {ctx.iters}" if timed else f"warm-up {it + 1} of {ctx.warmup}"
        comm.where = f"{what}, {label}"
        ctx.slot.update(IN_COLLECTIVE)
        ctx.sync()
        start = time.perf_counter()
        run()
        ctx.sync()
        elapsed = time.perf_counter() - start
        ctx.slot.update(IDLE)
        if timed:
            times[it - ctx.warmup] = elapsed
            if ctx.check:
                wrong += bufs.wrong()
    comm.where = f"{what}, gathering the times"
    ctx.slot.update(IN_COLLECTIVE, iteration=ctx.warmup + ctx.iters)
    times = times.to(ctx.device)
    counts = torch.tensor([wrong], dtype=torch.float64, device=ctx.device)

    def combine() -> None:
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        dist.all_reduce(counts)

    _guarded(combine, comm)()
    ctx.slot.update(IDLE)
    return times.cpu().tolist(), (int(counts.item()) if ctx.check else None)
