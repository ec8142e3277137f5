"""Congested cases: times derived by hand (in each docstring) where flows share a link, against the
simulation. Notation: l per-link latency, B link bandwidth (β = 1/B), n bytes, γ s/byte of reduction,
α = the path latency of a message (2l across a star).
"""

from __future__ import annotations

import pytest

from sim.simulate import simulate

RTOL = 1e-9
L = 1e-6
GBPS10 = 10e9 / 8  # 10 Gb/s in bytes/s
N = 6e6
GAMMA = 1e-10


def star(p: int) -> str:
    return f"star:hosts={p},bandwidth=10Gbps,latency=1us"


def close(got: float, want: float) -> bool:
    return abs(got - want) <= RTOL * want


def test_ps_fan_in_through_one_switch_port():
    """PS with 3 dedicated servers in the other rack: every push crosses one switch port.

    leaf-spine, 2 leaves x 3 hosts, one spine, every link B (so the leaf uplink is 3:1 oversubscribed).
    Ranks 0-2 are h0-h2 on leaf0; the servers go to the hosts without ranks, h3-h5 on leaf1. Each worker
    pushes n/3 to each server: 9 flows, all on the one port leaf0->spine0 (and spine0->leaf1). Each
    host link carries 3 of them, the port 9, so max-min gives every flow B/9; all start draining after
    the 4-link path latency 4l and end together:

        push = 4l + 9·(n/3)/B = 4l + 3n·β

    Every server got 3 shards at once: it copies the first and reduces two, 2·(n/3)·γ. The pull is the
    mirror image through leaf1->spine0: 4l + 3n·β. In all

        T = 8l + 6n·β + (2/3)·n·γ

    -- three times the bandwidth term of the same PS on a star (2·max(1, p/S)·n·β = 2n·β): sharding
    over more servers does not help when the servers sit behind one port. The busiest link is an uplink
    direction, carrying 3n of the 6n moved.
    """
    topo = "leaf-spine:leaves=2,hosts_per_leaf=3,spines=1,bandwidth=10Gbps,latency=1us"
    r = simulate(topo, "allreduce", "ps:placement=dedicated,shards=3", N, ranks=3, gamma=GAMMA, check=True)
    beta = 1 / GBPS10
    want = 8 * L + 6 * N * beta + 2 / 3 * N * GAMMA
    assert r.wrong == 0
    assert close(r.time_s, want), (r.time_s, want)
    assert r.busiest_link in {"leaf0->spine0", "spine0->leaf1", "leaf1->spine0", "spine0->leaf0"}
    assert r.busiest_links[0].bytes == pytest.approx(3 * N)
    assert r.max_link_utilization == pytest.approx(3 * N * beta / want)
    assert r.traffic_bytes == pytest.approx(6 * N)
    # on a star of 6 hosts the same PS is the closed form, 3x less bandwidth time
    flat = simulate(
        "star:hosts=6,bandwidth=10Gbps,latency=1us",
        "allreduce",
        "ps:placement=dedicated,shards=3",
        N,
        ranks=3,
        gamma=GAMMA,
    )
    assert close(flat.time_s, 4 * L + 2 * N * beta + 2 / 3 * N * GAMMA)


def test_master_worker_on_a_2to1_oversubscribed_leaf_spine():
    """Master-worker, 16 ranks on 2 leaves x 8 hosts, 100 Gb/s host links, 400 Gb/s uplinks (2:1).

    Push: the master h0 receives 15 flows of n. The 7 from its own leaf cross 2 links and start
    draining at 2l, alone on h0's link at B/7 each; the 8 from the other leaf cross 4 links and join at
    4l, when every flow drops to B/15 (the uplink carries 8·B/15, far below its 4B). The near flows
    then have n - 2l·B/7 left and finish at t1 = 4l + 15·(n - 2l·B/7)·β; the far ones have drained as
    much since 4l, so 2l·B/7 is left on each, at B/8: they end at t1 + 16l/7 = 2l + 15n·β. (h0's link
    never idles after 2l and carries 15n.) With γ = 0 the pull is the same on h0's outgoing link:

        T = 2·(2l + 15n·β) = 4l + 30n·β

    the star's bottleneck form with α = 2l: the master's link, not the oversubscribed uplink, is the
    bottleneck. The uplink spine0->leaf0 carries the 8 far pushes, 8n, at 4B: 8n/(4B·T) busy.
    """
    topo = "leaf-spine:leaves=2,hosts_per_leaf=8,spines=1,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"
    r = simulate(topo, "allreduce", "master-worker", N, check=True)
    beta = 8 / 100e9
    want = 4 * L + 30 * N * beta
    assert r.wrong == 0
    assert close(r.time_s, want), (r.time_s, want)
    assert r.busiest_link in {"h0->leaf0", "leaf0->h0"}
    assert r.root_received_bytes == r.root_sent_bytes == pytest.approx(15 * N)
    uplink = {u.link: u for u in r.busiest_links}["spine0->leaf0"]
    assert uplink.bytes == pytest.approx(8 * N)
    assert uplink.utilization == pytest.approx(8 * N * beta / 4 / want)


