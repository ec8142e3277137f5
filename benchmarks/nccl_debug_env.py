"""On a GPU machine: does NCCL honour the NCCL_DEBUG* variables that ``validate run --nccl-picks 1`` sets in
``os.environ`` after torch is imported (validate/rank.py sets them before the process group starts), and what
does validate record with one rank? Run by benchmarks/gpu_check.sh; prints what it saw.

    python3 benchmarks/nccl_debug_env.py        # writes picks.jsonl into $OUT (else /tmp)
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile


def main() -> None:
    import torch
    import torch.distributed as dist

    sys.path.insert(0, os.getcwd())
    from validate.nccl_picks import PickLog, debug_environ

    folder = pathlib.Path(tempfile.mkdtemp())
    env = debug_environ(folder, {"NCCL_DEBUG_SUBSYS": "INIT"})  # INIT too: lines even where one rank logs no pick
    os.environ.update(env)
    print("env", env)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    files = sorted(folder.glob("nccl.*"))
    print("files", [f.name for f in files])
    for f in files:
        lines = f.read_text().splitlines()
        print(f.name, len(lines), "lines; first:", lines[:3])
    print("take:", PickLog(folder).take("allreduce", {4 << 20}))
    dist.destroy_process_group()

    out = pathlib.Path(os.environ.get("OUT", "/tmp")) / "picks.jsonl"
    args = [
        "--ranks",
        "1",
        "--backend",
        "nccl",
        "-a",
        "builtin",
        "--nccl-picks",
        "1",
        "--sizes",
        "1M:4M",
        "-w",
        "2",
        "-n",
        "5",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "collsim", "validate", "run", *args, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print("validate rc", done.returncode)
    print(done.stdout[-1500:])
    print(done.stderr[-800:])
    print(
        [json.loads(line).get("nccl_pick", "absent") for line in out.read_text().splitlines()]
        if out.exists()
        else "no json"
    )
    print("log folders left behind:", list(pathlib.Path(tempfile.gettempdir()).glob("collsim-nccl-log-*")))


if __name__ == "__main__":
    main()
