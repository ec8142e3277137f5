"""The simulator's front door: one collective, one algorithm, one size -> a :class:`SimResult`.

>>> r = simulate("star:hosts=4,bandwidth=100Gbps,latency=1us", "allreduce", "ring", 2**20)
>>> round(r.time_s * 1e6, 3), round(r.time_s / r.closed_form_s, 12)
(137.829, 1.0)
"""

from __future__ import annotations

import heapq
import itertools
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx
import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import Event

from . import deadline as _deadline
from . import network as _network
from ._gc import paused_gc
from .algorithms import Algorithm
from .classes import FanExecutor, fan_plan
from .cluster import Cluster
from .collectives import DTYPES
from .dataflow import Dataflow, DataflowExecutor
from .errors import ConfigError, RunError
from .fastpath import FastExecutor
from .linkmodel import MAX_GAMMA, LinkModel
from .network import Network
from .prepare import Run, prepare
from .program import StepProgram
from .results import SimResult
from .runtime import DataCheck, Job
from .symmetry import quotient

__all__ = [
    "MAX_GAMMA",
    "CountingEnvironment",
    "TimedEnvironment",
    "closed_form",
    "execute",
    "new_environment",
    "simulate",
    "sweep",
]


#: SimPy's event loop (Environment.run's ``while True: self.step()``) in the compiled core where it is built
#: (``sim._ratecore.env_steps``: Environment.step's lines, and the wake-up's and the compiled ranks' callbacks called
#: without Python); tests turn it off to compare
_RUN_CORE = True
#: the network's wake-up as defined (a subclass's or a patched ``_wake`` / ``_on_timeout`` is called, not taken for it)
_ON_TIMEOUT, _WAKE = Network._on_timeout, Network._wake


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that can say how many events it has scheduled (the simulator's own cost), and
    runs SimPy's own steps in the compiled core where it is built (:data:`_RUN_CORE`)."""

    def run(self, until: Any = None) -> Any:
        """:meth:`simpy.Environment.run` -- to an event (or to the end of the events) with its steps in the
        compiled core, where it is built and this environment's step is SimPy's own or
        :class:`TimedEnvironment`'s (a number, or another step: SimPy's loop)."""
        steps = getattr(_network._ops, "env_steps", None)
        step = type(self).step
        if (
            steps is None
            or not _RUN_CORE
            or (step is not simpy.Environment.step and step is not TimedEnvironment.step)
            or (until is not None and not isinstance(until, Event))
        ):
            return super().run(until)
        # simpy.Environment.run's lines for an event (or None), its loop in C
        if until is not None:
            if until.callbacks is None:  # already processed
                return until.value
            until.callbacks.append(StopSimulation.callback)
        limit = (time.time, self._at, self._expired) if isinstance(self, TimedEnvironment) else None
        ctx = (heapq.heappop, EmptySchedule, StopSimulation, _ON_TIMEOUT, _WAKE, vars(_network), limit)
        try:
            failed = steps(self, ctx)  # returns only with an event that failed and was not defused
            # (Environment.step's crash: a copy of the failure with a new traceback)
            exc = type(failed._value)(*failed._value.args)
            exc.__cause__ = failed._value
            raise exc
        except StopSimulation as exc:
            return exc.args[0]  # == until.value
        except EmptySchedule:
            if until is not None:
                assert not until.triggered
                raise RuntimeError(f'No scheduled events left but "until" event was not triggered: {until}') from None
        return None

    @property
    def scheduled(self) -> int:
        # SimPy numbers every scheduled event from one counter; peeking costs nothing per event
        # (an override of schedule() cost ~4% of a run).
        counter = getattr(self, "_eid", None)
        if counter is None:  # pragma: no cover - a SimPy without the counter
            return 0
        value = next(counter)
        self._eid = itertools.count(value)
        return value


class TimedEnvironment(CountingEnvironment):
    """A :class:`CountingEnvironment` that looks at the wall clock before every event and stops with
    :class:`~sim.deadline.SimulationTimeout` once the deadline in force has passed (a look costs ~0.2 us,
    an event 5 us to many ms, so the bound overshoots by at most one event). Used only while a deadline
    is set (:func:`new_environment`), so unbounded runs pay nothing."""

    def __init__(self, bound: _deadline.Deadline, initial_time: float = 0.0) -> None:
        super().__init__(initial_time)
        self._at = bound.at
        self._bound = bound

    def _expired(self) -> None:
        raise _deadline.SimulationTimeout(self._bound.message())

    def step(self) -> None:
        if time.time() > self._at:
            self._expired()
        super().step()


def new_environment(initial_time: float = 0.0) -> CountingEnvironment:
    """The environment for a simulation (its clock starting at ``initial_time``): bounded by the
    deadline in force, if any."""
    bound = _deadline.current()
    if bound is None:
        return CountingEnvironment(initial_time)
    _deadline.check()
    return TimedEnvironment(bound, initial_time)


def _uniform_alpha_beta(cluster: Cluster, p: int) -> tuple[float, float] | None:
    """α, β when every rank pair (as seen from rank 0, both ways) costs the same, else None (also under
    a link model whose parameters depend on the message size: no single α-β pair then)."""
    if p < 2:
        return None
    model = cluster.message_model
    if model.size_dependent:
        return None
    first = model.alpha_beta(0, 1, 1.0)
    # the last rank first: on a fabric of racks or hosts its pairs are the first to differ from (0, 1)'s,
    # so a cluster without one α-β pair is told after a pair or two, not after a rack's worth routed one by one
    for d in (p - 1, *range(1, p - 1)):
        if model.alpha_beta(0, d, 1.0) != first or model.alpha_beta(d, 0, 1.0) != first:
            return None
    if len(set(cluster.overhead[:p].tolist())) != 1:
        return None
    return first


def closed_form(algorithm: Algorithm, cluster: Cluster, p: int, nbytes: float, gamma: float = 0.0) -> float | None:
    """The algorithm's closed form with α, β read off the cluster, where one α-β pair fits all ranks."""
    ab = _uniform_alpha_beta(cluster, p)
    if ab is None:
        return None
    return algorithm.cost(p, nbytes, ab[0], ab[1], gamma)


def simulate(
    topology: str | os.PathLike[str] | nx.Graph | Cluster | Run,
    collective: str = "allreduce",
    algorithm: str | Algorithm | None = None,
    size: float | str = 2**20,
    *,
    ranks: int | None = None,
    dtype: str = "float",
    gamma: float | None = None,
    root: int = 0,
    check: bool = False,
    check_links: bool = False,
    until: float | None = None,
    engine: str = "auto",
    timeout: float | None = None,
    link_model: LinkModel | None = None,
) -> SimResult:
    """Simulate one collective of ``size`` bytes (nccl-tests' size convention).

    Parameters
    ----------
    topology : spec, path, graph, Cluster or Run
        The cluster (a Cluster is reused as is, with its route cache); a :class:`~sim.prepare.Run`
        from :func:`sim.prepare` is simulated as prepared (the other options are then ignored).
    collective, algorithm : str
        E.g. ``"allreduce"`` and ``"ring"`` (see :func:`sim.algorithms.algorithm_names`); the default
        algorithm follows the collective (:func:`sim.algorithms.default_algorithm`).
    size : float or str
        Bytes: the per-rank buffer for all-reduce/broadcast/reduce, the total for the gathering ones.
    ranks : int, optional
        Use the first ``ranks`` GPUs.
    gamma : float, optional
        Seconds per byte of reduction arithmetic (default: the link model's γ, else 0).
    check : bool
        Track every contribution symbolically and count the ranks that end with wrong data.
    check_links : bool
        Verify that no link direction ever carries more than its capacity.
    until : float, optional
        Stop with :class:`RunError` if the collective has not finished by this simulated time.
    engine : {"auto", "fast", "message"}
        ``message`` runs every rank as a SimPy process and every message as its own flow; ``fast`` runs
        the algorithm's step program vectorized over ranks (same times; see :mod:`sim.fastpath`) or its
        dataflow (:mod:`sim.dataflow`, the pipelined trees);
        ``auto`` takes the fast path where the algorithm has one and the data check is off.
    timeout : float, optional
        Wall-clock seconds the call may take (building the cluster included) before it stops with
        :class:`~sim.deadline.SimulationTimeout`; a deadline already in force
        (:func:`sim.deadline.deadline`, ``--timeout``) applies too.
    link_model : LinkModel, optional
        How messages and links depart from the topology's figures (:mod:`sim.linkmodel`); default: the
        cluster's own (nominal unless it was built with one).
    """
    with paused_gc(), _deadline.deadline(timeout):
        if isinstance(topology, Run):
            return topology.simulate(size)
        run = prepare(
            topology,
            collective,
            algorithm,
            ranks=ranks,
            dtype=dtype,
            root=root,
            gamma=gamma,
            engine=engine,
            check=check,
            check_links=check_links,
            until=until,
            link_model=link_model,
        )
        return run.simulate(size)


def execute(run: Run, size: float) -> SimResult:
    """Simulate the prepared ``run`` at ``size`` bytes (already checked: :func:`sim.units.check_size`)."""
    started = time.perf_counter()
    cluster, coll, algo, p = run.cluster, run.collective, run.algorithm, run.ranks
    gamma, root, check, until, engine = run.gamma, run.root, run.check, run.until, run.engine
    dtype = run.dtype
    program = None if engine == "message" or check else algo.program(p, size, cluster)
    if program is None and engine != "message" and not check:
        program = algo.dataflow(p, size, cluster, root)
    plan = None if program is not None or engine == "message" or check else fan_plan(algo, p, size, cluster, root)
    if engine == "fast" and program is None and plan is None:
        why = (
            "the data check needs the message-level engine" if check else f"{algo.spec} has no step program or dataflow"
        )
        raise ConfigError(f"engine fast: {why}", param="engine")

    env = new_environment()
    # a symmetric step program runs on one member of every orbit (sim.symmetry), where it checks out
    reduced = quotient(program, cluster, gamma) if isinstance(program, StepProgram) else None
    net = Network(env, cluster if reduced is None else reduced.cluster, check=run.check_links)
    job = None
    executor: FastExecutor | FanExecutor | None = None
    if program is not None:
        if isinstance(program, Dataflow):
            executor = DataflowExecutor(net, program, gamma, cluster.compute_scale)
        else:
            program = program if reduced is None else reduced.program
            executor = FastExecutor(net, program, gamma, cluster.compute_scale, alone=True)
        done = env.process(executor.run())
    elif plan is not None:
        job = Job(env, net, p, size, gamma=gamma, root=root)
        executor = FanExecutor(net, plan, gamma, cluster.compute_scale, fallback=lambda: algo.run(job))
        done = env.process(executor.run())
    else:
        data = DataCheck(coll.name, p, algo.segments_for(p, cluster), root) if check else None
        job = Job(env, net, p, size, gamma=gamma, root=root, data=data)
        done = env.process(algo.run(job))
    try:
        env.run(until=done if until is None else env.any_of([done, env.timeout(until)]))
    except RuntimeError as exc:
        if "No scheduled events left" not in str(exc):
            raise
        waiting = job.pending_receives() if job is not None else 0
        raise RunError(
            f"{coll.name} {algo.spec} deadlocked at t={env.now:.6g} s: nothing left to happen but "
            f"{waiting} receive(s) still waiting (a message that is never sent?)"
        ) from None
    if not done.triggered:
        raise RunError(f"{coll.name} {algo.spec} did not finish within {until} simulated seconds")
    if reduced is not None:
        reduced.rebook(net)
    if job is not None and job.pending_messages():
        raise RunError(f"{coll.name} {algo.spec}: {job.pending_messages()} message(s) were sent but never received")
    elapsed = float(env.now)
    wrong = len(job.data.wrong_ranks()) if check and job is not None else None

    algbw = size / elapsed / 1e9 if elapsed > 0 else float("inf")
    arc_bytes = net.arc_bytes
    busiest = net.busiest(elapsed, arc_bytes=arc_bytes)
    sent, received = net.rank_bytes()
    return SimResult(
        topology=cluster.name,
        collective=coll.name,
        algorithm=algo.spec,
        ranks=p,
        size_bytes=int(size),
        count=int(size // DTYPES[dtype]),
        dtype=dtype,
        root=root,
        time_s=elapsed,
        algbw_GBps=float(algbw),
        busbw_GBps=float(coll.busbw(algbw, p)),
        link_bytes=float(arc_bytes.sum()),
        max_link_utilization=busiest[0].utilization if busiest else 0.0,
        busiest_link=busiest[0].link if busiest else "",
        wrong=wrong,
        closed_form_s=closed_form(algo, cluster, p, size, gamma) if p <= 4096 else None,
        busiest_links=busiest,
        wall_s=time.perf_counter() - started,
        events=env.scheduled,
        flows=net.flows,
        engine="message" if executor is None or executor.mode == "message" else f"fast:{executor.mode}",
        traffic_bytes=float(sent.sum()),
        max_sent_bytes=float(sent.max()),
        max_received_bytes=float(received.max()),
        root_sent_bytes=float(sent[root]),
        root_received_bytes=float(received[root]),
    )


def sweep(
    topology: str | os.PathLike[str] | nx.Graph | Cluster,
    collective: str,
    algorithm: str | Algorithm | None,
    sizes: Iterable[float],
    *,
    ranks: int | None = None,
    **kwargs: Any,
) -> Iterator[SimResult]:
    """:func:`simulate` for each size in turn, sharing one prepared run (and its routes)."""
    timeout = kwargs.pop("timeout", None)
    run = prepare(topology, collective, algorithm, ranks=ranks, **kwargs)
    for size in sizes:
        yield simulate(run, size=size, timeout=timeout)
