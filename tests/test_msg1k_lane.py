"""The private lane and the wake-up's own resumes (sim.network) change the message level's cost, never
its results.

* a single send whose link directions no other flow holds is *private*: due at ``start + wire / rate``
  from its send, with no start wake-up and no rate computation, until the first send that would meet
  another flow closes the lane (its flows handed to the engine as they would be);
* the engine wakes at a private start only when a wake-up there would complete a flow due within
  ``_TIME_RTOL`` after it;
* wake-ups come at their exact times;
* processes resumed by a wake-up's arrivals run at its end when nothing else is due at that instant.

Every case runs with and without each of them and must agree bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import simpy

import sim.network as network
from sim import simulate
from sim.cluster import Cluster
from sim.runtime import Job

from .test_message_engine import _same

DGX = "dgx:hosts=4,gpus_per_host=4"
LEAF_SPINE = "leaf-spine:leaves=2,hosts_per_leaf=2,spines=1,bandwidth=1GB/s,latency=1us"


def _lane_closed(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for every network, whether its lane was still open when asked to close."""
    closed: list[bool] = []
    end = network.Network._end_lane

    def spy(self: network.Network) -> None:
        closed.append(self._lane)
        end(self)

    monkeypatch.setattr(network.Network, "_end_lane", spy)
    return closed


@pytest.mark.parametrize(
    "topology, algorithm, stays_open",
    [
        (DGX, "ring", True),  # rail-aligned: no link direction ever carries two flows
        ("star:hosts=6,bandwidth=1GB/s,latency=1us", "ring", True),
        # across the rails, spines hashed: flows meet, the lane closes mid-run (routed by destination,
        # dgx's default, the hosts' flows take a spine each and never meet)
        (f"{DGX},ecmp=hash", "ring:order=rank", False),
        (DGX, "halving-doubling", True),
        (LEAF_SPINE, "tree:chunks=4", False),
        (LEAF_SPINE, "ps", False),
    ],
)
@pytest.mark.parametrize("gamma", [0.0, 4e-11])
@pytest.mark.parametrize("flag", ["_PRIVATE", "_RESUME_IN_WAKE"])
def test_each_shortcut_alone_gives_the_same_results(monkeypatch, topology, algorithm, stays_open, gamma, flag):
    def run() -> Any:
        return simulate(Cluster(topology), "allreduce", algorithm, 3e6 + 7, engine="message", gamma=gamma, check=True)

    with monkeypatch.context() as m:
        closed = _lane_closed(m)
        fast = run()
    with monkeypatch.context() as m:
        m.setattr(network, flag, False)
        ref = run()
    _same(fast, ref)
    assert fast.wrong == 0
    assert (True in closed) is not stays_open  # the lane closed mid-run, or never did
    if stays_open or flag == "_RESUME_IN_WAKE":
        assert fast.events < ref.events  # (closing the lane may cost a wake-up of its own)


def _run_plan(
    topology: str, plan: list[tuple[float, int, int, float]], private: bool, core: bool = True, known: bool = False
) -> tuple[Any, ...]:
    """Run the sends of ``plan`` ((send time, src, dst, bytes)), with or without the lane (and its compiled
    core; with ``known``, every pair's route interned for the lane before its send): (send index, arrival
    time) in arrival order, and the network."""
    saved = network._PRIVATE, network._LANE_CORE
    network._PRIVATE, network._LANE_CORE = private, core
    try:
        env = simpy.Environment()
        net = network.Network(env, Cluster(topology))
    finally:
        network._PRIVATE, network._LANE_CORE = saved
    for _, src, dst, _ in plan if known else ():
        net._lane_pair(src, dst)
    arrived: list[tuple[int, float]] = []

    def sender(i: int, at: float, src: int, dst: int, nbytes: float) -> Any:
        yield env.timeout(at)
        yield net.send(src, dst, nbytes)
        arrived.append((i, env.now))

    for i, step in enumerate(plan):
        env.process(sender(i, *step))
    env.run()
    return arrived, net


def _arrivals(topology: str, plan: list[tuple[float, int, int, float]], private: bool, **kw: bool) -> list[float]:
    """Arrival time of every send of ``plan``; no two of its flows meet (``kw``: :func:`_run_plan`'s)."""
    arrived, net = _run_plan(topology, plan, private, **kw)
    assert net._lane is private
    return [t for _, t in sorted(arrived)]


def _delay_and_rate(topology: str, src: int, dst: int) -> tuple[float, float]:
    net = network.Network(simpy.Environment(), Cluster(topology))
    pid = net.cluster.path_id(src, dst)
    return net._model.one(pid, src, 1.0)[0], float(net.cluster.paths.bottleneck[pid])


