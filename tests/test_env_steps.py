"""SimPy's event loop in the compiled core (``sim._ratecore.env_steps``, :class:`sim.simulate.CountingEnvironment`'s
``run``) against SimPy's own ``Environment.run``: the same events in the same order at the same times, the same
value returned, the same errors -- on hand-made SimPy programs that reach every line of ``Environment.step``
(callbacks, a failure defused or not, ``until`` reached, already processed, never reached, the queue running dry,
a callback that stops the run with callbacks left after it) -- and every result of the simulator the same."""

from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import simpy

from sim.network import _ops
from sim.simulate import CountingEnvironment, TimedEnvironment, simulate

simulate_module = importlib.import_module("sim.simulate")  # (the package's `simulate` is the function)

needs_core = pytest.mark.skipif(getattr(_ops, "env_steps", None) is None, reason="the compiled core is not built")


def program(env, log, fail=False, defuse=False):
    """Processes that wait, wake one another, fail and are interrupted: a log of (time, what) as they run."""

    def worker(name, delay, times):
        for k in range(times):
            yield env.timeout(delay)
            log.append((env.now, name, k))
        return name

    def failing():
        yield env.timeout(2.5)
        log.append((env.now, "fails"))
        raise ValueError("on purpose", 7)

    def sleeper():
        try:
            yield env.timeout(100)
        except simpy.Interrupt as why:
            log.append((env.now, "interrupted", why.cause))

    def boss(victim):
        yield env.timeout(3)
        victim.interrupt("wake up")
        got = yield env.all_of([env.process(worker("a", 1, 3)), env.process(worker("b", 0.5, 4))])
        log.append((env.now, "boss", sorted(got.values())))
        event = env.event()
        event.callbacks.append(lambda e: log.append((env.now, "callback 1", e.value)))
        event.callbacks.append(lambda e: log.append((env.now, "callback 2", e.value)))
        event.succeed("v")
        yield event
        return "boss done"

    victim = env.process(sleeper())
    done = env.process(boss(victim))
    env.process(worker("c", 0.75, 6))
    if fail:
        bad = env.process(failing())
        if defuse:
            bad.callbacks.append(lambda e: setattr(e, "_defused", True))
    return done


def run(env_type, until_kind, fail=False, defuse=False):
    log = []
    env = env_type()
    done = program(env, log, fail, defuse)
    until = {"event": done, "none": None, "never": env.event()}[until_kind]
    try:
        value = env.run(until=until)
        outcome = ("value", value)
    except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
        cause = exc.__cause__
        args = tuple(re.sub(r" at 0x[0-9a-f]+", "", a) if isinstance(a, str) else a for a in exc.args)
        outcome = ("raised", type(exc).__name__, args, None if cause is None else (type(cause).__name__, cause.args))
    return outcome, log, env.now


@needs_core
@pytest.mark.parametrize("until_kind", ["event", "none", "never"])
@pytest.mark.parametrize("fail,defuse", [(False, False), (True, False), (True, True)])
def test_the_loop_in_c_runs_as_simpy_does(until_kind, fail, defuse):
    ours = run(CountingEnvironment, until_kind, fail, defuse)
    simpys = run(simpy.Environment, until_kind, fail, defuse)
    assert ours == simpys
    assert ours[1], "the program logged nothing"


@needs_core
def test_the_loop_in_c_is_the_one_that_ran(monkeypatch):
    """A subclass with a step of its own runs SimPy's loop (its step called); a CountingEnvironment runs the
    compiled loop; with the switch off SimPy's loop runs."""
    calls = []
    original = simpy.Environment.step

    class Watched(CountingEnvironment):
        pass

    def watched_step(self):
        calls.append(1)
        return original(self)

    Watched.step = watched_step
    assert run(Watched, "event")[0] == ("value", "boss done")
    assert calls
    env = CountingEnvironment()
    steps = []
    real = _ops.env_steps
    monkeypatch.setattr(_ops, "env_steps", lambda *a: steps.append(1) or real(*a), raising=False)
    log = []
    done = program(env, log)
    assert env.run(until=done) == "boss done" and steps == [1]
    monkeypatch.setattr(simulate_module, "_RUN_CORE", False)
    env = CountingEnvironment()
    done = program(env, [])
    assert env.run(until=done) == "boss done" and steps == [1]


