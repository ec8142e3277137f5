from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.errors import ConfigError
from sim.units import (
    format_bandwidth,
    format_size,
    parse_bandwidth,
    parse_size,
    parse_size_range,
    parse_time,
)


@pytest.mark.parametrize(
    "text, value",
    [("64MiB", 64 * 2**20), ("1KB", 1000), ("1KiB", 1024), ("128M", 128 * 2**20), ("1GB", 1e9), (512, 512), ("7", 7)],
)
def test_sizes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize(
    "text, value",
    [
        ("200Mbps", 25e6),
        ("100Gbps", 12.5e9),
        ("25GB/s", 25e9),
        ("400Gb/s", 50e9),
        ("1GiB/s", 2**30),
        ("1e9", 1e9),
        (3.5, 3.5),
    ],
)
def test_bandwidths(text, value):
    assert parse_bandwidth(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("text, value", [("1us", 1e-6), ("1µs", 1e-6), ("2.5ms", 2.5e-3), ("3ns", 3e-9), ("2", 2.0)])
def test_times(text, value):
    assert parse_time(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("bad", ["12XB", "MiB", "", "1..2MiB", "nan", "inf", True, None, [1]])
def test_bad_sizes_are_one_line_errors(bad):
    with pytest.raises(ConfigError) as info:
        parse_size(bad)
    assert "\n" not in str(info.value)


def test_size_range_like_nccl_tests():
    assert parse_size_range("1KiB:1MiB") == [2**k for k in range(10, 21)]
    assert parse_size_range("8:128:4") == [8, 32, 128]
    assert parse_size_range("1K,64MiB") == [1024, 64 * 2**20]
    for bad in ("1MiB:1KiB", "0:8", "8:16:1", "1:2:3:4", "0.5"):
        with pytest.raises(ConfigError):
            parse_size_range(bad)


@given(st.floats(min_value=1, max_value=1e15))
def test_format_parse_round_trip(value):
    assert parse_size(format_size(value)) == pytest.approx(value, rel=1e-3)
    assert parse_bandwidth(format_bandwidth(value)) == pytest.approx(value, rel=1e-3)


def test_huge_values_are_refused_not_overflowed():
    with pytest.raises(ConfigError):
        parse_size("1e400")
    assert parse_size("1PiB") == 2.0**50
    with pytest.raises(ConfigError, match="more than 1 PiB"):
        parse_size("1EiB")
