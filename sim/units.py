"""Units as strings: sizes, bandwidths and times.

Sizes: ``B``, ``KB``/``MB``/``GB``/``TB`` (powers of 1000), ``KiB``/``MiB``/``GiB``/``TiB``
(powers of 1024) and nccl-tests' bare ``K``/``M``/``G``/``T`` suffixes (powers of 1024, as
``all_reduce_perf -b 8 -e 128M`` means them). Bandwidths: ``bps``/``Kbps``/``Mbps``/``Gbps``/``Tbps``
(bits per second, powers of 1000) and ``B/s``, ``KB/s``, ``MB/s``, ``GB/s``, ``TB/s`` (bytes, powers of
1000) or ``KiB/s``.. (powers of 1024). Times: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``. A bare number is
bytes, bytes per second or seconds. Every value is returned in base units (bytes, bytes/s, seconds) as a
float.

>>> parse_size("64MiB")
67108864.0
>>> parse_bandwidth("200Mbps")
25000000.0
>>> parse_time("1us")
1e-06
"""

from __future__ import annotations

import math
import numbers
import re

from .errors import ConfigError

__all__ = [
    "MAX_SIZE",
    "check_size",
    "MAX_SWEEP",
    "format_bandwidth",
    "format_size",
    "format_time",
    "parse_bandwidth",
    "parse_bytes",
    "parse_size",
    "parse_size_range",
    "parse_time",
]

#: The largest size collsim accepts: 1 PiB (2**50 B). A thousand times the memory of any one GPU or host,
#: and small enough that every size and byte count stays an exact integer in a float (< 2**53).
MAX_SIZE = 2.0**50
#: The most sizes one sweep may hold (``--sizes 1:1GiB:1.001`` would be 20,000 simulations).
MAX_SWEEP = 10_000

_NUMBER = r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_PATTERN = re.compile(rf"^\s*{_NUMBER}\s*([A-Za-zµ/]*)\s*$")

_SIZE_UNITS = {
    "": 1.0,
    "b": 1.0,
    "byte": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "pb": 1e15,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
    "tib": 2.0**40,
    "pib": 2.0**50,
    "eib": 2.0**60,
    "k": 2.0**10,
    "m": 2.0**20,
    "g": 2.0**30,
    "t": 2.0**40,
}

_BANDWIDTH_UNITS = {
    "": 1.0,
    "b/s": 1.0,
    "bps": 1 / 8,
    "kbps": 1e3 / 8,
    "mbps": 1e6 / 8,
    "gbps": 1e9 / 8,
    "tbps": 1e12 / 8,
    "kbit/s": 1e3 / 8,
    "mbit/s": 1e6 / 8,
    "gbit/s": 1e9 / 8,
    "tbit/s": 1e12 / 8,
    "kb/s": 1e3,
    "mb/s": 1e6,
    "gb/s": 1e9,
    "tb/s": 1e12,
    "kib/s": 2.0**10,
    "mib/s": 2.0**20,
    "gib/s": 2.0**30,
    "tib/s": 2.0**40,
}

_TIME_UNITS = {
    "": 1.0,
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "min": 60.0,
    "h": 3600.0,
}

_BIT_UNITS = {"bps", "kbps", "mbps", "gbps", "tbps"}


