"""What NCCL itself ran for each size of a ``builtin`` run on the nccl backend (``--nccl-picks 1``).

NCCL's tuner picks an algorithm and a protocol per call. With ``NCCL_DEBUG=INFO`` and
``NCCL_DEBUG_SUBSYS=TUNING`` rank 0 of a communicator logs every collective's pick (``src/enqueue.cc``:
``AllReduce: 1048576 Bytes -> Algo NVLS_TREE proto SIMPLE channel{Lo..Hi}={0..15}`` from 2.24, ``1048576
Bytes -> Algo 5 proto 2 time 12.3`` before). Rank 0 here sends that log to a file of its own
(``NCCL_DEBUG_FILE``, line-buffered by NCCL), reads what each size added once the size is measured, and
records the pick most of that size's calls ran. One rank prints nothing: NCCL runs a one-rank collective
as a local copy without asking its tuner.

The log costs rank 0 a line written per call, inside the timed loop (a few microseconds), as it does
nccl-tests' users who set ``NCCL_DEBUG=INFO``; so it is asked for, not on by default.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PickLog", "debug_environ", "nccl_function"]

#: NCCL's name of each collective in its TUNING lines (``ncclFuncToString``)
_FUNCTIONS = {
    "allreduce": "AllReduce",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "allgather": "AllGather",
    "reducescatter": "ReduceScatter",
}
#: NCCL's names of the protocols (``ncclProtoStr``)
_PROTO_NAMES = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}


def nccl_function(collective: str) -> str | None:
    """NCCL's name of a collective that its tuner picks for (None: send/recv, gather, scatter, all-to-all).

    >>> nccl_function("allreduce"), nccl_function("alltoall")
    ('AllReduce', None)
    """
    return _FUNCTIONS.get(collective)


def debug_environ(folder: Path, environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """The variables that make NCCL log its picks into ``folder`` (set before NCCL starts). A subsystem
    list the user set keeps its entries, TUNING added.

    >>> sorted(debug_environ(Path("/tmp/x"), {"NCCL_DEBUG_SUBSYS": "INIT"}).items())
    [('NCCL_DEBUG', 'INFO'), ('NCCL_DEBUG_FILE', '/tmp/x/nccl.%h.%p'), ('NCCL_DEBUG_SUBSYS', 'INIT,TUNING')]
    """
    environ = os.environ if environ is None else environ
    raw = environ.get("NCCL_DEBUG_SUBSYS", "").strip()
    subsys = [s.strip() for s in raw.lstrip("^").split(",") if s.strip()]
    if raw.startswith("^"):  # "^X,Y": every subsystem but X and Y (NCCL's debug.cc): TUNING kept in
        kept = [s for s in subsys if s.upper() != "TUNING"]
        subsys = ["^" + ",".join(kept)] if kept else ["ALL"]
    elif "TUNING" not in {s.upper() for s in subsys} and "ALL" not in {s.upper() for s in subsys}:
        subsys.append("TUNING")
    level = "TRACE" if environ.get("NCCL_DEBUG", "").strip().upper() == "TRACE" else "INFO"  # (TRACE logs more)
    return {
        "NCCL_DEBUG": level,
        "NCCL_DEBUG_SUBSYS": ",".join(subsys),
        "NCCL_DEBUG_FILE": str(folder / "nccl.%h.%p"),
    }


@dataclass
class PickLog:
    """Reads the TUNING lines NCCL appended to the log files in ``folder`` since the last :meth:`take`."""

    folder: Path
    _read: dict[Path, int] = field(default_factory=dict)  # bytes of each file already read

    def _new_lines(self) -> list[str]:
        lines: list[str] = []
        for path in sorted(self.folder.glob("nccl.*")):
            with path.open("rb") as f:
                f.seek(self._read.get(path, 0))
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line NCCL is still writing waits for the next take
            self._read[path] = self._read.get(path, 0) + end
            lines += data[:end].decode("utf-8", "replace").splitlines()
        return lines

    def take(self, collective: str, nbytes: set[int]) -> dict[str, Any] | None:
        """The (algorithm, protocol) most of the new lines of ``collective`` at one of the byte counts
        ``nbytes`` name (NCCL logs count x type size: the per-rank part for all-gather and reduce-scatter),
        as the simulator names them, with how many calls said so; None where NCCL logged no such call.

        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> line = "h:1:1 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo {} proto {} channel{{Lo..Hi}}={{0..1}}\\n"
        >>> _ = (d / "nccl.h.1").write_text(line.format("RING", "LL") * 3 + line.format("TREE", "LL") + "x")
        >>> log = PickLog(d)
        >>> log.take("allreduce", {4096})
        {'algorithm': 'ring', 'protocol': 'll', 'nccl': 'Ring/LL', 'calls': 3, 'of': 4}
        >>> log.take("allreduce", {4096}) is None  # nothing new
        True
        """
        from sim.nccl.tuner import NCCL_NAMES
        from validate.calibration.inputs import tuning_pick

        name = nccl_function(collective)
        seen: Counter[tuple[str, str]] = Counter()
        for line in self._new_lines():
            pick = tuning_pick(line)
            if pick is None:
                continue
            func, size, algo, proto = pick
            if func not in (None, name) or size not in nbytes or not algo or not proto:
                continue
            seen[(algo, proto)] += 1
        if not seen:
            return None
        (algo, proto), calls = seen.most_common(1)[0]
        label = f"{NCCL_NAMES.get(algo, algo)}/{_PROTO_NAMES.get(proto, proto)}"
        return {"algorithm": algo, "protocol": proto, "nccl": label, "calls": calls, "of": sum(seen.values())}
