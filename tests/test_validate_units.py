"""validate's pieces that need no processes: options, sizes, the rank's environment, backend choice,
the status board, records and the launcher's diagnosis."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collsim.cli import main
from sim.errors import ConfigError
from validate.device import library_message, rendezvous_error, resolve
from validate.env import RankEnv, expand_hostlist, rank_env, tasks_per_node
from validate.faults import parse_fault
from validate.launch import diagnose
from validate.layout import layout
from validate.options import parse_options
from validate.results import Measurement, append_jsonl, measurement, read_measurements, table_row
from validate.status import (
    FAILED,
    IDLE,
    IN_COLLECTIVE,
    PEER_CLOSED,
    PEER_TIMEOUT,
    WRONG_RESULTS,
    RankSlot,
    SlotState,
    create_board,
    read_board,
)

# -- options ---------------------------------------------------------------------------------------


def test_defaults_follow_nccl_tests():
    o = parse_options([], environ={})
    assert (o.collective, o.algorithm, o.sizes, o.warmup, o.iters, o.check, o.dtype) == (
        "allreduce",
        "ring",
        (32 * 2**20,),
        5,
        20,
        True,
        "float",
    )
    assert o.backend is None and o.timeout == 60.0 and o.json is None


def test_nccl_tests_flags_and_sweeps():
    o = parse_options(["-b", "8", "-e", "128M", "-f", "4", "-w", "1", "-n", "3", "-c", "0"], environ={})
    assert o.sizes[0] == 8 and o.sizes[-1] == 128 * 2**20 and o.sizes[1] == 32
    assert (o.warmup, o.iters, o.check, o.stepfactor) == (1, 3, False, 4.0)
    assert parse_options(["--sizes", "1KiB:64MiB"], environ={}).sizes[-1] == 64 * 2**20
    assert parse_options(["--sizes", "1000,3"], environ={}).sizes == (1000, 3)


def test_every_option_reads_its_environment_variable_and_the_line_wins():
    env = {
        "COLLSIM_ALGORITHM": "tree:chunks=2",
        "COLLSIM_ITERS": "7",
        "COLLSIM_SIZES": "1K:4K",
        "COLLSIM_CHECK": "0",
        "COLLSIM_BACKEND": "gloo",
        "COLLSIM_TIMEOUT": "2.5s",
        "COLLSIM_JSON": "x.jsonl",
        "COLLSIM_COLLECTIVE": "all-gather",
        "COLLSIM_GPUS_PER_HOST": "2",
        "COLLSIM_TOPOLOGY": "netlab-star4",
    }
    o = parse_options([], environ=env)
    assert (o.algorithm, o.iters, o.sizes, o.check, o.backend, o.timeout, o.json, o.collective) == (
        "tree:chunks=2",
        7,
        (1024, 2048, 4096),
        False,
        "gloo",
        2.5,
        "x.jsonl",
        "allgather",
    )
    assert (o.gpus_per_host, o.topology) == (2, "netlab-star4")
    assert parse_options(["-n", "9", "-b", "8", "-e", "8"], environ=env).iters == 9
    assert parse_options(["-b", "8", "-e", "8"], environ=env).sizes == (8,)  # -b/-e on the line beat the env sweep


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "0"], "-n/--iters: must be >= 1"),
        (["-b", "1K", "-e", "8"], "-e/--maxbytes 8 is below -b/--minbytes 1024"),
        (["--sizes", "1K:2K", "-b", "8"], "give --sizes or -b/-e/-f, not both"),
        (["--backend", "mpi"], "expected one of gloo, nccl"),
        (["-d", "float8"], "unknown type 'float8'"),
        (["--collective", "allsum"], "unknown collective 'allsum'"),
        (["-f", "1"], "must be > 1"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["-c", "maybe"], "expected 0 or 1"),
        (["--timeout", "0"], "must be > 0 seconds"),
    ],
)
def test_bad_options_are_one_line_errors(argv, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_options(argv, environ={})


def test_a_bad_environment_variable_is_named():
    with pytest.raises(ConfigError, match="COLLSIM_ITERS='x'"):
        parse_options([], environ={"COLLSIM_ITERS": "x"})


# -- sizes -----------------------------------------------------------------------------------------


@given(size=st.integers(1, 10**7), p=st.integers(1, 64))
def test_layouts_follow_nccl_tests(size, p):
    for coll in ("allreduce", "allgather", "alltoall"):
        try:
            lay = layout(coll, size, p, "float")
        except ConfigError:
            assert size < 4 * (p if coll != "allreduce" else 1)
            continue
        assert lay.size_bytes <= size and lay.size_bytes == lay.count * 4
        if coll == "allreduce":
            assert lay.count == size // 4
        else:
            assert lay.count == lay.block * p and lay.block == size // (4 * p)


# -- the rank's environment --------------------------------------------------------------------------


def test_torchrun_variables():
    env = rank_env(
        {
            "RANK": "3",
            "WORLD_SIZE": "8",
            "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "node0",
            "MASTER_PORT": "29500",
            "TORCHELASTIC_RUN_ID": "x",
        }
    )
    assert env == RankEnv(3, 8, 1, 2, "node0", 29500, "torchrun")
    assert env.torch_environ()["RANK"] == "3"


def test_slurm_is_mapped_as_torchrun_would():
    env = rank_env(
        {
            "SLURM_PROCID": "6",
            "SLURM_NTASKS": "7",
            "SLURM_LOCALID": "0",
            "SLURM_NODEID": "2",
            "SLURM_JOB_NODELIST": "a[1-2],b7",
            "SLURM_TASKS_PER_NODE": "3(x2),1",
            "MASTER_PORT": "1234",
        }
    )
    assert env == RankEnv(6, 7, 0, 1, "a1", 1234, "slurm")
    assert (
        rank_env(
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NODELIST": "n1", "SLURM_NTASKS_PER_NODE": "1"}
        ).master_port
        == 29500
    )


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "not launched as a rank"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "1"}, "MASTER_ADDR expected, but not set"),
        ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "rank 2 is not below"),
        ({"RANK": "0", "WORLD_SIZE": "x", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "WORLD_SIZE='x'"),
        ({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "not a TCP port"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, "SLURM_JOB_NODELIST"),
    ],
)
def test_a_missing_or_wrong_variable_is_named(environ, message):
    with pytest.raises(ConfigError, match=message):
        rank_env(environ)


def test_hostlists():
    assert expand_hostlist("n[01-03,10]") == ["n01", "n02", "n03", "n10"]
    assert expand_hostlist("login,gpu[9-10]-ib") == ["login", "gpu9-ib", "gpu10-ib"]
    assert tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    with pytest.raises(ConfigError):
        expand_hostlist("n[1-")


# -- backend and device ------------------------------------------------------------------------------

NO_GPU = {"cuda_available": False, "gpus": 0, "local_rank": 0, "local_world_size": 4}


def test_the_backend_follows_the_device():
    assert resolve(None, None, **NO_GPU) == ("gloo", "cpu", "")
    gpus = {"cuda_available": True, "gpus": 4, "local_rank": 2, "local_world_size": 4}
    assert resolve(None, None, **gpus) == ("nccl", "cuda:2", "")
    assert resolve("gloo", None, **gpus) == ("gloo", "cpu", "")
    assert resolve(None, "cpu", **gpus) == ("gloo", "cpu", "")


def test_more_ranks_than_gpus_default_to_gloo_and_say_why():
    """A one-GPU workstation running 4 local ranks: NCCL would refuse, so the default is gloo on CPUs."""
    one_gpu = {"cuda_available": True, "gpus": 1, "local_rank": 3, "local_world_size": 4}
    backend, device, note = resolve(None, None, **one_gpu)
    assert (backend, device) == ("gloo", "cpu")
    assert "4 ranks on this host but 1 GPU(s) visible" in note
    with pytest.raises(ConfigError, match="one rank per GPU"):
        resolve("nccl", None, **one_gpu)  # asked for explicitly: refused, not silently changed


@pytest.mark.parametrize(
    ("backend", "device", "facts", "message"),
    [
        ("nccl", None, NO_GPU, "no CUDA GPU is visible"),
        (None, "cuda", NO_GPU, "no CUDA GPU is visible"),
        ("nccl", "cpu", NO_GPU, "nccl needs CUDA tensors"),
        ("gloo", "cuda", NO_GPU, "CPU tensors only"),
        (
            "nccl",
            None,
            {"cuda_available": True, "gpus": 2, "local_rank": 0, "local_world_size": 4},
            "one rank per GPU: 4 ranks on this host but 2 GPU",
        ),
    ],
)
def test_impossible_backends_are_refused_up_front(backend, device, facts, message):
    with pytest.raises(ConfigError, match=message):
        resolve(backend, device, **facts)


def test_rendezvous_errors_say_what_went_wrong():
    env = RankEnv(1, 2, 1, 2, "10.0.0.9", 29500, "env")
    assert "cannot reach the master at 10.0.0.9:29500 within 5 s" in rendezvous_error(
        env, RuntimeError("The client socket has timed out after 5000ms while trying to connect"), 5
    )
    env0 = RankEnv(0, 2, 0, 2, "10.0.0.9", 29500, "env")
    assert "the port is in use" in rendezvous_error(env0, RuntimeError("code: -98, name: EADDRINUSE"), 5)
    assert library_message(RuntimeError("[a/b.cc:12] Timed out waiting 3000ms for recv. Hint.")) == (
        "Timed out waiting 3000ms for recv"
    )


# -- faults and the status board -------------------------------------------------------------------


def test_fault_specs():
    f = parse_fault("rank=2,iteration=3,action=kill,size=8K")
    assert (f.rank, f.iteration, f.action, f.size_bytes) == (2, 3, "kill", 8192)
    assert parse_fault("") is None
    for bad in ("rank=1", "rank=1,iteration=2,action=explode", "rank=a,iteration=1,action=hang", "x"):
        with pytest.raises(ConfigError):
            parse_fault(bad)


def test_the_board_keeps_one_slot_per_rank(tmp_path):
    path = create_board(str(tmp_path / "board"), 3)
    slot = RankSlot(path, 2)
    slot.update(IN_COLLECTIVE, size_bytes=4096, iteration=7)
    slot.update(FAILED, peer=1, error=PEER_TIMEOUT)
    slot.close()
    board = read_board(path, 3)
    assert board[0].state == 0 and board[1].pid == 0
    assert (board[2].state, board[2].size_bytes, board[2].iteration, board[2].peer, board[2].error) == (
        FAILED,
        4096,
        7,
        1,
        PEER_TIMEOUT,
    )
    assert board[2].pid == os.getpid()


# -- the launcher's diagnosis --------------------------------------------------------------------


def slot(rank, state, size=4096, iteration=3, peer=-1, error=0, since=100.0):
    return SlotState(rank, 1000 + rank, state, size, iteration, peer, error, since)


def test_a_killed_rank_is_named_not_the_ranks_that_lost_it():
    slots = [
        slot(0, FAILED, peer=3, error=PEER_CLOSED),
        slot(1, FAILED, peer=2, error=PEER_CLOSED),
        slot(2, IN_COLLECTIVE),
        slot(3, FAILED, peer=2, error=PEER_CLOSED),
    ]
    text = diagnose(slots, [1, 1, -signal.SIGKILL, 1], "allreduce (ring)", 1, 101.0)
    assert text.startswith("rank 2 was killed by SIGKILL during allreduce (ring) at 4096 B, iteration 3")


def test_a_hung_rank_is_named():
    slots = [
        slot(0, FAILED, error=PEER_TIMEOUT, peer=1),
        slot(1, IDLE, iteration=2, since=90.0),
        slot(2, FAILED, error=PEER_TIMEOUT, peer=1),
    ]
    text = diagnose(slots, [1, None, 1], "broadcast (flat)", 0, 100.0)
    assert text.startswith("rank 1 stopped responding during broadcast (flat) at 4096 B, iteration 3")
    assert "outside the collective, no progress for 10 s" in text and "rank(s) 0, 2 waited" in text


def test_wrong_results_are_not_a_crash():
    slots = [slot(0, FAILED, error=WRONG_RESULTS), slot(1, 5)]
    assert "wrong results" in diagnose(slots, [1, 0], "allreduce (ring)", 0, 1.0)


def test_a_rank_that_never_started_is_named():
    slots = [slot(0, 2, size=0), slot(1, 0, size=0)]
    text = diagnose(slots, [None, 1], "allreduce (ring)", 0, 1.0)
    assert text.startswith("rank 1 exited with status 1 during allreduce (ring), while starting")


# -- records -----------------------------------------------------------------------------------------


def test_measurements_and_their_json_lines(tmp_path):
    times = [0.004, 0.002, 0.003, 0.010, 0.001]
    m = measurement(
        collective="all-reduce",
        algorithm="ring",
        backend="gloo",
        ranks=4,
        size_bytes=2**20,
        count=2**18,
        dtype="float",
        root=0,
        times_s=times,
        wrong=0,
        warmup=2,
        environment={"hosts": ["h"]},
    )
    assert (m.time_s, m.time_min_s, m.time_p99_s) == (0.003, 0.001, 0.010)
    assert m.algbw_GBps == pytest.approx(2**20 / 0.003 / 1e9)
    assert m.busbw_GBps == pytest.approx(m.algbw_GBps * 2 * 3 / 4)
    assert m.root == -1  # not a rooted collective
    path = tmp_path / "r.jsonl"
    append_jsonl(path, m)
    append_jsonl(path, m)
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    obj = json.loads(lines[0])
    for key in (
        "size_bytes",
        "time_s",
        "algbw_GBps",
        "busbw_GBps",
        "wrong",
        "time_min_s",
        "time_median_s",
        "time_p99_s",
        "times_s",
        "environment",
    ):
        assert key in obj
    assert list(read_measurements(path)) == [m, m]
    fields = table_row(m).split()
    assert fields[:5] == [str(2**20), str(2**18), "float", "sum", "-1"] and fields[-1] == "0"
    with pytest.raises(ConfigError, match="lacks"):
        Measurement.from_dict({"collective": "allreduce"})


# -- the command line -------------------------------------------------------------------------------


def test_commands_that_need_no_torch_do_not_import_it():
    code = (
        "import sys\n"
        "from collsim.cli import main\n"
        "assert main(['simulate', '-t', 'star:hosts=4,bandwidth=1Gbps', '--size', '1MiB']) == 0\n"
        "assert main(['validate', 'run', '--help']) == 0\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--gpus-per-host" in proc.stdout  # the runner's options are in run's help


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "run", "--ranks", "2", "-n", "0"], "argument -n/--iters: must be >= 1, got 0"),
        (["validate", "run", "--ranks", "2", "-a", "spiral"], "unknown allreduce algorithm 'spiral'"),
        (["validate", "run", "--ranks", "3", "-a", "hierarchical", "--gpus-per-host", "2"], "not a whole number"),
        (["validate", "run", "--ranks", "2", "--root", "5", "--collective", "broadcast"], "--root 5 is not a rank"),
        (
            ["validate", "run", "--ranks", "4", "--collective", "allgather", "--sizes", "8"],
            "less than one float per rank",
        ),
    ],
)
def test_bad_runs_are_refused_before_any_rank_starts(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("collsim: error: ") and err.count("\n") == 1 and message in err


def test_show_prints_a_results_file_as_the_table(tmp_path, capsys):
    m = measurement(
        collective="broadcast",
        algorithm="flat",
        backend="gloo",
        ranks=3,
        size_bytes=4096,
        count=1024,
        dtype="float",
        root=1,
        times_s=[1e-3, 2e-3],
        wrong=0,
        warmup=1,
        run_id="r1",
        environment={"hosts": ["a", "b"]},
    )
    path = tmp_path / "m.jsonl"
    append_jsonl(path, m)
    assert main(["validate", "show", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# broadcast with flat, 3 ranks on 2 host(s), gloo  (run r1)"
    assert out[-1].split()[:5] == ["4096", "1024", "float", "none", "1"]


def test_algorithms_lists_what_real_runs_can_use(capsys):
    assert main(["validate", "algorithms", "--collective", "allreduce"]) == 0
    out = capsys.readouterr().out
    assert "* ring" in out and "builtin" in out and "hierarchical" in out and "tree" in out


def test_python_m_validate_help_needs_no_job():
    proc = subprocess.run(
        [sys.executable, "-m", "validate", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k not in ("RANK", "SLURM_PROCID")},
    )
    assert proc.returncode == 0 and "--minbytes" in proc.stdout and "COLLSIM_MINBYTES" in proc.stdout
