"""The scale benchmark: the targets of the engine issue (16k GPUs, oversubscribed fabrics, congested cases,
every message a flow, the capacity report), measured.

Runs every case in a fresh Python process (so that peak RSS is the case's own), prints a table with wall
time (topology build + simulation), peak RSS, events and flows per second, the simulated time and the
engine path taken, and -- where both paths run -- the speed ratio of the fast path over the message-level
one and the relative difference of their times.

    .venv/bin/python benchmarks/scale.py                 # every case
    .venv/bin/python benchmarks/scale.py --quick         # the small cases only (seconds)
    .venv/bin/python benchmarks/scale.py --case ring-16k # one case
    .venv/bin/python benchmarks/scale.py --json out.jsonl

Benchmarks print; they do not assert wall-clock times (machines are noisy). docs/performance.md holds
the table from one run, the machine, and this command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


@dataclass(frozen=True)
class Case:
    name: str
    topology: str
    algorithm: str
    size: str
    engine: str
    target_s: float | None
    target_mib: float | None
    quick: bool = False
    ranks: int | None = None
    report: str | None = None  # a report spec: the case is `collsim report` on it
    collective: str = "allreduce"


#: ``dgx`` routes by destination by default (InfiniBand's D-mod-K) since 2026-11-27; the cases measured
#: before on its hashed ECMP keep measuring it (``ecmp=hash``), so that their figures in
#: docs/performance.md stay comparable; the ``-ib`` cases are what ``dgx`` now runs by default
HASH = ",ecmp=hash"
DGX16K = "dgx:hosts=2048" + HASH
# 4:1 oversubscribed: 64 hosts x 100 Gb/s below each leaf, 4 spines x 400 Gb/s above it; 256 leaves
LS16K = "leaf-spine:leaves=256,hosts_per_leaf=64,spines=4,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"
LS1K = "leaf-spine:leaves=16,hosts_per_leaf=64,spines=4,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"
ALLREDUCE = (
    "ring",
    "tree",
    "double-binary-tree:chunks=64",
    "recursive-doubling",
    "halving-doubling",
    "hierarchical",
    "master-worker",
)

H100_16K = "hgx:preset=dgx-h100,hosts=2048"
NCCL = (
    ("nccl-h100-16k", "nccl"),
    ("ring16-h100-16k", "ring:channels=16"),
    ("nccl-tree-h100-16k", "nccl-tree"),
    ("nvls-tree-h100-16k", "nvls-tree"),
)

CASES = [
    *(Case(f"{a.split(':')[0]}-16k", DGX16K, a, "1GiB", "auto", 10, 4096) for a in ALLREDUCE),
    # NCCL's schedules on DGX H100 hosts (NVLS-capable NVSwitch, one 400 Gb/s NIC per GPU, rail fabric)
    *(Case(name, H100_16K, a, "1GiB", "auto", 10, 4096) for name, a in NCCL),
    # CollNet (SHARP in the leaf switches): NCCL's schedules through the switches' reduction engines
    *(
        Case(f"{algo}-h100-16k", f"{H100_16K},sharp=true", f"nccl:algo={algo}", "1GiB", "auto", 10, 4096)
        for algo in ("collnet-direct", "collnet-chain")
    ),
    # the same schedules at 256 to 2,048 GPUs: how their cost grows on the way to 16k
    *(
        Case(name.replace("16k", gpus), f"hgx:preset=dgx-h100,hosts={hosts}", a, "1GiB", "auto", None, None)
        for hosts, gpus in ((32, "256"), (64, "512"), (128, "1k"), (256, "2k"))
        for name, a in NCCL
    ),
    # S = hosts, on hashed ECMP (Ethernet-like) and on the fabric routed as InfiniBand routes a fat-tree
    # (-ib: D-mod-K, by destination host; `dgx`'s default), where no two hosts' flows meet on a spine by chance
    *(
        case
        for tag, routed in (("", HASH), ("-ib", ",ecmp=destination"))
        for case in (
            Case(f"ps-colocated-16k{tag}", "dgx:hosts=2048" + routed, "ps:shards=2048", "1GiB", "auto", 30, None),
            Case(
                f"ps-dedicated-16k{tag}",
                "dgx:hosts=4096" + routed,
                "ps:shards=2048,placement=dedicated",
                "1GiB",
                "auto",
                30,
                None,
                ranks=16384,
            ),
        )
    ),
    # all-gather and reduce-scatter (FSDP / ZeRO): the ring in rank order, one step repeated p - 1 times
    *(
        Case(f"ring-{tag}-{gpus}", f"dgx:hosts={hosts}{HASH}", "ring", "1GiB", "auto", target, None, collective=coll)
        for tag, coll in (("ag", "allgather"), ("rs", "reducescatter"))
        for hosts, gpus, target in ((128, "1k", None), (512, "4k", None), (2048, "16k", 10))
    ),
    # ... and in rail order (ring:order=rail, NCCL's rail-aligned ring): contention-free, the max-plus path
    *(
        Case(f"ring-rail-{tag}-16k", DGX16K, "ring:order=rail", "1GiB", "auto", 10, None, collective=coll)
        for tag, coll in (("ag", "allgather"), ("rs", "reducescatter"))
    ),
    # NCCL's rings for all-gather on DGX H100 hosts: the pick (Ring/Simple, 16 channels) and the 16 rings
    *(
        Case(
            f"{name}-ag-h100-{gpus}",
            f"hgx:preset=dgx-h100,hosts={hosts}",
            a,
            "1GiB",
            "auto",
            None,
            None,
            collective="allgather",
        )
        for name, a in (("nccl", "nccl"), ("ring16", "ring:channels=16"))
        for hosts, gpus in ((16, "128"), (64, "512"), (256, "2k"))
    ),
    Case("ps-colocated-1k", "dgx:hosts=128" + HASH, "ps:shards=128", "1GiB", "auto", None, None),
    # one shard per rank routed by destination (the 70B report's ps): p(p - 1) pushes and as many pulls,
    # 33.5 M flows at 4k GPUs, 537 M at 16k
    *(
        Case(f"ps-rank-{k}k-ib", f"dgx:hosts={128 * k},ecmp=destination", "ps", "25MiB", "auto", None, None)
        for k in (4, 8, 16)
    ),
    # the scaling curve between (S = hosts): from 2k GPUs the leaves above the servers are full and
    # the pushes split into (server, spine) classes
    *(
        Case(f"ps-colocated-{k}k", f"dgx:hosts={128 * k}{HASH}", f"ps:shards={128 * k}", "1GiB", "auto", None, None)
        for k in (2, 4, 8)
    ),
    Case("ring-ls4to1-16k", LS16K, "ring", "1GiB", "auto", 60, None),
    Case("hd-ls4to1-16k", LS16K, "halving-doubling", "1GiB", "auto", 60, None),
    Case(
        "ring-rank-256-message", "dgx:hosts=32" + HASH, "ring:order=rank", "256MiB", "message", None, None, quick=True
    ),
    Case("ring-rank-256-fast", "dgx:hosts=32" + HASH, "ring:order=rank", "256MiB", "fast", None, None, quick=True),
    Case("hd-ls1k-message", LS1K, "halving-doubling", "256MiB", "message", None, None),
    Case("hd-ls1k-fast", LS1K, "halving-doubling", "256MiB", "fast", None, None),
    Case("ring-1k-message", "dgx:hosts=128" + HASH, "ring", "1GiB", "message", 10, None),
    # the congested ring at message level (ranks in rank order: every host's last GPU sends across the hashed
    # fabric), every message a flow: 523 k / 2.1 M flows drained at nearly as many distinct instants
    Case("ring-rank-512-message", "dgx:hosts=64" + HASH, "ring:order=rank", "1GiB", "message", None, None),
    Case("ring-rank-1k-message", "dgx:hosts=128" + HASH, "ring:order=rank", "1GiB", "message", 10, None),
    Case("ring-1k-fast", "dgx:hosts=128" + HASH, "ring", "1GiB", "fast", None, None, quick=True),
    Case("hd-1k-message", "dgx:hosts=128" + HASH, "halving-doubling", "1GiB", "message", 10, None),
    Case("tree-1k-message", "dgx:hosts=128" + HASH, "tree", "1GiB", "message", 10, None),
    # every message a flow at 1,024 GPUs: the other all-reduce algorithms
    *(
        Case(f"{name}-1k-message", "dgx:hosts=128" + HASH, a, "1GiB", "message", 10, None)
        for name, a in (
            ("rd", "recursive-doubling"),
            ("mw", "master-worker"),
            ("hierarchical", "hierarchical"),
            ("dbt64", "double-binary-tree:chunks=64"),
            ("ps128", "ps:shards=128"),
        )
    ),
    # the parameter server with one shard per rank (``ps``'s default, the 70B report's) on ``dgx``'s default
    # fabric (routed by destination): p(p - 1) pushes and as many pulls, 2.1 M flows
    Case("ps-rank-1k-message", "dgx:hosts=128", "ps", "1GiB", "message", 10, None),
    # every message a flow at 1,024 GPUs: NCCL's schedules (issue 13's algorithms: channel endpoints, NVSwitch
    # engines, caps and lags) on DGX H100
    *(
        Case(f"{name}-1k-message", "hgx:preset=dgx-h100,hosts=128", name, "1GiB", "message", 10, None)
        for name in ("nccl", "nccl-tree", "nvls-tree")
    ),
    Case("tree-1k-fast", "dgx:hosts=128" + HASH, "tree", "1GiB", "fast", None, None),
    Case("dbt64-512-message", "dgx:hosts=64" + HASH, "double-binary-tree:chunks=64", "1GiB", "message", None, None),
    Case("dbt64-512-fast", "dgx:hosts=64" + HASH, "double-binary-tree:chunks=64", "1GiB", "fast", None, None),
    Case("tree8-ls1k-message", LS1K, "tree:chunks=8", "256MiB", "message", None, None),
    Case("tree8-ls1k-fast", LS1K, "tree:chunks=8", "256MiB", "fast", None, None),
    Case("hierarchical-1m", "dgx:hosts=131072" + HASH, "hierarchical", "1GiB", "auto", 60, 8192),
    Case("report-7b", "", "", "", "", 60, None, report="benchmarks/specs/llm-7b-dgx.yaml"),
    Case("report-7b-ib", "", "", "", "", 60, None, report="benchmarks/specs/llm-7b-dgx-ib.yaml"),
    Case("report-7b-concurrent", "", "", "", "", None, None, report="benchmarks/specs/llm-7b-dgx-concurrent.yaml"),
    Case("report-7b-serial", "", "", "", "", 60, None, report="benchmarks/specs/llm-7b-dgx-serial.yaml"),
    Case("report-7b-serial-nops", "", "", "", "", 60, None, report="benchmarks/specs/llm-7b-dgx-serial-nops.yaml"),
    Case("report-70b", "", "", "", "", 300, None, report="benchmarks/specs/llm-70b-dgx.yaml"),
    Case("report-70b-ib", "", "", "", "", 300, None, report="benchmarks/specs/llm-70b-dgx-ib.yaml"),
    Case("report-70b-rh", "", "", "", "", 300, None, report="benchmarks/specs/llm-70b-dgx-ring-hierarchical.yaml"),
    Case(
        "report-70b-rh-1",
        "",
        "",
        "",
        "",
        300,
        None,
        report="benchmarks/specs/llm-70b-dgx-ring-hierarchical-serial.yaml",
    ),
    # NCCL's rings for all-gather / reduce-scatter at 16k GPUs (the pick on DGX H100: Ring/Simple, 16
    # channels), reduced by the fabric's translation by a leaf group (sim/symmetry.py)
    *(
        Case(f"nccl-{tag}-h100-16k", H100_16K, "nccl", "1GiB", "auto", 10, 4096, collective=coll)
        for tag, coll in (("ag", "allgather"), ("rs", "reducescatter"))
    ),
    *(
        Case(f"ring16-{tag}-h100-16k", H100_16K, "ring:channels=16", "1GiB", "auto", 10, 4096, collective=coll)
        for tag, coll in (("ag", "allgather"), ("rs", "reducescatter"))
    ),
]

#: (fast, message-level): the congested cases whose ratio the issue asks for (>= 10x, equal to 1e-9)
PAIRS = [
    ("ring-rank-256-fast", "ring-rank-256-message"),
    ("hd-ls1k-fast", "hd-ls1k-message"),
    ("ring-1k-fast", "ring-1k-message"),
    ("tree-1k-fast", "tree-1k-message"),
    ("dbt64-512-fast", "dbt64-512-message"),
    ("tree8-ls1k-fast", "tree8-ls1k-message"),
]


def run_case(case: Case) -> dict[str, object]:
    """Run one case in this process and return its record."""
    if case.report:
        return run_report(case)
    from sim.cluster import Cluster
    from sim.simulate import simulate

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    cluster = Cluster(case.topology)
    built = time.perf_counter() - t0
    r = simulate(cluster, case.collective, case.algorithm, case.size, engine=case.engine, ranks=case.ranks)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0  # what the case cost on a loaded machine, other processes aside
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
    return {
        "case": case.name,
        "what": f"{case.collective} {case.algorithm} {case.size} on `{case.topology}`",
        "gpus": r.ranks,
        "algorithm": r.algorithm,
        "engine": r.engine,
        "build_s": built,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_MiB": peak,
        "events": r.events,
        "flows": r.flows,
        "events_per_s": r.events / wall,
        "flows_per_s": r.flows / wall,
        "time_s": r.time_s,
        "busbw_GBps": r.busbw_GBps,
        "target_s": case.target_s,
        "target_MiB": case.target_mib,
    }


def run_report(case: Case) -> dict[str, object]:
    """``collsim report`` on the case's spec, as a user runs it (local workers on every core)."""
    import tempfile

    root = os.path.join(os.path.dirname(__file__), "..")
    command = os.path.join(os.path.dirname(sys.executable), "collsim")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        args = [command, "report", os.path.join(root, case.report or ""), "-o", out, "--no-progress", "--fresh"]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError((done.stderr.strip().splitlines() or ["report failed"])[-1])
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    import yaml

    from reports.spec import parse_gpu_sizes

    with open(os.path.join(root, case.report or "")) as f:
        sizes = parse_gpu_sizes(yaml.safe_load(f)["cluster"]["sizes"])
    return {
        "case": case.name,
        "what": f"`collsim report {case.report}`",
        "gpus": f"{sizes[0]:,}..{sizes[-1]:,}",
        "engine": "report",
        "build_s": 0.0,
        "wall_s": wall,
        "peak_MiB": peak,
        "events": 0,
        "flows": 0,
        "events_per_s": 0.0,
        "flows_per_s": 0.0,
        "time_s": float("nan"),
        "target_s": case.target_s,
        "target_MiB": case.target_mib,
    }


