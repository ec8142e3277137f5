"""NCCL's all-gather and reduce-scatter: ``ring:channels=K`` for both, and ``nccl``'s tuner for them
(docs/nccl.md, "All-gather and reduce-scatter")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.algorithms import get_algorithm
from sim.simulate import simulate
from sim.topology import hgx
from tests.oracle import check_algorithm

GATHERING = ("allgather", "reducescatter")


@pytest.mark.parametrize("collective", GATHERING)
@given(p=st.integers(2, 9), k=st.integers(1, 5), gamma=st.sampled_from([0.0, 1e-10]))
@settings(max_examples=12, deadline=None)
def test_k_rings_pass_the_oracle_on_a_star(collective, p, k, gamma):
    """K rings on a star: every rank ends with every block (all-gather) or its block reduced from every
    rank (reduce-scatter), and the time is the closed form: (p-1) steps of one block of n/p over the
    host's link, the K channels' n/(Kp) each sharing it."""
    t = check_algorithm(collective, f"ring:channels={k}", p, 3e6, gamma=gamma)
    if gamma == 0.0:  # the buffer split among channels moves what one ring moves, in as many steps
        assert t == pytest.approx(check_algorithm(collective, "ring", p, 3e6), rel=1e-12)


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize(
    "hosts, preset, k",
    [
        (2, "dgx-h100", 16),
        (1, "dgx-h100", 8),
        (2, "hgx-a100-200g", 8),
        (2, "oci-bm-gpu-h100-8", 16),
        (3, "dgx-h100", 8),
    ],
)
def test_k_rings_on_hgx_hosts_fast_path_equals_the_message_level(collective, hosts, preset, k):
    """The step program (fast path) gives the message level's time to 1e-9 on rail fabrics, and the
    message level's data check passes: NCCL's rings laid out as the all-reduce's."""
    g = hgx(hosts, preset)
    m = simulate(g, collective, f"ring:channels={k}", 3 * 2**24, engine="message", gamma=1e-11, check=True)
    f = simulate(g, collective, f"ring:channels={k}", 3 * 2**24, engine="fast", gamma=1e-11)
    assert m.wrong == 0
    assert f.time_s == pytest.approx(m.time_s, rel=1e-9)


def test_k_rings_split_the_buffer_and_run_p_minus_1_steps():
    """On 2 x DGX H100 (16 ranks), 16 rings: p - 1 = 15 data steps, each of 16 channels x 16 actors'
    messages of n / (16 x 16) bytes -- the buffer split among the channels, each ring's p - 1 steps."""
    from sim.cluster import Cluster

    cluster = Cluster(hgx(2, "dgx-h100"))
    n = 2**26
    for collective in GATHERING:
        program = get_algorithm(collective, "ring:channels=16").program(16, n, cluster)
        steps = [s for s, count in program.phases for _ in range(count)]
        assert len(steps) == 15
        assert all(len(s.src) == 256 and (s.nbytes == n / 256).all() for s in steps)
        assert all((s.combine == (collective == "reducescatter")).all() for s in steps)
