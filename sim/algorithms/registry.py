"""The front door to the algorithms: ``get_algorithm("allreduce", "tree:chunks=8")``.

Registration refuses a duplicate name; an unknown name gets an error that lists the valid ones.
"""

from __future__ import annotations

from typing import Any

from ..collectives import get_collective
from ..errors import AlgorithmError, ConfigError
from ..schema import validate_spec
from .base import Algorithm

__all__ = ["algorithm_names", "get_algorithm", "parse_algorithm_spec", "register"]

_REGISTRY: dict[tuple[str, str], type[Algorithm]] = {}


def register(cls: type[Algorithm]) -> type[Algorithm]:
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


def parse_algorithm_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"ps:shards=4,placement=dedicated"`` -> ``("ps", {"shards": "4", "placement": "dedicated"})``."""
    name, _, rest = spec.strip().partition(":")
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise AlgorithmError(f"algorithm {spec!r}: expected key=value options, got {item!r}")
        if key.strip() in options:
            raise AlgorithmError(f"algorithm {spec!r}: option {key.strip()!r} is given twice")
        options[key.strip()] = value.strip()
    return name.strip(), options


def get_algorithm(collective: str, spec: str | Algorithm, **options: Any) -> Algorithm:
    """An algorithm instance for ``collective`` from a spec string (or an instance, returned as is)."""
    if isinstance(spec, Algorithm):
        return spec
    coll = get_collective(collective).name
    name, parsed = parse_algorithm_spec(spec)
    cls = _REGISTRY.get((coll, name))
    if cls is None:
        valid = ", ".join(algorithm_names(coll)) or "none"
        raise AlgorithmError(f"unknown {coll} algorithm {name!r} (valid: {valid})")
    parsed.update(options)
    try:
        checked = validate_spec(cls.Options, parsed, f"algorithm {name}")
    except ConfigError as exc:
        raise AlgorithmError(str(exc)) from None
    return cls(checked)
