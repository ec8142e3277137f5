"""The fast path's per-message lines in the compiled core (``sim._ratecore.Fast``) give the Python lines'
results bit for bit.

Where the core is built, a :class:`~sim.fastpath.FastExecutor` running alone on a network whose capacities
do not depend on the traffic hands its per-event work -- messages counted as done, ranks completing a
step, the next step's ranks begun, private messages sent and their arrivals scheduled -- to C
(:meth:`~sim.fastpath.FastExecutor._bind_core`); flows, early messages, timers and the end go back to the
Python lines. Every case here runs with ``sim.fastpath._FAST_CORE`` on and off -- uniform, congested,
straggler and slow-link fabrics, reductions, rate bounds, a steady state jumped over, random clusters --
and must agree in every result (the simulated time's repr included), in the events scheduled and in the
executor's counts. The spies on the network's ``launch`` and ``launch_one`` see the core's launches through the
Python lines (``sim.fastpath._FAST_LAUNCH`` off); the core's own launch of the flows (``fast_launch_c``) is
held to those lines wake-up by wake-up below (``test_the_cores_launch_is_the_python_lines``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import simpy

import sim.fastpath as fastpath
import sim.network as network
from sim import simulate
from sim.rates import _CORE
from sim.topology import dgx, hgx, leaf_spine, star

from .random_cases import case
from .test_fastpath import perturb
from .test_message_engine import _same

pytestmark = pytest.mark.skipif(_CORE is None, reason="the compiled core is not built (or COLLSIM_PURE=1)")


def _run(monkeypatch: pytest.MonkeyPatch, core: bool, *args: Any, **kw: Any) -> tuple[Any, list[Any], list[Any]]:
    """The run, the executors it made, and the Python helpers the core called back and the network's
    wake-ups and launches, in order (each with the clock then)."""
    made: list[Any] = []
    called: list[Any] = []
    with monkeypatch.context() as m:
        m.setattr(fastpath.FastExecutor, "__init__", _recording(made))
        m.setattr(fastpath, "_FAST_CORE", core)
        m.setattr(fastpath, "_FAST_LAUNCH", False)  # (the launches through the spied Python lines)
        for name in ("_early_one", "_early_many", "_timer_one", "_finished_one", "_launch_flows", "_launch_flow_one"):
            method = getattr(fastpath.FastExecutor, name)
            m.setattr(fastpath.FastExecutor, name, _spy(method, name, called))
        for name in ("_wake", "launch", "launch_one"):
            m.setattr(network.Network, name, _spy(getattr(network.Network, name), name, called))
        result = simulate(*args, **kw)
    return result, made, called


def _recording(made: list[Any]) -> Any:
    """FastExecutor.__init__, each executor made appended to ``made``."""
    init = fastpath.FastExecutor.__init__

    def recording(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        made.append(self)

    return recording


def _spy(method: Any, name: str, called: list[Any]) -> Any:
    def spying(self: Any, *a: Any, **k: Any) -> Any:
        # the network's launches with the (path, source) pairs they hand over, in their order
        what = (
            ()
            if name not in ("launch", "launch_one")
            else tuple(np.atleast_1d(a[0]).tolist() + np.atleast_1d(a[1]).tolist())
        )
        called.append((name, self.env.now, what))
        return method(self, *a, **k)

    return spying


def _both(monkeypatch: pytest.MonkeyPatch, *args: Any, **kw: Any) -> tuple[Any, list[Any], set[str]]:
    """The run with the core's lines and with the Python lines: the same in everything -- the network
    woken and handed flows at the same points in the same order included; returns the core's run, its
    executors and the names of the Python lines it called back."""
    fast, made, called = _run(monkeypatch, True, *args, **kw)
    ref, ref_made, ref_called = _run(monkeypatch, False, *args, **kw)
    network_calls = ("_wake", "launch", "launch_one")
    assert [c for c in called if c[0] in network_calls] == [c for c in ref_called if c[0] in network_calls]
    _same(fast, ref)
    assert repr(fast.time_s) == repr(ref.time_s)
    assert (fast.events, fast.engine) == (ref.events, ref.engine)
    assert [(e.private, e.extrapolated_steps, e.finished, e.end_time) for e in made] == [
        (e.private, e.extrapolated_steps, e.finished, e.end_time) for e in ref_made
    ]
    assert all(e._core is None for e in ref_made)
    return fast, made, {c[0] for c in called}


UNIFORM = [
    (dgx(hosts=4, gpus_per_host=4, ecmp="hash"), "ring:order=rank"),
    (dgx(hosts=2, gpus_per_host=8), "ring"),
    (star(6, "100Gbps", "1us"), "ring"),
    (dgx(hosts=4, gpus_per_host=4), "halving-doubling"),
]
CONGESTED = [
    (dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=1), "ring:order=rank"),
    (leaf_spine(2, 3, 1, "100Gbps", "50Gbps", "1us"), "ring"),
    (dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1), "ring:channels=2"),
    (dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1), "tree:chunks=4"),
]


@pytest.mark.parametrize("graph, algorithm", UNIFORM + CONGESTED)
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_the_core_gives_the_python_lines_results(monkeypatch, graph, algorithm, gamma):
    fast, made, called = _both(monkeypatch, graph, "allreduce", algorithm, 2**22 + 7, engine="fast", gamma=gamma)
    if fast.engine == "fast:events":
        assert any(e._core is not None for e in made)
        assert "_finished_one" in called or "_launch_flows" in called or any(e.private for e in made)


def test_a_steady_state_jumped_over_with_the_cores_arrivals_in_flight(monkeypatch):
    """A long rank-order ring: the executor jumps over whole periods while private messages that the core
    scheduled (batches of lists) are in flight."""
    graph = dgx(hosts=8, gpus_per_host=4, hosts_per_leaf=2, spines=2, ecmp="hash")
    fast, made, _ = _both(monkeypatch, graph, "allreduce", "ring:order=rank", 2**22 + 7, engine="fast", gamma=1e-11)
    assert fast.engine == "fast:events"
    assert made[-1]._core is not None and made[-1].private > 0 and made[-1].extrapolated_steps > 0


def straggler_graph(seed: int) -> Any:
    """A fabric of the seed's draw with stragglers and slow links (congested, uniform or a leaf-spine)."""
    bases = [
        dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1),
        dgx(hosts=2, gpus_per_host=4),
        leaf_spine(2, 3, 1, "100Gbps", "100Gbps", "1us"),
    ]
    return perturb(bases[seed % len(bases)], seed, stragglers=3, slow_links=4)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("algorithm", ["ring:order=rank", "ring", "halving-doubling", "tree:chunks=3"])