def test_tree_where_two_children_share_the_parents_link():
    """tree, p = 3 on a star: root 0 with children 1 and 2 on one link.

    Reduce: both children send n at once; their flows share 0's link, B/2 each: α + 2n·β; the root
    reduces the two buffers one after the other, 2n·γ. Broadcast: 0 sends n to both at once over its
    link: α + 2n·β. T = 2α + 4n·β + 2n·γ (model.md's 2d·(α + 2nβ), d = 1).

    Pipelined in K = 2 chunks of m = n/2 (T1 = α + 2m·β a tree step, g = 2m·γ its reductions): going
    up the first chunk takes T1 + g and the second one leaves the children when the first has arrived,
    so it reaches the root T1 later and is reduced max(T1, g) after the first; down the same, a chunk
    every T1: T = (T1 + g) + max(T1, g) + 2·T1.
    """
    beta, alpha = 1 / GBPS10, 2 * L
    r = simulate(star(3), "allreduce", "tree", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, 2 * alpha + 4 * N * beta + 2 * N * GAMMA)
    assert r.busiest_link in {"h0->sw0", "sw0->h0"}
    m = N / 2
    step, g = alpha + 2 * m * beta, 2 * m * GAMMA
    r = simulate(star(3), "allreduce", "tree:chunks=2", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, step + g + max(step, g) + 2 * step)


def test_tree_with_one_child_short():
    """tree, p = 4 on a star (0 <- {1, 2}, 1 <- 3), K = 1, where the siblings are out of step.

    At 0, 3 -> 1 and 2 -> 0 start; each is alone on its links: both arrive at α + n·β. Rank 1 reduces
    (n·γ) and sends to 0 (2's flow is long done): it arrives at 2α + 2n·β + n·γ; the root has reduced 2's
    buffer by then and reduces 1's: 2α + 2n·β + 2n·γ. Broadcast: 0 -> {1, 2} share 0's link,
    α + 2n·β; then 1 -> 3 alone, α + n·β:

        T = 4α + 5n·β + 2n·γ        (the complete-tree form of depth 2 would say 4α + 8n·β + 4n·γ)
    """
    beta, alpha = 1 / GBPS10, 2 * L
    r = simulate(star(4), "allreduce", "tree", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, 4 * alpha + 5 * N * beta + 2 * N * GAMMA)


def test_double_binary_tree_on_four_ranks():
    """double-binary-tree, p = 4, K = 1, each tree carrying m = n/2.

    NCCL's trees: tree 0 is 0 <- 2 <- {1, 3}, tree 1 (the mirror) is 3 <- 1 <- {2, 0}. Reduce: the
    leaves 1, 3 send to 2 and 0, 2 send to 1 at once: each uplink carries one flow, the links into 2 and
    1 two each: α + 2m·β = α + n·β; ranks 2 and 1 reduce two half buffers, n·γ. Then 2 -> 0 and 1 -> 3,
    alone: α + m·β, and the roots reduce, m·γ. Broadcast: 0 -> 2 and 3 -> 1, α + m·β; then 2 -> {1, 3}
    and 1 -> {0, 2}, two flows on each sender's link: α + 2m·β.

        T = 4α + 3n·β + 1.5·n·γ     (the single binary tree: 4α + 5n·β + 2n·γ)
    """
    beta, alpha = 1 / GBPS10, 2 * L
    r = simulate(star(4), "allreduce", "double-binary-tree", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, 4 * alpha + 3 * N * beta + 1.5 * N * GAMMA)


def test_recursive_doubling_with_three_ranks():
    """recursive-doubling, p = 3: rank 0 folds into 1; ranks 1 and 2 swap; 1 hands the result to 0.

    At 0 both 0 -> 1 (fold in) and 2 -> 1 (2 has nothing to wait for) start: they share 1's link and
    arrive together at α + 2n·β. Rank 1 reduces the fold (n·γ), then sends to 2: arrives at
    2α + 3n·β + n·γ; it reduces 2's buffer (n·γ) and sends the result to 0: α + n·β more.

        T = 3α + 4n·β + 2n·γ        (the contention-free form: 3α + 3n·β + 2n·γ)
    """
    beta, alpha = 1 / GBPS10, 2 * L
    r = simulate(star(3), "allreduce", "recursive-doubling", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, 3 * alpha + 4 * N * beta + 2 * N * GAMMA)


def test_halving_doubling_with_three_ranks():
    """halving-doubling, p = 3 (p' = 2, two blocks of n/2): rank 0 folds into 1 (new rank 0), 2 is new
    rank 1.

    At 0 the fold (n) and 2's half for 1 (n/2) share 1's link at B/2: the half ends at α + n·β, the
    fold then drains its last n/2 at B: α + 1.5n·β. Rank 1 reduces it (n·γ), swaps halves with 2
    (α + n/2·β) and reduces its half (n/2·γ): 2α + 2n·β + 1.5n·γ, when 2 is done too. The doubling swap:
    α + n/2·β; the fold out: α + n·β.

        T = 4α + 3.5n·β + 1.5n·γ    (the contention-free form: 4α + 3n·β + 1.5n·γ)
    """
    beta, alpha = 1 / GBPS10, 2 * L
    r = simulate(star(3), "allreduce", "halving-doubling", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, 4 * alpha + 3.5 * N * beta + 1.5 * N * GAMMA)


def test_binomial_reduce_with_three_ranks():
    """reduce binomial-tree, p = 3: rank 1 sends in round 0, rank 2 (nothing below it) in round 1 --
    but it has nothing to wait for, so both flows start at 0 and share the root's link: α + 2n·β; the
    root reduces them one after the other. T = α + 2n·β + 2n·γ (the round form: 2α + 2n·β + 2n·γ)."""
    beta, alpha = 1 / GBPS10, 2 * L
    r = simulate(star(3), "reduce", "binomial-tree", N, gamma=GAMMA, check=True)
    assert r.wrong == 0 and close(r.time_s, alpha + 2 * N * beta + 2 * N * GAMMA)
