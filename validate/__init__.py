"""Real runs of the simulator's algorithms with torch.distributed (gloo on CPUs, NCCL on GPUs).

This package imports torch; :mod:`sim` never does.
"""

from __future__ import annotations
