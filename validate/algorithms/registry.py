"""The front door to the real algorithms: ``get_algorithm("allreduce", "tree:chunks=8")``.

Keys are the simulator's (collective, name) pairs, plus ``builtin`` (the library's own collective) for
every collective; the registry is the simulator's :class:`~sim.algorithms.registry.Registry`, so it
refuses duplicates and lists the valid names the same way.
"""

from __future__ import annotations

from sim.algorithms.registry import Registry

from .base import RealAlgorithm

__all__ = ["algorithm_names", "get_algorithm", "register"]

REGISTRY: Registry[RealAlgorithm] = Registry("for real runs")
_REGISTRY = REGISTRY.classes


def register(cls: type[RealAlgorithm]) -> type[RealAlgorithm]:
    """Class decorator: register a real algorithm under (``cls.collective``, ``cls.name``)."""
    return REGISTRY.register(cls)


def algorithm_names(collective: str) -> list[str]:
    """Names registered for ``collective``, in listing order (:meth:`~sim.algorithms.registry.Registry.names`)."""
    return REGISTRY.names(collective)


def get_algorithm(collective: str, spec: str | RealAlgorithm) -> RealAlgorithm:
    """A real algorithm for ``collective`` from a spec such as ``ps:shards=2``."""
    if isinstance(spec, RealAlgorithm):
        return spec
    return REGISTRY.build(collective, spec)
