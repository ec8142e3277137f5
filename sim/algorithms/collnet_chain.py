"""CollNet Chain all-reduce (NCCL's ``CollNetChain``): ``collnet-chain`` -- per channel a chain through
each host's GPUs, its head on the channel's NIC, as NCCL's tree; between the hosts the switches reduce
(SHARP) in place of the double binary tree.

NCCL's kernel (``device/all_reduce.h``, ``RunWorkColl<..., NCCL_ALGO_COLLNET_CHAIN, ...>``) splits a
channel's threads in two: one half reduces up the chain (``directRecvReduceDirectSend`` from
``collnetChain.down`` to ``collnetChain.up``), the head sending the node's sum to the network (the
CollNet root), whose switches sum the hosts'; the other half broadcasts the total from the network
down the chain. The chains are the CollNet Chain graph's (``connect.cc``: ``ncclTopoPreset``, a chain
through the node's GPUs from the channel's NIC GPU), as many as the ring's channels: laid out as
:mod:`~sim.algorithms.nccl_tree` lays out its channels (two per NIC, channel c on rail c mod R), every
head under its NIC's leaf switch and the leaves under a spine (:func:`~sim.nccl.layout.sharp_forest`).
Slices are ``NCCL_STEPS`` chunks of the CollNet Chain chunk (:func:`~sim.nccl.protocols.collnet_chunk`).

Closed form with one GPU per host under one SHARP switch (two channels on its NIC, each cut into k
slices; both share the host's link)::

    T = (k + 1)·(α + (n/k)·β)

With G GPUs a chain is G - 1 NVLink hops deeper each way: T ~ (2G + k - 1)·(α + (n/(K·k))·β) for K
channels, stated as a bound.
"""

from __future__ import annotations

from typing import Any

from ..nccl.layout import slices
from ..nccl.protocols import collnet_chunk
from ..program import StepProgram
from .collnet_direct import STAR_CHANNELS, _CollnetBase
from .nccl_tree import tree_program
from .registry import register

__all__ = ["CollnetChain"]


@register
class CollnetChain(_CollnetBase):
    name = "collnet-chain"
    summary = "CollNet Chain (SHARP): per channel a chain through each host's GPUs, the switches reduce between hosts"

    def _program(self, cluster: Any, p: int, nbytes: float) -> tuple[StepProgram, int]:
        return tree_program(cluster, p, nbytes, 0, "simple", sharp=True)

    def _star_slices(self, n: float) -> int:
        """One of the two channels on a host's one NIC (as :func:`tree_program` lays them out), in NCCL's
        CollNet Chain chunks for :data:`STAR_CHANNELS` channels."""
        return slices(n / 2, collnet_chunk(n, STAR_CHANNELS, 1, 1, chain=True))
