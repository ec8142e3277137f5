"""NVLS-tree all-reduce: ``nvls-tree`` -- NVLS inside every host, NCCL's double binary tree between
the hosts' heads (one head per GPU, its part halved between the two trees, each half leaving by one of
the GPU's NICs). See :mod:`sim.algorithms.nvls` for the schedule; NCCL's ``NVLSTree``
(``connect.cc:connectNvls``)."""

from __future__ import annotations

from typing import ClassVar

from .nvls import _NvlsBase
from .registry import register

__all__ = ["NvlsTree"]


@register
class NvlsTree(_NvlsBase):
    name = "nvls-tree"
    multi_host: ClassVar[bool] = True
    summary = "NVLS in each host's NVSwitch, a double binary tree between the hosts' heads, pipelined"