def _parse(value: object, table: dict[str, float], what: str, examples: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a number or a string like {examples}, got {value!r}")
    if isinstance(value, (int, float)):
        number, factor = float(value), 1.0
    elif isinstance(value, str):
        match = _PATTERN.match(value)
        if not match:
            raise ConfigError(f"{what}: cannot read {value!r} (expected e.g. {examples})")
        number = float(match.group(1))
        unit = match.group(2)
        key = unit.lower()
        # bits vs bytes: "Mbps" is megabits, "MB/s" megabytes; only the bit units are case-folded
        # safely, a lone lowercase "b" before "/s" means bits ("Mb/s").
        if unit.endswith("b/s") and len(unit) > 3 and unit[-3] == "b" and table is _BANDWIDTH_UNITS:
            key = unit[:-3].lower() + "bit/s"
        if key not in table:
            valid = ", ".join(sorted({k for k in table if k}, key=str.lower))
            raise ConfigError(f"{what}: unknown unit {unit!r} in {value!r} (valid units: {valid})")
        factor = table[key]
    else:
        raise ConfigError(f"{what}: expected a number or a string like {examples}, got {value!r}")
    result = number * factor
    if not math.isfinite(result):
        raise ConfigError(f"{what}: {value!r} is not a finite number")
    return result


def parse_size(value: object, what: str = "size") -> float:
    """Bytes from ``"64MiB"``, ``"1GB"``, ``"128M"`` (nccl-tests style, 1024-based) or a number.

    >>> parse_size("1KiB"), parse_size("1KB"), parse_size("1K"), parse_size(512)
    (1024.0, 1000.0, 1024.0, 512.0)

    Sizes beyond :data:`MAX_SIZE` (1 PiB) are refused:

    >>> parse_size("1EiB", "--size")
    Traceback (most recent call last):
    ...
    sim.errors.ConfigError: --size: '1EiB' is more than 1 PiB (2^50 B), the largest size collsim accepts
    """
    result = _parse(value, _SIZE_UNITS, what, "'64MiB', '1GB', 1024")
    if abs(result) > MAX_SIZE:
        raise ConfigError(f"{what}: {value!r} is more than 1 PiB (2^50 B), the largest size collsim accepts")
    return result


def check_size(value: object, what: str = "size") -> float:
    """A message or buffer size in bytes for a simulation: :func:`parse_size` (units, the 1 PiB bound),
    then > 0. Any real number or size string; errors name ``what`` as their parameter.

    >>> check_size("64KiB"), check_size(3)
    (65536.0, 3.0)
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool | int | float):
        value = float(value)  # numpy scalars and the like
    try:
        size = parse_size(value, what)
    except ConfigError as exc:
        raise ConfigError(str(exc), param=what) from None
    if not size > 0:
        raise ConfigError(f"{what}: must be > 0 bytes, got {value!r}", param=what)
    return size


def parse_bytes(value: object, what: str = "size") -> int:
    """A whole number of bytes > 0 (a message or buffer size): :func:`parse_size`, then checked.

    >>> parse_bytes("64MiB"), parse_bytes(8)
    (67108864, 8)
    """
    return _whole_bytes(parse_size(value, what), what)


def parse_bandwidth(value: object, what: str = "bandwidth") -> float:
    """Bytes per second from ``"100Gbps"`` (bits), ``"25GB/s"`` (bytes) or a number (bytes/s).

    >>> parse_bandwidth("100Gbps") == parse_bandwidth("12.5GB/s")
    True
    """
    return _parse(value, _BANDWIDTH_UNITS, what, "'100Gbps', '25GB/s'")


def parse_time(value: object, what: str = "time") -> float:
    """Seconds from ``"1us"``, ``"2.5ms"``, ``"1s"`` or a number (seconds).

    >>> parse_time("2.5ms")
    0.0025
    """
    return _parse(value, _TIME_UNITS, what, "'1us', '2.5ms'")


def parse_size_range(text: str, what: str = "sizes") -> list[int]:
    """Sizes of a sweep: ``"1KiB:1GiB"`` (powers of two, like ``-b 1K -e 1G -f 2``),
    ``"1KiB:1GiB:4"`` (factor 4), ``"8,1K,64MiB"`` (a list) or one size.

    >>> parse_size_range("1KiB:8KiB")
    [1024, 2048, 4096, 8192]
    """
    if not isinstance(text, str):
        raise ConfigError(f"{what}: expected a string like '1KiB:1GiB' or '8,1K,64MiB', got {text!r}")
    text = text.strip()
    if "," in text:
        parts = [part for part in text.split(",") if part.strip()]
        if len(parts) > MAX_SWEEP:
            raise ConfigError(f"{what}: {len(parts):,} sizes is more than one sweep holds (at most {MAX_SWEEP:,})")
        listed = [_whole_bytes(parse_size(part, what), what) for part in parts]
        if not listed:
            raise ConfigError(f"{what}: no sizes in {text!r}")
        return listed
    parts = text.split(":")
    if len(parts) == 1:
        return [_whole_bytes(parse_size(parts[0], what), what)]
    if len(parts) not in (2, 3):
        raise ConfigError(f"{what}: expected MIN:MAX[:FACTOR], got {text!r}")
    low = _whole_bytes(parse_size(parts[0], what), what)
    high = _whole_bytes(parse_size(parts[1], what), what)
    try:
        factor = float(parts[2]) if len(parts) == 3 else 2.0
    except ValueError:
        raise ConfigError(f"{what}: the factor must be a number > 1, got {parts[2]!r}") from None
    if low <= 0 or high < low:
        raise ConfigError(f"{what}: need 0 < MIN <= MAX, got {text!r}")
    if not (factor > 1 and math.isfinite(factor)):
        raise ConfigError(f"{what}: the factor must be a finite number > 1, got {parts[2]!r}")
    count = math.floor(math.log(high / low) / math.log(factor) + 1e-9) + 1
    if count > MAX_SWEEP:
        raise ConfigError(f"{what}: {text!r} is {count:,} sizes, more than one sweep holds (at most {MAX_SWEEP:,})")
    sizes = []
    size = float(low)
    while size <= high * (1 + 1e-12):
        sizes.append(int(round(size)))
        size *= factor
    return sizes


def _whole_bytes(value: float, what: str) -> int:
    if value <= 0:
        raise ConfigError(f"{what}: must be > 0 bytes, got {value:g}")
    if value != int(value):
        raise ConfigError(f"{what}: must be a whole number of bytes, got {value:g}")
    return int(value)


def format_size(nbytes: float) -> str:
    """A size in the largest binary unit that keeps it >= 1: ``64MiB``, ``1.5KiB``, ``100B``.

    >>> format_size(67108864), format_size(1536), format_size(100)
    ('64MiB', '1.5KiB', '100B')
    """
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= factor:
            return f"{nbytes / factor:.4g}{unit}"
    return f"{nbytes:.4g}B"


def format_bandwidth(bytes_per_s: float) -> str:
    """A bandwidth in bits per second when that reads naturally (``100Gbps``), else bytes.

    >>> format_bandwidth(12.5e9), format_bandwidth(25e6)
    ('100Gbps', '200Mbps')
    """
    bits = bytes_per_s * 8
    for unit, factor in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3)):
        if bits >= factor:
            return f"{bits / factor:.4g}{unit}"
    return f"{bits:.4g}bps"


def format_time(seconds: float) -> str:
    """A time in the unit that keeps it between 1 and 1000.

    >>> format_time(1.5e-6), format_time(0.25)
    ('1.5us', '250ms')
    """
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= factor:
            return f"{seconds / factor:.4g}{unit}"
    return f"{seconds / 1e-9:.4g}ns"
