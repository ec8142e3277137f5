"""The report's records say what they hold and keep their JSON form: a point's record and every table
row read back from its JSON equal the record written, a cache written before the records were typed
(``tests/data/report-points-v1.jsonl``) is read, written again byte for byte and reused by a resumed
sweep, and a line that is not a record is recomputed rather than guessed at."""

from __future__ import annotations

import json
import shutil
from dataclasses import fields, replace
from pathlib import Path

import pytest

from reports.analysis import analyze
from reports.points import report_points, run_point
from reports.records import PointRecord
from reports.rows import CollectiveRow, CrossoverCell, IterationRow, LinkRow, ProblemRow
from reports.spec import parse_spec
from reports.sweep import PointCache, SerialExecutor, run_sweep
from sim.results import LinkUse, SimResult
from sim.training import BucketTiming, IterationResult

from .report_fixtures import extra_algorithms, tiny_spec

OLD_CACHE = Path(__file__).parent / "data" / "report-points-v1.jsonl"


def old_spec():
    """The spec whose points ``report-points-v1.jsonl`` holds (call inside ``extra_algorithms()``)."""
    return parse_spec(
        tiny_spec(
            algorithms=["ring", "test-spare"],
            cluster={"topology": "netlab-star4"},
            sweep={"message_sizes": "4KiB:16KiB:4"},
        )
    )


def line_of(record: PointRecord) -> str:
    """The cache line the sweep writes for ``record``."""
    return json.dumps(record.to_dict(), separators=(",", ":")) + "\n"


def test_an_old_cache_is_read_as_typed_records_and_written_again_byte_for_byte():
    lines = OLD_CACHE.read_text().splitlines(keepends=True)
    records = [PointRecord.from_dict(json.loads(line)) for line in lines]
    assert [(r.kind, r.algorithm, r.status) for r in records] == [
        ("iteration", "ring", "ok"),
        ("iteration", "test-spare", "skipped"),
        ("collective", "ring", "ok"),
        ("collective", "test-spare", "skipped"),
    ]
    iteration, skipped, collective, _ = records
    assert isinstance(iteration.iteration, IterationResult) and iteration.collectives == ()
    assert all(isinstance(link, LinkUse) for link in iteration.iteration.busiest_links)
    assert all(isinstance(b, BucketTiming) for b in iteration.iteration.bucket_timings)
    assert iteration.iteration.buckets == len(iteration.iteration.bucket_timings) == 2
    assert [r.size_bytes for r in collective.collectives] == [4096, 16384] and collective.iteration is None
    assert all(isinstance(r, SimResult) for r in collective.collectives)
    assert skipped.result is None and "needs a spare host" in skipped.reason and skipped.cached
    assert [line_of(r) for r in records] == lines  # the JSON form is what it was, value types included


def test_a_sweep_resumes_from_a_cache_written_before_the_records_were_typed(tmp_path):
    with extra_algorithms():
        points = report_points(old_spec())
        # the cache keys carry collsim's version: give the old lines this version's keys
        key = {(p.kind, p.algorithm): p.key for p in points}
        lines = []
        for line in OLD_CACHE.read_text().splitlines():
            raw = json.loads(line)
            lines.append(line.replace(raw["key"], key[raw["kind"], raw["algorithm"]]) + "\n")
        (tmp_path / PointCache.FILENAME).write_text("".join(lines))
        calls = []

        def counting(point):
            calls.append(point)
            return run_point(point)

        records = run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=False, func=counting)
    assert calls == []  # every point reused
    assert [line_of(records[p.key]) for p in points] == lines
    assert (tmp_path / PointCache.FILENAME).read_text() == "".join(lines)  # nothing appended


def test_points_an_earlier_model_simulated_are_not_reused(tmp_path):
    """A cache key carries the report model's tag (``reports.points.MODEL_VERSION``), raised where the same
    spec comes to mean another cluster (``dgx``'s default routing, report-2): the old cache's lines, under
    their own keys, are recomputed, not taken for today's."""
    shutil.copy(OLD_CACHE, tmp_path / PointCache.FILENAME)
    with extra_algorithms():
        points = report_points(old_spec())
        calls = []

        def counting(point):
            calls.append(point)
            return run_point(point)

        run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=False, func=counting)
    assert len(calls) == len(points) == 4


def test_a_fresh_record_equals_itself_read_back_from_its_cache_line(tmp_path):
    with extra_algorithms():
        points = report_points(old_spec())
        records = run_sweep(points, PointCache(tmp_path), SerialExecutor(), progress=False)
    loaded = PointCache(tmp_path).load()
    assert loaded == records  # typed, and equal field by field (wall_s included)
    for record in records.values():
        assert PointRecord.from_dict(record.to_dict()) == record
        assert PointRecord.from_dict(json.loads(line_of(record))) == record


def test_a_failed_record_round_trips_and_is_not_cached():
    failed = PointRecord(
        key="k", kind="collective", algorithm="ring", gpus=2, cluster="c", status="failed", reason="RunError: boom"
    )
    assert list(failed.to_dict()) == ["key", "kind", "algorithm", "gpus", "cluster", "status", "reason", "wall_s"]
    assert PointRecord.from_dict(failed.to_dict()) == failed and not failed.cached


