"""Seed 003's traffic comparison, read off simulated results (bytes counted per message by the runtime),
not computed from the formulas it checks.

Seed 003: master-worker T = (P-1)·N (at the master), ring T = 2·(N/P)·(P-1) (per process), tree
T = log2(P)·N (the root of the binomial tree the notes draw, where the root is its own child at every
level; recursive doubling moves the same per rank).
"""

from __future__ import annotations

import math

import pytest

from sim.simulate import simulate

P = 8
N = 8 * 2**20
STAR = f"star:hosts={P},bandwidth=100Gbps,latency=1us"


@pytest.fixture(scope="module")
def results():
    return {
        "master-worker": simulate(STAR, "allreduce", "master-worker", N),
        "ring": simulate(STAR, "allreduce", "ring", N),
        "recursive-doubling": simulate(STAR, "allreduce", "recursive-doubling", N),
        "tree": simulate(STAR, "allreduce", "tree", N),
        "reduce": simulate(STAR, "reduce", "binomial-tree", N),
        "broadcast": simulate(STAR, "broadcast", "binomial-tree", N),
        "ps": simulate(STAR, "allreduce", "ps", N),
    }


def test_master_worker_moves_p_minus_1_buffers_through_the_master(results):
    r = results["master-worker"]
    assert r.root_received_bytes == r.root_sent_bytes == (P - 1) * N
    assert r.max_received_bytes == (P - 1) * N  # the master is the busiest endpoint
    assert r.traffic_bytes == 2 * (P - 1) * N


def test_ring_moves_2_n_over_p_times_p_minus_1_per_rank(results):
    r = results["ring"]
    per_rank = 2 * (N / P) * (P - 1)
    assert r.max_sent_bytes == r.max_received_bytes == r.root_sent_bytes == pytest.approx(per_rank)
    assert r.traffic_bytes == pytest.approx(P * per_rank)  # every rank the same
    # the fully sharded PS moves exactly what the ring moves, in 2 steps instead of 2(p-1)
    assert results["ps"].max_sent_bytes == pytest.approx(per_rank)
    assert results["ps"].traffic_bytes == pytest.approx(r.traffic_bytes)


def test_tree_moves_log2_p_buffers_at_the_root(results):
    logp = math.log2(P)
    assert results["reduce"].root_received_bytes == logp * N
    assert results["broadcast"].root_sent_bytes == logp * N
    assert results["recursive-doubling"].max_sent_bytes == logp * N
    # the binary tree all-reduce: an inner rank takes 2 buffers from its children and 1 from its parent
    tree = results["tree"]
    assert tree.max_received_bytes == 3 * N and tree.root_received_bytes == 2 * N
    assert tree.traffic_bytes == 2 * (P - 1) * N


def test_the_comparison_orders_the_algorithms_as_the_notes_do(results):
    """At the busiest endpoint: master-worker (P-1)·N > tree log2(P)·N > ring 2·(N/P)·(P-1), and the
    time follows the same order on a star."""
    busiest = {k: max(r.max_sent_bytes, r.max_received_bytes) for k, r in results.items()}
    assert busiest["master-worker"] > busiest["recursive-doubling"] > busiest["ring"]
    assert results["master-worker"].time_s > results["recursive-doubling"].time_s > results["ring"].time_s


def test_link_bytes_count_every_hop(results):
    """On a star every message crosses two links: the links carry twice the message bytes."""
    for r in results.values():
        assert r.link_bytes == pytest.approx(2 * r.traffic_bytes)
