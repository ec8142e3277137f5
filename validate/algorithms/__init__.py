"""The real algorithms, one module each, registered on import under the simulator's names
(see :mod:`validate.algorithms.registry`)."""

from __future__ import annotations

import importlib

from .base import RealAlgorithm, Task
from .registry import algorithm_names, get_algorithm, register

__all__ = ["RealAlgorithm", "Task", "algorithm_names", "get_algorithm", "register"]

#: imported (and so registered) in this order, which is the order listings show
_MODULES = (
    "ring",
    "tree",
    "double_binary_tree",
    "master_worker",
    "ps",
    "halving_doubling",
    "recursive_doubling",
    "hierarchical",
    "rooted",
    "gathering",
    "builtin",
)
for _module in _MODULES:
    importlib.import_module(f"{__name__}.{_module}")
