"""The plain-language summary is computed from the rows: change the rows and the sentences follow."""

from __future__ import annotations

from dataclasses import replace

from reports.analysis import ReportData, crossover_map, iteration_rows
from reports.records import PointRecord
from reports.rows import CollectiveRow, CrossoverCell, JobFacts, ProblemRow
from reports.summary import bands, crossover_sentence, match_sentence, summarize
from sim.training import IterationResult

SIZES = [8, 16, 32, 64, 128, 256, 512]


def it_row(algo, gpus, t, exposed=0.0, sent=1e9, hot=1e8, link="sw0->h0", util=0.5):
    """The record of a finished iteration point with the given figures."""
    result = IterationResult(
        topology=f"c{gpus}",
        algorithm=algo,
        ranks=gpus,
        gradient_bytes=1e8,
        buckets=4,
        overlap=True,
        forward_s=0.01,
        backward_s=0.02,
        optimizer_s=0.0,
        comm_start_s=0.01,
        comm_end_s=0.03 + exposed,
        iteration_s=t,
        exposed_comm_s=exposed,
        exposed_fraction=exposed / t,
        samples_per_s=gpus * 32 / t,
        bytes_sent=sent,
        max_rank_bytes=hot,
        link_bytes=2 * sent,
        max_link_utilization=util,
        busiest_link=link,
    )
    return PointRecord(
        key=f"{algo}@{gpus}",
        kind="iteration",
        algorithm=algo,
        gpus=gpus,
        cluster=f"c{gpus}",
        status="ok",
        result=result,
    )


JOB = JobFacts(
    name="toy",
    gradient_bytes=1e8,
    gradient_dtype="",
    parameters=None,
    forward_s=0.01,
    backward_s=0.02,
    optimizer_s=0.0,
    samples_per_gpu=32,
    bucket_bytes=25 * 2**20,
    first_bucket_bytes=2**20,
    overlap=True,
    concurrent_buckets=True,
    gamma=0.0,
    clusters=(),
)


def data(records, crossover=(), algorithms=("ring", "ps:shards=8", "tree"), skipped=()):
    rows = iteration_rows(records, "nominal")
    return ReportData(
        title="t",
        description="",
        parameters="nominal",
        algorithms=tuple(algorithms),
        sizes=tuple(sorted({r.gpus for r in rows} or {8})),
        job=JOB,
        iterations=rows,
        collectives=(),
        crossover=tuple(crossover),
        links=(),
        skipped=tuple(skipped),
        failed=(),
    )


def cell(gpus, size, fastest):
    return CrossoverCell(
        gpus=gpus, size_bytes=size, fastest=fastest, time_s=1e-3, runner_up="", margin=None, parameters="nominal"
    )


def ring_time(p):
    return 0.030 + 0.001 * SIZES.index(p)


def test_ps_matches_ring_only_up_to_where_the_rows_say():
    records = [it_row("ring", p, ring_time(p)) for p in SIZES]
    records += [it_row("ps:shards=8", p, ring_time(p) * (1.02 if p <= 64 else 1.3)) for p in SIZES]
    text = match_sentence(iteration_rows(records, "nominal"), "ps:shards=8", "ring", 0.05)
    assert text == "ps:shards=8 matches ring (within 5%) only up to 64 GPUs; at 128 GPUs it is 30% slower. [nominal]"
    # move the knee: the sentence moves with it
    records = [r for r in records if r.algorithm == "ring"]
    records += [it_row("ps:shards=8", p, ring_time(p) * (1.02 if p <= 256 else 1.3)) for p in SIZES]
    text = match_sentence(iteration_rows(records, "nominal"), "ps:shards=8", "ring", 0.05)
    assert "only up to 256 GPUs; at 512 GPUs" in text


