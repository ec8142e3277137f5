"""Scale, in the default suite as behaviour (no wall-clock asserts): thousands of ranks go through the
vectorized paths and still give the exact answer; the benchmark script itself runs under -m benchmark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.cluster import Cluster
from sim.simulate import simulate
from sim.topology import dgx

from .test_fastpath import interleaved_racks


def test_a_4096_rank_ring_is_exact_and_costs_a_handful_of_events():
    r = simulate("star:hosts=4096,bandwidth=100Gbps,latency=1us", "allreduce", "ring", "1GiB")
    assert r.engine == "fast:maxplus"
    assert abs(r.time_s - r.closed_form_s) <= 1e-9 * r.closed_form_s
    assert r.flows == 2 * 4095 * 4096  # every message is accounted for
    assert r.events < 20  # ...without an event per message


def test_hierarchical_on_4096_gpus_equals_the_two_level_form():
    from sim.algorithms.hierarchical import two_level_cost

    r = simulate(Cluster(dgx(hosts=32)), "allreduce", "hierarchical", "1GiB")  # one leaf per rail
    expected = two_level_cost("ring", 8, 32, 2**30, 2 * 0.6e-6, 1 / 450e9, 2 * 1e-6, 1 / 50e9)
    assert r.time_s == pytest.approx(expected, rel=1e-9)


def test_fast_and_message_paths_agree_on_a_congested_lock_step_ring():
    """Ranks interleaved across two racks: every hop crosses the uplinks (the event-driven fast path,
    with its steady-state jumps), 64 ranks."""
    g = interleaved_racks(32, uplink=200e9)
    fast = simulate(g, "allreduce", "ring", "64MiB", engine="fast")
    slow = simulate(g, "allreduce", "ring", "64MiB", engine="message")
    assert fast.engine == "fast:events"
    assert abs(fast.time_s - slow.time_s) <= 1e-9 * slow.time_s
    assert fast.events < slow.events / 10


@pytest.mark.benchmark
def test_the_scale_benchmark_runs():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"
    out = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    assert "| ring-1k-fast |" in out.stdout and "error" not in out.stdout


@pytest.mark.benchmark
def test_simgrid_agrees_on_random_congested_flows():
    """benchmarks/vs_simgrid.py: an independent max-min engine gives every flow's completion time to
    1e-9 (skipped where SimGrid's Python module is not installed)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "vs_simgrid.py"
    out = subprocess.run(
        [sys.executable, str(script), "--case", "flows-0", "--case", "hd-leafspine-64"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode == 2 and "not installed" in out.stderr:
        pytest.skip("SimGrid is not installed")
    assert out.returncode == 0, out.stderr
    rows = [line.split("|") for line in out.stdout.splitlines() if line.startswith(("| flows-0", "| hd-leafspine-64"))]
    assert len(rows) == 2, out.stdout
    for row in rows:
        assert float(row[-2]) <= 1e-9, row
