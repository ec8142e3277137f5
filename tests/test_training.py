"""The training-iteration model (sim/training.py): DDP buckets, overlap with backward, exposed
communication, traffic -- against times derived by hand."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from sim import Cluster
from sim.errors import ConfigError
from sim.network import Network
from sim.training import Workload, bucket_ready_times, bucket_sizes, simulate_iteration

MiB = 2**20
# 4 single-GPU hosts on one switch, 1 GB/s links, no latency: a ring all-reduce of n bytes takes
# 2(p-1)/p * n / B = 1.5 n ns, and while k rings run at once every link direction carries one flow of
# each, all at B/k -- every link stays saturated, so concurrent buckets end when their summed work is done.
STAR = "star:hosts=4,bandwidth=1GB/s,latency=0"
BUCKETS = dict(gradient_bytes=5e6, first_bucket_bytes=1e6, bucket_bytes=2e6)  # buckets of 1, 2, 2 MB


def ms(x: float) -> float:
    return x * 1e3


def test_overlap_hides_communication_when_compute_is_long():
    """Forward 10 ms, backward 20 ms, optimizer 1 ms; buckets of 1, 2, 2 MB (ring: 1.5, 3, 3 ms).

    Backward makes 5 MB in 20 ms, so the buckets are ready at 10 + 20*1/5 = 14, 10 + 20*3/5 = 22 and
    30 ms. With overlap each all-reduce runs alone: [14, 15.5], [22, 25], [30, 33]; only the last
    bucket is exposed: iteration = 33 + 1 = 34 ms, exposed 3 ms. Without overlap all three start at
    30 ms and share the links: 1.5 + 3 + 3 = 7.5 ms of link time, iteration = 30 + 7.5 + 1 = 38.5 ms.
    """
    w = Workload(forward_s=0.010, backward_s=0.020, optimizer_s=0.001, **BUCKETS)
    on = simulate_iteration(STAR, "ring", w, check=True)
    off = simulate_iteration(STAR, "ring", Workload(**{**w.__dict__, "overlap": False}), check=True)
    assert [(ms(b.start_s), ms(b.end_s)) for b in on.bucket_timings] == [
        pytest.approx((14, 15.5)),
        pytest.approx((22, 25)),
        pytest.approx((30, 33)),
    ]
    assert ms(on.iteration_s) == pytest.approx(34, rel=1e-9)
    assert ms(on.exposed_comm_s) == pytest.approx(3, rel=1e-9)
    assert ms(off.iteration_s) == pytest.approx(38.5, rel=1e-9)
    assert ms(off.exposed_comm_s) == pytest.approx(7.5, rel=1e-9)
    assert on.exposed_fraction == pytest.approx(3 / 34)
    assert on.wrong == 0 and off.wrong == 0


def test_overlap_cannot_hide_communication_when_compute_is_short():
    """Forward 1 ms, backward 2 ms, optimizer 1 ms; the same buckets, ready at 1.4, 2.2 and 3.0 ms.

    The first all-reduce starts at 1.4 ms and the links stay saturated from then on (the second
    bucket arrives at 2.2 ms, before the first is done at 2.9; the third at 3.0 ms, with work still
    queued), so communication ends at 1.4 + 7.5 = 8.9 ms: iteration 9.9 ms, of which 8.9 - 3 = 5.9 ms
    is exposed. Without overlap: 3 + 7.5 + 1 = 11.5 ms, 7.5 ms exposed.
    """
    w = Workload(forward_s=0.001, backward_s=0.002, optimizer_s=0.001, **BUCKETS)
    on = simulate_iteration(STAR, "ring", w, check=True)
    off = simulate_iteration(STAR, "ring", Workload(**{**w.__dict__, "overlap": False}))
    assert ms(on.iteration_s) == pytest.approx(9.9, rel=1e-9)
    assert ms(on.exposed_comm_s) == pytest.approx(5.9, rel=1e-9)
    assert ms(off.iteration_s) == pytest.approx(11.5, rel=1e-9)
    assert on.exposed_fraction > 0.5  # most of the communication shows
    assert on.wrong == 0  # three concurrent buckets, each all-reduced correctly: no mixed messages


def test_buckets_one_at_a_time_wait_for_each_other():
    """NCCL-style single stream: bucket 2 (ready 2.2 ms) waits for bucket 1 to end at 2.9 ms, runs
    to 5.9; bucket 3 (ready 3.0) runs 5.9 -> 8.9. The links never idle, so the end is the same."""
    w = Workload(forward_s=0.001, backward_s=0.002, optimizer_s=0.001, concurrent_buckets=False, **BUCKETS)
    r = simulate_iteration(STAR, "ring", w)
    assert [(ms(b.start_s), ms(b.end_s)) for b in r.bucket_timings] == [
        pytest.approx((1.4, 2.9)),
        pytest.approx((2.9, 5.9)),
        pytest.approx((5.9, 8.9)),
    ]
    assert ms(r.iteration_s) == pytest.approx(9.9, rel=1e-9)


def test_traffic_counts_every_byte_once():
    """Ring: every rank sends 2(p-1)/p of every bucket; each message crosses two link directions."""
    w = Workload(forward_s=0.010, backward_s=0.020, optimizer_s=0.001, **BUCKETS)
    r = simulate_iteration(STAR, "ring", w)
    assert r.bytes_sent == pytest.approx(2 * 3 * 5e6)  # 2(p-1) * G over all ranks
    assert r.max_rank_bytes == pytest.approx(2 * 1.5 * 5e6)  # sent + received by one rank
    assert r.link_bytes == pytest.approx(2 * r.bytes_sent)
    # every direction of every host link carries 1.5 * 5 MB; busy 7.5 ms of the 34 ms iteration
    assert r.max_link_utilization == pytest.approx(7.5 / 34)
    assert len(r.busiest_links) == 5 and r.flows == 3 * 2 * 3 * 4


def test_samples_per_second_and_bucket_layout():
    w = Workload(gradient_bytes=100 * MiB, forward_s=0.01, backward_s=0.02, samples_per_gpu=32)
    assert [b / MiB for b in bucket_sizes(w)] == [1, 25, 25, 25, 24]
    assert bucket_ready_times(w)[-1] == 0.03
    r = simulate_iteration("star:hosts=8,bandwidth=100Gbps,latency=1us", "ring", w, ranks=4)
    assert r.ranks == 4 and r.buckets == 5
    assert r.samples_per_s == pytest.approx(4 * 32 / r.iteration_s)


@pytest.mark.parametrize(
    "grad, expected",
    [(0.5 * MiB, [0.5]), (1 * MiB, [1]), (26 * MiB, [1, 25]), (26 * MiB + 1, [1, 25, 1 / MiB])],
)
def test_bucket_edges(grad, expected):
    w = Workload(gradient_bytes=grad, forward_s=0.0, backward_s=0.01)
    assert [b / MiB for b in bucket_sizes(w)] == pytest.approx(expected)


@given(
    grad=st.floats(1e5, 2e7),
    first=st.floats(1e4, 4e6),
    bucket=st.floats(1e5, 8e6),
    fwd=st.floats(0, 0.02),
    bwd=st.floats(0, 0.02),
)
def test_no_overlap_exposes_exactly_one_big_allreduce(grad, first, bucket, fwd, bwd):
    """Without overlap every bucket starts when backward ends and the saturated star drains them
    together: exposed = 2(p-1)/p * G / B, whatever the bucketing; overlap can only shorten it."""
    w = Workload(gradient_bytes=grad, first_bucket_bytes=first, bucket_bytes=bucket, forward_s=fwd, backward_s=bwd)
    sizes = bucket_sizes(w)
    assert sum(sizes) == pytest.approx(grad) and all(s <= max(first, bucket) for s in sizes)
    off = simulate_iteration(STAR, "ring", Workload(**{**w.__dict__, "overlap": False}))
    assert off.exposed_comm_s == pytest.approx(1.5 * grad / 1e9, rel=1e-9)
    on = simulate_iteration(STAR, "ring", w)
    assert on.iteration_s <= off.iteration_s * (1 + 1e-12)
    assert on.iteration_s >= w.compute_s


def test_network_counts_bytes_per_rank():
    env = simpy.Environment()
    net = Network(env, Cluster(STAR))
    net.transfer([0, 1, 2], [3, 3, 3], 100.0)
    net.send(3, 0, 50.0)
    env.run()
    sent, received = net.rank_bytes()
    assert sent.tolist() == [100, 100, 100, 50]
    assert received.tolist() == [50, 0, 0, 300]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(gradient_bytes=0, forward_s=0, backward_s=0), "workload.gradient_bytes: must be > 0"),
        (dict(gradient_bytes=1, forward_s=-1, backward_s=0), "workload.forward_s: must be >= 0"),
        (dict(gradient_bytes=1e15, forward_s=0, backward_s=0, bucket_bytes=1), "buckets is too many"),
    ],
)
def test_bad_workloads_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        Workload(**kwargs)


def test_too_many_ranks_is_a_config_error():
    w = Workload(gradient_bytes=1e6, forward_s=0, backward_s=0)
    with pytest.raises(ConfigError, match="ranks: 9, but the cluster"):
        simulate_iteration(Cluster(STAR), "ring", w, ranks=9)


@pytest.mark.parametrize("algorithm", ["ring", "halving-doubling", "tree", "ps", "hierarchical"])
@pytest.mark.parametrize("backward_ms", [0.05, 5.0, 200.0])
@pytest.mark.parametrize("concurrent", [True, False])
def test_buckets_moved_through_alone_give_the_simulated_times(algorithm, backward_ms, concurrent):
    """Reusing a bucket's time alone (equal buckets simulated once) gives every bucket's start and end
    as simulating every bucket does: network-bound (buckets overlap), compute-bound (they do not) and
    in between, with buckets concurrent and one at a time."""
    topo = "dgx:hosts=2,gpus_per_host=4"
    w = Workload(
        gradient_bytes=40 * 2**20,
        forward_s=1e-3,
        backward_s=backward_ms * 1e-3,
        bucket_bytes=4 * 2**20,
        concurrent_buckets=concurrent,
    )
    fast = simulate_iteration(topo, algorithm, w, gamma=1e-11)
    ref = simulate_iteration(topo, algorithm, w, gamma=1e-11, reuse=False)
    assert fast.buckets == ref.buckets == 11
    for a, b in zip(fast.bucket_timings, ref.bucket_timings, strict=True):
        assert a.start_s == pytest.approx(b.start_s, rel=1e-9, abs=0)
        assert a.end_s == pytest.approx(b.end_s, rel=1e-9, abs=0)
    assert fast.iteration_s == pytest.approx(ref.iteration_s, rel=1e-9)
    assert fast.flows == ref.flows
    assert fast.link_bytes == pytest.approx(ref.link_bytes, rel=1e-12)
    assert fast.max_rank_bytes == pytest.approx(ref.max_rank_bytes, rel=1e-12)
    assert [x.link for x in fast.busiest_links] == [x.link for x in ref.busiest_links]
    assert [x.bytes for x in fast.busiest_links] == pytest.approx([x.bytes for x in ref.busiest_links], rel=1e-12)


def test_equal_buckets_are_simulated_once(monkeypatch):
    """Compute-bound (every bucket done before the next is ready): one all-reduce per distinct size."""
    import sim.training as training

    calls = []
    real = training.isolated_allreduce
    monkeypatch.setattr(training, "isolated_allreduce", lambda run, size: calls.append(size) or real(run, size))
    w = Workload(gradient_bytes=40 * 2**20, forward_s=1e-3, backward_s=0.2, bucket_bytes=4 * 2**20)
    r = simulate_iteration("dgx:hosts=2,gpus_per_host=4", "ring", w)
    assert r.buckets == 11 and sorted(set(calls)) == sorted(calls) and len(calls) == 3
    assert r.exposed_comm_s < 1e-3


def _busy_periods(monkeypatch):
    """Record every busy period the reusing path simulates."""
    import sim.training as training

    periods = []
    real = training._busy_period
    monkeypatch.setattr(training, "_busy_period", lambda *a: periods.append(real(*a)) or periods[-1])
    return periods


def _same_iteration(fast, ref, rel=1e-9):
    assert fast.buckets == ref.buckets
    for a, b in zip(fast.bucket_timings, ref.bucket_timings, strict=True):
        assert (a.size_bytes, a.ready_s) == (b.size_bytes, b.ready_s)
        assert a.start_s == pytest.approx(b.start_s, rel=rel, abs=0)
        assert a.end_s == pytest.approx(b.end_s, rel=rel, abs=0)
    assert fast.iteration_s == pytest.approx(ref.iteration_s, rel=rel)
    assert fast.flows == ref.flows
    assert fast.link_bytes == pytest.approx(ref.link_bytes, rel=1e-12)
    assert fast.bytes_sent == pytest.approx(ref.bytes_sent, rel=1e-12)
    assert fast.max_rank_bytes == pytest.approx(ref.max_rank_bytes, rel=1e-12)
    assert [x.link for x in fast.busiest_links] == [x.link for x in ref.busiest_links]


# (algorithm, backward ms, the steady state's period in buckets): buckets of 2 MB, one every 0.1 ms
# or so, that overlap the next one and reach a steady state; recursive doubling at 1.2 ms is
# network-bound: one growing busy period, no steady state
@pytest.mark.parametrize(
    "algorithm, backward_ms, period",
    [
        ("ring", 4.0, 1),
        ("ring", 3.5, 2),
        ("halving-doubling", 1.6, 2),
        ("recursive-doubling", 2.5, 1),
        ("hierarchical", 1.2, 1),
        ("recursive-doubling", 1.2, 0),
    ],
)
def test_overlapping_buckets_in_a_steady_state_give_the_message_level_times(
    monkeypatch, algorithm, backward_ms, period
):
    """Buckets that overlap and share the network, on the fast path with their steady state skipped,
    against every bucket simulated message by message (every message a flow, the data checked):
    every bucket's start and end to 1e-9, the same flows and bytes on every link."""
    periods = _busy_periods(monkeypatch)
    w = Workload(
        gradient_bytes=80e6,
        forward_s=1e-3,
        backward_s=backward_ms * 1e-3,
        bucket_bytes=2e6,
        first_bucket_bytes=5e5,
        concurrent_buckets=True,
    )
    topo = "dgx:hosts=2,gpus_per_host=4"
    fast = simulate_iteration(topo, algorithm, w, gamma=1e-11)
    assert len(periods) == 1 and len(periods[0].sizes) >= 2
    assert periods[0].period == period and (periods[0].skipped > 0) == (period > 0)
    ref = simulate_iteration(topo, algorithm, w, gamma=1e-11, check=True)
    assert ref.wrong == 0
    _same_iteration(fast, ref)
    assert fast.events < ref.events


def test_a_busy_period_keeps_to_the_timeout():
    """Network-bound buckets on the fast path, simulated together in one busy period: the call's
    wall-clock bound still stops it."""
    from sim.deadline import SimulationTimeout

    w = Workload(gradient_bytes=2e9, forward_s=1e-3, backward_s=1e-3, bucket_bytes=2e6, concurrent_buckets=True)
    with pytest.raises(SimulationTimeout):
        simulate_iteration("dgx:hosts=8,gpus_per_host=4", "halving-doubling", w, timeout=0.2)