def due_after_start_plan() -> tuple[list[tuple[float, int, int, float]], int, float]:
    """A flow due a few ulps after another flow's start, on LEAF_SPINE: (the plan, which send, and the
    start it must arrive at)."""
    delay, rate = _delay_and_rate(LEAF_SPINE, 0, 1)
    due = delay + 3e6 / rate  # flow 0: sent at 0, alone on its links
    at = due - delay - 1e-17  # flow 1 (other links) starts just before flow 0 is due
    while not at + delay < due <= (at + delay) * (1 + network._TIME_RTOL):
        at = math.nextafter(at, 0.0)
    assert at + delay < due
    return [(0.0, 0, 1, 3e6), (at, 2, 3, 1e6)], 0, at + delay


def sent_later_plan() -> tuple[list[tuple[float, int, int, float]], int, float]:
    """:func:`due_after_start_plan` with the start known first: a flow on a short route, sent after one
    on a long route, due a few ulps after the long one starts."""
    far, rate = _delay_and_rate(LEAF_SPINE, 0, 2)  # across the spine
    near, _ = _delay_and_rate(LEAF_SPINE, 1, 0)  # within a leaf (other link directions)
    assert near < far
    sent = (far - near) / 4
    nbytes = (far - sent - near) * rate + 1e-6
    while not far < sent + near + nbytes / rate <= far * (1 + network._TIME_RTOL):
        nbytes = math.nextafter(nbytes, 0.0) if sent + near + nbytes / rate > far else nbytes * (1 + 1e-15)
    return [(0.0, 0, 2, 1e6), (sent, 1, 0, nbytes)], 1, far


@pytest.mark.parametrize("make", [due_after_start_plan, sent_later_plan])
def test_a_flow_due_just_after_a_private_start_completes_at_that_start(make):
    """The engine wakes at every start, and a wake-up completes the flows due within _TIME_RTOL of
    its time: a flow due a few ulps after another flow's start ends at that start, lane or not."""
    plan, which, start = make()
    lane = _arrivals(LEAF_SPINE, plan, True)
    assert lane == _arrivals(LEAF_SPINE, plan, False)
    assert lane[which] == start  # completed by the wake-up at the start


def test_wake_ups_come_at_their_exact_times():
    """A flow due at ``t`` arrives at ``t`` exactly, also where ``now + (t - now)`` is not ``t``."""
    topology = "star:hosts=2,bandwidth=3GB/s,latency=0.7us"
    delay, rate = _delay_and_rate(topology, 0, 1)
    sent, nbytes = 2.523633054692227e-06, 255528.01547630175
    due = (sent + delay) + nbytes / rate
    assert sent + (due - sent) != due  # a timeout set at the send would fire an ulp off
    for private in (True, False):
        assert _arrivals(topology, [(sent, 0, 1, nbytes)], private) == [due]


def test_lane_hands_started_and_waiting_flows_to_the_engine():
    """A send that meets a private flow closes the lane while one flow drains and one still waits out
    its latency; the engine goes on with both as if they had never been private."""
    topology = "star:hosts=4,bandwidth=1GB/s,latency=1us"
    plan = [(0.0, 0, 1, 2e6), (2.4e-6, 3, 2, 5e5), (2.5e-6, 2, 1, 1e6), (2.6e-6, 3, 1, 7e5 + 3)]
    runs = [_run_plan(topology, plan, private) for private in (True, False)]
    for arrived, net in runs:
        assert not net._lane and net.rates.solves and net.rates._count == net.rates._shared == 0
    assert runs[0][0] == runs[1][0]
    assert runs[0][1].rates.solves == runs[1][1].rates.solves


def test_resumes_at_an_instant_with_another_event_keep_the_event_loops_order():
    """A process whose timeout ends at the instant a message arrives: it runs before the receiver, as
    the event loop orders them, whether or not the receiver is resumed inside the wake-up."""

    def run(inside: bool) -> list[tuple[str, float]]:
        saved = network._RESUME_IN_WAKE
        network._RESUME_IN_WAKE = inside
        try:
            env = simpy.Environment()
            net = network.Network(env, Cluster("star:hosts=2,bandwidth=1GB/s,latency=1us"))
            job = Job(env, net, 2, 1e6)
            order: list[tuple[str, float]] = []

            def receiver() -> Any:
                got = yield job.recv(1, 0)
                order.append((got, env.now))

            def waiter(at: float) -> Any:
                yield env.timeout(at)
                order.append(("timeout", env.now))

            job.send(0, 1, 1e6, payload="message")
            env.process(receiver())
            env.process(waiter(2e-6 + 1e-3))  # the message's arrival: 2 us latency + 1 ms
            env.run()
            return order
        finally:
            network._RESUME_IN_WAKE = saved

    inside = run(True)
    assert inside == run(False)
    assert [who for who, _ in inside] == ["timeout", "message"] and inside[0][1] == inside[1][1]
