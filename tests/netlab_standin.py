"""A stand-in for ``python -m validate`` in the netlab tests: one rank, torchrun-style environment.

It checks the environment netlab sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
GLOO_SOCKET_IFNAME -- an interface that must exist in the rank's namespace), optionally joins a gloo
process group across the namespaces and all-reduces a small tensor, and rank 0 appends one JSON line to
``--json``. ``--sleep S`` waits (for the interrupt and timeout tests), ``--marker DIR`` records that the
rank started, ``--exit-code N`` makes rank 0 exit with N. Unknown options are ignored, as a runner's
own options would be.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--topology", required=True)
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--marker")
    parser.add_argument("--exit-code", type=int, default=0)
    opts, rest = parser.parse_known_args(argv)
    env = {
        k: os.environ[k]
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME")
    }
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    interfaces = [name for _, name in socket.if_nameindex()]
    if env["GLOO_SOCKET_IFNAME"] not in interfaces:
        print(f"rank {rank}: GLOO_SOCKET_IFNAME={env['GLOO_SOCKET_IFNAME']} not in {interfaces}", file=sys.stderr)
        return 3
    if opts.marker:
        # written whole, then named: a test that reads the folder never sees a half-written file
        tmp = Path(opts.marker) / f".rank{rank}.tmp"
        tmp.write_text(str(os.getpid()))
        os.replace(tmp, Path(opts.marker) / f"rank{rank}")
    time.sleep(opts.sleep)
    record: dict[str, object] = {"rank": rank, "world_size": world, "env": env, "interfaces": interfaces, "rest": rest}
    record["hostname"] = socket.gethostname()
    record["topology"] = opts.topology
    if opts.torch:
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method="env://", timeout=__import__("datetime").timedelta(seconds=60))
        tensor = torch.full((1 << 18,), float(rank + 1))  # 1 MiB of float32
        start = time.perf_counter()
        dist.all_reduce(tensor)
        record["time_s"] = time.perf_counter() - start
        record["sum"] = float(tensor[0])
        record["uniform"] = bool((tensor == tensor[0]).all())
        hosts: list[object] = [None] * world
        dist.all_gather_object(hosts, socket.gethostname())
        record["hostnames"] = hosts
        dist.destroy_process_group()
    if rank == 0:
        with open(opts.json, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        return opts.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
