"""Calibrating nccl-tests logs through the schedule NCCL ran (docs/calibration.md, docs/nccl.md):
efficiencies <= 1, fixed costs per protocol, the warning when a log runs faster than line rate, the
import of what users post, the run id guard, validate's NCCL forcing and the reports' nccl default."""

from __future__ import annotations

import json
import math
import re

import pytest

from collsim.cli import main
from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.compare import compare
from sim.errors import CalibrationError, ConfigError
from sim.linkmodel import LinkModel, Segment
from sim.prepare import prepare
from sim.simulate import simulate
from tests.calib_fixtures import nccl_json, nccl_text
from validate.calibration import fit_calibration, load_calibration, read_samples, save_calibration
from validate.calibration.compare import check_separate
from validate.calibration.inputs import parse_nccl_json, parse_nccl_text

ONE = "hgx:hosts=1,preset=dgx-h100"
TWO = "hgx:hosts=2,preset=dgx-h100"
SIZES = [2**24, 2**26, 2**28]


def synthetic(topology: str, p: int, model: LinkModel, sizes=SIZES, algorithm: str = "nccl") -> list[tuple[int, float]]:
    cluster = Cluster(topology, link_model=model)
    return [(n, simulate(cluster, "allreduce", algorithm, n, ranks=p, gamma=0.0).time_s) for n in sizes]


def intra(efficiency: float, **offset: float) -> LinkModel:
    """NVLink at ``efficiency`` of line rate, NCCL's fixed costs corrected by ``offset`` per protocol (s)."""
    return LinkModel(classes={"intra-host": (Segment(0, None, efficiency),)}, nccl_offset=offset)


def test_one_node_fit_recovers_efficiency_and_fixed_cost(tmp_path):
    path = tmp_path / "one.txt"
    # NVLS on one DGX H100: NCCL's estimate 25 us (Simple), the machine's 8 us less
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, synthetic(ONE, 8, intra(0.8, simple=-8e-6))))
    samples, source = read_samples(path)
    # the fixture's header states nccl-library=22803: NCCL 2.28.3's tuner (as 2.30.7's on one node)
    assert {s.algorithm for s in samples} == {"nccl:version=2.28.3"} and source.run_ids[0].startswith("nccl-tests-")
    cal = fit_calibration(samples, ONE, [source])
    assert cal.calibrated == ["intra-host.efficiency", "nccl_offset"] and cal.warnings == []
    assert cal.classes["intra-host"].efficiency == pytest.approx(0.8, rel=0.02)
    assert cal.nccl_offset["simple"] == pytest.approx(-8e-6, abs=5e-6)
    fit = cal.classes["intra-host"].fit
    assert [r.size_bytes for r in fit.residuals] == SIZES and fit.max_rel < 0.02  # labelled with the log's sizes
    back = load_calibration(save_calibration(cal, tmp_path / "c.yaml"))
    assert back.link_model().nccl_offset == cal.link_model().nccl_offset


def test_fit_never_steps_past_where_it_improves(tmp_path):
    """A log whose mid sizes run slow (a TCP-offload transport: x3 from 2 to 32 MiB) and large sizes at line
    rate: the slope of NVLink taken at line rate is flat, so a full linearized step sent the NICs to 0.03
    of line rate and the fit to 16x the nominal error; the fit now steps only as far as it improves."""
    sizes = [2**k for k in range(20, 34)]
    nominal = synthetic(TWO, 16, LinkModel(), sizes=sizes)
    rows = [(n, t * (3.0 if 2**21 <= n <= 2**25 else 1.6 if n < 2**30 else 1.0)) for n, t in nominal]
    path = tmp_path / "tcpx.txt"
    path.write_text(_log(rows))
    samples, source = read_samples(path)
    cal = fit_calibration(samples, TWO, [source])
    fit = next(iter(cal.classes.values())).fit
    nominal_rms = math.sqrt(sum(((t - m) / m) ** 2 for (_, t), (_, m) in zip(nominal, rows, strict=True)) / len(rows))
    assert fit.rms_rel < nominal_rms
    assert all(e.efficiency > 0.5 for e in cal.classes.values())


def test_faster_than_line_rate_is_clamped_with_a_warning(tmp_path):
    rows = [(n, t * 0.7) for n, t in synthetic(ONE, 8, LinkModel())]
    path = tmp_path / "fast.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, rows))
    samples, source = read_samples(path)
    cal = fit_calibration(samples, ONE, [source])
    assert cal.classes["intra-host"].efficiency == pytest.approx(1.0)
    assert len(cal.warnings) == 1 and "faster than" in cal.warnings[0]
    assert "the schedule does not match what ran" in cal.warnings[0]
    assert all(e.efficiency <= 1.0 for e in cal.classes.values())


def test_a_link_the_log_cannot_see_is_named_as_such_not_as_faster_than_line_rate(tmp_path):
    """The shape of an underperforming network (the development set's node005 2-node run): the NICs bound
    every size, 1.35-2.95x the nominal times. Unconstrained, the fit gives NVLink no time at all; that is a
    log that cannot see NVLink, and the warning says so instead of "faster than line rate" (it wanted
    "inf" of the NVLink rate before)."""
    sizes = [2**k for k in range(23, 34)]
    slower = [1.6, 1.35, 1.7, 2.0, 2.15, 2.4, 2.95, 2.95, 2.95, 2.95, 2.95]
    rows = [(n, t * x) for (n, t), x in zip(synthetic(TWO, 16, LinkModel(), sizes=sizes), slower, strict=True)]
    path = tmp_path / "slow-nics.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 16, rows))
    samples, source = read_samples(path)
    cal = fit_calibration(samples, TWO, [source])
    assert cal.classes["intra-host"].efficiency == pytest.approx(1.0)
    assert cal.classes["cross-switch"].efficiency == pytest.approx(0.34, abs=0.02)
    assert len(cal.warnings) == 1 and "faster than" not in cal.warnings[0] and "inf" not in cal.warnings[0]
    assert cal.warnings[0].startswith("intra-host: the log does not separate it from cross-host")
    assert "underperforming network" in cal.warnings[0]


