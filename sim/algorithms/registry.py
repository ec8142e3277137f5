"""The front door to the algorithms: ``get_algorithm("allreduce", "tree:chunks=8")``.

Registration refuses a duplicate name; an unknown name gets an error that lists the valid ones. The
same :class:`Registry` serves the real implementations in ``validate`` (under the same names).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from ..collectives import get_collective
from ..errors import AlgorithmError, ConfigError
from ..schema import validate_spec
from .base import Algorithm

__all__ = [
    "Registry",
    "algorithm_names",
    "default_algorithm",
    "get_algorithm",
    "parse_algorithm_spec",
    "register",
    "split_algorithm_specs",
]

T = TypeVar("T")


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


def split_algorithm_specs(text: str) -> list[str]:
    """``"ring,ps:shards=2,placement=dedicated,tree"`` -> ``["ring", "ps:shards=2,placement=dedicated",
    "tree"]``: a ``key=value`` item without a name belongs to the algorithm before it."""
    specs: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if "=" in item and ":" not in item and specs:
            specs[-1] += "," + item
        else:
            specs.append(item)
    return specs


class Registry(Generic[T]):
    """Algorithm classes keyed by (collective, name); each class has ``collective``, ``name`` and an
    ``Options`` schema, and is built from its validated options.

    Parameters
    ----------
    what : str
        How errors name these algorithms ("" for the simulator's, "for real runs" for validate's).
    """

    def __init__(self, what: str = "") -> None:
        self.what = f" {what}" if what else ""
        self.classes: dict[tuple[str, str], type[T]] = {}
        #: per collective, names that :meth:`names` lists before all others (see :meth:`list_first`)
        self.first: dict[str, tuple[str, ...]] = {}

    def register(self, cls: type[T]) -> type[T]:
        """Class decorator: register ``cls`` under (``cls.collective``, ``cls.name``)."""
        key = (get_collective(cls.collective).name, cls.name)  # type: ignore[attr-defined]
        if key in self.classes:
            raise ValueError(f"{key[0]} algorithm {key[1]!r} is already registered by {self.classes[key].__module__}")
        self.classes[key] = cls
        return cls

    def list_first(self, collective: str, *names: str) -> None:
        """List ``names`` (those registered) before the other algorithms of ``collective``, in this
        order. For an order that the order of registration cannot give: a module registers all its
        collectives at once, so module A may have to come before module B for one collective and
        after it for another."""
        self.first[get_collective(collective).name] = names

    def names(self, collective: str) -> list[str]:
        """Names registered for ``collective``, in registration order (but those given to
        :meth:`list_first` first): the order listings, ``collsim compare`` and reports show."""
        coll = get_collective(collective).name
        registered = [name for (c, name) in self.classes if c == coll]
        first = [name for name in self.first.get(coll, ()) if name in registered]
        return first + [name for name in registered if name not in first]

    def build(self, collective: str, spec: str, **options: Any) -> T:
        """An instance from a spec string such as ``ps:shards=2`` (options validated by its schema)."""
        coll = get_collective(collective).name
        name, parsed = parse_algorithm_spec(spec)
        cls = self.classes.get((coll, name))
        if cls is None:
            valid = ", ".join(self.names(coll)) or "none"
            raise AlgorithmError(f"unknown {coll} algorithm {name!r}{self.what} (valid: {valid})")
        parsed.update(options)
        try:
            checked = validate_spec(cls.Options, parsed, f"algorithm {name}")  # type: ignore[attr-defined]
        except ConfigError as exc:
            raise AlgorithmError(str(exc)) from None
        return cls(checked)  # type: ignore[call-arg]


REGISTRY: Registry[Algorithm] = Registry()
_REGISTRY = REGISTRY.classes  # the (collective, name) -> class mapping, for tests and tools


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator: register a simulator algorithm."""
    return REGISTRY.register(cls)


def algorithm_names(collective: str) -> list[str]:
    """Names registered for ``collective``, in listing order (:meth:`Registry.names`)."""
    return REGISTRY.names(collective)


def default_algorithm(collective: str) -> str:
    """The algorithm a collective runs when none is named: ``ring`` where the collective has one (what
    NCCL runs for all-reduce, broadcast, reduce, all-gather and reduce-scatter), else its first
    registered one (``flat`` for gather and scatter, ``pairwise`` for all-to-all, ``direct`` for
    send/recv).

    >>> default_algorithm("allreduce"), default_algorithm("broadcast"), default_algorithm("gather")
    ('ring', 'ring', 'flat')
    """
    names = REGISTRY.names(collective)
    if not names:
        raise AlgorithmError(f"no algorithm is registered for {get_collective(collective).name}")
    return "ring" if "ring" in names else names[0]


def get_algorithm(collective: str, spec: str | Algorithm, **options: Any) -> Algorithm:
    """An algorithm instance for ``collective`` from a spec string (or an instance, returned as is)."""
    if isinstance(spec, Algorithm):
        return spec
    return REGISTRY.build(collective, spec, **options)
