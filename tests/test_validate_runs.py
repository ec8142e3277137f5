"""Real torch.distributed runs with gloo on 2-4 local ranks: exact results for every algorithm and
collective, the runner's table and JSON lines under torchrun and SLURM's variables, and how runs end
when a rank dies, hangs, is interrupted, or cannot rendezvous."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from collsim.cli import main
from sim.collectives import COLLECTIVES
from sim.errors import RunError
from validate.algorithms import algorithm_names
from validate.conformance import cases
from validate.faults import FAULT_VAR
from validate.launch import Job, free_port, launch

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]


def tagged_environ(**extra):
    """The environment with a unique tag, so that the test can find every process it started."""
    tag = uuid.uuid4().hex
    env = {**os.environ, "COLLSIM_TEST_TAG": tag, "PYTHONPATH": str(ROOT), **extra}
    return tag, env


def processes_with(tag):
    """Pids of live processes whose environment carries ``tag``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split()[2]
        except OSError:
            continue
        if f"COLLSIM_TEST_TAG={tag}".encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


def json_lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("ranks", "counts", "p2p"), [(4, "1,1009,65537", "each"), (3, "1,1009", "batch")])
def test_every_algorithm_and_collective_is_exact_on_gloo(tmp_path, capsys, monkeypatch, ranks, counts, p2p):
    # "batch" posts every step as one batch_isend_irecv group, sorted for NCCL: NCCL's path, on gloo
    monkeypatch.setenv("COLLSIM_VALIDATE_P2P", p2p)
    out = tmp_path / "check.jsonl"
    code = main(["validate", "check", "--ranks", str(ranks), "--counts", counts, "--json", str(out), "--timeout", "30"])
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0, printed + captured.err  # the launcher's diagnosis is on stderr
    records = json_lines(out)
    expected = cases(list(COLLECTIVES), ranks, [int(c) for c in counts.split(",")], 2 if ranks == 4 else 1)
    assert [(r["collective"], r["algorithm"], r["count"]) for r in records] == [
        (c.collective, c.algorithm, c.count) for c in expected
    ]
    assert all(r["wrong"] == 0 for r in records)
    ran = {(r["collective"], r["algorithm"].split(":")[0]) for r in records}
    everything = {(c, n) for c in COLLECTIVES for n in algorithm_names(c)}
    assert ran == everything
    assert printed.rstrip().endswith("0 wrong element(s): OK")