def spawn(case: Case, timeout: float) -> dict[str, object]:
    """Run ``case`` in a fresh interpreter; a case past ``timeout`` is reported, not waited for."""
    cmd = [sys.executable, __file__, "--child", case.name]
    # its own process group: a case stopped at the timeout takes what it started with it (a report's
    # `collsim report` and that one's workers), not only the interpreter that timed it
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"case": case.name, "error": f"did not finish in {timeout:.0f} s"}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode != 0:
        return {"case": case.name, "error": (stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, object]]) -> str:
    head = (
        "| case | GPUs | engine | wall s (build) | target s | peak MiB | target MiB | events/s | flows/s | simulated time |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | | | {r['error']} | | | | | | |")
            continue
        target = "" if r["target_s"] is None else f"<= {r['target_s']:g}"
        mem = "" if r["target_MiB"] is None else f"<= {r['target_MiB']:g}"
        gpus = r["gpus"] if isinstance(r["gpus"], str) else f"{r['gpus']:,}"
        simulated = "" if r["time_s"] != r["time_s"] else f"{r['time_s'] * 1e3:.4f} ms"
        cpu = f", cpu {r['cpu_s']:.2f}" if "cpu_s" in r else ""
        lines.append(
            f"| {r['case']} | {gpus} | {r['engine']} | {r['wall_s']:.2f} ({r['build_s']:.2f}{cpu}) | {target} | "
            f"{r['peak_MiB']:.0f} | {mem} | {r['events_per_s']:,.0f} | {r['flows_per_s']:,.0f} | {simulated} |"
        )
    by = {r["case"]: r for r in rows if "error" not in r}
    for fast, slow in PAIRS:
        if fast in by and slow in by:
            a, b = by[fast], by[slow]
            diff = abs(a["time_s"] - b["time_s"]) / b["time_s"]
            cpu = f", {b['cpu_s'] / a['cpu_s']:.1f}x by CPU time" if "cpu_s" in a and "cpu_s" in b else ""
            lines.append(
                f"\n{fast} vs {slow}: {b['wall_s'] / a['wall_s']:.1f}x faster{cpu}, times differ by {diff:.2e} (relative)"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="run only these cases (repeatable)")
    parser.add_argument("--quick", action="store_true", help="only the quick cases")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    parser.add_argument("--json", help="also write one JSON line per case to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = {c.name: c for c in CASES}
    unknown = [n for n in [args.child, *(args.case or [])] if n and n not in cases]
    if unknown:
        parser.exit(2, f"scale.py: unknown case {unknown[0]!r} (cases: {', '.join(cases)})\n")
    if args.child:
        print(json.dumps(run_case(cases[args.child])))
        return
    chosen = [cases[n] for n in args.case] if args.case else [c for c in CASES if c.quick or not args.quick]
    print(f"# machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}", flush=True)
    rows = []
    for case in chosen:
        row = spawn(case, args.timeout)
        rows.append(row)
        print(f"# {case.name}: {json.dumps(row)}", flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
