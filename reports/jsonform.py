"""The JSON form of a report's frozen records: a flat mapping of field name to value, in field order.

Values are written as they are (an ``int`` stays an ``int``), so a record read back from its JSON form
equals the record it was written from, and writes the same JSON again. Reading is strict: a mapping
with a missing or an unknown key is not a record (a cache line that does not fit is recomputed rather
than guessed at).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Pair(JsonForm):
...     left: int
...     right: float | None = None
>>> Pair(1, 2.5).to_dict()
{'left': 1, 'right': 2.5}
>>> Pair.from_dict({"left": 1, "right": None}) == Pair(1)
True
>>> Pair.from_dict({"left": 1})
Traceback (most recent call last):
...
ValueError: not a Pair: missing right
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Self, TypeVar

__all__ = ["JsonForm", "build"]

T = TypeVar("T")


def build(cls: type[T], data: Any, **nested: Any) -> T:
    """An instance of the dataclass ``cls`` from ``data``, which must name exactly its fields.

    Parameters
    ----------
    cls : type
        A dataclass.
    data : Mapping
        Field name -> value, as :meth:`JsonForm.to_dict` writes it.
    **nested
        Values that replace those of ``data`` (fields whose JSON form is not the value itself: a
        tuple of records written as a list of mappings).

    Raises
    ------
    ValueError
        ``data`` is not a mapping, lacks a field, or has a key that is not a field.
    """
    name = ("an " if cls.__name__[0] in "AEIOU" else "a ") + cls.__name__
    if not isinstance(data, Mapping):
        raise ValueError(f"not {name}: {type(data).__name__}, not a mapping")
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    missing = [n for n in names if n not in data]
    unknown = [k for k in data if k not in names]
    if missing or unknown:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(map(str, unknown))}"] if unknown else []
        )
        raise ValueError(f"not {name}: {'; '.join(parts)}")
    try:
        return cls(**{**data, **nested})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not {name}: {exc}") from None


class JsonForm:
    """``to_dict`` / ``from_dict`` for a flat frozen dataclass (every field a JSON value)."""

    def to_dict(self) -> dict[str, Any]:
        """Field name -> value, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The record whose :meth:`to_dict` is ``data``; :class:`ValueError` when ``data`` is not one."""
        return build(cls, data)
