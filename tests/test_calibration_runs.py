"""Calibration end to end with real ranks: local ranks on loopback (torch), and an emulated cluster
(netlab, root): calibrate from probes, then compare new runs against the calibrated prediction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netlab import system

ROOT = Path(__file__).resolve().parents[1]
COLLSIM = [sys.executable, "-c", "from collsim.cli import entry; entry()"]


def collsim(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([*COLLSIM, *args], capture_output=True, text=True, cwd=ROOT, env=environ, timeout=timeout)


@pytest.mark.torch
def test_local_calibrate_then_compare(tmp_path):
    topo = "star:hosts=1,gpus_per_host=2,bandwidth=1Gbps,intra_bandwidth=1GB/s"
    cal, out = tmp_path / "local.yaml", tmp_path / "cmp"
    args = f"-t {topo} --local --sizes 16KiB:1MiB:4 --tests stream,reduce --iters 8 --budget 0.2s -o {cal}"
    done = collsim("validate", "calibrate", *args.split())
    assert done.returncode == 0, done.stderr
    assert "intra-host" in done.stdout and "calibration: " in done.stdout
    probes = [json.loads(line) for line in Path(f"{cal}.probes.jsonl").read_text().splitlines()]
    assert {p["test"] for p in probes} == {"stream", "reduce"} and len(probes) == 8
    args = f"-t {topo} --calibration {cal} --local --algorithms ring,builtin --sizes 256KiB,1MiB -w 1 -n 3 --out {out}"
    done = collsim("validate", "compare", *args.split(), "--no-plot")
    assert done.returncode == 0, done.stderr
    doc = json.loads((out / "compare.json").read_text())
    assert doc["summary"]["all"]["points"] == 4 and doc["meta"]["measured_on"] == "local"
    assert {r["algorithm"] for r in doc["rows"]} == {"ring", "builtin"}
    # loopback on a shared 2-core machine: the point is that the loop runs end to end, so the bound only
    # catches a prediction off by an order of magnitude, |p - m| / m >= 9 (a busy machine during the probes
    # or the runs alone moves the median error past 100%: 108-163% seen with a benchmark on the other core,
    # 441% with three test processes on the two cores)
    assert doc["summary"]["all"]["median_abs"] < 9.0
    refused = collsim("validate", "calibrate", "-t", "netlab-star4", "--local", "-o", str(tmp_path / "x.yaml"))
    assert refused.returncode == 2 and "all its GPUs on one host" in refused.stderr
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.netlab
@pytest.mark.skipif(bool(system.missing()), reason=f"netlab needs {', '.join(system.missing())}")
def test_netlab_calibrate_then_compare(tmp_path):
    """About 90 s: a 4-host star, probes at 256 KiB..4 MiB, then three algorithms at 1 and 4 MiB. The
    bound is loose: a quick calibration on a shared 2-core machine has put a single factor 10-20% off
    (docs/validation.md: the same points measured twice differ by up to 14%); a wrong unit (bits for
    bytes, 8x) or a lost factor of two misses it by far."""
    prefix = f"k{os.getpid() % 100000}"
    env = {"COLLSIM_NETLAB_STATE_DIR": str(tmp_path / "state"), "TMPDIR": str(tmp_path)}
    cal, out = tmp_path / "star4.yaml", tmp_path / "cmp"
    try:
        args = f"--sizes 256KiB:4MiB:2 --tests stream,bidir,alltoall,reduce --iters 4 --budget 0.3s -o {cal}"
        done = collsim(
            "validate", "calibrate", "-t", "netlab-star4", "--netlab", "--prefix", prefix, *args.split(), env=env
        )
        assert done.returncode == 0, done.stderr
        eff = yaml.safe_load(cal.read_text())["classes"]["same-switch"]["efficiency"]
        assert 0.85 < eff < 1.05  # tbf delivers ~95.6% of the shaped rate to TCP payload
        args = f"--calibration {cal} --algorithms ring,master-worker,builtin --sizes 1MiB,4MiB -w 1 -n 3 --out {out}"
        done = collsim(
            "validate", "compare", "-t", "netlab-star4", "--netlab", "--prefix", prefix, *args.split(), env=env
        )
        assert done.returncode == 0, done.stderr
        doc = json.loads((out / "compare.json").read_text())
        assert doc["summary"]["all"]["points"] == 6
        assert doc["summary"]["all"]["median_abs"] < 0.25, done.stdout
    finally:
        down = [*COLLSIM, "netlab", "down", "--prefix", prefix]
        subprocess.run(down, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=60)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{prefix}-h" not in left and f"{prefix}-s" not in left