def test_the_core_with_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    graph = straggler_graph(seed)
    _both(monkeypatch, graph, "allreduce", algorithm, float(2**20 + 17 * seed), engine="fast", gamma=1e-11)


def test_the_python_lines_called_back_are_exercised(monkeypatch):
    """Stragglers with reductions: timers, early messages, flows and the end all go through the core's
    calls back into the Python lines."""
    seen: set[str] = set()
    for seed in range(4):
        graph = perturb(dgx(hosts=4, gpus_per_host=4, hosts_per_leaf=2, spines=1), seed, stragglers=4, slow_links=6)
        for algorithm in ("ring:order=rank", "halving-doubling"):
            _, made, called = _both(monkeypatch, graph, "allreduce", algorithm, 2**20 + 3, engine="fast", gamma=4e-11)
            assert made[-1]._core is not None
            seen.update(called)
    assert {"_timer_one", "_finished_one", "_launch_flows", "_launch_flow_one"} <= seen
    assert seen & {"_early_one", "_early_many"}


@pytest.mark.parametrize("seed", range(40))
def test_random_cases(monkeypatch, seed):
    c = case(seed)
    _both(monkeypatch, c.graph, c.collective, c.algorithm, c.size, ranks=c.ranks, gamma=c.gamma, engine="auto")


