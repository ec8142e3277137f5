"""The front door to the real algorithms: ``get_algorithm("allreduce", "tree:chunks=8")``.

Keys are the simulator's (collective, name) pairs, plus ``builtin`` (the library's own collective) for
every collective. Registration refuses a duplicate; an unknown name gets an error listing the valid ones.
"""

from __future__ import annotations

from sim.algorithms.registry import parse_algorithm_spec
from sim.collectives import get_collective
from sim.errors import AlgorithmError, ConfigError
from sim.schema import validate_spec

from .base import RealAlgorithm

__all__ = ["algorithm_names", "get_algorithm", "register"]

_REGISTRY: dict[tuple[str, str], type[RealAlgorithm]] = {}


def register(cls: type[RealAlgorithm]) -> type[RealAlgorithm]:
    """Class decorator: register ``cls`` under (``cls.collective``, ``cls.name``)."""
    key = (get_collective(cls.collective).name, cls.name)
    if key in _REGISTRY:
        raise ValueError(f"{key[0]} algorithm {cls.name!r} is already registered by {_REGISTRY[key].__module__}")
    _REGISTRY[key] = cls
    return cls


def algorithm_names(collective: str) -> list[str]:
    """Names registered for ``collective``, in registration order."""
    coll = get_collective(collective).name
    return [name for (c, name) in _REGISTRY if c == coll]


def get_algorithm(collective: str, spec: str | RealAlgorithm) -> RealAlgorithm:
    """A real algorithm for ``collective`` from a spec such as ``ps:shards=2``."""
    if isinstance(spec, RealAlgorithm):
        return spec
    coll = get_collective(collective).name
    name, options = parse_algorithm_spec(spec)
    cls = _REGISTRY.get((coll, name))
    if cls is None:
        valid = ", ".join(algorithm_names(coll)) or "none"
        raise AlgorithmError(f"unknown {coll} algorithm {name!r} for real runs (valid: {valid})")
    try:
        checked = validate_spec(cls.Options, options, f"algorithm {name}")
    except ConfigError as exc:
        raise AlgorithmError(str(exc)) from None
    return cls(checked)
