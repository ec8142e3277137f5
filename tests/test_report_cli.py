"""``collsim report``: the files it writes, its one-line errors, env vars, and resuming after Ctrl-C."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from collsim.cli import main

from .report_fixtures import extra_algorithms, tiny_spec


def write_spec(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(tiny_spec(**changes)))
    return path


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_report_writes_every_file(tmp_path, capsys):
    out = tmp_path / "out"
    with extra_algorithms():
        spec = write_spec(tmp_path, algorithms=["ring", "test-flat"])
        code, stdout, err = run(capsys, "report", str(spec), "--out", str(out), "--executor", "serial", "--no-progress")
    assert code == 0, err
    assert stdout.strip() == f"report: {(out / 'index.html').resolve()}"
    assert "8 points simulated, 0 reused" in err and "nominal link parameters" in err
    for name in ("index.html", "report.md", "results.csv", "collectives.csv", "results.json", "points.jsonl"):
        assert (out / name).stat().st_size > 0, name

    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {(r["algorithm"], r["gpus"]) for r in rows} == {(a, g) for a in ("ring", "test-flat") for g in ("2", "4")}
    assert {r["parameters"] for r in rows} == {"nominal"}
    for column in ("iteration_s", "samples_per_s", "scaling_efficiency", "exposed_fraction", "busiest_link"):
        assert column in rows[0]
    sweep = list(csv.DictReader((out / "collectives.csv").open()))
    assert len(sweep) == 2 * 2 * 5 and "busbw_GBps" in sweep[0]

    results = json.loads((out / "results.json").read_text())
    assert results["parameters"] == "nominal" and results["summary"]
    assert all(s.endswith("[nominal]") for s in results["summary"])
    # the crossover the summary states is the one in the data: test-flat (2 alphas) wins on small
    # messages, ring (2(p-1)/p of the bytes) on large ones
    at4 = {c["size_bytes"]: c["fastest"] for c in results["crossover"] if c["gpus"] == 4}
    assert at4[4096] == "test-flat" and at4[2**20] == "ring"
    assert any(s.startswith("At 4 GPUs test-flat is the fastest all-reduce up to") for s in results["summary"])

    html = (out / "index.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', html)
    assert len(images) == 6 and all(src.startswith("data:image/png;base64,") for src in images)
    assert not re.search(r'(src|href)="(?!data:)', html)  # self-contained: nothing to fetch
    assert html.count("nominal link parameters") >= 6
    md = (out / "report.md").read_text()
    assert "![Iteration time and scaling efficiency (nominal link parameters)](plots/iteration.png)" in md
    assert (out / "plots" / "iteration.png").read_bytes().startswith(b"\x89PNG")


def test_environment_variables_stand_in_for_options(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLLSIM_REPORT_OUT", str(tmp_path / "env-out"))
    monkeypatch.setenv("COLLSIM_EXECUTOR", "serial")
    monkeypatch.setenv("COLLSIM_PROGRESS", "0")
    spec = str(write_spec(tmp_path, sweep={"message_sizes": []}))
    code, stdout, err = run(capsys, "report", spec)
    assert code == 0, err
    assert (tmp_path / "env-out" / "index.html").exists() and "2 points simulated, 0 reused" in err
    code, stdout, err = run(capsys, "report", spec)
    assert code == 0 and "0 points simulated, 2 reused" in err
    code, stdout, err = run(capsys, "report", spec, "--fresh")
    assert code == 0 and "2 points simulated, 0 reused" in err


@pytest.mark.parametrize(
    "changes, args, message",
    [
        ({"job": {"parameters": 1e6}}, [], "spec.yaml: job: give compute_time"),
        ({"calibration": "spec.yaml"}, [], "spec.yaml: calibration: "),
        ({}, ["--executor", "dask"], "--executor dask needs --address"),
        ({}, ["--executor", "mpi"], "unknown executor 'mpi'"),
        ({}, ["--jobs", "0"], "--jobs"),
        ({"point_limit": 0}, [], "spec.yaml: point_limit: must be > 0 seconds"),
        ({}, ["--point-limit", "0s"], "--point-limit: must be > 0 seconds"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, changes, args, message):
    spec = write_spec(tmp_path, **changes)
    code, stdout, err = run(capsys, "report", str(spec), "--out", str(tmp_path / "o"), *args)
    assert code == 2
    assert err.startswith("collsim: error: ") and message in err
    assert err.count("\n") == 1 or err.splitlines()[-1].startswith("collsim: error:")
    assert "Traceback" not in err


def test_missing_spec_file(tmp_path, capsys):
    code, _, err = run(capsys, "report", str(tmp_path / "nope.yaml"), "--out", str(tmp_path))
    assert code == 2 and "no such report spec" in err and err.count("\n") == 1


def test_ctrl_c_keeps_finished_points_and_a_rerun_computes_only_the_rest(tmp_path):
    """A real interruption: SIGINT to a running ``collsim report`` on all local cores, then a rerun."""
    spec = write_spec(
        tmp_path,
        cluster={"builder": "star", "params": {"bandwidth": "100Gbps", "latency": "1us"}, "sizes": "4..32"},
        sweep={"message_sizes": "1MiB:16MiB:4"},
        job={"gradient_bytes": "100MiB", "compute_time": "10ms"},
        ddp={"concurrent_buckets": True},  # buckets sharing the network: points slow enough to interrupt
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "collsim", "report", str(spec), "--out", str(out), "--jobs", "2"]
    env = {**os.environ, "COLLSIM_PROGRESS": "0"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    cache = out / "points.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if cache.exists() and cache.read_text().count("\n") >= 1:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "run the same command again to resume" in err
    kept = cache.read_text().count("\n")
    assert 1 <= kept < 8  # 4 sizes x (iteration + collective sweep)
    assert f"interrupted; {kept} finished point(s) are kept in {cache}" in err  # what it says is on disk
    assert all(json.loads(line)["status"] == "ok" for line in cache.read_text().splitlines())

    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{8 - kept} points simulated, {kept} reused" in again.stderr
    assert cache.read_text().count("\n") == 8


def test_a_rerun_removes_temporaries_a_killed_write_left(tmp_path):
    from reports.render import _remove_stale_temporaries

    (tmp_path / "plots").mkdir()
    stale = [tmp_path / ".index.html.abc.tmp", tmp_path / "plots" / ".iteration.png.x.tmp"]
    for path in stale:
        path.write_text("half")
    keep = tmp_path / "index.html"
    keep.write_text("whole")
    _remove_stale_temporaries(tmp_path)
    assert not any(p.exists() for p in stale) and keep.read_text() == "whole"


def _stuck_on(algorithm: str, monkeypatch) -> None:
    """Points of ``algorithm`` run until a deadline stops them (as a hashed parameter server does)."""
    import reports.points as points
    from sim.deadline import check

    real = points._run_point

    def stuck(point):
        if point.algorithm != algorithm:
            return real(point)
        give_up = time.time() + 10
        while time.time() < give_up:
            time.sleep(0.005)
            check()
        raise AssertionError("no deadline stopped the point")

    monkeypatch.setattr(points, "_run_point", stuck)


def test_a_point_past_the_point_limit_fails_and_the_report_goes_on(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    with extra_algorithms():
        spec = str(write_spec(tmp_path, algorithms=["ring", "test-flat"], sweep={"message_sizes": []}))
        _stuck_on("test-flat", monkeypatch)
        args = ("report", spec, "--out", str(out), "--executor", "serial", "--no-progress")
        code, stdout, err = run(capsys, *args, "--point-limit", "50ms")
        assert code == 1 and "4 points simulated, 0 reused" in err and "2 failed" in err, err
        assert stdout.strip() == f"report: {(out / 'index.html').resolve()}"
        md = (out / "report.md").read_text()
        assert md.count("the simulation did not finish within point_limit 0.05 s (wall clock)") >= 2
        monkeypatch.undo()
        code, _, err = run(capsys, *args)  # the failed points were not kept: a rerun computes them
    assert code == 0 and "2 points simulated, 2 reused" in err and "0 failed" in err, err


def test_the_point_limit_gives_way_to_the_reports_deadline(monkeypatch):
    import reports.points as points
    from reports.points import run_point
    from reports.spec import parse_spec
    from sim.deadline import Deadline, SimulationTimeout

    _stuck_on("ring", monkeypatch)
    point = points.report_points(parse_spec(tiny_spec(algorithms=["ring"])))[0]
    rec = run_point(point, bound=Deadline(time.time() + 60, 60), limit=0.02)
    assert rec.status == "failed" and rec.reason.endswith("within point_limit 0.02 s (wall clock)")
    with pytest.raises(SimulationTimeout, match="--timeout 0.02 s"):
        run_point(point, bound=Deadline(time.time() + 0.02, 0.02), limit=60)
