"""Which backend on which device, and joining the process group with errors that say what went wrong.

The backend follows the device unless told: CUDA tensors with NCCL when there is a visible GPU for
every local rank, CPU tensors with gloo otherwise. NCCL runs one rank per GPU (it refuses two ranks on
one GPU with "Duplicate GPU detected"), so local rank ``k`` uses ``cuda:k``; when more ranks than GPUs
run on a host (4 ranks on a one-GPU workstation, say) the default is gloo on CPUs, and the choice says
why; asking for NCCL there is an error up front. :func:`resolve` is pure -- the CUDA facts are
arguments -- so it is tested without a GPU.

>>> resolve(None, None, cuda_available=False, gpus=0, local_rank=0, local_world_size=4)
Placement(backend='gloo', device='cpu', note='')
>>> resolve(None, None, cuda_available=True, gpus=8, local_rank=3, local_world_size=8)
Placement(backend='nccl', device='cuda:3', note='')
>>> resolve(None, None, cuda_available=True, gpus=1, local_rank=0, local_world_size=4).note
'gloo on CPUs: 4 ranks on this host but 1 GPU(s) visible (NCCL runs one rank per GPU; --backend gloo or --backend nccl to choose)'
"""

from __future__ import annotations

import datetime
import os
import re
import socket
from typing import NamedTuple

from sim.errors import ConfigError, RunError

from .env import RankEnv

__all__ = ["Placement", "init_process_group", "interface_of", "library_message", "resolve"]


class Placement(NamedTuple):
    """Where a rank runs: the backend, the device, and why, when the default was not the obvious one."""

    backend: str
    device: str
    note: str = ""


_SOURCE = re.compile(r"^\[[^\]]*:\d+\]\s*")


def resolve(
    backend: str | None,
    device: str | None,
    *,
    cuda_available: bool,
    gpus: int,
    local_rank: int,
    local_world_size: int,
) -> Placement:
    """The backend and device of this rank, e.g. ``("nccl", "cuda:1")`` or ``("gloo", "cpu")``."""
    if backend is None and device is None and cuda_available and 0 < gpus < local_world_size:
        return Placement(
            "gloo",
            "cpu",
            f"gloo on CPUs: {local_world_size} ranks on this host but {gpus} GPU(s) visible "
            "(NCCL runs one rank per GPU; --backend gloo or --backend nccl to choose)",
        )
    if device is None:
        device = "cpu" if backend == "gloo" or (backend is None and not cuda_available) else "cuda"
    if backend is None:
        backend = "nccl" if device == "cuda" else "gloo"
    if backend == "nccl" and device != "cuda":
        raise ConfigError("--backend nccl needs CUDA tensors (--device cuda); gloo runs on CPUs")
    if backend == "gloo" and device == "cuda":
        raise ConfigError("--backend gloo runs the point-to-point schedules on CPU tensors only; use --device cpu")
    if backend not in ("gloo", "nccl"):
        raise ConfigError(f"unknown backend {backend!r} (valid: gloo, nccl)")
    if device == "cpu":
        return Placement(backend, "cpu")
    if not cuda_available or gpus < 1:
        raise ConfigError(
            "--backend nccl / --device cuda: no CUDA GPU is visible (torch.cuda.is_available() is False); "
            "use --backend gloo"
        )
    if local_world_size > gpus:
        raise ConfigError(
            f"nccl runs one rank per GPU: {local_world_size} ranks on this host but {gpus} GPU(s) visible "
            "(NCCL refuses two ranks on one GPU); start fewer ranks per host or use --backend gloo"
        )
    return Placement(backend, f"cuda:{local_rank}")


def interface_of(backend: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The network interface the backend was told to use (``GLOO_SOCKET_IFNAME`` or
    ``NCCL_SOCKET_IFNAME``), or None when it picks one itself."""
    name = "GLOO_SOCKET_IFNAME" if backend == "gloo" else "NCCL_SOCKET_IFNAME"
    return environ.get(name) or None


def local_address(master_addr: str, master_port: int) -> str | None:
    """The local address this host would use to reach the master (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((master_addr, master_port))
            return str(s.getsockname()[0])
    except OSError:
        return None


def init_process_group(env: RankEnv, backend: str, device: str, timeout: float) -> None:
    """Join the job's process group through torch's ``env://`` rendezvous (the TCP store on the
    master), with ``timeout`` for every collective and for the rendezvous itself."""
    import torch
    import torch.distributed as dist

    os.environ.update(env.torch_environ())
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    kwargs = {"device_id": torch.device(device)} if device.startswith("cuda") else {}
    try:
        dist.init_process_group(
            backend,
            init_method="env://",
            rank=env.rank,
            world_size=env.world_size,
            timeout=datetime.timedelta(seconds=timeout),
            **kwargs,
        )
    except (RuntimeError, ValueError) as exc:
        raise RunError(rendezvous_error(env, exc, timeout)) from None


def rendezvous_error(env: RankEnv, exc: BaseException, timeout: float) -> str:
    """One line for a failed rendezvous: the port in use, the master unreachable, or what torch said."""
    text = str(exc)
    where = f"{env.master_addr}:{env.master_port}"
    if "EADDRINUSE" in text or "address already in use" in text.lower():
        return (
            f"rank {env.rank}: cannot listen on {where}: the port is in use (another job or a leftover "
            f"process?); pick another MASTER_PORT / --master-port"
        )
    if env.rank != 0 and ("timed out" in text or "Connection refused" in text or "connect" in text.lower()):
        return (
            f"rank {env.rank}: cannot reach the master at {where} within {timeout:g} s (is rank 0 running, "
            f"are MASTER_ADDR/MASTER_PORT right, is the port open?)"
        )
    if "timed out" in text.lower() or "timeout" in text.lower():
        return (
            f"rank {env.rank}: the {env.world_size} ranks did not all join at {where} within {timeout:g} s "
            f"(a rank did not start, or WORLD_SIZE is wrong)"
        )
    return f"rank {env.rank}: joining the process group at {where} failed: {library_message(exc)}"


def library_message(exc: BaseException) -> str:
    """The gist of a torch/gloo error: its first line without the source location and the advice.

    >>> library_message(RuntimeError("[/x/gloo/pair.cc:553] Connection closed by peer [127.0.0.1]:5556. This is "
    ...                              "typically caused by a remote worker crashing."))
    'Connection closed by peer [127.0.0.1]:5556'
    """
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    first = _SOURCE.sub("", text.splitlines()[0])
    return first.split(". ")[0].rstrip(".")
