"""CollNet Direct all-reduce (NCCL's ``CollNetDirect``): ``collnet-direct`` -- in every host the GPUs that
own a NIC are *heads*, each of 1/H of the buffer; the switches reduce between the hosts (SHARP).

NCCL's kernel (``device/all_reduce.h``, ``RunWorkColl<..., NCCL_ALGO_COLLNET_DIRECT, ...>``) runs per
chunk of every head, on every channel:

1. *scatter*: every GPU sends head q's part of its buffer to head q (``prims.scatter`` to
   ``direct->up``), over NVLink;
2. *reduce*: head q adds the parts its node's GPUs sent to its own and sends the sum to the network
   (``recvReduceDirectSend`` to ``direct->out``, the CollNet root): its NIC's leaf switch sums the hosts'
   parts (SHARP; a spine sums the leaves where the hosts sit under several) and sends the total back;
3. *broadcast*: head q sends the total to every other GPU of its node (``directRecvCopyDirectSend``) --
   each GPU *gathers* the H parts.

Heads are the GPUs with a local NIC, at most 8, one NIC each (``connect.cc``: ``connectCollNet``;
``search.cc``: the CollNet Direct search takes one NIC per head GPU); a head's messages leave by its
first NIC. Modelled as a step program pipelined over slices of ``NCCL_STEPS`` chunks per head, with the
chunk NCCL picks for the size (:func:`~sim.nccl.protocols.collnet_chunk`) and at least 4 slices a head
(as NVLS: :func:`~sim.algorithms.nvls.head_slices`). The switches' reductions cost nothing.

Closed form with one GPU per host, every host's path to its SHARP switch (α, β), k slices (up and down
overlap: k + 1 steps of a slice each)::

    T = (k + 1)·(α + (n/k)·β)

With G GPUs a host two more steps come on (the scatter and the broadcast, each moving (H-1)/H of a
slice over a GPU's NVLink): stated as a bound, not exact.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from ..errors import AlgorithmError
from ..nccl import tuner
from ..nccl.layout import (
    channel_endpoints,
    host_ranks,
    lags_down,
    lags_up,
    nics_of,
    run_program,
    sharp_fabric,
    sharp_forest,
)
from ..nccl.pipeline import Streams, launchers
from ..nccl.protocols import collnet_chunk
from ..program import StepProgram
from ..runtime import Job
from .base import Algorithm
from .nvls import head_slices
from .registry import register

__all__ = ["CollnetDirect", "collnet_check", "collnet_direct_program", "collnet_heads", "collnet_time"]


def collnet_heads(cluster: Any, groups: list[list[int]]) -> list[int]:
    """Local indices of a host's CollNet Direct heads: its GPUs that own a NIC, at most 8
    (``COLLNET_MAX_LOCAL``), the same on every host (the first host's)."""
    return [i for i, r in enumerate(groups[0]) if nics_of(cluster, r)][: tuner.COLLNET_MAX_LOCAL]


def collnet_check(cluster: Any, p: int, name: str) -> tuner.System:
    """Refuse, in one line, where NCCL would not run CollNet algorithm ``name`` (:func:`tuner.disabled`:
    one host, switches that do not reduce, more than 8 GPUs a host; Direct without an NVSwitch) or
    where a NIC's switches do not all reduce; returns what the tuner sees."""
    groups = host_ranks(cluster, p)
    sys = tuner.describe(cluster, p)
    why = tuner.disabled(sys, tuner.search(sys), name)
    if why is None:
        owners = [[r for r in grp if nics_of(cluster, r)] for grp in groups]
        if not all(owners):
            why = "needs a NIC in every host"
        elif not sharp_fabric(cluster, owners):
            why = "needs switches that reduce (SHARP: hgx:...,sharp=true)"
    if why is not None:
        raise AlgorithmError(f"{name} {why}; {cluster.name} with {p} ranks cannot run it")
    return sys


def collnet_direct_program(
    cluster: Any, p: int, nbytes: float, launch_s: float = 0.0, slots: int = 1
) -> tuple[StepProgram, int]:
    """CollNet Direct as a step program (see the module docstring), and its data-check segments; ``slots``:
    slices in flight per connection (:meth:`~sim.nccl.pipeline.Streams.program`)."""
    sys = collnet_check(cluster, p, "collnet-direct")
    groups = host_ranks(cluster, p)
    h, g = len(groups), len(groups[0])
    local = collnet_heads(cluster, groups)
    nh = len(local)
    channels = tuner.search(sys)["collnet-direct"].runtime_channels
    chunk = collnet_chunk(nbytes, channels, nh, 2 if g > 1 else 1, chain=False)
    k = head_slices(nbytes / nh, chunk)
    part_b = nbytes / k / nh
    ends = channel_endpoints(cluster, [grp[i] for grp in groups for i in local], ("collnet-direct",), 0)
    heads = [ends[host * nh : (host + 1) * nh] for host in range(h)]  # heads[host][q]
    ranks = [r for grp in groups for r in grp]
    starts = launchers(cluster, ranks + ends, launch_s) if launch_s > 0 else []
    forests = [  # built before the streams: the switches' endpoints are endpoints too
        sharp_forest(
            cluster,
            [grp[local[q]] for grp in groups],
            [heads[host][q] for host in range(h)],
            0,
            q,
            ("sharp", "collnet-direct", q),
        )
        for q in range(nh)
    ]
    s = Streams(cluster.endpoints, k)
    final = np.zeros((nh, h), dtype=np.int64)  # step at which head q of a host holds the total
    for q in range(nh):
        # scatter: every other GPU of a host sends head q its part (lag 0)
        src = [grp[i] for grp in groups for i in range(g) if i != local[q]]
        dst = [heads[host][q] for host in range(h) for i in range(g) if i != local[q]]
        s.add(src, dst, part_b, lag=0, reduce=True, off=q, scale=nh)
        nodes, parent = forests[q]
        up, done = lags_up(parent, 1)
        down = lags_down(parent, np.full(len(nodes), done, dtype=np.int64))
        final[q] = down[:h]
        kids = [v for v in range(len(nodes)) if parent[v] >= 0]
        src = [nodes[v] for v in kids]
        dst = [nodes[parent[v]] for v in kids]
        s.add(src, dst, part_b, lag=up[kids], reduce=True, off=q, scale=nh)
        s.add(dst, src, part_b, lag=down[kids], reduce=False, off=q, scale=nh)
        # broadcast: head q sends the total to the host's other GPUs
        src = [heads[host][q] for host in range(h) for i in range(g) if i != local[q]]
        dst = [groups[host][i] for host in range(h) for i in range(g) if i != local[q]]
        lag = [int(final[q][host]) + 1 for host in range(h) for i in range(g) if i != local[q]]
        s.add(src, dst, part_b, lag=lag, reduce=False, off=q, scale=nh)
    return s.program(starts, cluster=cluster, slots=slots), k * nh


class _CollnetBase(Algorithm):
    collective = "allreduce"
    star_oracle: ClassVar[bool] = False  # needs switches that reduce: tests/test_collnet.py holds its oracle

    def check(self, p: int, cluster: Any) -> None:
        collnet_check(cluster, p, self.name)

    def closed_form_exact(self, p: int) -> bool:
        return False

    def _program(self, cluster: Any, p: int, nbytes: float) -> tuple[StepProgram, int]:
        return collnet_direct_program(cluster, p, nbytes)

    def _star_slices(self, n: float) -> int:
        """The slices of ``n`` bytes on hosts of one Hopper GPU and one NIC (NCCL's chunks for
        :data:`STAR_CHANNELS` channels): CollNet Direct's one head."""
        return head_slices(n, collnet_chunk(n, STAR_CHANNELS, 1, 1, chain=False))

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        return self._program(cluster, p, nbytes)[0]

    def run(self, job: Job) -> Generator[Any, Any, None]:
        program, segments = self._program(job.net.cluster, job.p, job.nbytes)
        yield from run_program(job, program, segments)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        """Hosts of one GPU and one NIC, one SHARP switch: k + 1 steps of a slice, up and down
        overlapping (the module docstrings)."""
        return collnet_time(self._star_slices(n), n, alpha, beta)


#: NCCL's channels on hosts of one Hopper GPU and one NIC: the search's channel duplicated
#: (``search.cc``: ncclTopoDupChannels), and again at run time (``connect.cc``: ncclTopoPostset)
STAR_CHANNELS = 4


def collnet_time(k: int, n: float, alpha: float, beta: float) -> float:
    """The closed form: ``k`` slices up to the switch and back, one step each way overlapping."""
    return (k + 1) * (alpha + (n / k) * beta)


@register
class CollnetDirect(_CollnetBase):
    name = "collnet-direct"
    summary = (
        "CollNet Direct (SHARP): every GPU sends each head its part, the heads' switches reduce between "
        "hosts, each head sends the total back to its host's GPUs"
    )