def _ok_iteration() -> dict:
    return json.loads(OLD_CACHE.read_text().splitlines()[0])


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("wall_s"), "missing"),
        (lambda d: d.update(extra=1), "unknown"),
        (lambda d: d.update(status="done"), "status must be one of"),
        (lambda d: d.update(kind="broadcast"), "kind must be one of"),
        (lambda d: d.update(reason="why"), "status ok needs a result and no reason"),
        (lambda d: d.pop("result"), "status ok needs a result"),
        (lambda d: d.update(status="skipped"), "status skipped needs a reason and no result"),
        (lambda d: d.update(kind="collective"), "expected a list, got dict"),
        (lambda d: d["result"].pop("iteration_s"), "not an IterationResult: missing iteration_s"),
        (lambda d: d["result"].update(cores=2), "not an IterationResult: unknown cores"),
        (lambda d: d["result"]["busiest_links"][0].pop("bytes"), "not a LinkUse: missing bytes"),
        (lambda d: d.update(result=None), "result is null"),
    ],
)
def test_what_is_not_a_record_is_refused(change, message):
    data = _ok_iteration()
    change(data)
    with pytest.raises(ValueError, match=message):
        PointRecord.from_dict(data)


def test_a_cache_line_that_is_not_a_record_is_recomputed(tmp_path):
    good, *_ = OLD_CACHE.read_text().splitlines(keepends=True)
    bad = _ok_iteration()
    bad["result"].pop("iteration_s")
    (tmp_path / PointCache.FILENAME).write_text(json.dumps(bad) + "\n" + '["not", "a", "record"]\n' + good)
    assert list(PointCache(tmp_path).load()) == [json.loads(good)["key"]]


def test_every_row_of_a_report_round_trips_and_keeps_its_columns():
    with extra_algorithms():
        spec = old_spec()
        points = report_points(spec)
        key = {(p.kind, p.algorithm): p.key for p in points}
        records = {}
        for line in OLD_CACHE.read_text().splitlines():
            rec = PointRecord.from_dict(json.loads(line))
            records[key[rec.kind, rec.algorithm]] = replace(rec, key=key[rec.kind, rec.algorithm])
        data = analyze(spec, points, records)
    tables = (data.iterations, data.collectives, data.crossover, data.links, data.skipped)
    assert all(tables) and not data.failed
    for rows in tables:
        for row in rows:
            assert type(row).from_dict(row.to_dict()) == row
            assert type(row).from_dict(json.loads(json.dumps(row.to_dict()))) == row
    # the columns of results.csv and collectives.csv, and the keys of results.json's tables
    assert [f.name for f in fields(IterationRow)] == [
        "algorithm", "gpus", "cluster", "iteration_s", "samples_per_s", "forward_s", "backward_s", "optimizer_s",
        "exposed_comm_s", "exposed_fraction", "comm_s", "buckets", "bytes_sent", "max_rank_bytes", "link_bytes",
        "busiest_link", "max_link_utilization", "parameters", "scaling_efficiency", "efficiency_baseline_gpus",
    ]  # fmt: skip
    assert [f.name for f in fields(CollectiveRow)] == [
        "algorithm", "gpus", "cluster", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "link_bytes",
        "busiest_link", "max_link_utilization", "parameters",
    ]  # fmt: skip
    assert [f.name for f in fields(CrossoverCell)] == [
        "gpus", "size_bytes", "fastest", "time_s", "runner_up", "margin", "parameters",
    ]  # fmt: skip
    assert [f.name for f in fields(LinkRow)] == [
        "algorithm",
        "gpus",
        "rank",
        "link",
        "bytes",
        "utilization",
        "parameters",
    ]
    assert [f.name for f in fields(ProblemRow)] == ["kind", "algorithm", "gpus", "reason"]
    (ring,) = [r for r in data.iterations if r.algorithm == "ring"]
    it = records[key["iteration", "ring"]].iteration
    assert (ring.iteration_s, ring.comm_s, ring.scaling_efficiency) == (it.iteration_s, it.comm_s, 1.0)
    assert {(p.kind, p.algorithm, p.gpus) for p in data.skipped} == {
        ("iteration", "test-spare", 4),
        ("collective", "test-spare", 4),
    }


def test_a_row_with_a_missing_or_unknown_column_is_refused():
    cell = CrossoverCell(gpus=8, size_bytes=1, fastest="ring", time_s=1.0, runner_up="", margin=None, parameters="x")
    with pytest.raises(ValueError, match="missing margin"):
        CrossoverCell.from_dict({k: v for k, v in cell.to_dict().items() if k != "margin"})
    with pytest.raises(ValueError, match="unknown colour"):
        CrossoverCell.from_dict({**cell.to_dict(), "colour": "red"})


def test_records_are_frozen():
    record = PointRecord.from_dict(_ok_iteration())
    with pytest.raises(AttributeError):
        record.status = "failed"  # type: ignore[misc]


def test_a_point_cache_reads_the_old_cache_file_as_it_stands(tmp_path):
    shutil.copy(OLD_CACHE, tmp_path / PointCache.FILENAME)
    assert len(PointCache(tmp_path).load()) == 4