def test_runner_under_torchrun_prints_nccl_tests_table_and_json(tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "validate",
            "-a",
            "tree:chunks=2",
            "-b",
            "1000",
            "-e",
            "4000",
            "-f",
            "2",
            "-w",
            "1",
            "-n",
            "3",
            "--json",
            str(out),
            "--topology",
            "netlab-star4",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=tagged_environ(OMP_NUM_THREADS="1")[1],
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    header = [line for line in lines if "algbw" in line]
    assert len(header) == 1
    for column in ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"):
        assert column in header[0]
    rows = [line.split() for line in lines if line and not line.startswith("#")]
    assert [r[:5] for r in rows] == [[str(s), str(s // 4), "float", "sum", "-1"] for s in (1000, 2000, 4000)]
    assert all(r[8] == "0" for r in rows)
    assert "# Out of bounds values : 0 OK" in lines
    records = json_lines(out)
    assert [r["size_bytes"] for r in records] == [1000, 2000, 4000]
    for r, row in zip(records, rows, strict=True):
        assert r["wrong"] == 0 and r["ranks"] == 2 and r["algorithm"] == "tree:chunks=2" and len(r["times_s"]) == 3
        assert r["time_min_s"] <= r["time_s"] <= r["time_p99_s"]
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"])  # 2(p-1)/p = 1 on two ranks
        assert float(row[5]) == pytest.approx(r["time_s"] * 1e6, rel=1e-3)
        env = r["environment"]
        assert env["launcher"] == "torchrun" and env["backend"] == "gloo" and env["topology"] == "netlab-star4"
        assert env["ranks"] == 2 and env["hosts"] and env["torch"] and "interface" in env


def test_slurm_variables_make_a_job(tmp_path):
    port = free_port()
    tag, base = tagged_environ(OMP_NUM_THREADS="1")
    procs = []
    for r in range(2):
        env = {k: v for k, v in base.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
        env.update(
            SLURM_PROCID=str(r),
            SLURM_NTASKS="2",
            SLURM_LOCALID=str(r),
            SLURM_JOB_NODELIST="localhost",
            SLURM_TASKS_PER_NODE="2",
            SLURM_NODEID="0",
            MASTER_PORT=str(port),
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "validate",
                    "--collective",
                    "broadcast",
                    "-a",
                    "binomial-tree",
                    "--sizes",
                    "4K",
                    "-w",
                    "0",
                    "-n",
                    "2",
                    "--root",
                    "1",
                    "--json",
                    str(tmp_path / "s.jsonl"),
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
            )
        )
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs[0][1] + outs[1][1]
    (record,) = json_lines(tmp_path / "s.jsonl")
    assert record["environment"]["launcher"] == "slurm" and record["root"] == 1 and record["wrong"] == 0
    assert "binomial-tree" in outs[0][0] and not outs[1][0]  # only rank 0 prints


def run_with_fault(tmp_path, capsys, fault, timeout="30"):
    tag, env = tagged_environ(**{FAULT_VAR: fault})
    out = tmp_path / "f.jsonl"
    argv = ["--sizes", "1K:4K", "-w", "1", "-n", "3", "--timeout", timeout, "--json", str(out)]
    with pytest.raises(RunError) as info:
        launch(2, argv, environ=env)
    return str(info.value), json_lines(out), processes_with(tag), capsys.readouterr()


def test_a_killed_rank_ends_the_run_naming_it(tmp_path, capsys):
    message, records, left, captured = run_with_fault(tmp_path, capsys, "rank=1,iteration=2,action=kill,size=2K")
    assert message.startswith("rank 1 was killed by SIGKILL during allreduce (ring) at 2048 B, iteration 2")
    assert [r["size_bytes"] for r in records] == [1024]  # what was measured before stays
    assert left == []
    assert "[rank 1] rank 1: injected fault: kill" in captured.err
    assert "[rank 0] validate: error: rank 0: allreduce (ring), 2048 B, iteration 2 of 3: lost rank 1" in captured.err


def test_a_hung_rank_ends_the_run_within_the_timeout(tmp_path, capsys):
    message, records, left, captured = run_with_fault(
        tmp_path, capsys, "rank=0,iteration=3,action=hang,size=2K", timeout="3"
    )
    assert message.startswith("rank 0 stopped responding during allreduce (ring) at 2048 B, iteration 3")
    assert "outside the collective" in message and "waited for it" in message
    assert "timed out after 3 s waiting for rank 0" in captured.err  # what the rank that waited said
    assert [r["size_bytes"] for r in records] == [1024]
    assert left == []


def test_ctrl_c_leaves_no_process_behind(tmp_path):
    tag, env = tagged_environ()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collsim",
            "validate",
            "run",
            "--ranks",
            "2",
            "--sizes",
            "64K",
            "-w",
            "0",
            "-n",
            "1000000",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    for line in proc.stdout:  # wait until the ranks are measuring
        if "algbw" in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted: stopped the 2 rank(s)" in err
    assert processes_with(tag) == []


def test_a_port_in_use_is_a_clear_error(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["validate", "run", "--ranks", "2", "--master-port", str(port), "--sizes", "1K"])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1
        assert f"--master-port {port}: cannot listen on 127.0.0.1:{port}" in err
        # a rank 0 started by hand on the same port says so too
        env = {
            **tagged_environ()[1],
            "RANK": "0",
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        proc = subprocess.run(
            [sys.executable, "-m", "validate", "--sizes", "1K", "--timeout", "5"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f"validate: error: rank 0: cannot listen on 127.0.0.1:{port}: the port is in use (another job or a "
        "leftover process?); pick another MASTER_PORT / --master-port"
    )


def test_an_unreachable_master_is_a_clear_error():
    env = {
        **tagged_environ()[1],
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "validate", "--sizes", "1K", "--timeout", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("validate: error: rank 1: cannot reach the master at 127.0.0.1:")
    assert proc.stderr.count("\n") == 1


def test_a_rank_without_a_job_says_how_to_start_one():
    env = {k: v for k, v in tagged_environ()[1].items() if k not in ("RANK", "SLURM_PROCID")}
    proc = subprocess.run([sys.executable, "-m", "validate"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "not launched as a rank" in proc.stderr and "torchrun" in proc.stderr


_FINISH_THEN_FAIL = """
import os, sys
from validate.env import STATUS_VAR
from validate.status import DONE, RankSlot
rank = int(os.environ["RANK"])
if sys.argv[1] == "done" or rank == 0:
    RankSlot(os.environ[STATUS_VAR], rank).update(DONE)
sys.exit(3 if rank == 1 else 0)
"""


def test_a_rank_failing_after_every_rank_finished_is_a_warning(tmp_path):
    """A rank that exits non-zero after every rank reported its work done (a library's teardown on the
    way out) leaves the results standing: a warning, exit 0. Before every rank is done, it fails the run."""
    script = tmp_path / "finish.py"
    script.write_text(_FINISH_THEN_FAIL)
    err = io.StringIO()
    assert launch(3, Job(str(script), ("done",), "a job", 30.0), stderr=err) == 0
    assert "after every rank had finished; the results stand" in err.getvalue() and "rank 1" in err.getvalue()
    with pytest.raises(RunError, match="rank 1"):
        launch(3, Job(str(script), ("early",), "a job", 30.0), stderr=io.StringIO())
