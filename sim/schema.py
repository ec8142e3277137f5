"""Schema types shared by every config surface (topology files, inline specs, algorithm options,
report specs), and the one formatter that turns a pydantic error into a path-qualified line.

>>> from pydantic import BaseModel
>>> class Link(Spec):
...     bandwidth: Bandwidth
>>> try:
...     Link.model_validate({"bandwidth": "-1Gbps"})
... except Exception as exc:
...     print(validation_message(exc, "links[3]"))
links[3].bandwidth: must be > 0, got '-1Gbps'
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .errors import ConfigError
from .units import parse_bandwidth, parse_size, parse_time

__all__ = [
    "MAX_BANDWIDTH",
    "MAX_CHUNKS",
    "MAX_TIME",
    "MIN_BANDWIDTH",
    "check_bandwidth",
    "check_time",
    "Bandwidth",
    "Chunks",
    "NonNegativeTime",
    "PositiveSize",
    "Spec",
    "Time",
    "check_kind",
    "shown_key",
    "validate_spec",
    "validation_message",
]


def _unit(parser):  # type: ignore[no-untyped-def]
    def convert(value: Any) -> Any:
        if value is None:
            return value
        try:
            return parser(value, "value")
        except ConfigError as exc:
            # drop our generic "value: " prefix; pydantic puts the field path in front
            raise ValueError(str(exc).removeprefix("value: ")) from None

    return BeforeValidator(convert)


#: Link bandwidths collsim accepts, bytes/s: from 1 bit/s to 8 Ebit/s. Within them (and sizes up to
#: 1 PiB, times up to MAX_TIME) every simulated time and rate stays a finite float.
MIN_BANDWIDTH = 1 / 8
MAX_BANDWIDTH = 1e18
#: The longest latency, overhead or compute time collsim accepts: a million seconds (11.6 days).
MAX_TIME = 1e6


def check_bandwidth(value: float) -> float:
    """``value`` (bytes/s) if it lies in [MIN_BANDWIDTH, MAX_BANDWIDTH], else ValueError saying so."""
    if not MIN_BANDWIDTH <= value <= MAX_BANDWIDTH:
        raise ValueError(f"must be between 1bps and 8Ebps (0.125 to 1e18 B/s), got {value:g} B/s")
    return value


def check_time(value: float) -> float:
    """``value`` (seconds) if it is at most MAX_TIME, else ValueError saying so."""
    if not value <= MAX_TIME:
        raise ValueError(f"must be at most {MAX_TIME:g} s, got {value:g} s")
    return value


Bandwidth = Annotated[float, _unit(parse_bandwidth), Field(gt=0, allow_inf_nan=False), AfterValidator(check_bandwidth)]
"""Bytes per second; accepts ``"100Gbps"``, ``"25GB/s"`` or a number."""
Time = Annotated[float, _unit(parse_time), Field(ge=0, allow_inf_nan=False), AfterValidator(check_time)]
"""Seconds (>= 0); accepts ``"1us"``, ``"2.5ms"`` or a number."""
NonNegativeTime = Time
PositiveSize = Annotated[float, _unit(parse_size), Field(gt=0, allow_inf_nan=False)]
"""Bytes (> 0); accepts ``"64MiB"``, ``"1GB"`` or a number."""


#: The most pieces an algorithm may cut a buffer into (``tree:chunks=K``): a million messages per rank and
#: step is already far past what any library does; beyond it, lists of chunks alone would fill memory.
MAX_CHUNKS = 1 << 20
Chunks = Annotated[int, Field(gt=0, le=MAX_CHUNKS)]
"""A number of pipeline chunks, 1 .. :data:`MAX_CHUNKS`."""


class Spec(BaseModel):
    """Base of every config model: unknown keys are errors, values are frozen once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


_MESSAGES = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "missing": "required",
    "extra_forbidden": "unknown field",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "finite_number": "must be a finite number",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "literal_error": "must be one of {expected}",
    "too_short": "too few items",
    "too_long": "too many items",
}


#: A key shown as written in an error: a short name of the characters field names use. Any other key
#: (what a file that is not a config file has: a line of /etc/shadow, a long text) is named by its
#: position, never by its content -- collsim runs as root under sudo, and its errors must not print
#: files the user could not read.
_SHOWN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-\[\]]{0,39}")


