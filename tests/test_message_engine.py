"""The message-level engine's shortcuts change its cost, never its results.

* an event nobody waits on is settled on the spot, without a step of the event loop
  (:func:`sim.network.settle`: a send's completion, a delivery to a receive not yet waited on, a
  receive whose message is in the mailbox);
* batches of up to ``sim.network._SMALL`` single sends are flushed, started, rated and finished in
  scalar operations;
* the parameter server interns every route at once (:meth:`sim.network.Network.intern`);
* processes that a wake-up's arrivals resume run at the end of that wake-up, not as steps of the event
  loop, when no other event is due at that instant (:meth:`sim.network.Network._resume_held`).

Each case runs twice, with the shortcuts and with them turned off (events always scheduled, every
batch through numpy, routes interned as they are sent), and must give the same result bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from simpy.events import Event

import sim.network as network
import sim.runtime as runtime
from sim import simulate
from sim.cluster import Cluster

LEAF_SPINE = "leaf-spine:leaves=4,hosts_per_leaf=4,spines=2,bandwidth=100Gbps,uplink_bandwidth=50Gbps,latency=1us"
CASES = [
    ("dgx:hosts=4,gpus_per_host=4", "allreduce", "ring"),
    ("dgx:hosts=4,gpus_per_host=4,ecmp=hash", "allreduce", "ring:order=rank"),  # flows meet by chance
    ("dgx:hosts=4,gpus_per_host=4", "allreduce", "halving-doubling"),
    ("dgx:hosts=4,gpus_per_host=4", "allreduce", "hierarchical"),
    ("dgx:hosts=4,gpus_per_host=4", "allreduce", "double-binary-tree:chunks=5"),
    ("dgx:hosts=4,gpus_per_host=4,ecmp=hash", "allreduce", "ps:shards=5"),
    (LEAF_SPINE, "allreduce", "recursive-doubling"),
    (LEAF_SPINE, "allreduce", "tree:chunks=4"),
    (LEAF_SPINE, "allreduce", "master-worker"),
    (LEAF_SPINE, "allreduce", "ps"),
    (LEAF_SPINE, "alltoall", "pairwise"),
    ("star:hosts=7,bandwidth=1GB/s,latency=1us", "broadcast", "ring"),
    ("star:hosts=7,bandwidth=1GB/s,latency=1us", "allgather", "recursive-doubling"),
]


def _always_scheduled(event: Event, value: Any) -> None:
    event.succeed(value)


def _reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine without its shortcuts."""
    monkeypatch.setattr(network, "settle", _always_scheduled)
    monkeypatch.setattr(runtime, "settle", _always_scheduled)
    monkeypatch.setattr(network, "_SMALL", 0)
    monkeypatch.setattr(network, "_RESUME_IN_WAKE", False)
    monkeypatch.setattr(network, "_PRIVATE", False)
    monkeypatch.setattr(network.Network, "intern", _intern_one_by_one)


def _intern_one_by_one(net: network.Network, srcs: Any, dsts: Any) -> np.ndarray:
    """Network.intern without its bulk lookup: every pair's route found as a send finds it, in pair order."""
    return np.array([net.cluster.path_id(int(s), int(d)) for s, d in zip(srcs, dsts, strict=True)], dtype=np.int64)


def _run(topology: str, collective: str, algorithm: str, **kw: Any) -> Any:
    return simulate(Cluster(topology), collective, algorithm, 3e6 + 7, engine="message", **kw)


def _same(a: Any, b: Any) -> None:
    assert a.time_s == b.time_s
    assert a.flows == b.flows
    assert a.link_bytes == b.link_bytes
    assert a.busiest_links == b.busiest_links
    assert (a.max_sent_bytes, a.max_received_bytes, a.traffic_bytes) == (
        b.max_sent_bytes,
        b.max_received_bytes,
        b.traffic_bytes,
    )
    assert a.wrong == b.wrong


