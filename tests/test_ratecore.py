"""The compiled core of the rate computation (sim/_ratecore.c) against the Python path of sim/rates.py:
the same rates at every computation, to the bit, on random congested flow sets -- parts spread along
full links and whole components, parts solved by the scalar rule and by numpy's, flows with and without
rate bounds -- and COLLSIM_PURE=1 turns it off. (Skipped where the extension is not built: the Python
path is then the only one.)"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import sim.rates as rates
from sim.cluster import Cluster
from sim.network import Network

from .test_engine import run_flows

core = pytest.mark.skipif(rates._ratecore is None, reason="sim._ratecore is not built (no C compiler)")

OVERSUBSCRIBED = "leaf-spine:leaves=8,hosts_per_leaf=8,spines=2,bandwidth=100Gbps,uplink_bandwidth=100Gbps"
#: hashed ECMP (dgx routes by destination by default): flows meet on the spines by chance
DGX = "dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=2,ecmp=hash"
set_rates = Network._set_rates


def _flows(cluster: Cluster, seed: int, n: int) -> list[tuple]:
    rng = random.Random(seed)
    flows = []
    for _ in range(n):
        src, dst = rng.sample(range(cluster.size), 2)
        bound = rng.choice([None, None, None, rng.uniform(2e9, 2e10)]) if seed % 2 else None
        size = rng.choice([2**14, 2**18, 2**20, 2**22]) * rng.uniform(0.5, 2)
        flows.append((rng.uniform(0, 5e-3), src, dst, size, bound))
    return flows


def _run(cluster: Cluster, flows: list[tuple], monkeypatch) -> tuple[list, list, Network]:
    """Completion times, every rate handed to the network (slots, rates) in order, and the network."""
    applied: list[tuple[list[int], list[float]]] = []

    def recording(self, slots, new):
        applied.append((list(np.asarray(slots).tolist()), list(np.asarray(new, dtype=float).tolist())))
        set_rates(self, slots, new)

    monkeypatch.setattr(Network, "_set_rates", recording)
    done, net = run_flows(cluster, flows)
    return done, applied, net


def core_against_python(topology: str, seed: int, spread: bool, scalar_max: int, monkeypatch) -> Network:
    """Run ``_flows(seed, 400)`` on ``topology`` through the compiled core and through the Python path and
    hold them equal: every computation's slots and rates bit for bit, the completion times, the counts of
    partial re-solves, regrown parts and solves. Returns the core's network (for checks that the set reached
    what a test is about)."""
    cluster = Cluster(topology)
    flows = _flows(cluster, seed, 400)
    monkeypatch.setattr(rates, "_SPREAD", spread)
    monkeypatch.setattr(rates, "_SCALAR_MAX", scalar_max)  # 0: every part by numpy's rule (and the core's copy)
    got = {}
    for name, module in (("core", rates._ratecore), ("python", None)):
        monkeypatch.setattr(rates, "_CORE", module)
        got[name] = _run(cluster, flows, monkeypatch)
    (ends, applied, net), (ends_py, applied_py, net_py) = got["core"], got["python"]
    assert net.rates._core is not None and net_py.rates._core is None
    assert net.rates.partial == net_py.rates.partial
    assert net.rates.regrown == net_py.rates.regrown and net.rates.solves == net_py.rates.solves
    assert applied == applied_py  # every computation's slots and rates, bit for bit
    assert ends == ends_py
    assert (net.peak_load <= cluster.capacity * (1 + 1e-12)).all()
    return net


@core
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("topology", [OVERSUBSCRIBED, DGX])
@pytest.mark.parametrize(("spread", "scalar_max"), [(True, rates._SCALAR_MAX), (False, rates._SCALAR_MAX), (True, 0)])
def test_the_core_gives_the_python_paths_rates_at_every_computation(topology, seed, spread, scalar_max, monkeypatch):
    net = core_against_python(topology, seed, spread, scalar_max, monkeypatch)
    assert net.rates.partial > 0  # these seeds re-solve parts, not only whole components


@core
def test_parts_regrow_through_overfilled_links_in_the_core_too(monkeypatch):
    """The random sets above reach the core's regrowing branch (a part's new rates overfill a link it
    shares with flows outside it, checked with an exact sum), with numpy's rule and the scalar one."""
    cluster = Cluster(OVERSUBSCRIBED)
    monkeypatch.setattr(rates, "_SPREAD", True)
    monkeypatch.setattr(rates, "_CORE", rates._ratecore)
    regrown = [_run(cluster, _flows(cluster, seed, 400), monkeypatch)[2].rates.regrown for seed in range(4)]
    assert sum(regrown) > 0


@core
def test_the_cores_exact_sum_is_math_fsum():
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 10, 100):
        for scale in (1.0, 1e9, 1e-9):
            x = rng.uniform(0, 1, n) * scale
            x[::3] *= 1e16
            assert rates._ratecore.fsum(x) == math.fsum(x.tolist())
    tricky = np.array([1e16, 1.0, -1e16, 1e-16, 3.0, -(2.0**-52)])
    assert rates._ratecore.fsum(tricky) == math.fsum(tricky.tolist())
    assert rates._ratecore.fsum(np.zeros(0)) == 0.0


def test_collsim_pure_forces_the_python_path():
    code = "import sim.rates as r; print(r._CORE is None)"
    env = dict(os.environ, COLLSIM_PURE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_the_install_builds_the_core_where_it_can() -> None:
    """`make` (pip install -e) with a C compiler and Python's headers builds the core: its tests above
    must not be skipped there for want of it (a failed build would otherwise pass unnoticed)."""
    import shutil
    import sysconfig
    from pathlib import Path

    venv = Path(__file__).resolve().parents[1] / ".venv"
    made = (venv / ".installed").exists() and Path(sys.prefix).resolve() == venv.resolve()
    compiler = shutil.which(os.environ.get("CC", "cc"))
    headers = Path(sysconfig.get_paths()["include"], "Python.h").exists()
    if not (made and compiler and headers):
        pytest.skip("not this checkout's `make` install with a C compiler and Python's headers")
    assert rates._ratecore is not None, "sim._ratecore was not built by the install; run `make clean install`"