def test_off_means_the_python_lines(monkeypatch):
    _, made, _ = _run(
        monkeypatch, False, dgx(hosts=2, gpus_per_host=4), "allreduce", "ring:order=rank", "1MiB", engine="fast"
    )
    assert made and all(e._core is None for e in made)


@pytest.mark.parametrize("graph, algorithm", [CONGESTED[0], UNIFORM[0]])
def test_under_a_deadline_every_arrival_keeps_its_event(monkeypatch, graph, algorithm):
    """A deadline's environment looks at the clock at every step: the core then gives each arrival its
    own SimPy event (no queue of its own) -- the same run, bit for bit."""
    from sim.deadline import deadline

    with deadline(600):
        fast, made, _ = _both(monkeypatch, graph, "allreduce", algorithm, 2**22 + 7, engine="fast", gamma=1e-11)
    assert made[-1]._core is not None and type(made[-1].env).step is not simpy.Environment.step
    plain, _, _ = _run(monkeypatch, True, graph, "allreduce", algorithm, 2**22 + 7, engine="fast", gamma=1e-11)
    _same(plain, fast)
    assert plain.events == fast.events


@pytest.mark.parametrize("algorithm", ["nccl-tree", "nvls-tree", "nccl"])
def test_ranks_beginning_steps_of_different_phases_at_once(monkeypatch, algorithm):
    """NCCL's schedules on 4 H100 hosts begin ranks at steps of different phases at the same instant
    (hosts at different depths of the trees): the core launches each phase's group in the Python lines'
    order, phase by phase upwards, which the launches' sequence shows."""
    fast, made, _ = _both(monkeypatch, hgx(4, "dgx-h100", gpus_per_host=4), "allreduce", algorithm, 3 * 2**22 + 5)
    assert fast.engine == "fast:events"
    assert any(e._core is not None for e in made)


def _two_phases_at_once() -> Any:
    """Six hosts on two leaves under one spine (0-2 on one leaf, 3-5 on the other): 0 -> 3 at every step,
    1 -> 4 from step 1 on, each phase one step. Both cross the one uplink (two senders on it: no message is
    private), so 0 -> 3 of step s and 1 -> 4 of step s + 1 share it from the first instant on and finish
    together: one network wake-up ends both, and ranks 0 and 3 (phase s + 1) and 1 and 4 (phase s + 2)
    begin at once, each group launching a flow."""
    from sim.program import Step, StepProgram

    both = [([0, 1], [3, 4])] * 4
    steps = [Step.make([0], [3], 2.0**20, endpoints=6)] + [
        Step.make(src, dst, 2.0**20, endpoints=6) for src, dst in both
    ]
    return StepProgram(6, tuple((step, 1) for step in steps))


def test_a_begin_launches_its_phase_groups_upwards(monkeypatch):
    """The core's begin launches each phase's group of ranks in the Python lines' order, phase by phase
    upwards (``_begin``'s ``np.unique`` of the phases): here two groups of one begin both hand flows to
    the network, so the launches' sequence shows the order (a core launching them downwards fails)."""
    graph = leaf_spine(2, 3, 1, "100Gbps", "100Gbps", "1us")
    runs = []
    for core in (True, False):
        with monkeypatch.context() as m:
            m.setattr(fastpath, "_FAST_CORE", core)
            runs.append(_executor_run(m, graph, _two_phases_at_once()))
    (end, launches, ex), (ref_end, ref_launches, ref_ex) = runs
    assert ex._core is not None and ref_ex._core is None and ex.private == 0
    assert repr(end) == repr(ref_end)
    assert launches == ref_launches
    # the begins after the first that launch both groups at one instant: 0 -> 3 (the lower phase) first
    instants = sorted({t for t, _ in launches})[1:]
    order = [[what[1] for t, what in launches if t == at] for at in instants]
    assert len(order) == 4 and all(srcs == [0, 1] for srcs in order[:3])


