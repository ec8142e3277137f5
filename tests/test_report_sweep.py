"""Sweeps: the cache that makes them resumable, and the executors (this process, local cores, dask)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from reports.points import report_points, run_point
from reports.spec import parse_spec
from reports.sweep import DaskExecutor, LocalExecutor, PointCache, SerialExecutor, make_executor, run_sweep
from sim.errors import ConfigError

from .report_fixtures import extra_algorithms, tiny_spec

SPEC = tiny_spec(cluster={"builder": "star", "params": {"bandwidth": "100Gbps", "latency": "1us"}, "sizes": [2, 3, 4]})


class Interrupted(Exception):
    pass


def counting(calls):
    def func(point):
        calls.append(point.key)
        return run_point(point)

    return func


def test_an_interrupted_sweep_resumes_without_recomputing(tmp_path):
    points = report_points(parse_spec(SPEC))
    assert len(points) == 6
    first: list[str] = []

    def stop_after_two(record):
        if len(first) == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_sweep(
            points,
            PointCache(tmp_path),
            SerialExecutor(),
            progress=False,
            func=counting(first),
            on_record=stop_after_two,
        )
    assert len(first) == 2 and len(PointCache(tmp_path).load()) == 2

    second: list[str] = []
    records = run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=False, func=counting(second))
    assert len(second) == 4 and set(first).isdisjoint(second)  # only the rest ran
    assert set(records) == {p.key for p in points} and all(r.status == "ok" for r in records.values())

    third: list[str] = []
    again = run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=False, func=counting(third))
    assert third == [] and again == records


def test_a_line_cut_short_is_recomputed_and_does_not_corrupt_the_next(tmp_path):
    points = report_points(parse_spec(SPEC))
    cache = PointCache(tmp_path)
    records = run_sweep(points[:2], cache, SerialExecutor(), progress=False)
    lines = cache.path.read_text().splitlines(keepends=True)
    cache.path.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # a crash mid-write
    assert list(PointCache(tmp_path).load()) == [json.loads(lines[0])["key"]]
    calls: list[str] = []
    run_sweep(points[:2], PointCache(tmp_path), SerialExecutor(), progress=False, func=counting(calls))
    assert calls == [json.loads(lines[1])["key"]]
    assert _strip(PointCache(tmp_path).load()) == _strip(records)
    assert len(cache.path.read_text().splitlines()) == 3  # the cut line stays alone on its line


def test_failed_points_are_not_cached(tmp_path):
    points = report_points(parse_spec(SPEC))[:1]

    def fail(point):
        return point.record("failed", reason="RunError: boom")

    records = run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=False, func=fail)
    assert records[points[0].key].status == "failed" and PointCache(tmp_path).load() == {}


def _strip(records):
    """The records without their timings (how long each point and each simulation took)."""
    return {k: replace(r, wall_s=0.0, result=_no_wall(r.result)) for k, r in records.items()}


def _no_wall(result):
    if result is None:
        return None
    if isinstance(result, tuple):
        return tuple(_no_wall(r) for r in result)
    return replace(result, wall_s=0.0)


def test_local_cores_give_the_same_records_as_one_process(tmp_path):
    points = report_points(parse_spec(SPEC))
    serial = run_sweep(points, PointCache(tmp_path / "a"), SerialExecutor(), progress=False)
    parallel = run_sweep(points, PointCache(tmp_path / "b"), LocalExecutor(jobs=2), progress=False)
    assert _strip(serial) == _strip(parallel)


def test_skipped_points_are_cached_with_their_reason(tmp_path):
    with extra_algorithms():
        spec = parse_spec(tiny_spec(algorithms=["test-spare"], cluster={"topology": "netlab-star4"}))
        records = run_sweep(report_points(spec), PointCache(tmp_path), SerialExecutor(), progress=False)
    assert {r.status for r in records.values()} == {"skipped"}
    assert all("needs a spare host" in r.reason for r in PointCache(tmp_path).load().values())


def test_executor_choices_are_checked():
    with pytest.raises(ConfigError, match="unknown executor 'spark'"):
        make_executor("spark")
    with pytest.raises(ConfigError, match="--executor dask needs --address"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="--jobs must be >= 1"):
        make_executor("local", jobs=0)


def test_dask_runs_the_same_sweep_on_a_cluster(tmp_path):
    """Starts a dask LocalCluster (two worker processes, a tcp:// scheduler) in this test and hands the
    sweep to it by address, as ``--executor dask --address tcp://...`` does."""
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    points = report_points(parse_spec(SPEC))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, protocol="tcp"
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        remote = run_sweep(
            points,
            PointCache(tmp_path / "dask"),
            make_executor("dask", address=cluster.scheduler_address),
            progress=False,
        )
    local = run_sweep(points, PointCache(tmp_path / "local"), SerialExecutor(), progress=False)
    assert _strip(remote) == _strip(local)


def test_an_unreachable_dask_scheduler_is_one_clear_error(tmp_path):
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    points = report_points(parse_spec(SPEC))[:1]
    with pytest.raises(ConfigError, match="cannot reach a dask scheduler"):
        run_sweep(points, PointCache(tmp_path), DaskExecutor("tcp://127.0.0.1:9", timeout="2s"), progress=False)


def test_progress_off_a_terminal_is_a_line_per_tenth_and_a_resume_note(tmp_path, capsys):
    points = report_points(parse_spec(SPEC))
    run_sweep(points[:2], PointCache(tmp_path), SerialExecutor(), progress=True)
    err = capsys.readouterr().err
    assert "simulated 1/2 points" in err and "simulated 2/2 points" in err
    run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=True)
    err = capsys.readouterr().err
    assert f"resuming: 2 of 6 points already in {PointCache(tmp_path).path}" in err
    assert "simulated 6/6 points" in err and "simulated 2/6" not in err