def test_match_sentence_covers_always_and_never():
    records = [it_row("ring", p, ring_time(p)) for p in SIZES] + [it_row("tree", p, ring_time(p) * 1.5) for p in SIZES]
    records += [it_row("hd", p, ring_time(p) * 1.01) for p in SIZES]
    rows = iteration_rows(records, "nominal")
    assert match_sentence(rows, "tree", "ring", 0.05) == (
        "tree is slower than ring at every size: by 50% at 8 GPUs and 50% at 512 GPUs. [nominal]"
    )
    assert match_sentence(rows, "hd", "ring", 0.05) == (
        "hd matches ring (within 5% per iteration) at every size up to 512 GPUs. [nominal]"
    )


def test_crossover_bands_come_from_the_fastest_cells():
    cells = [cell(512, 2**k, "tree" if k < 22 else "ring") for k in range(12, 28, 2)]
    assert bands(cells) == [("tree", 2**12, 2**20), ("ring", 2**22, 2**26)]
    assert crossover_sentence(cells, 512) == (
        "At 512 GPUs tree is the fastest all-reduce up to 1MiB; ring beats it from 4MiB upward. [nominal]"
    )
    cells[-1] = replace(cells[-1], fastest="halving-doubling")
    assert crossover_sentence(cells, 512).endswith(
        "ring beats it from 4MiB to 16MiB; halving-doubling beats ring from 64MiB upward. [nominal]"
    )


def test_crossover_map_picks_the_fastest_and_its_margin():
    rows = [
        CollectiveRow(
            algorithm=a,
            gpus=8,
            cluster="c8",
            size_bytes=1024,
            time_s=t,
            algbw_GBps=1.0,
            busbw_GBps=1.0,
            link_bytes=0.0,
            busiest_link="",
            max_link_utilization=0.0,
            parameters="nominal",
        )
        for a, t in (("ring", 3.0), ("tree", 2.0), ("ps", 2.5))
    ]
    (best,) = crossover_map(rows, ["ring", "tree", "ps"])
    assert (best.fastest, best.runner_up) == ("tree", "ps") and abs(best.margin - 0.25) < 1e-12


def test_summary_leads_with_the_fastest_at_the_largest_size_and_reports_skips():
    records = [it_row("ring", p, ring_time(p), exposed=0.001 * (p >= 128)) for p in SIZES]
    records += [
        it_row(
            "tree",
            p,
            ring_time(p) * 0.9,
            exposed=0.0005 * (p >= 256),
            sent=3e9,
            hot=9e9,
            link="spine0->leaf1",
            util=0.91,
        )
        for p in SIZES
    ]
    skipped = [
        ProblemRow(kind="iteration", algorithm="ps:shards=8", gpus=g, reason="needs 8 spare hosts") for g in (8, 16)
    ]
    text = summarize(data(records, algorithms=("ring", "tree", "ps:shards=8"), skipped=skipped), 0.05)
    assert text[0].startswith("At 512 GPUs the shortest iteration is 32.4ms with tree:")
    assert "efficiency against 8 GPUs" in text[0] and text[0].endswith("[nominal]")
    assert any("tree, communication hides behind the backward pass" in s for s in text)
    assert any(s.startswith("ring matches tree") or s.startswith("ring is slower than tree") for s in text)
    assert any("The busiest link at 512 GPUs with tree is spine0->leaf1, carrying data 91%" in s for s in text)
    assert any(
        "with ring and 2.794GiB with tree; the busiest single rank sends and receives 8.382GiB under tree "
        "against 95.37MiB under ring" in s
        for s in text
    )
    assert "ps:shards=8 was not simulated at 8, 16 GPUs: needs 8 spare hosts" in text
    assert all(s.endswith("[nominal]") for s in text if "not simulated" not in s)


def test_exposed_communication_is_located():
    records = [it_row("ring", p, 0.040, exposed=0.010 * (p >= 64)) for p in SIZES]
    text = summarize(data(records, algorithms=("ring",)), 0.05)
    assert (
        "With ring, communication hides behind the backward pass (under 5% of the iteration exposed) up to "
        "32 GPUs; at 64 GPUs 10ms (25%) is exposed. [nominal]"
    ) in text