def stops(env):
    """``until`` already processed, then a run stopped by ``until`` while the event has a callback after the stop,
    then the run that resumes it: what each run returned and what ran when."""
    log, values = [], []
    first = env.timeout(1, value="x")
    values.append(env.run(until=first))
    values.append(env.run(until=first))  # processed already: its value at once
    late = env.timeout(1, value="z")
    late.callbacks.append(lambda e: log.append(("before the stop", env.now)))
    late.callbacks.append(simpy.core.StopSimulation.callback)
    late.callbacks.append(lambda e: log.append(("after the stop", env.now)))
    values.append(env.run(until=env.timeout(5, value="end")))  # stopped by `late` at 2
    log.append(("stopped", env.now))
    values.append(env.run(until=env.timeout(1, value="w")))  # the callback left runs first
    values.append(env.run())  # to the end of the events
    return values, log, env.now


@needs_core
def test_a_stop_with_callbacks_left_and_until_already_processed():
    ours, simpys = stops(CountingEnvironment()), stops(simpy.Environment())
    assert ours == simpys
    assert ours[0][:4] == ["x", "x", "z", "w"]
    assert ("after the stop", 2) in ours[1]


@needs_core
@pytest.mark.parametrize(
    "topo,spec,size,engine",
    [
        ("dgx:hosts=4,ecmp=hash", "ring:order=rank", 16e6, "message"),
        ("dgx:hosts=4,ecmp=hash", "ring:order=rank", 16e6, "fast"),
        ("hgx:preset=dgx-h100,hosts=2", "nccl", 64e6, "message"),
        ("dgx:hosts=4,ecmp=hash", "ps:shards=4", 8e6, "message"),
        ("dgx:hosts=4,ecmp=hash", "double-binary-tree:chunks=8", 16e6, "fast"),
    ],
)
def test_simulations_are_the_same_either_way(monkeypatch, topo, spec, size, engine):
    on = simulate(topo, "allreduce", spec, size, engine=engine)
    monkeypatch.setattr(simulate_module, "_RUN_CORE", False)
    off = simulate(topo, "allreduce", spec, size, engine=engine)
    assert repr(on.time_s) == repr(off.time_s)
    assert (on.events, on.flows) == (off.events, off.flows)
    assert on.link_bytes == off.link_bytes


SIGINT_SCRIPT = """
import signal, sys
# Ctrl-C raises KeyboardInterrupt here even where the suite was started with SIGINT ignored (a shell's
# background job without job control), which Python would otherwise inherit and never raise
signal.signal(signal.SIGINT, signal.default_int_handler)
from sim import simulate
print("started", flush=True)
try:
    simulate("dgx:hosts=128,ecmp=hash", "allreduce", "ring:order=rank", "1GiB", engine="message")
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@needs_core
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_interrupts_a_run_in_the_compiled_loop():
    """A SIGINT during a long message-level run (2.6 M events, ~9 CPU s: long enough that a loaded machine's
    delay of the signal cannot outlast it, as 824k events once did) ends it with KeyboardInterrupt, as it
    ends SimPy's loop of Python lines: the compiled loop looks for signals between steps."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGINT_SCRIPT],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(1.0)  # into the run (its routes and ranks are built in well under a second)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)  # (a guard against a hang, not a timing)
    finally:
        proc.kill()
    assert out.strip() == "interrupted"


@needs_core
def test_a_deadline_is_looked_at_before_every_step_in_the_compiled_loop(monkeypatch):
    """TimedEnvironment (a deadline in force) runs in the compiled loop too, its look at the clock before every
    step included: far off, the run is SimPy's; passed, it ends with SimulationTimeout before the next step."""
    from sim.deadline import Deadline, SimulationTimeout

    calls = []
    real = _ops.env_steps
    monkeypatch.setattr(_ops, "env_steps", lambda *a: calls.append(1) or real(*a), raising=False)
    far = Deadline(seconds=3600.0, at=time.time() + 3600.0)
    assert run(lambda: TimedEnvironment(far), "event") == run(simpy.Environment, "event")
    assert calls == [1]
    past = Deadline(seconds=1.0, at=time.time() - 1.0)
    env = TimedEnvironment(past)
    log = []
    done = program(env, log)
    with pytest.raises(SimulationTimeout, match="did not finish within --timeout 1 s"):
        env.run(until=done)
    assert log == [] and env.now == 0 and calls == [1, 1]
