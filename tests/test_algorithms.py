"""Every registered algorithm through the one oracle (tests/oracle.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.algorithms import algorithm_names, get_algorithm
from sim.errors import AlgorithmError

from .oracle import check_algorithm, registered_specs

SPECS = registered_specs()


@pytest.mark.parametrize("collective, spec", SPECS, ids=[f"{c}-{s}" for c, s in SPECS])
@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 13])
def test_oracle_on_a_star(collective, spec, p):
    check_algorithm(collective, spec, p, 3 * 2**20 + 7)


@pytest.mark.parametrize("collective, spec", SPECS, ids=[f"{c}-{s}" for c, s in SPECS])
def test_oracle_with_overhead_and_reduction_cost(collective, spec):
    check_algorithm(collective, spec, 6, 2**22, latency=5e-6, overhead=3e-6, gamma=2e-11)


@given(
    p=st.integers(2, 64),
    nbytes=st.floats(1, 2**30),
    bandwidth=st.floats(1e6, 1e12),
    latency=st.floats(0, 1e-3),
    overhead=st.floats(0, 1e-4),
    gamma=st.sampled_from([0.0, 1e-12, 1e-10]),
)
def test_ring_matches_closed_form_everywhere(p, nbytes, bandwidth, latency, overhead, gamma):
    """Random ranks (sizes need not divide by p), bandwidths, latencies, overheads and γ."""
    check_algorithm(
        "allreduce", "ring", p, nbytes, bandwidth=bandwidth, latency=latency, overhead=overhead, gamma=gamma
    )


def test_registry_refuses_duplicates_and_lists_valid_names():
    from sim.algorithms import register
    from sim.algorithms.ring import RingAllReduce

    with pytest.raises(ValueError, match="already registered"):
        register(RingAllReduce)
    with pytest.raises(AlgorithmError) as info:
        get_algorithm("allreduce", "rnig")
    assert "valid: " in str(info.value) and "ring" in str(info.value)
    assert "ring" in algorithm_names("all-reduce")


def test_unknown_option_is_a_clear_error():
    with pytest.raises(AlgorithmError) as info:
        get_algorithm("allreduce", "ring:chunks=4")
    assert "chunks" in str(info.value) and "\n" not in str(info.value)
