"""Every message a flow at 1,024 GPUs (`dgx:hosts=128`, 1 GiB all-reduce, engine="message"): CPU seconds and
the exact results per algorithm, one fresh process per case.

    PYTHONPATH=. .venv/bin/python benchmarks/message_1k.py                  # every case
    PYTHONPATH=. .venv/bin/python benchmarks/message_1k.py ring ps:shards=128
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

ALGORITHMS = (
    "ring",
    "tree",
    "recursive-doubling",
    "halving-doubling",
    "master-worker",
    "hierarchical",
    "double-binary-tree:chunks=64",
    "ps:shards=128",
)
TOPOLOGY = "dgx:hosts=128"


def child(algorithm: str, topology: str) -> dict[str, object]:
    from sim.cluster import Cluster
    from sim.simulate import simulate

    cluster = Cluster(topology)
    cpu0 = time.process_time()
    r = simulate(cluster, "allreduce", algorithm, "1GiB", engine="message")
    cpu = time.process_time() - cpu0
    return {
        "algorithm": algorithm,
        "engine": r.engine,
        "cpu_s": round(cpu, 3),
        "time_s": repr(r.time_s),
        "flows": r.flows,
        "events": r.events,
        "link_bytes": repr(r.link_bytes),
        "max_sent": repr(r.max_sent_bytes),
        "busiest": r.busiest_link,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
        return
    topology = os.environ.get("TOPOLOGY", TOPOLOGY)
    for algorithm in sys.argv[1:] or ALGORITHMS:
        out = subprocess.run(
            [sys.executable, __file__, "--child", algorithm, topology], capture_output=True, text=True, check=False
        )
        print(out.stdout.strip() or out.stderr.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
