"""Every name netlab gives a namespace, bridge or veth: a validated short prefix plus an index.

Names are never derived from topology node names (those may be long or hostile, and interface names are
limited to 15 characters); the mapping from topology names to these names lives in the lab's plan and its
state file. A name belongs to prefix ``P`` only when it matches one of the exact patterns below, so
``down`` for ``cs`` never touches ``cs2-h0`` or ``csx``.

>>> host_ns("cs", 3), switch_ns("cs", 0), bridge_name("cs", 0), veth_name("cs", 12, "a")
('cs-h3', 'cs-s0', 'cs-br0', 'cs-l12a')
>>> owns_netns("cs", "cs-h3"), owns_netns("cs", "cs2-h3"), owns_link("cs", "cs-l12b"), owns_link("cs", "eth0")
(True, False, True, False)
"""

from __future__ import annotations

import re

from sim.errors import ConfigError

__all__ = [
    "DEFAULT_PREFIX",
    "MAX_INDEX",
    "PREFIX_PATTERN",
    "bridge_name",
    "check_prefix",
    "host_ns",
    "owns_link",
    "owns_netns",
    "switch_ns",
    "veth_name",
]

DEFAULT_PREFIX = "cs"
#: A lower-case letter, then up to five lower-case letters or digits: short enough that the longest
#: name, ``PREFIX-lNNNNNb``, stays within the kernel's 15-character limit for interface names.
PREFIX_PATTERN = re.compile(r"[a-z][a-z0-9]{0,5}")
#: The largest index a name may carry (so that every name fits in 15 characters).
MAX_INDEX = 99_999


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is a valid netlab prefix, else raise :class:`ConfigError`.

    >>> check_prefix("lab1")
    'lab1'
    >>> check_prefix("My-Lab")
    Traceback (most recent call last):
    ...
    sim.errors.ConfigError: --prefix: 'My-Lab' is not a valid netlab prefix (1 to 6 characters: a lower-case letter, then lower-case letters or digits)
    """
    if not isinstance(prefix, str) or not PREFIX_PATTERN.fullmatch(prefix):
        raise ConfigError(
            f"--prefix: {prefix!r} is not a valid netlab prefix "
            "(1 to 6 characters: a lower-case letter, then lower-case letters or digits)"
        )
    return prefix


def _index(index: int) -> int:
    if not 0 <= index <= MAX_INDEX:
        raise ConfigError(f"netlab name index {index} is out of range 0..{MAX_INDEX}")
    return index


def host_ns(prefix: str, index: int) -> str:
    """The network namespace of host ``index``."""
    return f"{check_prefix(prefix)}-h{_index(index)}"


def switch_ns(prefix: str, index: int) -> str:
    """The network namespace that holds switch ``index``'s bridge."""
    return f"{check_prefix(prefix)}-s{_index(index)}"


def bridge_name(prefix: str, index: int) -> str:
    """The bridge device of switch ``index`` (inside its namespace)."""
    return f"{check_prefix(prefix)}-br{_index(index)}"


def veth_name(prefix: str, index: int, end: str) -> str:
    """One end (``a`` or ``b``) of the veth pair of link ``index``."""
    if end not in ("a", "b"):
        raise ValueError(f"veth end must be 'a' or 'b', got {end!r}")
    return f"{check_prefix(prefix)}-l{_index(index)}{end}"


def owns_netns(prefix: str, name: str) -> bool:
    """Whether namespace ``name`` is one netlab made with ``prefix``."""
    return re.fullmatch(rf"{re.escape(check_prefix(prefix))}-[hs]\d+", name) is not None


def owns_link(prefix: str, name: str) -> bool:
    """Whether network device ``name`` is a veth end or bridge netlab made with ``prefix``."""
    return re.fullmatch(rf"{re.escape(check_prefix(prefix))}-(?:l\d+[ab]|br\d+)", name) is not None
