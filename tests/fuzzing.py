"""Shared pieces of the fuzz tests (tests/test_fuzz.py): strategies for hostile values, a guard that turns
a hang into a test failure, and the one check every command-line input must pass -- a result, or one
``collsim: error:`` line and exit code 2; never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from collsim.cli import main

__all__ = ["JUNK", "NUMBERS", "VALUES", "Hang", "campaign", "cli", "fuzz_settings", "no_hang", "yaml_values"]

#: what every fuzz test runs: the suite's profile, with capsys allowed across examples
fuzz_settings = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
#: a campaign: ``COLLSIM_FUZZ_EXAMPLES`` (default 1000) random, not derandomized, examples
CAMPAIGN = settings(fuzz_settings, max_examples=int(os.environ.get("COLLSIM_FUZZ_EXAMPLES", "1000")), derandomize=False)


def campaign(test: Any) -> Any:
    """The benchmark twin of a fuzz or property test: the same body under :data:`CAMPAIGN`, marked
    ``benchmark`` (excluded from the default run)."""
    import pytest

    return pytest.mark.benchmark(CAMPAIGN(test))


class Hang(Exception):
    """The code under test ran past the guard's time."""


@contextlib.contextmanager
def no_hang(seconds: float) -> Iterator[None]:
    """Fail (raise :class:`Hang`) if the block takes longer than ``seconds`` of wall clock."""

    def expire(_signum: int, _frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def cli(capsys: Any, argv: list[str], seconds: float = 30) -> tuple[int, str, str]:
    """Run ``collsim ARGV`` in-process; assert it ended in a result (0) or in exactly one error line and
    exit code 2, within ``seconds``. Returns (code, stdout, stderr)."""
    capsys.readouterr()
    with no_hang(seconds):
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out, err
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("collsim: error: "), (argv, err)
    return code, out, err


_SPECIAL_NUMBERS = [0, -1, 1, 2, 7, 2**21 + 1, 10**9, 10**12, 2**63, -(2**63), 1e308, -1e308, 5e-324, 0.5, 1e-300]
#: numbers from the plain to the absurd
NUMBERS = st.one_of(
    st.integers(-5, 40),
    st.sampled_from(_SPECIAL_NUMBERS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
)
_UNITS = st.sampled_from(
    ["", "B", "KiB", "MiB", "GiB", "PiB", "EiB", "K", "M", "G", "Gbps", "GB/s", "Mb/s", "bps", "us", "µs", "ms",
     "s", "min", "ns", "x", "Gbpz", "%", "e", "/", " ", "Ｇ"]
)  # fmt: skip
#: strings no parser should choke on
JUNK = st.one_of(
    st.text(max_size=24),
    st.sampled_from(
        ["nan", "NaN", "inf", "-inf", "1e400", "-1e400", "１GB/s", "0x10", "1_000", "", " ", "\x00", "$(reboot)",
         "; rm -rf /", "`id`", "a" * 300, "../../etc/passwd", "1,2", "1:2", "1:2:3:4", "8..4", "1e-400", "-0",
         "true", "None", "[]", "{}"]
    ),
)  # fmt: skip
#: a value as a user might write one: a number with a unit, a bare number, or junk
VALUES = st.one_of(st.builds(lambda n, u: f"{n}{u}", NUMBERS, _UNITS), NUMBERS.map(str), JUNK)


def yaml_values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Nested YAML-able values: scalars of every kind (NaN, inf, huge, unicode), lists and mappings."""
    scalars = st.one_of(st.none(), st.booleans(), NUMBERS, VALUES)
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
        max_leaves=12,
    )