def test_one_node_and_the_nics_stated_rate_predict_two_nodes(tmp_path):
    truth = intra(0.85)
    path = tmp_path / "one.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, synthetic(ONE, 8, truth)))
    samples, source = read_samples(path)
    cal = fit_calibration(samples, ONE, [source])
    two = Cluster(TWO, link_model=cal.link_model())
    for n, t in synthetic(TWO, 16, truth, sizes=[2**26]):
        assert simulate(two, "allreduce", "nccl", n, gamma=0.0).time_s == pytest.approx(t, rel=0.05)


def _log(rows, p=16, header="", srun=False, rank_lines=True, starting=True) -> str:
    text = nccl_text("all_reduce_perf", "allreduce", p, rows)
    lines = [ln for ln in text.splitlines() if (rank_lines or "#  Rank" not in ln)]
    lines = [ln for ln in lines if starting or "Collective test" not in ln]
    lines = header.splitlines() + lines
    return "\n".join(f"{0:2d}: {ln}" if srun else ln for ln in lines) + "\n"


ROWS = [(2**20, 80e-6), (2**24, 300e-6), (2**28, 3500e-6)]


def test_import_reads_what_users_post(tmp_path):
    path = tmp_path / "posted.txt"
    path.write_text(_log(ROWS, srun=True, starting=False, header="#% NCCL_ALGO: RING (stated)"))
    samples, source = read_samples(path)
    assert [s.size for s in samples] == [r[0] for r in ROWS] and {s.ranks for s in samples} == {16}
    spec = "nccl:algo=ring,version=2.28.3"  # and the release the header's nccl-library=22803 states
    assert {s.algorithm for s in samples} == {spec} and source.detail.endswith(spec)
    path.write_text(_log(ROWS[:1], header="$ mpirun -n 16 -x NCCL_ALGO=Tree,Ring ./all_reduce_perf -b 1M -e 1M"))
    samples, _ = read_samples(path)
    assert len(samples) == 1 and samples[0].algorithm == "nccl:algo=tree|ring,version=2.28.3"
    samples, _ = read_samples(f"{path}:algorithm=NVLSTree")
    assert samples[0].algorithm == "nccl:algo=nvls-tree,version=2.28.3"
    # NCCL_NVLS_ENABLE=0 turns NVLS and NVLSTree off (transport/nvls.cc: ncclNvlsInit), alone or with an exclusion
    for env, want in (
        ("", "^nvls|nvls-tree"),
        ("-x NCCL_ALGO=^Tree ", "^tree|nvls|nvls-tree"),
        ("NCCL_ALGO=Ring ", "ring"),
    ):
        path.write_text(_log(ROWS, header=f"mpirun -n 16 {env}-x NCCL_NVLS_ENABLE=0 ./all_reduce_perf -b 1M"))
        samples, _ = read_samples(path)
        assert samples[0].algorithm == f"nccl:algo={want},version=2.28.3"
        get_algorithm("allreduce", samples[0].algorithm).choice(16, 2**28, Cluster(TWO))  # a schedule NCCL runs here
    # no rank lines, no command: all-reduce's busbw / algbw = 2(n-1)/n names one n where the rows are precise
    path.write_text(_log(ROWS, rank_lines=False))
    assert {s.ranks for s in read_samples(path)[0]} == {16}
    # ... and none where they are not (0.01 GB/s rows): then the user names it
    path.write_text(_log([(2**20, 0.02), (2**21, 0.04)], rank_lines=False))
    with pytest.raises(CalibrationError, match=re.escape("give FILE:ranks=N")):
        read_samples(path)
    assert read_samples(f"{path}:ranks=16")[0][0].ranks == 16