def _executor_run(
    m: pytest.MonkeyPatch, graph: Any, program: Any, gamma: float = 0.0, scale: Any = None
) -> tuple[float, list[Any], Any]:
    """The program alone on the graph under a FastExecutor: the end, the network's launches (the clock
    and the (path, source) pairs), the executor."""
    from sim.cluster import Cluster
    from sim.network import Network

    env = simpy.Environment()
    cluster = Cluster(graph)
    net = Network(env, cluster)
    launches: list[Any] = []
    m.setattr(fastpath, "_FAST_LAUNCH", False)  # (the launches through the spied Python lines)
    for name in ("launch", "launch_one"):
        method = getattr(network.Network, name)

        def spying(self: Any, *a: Any, _method: Any = method, **k: Any) -> Any:
            launches.append((self.env.now, tuple(np.atleast_1d(a[0]).tolist() + np.atleast_1d(a[1]).tolist())))
            return _method(self, *a, **k)

        m.setattr(network.Network, name, spying)
    scale = np.ones(program.endpoints) if scale is None else scale
    ex = fastpath.FastExecutor(net, program, gamma, scale, alone=True)
    env.run(env.process(ex.run()))
    return env.now, launches, ex


def _in_flight(ex: Any) -> list[Any]:
    """The executor's private messages in flight as the Python lines keep them: (arrival, [(a lone
    message's batch?, its columns), ...]) per bucket, in the dict's order (the core's handed over)."""
    return [
        (when, [(isinstance(b[0], int), [np.atleast_1d(c).tolist() for c in b]) for b in bucket])
        for when, bucket in ex._all_arrivals().items()
    ]


@pytest.mark.parametrize("hosts, leaves", [(8, 2), (4, None)])
def test_the_cores_arrivals_handed_over_as_the_python_lines_keep_them(monkeypatch, hosts, leaves):
    """The core holds its private arrivals' buckets itself and hands them over into ``_arrivals`` before
    a Python line reads them (each snapshot of the steady-state detection, the jump), taking them back
    at its next send or arrival: at every snapshot the buckets -- their keys, their order, their batches'
    bounds and kinds -- are the Python lines' own, and so are the count the detection's digest uses, the
    network's flows and the executor's private count (which the core adds up until Python runs). Handed
    over at every instant the reference rank moves on as well, the run is still the Python lines' own."""
    graph = dgx(
        hosts=hosts, gpus_per_host=4, ecmp="hash", **({"hosts_per_leaf": leaves, "spines": 2} if leaves else {})
    )
    seen: dict[bool, list[Any]] = {True: [], False: []}
    runs: dict[bool, Any] = {}
    snapshot, after = fastpath.FastExecutor._snapshot, fastpath.FastExecutor._after
    for core in (True, False):

        def spying(self: Any, s0: int, _core: bool = core) -> Any:
            seen[_core].append(("snapshot", self.env.now, _in_flight(self)))
            return snapshot(self, s0)

        def counting(self: Any, _core: bool = core) -> None:
            s0 = int(self.step[self.ref])
            # (the core calls _after only then, and not where it looks less often: that skip the core makes)
            if s0 != self._seen0 and not (self._misses > 64 and s0 < self.total and s0 % 64 > fastpath._MAX_PERIOD):
                held = self._core.held() if self._core is not None else 0
                count = sum(np.size(b[0]) for bucket in self._arrivals.values() for b in bucket)
                flows, private = self.net.flows, self.private
                seen[_core].append(("after", self.env.now, held + count, flows, private, _in_flight(self)))
            after(self)

        with monkeypatch.context() as m:
            m.setattr(fastpath.FastExecutor, "_snapshot", spying)
            m.setattr(fastpath.FastExecutor, "_after", counting)
            runs[core] = _run(
                monkeypatch, core, graph, "allreduce", "ring:order=rank", 2**22 + 7, engine="fast", gamma=1e-11
            )
    assert seen[True] == seen[False]
    (fast, made, _), (ref, _, _) = runs[True], runs[False]
    assert repr(fast.time_s) == repr(ref.time_s) and fast.events == ref.events and made[-1]._core is not None
    snaps = [s for s in seen[True] if s[0] == "snapshot"]
    assert snaps and any(s[2] for s in snaps)
    assert any(len(bucket) > 1 or not bucket[0][0] for s in snaps for _, bucket in s[2])  # batches of lists
    # lone messages (a bucket of one batch of ints) among them on the non-blocking fabric
    assert any(len(bucket) == 1 and bucket[0][0] for s in snaps for _, bucket in s[2]) == (leaves is None)