def shown_key(key: Any, position: int | None = None, *, quote: bool = False) -> str:
    """``key`` as an error names it: as written when it looks like a field name (quoted when it holds
    brackets, which a path would misread), else by its position (1-based) in its mapping.

    >>> shown_key("hots"), shown_key("x[0]"), shown_key("root:*:19000::", 1), shown_key("a b")
    ('hots', "'x[0]'", 'key #1', 'a key')
    """
    if isinstance(key, str) and _SHOWN_KEY.fullmatch(key):
        return repr(key) if quote or "[" in key or "]" in key else key
    return f"key #{position}" if position is not None else "a key"


def _mapping_at(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _extra_key(data: Any, loc: tuple[Any, ...]) -> str:
    """The unknown key at ``loc`` (its last element), shown by :func:`shown_key`."""
    parent = _mapping_at(data, loc[:-1]) if data is not None else None
    position = None
    if isinstance(parent, dict):
        keys = list(parent)
        position = keys.index(loc[-1]) + 1 if loc[-1] in keys else None
    return shown_key(loc[-1], position)


def _path(loc: tuple[Any, ...], prefix: str) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and ("[" in part or part.startswith("function-")):
            continue  # pydantic's union/validator labels are not part of the user's path
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def validation_message(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None, data: Any = None
) -> str:
    """The most telling error of ``exc`` as one line: ``links[3].bandwidth: must be > 0, got -1``.

    An unknown field is reported before a missing one (a typo explains both), with the valid field
    names when ``model`` is given and the field is at its top level.
    """
    errors = exc.errors(include_url=False)
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "value_error":
        text = str(ctx.get("error", err["msg"]))
    elif kind in _MESSAGES:
        try:
            text = _MESSAGES[kind].format(**ctx)
        except (KeyError, IndexError):
            text = err["msg"]
    else:
        text = err["msg"]
    loc = tuple(err["loc"])
    if kind == "extra_forbidden" and loc:
        # the last element is the user's key, whatever it holds (pydantic's own labels come before it)
        where = _path(loc[:-1], prefix)
        key = _extra_key(data, loc)
        where = f"{where}.{key}" if where != "(top level)" else key
    else:
        where = _path(loc, prefix)
    if kind == "extra_forbidden" and model is not None and len(err["loc"]) == 1:
        fields = sorted(model.model_fields, key=lambda k: not model.model_fields[k].is_required())
        text += f" (valid: {', '.join(fields)})"
    if kind in ("missing", "extra_forbidden", "value_error"):
        return f"{where}: {text}"
    shown = err.get("input")
    if isinstance(shown, (dict, list)):
        shown_text = type(shown).__name__
    else:
        shown_text = repr(shown)
        if len(shown_text) > 60:
            shown_text = shown_text[:57] + "..."
    return f"{where}: {text}, got {shown_text}"


def validate_spec(model: type[BaseModel], data: Any, prefix: str = "") -> Any:
    """``model.model_validate(data)``, with errors raised as one-line :class:`ConfigError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, prefix, model, data)) from None


def check_kind(model: type[BaseModel], data: Any, what: str) -> None:
    """Refuse a file's top-level mapping none of whose keys is a field of ``model``: a file of another
    kind (``/etc/shadow`` given as a topology), named by the count of its keys, never their content.

    >>> check_kind(Spec, {"root:*:19000:0": None}, "topology")
    Traceback (most recent call last):
    ...
    sim.errors.ConfigError: not a topology file: no field at the top level (its 1 key is not shown)
    """
    if isinstance(data, dict) and data and not any(_is_field(model, k) for k in data):
        n = len(data)
        fields = ", ".join(sorted(model.model_fields, key=lambda k: not model.model_fields[k].is_required()))
        valid = f"; valid: {fields}" if fields else ""
        raise ConfigError(
            f"not a {what} file: no field at the top level (its {n:,} key{'s are' if n > 1 else ' is'} not shown{valid})"
        )


def _is_field(model: type[BaseModel], key: Any) -> bool:
    if not isinstance(key, str):
        return False
    return key in model.model_fields or any(f.alias == key for f in model.model_fields.values())
