"""Algorithms, one module each, registered on import (see :mod:`sim.algorithms.registry`)."""

from __future__ import annotations

from . import ring  # noqa: F401  (registers)
from .base import Algorithm, NoOptions
from .registry import algorithm_names, get_algorithm, parse_algorithm_spec, register

__all__ = ["Algorithm", "NoOptions", "algorithm_names", "get_algorithm", "parse_algorithm_spec", "register"]
