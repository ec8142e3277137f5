"""Algorithms, one module per algorithm name, each holding that algorithm for every collective it serves
(its SimPy process, closed form and step program), registered on import (see
:mod:`sim.algorithms.registry`). Helpers several of them use live in :mod:`sim.algorithms.common`.

Listings show a collective's algorithms in the order they were registered, so the order of the imports
below is the order of every listing: ``flat`` before ``binomial`` (broadcast, gather, scatter), both
before ``ring`` (broadcast, reduce), ``ring`` before all other all-reduce algorithms (it heads that
listing); NCCL's schedules come last, ``nccl`` (the tuner's pick among them) after the ones it picks
from. One order cannot come from the imports: the all-gather lists ``recursive-doubling``
before ``ring``, which the all-reduce lists after it, so it is pinned with
:meth:`~sim.algorithms.registry.Registry.list_first`.
"""

from __future__ import annotations

# isort: off
from . import (  # noqa: F401  (registers, in this order)
    flat,
    binomial,
    ring,
    tree,
    double_binary_tree,
    recursive_doubling,
    halving_doubling,
    hierarchical,
    master_worker,
    ps,
    pairwise,
    direct,
    nccl_tree,
    nvls,
    nvls_tree,
    collnet_direct,
    collnet_chain,
    nccl,
)

# isort: on
from .base import Algorithm, NoOptions
from .registry import (
    REGISTRY,
    algorithm_names,
    default_algorithm,
    get_algorithm,
    parse_algorithm_spec,
    register,
    split_algorithm_specs,
)

REGISTRY.list_first("allgather", "recursive-doubling", "ring")

__all__ = [
    "Algorithm",
    "NoOptions",
    "algorithm_names",
    "default_algorithm",
    "get_algorithm",
    "parse_algorithm_spec",
    "register",
    "split_algorithm_specs",
]
