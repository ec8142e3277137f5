"""Where does this machine's CPU, not the shaped link, become netlab's bottleneck?

Two measurements on a star whose links are all shaped to RATE (tbf), for several rates:

* flows: N concurrent TCP transfers between disjoint host pairs, each end its own process (as ranks
  are); reports the aggregate goodput over N x RATE (a perfect link gives 1448/1514 = 0.956);
* ranks: gloo all_reduce among P ranks (one per host, ``python -m`` this file as the runner) launched
  by netlab's own launcher; reports busbw over RATE (nccl-tests' busbw = algbw x 2(P-1)/P).

Each row also gives the share of all CPUs that was busy during the measurement (from /proc/stat: the
whole machine, other users included). A fraction well below ~0.9 with the CPU near 100% busy means
the CPU is the bottleneck. Needs root, ``ip`` and ``tc``. Run from the repository root:

    .venv/bin/python benchmarks/netlab_cpu.py                      # everything (a few minutes)
    .venv/bin/python benchmarks/netlab_cpu.py --rates 200Mbps,1Gbps --flows 1,4 --ranks 2,4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PORT = 5201
CHUNK = 1 << 20


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def busy_since(start: tuple[float, float]) -> float:
    busy, total = cpu_times()
    return (busy - start[0]) / max(1.0, total - start[1])


def background(seconds: float = 1.0) -> float:
    """The share of all CPUs busy while this benchmark does nothing (other users' load)."""
    start = cpu_times()
    time.sleep(seconds)
    return busy_since(start)


# -- flows ------------------------------------------------------------------------------------


def _receiver(ns: str, addr: str, nbytes: int, ready, done) -> None:  # type: ignore[no-untyped-def]
    from netlab.netns import enter

    enter(ns)
    with socket.socket() as lis:
        lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lis.bind((addr, PORT))
        lis.listen(1)
        ready.set()
        conn, _ = lis.accept()
        with conn:
            buf, got = bytearray(CHUNK), 0
            while got < nbytes:
                n = conn.recv_into(buf)
                if not n:
                    break
                got += n
            conn.sendall(b"k")
            done.put(got)


def _sender(ns: str, addr: str, nbytes: int, start, out) -> None:  # type: ignore[no-untyped-def]
    from netlab.netns import enter

    enter(ns)
    zeros = memoryview(bytes(CHUNK))
    with socket.create_connection((addr, PORT), timeout=120) as sock:
        start.wait()
        t0 = time.monotonic()
        left = nbytes
        while left:
            n = min(left, CHUNK)
            sock.sendall(zeros[:n])
            left -= n
        sock.recv(1)
        out.put((t0, time.monotonic()))


def flows_once(plan, n_flows: int, nbytes: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Aggregate goodput (bytes/s) of n_flows concurrent transfers, and the CPU busy share."""
    ctx = mp.get_context("fork")
    start, out, done = ctx.Barrier(n_flows), ctx.Queue(), ctx.Queue()
    procs = []
    for i in range(n_flows):
        src, dst = plan.hosts[2 * i], plan.hosts[2 * i + 1]
        ready = ctx.Event()
        procs.append(ctx.Process(target=_receiver, args=(dst.ns, dst.address, nbytes, ready, done)))
        procs[-1].start()
        ready.wait(10)
        procs.append(ctx.Process(target=_sender, args=(src.ns, dst.address, nbytes, start, out)))
    cpu0 = cpu_times()
    for p in procs[1::2]:
        p.start()
    spans = [out.get(timeout=300) for _ in range(n_flows)]
    busy = busy_since(cpu0)
    for p in procs:
        p.join(10)
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    return n_flows * nbytes / (last - first), busy


# -- ranks ------------------------------------------------------------------------------------


def worker(argv: list[str]) -> int:
    """One rank (started by netlab's launcher): time all_reduce of --size bytes, rank 0 writes JSON."""
    import torch
    import torch.distributed as dist

    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--json", required=True)
    parser.add_argument("--topology")
    opts = parser.parse_args(argv)
    dist.init_process_group("gloo", init_method="env://")
    rank, p = dist.get_rank(), dist.get_world_size()
    tensor = torch.ones(opts.size // 4)
    dist.all_reduce(tensor)  # warm-up: connections, buffers
    times = []
    for _ in range(opts.iters):
        dist.barrier()
        cpu0 = cpu_times()
        t0 = time.perf_counter()
        dist.all_reduce(tensor)
        times.append((time.perf_counter() - t0, busy_since(cpu0)))
    dist.destroy_process_group()
    if rank == 0:
        t, busy = sorted(times)[len(times) // 2]
        with open(opts.json, "a") as fh:
            fh.write(
                json.dumps(
                    {"p": p, "size": opts.size, "time_s": t, "busbw": opts.size / t * 2 * (p - 1) / p, "busy": busy}
                )
                + "\n"
            )
    return 0


def ranks_once(plan, p: int, rate: float, iters: int) -> dict:  # type: ignore[no-untyped-def]
    from netlab import launch, rank_commands

    size = int(rate * 0.5 / (2 * (p - 1) / p)) // 4 * 4  # about 0.5 s on the wire
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.jsonl"
        sub = plan.__class__(**{**plan.__dict__, "hosts": plan.hosts[:p]})
        args = ["--worker", "--size", str(size), "--iters", str(iters)]
        res = launch(
            rank_commands(sub, args, json_path=out, module="benchmarks.netlab_cpu"), json_path=out, timeout=300
        )
        if res.failed or not out.exists():
            raise RuntimeError(f"ranks failed: {res.codes} (logs {res.log_dir})")
        return json.loads(out.read_text().splitlines()[-1])


# -- main -------------------------------------------------------------------------------------


def main() -> int:
    from netlab import down, up
    from sim.units import parse_bandwidth, parse_size

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="200Mbps,500Mbps,1Gbps,2Gbps")
    parser.add_argument("--flows", default="1,2,4,8")
    parser.add_argument("--ranks", default="2,4,8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prefix", default="bn")
    parser.add_argument(
        "--bursts", default="auto", help="tbf buckets to compare, e.g. 24KiB,auto (auto: netlab's default)"
    )
    opts = parser.parse_args()
    rates = [parse_bandwidth(r, "--rates") for r in opts.rates.split(",")]
    flows = [int(n) for n in opts.flows.split(",") if n]
    ranks = [int(n) for n in opts.ranks.split(",") if n]
    hosts = max([2 * n for n in flows] + ranks + [2])
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; medians of {opts.repeats}")
    bursts = [None if b == "auto" else int(parse_size(b, "--bursts")) for b in opts.bursts.split(",")]
    print(
        f"{'burst':>8} {'rate':>10} {'what':>8} {'n':>3} {'aggregate':>12} {'fraction':>9} {'cpu busy':>9} {'idle-time busy':>14}"
    )
    for burst, rate in [(b, r) for r in rates for b in bursts]:
        plan, _ = up(f"star:hosts={hosts},bandwidth={rate}", prefix=opts.prefix, burst=burst, rate_check=False)
        tag = f"{plan.links[0].a.egress.burst // 1024}KiB"
        try:
            for n in flows:
                bg = background()
                runs = [flows_once(plan, n, int(rate)) for _ in range(opts.repeats)]
                agg = statistics.median(r[0] for r in runs)
                busy = statistics.median(r[1] for r in runs)
                print(
                    f"{tag:>8} {rate * 8 / 1e6:>6.0f}Mb/s {'flows':>8} {n:>3} {agg * 8 / 1e6:>8.1f}Mb/s {agg / (n * rate):>9.3f} {busy:>9.0%} {bg:>14.0%}",
                    flush=True,
                )
            for p in ranks:
                bg = background()
                r = ranks_once(plan, p, rate, opts.repeats)
                print(
                    f"{tag:>8} {rate * 8 / 1e6:>6.0f}Mb/s {'gloo-ar':>8} {p:>3} {r['busbw'] * 8 / 1e6:>8.1f}Mb/s {r['busbw'] / rate:>9.3f} {r['busy']:>9.0%} {bg:>14.0%}",
                    flush=True,
                )
        finally:
            down(opts.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1:]) if "--worker" in sys.argv else main())
