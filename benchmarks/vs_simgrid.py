"""collsim against SimGrid: the same flows and the same collectives through an independent max-min
engine, printing the speed ratio and the difference of the simulated times in one run.

SimGrid is optional and not part of ``make test``. Its Python module comes with Debian's
``python3-simgrid`` (``apt-get install python3-simgrid``; this script also looks in
``/usr/lib/python3/dist-packages``) or ``pip install simgrid`` (builds from source: cmake, Boost, a
C++ compiler, tens of minutes). Without it the script says so and exits 0.

Two kinds of case:

* ``flows-SEED``: random congested flow sets -- a few hundred flows between random hosts of an
  oversubscribed leaf-spine, started at random instants, many sharing few uplinks; every flow's
  completion time is compared;
* collectives: an algorithm's step program (:mod:`sim.program`) run by one SimGrid actor per rank with
  collsim's step semantics (post the step's sends, wait until they have left and the step's receives
  have arrived, then the next step; messages eager), against ``sim.simulate`` (its fast path).

SimGrid is configured as a plain fluid max-min model so that both engines mean the same thing:
``network/model:CM02`` with latency and bandwidth factors 1, no TCP window bound, no cross-traffic,
``weight-S`` 0 and every route's links latency-free (CM02 weighs a flow's share by its route latency
otherwise). A message's start delay (path latency + sender overhead, collsim's message model) is paid
by a helper actor that sleeps before it puts the message; receivers are permanent (eager messages).

    .venv/bin/python benchmarks/vs_simgrid.py                  # every case
    .venv/bin/python benchmarks/vs_simgrid.py --case flows-0   # one case

Each case runs in a fresh process (SimGrid's engine is one per process).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

CASES: dict[str, tuple[str, str, str, str]] = {
    # name: (topology, algorithm, size, what)
    "ring-rank-64": (
        "dgx:hosts=8,ecmp=hash",
        "ring:order=rank",
        "64MiB",
        "ring in rank order across DGX rails, hashed (congested)",
    ),
    "hd-leafspine-64": (
        "leaf-spine:leaves=4,hosts_per_leaf=16,spines=1,bandwidth=100Gbps,uplink_bandwidth=200Gbps,latency=1us",
        "halving-doubling",
        "64MiB",
        "halving-doubling, 64 hosts, 8:1 oversubscribed uplinks",
    ),
    "ring-rank-256": (
        "dgx:hosts=32,ecmp=hash",
        "ring:order=rank",
        "64MiB",
        "ring in rank order across DGX rails, hashed (congested)",
    ),
    "hd-leafspine-256": (
        "leaf-spine:leaves=8,hosts_per_leaf=32,spines=2,bandwidth=100Gbps,uplink_bandwidth=200Gbps,latency=1us",
        "halving-doubling",
        "64MiB",
        "halving-doubling, 256 hosts, 8:1 oversubscribed uplinks",
    ),
    "hd-leafspine-1k": (
        "leaf-spine:leaves=16,hosts_per_leaf=64,spines=2,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us",
        "halving-doubling",
        "16MiB",
        "halving-doubling, 1,024 hosts, 8:1 oversubscribed uplinks",
    ),
    "ring-leafspine-1k": (
        "leaf-spine:leaves=16,hosts_per_leaf=64,spines=4,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us",
        "ring:order=rank",
        "16MiB",
        "rank-order ring, 1,024 hosts, 4:1 oversubscribed",
    ),
}
FLOW_SEEDS = (0, 1, 2)


def import_simgrid() -> Any:
    try:
        import simgrid
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        try:
            import simgrid
        except ImportError:
            return None
    return simgrid


CONFIG = (
    "network/model:CM02",
    "network/latency-factor:1",
    "network/bandwidth-factor:1",
    "network/weight-S:0",
    "network/TCP-gamma:0",
    "network/crosstraffic:0",
    "maxmin/precision:1e-12",
    "surf/precision:1e-15",
    "network/optim:Full",
)


class SimGridFabric:
    """A SimGrid platform mirroring a collsim cluster: a host per rank, a simplex link per link
    direction (collsim's capacity, no latency), a route per rank pair asked for."""

    def __init__(self, sg: Any, cluster: Any) -> None:
        self.sg = sg
        self.cluster = cluster
        self.engine = sg.Engine(["collsim", *(f"--cfg={c}" for c in CONFIG), "--log=root.thres:critical"])
        self.zone = sg.NetZone.create_full_zone("fabric")
        self.hosts = [self.zone.create_host(f"r{r}", 1e9) for r in range(cluster.size)]
        self.links: dict[int, Any] = {}
        self.routes: set[tuple[int, int]] = set()

    def link(self, arc: int) -> Any:
        link = self.links.get(arc)
        if link is None:
            link = self.zone.create_link(f"a{arc}", float(self.cluster.capacity[arc]))
            link.set_latency(0.0)
            self.links[arc] = link
        return link

    def route(self, src: int, dst: int) -> tuple[float, float]:
        """Declare the route src -> dst; returns (start delay, wire bytes per byte: 1 under the nominal
        model)."""
        cl = self.cluster
        pid = cl.path_id(src, dst)
        if (src, dst) not in self.routes:
            paths = cl.paths
            start, length = int(paths.start[pid]), int(paths.length[pid])
            arcs = paths.arcs[start : start + length].tolist()
            direction = self.sg.LinkInRoute.Direction.NONE
            links = [self.sg.LinkInRoute(self.link(a), direction) for a in arcs]
            self.zone.add_route(self.hosts[src].netpoint, self.hosts[dst].netpoint, None, None, links, False)
            self.routes.add((src, dst))
        return pid

    def seal(self) -> None:
        self.zone.seal()


def run_flows_simgrid(sg: Any, cluster: Any, flows: list[tuple[int, int, float, float]]) -> list[float]:
    fab = SimGridFabric(sg, cluster)
    model = cluster.message_model
    plan = []
    for src, dst, size, start in flows:
        pid = fab.route(src, dst)
        delay, wire = model.one(pid, src, size)
        plan.append((src, dst, wire, start + delay))
    fab.seal()
    ends = [0.0] * len(flows)

    def receiver(r: int, sources: list[int]) -> None:
        sg.Actor.self().daemonize()
        for src in sources:  # permanent receiver: messages flow as soon as they are sent (eager)
            sg.Mailbox.by_name(f"{src}>{r}").set_receiver(sg.Actor.self())
        sg.this_actor.sleep_for(1e9)

    def receiver_setup() -> None:
        incoming: dict[int, set[int]] = {}
        for src, dst, *_ in plan:
            incoming.setdefault(dst, set()).add(src)
        for r, sources in incoming.items():
            sg.Actor.create(f"recv{r}", fab.hosts[r], receiver, r, sorted(sources))
        for i, (src, dst, wire, at) in enumerate(plan):
            sg.Actor.create(f"f{i}", fab.hosts[src], flow, i, src, dst, wire, at)

    def flow(i: int, src: int, dst: int, wire: float, at: float) -> None:
        sg.this_actor.sleep_until(at)
        sg.Mailbox.by_name(f"{src}>{dst}").put(i, int(wire))  # SimGrid counts whole bytes: sizes here are whole
        ends[i] = sg.Engine.clock

    sg.Actor.create("setup", fab.hosts[0], receiver_setup)
    fab.engine.run()
    return ends


def run_flows_collsim(cluster: Any, flows: list[tuple[int, int, float, float]]) -> list[float]:
    import simpy

    from sim.network import Network

    env = simpy.Environment()
    net = Network(env, cluster)
    ends = [0.0] * len(flows)

    def one(i: int, src: int, dst: int, size: float, start: float) -> Any:
        yield env.timeout(start)
        yield net.send(src, dst, size)
        ends[i] = env.now

    for i, f in enumerate(flows):
        env.process(one(i, *f))
    env.run()
    return ends


def flow_case(seed: int) -> tuple[Any, list[tuple[int, int, float, float]]]:
    from sim.cluster import Cluster

    cluster = Cluster(
        "leaf-spine:leaves=4,hosts_per_leaf=16,spines=2,bandwidth=100Gbps,uplink_bandwidth=100Gbps,latency=1us"
    )
    rng = random.Random(seed)
    flows = []
    for _ in range(400):
        src, dst = rng.sample(range(cluster.size), 2)
        flows.append(
            (src, dst, float(int(rng.choice([2**16, 2**20, 2**22]) * rng.uniform(0.5, 2))), rng.uniform(0, 2e-3))
        )
    return cluster, flows


def run_program_simgrid(sg: Any, cluster: Any, program: Any) -> float:
    fab = SimGridFabric(sg, cluster)
    model = cluster.message_model
    e = program.endpoints
    pairs = {}
    for step, _ in program.phases:
        for s, d in zip(step.src.tolist(), step.dst.tolist(), strict=True):
            if (s, d) not in pairs:
                pairs[(s, d)] = fab.route(s, d)
    fab.seal()
    finish = [0.0] * e

    def put_later(box: Any, wire: float, delay: float) -> None:
        sg.this_actor.sleep_for(delay)
        box.put(None, int(wire))

    def rank(r: int) -> None:
        host = fab.hosts[r]
        for step, times in program.phases:
            sends = step.sends_of(r).tolist()
            recvs = step.recvs_of(r).tolist()
            if not sends and not recvs:
                continue
            for _ in range(times):
                helpers = []
                for m in sends:
                    d = int(step.dst[m])
                    delay, wire = model.one(pairs[(r, d)], r, float(step.nbytes[m]))
                    box = sg.Mailbox.by_name(f"{r}>{d}")
                    helpers.append(sg.Actor.create(f"m{r}>{d}", host, put_later, box, wire, delay))
                gets = [sg.Mailbox.by_name(f"{int(step.src[m])}>{r}").get_async() for m in recvs]
                for comm, data in gets:  # keep the data future alive until the comm is done
                    comm.wait()
                    data.get()
                for h in helpers:
                    h.join()
        finish[r] = sg.Engine.clock

    def setup() -> None:
        receivers: dict[int, Any] = {}
        for r in range(e):
            receivers[r] = sg.Actor.create(f"rank{r}", fab.hosts[r], rank, r)
        for s, d in pairs:  # permanent receivers: messages flow as soon as they are sent (eager)
            sg.Mailbox.by_name(f"{s}>{d}").set_receiver(receivers[d])

    sg.Actor.create("setup", fab.hosts[0], setup)
    fab.engine.run()
    return max(finish)


def child(name: str) -> dict[str, Any]:
    sg = import_simgrid()
    from sim.cluster import Cluster
    from sim.simulate import simulate

    if name.startswith("flows-"):
        cluster, flows = flow_case(int(name.split("-")[1]))
        t0 = time.perf_counter()
        ours = run_flows_collsim(cluster, flows)
        t1 = time.perf_counter()
        theirs = run_flows_simgrid(sg, cluster, flows)
        t2 = time.perf_counter()
        diff = max(abs(a - b) / b for a, b in zip(ours, theirs, strict=True))
        return {
            "case": name,
            "what": f"{len(flows)} random flows, leaf-spine 64 hosts",
            "collsim_s": t1 - t0,
            "simgrid_s": t2 - t1,
            "time_s": max(ours),
            "simgrid_time_s": max(theirs),
            "max_rel_diff": diff,
        }
    topology, algorithm, size, what = CASES[name]
    from sim.algorithms import get_algorithm
    from sim.units import parse_size

    cluster = Cluster(topology)
    nbytes = parse_size(size)
    t0 = time.perf_counter()
    ours = simulate(cluster, "allreduce", algorithm, nbytes)
    t1 = time.perf_counter()
    program = get_algorithm("allreduce", algorithm).program(cluster.size, nbytes, cluster)
    theirs = run_program_simgrid(sg, cluster, program)
    t2 = time.perf_counter()
    return {
        "case": name,
        "what": what,
        "engine": ours.engine,
        "collsim_s": t1 - t0,
        "simgrid_s": t2 - t1,
        "time_s": ours.time_s,
        "simgrid_time_s": theirs,
        "max_rel_diff": abs(ours.time_s - theirs) / theirs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="run only these cases (repeatable)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    sg = import_simgrid()
    if sg is None:
        print(
            "vs_simgrid: SimGrid's Python module is not installed (apt-get install python3-simgrid, or pip install simgrid)",
            file=sys.stderr,
        )
        return 2
    print(f"# SimGrid {sg.simgrid_version if isinstance(sg.simgrid_version, str) else sg.simgrid_version}")
    names = args.case or [f"flows-{s}" for s in FLOW_SEEDS] + list(CASES)
    print("| case | what | collsim engine | collsim s | SimGrid s | speed-up | simulated time | relative difference |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        cmd = [sys.executable, __file__, "--child", name]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"| {name} | did not finish in {args.timeout:.0f} s | | | | | | |", flush=True)
            continue
        if out.returncode != 0:
            print(f"| {name} | failed: {(out.stderr.strip().splitlines() or ['?'])[-1]} | | | | | | |", flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {name} | {r['what']} | {r.get('engine', 'network')} | {r['collsim_s']:.2f} | {r['simgrid_s']:.2f} | "
            f"{r['simgrid_s'] / r['collsim_s']:.1f}x | {r['time_s'] * 1e3:.6f} ms | {r['max_rel_diff']:.1e} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
