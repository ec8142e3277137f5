"""``collsim compare`` and every algorithm through ``collsim simulate``."""

from __future__ import annotations

import json

import pytest

from collsim.cli import main
from sim.algorithms import algorithm_names
from sim.algorithms.registry import _REGISTRY
from sim.collectives import COLLECTIVES
from sim.compare import candidates

STAR = "star:hosts=8,bandwidth=100Gbps,latency=1us"


def builtin(collective: str) -> list[str]:
    """The names sim.algorithms registers (docs/engine.md registers a two-rank demo of its own)."""
    return [
        n
        for n in algorithm_names(collective)
        if _REGISTRY[(collective, n)].__module__.startswith("sim.")
        and getattr(_REGISTRY[(collective, n)], "star_oracle", True)  # NVLS needs an NVSwitch that reduces
    ]


def builtin_candidates(collective: str) -> list[str]:
    return [spec for spec in candidates(collective) if spec.partition(":")[0] in builtin(collective)]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]


ALLREDUCE = builtin_candidates("allreduce")


def test_compare_prints_every_allreduce_algorithm_fastest_first(capsys):
    code, out, err = run(capsys, "compare", "-t", STAR, "--size", "64MiB", "--algorithms", ",".join(ALLREDUCE))
    assert code == 0 and not err
    table = rows(out)
    names = [r[0] for r in table]
    skipped = [line for line in out.splitlines() if line.startswith("# skipped")]
    assert sorted(names + [s.split()[2].rstrip(":") for s in skipped]) == sorted(ALLREDUCE)
    times = [float(r[1]) for r in table]
    assert times == sorted(times)
    # 8 ranks on 8 hosts: no host is free for dedicated servers, and the table says why
    assert any("ps:placement=dedicated: dedicated servers need hosts that hold no rank" in s for s in skipped)
    # busbw = algbw * 2(p-1)/p; the busiest link and its utilization are there
    for r in table:
        assert float(r[3]) == pytest.approx(float(r[2]) * 2 * 7 / 8, abs=0.02)
        assert "->" in r[4] and r[5].endswith("%")
    assert names[-1] == "master-worker"


def test_compare_json_is_one_record_per_algorithm(capsys):
    code, out, _ = run(
        capsys, "compare", "-t", STAR, "--size", "1MiB", "--ranks", "6", "--json", "--algorithms", ",".join(ALLREDUCE)
    )
    records = [json.loads(line) for line in out.splitlines()]
    ran = [r for r in records if "time_s" in r]
    assert code == 0 and len(records) == len(ALLREDUCE)
    assert [r["time_s"] for r in ran] == sorted(r["time_s"] for r in ran)
    assert all(r["ranks"] == 6 for r in ran)
    # two hosts are free: dedicated PS with 2 servers runs, with 6 (one per rank) it is skipped
    by_name = {r["algorithm"]: r for r in records}
    assert "time_s" in by_name["ps:shards=2,placement=dedicated"]
    assert "leaves 2 (use shards=2" in by_name["ps:placement=dedicated"]["skipped"]
    for r in ran:
        assert r["traffic_bytes"] > 0 and r["busiest_link"]


def test_compare_reads_its_options_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("COLLSIM_TOPOLOGY", STAR)
    monkeypatch.setenv("COLLSIM_SIZE", "4MiB")
    monkeypatch.setenv("COLLSIM_ALGORITHMS", "ring,tree:chunks=2")
    code, out, _ = run(capsys, "compare")
    assert code == 0 and "4MiB (4194304 B)" in out
    assert sorted(r[0] for r in rows(out)) == ["ring", "tree:chunks=2"]


def test_compare_other_collectives(capsys):
    code, out, _ = run(capsys, "compare", "-t", STAR, "--collective", "broadcast", "--size", "16MiB")
    assert code == 0
    assert sorted(r[0] for r in rows(out)) == sorted(candidates("broadcast"))
    nccl = {"nccl", "nccl:algo=ring", "nccl:proto=ll128", "nccl:version=2.20.5"}  # NCCL's ring chain (ncclbr)
    assert (
        set(builtin_candidates("broadcast"))
        == {"binomial-tree", "ring", "ring:chunks=1", "ring:chunks=3", "flat"} | nccl
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "-t", STAR, "--ranks", "9"], "has only 8 GPUs"),
        (["compare", "-t", STAR, "--size", "lots"], "--size"),
        (["compare", "-t", STAR, "--algorithms", "ring,rnig"], "unknown allreduce algorithm 'rnig'"),
        (["compare", "-t", STAR, "--collective", "allgether"], "unknown collective 'allgether'"),
        (["compare", "-t", STAR, "--algorithms", "tree:chunks=0"], "algorithm tree.chunks: must be > 0"),
    ],
)
def test_compare_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, _, err = run(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("collsim: error: ") and message in lines[0]


@pytest.mark.parametrize("collective", list(COLLECTIVES))
def test_simulate_runs_every_algorithm_of_every_collective(capsys, collective):
    """Through the CLI, with the data check on: #wrong is 0 for every algorithm (odd rank count, root 2)."""
    for name in builtin(collective):
        spec = "ps:placement=dedicated,shards=2" if name == "ps" else name
        code, out, err = run(
            capsys,
            "simulate",
            "-t",
            STAR,
            "--ranks",
            "5",
            "--collective",
            collective,
            "-a",
            spec,
            "--size",
            "1MiB",
            "--root",
            "2",
            "--check",
        )
        assert code == 0, err
        (row,) = rows(out)
        assert row[-1] == "0", (collective, spec, out)


def test_simulate_dedicated_ps_needs_free_hosts(capsys):
    code, out, err = run(capsys, "simulate", "-t", STAR, "-a", "ps:placement=dedicated")
    assert code == 2 and "hold no rank" in err and len(err.strip().splitlines()) == 1
    assert out == ""  # refused before the table's header


def test_simulate_reports_the_traffic_at_the_master(capsys):
    """Seed 003's master-worker figure in the table's footer: (p-1)·n in and out of the master."""
    code, out, _ = run(capsys, "simulate", "-t", STAR, "-a", "master-worker", "--size", "64MiB")
    assert code == 0
    assert "# Traffic at 67108864 B: 896MiB in messages;" in out
    assert "rank 0 448MiB out, 448MiB in" in out


def test_algorithm_lists_keep_multi_option_specs_together():
    from sim.algorithms import split_algorithm_specs as split_specs

    assert split_specs("ring, ps:shards=2,placement=dedicated,tree:chunks=4,,master-worker") == [
        "ring",
        "ps:shards=2,placement=dedicated",
        "tree:chunks=4",
        "master-worker",
    ]
