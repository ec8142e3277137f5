"""Who this process is: its rank in the job, read the way torchrun and srun set it up.

``python -m validate`` is one rank. It reads torchrun's variables (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) when ``RANK`` is set, and
otherwise maps SLURM's the way torchrun would: ``SLURM_PROCID`` -> rank, ``SLURM_NTASKS`` -> world size,
``SLURM_LOCALID`` -> local rank, the tasks on this node -> local world size, the first host of
``SLURM_JOB_NODELIST`` -> master address, and ``MASTER_PORT`` (or, when unset, a port derived from
``SLURM_JOB_ID`` so that jobs sharing a node do not collide). No torch here.

>>> e = rank_env({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1",
...               "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NODEID": "1",
...               "SLURM_JOB_ID": "4242"})
>>> e.rank, e.world_size, e.local_rank, e.local_world_size, e.master_addr, e.master_port, e.launcher
(5, 8, 1, 4, 'gpu07', 24242, 'slurm')
>>> expand_hostlist("rack[1-2]-n[08-10,12]")
['rack1-n08', 'rack1-n09', 'rack1-n10', 'rack1-n12', 'rack2-n08', 'rack2-n09', 'rack2-n10', 'rack2-n12']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sim.errors import ConfigError

__all__ = ["RankEnv", "expand_hostlist", "rank_env", "tasks_per_node"]

#: torchrun's default port, used when neither MASTER_PORT nor SLURM_JOB_ID says otherwise
DEFAULT_PORT = 29500
#: environment variable the local launcher sets for its ranks (the status board's file)
STATUS_VAR = "COLLSIM_VALIDATE_STATUS"


@dataclass(frozen=True)
class RankEnv:
    """One rank's place in the job and how to reach the rendezvous (the TCP store on the master)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int
    launcher: str  # collsim | torchrun | slurm | env

    def torch_environ(self) -> dict[str, str]:
        """The variables torch's ``env://`` rendezvous reads."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


def _int(environ: Mapping[str, str], name: str, low: int = 0) -> int:
    text = environ.get(name)
    if text is None or not text.strip():
        raise ConfigError(f"environment variable {name} expected, but not set")
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"environment variable {name}={text!r}: expected a whole number") from None
    if value < low:
        raise ConfigError(f"environment variable {name}={text!r}: must be >= {low}")
    return value


def _port(environ: Mapping[str, str], fallback: int | None = None) -> int:
    if not environ.get("MASTER_PORT", "").strip():
        if fallback is None:
            raise ConfigError("environment variable MASTER_PORT expected, but not set")
        return fallback
    port = _int(environ, "MASTER_PORT", 1)
    if port > 65535:
        raise ConfigError(f"environment variable MASTER_PORT={port}: not a TCP port (1..65535)")
    return port


def rank_env(environ: Mapping[str, str]) -> RankEnv:
    """This process's :class:`RankEnv` from torchrun's variables, or from SLURM's.

    Raises :class:`~sim.errors.ConfigError` naming the variable that is missing or wrong.
    """
    if environ.get("RANK", "").strip():
        world = _int(environ, "WORLD_SIZE", 1)
        rank = _int(environ, "RANK")
        local_rank = _int(environ, "LOCAL_RANK") if environ.get("LOCAL_RANK", "").strip() else 0
        local_world = _int(environ, "LOCAL_WORLD_SIZE", 1) if environ.get("LOCAL_WORLD_SIZE", "").strip() else None
        addr = environ.get("MASTER_ADDR", "").strip()
        if not addr:
            raise ConfigError("environment variable MASTER_ADDR expected, but not set")
        port = _port(environ)
        if STATUS_VAR in environ:
            launcher = "collsim"
        elif environ.get("TORCHELASTIC_RUN_ID"):
            launcher = "torchrun"
        else:
            launcher = "env"
        env = RankEnv(rank, world, local_rank, local_world or max(local_rank + 1, 1), addr, port, launcher)
    elif environ.get("SLURM_PROCID", "").strip():
        rank = _int(environ, "SLURM_PROCID")
        world = _int(environ, "SLURM_NTASKS", 1)
        local_rank = _int(environ, "SLURM_LOCALID") if environ.get("SLURM_LOCALID", "").strip() else 0
        nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or ""
        if not nodelist.strip():
            raise ConfigError("environment variable SLURM_JOB_NODELIST (or SLURM_NODELIST) expected, but not set")
        hosts = expand_hostlist(nodelist)
        addr = environ.get("MASTER_ADDR", "").strip() or hosts[0]
        job = environ.get("SLURM_JOB_ID", "").strip()
        fallback = 20000 + int(job) % 20000 if job.isdigit() else DEFAULT_PORT
        port = _port(environ, fallback)
        if environ.get("SLURM_NTASKS_PER_NODE", "").strip().isdigit():
            local_world = int(environ["SLURM_NTASKS_PER_NODE"])
        elif environ.get("SLURM_TASKS_PER_NODE", "").strip():
            per_node = tasks_per_node(environ["SLURM_TASKS_PER_NODE"])
            node = int(environ.get("SLURM_NODEID", "0") or 0)
            local_world = per_node[node] if node < len(per_node) else per_node[-1]
        else:
            local_world = max(local_rank + 1, 1)
        env = RankEnv(rank, world, local_rank, local_world, addr, port, "slurm")
    else:
        raise ConfigError(
            "not launched as a rank: set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, or start it with "
            "torchrun (torchrun --nproc_per_node=4 -m validate ...), srun, or `collsim validate run --ranks N`"
        )
    if not 0 <= env.rank < env.world_size:
        raise ConfigError(f"rank {env.rank} is not below the world size {env.world_size}")
    if not 0 <= env.local_rank < env.local_world_size:
        raise ConfigError(f"local rank {env.local_rank} is not below the local world size {env.local_world_size}")
    return env


_BRACKET = re.compile(r"\[([^\]]*)\]")


def expand_hostlist(expr: str) -> list[str]:
    """Host names from a SLURM host list such as ``node[01-04,07],login1``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(expr[start:i])
            start = i + 1
    items.append(expr[start:])
    hosts: list[str] = []
    for item in (i.strip() for i in items):
        if item:
            hosts.extend(_expand_one(item, expr))
    if not hosts or depth != 0:
        raise ConfigError(f"cannot read the SLURM host list {expr!r}")
    return hosts


def _expand_one(item: str, whole: str) -> list[str]:
    match = _BRACKET.search(item)
    if match is None:
        return [item]
    head, tail = item[: match.start()], item[match.end() :]
    out = []
    for part in match.group(1).split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ConfigError(f"cannot read the SLURM host list {whole!r} (range {part!r})")
        width = len(low)
        for n in range(int(low), int(high if dash else low) + 1):
            out.extend(head + str(n).zfill(width) + rest for rest in _expand_one(tail, whole))
    return out


def tasks_per_node(expr: str) -> list[int]:
    """``SLURM_TASKS_PER_NODE`` (``"4(x2),3"``) as one count per node: ``[4, 4, 3]``."""
    out: list[int] = []
    for part in expr.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not match:
            raise ConfigError(f"cannot read SLURM_TASKS_PER_NODE={expr!r}")
        out.extend([int(match.group(1))] * int(match.group(2) or 1))
    return out