def _hashed_dgx() -> Any:
    """Four DGX hosts of four GPUs, spines hashed: the rank-order ring's hops across the rails meet on
    the spines by chance (routed by destination, dgx's default, they would not)."""
    return dgx(hosts=4, gpus_per_host=4, ecmp="hash")


def test_arrivals_taken_back_and_handed_over_unchanged(monkeypatch):
    """Buckets of every kind the Python lines make -- a lone message's ints, lists, arrays (a jump's),
    several batches under one key -- taken into the core (``take_back``, what its next send or arrival
    does after a hand-over) and handed over again (``export``) come back as they were, in their order."""
    _, made, _ = _run(monkeypatch, True, _hashed_dgx(), "allreduce", "ring:order=rank", 2**20, engine="fast")
    ex = made[-1]
    assert ex._core is not None and ex._core.held() == 0 and not ex._arrivals
    arrivals = {
        0.5: [(1, 2, 7, 3, 64.0)],
        0.25: [([0, 4], [1, 5], [7, 7], [2, 9], [8.0, 16.0]), (3, 4, 8, 1, 32.0)],
        1.0: [(np.array([6]), np.array([7]), np.array([9]), np.array([4]), np.array([1.5]))],
        0.75: [(2, 3, 7, 5, 2.0), (5, 6, 7, 6, 4.0), ([1], [2], [8], [0], [0.5])],
    }
    ex._arrivals = {when: list(bucket) for when, bucket in arrivals.items()}
    want = _in_flight(ex)
    ex._core.take_back()
    assert ex._arrivals == {} and ex._core.held() == 8
    assert _in_flight(ex) == want and ex._core.held() == 0
    assert [isinstance(b[0], int) for b in ex._arrivals[0.75]] == [True, True, False]
    ex._arrivals = {}


def test_windows_widened_by_the_python_lines_in_the_middle_of_the_cores_work(monkeypatch):
    """Rank 0 sends rank 1 a message a step (128 KiB), 40 steps, and waits only for it to arrive; rank 1
    reduces each one, ten times slower: its messages arrive ever more steps early, and the Python lines
    widen the early windows (new arrays) in the middle of the core's work on such an arrival, after which
    rank 0 begins its next step there with an early message of rank 5's to count (5 sends it 64 KiB a
    step and waits for nothing else): the core must use the new arrays -- the same end, counts and
    windows as the Python lines. (Ranks 2 and 3 send to 4 meanwhile, sharing its link: contention, so
    the events run, not the max-plus recurrence.)"""
    from sim.program import Step, StepProgram

    step = Step.make([0, 2, 3, 5], [1, 4, 4, 0], [2.0**17, 2.0**16, 2.0**16, 2.0**16], [2.0**16, 0, 0, 0], endpoints=6)
    program = StepProgram(6, ((step, 40),))
    runs = []
    for core in (True, False):
        with monkeypatch.context() as m:
            m.setattr(fastpath, "_FAST_CORE", core)
            runs.append(_executor_run(m, star(6, "100Gbps", "1us"), program, 1e-9, np.array([2.0, 10, 1, 1, 1, 1])))
    (end, _, ex), (ref_end, _, ref_ex) = runs
    assert ex._core is not None and ex.private == 80 and ex.window > 8
    assert repr(end) == repr(ref_end)
    assert (ex.private, ex.window, ex.finished, ex.extrapolated_steps) == (
        ref_ex.private,
        ref_ex.window,
        ref_ex.finished,
        ref_ex.extrapolated_steps,
    )
    assert ex.early_count.tolist() == ref_ex.early_count.tolist()