@pytest.mark.parametrize("topology, collective, algorithm", CASES)
@pytest.mark.parametrize("gamma, check", [(0.0, False), (4e-11, True)])
def test_the_shortcuts_give_the_same_results_bit_for_bit(monkeypatch, topology, collective, algorithm, gamma, check):
    fast = _run(topology, collective, algorithm, gamma=gamma, check=check)
    with monkeypatch.context() as m:
        _reference(m)
        ref = _run(topology, collective, algorithm, gamma=gamma, check=check)
    _same(fast, ref)
    if check:
        assert fast.wrong == 0
    assert fast.events <= ref.events


def test_settled_events_take_no_step_and_resume_at_the_right_time(monkeypatch):
    """A ring whose sends all complete while their senders wait for a receive: with the shortcut they
    cost no step of the event loop, and the time is the one the scheduled events give."""
    fast = _run("star:hosts=8,bandwidth=1GB/s,latency=1us", "allreduce", "ring", check=True)
    with monkeypatch.context() as m:
        _reference(m)
        ref = _run("star:hosts=8,bandwidth=1GB/s,latency=1us", "allreduce", "ring", check=True)
    _same(fast, ref)
    assert fast.events < ref.events * 0.75
    assert fast.time_s == pytest.approx(fast.closed_form_s, rel=1e-12)


def test_a_receive_of_an_arrived_message_comes_processed():
    import simpy

    env = simpy.Environment()
    net = network.Network(env, Cluster("star:hosts=2,bandwidth=1GB/s,latency=1us"))
    job = runtime.Job(env, net, 2, 1e6)
    got: list[Any] = []

    def receiver():
        yield env.timeout(1.0)  # long after the message has arrived
        event = job.recv(1, 0)
        assert event.processed
        got.append((yield event))
        got.append(env.now)

    job.send(0, 1, 1e6, payload="x")
    env.process(receiver())
    env.run()
    assert got == ["x", 1.0]
    assert job.pending_messages() == 0 and job.pending_receives() == 0


def _alone_then_shared(check: bool) -> tuple[list[tuple[int, float]], Any]:
    """Sends whose links are first each flow's own, then shared (two senders into one receiver), then
    their own again, one at a time and a few together: (send index, arrival time) in arrival order."""
    import simpy

    env = simpy.Environment()
    net = network.Network(env, Cluster("star:hosts=5,bandwidth=1GB/s,latency=1us"), check=check)
    arrived: list[tuple[int, float]] = []
    plan = [  # (start, src, dst, bytes)
        (0.0, 0, 1, 3e6 + 1),  # alone
        (0.0, 2, 3, 1e6),  # alone beside it
        (1e-3, 4, 1, 2e6 + 3),  # into host 1 beside the first: the link is shared from here on
        (1.5e-3, 3, 4, 5e5),  # alone while the others share
        (2e-3, 2, 1, 1e6 + 5),  # a third flow into host 1
        (9e-3, 0, 2, 7e5),  # after all of them: alone again
        (9e-3, 1, 3, 7e5),
    ]

    def sender(i: int, start: float, src: int, dst: int, nbytes: float):
        yield env.timeout(start)
        yield net.send(src, dst, nbytes)
        arrived.append((i, env.now))

    for i, (start, src, dst, nbytes) in enumerate(plan):
        env.process(sender(i, start, src, dst, nbytes))
    env.run()
    return arrived, net


@pytest.mark.parametrize("check", [False, True])
def test_flows_alone_on_their_links_then_shared_then_alone_again(monkeypatch, check):
    """Flows started and ended a few at a time (scalar operations, per-link user counts kept one flow at
    a time) get the rates and arrival times the array lane gives, bit for bit, across the switch from
    every flow alone on its links to shared links and back; the counts end at zero."""
    fast, net = _alone_then_shared(check)
    with monkeypatch.context() as m:
        _reference(m)
        ref, ref_net = _alone_then_shared(check)
    assert fast == ref
    assert net.rates.isolated and net.rates.solves  # both regimes were met
    assert (net.rates.isolated, net.rates.solves) == (ref_net.rates.isolated, ref_net.rates.solves)
    assert net.rates._shared == 0 and not net.rates._users.any()  # every count back to zero
    assert sorted(i for i, _ in fast[-2:]) == [5, 6]  # the last two, alone again, together