def test_run_id_is_the_logs_content_and_compare_refuses_it(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(_log(ROWS))
    samples, source = read_samples(path)
    again, _ = parse_nccl_text(_log(ROWS), "elsewhere.txt")
    assert source.run_ids == [samples[0].run_id] == [again[0].run_id]
    cal = fit_calibration(samples, TWO, [source])
    with pytest.raises(CalibrationError, match="must use separate runs"):
        check_separate(cal, again)
    other, _ = parse_nccl_text(_log([(n, t * 1.01) for n, t in ROWS]), "other.txt")
    check_separate(cal, other)


@pytest.mark.parametrize(
    ("text", "spec", "message"),
    [
        ("hello\nworld\n", "{path}", "not an nccl-tests log"),
        (_log(ROWS), "{path}:algorithm=NVLS", "nvls runs inside one host"),
        (_log(ROWS), "{path}:algorithm=PAT", "not one the simulator runs"),
        (nccl_text("all_reduce_perf", "allgather", 16, ROWS), "{path}", "not all-reduce's 2(n-1)/n = 1.8750 on 16"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, text, spec, message):
    path = tmp_path / "log.txt"
    path.write_text(text)
    code = main(["validate", "calibrate", "-t", TWO, "--from", spec.format(path=path), "-o", str(tmp_path / "c.yaml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("collsim: error: ") and message in err[0], err


def test_link_model_nccl_latency_is_checked_and_applied():
    with pytest.raises(ConfigError, match="unknown protocol 'lx'"):
        LinkModel(nccl_latency={"lx": 1e-6})
    with pytest.raises(ConfigError, match="must be between 0 and 1 s"):
        LinkModel(nccl_latency={"simple": -1.0})
    base = simulate(ONE, "allreduce", "nccl:proto=simple", 2**20).time_s
    later = simulate(ONE, "allreduce", "nccl:proto=simple", 2**20, link_model=LinkModel(nccl_latency={"simple": 1e-3}))
    assert later.time_s > base + 9e-4
    # a correction of NCCL's estimate (25 us for NVLS with Simple on one DGX H100), never below 0
    for offset, change in ((1e-3, 1e-3), (-5e-6, -5e-6), (-1.0, -25e-6)):
        shifted = simulate(
            ONE, "allreduce", "nccl:proto=simple", 2**20, link_model=LinkModel(nccl_offset={"simple": offset})
        )
        assert shifted.time_s - base == pytest.approx(change, abs=1e-9)
    with pytest.raises(ConfigError, match="must be between -1 and 1 s"):
        LinkModel(nccl_offset={"simple": 2.0})
    with pytest.raises(ConfigError, match="nccl_latency or nccl_offset, not both"):
        LinkModel(nccl_latency={"simple": 1e-5}, nccl_offset={"simple": 1e-6})


def test_a_fit_predicts_through_the_nccl_release_its_log_ran(tmp_path):
    """The release a log states is the calibration's (``nccl_version``), and the ``nccl`` schedules under it
    take that release's tuner unless the spec names one: on 2 DGX H100 at 1 MiB, 2.26.2 picks otherwise
    than the newest modelled release."""
    path = tmp_path / "one.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, synthetic(ONE, 8, intra(0.8, simple=-8e-6))))
    text = path.read_text().replace("nccl-library=22803", "nccl-library=22602")
    path.write_text(text)
    samples, source = read_samples(path)
    assert {s.algorithm for s in samples} == {"nccl:version=2.26.2"}
    cal = fit_calibration(samples, ONE, [source])
    assert cal.nccl_version == "2.26.2"
    back = load_calibration(save_calibration(cal, tmp_path / "c.yaml"))
    model = back.link_model()
    assert back.nccl_version == "2.26.2" and model.nccl_version == "2.26.2" and not model.is_nominal
    run = prepare(TWO, "allreduce", "nccl", link_model=model)
    assert run.algorithm.spec == "nccl:version=2.26.2"
    assert prepare(TWO, "allreduce", "nccl:version=2.30.7", link_model=model).algorithm.options.version == "2.30.7"
    assert (
        prepare(TWO, "allreduce", "nccl:algo=tree", link_model=model).algorithm.spec == "nccl:algo=tree,version=2.26.2"
    )
    assert prepare(TWO, "allreduce", "ring", link_model=model).algorithm.spec == "ring"  # (no release to take)
    rows = [
        r.algorithm for r in compare(TWO, 2**20, algorithms=["nccl", "nccl:version=2.26.2", "ring"], link_model=model)
    ]
    assert sorted(rows) == ["nccl", "ring"]  # the same run once, under the name asked first
    n = 2**20
    under = simulate(TWO, "allreduce", "nccl", n, link_model=model).time_s
    assert under == simulate(TWO, "allreduce", "nccl:version=2.26.2", n, link_model=model).time_s
    assert under != simulate(TWO, "allreduce", "nccl:version=2.30.7", n, link_model=model).time_s
    old = {k: v for k, v in back.model_dump(mode="json").items() if k not in ("nccl_version", "nccl_offset")}
    old["calibrated"] = ["intra-host.efficiency", "nccl_latency"]  # a file from before: a fixed cost in place
    older = type(back).model_validate({**old, "nccl_latency": {"simple": 2e-5}}).link_model()
    assert older.nccl_version is None and older.nccl_latency == {"simple": 2e-5} and not older.nccl_offset
    both = {**old, "nccl_latency": {"simple": 2e-5}, "calibrated": [*old["calibrated"], "nccl_offset"]}
    with pytest.raises(ValueError, match="list nccl_latency or nccl_offset, not both"):
        type(back).model_validate({**both, "nccl_offset": {"simple": -1e-6}})
    with pytest.raises(ConfigError, match="nccl_version: NCCL version '1.0' is not a release"):
        LinkModel(nccl_version="1.0")


def test_validate_forces_nccl_only_for_builtin_on_nccl():
    from validate.options import nccl_environ, parse_options

    opts = parse_options(["-a", "builtin", "--nccl-algo", "Ring", "--nccl-proto", "Simple"], environ={})
    assert nccl_environ(opts) == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
    assert parse_options(["-a", "builtin"], environ={"COLLSIM_NCCL_ALGO": "^NVLS"}).nccl_algo == "^NVLS"
    for argv, message in [
        (["-a", "ring", "--nccl-algo", "Ring"], "use it with --algorithm builtin"),
        (["-a", "builtin", "--backend", "gloo", "--nccl-proto", "LL"], "only the nccl backend reads"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_options(argv, environ={})


def _read_as(tmp_path, records: list[dict]) -> list[tuple[str, str]]:
    """(simulated algorithm, label) of each validate record, as calibration and compare read them."""
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for rec in records))
    return [(s.algorithm, s.label) for s in read_samples(path)[0]]


def test_validate_records_with_nccl_forced_are_read_per_nccl_algorithm(tmp_path):
    base = {"collective": "allreduce", "algorithm": "builtin", "backend": "nccl", "ranks": 16, "run_id": "r1"}
    lines = [
        {**base, "size_bytes": 2**20, "time_s": 1e-4, "environment": {"nccl_algo": "Ring", "nccl_proto": "default"}},
        {**base, "size_bytes": 2**20, "time_s": 1e-4, "environment": {"nccl_algo": "default", "nccl_proto": "default"}},
        # the NCCL release torch ran picks the tuner (one that is no release: the newest)
        {**base, "size_bytes": 2**20, "time_s": 1e-4, "environment": {"nccl": "2.21.5", "nccl_algo": "Ring"}},
        {**base, "size_bytes": 2**20, "time_s": 1e-4, "environment": {"nccl": "2.99.1"}},
    ]
    assert _read_as(tmp_path, lines) == [
        ("nccl:algo=ring", "builtin:nccl_algo=Ring"),
        ("nccl", "builtin"),
        ("nccl:algo=ring,version=2.21.5", "builtin:nccl_algo=Ring"),
        ("nccl", "builtin"),
    ]


def test_validate_records_nccl_picks_from_its_tuning_log(tmp_path):
    """``--nccl-picks 1``: rank 0 reads NCCL's TUNING lines size by size (validate/nccl_picks.py), the record
    carries the pick, and calibrate / compare simulate an all-reduce record through it."""
    from validate.nccl_picks import PickLog, debug_environ
    from validate.options import parse_options
    from validate.results import Measurement, measurement

    assert parse_options(["-a", "builtin", "--nccl-picks", "1"], environ={}).nccl_picks
    assert parse_options(["-a", "builtin"], environ={"COLLSIM_NCCL_PICKS": "1"}).nccl_picks
    assert not parse_options(["-a", "builtin"], environ={}).nccl_picks
    for argv, message in [
        (
            ["-a", "ring", "--nccl-picks", "1"],
            "records what NCCL's own collectives ran; use it with --algorithm builtin",
        ),
        (["-a", "builtin", "--backend", "gloo", "--nccl-picks", "1"], "only the nccl backend writes"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_options(argv, environ={})
    env = debug_environ(tmp_path, {"NCCL_DEBUG": "trace", "NCCL_DEBUG_SUBSYS": "INIT,NET"})
    assert env == {
        "NCCL_DEBUG": "TRACE",
        "NCCL_DEBUG_SUBSYS": "INIT,NET,TUNING",
        "NCCL_DEBUG_FILE": f"{tmp_path}/nccl.%h.%p",
    }
    assert debug_environ(tmp_path, {"NCCL_DEBUG_SUBSYS": "^TUNING,INIT"})["NCCL_DEBUG_SUBSYS"] == "^INIT"
    assert debug_environ(tmp_path, {"NCCL_DEBUG_SUBSYS": "ALL"})["NCCL_DEBUG_SUBSYS"] == "ALL"

    new = "h:9:9 [0] NCCL INFO {}: {} Bytes -> Algo {} proto {} channel{{Lo..Hi}}={{0..15}}\n"
    log = PickLog(tmp_path)
    assert log.take("allreduce", {2**20}) is None  # no file yet
    first = tmp_path / "nccl.h.9"
    first.write_text(
        new.format("AllReduce", 2**20, "NVLS_TREE", "SIMPLE") * 24
        + new.format("AllReduce", 8, "RING", "LL")  # another call (a barrier's) at another size: not counted
        + new.format("AllGather", 2**20, "RING", "SIMPLE")  # another collective: not counted
        + "h:9:9 [0] NCCL INFO Init COMPLETE\n"
        + new.format("AllReduce", 2**20, "RING", "LL128")[:30]  # a line still being written
    )
    assert log.take("allreduce", {2**20}) == {
        "algorithm": "nvls-tree",
        "protocol": "simple",
        "nccl": "NVLSTree/Simple",
        "calls": 24,
        "of": 24,
    }
    with first.open("a") as f:  # the cut line ends; the next size's calls follow, in NCCL 2.20-2.23's form
        f.write(
            new.format("AllReduce", 2**20, "RING", "LL128")[30:]
            + "h:9:9 [0] NCCL INFO 4194304 Bytes -> Algo 0 proto 1 time 61.2\n" * 3
        )
    (tmp_path / "nccl.h.10").write_text("")  # another process's (empty) log
    assert log.take("allreduce", {2**20}) == {
        "algorithm": "ring",
        "protocol": "ll128",
        "nccl": "Ring/LL128",
        "calls": 1,
        "of": 1,
    }
    assert log.take("allreduce", {4194304}) is None  # already read
    with first.open("a") as f:
        f.write("h:9:9 [0] NCCL INFO 4194304 Bytes -> Algo 0 proto 1 time 61.2\n" * 3)
    assert log.take("allreduce", {4194304})["nccl"] == "Tree/LL128"

    pick = {"algorithm": "tree", "protocol": "ll128", "nccl": "Tree/LL128", "calls": 20, "of": 20}
    m = measurement(
        collective="allreduce",
        algorithm="builtin",
        backend="nccl",
        ranks=16,
        size_bytes=2**22,
        count=2**20,
        dtype="float",
        root=0,
        times_s=[1e-4, 1e-4, 1.1e-4],
        wrong=0,
        warmup=5,
        run_id="r9",
        environment={"nccl": "2.26.2", "nccl_algo": "default", "nccl_proto": "default"},
        nccl_pick=pick,
    )
    assert Measurement.from_dict(json.loads(m.to_json())) == m
    records = [
        m.to_dict(),
        {**m.to_dict(), "size_bytes": 2**23, "nccl_pick": {**pick, "algorithm": "nvls", "protocol": "ll128"}},
        {**m.to_dict(), "size_bytes": 2**24, "nccl_pick": None},
    ]
    # the pick where NCCL runs it as the simulator does; NVLS with LL128 (NCCL runs NVLS in Simple): the tuner
    assert _read_as(tmp_path, records) == [
        ("nccl:algo=tree,proto=ll128,version=2.26.2", "builtin"),
        ("nccl:version=2.26.2", "builtin"),
        ("nccl:version=2.26.2", "builtin"),
    ]


def test_reports_scale_hgx_and_list_nccl_by_default():
    from reports.clusters import build_graph, cluster_refs
    from reports.spec import parse_spec

    spec = parse_spec(
        {
            "job": {"name": "toy", "gradient_bytes": "8MiB", "compute_time": "10ms", "samples_per_gpu": 16},
            "cluster": {"builder": "hgx", "params": {"preset": "dgx-h100"}, "sizes": [8, 16]},
        }
    )
    assert "nccl" in spec.algorithm_specs
    graphs = [build_graph(ref) for ref in cluster_refs(spec)]
    assert [Cluster(g).size for g in graphs] == [8, 16] and all(g.graph["nvls"] for g in graphs)


def test_compare_names_nccl_the_realistic_reference(capsys):
    code = main(["compare", "-t", ONE, "--size", "1MiB", "--algorithms", "ring,nccl"])
    out = capsys.readouterr().out
    assert code == 0 and "# nccl: what NCCL would run here" in out


@pytest.mark.parametrize("drop", [(4,), (3, 4)], ids=["no-root", "no-redop-no-root"])
@pytest.mark.parametrize("headers", [True, False], ids=["headers", "no-headers"])
def test_older_nccl_tests_layouts_read_the_same_times(tmp_path, drop, headers):
    """Older nccl-tests print no root column (and older still no redop); times of 10 ms and more print as
    whole microseconds. Such a log, with or without its column-header lines, gives the times of today's
    layout -- never a column shifted (an integer time taken for the root)."""
    rows = [(2**20, 61.5e-6), (2**24, 412.0e-6), (2**30, 12345.0e-6), (2**33, 98765.0e-6)]
    modern = nccl_text("all_reduce_perf", "allreduce", 16, rows)
    old = []
    for line in modern.splitlines():
        fields = line.split()
        if line.startswith("#       size"):
            names = line.lstrip("#").split()
            line = "#  " + "  ".join(n for i, n in enumerate(names) if i not in drop)
        elif fields and fields[0].isdigit():
            fields = [f for i, f in enumerate(fields) if i not in drop]
            k = 5 - len(drop)
            for at in (k, k + 4):  # out-of-place and in-place times as old nccl-tests printed them
                t = float(fields[at])
                fields[at] = f"{t:.0f}" if t >= 10000 else f"{t:.2f}"
            line = "  ".join(fields)
        if headers or not line.startswith("#  "):
            old.append(line)
    (tmp_path / "modern.txt").write_text(modern)
    (tmp_path / "old.txt").write_text("\n".join(old) + "\n")
    want, _ = read_samples(tmp_path / "modern.txt")
    got, _ = read_samples(f"{tmp_path / 'old.txt'}:ranks=16")
    assert [s.size for s in got] == [s.size for s in want]
    assert [s.time_s for s in got] == pytest.approx([s.time_s for s in want], rel=1e-3)


def _glitch(text: str, size: int, factor: float, columns: tuple[int, ...]) -> str:
    """``text`` with the time(s) at ``columns`` (5: out-of-place, 9: in-place) of the row of ``size`` made
    ``factor`` x longer (algbw and busbw to match), as a burst of interference leaves one measurement."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == str(size):
            for k in columns:
                fields[k] = f"{float(fields[k]) * factor:.5g}"
                fields[k + 1] = f"{float(fields[k + 1]) / factor:.2f}"
                fields[k + 2] = f"{float(fields[k + 2]) / factor:.2f}"
            line = "  ".join(fields)
        out.append(line)
    return "\n".join(out) + "\n"


def test_the_fit_takes_the_faster_of_out_of_place_and_in_place(tmp_path):
    """nccl-tests times every size twice (out-of-place, then in-place): a burst of interference in one of
    them (a published 8-node log: 1272 us out-of-place, 321 us in-place at 8 MiB) is not what the hardware
    does. The samples keep the out-of-place time and the in-place one; the NCCL fit takes the faster."""
    sizes = [2**k for k in range(20, 31, 2)]
    truth = intra(0.8, simple=-8e-6)
    clean = nccl_text("all_reduce_perf", "allreduce", 8, synthetic(ONE, 8, truth, sizes=sizes))
    fits = {}
    for name, columns in (("out-of-place", (5,)), ("both", (5, 9))):
        path = tmp_path / f"{name}.txt"
        path.write_text(_glitch(clean, 2**22, 3.0, columns))
        samples, source = read_samples(path)
        hit = next(s for s in samples if s.size == 2**22)
        assert hit.time_s == pytest.approx(3 * next(t for n, t in synthetic(ONE, 8, truth, sizes=[2**22])), rel=1e-3)
        if name == "out-of-place":
            assert hit.in_place_s == pytest.approx(hit.time_s * 1.01 / 3, rel=1e-3) and hit.best_s == hit.in_place_s
        else:
            assert hit.best_s == hit.time_s  # the in-place time is no faster
        fits[name] = fit_calibration(samples, ONE, [source])
    good, bad = fits["out-of-place"], fits["both"]
    assert good.classes["intra-host"].efficiency == pytest.approx(0.8, rel=0.03)
    assert good.nccl_offset["simple"] == pytest.approx(-8e-6, abs=6e-6)
    # where both measurements carry the burst, the fit cannot tell it from the hardware
    off = abs(bad.nccl_offset["simple"] + 8e-6) > 20e-6 or abs(bad.classes["intra-host"].efficiency - 0.8) > 0.05
    assert off
    # the residuals are labelled with what was fitted: the faster time
    fitted = good.classes["intra-host"].fit.residuals
    assert [r.measured_s for r in fitted if r.size_bytes == 2**22] == [pytest.approx(hit.time_s * 1.01 / 3, rel=1e-3)]


def test_in_place_times_with_wrong_results_are_not_taken(tmp_path):
    rows = [(2**20, 80e-6), (2**24, 300e-6)]
    text = nccl_text("all_reduce_perf", "allreduce", 16, rows).splitlines()
    bad = []
    for line in text:
        fields = line.split()
        if fields and fields[0] == str(2**24):
            fields[9], fields[10] = "30.0", f"{2**24 / 30e-6 / 1e9:.2f}"  # in-place 10x faster, but wrong
            fields[12] = "3"
            line = "  ".join(fields)
        bad.append(line)
    path = tmp_path / "wrong.txt"
    path.write_text("\n".join(bad) + "\n")
    samples, _ = read_samples(path)
    assert [s.best_s for s in samples] == pytest.approx([80e-6, 300e-6])
    assert samples[0].in_place_s == pytest.approx(80.8e-6) and samples[1].in_place_s == 0.0


def _nccl_tests_2_19(text: str, *, per_iter: bool, timestamps: bool, cputime: bool, header: bool) -> str:
    """``text`` (nccl_text's layout) as nccl-tests 2.19 prints it with ``-I 1`` (after each side's ``time algbw
    busbw #wrong`` the per-iteration ``i_min i_max i_p99 i_cv%``), ``-S 1`` (a timestamp ending every row),
    ``-C 1`` (``cputime`` columns) and without its header lines (a post of the table alone)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if line.startswith("#") and fields[1:3] == ["size", "count"]:
            if per_iter:
                side = "time algbw busbw #wrong i_min i_max i_p99 i_cv%"
                fields = ["#", *fields[1:6], side, side]
            line = " ".join(fields).replace("time", "cputime" if cputime else "time")
            line += " timestamp" if timestamps else ""
        elif fields and fields[0].isdigit() and len(fields) == 13:
            if per_iter:  # i_min below the time, i_max far above: columns no algbw agrees with
                out_t, in_t = float(fields[5]), float(fields[9])
                stats = [f"{out_t * 0.97:.2f}", f"{out_t * 3:.2f}", f"{out_t * 2:.2f}", "3.10"]
                fields = (
                    fields[:9]
                    + stats
                    + fields[9:]
                    + [f"{in_t * 0.96:.2f}", f"{in_t * 3:.2f}", f"{in_t * 2:.2f}", "4.20"]
                )
            line = "  ".join(fields + (["2026-07-09", "16:03:21"] if timestamps else []))
        if header or not line.startswith("#"):
            out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("per_iter", [True, False])
@pytest.mark.parametrize(
    "timestamps, cputime, header", [(False, False, True), (True, True, True), (True, False, False)]
)
def test_reads_the_columns_of_nccl_tests_2_19(tmp_path, per_iter, timestamps, cputime, header):
    """nccl-tests 2.19's ``-I`` puts four per-iteration columns after each side's #wrong, so the in-place time
    is 8 columns on, not 4 (it was lost: the faster of the two not taken); ``-S`` ends rows with a date and a
    time, ``-C`` names the columns ``cputime``. Every layout gives the samples of today's layout."""
    rows = [(2**20, 80e-6), (2**24, 300e-6), (2**28, 3000e-6)]
    clean = nccl_text("all_reduce_perf", "allreduce", 16, rows)
    want, _ = parse_nccl_text(clean, "clean")
    text = _nccl_tests_2_19(clean, per_iter=per_iter, timestamps=timestamps, cputime=cputime, header=header)
    got, source = parse_nccl_text(text, "new", ranks=None if header else 16)
    assert [(s.size, s.time_s, s.in_place_s) for s in got] == [(s.size, s.time_s, s.in_place_s) for s in want]
    assert all(s.in_place_s == pytest.approx(s.time_s * 1.01, rel=1e-3) for s in got) and source.records == 3


@pytest.mark.parametrize(
    "env, code, spec",
    [
        ([], 22803, "nccl:version=2.28.3"),
        (["NCCL_ALGO=Ring", "NCCL_PROTO=Simple"], 22602, "nccl:algo=ring,proto=simple,version=2.26.2"),
        (["NCCL_NVLS_ENABLE=0", "NCCL_MIN_CTAS=24"], 22105, "nccl:algo=^nvls|nvls-tree,version=2.21.5"),
        (["NCCL_ALGO=Tree"], 0, "nccl:algo=tree"),
    ],
)
def test_nccl_tests_json_runs_the_schedule_and_release_it_states(tmp_path, env, code, spec):
    """nccl-tests' ``-J`` document carries the run's environment (``env``: KEY=VALUE strings) and the NCCL
    release (``nccl_version``, NCCL_VERSION_CODE): the samples go through the schedule NCCL ran and the
    tuner of that release, as the printed log's header and command line give them."""
    doc = nccl_json("all_reduce_perf", 16, [(2**20, 80e-6), (2**24, 300e-6)])
    doc["env"] = ["PATH=/usr/bin", *env]
    doc["nccl_version"] = code
    samples, source = parse_nccl_json(doc, "run.json")
    assert {s.algorithm for s in samples} == {spec}
    assert source.unmodelled == (["NCCL_MIN_CTAS=24"] if "NCCL_MIN_CTAS=24" in env else [])
    text = nccl_text("all_reduce_perf", "allreduce", 16, [(2**20, 80e-6), (2**24, 300e-6)])
    text = text.replace("nccl-library=22803", f"nccl-library={code}" if code else "")
    same, _ = parse_nccl_text(" ".join(env) + "\n" + text, "run.txt")  # the same run, printed
    assert {s.algorithm for s in same} == {spec}
    bare = {s.algorithm for s in parse_nccl_json({**doc, "env": []}, "bare.json")[0]}
    doc["env"] = "NCCL_ALGO=Ring"  # not a list: taken as no environment, never a traceback
    assert {s.algorithm for s in parse_nccl_json(doc, "odd.json")[0]} == bare


def test_settings_the_model_does_not_represent_are_named(tmp_path):
    """A log that sets NCCL's channel count or QPs (NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2 lifted a
    published 8-node ring from 320 to 391 GB/s busbw) is read and fitted, and the calibration warns that
    the fit absorbs what the model does not represent; the importer names them in its source."""
    rows = synthetic(TWO, 16, LinkModel(), sizes=SIZES)
    header = "mpirun -np 16 -x NCCL_MIN_CTAS=24 -x NCCL_IB_QPS_PER_CONNECTION=2 -x NCCL_ALGO=Ring ./all_reduce_perf"
    path = tmp_path / "ctas.txt"
    path.write_text(_log(rows, header=header))
    samples, source = read_samples(path)
    assert source.unmodelled == ["NCCL_IB_QPS_PER_CONNECTION=2", "NCCL_MIN_CTAS=24"]
    assert {s.algorithm for s in samples} == {"nccl:algo=ring,version=2.28.3"}  # NCCL_ALGO still forces
    cal = fit_calibration(samples, TWO, [source])
    named = [w for w in cal.warnings if "NCCL_MIN_CTAS=24" in w]
    assert len(named) == 1 and "does not represent" in named[0] and str(path) in named[0]
    plain = tmp_path / "plain.txt"
    plain.write_text(_log(rows, header="mpirun -np 16 -x NCCL_ALGO=Ring ./all_reduce_perf"))
    samples, source = read_samples(plain)
    assert source.unmodelled == []
    assert not any("does not represent" in w for w in fit_calibration(samples, TWO, [source]).warnings)


@pytest.mark.parametrize("style", ["2.24+", "2.20-2.23"])
def test_nccls_own_picks_from_its_tuning_lines_set_each_sizes_schedule(tmp_path, style):
    """NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING prints what every call ran (rank 0); the import takes each
    size's most frequent (algorithm, protocol) as its schedule, over NCCL_ALGO and over the tuner's pick."""
    ran = {2**20: ("Tree", "LL128", 0, 1), 2**24: ("NVLS_TREE", "SIMPLE", 5, 2), 2**28: ("RING", "SIMPLE", 1, 2)}
    lines = []
    for size, (name, proto, a, q) in ran.items():
        for _ in range(3):  # warm-up and timed calls each print one
            if style == "2.24+":
                lines.append(
                    f"node00:1:1 [0] NCCL INFO AllReduce: {size} Bytes -> Algo {name} proto {proto} channel{{Lo..Hi}}={{0..15}}"
                )
            else:
                lines.append(f"node00:1:1 [0] NCCL INFO {size} Bytes -> Algo {a} proto {q} time 61.250000")
    # one stray call of another pick, and another function's line, change nothing
    lines.append(
        f"node00:1:1 [0] NCCL INFO AllReduce: {2**28} Bytes -> Algo TREE proto SIMPLE channel{{Lo..Hi}}={{0..15}}"
    )
    lines.append(
        f"node00:1:1 [0] NCCL INFO AllGather: {2**24} Bytes -> Algo PAT proto SIMPLE channel{{Lo..Hi}}={{0..1}}"
    )
    # a pick NCCL never makes (NVLS runs Simple only) leaves the size to the tuner
    lines += [f"node00:1:1 [0] NCCL INFO AllReduce: {2**30} Bytes -> Algo NVLS proto LL channel{{Lo..Hi}}={{0..1}}"] * 4
    rows = synthetic(TWO, 16, LinkModel(), sizes=[2**20, 2**24, 2**28, 2**30])
    path = tmp_path / "tuning.txt"
    path.write_text(_log(rows, header="\n".join(["export NCCL_ALGO=Ring,Tree,NVLSTree", *lines])))
    samples, source = read_samples(path)
    assert [s.algorithm for s in samples] == [
        "nccl:algo=tree,proto=ll128,version=2.28.3",
        "nccl:algo=nvls-tree,proto=simple,version=2.28.3",
        "nccl:algo=ring,proto=simple,version=2.28.3",
        "nccl:algo=ring|tree|nvls-tree,version=2.28.3",  # no TUNING line: NCCL_ALGO restricts the tuner
    ]
    assert "NCCL's own picks (its TUNING lines) at 3 size(s)" in source.detail
    for s in samples:  # each runs as stated
        r = simulate(TWO, "allreduce", s.algorithm, s.size, gamma=0.0)
        assert r.time_s > 0


#: excerpts of posts in the third held-out set (docs/nccl-heldout.md, "More clusters (2026-11-27, night)")
SKYPILOT = """\
(head, rank=0, pid=3808) All nodes: 10.100.9.12:8,10.100.10.12:8
(head, rank=0, pid=3808) [1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1024 maxBytes 8589934592 step: 2(factor)
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  0 Group  0 Pid   7774 on nc-d87e1263-head device  0 [0000:8f:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  1 Group  0 Pid   7775 on nc-d87e1263-head device  1 [0000:90:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong
(head, rank=0, pid=3808) [1,0]<stdout>:  4294967296      67108864     float    none      -1    12416  345.92  324.30      0    12133  354.00  331.87      0
(head, rank=0, pid=3808) [1,0]<stdout>:  8589934592     134217728     float    none      -1    24724  347.44  325.72      0    24214  354.75  332.58      0
"""
CETUS = """\
[cetus-g88-094] running nccl test all_reduce -b 1 -e 1G, world_size=16
# nGpus(perProc) 1 minBytes 1 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
#  Rank  7 Group  0 Pid 2562583 on cetus-g88-094 device  7 [0xd7] NVIDIA H200
#  Rank 15 Group  0 Pid 1924610 on cetus-g88-061 device  7 [0xd7] NVIDIA H200
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
cetus-g88-061:3259226:3260615 [7] NCCL INFO Connected all trees
    579.3    0.00    0.00      0    137.0    0.00    0.00      0
           0             0  bfloat16     sum      -1     0.36    0.00    0.00      0     0.33    0.00    0.00      0
           2             1  bfloat16     sum      -1   2500.6    0.00    0.00      0   3291.0    0.00    0.00      0
   536870912     268435456  bfloat16     sum      -1   8299.2   64.69  121.29      0    11804   45.48   85.28      0
  1073741824     536870912  bfloat16     sum      -1    22645   47.42   88.91      0    23322   46.04   86.33      0
"""
H800 = """\
# nThread 1 nGpus 8 minBytes 4 maxBytes 2147483648 step: 2(factor) warmup iters: 50 iters: 100 agg iters: 1
{ranks}
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  1073741824     268435456     float    none       0   6520.1  164.68  164.68    N/A   6520.5  164.67  164.67    N/A
  2147483648     536870912     float    none       0    13018  164.97  164.97    N/A    13014  165.02  165.02    N/A
"""
GIB = """\
kubectl exec -it nccl-gib-test-0 -- /usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G host-0 host-1
# nThread 1 nGpus 1 minBytes 1024 maxBytes 8589934592 step: 2(factor) warmup iters: 50 iters: 100 agg iters: 1
{ranks}
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  4294967296      67108864     float    none      -1    15394  279.00  261.57      0    15332  280.13  262.62      0
  8589934592     134217728     float    none      -1    30970  277.36  260.03      0    31063  276.53  259.25      0
"""


def _device_lines(n: int, per: int, model: str) -> str:
    return "\n".join(
        f"#  Rank {r:2d} Group  0 Pid {r} on node{r // per} device {r % per} [0x0f] {model}" for r in range(n)
    )


def test_import_reads_the_posts_of_the_third_held_out_set(tmp_path):
    """A job runner's label before Open MPI's (SkyPilot), nccl-tests' rows of 0 bytes among NCCL INFO lines
    and a cut row (a parser's fixture), a table without a reduction (redop none: a broadcast's busbw = algbw
    on 8 GPUs, not an all-reduce of 2 ranks), and Google's gIB wrapper naming its test (``-t all_gather``)."""
    path = tmp_path / "post.txt"
    path.write_text(SKYPILOT)
    samples, _ = read_samples(f"{path}:collective=allgather,ranks=16")
    assert [s.size for s in samples] == [2**32, 2**33] and samples[0].time_s == pytest.approx(12416e-6)
    path.write_text(CETUS)
    samples, _ = read_samples(path)
    assert [s.size for s in samples] == [2, 2**29, 2**30] and {s.ranks for s in samples} == {16}
    path.write_text(H800.format(ranks=_device_lines(8, 8, "NVIDIA H800")))
    with pytest.raises(CalibrationError, match="its redop is 'none': not an all-reduce's table"):
        read_samples(path)
    path.write_text(GIB.format(ranks=_device_lines(16, 8, "NVIDIA B200")))
    samples, source = read_samples(path)
    assert {s.collective for s in samples} == {"allgather"} and {s.ranks for s in samples} == {16}
    assert source.detail.startswith("all_gather_perf, 16 ranks")
