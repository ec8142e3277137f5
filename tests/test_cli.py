"""The CLI: nccl-tests' columns, JSON lines, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from collsim.cli import main

STAR = "star:hosts=8,bandwidth=100Gbps,latency=1us"


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_prints_nccl_tests_columns(capsys):
    code, out, err = run(capsys, "simulate", "--topology", STAR, "--size", "64MiB")
    assert code == 0 and not err
    header = [line for line in out.splitlines() if "algbw" in line][0]
    for column in ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"):
        assert column in header
    row = [line for line in out.splitlines() if not line.startswith("#")]
    assert len(row) == 1
    fields = row[0].split()
    assert fields[0] == str(64 * 2**20) and fields[1] == str(16 * 2**20) and fields[2] == "float"
    # busbw = algbw * 2(p-1)/p for all-reduce
    assert float(fields[7]) == pytest.approx(float(fields[6]) * 2 * 7 / 8, abs=0.011)


def test_sweep_is_powers_of_two(capsys):
    code, out, _ = run(capsys, "simulate", "-t", STAR, "--sizes", "1KiB:1MiB")
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [2**k for k in range(10, 21)]


def test_json_lines_have_the_documented_fields(capsys):
    code, out, _ = run(capsys, "simulate", "-t", STAR, "--sizes", "1MiB:4MiB", "--json", "--check")
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3
    for obj in lines:
        for key in ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "link_bytes", "max_link_utilization"):
            assert key in obj
        assert obj["wrong"] == 0
        assert 0 < obj["max_link_utilization"] <= 1
        # ring moves 2(p-1)/p * n per rank, over two arcs (up to the switch and down to the peer)
        assert obj["link_bytes"] == pytest.approx(2 * 8 * 2 * 7 / 8 * obj["size_bytes"])


def test_ranks_option_uses_the_first_gpus(capsys):
    code, out, _ = run(capsys, "simulate", "-t", STAR, "--ranks", "4", "--json")
    assert json.loads(out)["ranks"] == 4


def test_environment_variables_stand_in_for_options(capsys, monkeypatch):
    monkeypatch.setenv("COLLSIM_TOPOLOGY", STAR)
    monkeypatch.setenv("COLLSIM_RANKS", "2")
    code, out, _ = run(capsys, "simulate", "--json")
    assert code == 0 and json.loads(out)["ranks"] == 2


def test_topology_show(capsys):
    code, out, _ = run(capsys, "topology", "show", "two-rack-2to1")
    assert code == 0
    assert "GPUs:       16" in out and "bisection:  400Gbps" in out
    assert "by a hash of source and destination" in out  # how equal routes are picked
    code, out, _ = run(capsys, "topology", "show", "dgx:hosts=4,ecmp=destination")
    assert code == 0 and "routing:    shortest up-down paths; equal ones by the destination host" in out
    # dgx's default is InfiniBand's routing (a DGX SuperPOD); ecmp=hash asks for Ethernet's
    code, default, _ = run(capsys, "topology", "show", "dgx:hosts=4")
    assert code == 0 and default == out
    code, out, _ = run(capsys, "topology", "show", "dgx:hosts=4,ecmp=hash")
    assert code == 0 and "by a hash of source and destination" in out and "ecmp=hash" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["simulate", "-t", STAR, "-a", "rnig"], "unknown allreduce algorithm 'rnig' (valid: ring"),
        (["simulate", "-t", STAR, "--collective", "allreduse"], "unknown collective 'allreduse'"),
        (["simulate", "-t", "star:hosts=8,bandwith=1Gbps"], "star.bandwith: unknown field"),
        (["simulate", "-t", "missing.yaml"], "missing.yaml: no such file"),
        (["simulate", "-t", STAR, "--size", "64MB/s"], "--size: unknown unit"),
        (["simulate", "-t", STAR, "--ranks", "99"], "has only 8 GPUs"),
        (["simulate", "-t", STAR, "--size", "1MiB", "--sizes", "1KiB:2KiB"], "not both"),
        (["simulate", "-t", STAR, "--bogus"], "No such option: --bogus"),
        (["simulate", "-t", STAR, "--dtype", "complex"], "unknown dtype 'complex'"),
        (["simulate", "-t", STAR, "-a", "ring:chunks=2"], "algorithm ring.chunks: unknown field"),
        (["topology", "show", "star:hosts=0,bandwidth=1Gbps"], "star.hosts: must be > 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("collsim: error: ")
    assert message in lines[0]


def test_console_script_never_prints_a_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nlinks: [[[\n")
    proc = subprocess.run(
        [sys.executable, "-m", "collsim", "simulate", "-t", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "invalid YAML" in proc.stderr


@pytest.mark.parametrize(
    ("collective", "algorithm"),
    [
        ("allreduce", "ring"),
        ("broadcast", "ring"),
        ("allgather", "ring"),
        ("gather", "flat"),
        ("scatter", "flat"),
        ("alltoall", "pairwise"),
        ("sendrecv", "direct"),
    ],
)
def test_the_default_algorithm_follows_the_collective(capsys, collective, algorithm):
    """Without -a every collective runs (gather used to fail with "unknown gather algorithm 'ring'")."""
    code, out, err = run(capsys, "simulate", "-t", STAR, "--collective", collective, "--size", "1MiB", "--json")
    assert code == 0, err
    assert json.loads(out)["algorithm"] == algorithm


def test_library_errors_name_the_flag_the_user_typed(capsys):
    code, _, err = run(capsys, "simulate", "-t", STAR, "--engine", "warp")
    assert code == 2 and err.startswith("collsim: error: --engine: unknown engine 'warp'")
    code, _, err = run(capsys, "simulate", "-t", STAR, "--root", "9", "--collective", "broadcast")
    assert code == 2 and err.startswith("collsim: error: --root: 9 is not a rank (0..7)")