def test_what_the_core_read_is_read_again_after_python_ran(monkeypatch):
    """The core reads an attribute once while no Python line runs: a value Python sets between two of
    its calls (here the last reference step ``_after`` saw) is the one the next call uses."""
    _, made, _ = _run(monkeypatch, True, _hashed_dgx(), "allreduce", "ring:order=rank", 2**20, engine="fast")
    ex = made[-1]
    assert ex._core is not None
    calls: list[int] = []
    ex._after = lambda: calls.append(ex._seen0)
    ex._seen0 = int(ex.step[ex.ref])
    ex._core.after()  # the reference's step unchanged: nothing to do
    ex._seen0 = -5
    ex._core.after()
    assert calls == [-5]


def test_a_state_that_keeps_changing_looked_at_less_often_by_the_core(monkeypatch):
    """A rank-order ring of 64 GPUs on hashed spines (256 MiB) never repeats its state: past 64 misses
    ``_after`` looks at one run of reference steps in 64 and only notes the others (``_seen0``). The core
    notes those itself, without calling ``_after``: fewer calls, and the run ends with the Python lines'
    bookkeeping -- the last step seen, the misses, the digests kept -- and results."""
    graph = dgx(hosts=8, gpus_per_host=8, ecmp="hash")
    calls: dict[bool, int] = {True: 0, False: 0}
    runs = {}
    after = fastpath.FastExecutor._after
    for core in (True, False):

        def counting(self: Any, _core: bool = core) -> None:
            calls[_core] += 1
            after(self)

        with monkeypatch.context() as m:
            m.setattr(fastpath.FastExecutor, "_after", counting)
            runs[core] = _run(monkeypatch, core, graph, "allreduce", "ring:order=rank", 2**28, engine="fast")
    (fast, made, _), (ref, ref_made, _) = runs[True], runs[False]
    ex, ref_ex = made[-1], ref_made[-1]
    assert ex._core is not None and ref_ex._core is None and ref_ex._misses > 64 and not ref_ex.extrapolated_steps
    assert (ex._seen0, ex._misses) == (ref_ex._seen0, ref_ex._misses)
    assert [(s, d) for s, d, _ in ex._history] == [(s, d) for s, d, _ in ref_ex._history]
    assert (repr(fast.time_s), fast.events) == (repr(ref.time_s), ref.events)
    assert 0 < calls[True] < 130 < calls[False]  # (the reference's 126 steps: most skipped past 64 misses)


