"""Algorithms, one module each, registered on import (see :mod:`sim.algorithms.registry`)."""

from __future__ import annotations

from . import ring  # noqa: F401  (registered first: the default heads every listing of names)

# isort: split
from . import (  # noqa: F401  (registers)
    binomial,
    double_binary_tree,
    flat,
    halving_doubling,
    hierarchical,
    master_worker,
    nccl,
    nccl_tree,
    nvls,
    nvls_tree,
    pairwise,
    ps,
    recursive_doubling,
    ring_collectives,
    tree,
)
from .base import Algorithm, NoOptions
from .registry import algorithm_names, get_algorithm, parse_algorithm_spec, register

__all__ = ["Algorithm", "NoOptions", "algorithm_names", "get_algorithm", "parse_algorithm_spec", "register"]
