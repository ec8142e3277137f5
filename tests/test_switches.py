"""The engine's switches (``sim._cores.SWITCHES``): every shortcut the engine takes in place of reference lines
is registered, and turning any one of them off leaves every result the same -- the simulated time to the
last bit, the flows and every link's bytes -- on a mix of cases that reach them: NCCL's schedules and the
congested ring at message level, the parameter server counted and as processes, a dataflow tree, a
congested step program on the fast path and the flow classes. (Each switch's own file holds it to its
reference in detail; this one makes sure none is left out and none changes a result on its own.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import sim
from sim._cores import SWITCHES, switches
from sim.simulate import simulate

CASES = [
    ("hgx:preset=dgx-h100,hosts=2", "allreduce", "nccl", 64e6, "message", 0.0),
    ("hgx:preset=dgx-h100,hosts=2", "allreduce", "nvls-tree", 8e6, "message", 0.0),
    ("dgx:hosts=4,ecmp=hash", "allreduce", "ring:order=rank", 16e6, "message", 1e-10),
    ("dgx:hosts=2", "allreduce", "tree", 4e6, "message", 0.0),
    ("dgx:hosts=4,ecmp=hash", "allreduce", "ps:shards=4", 8e6, "message", 0.0),
    ("dgx:hosts=4,ecmp=hash", "allreduce", "ps:shards=4", 8e6, "auto", 0.0),
    ("dgx:hosts=4,ecmp=hash", "allreduce", "double-binary-tree:chunks=8", 16e6, "fast", 0.0),
    ("dgx:hosts=4,ecmp=hash", "allreduce", "ring:order=rank", 16e6, "fast", 0.0),
    ("dgx:hosts=4,ecmp=hash", "allgather", "ring:order=rank", 16e6, "fast", 0.0),
]


def outcome(case):
    topo, collective, spec, size, engine, gamma = case
    r = simulate(topo, collective, spec, size, engine=engine, gamma=gamma)
    return repr(r.time_s), r.flows, r.link_bytes


@pytest.fixture(scope="module")
def reference():
    return [outcome(case) for case in CASES]


@pytest.mark.parametrize("name", SWITCHES)
def test_each_switch_off_changes_no_result(monkeypatch, reference, name):
    if not switches()[name]:
        pytest.skip(f"{name} is off already (COLLSIM_PURE=1)")
    module, attr = name.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), attr, False)
    for case, want in zip(CASES, reference, strict=True):
        assert outcome(case) == want, (name, case)


# a module-level switch as the engine's modules write them: on by default, or on unless COLLSIM_PURE
_SWITCH = re.compile(r"^(_[A-Z][A-Z0-9_]*)(?:: [^=]+)? = (?:True|not PURE|_PLAIN_RANKS)(?:\s+#.*)?$", re.M)


def test_switches_are_on_by_default():
    assert all(switches().values()) or sim._cores.PURE


def test_every_switch_is_registered():
    root = Path(sim.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        module = ".".join(("sim", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        found |= {f"{module}.{name}" for name in _SWITCH.findall(path.read_text())}
    assert found == set(SWITCHES)