@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_the_cores_early_windows_and_digests_are_the_python_lines(monkeypatch, gamma):
    """What the core makes for the steady-state detection -- a snapshot's early windows (``Fast.early_window``:
    the entries with a count, their positions, counts and last arrivals less t0, the furthest step counted
    for) and the digest of the state (``Fast.digest``) -- is at every call what the Python lines make."""
    graph = dgx(hosts=4, gpus_per_host=4, ecmp="hash")
    windows: list[bool] = []
    digests: list[bool] = []
    early_window = fastpath.FastExecutor._early_window

    def both(self: Any, t0: float) -> Any:
        got = early_window(self, t0)
        core, self._core = self._core, None
        try:
            ref = early_window(self, t0)
        finally:
            self._core = core
        same = all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(got[:3], ref[:3], strict=True))
        windows.append(core is not None and same and got[3] == ref[3])
        return got

    class Spy:
        """The core, its digest compared with the Python lines' (the rest handed through)."""

        def __init__(self, core: Any, ex: Any) -> None:
            self.core, self.ex = core, ex

        def __getattr__(self, name: str) -> Any:
            return getattr(self.core, name)

        def digest(self, s0: int, finished: int) -> Any:
            ex = self.ex
            live = ex.step < ex.total
            relative = np.where(live, ex.step - s0, finished)
            active, waiting = ex.net.in_flight(ex.owner)
            private = sum(np.size(b[0]) for bucket in ex._arrivals.values() for b in bucket) + self.core.held()
            shape = (len(active), len(waiting), private)
            ref = hash((relative.tobytes(), ex.send_left.tobytes(), ex.recv_left.tobytes(), shape))
            got = self.core.digest(s0, finished)
            digests.append(got == ref)
            return got

    after = fastpath.FastExecutor._after

    def spied(self: Any) -> None:
        core = self._core
        if core is not None and not isinstance(core, Spy):
            self._core = Spy(core, self)
        try:
            after(self)
        finally:
            if isinstance(self._core, Spy):
                self._core = self._core.core

    monkeypatch.setattr(fastpath.FastExecutor, "_early_window", both)
    monkeypatch.setattr(fastpath.FastExecutor, "_after", spied)
    simulate(graph, "allreduce", "ring:order=rank", 2**22 + 7, engine="fast", gamma=gamma)
    assert len(windows) > 2 and all(windows)
    assert len(digests) > 2 and all(digests)


# ---------------------------------------------------------------------- the core's launch of flows


def _launched(
    monkeypatch: pytest.MonkeyPatch, on: bool, *args: Any, **kw: Any
) -> tuple[Any, list[Any], list[Any], Any]:
    """The run with the core's launch of flows on or off (the core's per-message lines on either way): the
    result, every wake-up (``sim.network._WAKE_LOG``), the executors' state at the end (their per-slot
    messages, their network's slot arrays, free stack and flows) and the Python launch lines called."""
    made: list[Any] = []
    called: list[Any] = []
    log: list[Any] = []
    with monkeypatch.context() as m:
        m.setattr(fastpath, "_FAST_LAUNCH", on)
        m.setattr(network, "_WAKE_LOG", log)
        m.setattr(fastpath.FastExecutor, "__init__", _recording(made))
        for name in ("_launch_flows", "_launch_flow_one"):
            m.setattr(fastpath.FastExecutor, name, _spy(getattr(fastpath.FastExecutor, name), name, called))
        result = simulate(*args, **kw)
    state = [
        (
            [getattr(e, a).tolist() for a in ("f_src", "f_dst", "f_step")],
            [getattr(e.net, a).tolist() for a in ("_remaining", "_bytes", "_path", "_bound", "_owner", "_gid")],
            list(e.net._free),
            e.net.flows,
            e.net.wakeups,
            (e.private, e.extrapolated_steps, e.finished, e.end_time),
        )
        for e in made
    ]
    return result, log, state, called


def _launch_both(monkeypatch: pytest.MonkeyPatch, *args: Any, **kw: Any) -> list[Any]:
    """The core's launch and the Python lines' give the same run, wake-up by wake-up, and leave the same
    state; returns the Python launch lines the core's run still called."""
    fast, log, state, called = _launched(monkeypatch, True, *args, **kw)
    ref, ref_log, ref_state, ref_called = _launched(monkeypatch, False, *args, **kw)
    _same(fast, ref)
    assert (repr(fast.time_s), fast.events, fast.engine) == (repr(ref.time_s), ref.events, ref.engine)
    assert log == ref_log
    assert state == ref_state
    assert len(called) <= len(ref_called)
    return called, ref_called


