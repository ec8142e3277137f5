"""Helpers for the report tests: a tiny spec, and two test-only all-reduce algorithms registered for the
duration of a test (a flat fan-in that beats ring on small messages, and a variant that needs a spare
host, as a dedicated parameter server does)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sim.algorithms import Algorithm
from sim.algorithms.registry import _REGISTRY, register
from sim.errors import AlgorithmError
from sim.topology import hosts_of

TINY: dict[str, Any] = {
    "name": "tiny",
    "job": {"name": "toy", "gradient_bytes": "8MiB", "compute_time": "10ms", "samples_per_gpu": 16},
    "cluster": {"builder": "star", "params": {"bandwidth": "100Gbps", "latency": "1us"}, "sizes": [2, 4]},
    "algorithms": ["ring"],
    "sweep": {"message_sizes": "4KiB:1MiB:4"},
}


def tiny_spec(**changes: Any) -> dict[str, Any]:
    """A deep copy of :data:`TINY` with top-level keys replaced."""
    spec = copy.deepcopy(TINY)
    spec.update(changes)
    return spec


class FlatAllReduce(Algorithm):
    """Every worker sends its buffer to rank 0, which reduces and sends the sum back: 2 messages of
    latency, 2(p-1) buffers through rank 0's link."""

    name = "test-flat"
    collective = "allreduce"
    summary = "test only: fan-in to rank 0 and fan-out"

    def segments(self, p: int) -> int:
        return 1

    def run(self, job: Any) -> Any:
        p = job.p
        if p == 1:
            return

        def worker(r: int) -> Any:
            job.send(r, 0, job.nbytes, job.data.take(r, 0), tag=0)
            got = yield job.recv(r, 0, tag=1)
            job.data.put(r, 0, got)

        def master() -> Any:
            for r in range(1, p):
                got = yield job.recv(0, r, tag=0)
                yield from job.combine(0, 0, got, job.nbytes)
            yield job.env.all_of([job.send(0, r, job.nbytes, job.data.take(0, 0), tag=1) for r in range(1, p)])

        procs = [job.env.process(master())] + [job.env.process(worker(r)) for r in range(1, p)]
        yield job.env.all_of(procs)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 2 * alpha + 2 * (p - 1) * n * beta + (p - 1) * n * gamma


class SpareHostAllReduce(FlatAllReduce):
    """The flat all-reduce, refusing to run unless the cluster has a host beyond the workers' hosts."""

    name = "test-spare"

    def spare_hosts(self, p: int) -> int:
        return 1

    def check(self, p: int, cluster: Any) -> None:
        used = {cluster.host_of(r) for r in range(p)}
        if len(hosts_of(cluster.graph)) <= len(used):
            raise AlgorithmError(f"test-spare needs a spare host for its server beyond the {p} workers")


@contextmanager
def extra_algorithms() -> Iterator[None]:
    """Register the test-only algorithms for the duration of a ``with`` block."""
    classes = (FlatAllReduce, SpareHostAllReduce)
    for cls in classes:
        register(cls)
    try:
        yield
    finally:
        for cls in classes:
            _REGISTRY.pop((cls.collective, cls.name), None)
