"""The congested fast path's re-solves on leaf-spines (docs/performance-log.md, "lsfast"): the compiled relaxed solve
(sim/_ratecore.c) takes a link's users from the part's count and fixes a round's flows in one pass; the path table
grows its columns without ``np.resize``. The rates stay the Python path's to the bit on random congested flow sets,
the path table's contents do not depend on how it grew, and the issue's leaf-spine cases keep their results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sim.rates as rates
from sim.cluster import Cluster, _PathTable

from . import test_ratecore
from .test_ratecore import _flows, _run

core = pytest.mark.skipif(rates._ratecore is None, reason="sim._ratecore is not built (no C compiler)")

#: 4:1 oversubscribed: 8 hosts of 100 Gb/s under each leaf, two 100 Gb/s uplinks
LS4TO1 = "leaf-spine:leaves=4,hosts_per_leaf=8,spines=2,bandwidth=100Gbps,uplink_bandwidth=100Gbps"
DGX = "dgx:hosts=8,gpus_per_host=4,hosts_per_leaf=2,ecmp=hash"


@core
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    topology=st.sampled_from([LS4TO1, DGX]),
    seed=st.integers(0, 10**6),
    spread=st.booleans(),
    scalar_max=st.sampled_from([0, 4, rates._SCALAR_MAX]),
)
@example(topology=DGX, seed=1500, spread=False, scalar_max=0)  # re-solves no part (found on the 16-core machine)
def test_the_cores_relaxed_solve_is_the_python_paths_to_the_bit(topology, seed, spread, scalar_max, monkeypatch):
    """tests/test_ratecore.py's oracle on hypothesis-drawn congested flow sets (odd seeds with rate bounds): every
    computation's slots and rates, bit for bit, with parts solved by numpy's rule (``scalar_max`` 0: all of them),
    the scalar one, or both."""
    with monkeypatch.context() as patch:  # (a drawn set may re-solve no part: seed 1500 on DGX, spread off)
        test_ratecore.core_against_python(topology, seed, spread, scalar_max, patch)


@core
def test_the_random_sets_reach_parts_solved_by_numpys_rule_in_the_core(monkeypatch):
    """Not vacuous: a fixed example of the sets above solves parts of several rounds in the core."""
    cluster = Cluster(LS4TO1)
    monkeypatch.setattr(rates, "_SPREAD", True)
    monkeypatch.setattr(rates, "_SCALAR_MAX", 0)
    monkeypatch.setattr(rates, "_CORE", rates._ratecore)
    net = _run(cluster, _flows(cluster, 3, 300), monkeypatch)[2]
    assert net.rates.partial > 20


def _table(batches: list[int], one_by_one: bool) -> _PathTable:
    rng = np.random.default_rng(7)
    capacity = rng.uniform(1.0, 9.0, 64)
    table = _PathTable()
    for size in batches:
        rows = np.full((size, 5), -1, dtype=np.int64)
        lengths = rng.integers(0, 6, size)
        for i, k in enumerate(lengths.tolist()):
            rows[i, :k] = rng.choice(64, k, replace=False)
        latency = rng.uniform(0.0, 1e-6, size)
        src, dst = rng.integers(0, 100, size), rng.integers(0, 100, size)
        if one_by_one:
            for i in range(size):
                arcs = rows[i][rows[i] >= 0].tolist()
                table.add(arcs, float(latency[i]), int(src[i]), int(dst[i]), min(capacity[arcs], default=np.inf))
        else:
            table.add_many(rows, latency, src, dst, capacity)
    return table


@pytest.mark.parametrize("batches", [[1, 3, 70, 1, 2000, 5], [63, 1, 1, 64, 129]])
def test_the_path_tables_contents_do_not_depend_on_how_it_grew(batches):
    many, one = _table(batches, False), _table(batches, True)
    count = sum(batches)
    assert many.count == one.count == count and many._used == one._used
    assert many.arcs[: many._used].tolist() == one.arcs[: one._used].tolist()
    for name in ("start", "length", "latency", "src", "dst", "bottleneck"):
        assert getattr(many, name)[:count].tolist() == getattr(one, name)[:count].tolist(), name
    assert many.latency_list == one.latency_list == many.latency[:count].tolist()
    assert len(many.start) >= count and len(many.arcs) >= many._used


ROOT = Path(__file__).resolve().parents[1]
#: the issue's leaf-spine pairs (benchmarks/scale.py --child): repr of the simulated time, events, flows
PINNED = {
    "hd-ls1k-fast": ("0.22524746373913235", 7369, 20480),
    "hd-ls1k-message": ("0.22524746373913235", 11022, 20480),
    "tree8-ls1k-fast": ("0.5711550949277925", 9247, 16368),
    "tree8-ls1k-message": ("0.5711550949277925", 24424, 16368),
}


@pytest.mark.parametrize("case", sorted(PINNED))
def test_the_issues_leaf_spine_cases_keep_their_results(case):
    out = subprocess.run(
        [sys.executable, "benchmarks/scale.py", "--child", case], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert (repr(got["time_s"]), got["events"], got["flows"]) == PINNED[case]