@pytest.mark.parametrize("graph, algorithm", UNIFORM + CONGESTED)
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
def test_the_cores_launch_is_the_python_lines(monkeypatch, graph, algorithm, gamma):
    """The flows of a phase without bounds launched in C (fast_launch_c) as the Python lines launch them:
    the same slots, per-slot arrays, start times (buckets) and wake-ups; the Python lines called only for the
    first launch (the network's private lane still open)."""
    called, ref_called = _launch_both(monkeypatch, graph, "allreduce", algorithm, 2**22 + 7, engine="fast", gamma=gamma)
    assert len(called) <= 1  # (the first launch, which closes the network's private lane: the Python lines)
    assert len(called) == len(ref_called) == 0 or len(called) < len(ref_called)


def test_the_cores_launch_on_a_congested_rank_ring_launches_flows(monkeypatch):
    """The rank-order ring on a hashed fabric (ring-rank-256's kind) launches flows of one and of several
    messages, all in C but the first."""
    graph = dgx(hosts=16, gpus_per_host=4, ecmp="hash")
    called, ref_called = _launch_both(monkeypatch, graph, "allreduce", "ring:order=rank", 2**22 + 7, engine="fast")
    assert {"_launch_flows", "_launch_flow_one"} <= {c[0] for c in ref_called}
    assert len(called) <= 1 < len(ref_called)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("algorithm", ["ring:order=rank", "ring", "halving-doubling", "tree:chunks=3"])
def test_the_cores_launch_with_stragglers_and_slow_links(monkeypatch, seed, algorithm):
    _launch_both(monkeypatch, straggler_graph(seed), "allreduce", algorithm, float(2**20 + 17 * seed), gamma=1e-11)


@pytest.mark.parametrize("seed", range(40))
def test_the_cores_launch_on_random_cases(monkeypatch, seed):
    c = case(seed)
    _launch_both(monkeypatch, c.graph, c.collective, c.algorithm, c.size, ranks=c.ranks, gamma=c.gamma, engine="auto")


@pytest.mark.parametrize("algorithm", ["nccl-tree", "nvls-tree", "nccl"])
def test_the_cores_launch_of_phase_groups_at_once(monkeypatch, algorithm):
    _launch_both(monkeypatch, hgx(4, "dgx-h100", gpus_per_host=4), "allreduce", algorithm, 3 * 2**22 + 5)


def test_the_cores_launch_leaves_bounded_phases_to_the_python_lines(monkeypatch):
    """A phase whose messages carry a rate bound: its flows go through the Python lines (the core's launch
    writes no bound), and the run is theirs."""
    from sim.program import Step, StepProgram

    graph = leaf_spine(2, 3, 1, "100Gbps", "100Gbps", "1us")
    bound = np.full(2, 3e9)
    steps = [
        Step.make([0, 1], [3, 4], 2.0**20, endpoints=6),
        Step.make([0, 1], [3, 4], 2.0**20, endpoints=6, bound=bound),
    ]
    program = StepProgram(6, tuple((step, 2) for step in steps))
    runs = []
    for on in (True, False):
        with monkeypatch.context() as m:
            m.setattr(fastpath, "_FAST_LAUNCH", on)
            called: list[Any] = []
            for name in ("_launch_flows", "_launch_flow_one"):
                m.setattr(fastpath.FastExecutor, name, _spy(getattr(fastpath.FastExecutor, name), name, called))
            end, _, ex = _executor_run_plain(graph, program)
            runs.append((repr(end), ex.net.flows, ex.f_src.tolist(), ex.net._bound.tolist(), len(called)))
    (end, flows, f_src, bounds, n), ref = runs
    assert (end, flows, f_src, bounds) == ref[:4]
    assert 0 < n < ref[4]  # the bounded phase's launches in Python, the other's in C
    assert 3e9 in bounds  # (the last flows', the bounded phase's, left in their slots)


def _executor_run_plain(graph: Any, program: Any) -> tuple[float, None, Any]:
    from sim.cluster import Cluster
    from sim.network import Network

    env = simpy.Environment()
    net = Network(env, Cluster(graph))
    ex = fastpath.FastExecutor(net, program, 0.0, np.ones(program.endpoints), alone=True)
    env.run(env.process(ex.run()))
    return env.now, None, ex
