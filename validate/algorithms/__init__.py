"""The real algorithms, one module per algorithm name (as in ``sim/algorithms/``), each holding that
algorithm for every collective it serves, registered on import under the simulator's names (see
:mod:`validate.algorithms.registry`). Schedule pieces several of them use live in
:mod:`validate.algorithms.common`.

Listings show a collective's algorithms in the order they were registered, so the order of
``_MODULES`` is the order of every listing: ``binomial`` before ``ring`` (broadcast, reduce), ``ring``
before all other all-reduce algorithms (the default heads that listing), ``ring`` before ``flat``
(broadcast), ``builtin`` last. One order cannot come from the modules: gather and scatter list ``flat``
before ``binomial-tree``, which the broadcast lists after it, so it is pinned with
:meth:`~sim.algorithms.registry.Registry.list_first`.
"""

from __future__ import annotations

import importlib

from .base import RealAlgorithm, Task
from .registry import REGISTRY, algorithm_names, get_algorithm, register

__all__ = ["RealAlgorithm", "Task", "algorithm_names", "get_algorithm", "register"]

#: imported (and so registered) in this order, which is the order listings show
_MODULES = (
    "binomial",
    "ring",
    "tree",
    "double_binary_tree",
    "master_worker",
    "ps",
    "halving_doubling",
    "recursive_doubling",
    "hierarchical",
    "flat",
    "pairwise",
    "direct",
    "builtin",
)
for _module in _MODULES:
    importlib.import_module(f"{__name__}.{_module}")
for _collective in ("gather", "scatter"):
    REGISTRY.list_first(_collective, "flat", "binomial-tree")
