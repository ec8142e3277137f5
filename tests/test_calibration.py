"""Calibration: fits recover known parameters from synthetic measurements in every input format, the
calibration file applies the same way on every engine path, and the CLI ends bad input in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collsim.cli import main
from sim import simulate
from sim.cluster import Cluster
from sim.errors import CalibrationError
from tests.calib_fixtures import (
    compare_args,
    hockney,
    nccl_json,
    nccl_rows,
    nccl_text,
    probe_lines,
    validate_lines,
    write_lines,
)
from validate.calibration import Calibration, fit_calibration, load_calibration, read_samples, save_calibration
from validate.calibration.compare import predict

DATA = Path(__file__).parent / "data"
STAR = "star:hosts=4,bandwidth=1Gbps"
B = 1e9 / 8
SIZES = [2**k for k in range(10, 27)]


def fit(tmp_path, lines, topology=STAR, name="probes.jsonl"):
    samples, source = read_samples(write_lines(tmp_path / name, lines))
    return fit_calibration(samples, topology, [source])


def test_stream_probes_recover_latency_and_efficiency(tmp_path):
    cal = fit(tmp_path, probe_lines({("stream", "same-switch", 1): hockney(50e-6, 0.93, B)}, SIZES))
    entry = cal.classes["same-switch"]
    assert cal.calibrated == ["same-switch.latency", "same-switch.efficiency"]
    assert entry.latency == pytest.approx(50e-6, rel=0.03)
    assert entry.efficiency == pytest.approx(0.93, rel=0.003)
    assert entry.nominal_bandwidth == pytest.approx(B) and entry.fit.r2 > 0.9999 and entry.fit.max_rel < 0.02


def test_two_regimes_become_segments(tmp_path):
    small, large = hockney(20e-6, 3.0, B), hockney(300e-6, 0.9, B)
    model = {("stream", "same-switch", 1): lambda n: small(n) if n < 2**16 else large(n)}
    cal = fit(tmp_path, probe_lines(model, SIZES))
    segments = cal.classes["same-switch"].segments
    assert cal.calibrated == ["same-switch.segments"] and len(segments) == 2
    assert 2**15 < segments[1].min_bytes < 2**16
    assert segments[1].efficiency == pytest.approx(0.9, rel=0.005)
    assert segments[1].latency == pytest.approx(300e-6, rel=0.05)
    # the calibrated simulator gives each regime's time back
    g = Cluster(STAR, link_model=cal.link_model())
    for n in (4096, 2**20):
        got = simulate(g, "sendrecv", "direct", n, ranks=2).time_s
        assert got == pytest.approx(model[("stream", "same-switch", 1)](n), rel=0.02)


def test_gamma_and_link_sharing_from_probes(tmp_path):
    single = hockney(50e-6, 0.95, B)
    tests = {
        ("stream", "same-switch", 1): single,
        ("pingpong", "same-switch", 1): single,
        ("bidir", "same-switch", 1): lambda n: 50e-6 + n / (0.95 * 0.9 * B),
        ("fanin", "same-switch", 3): lambda n: 50e-6 + 3 * n / (0.95 * B),
        ("alltoall", "same-switch", 3): lambda n: 50e-6 + 3 * n / (0.95 * 0.8 * B),
        ("reduce", "local", 1): lambda n: 5e-6 + n * 2e-10,
    }
    cal = fit(tmp_path, probe_lines(tests, SIZES))
    assert cal.gamma == pytest.approx(2e-10, rel=0.01)
    assert cal.duplex == {1: pytest.approx(0.9, abs=0.01), 3: pytest.approx(0.8, abs=0.01)}
    assert cal.flows == {} and "duplex" in cal.calibrated and "flows" not in cal.calibrated
    assert any("within 3% of max-min sharing" in note for note in cal.notes)


def test_nccl_tests_text_recovers_ring_alpha_beta(tmp_path):
    rows = nccl_rows("allreduce", 8, [2**k for k in range(13, 28)], 6e-6, 1 / (0.9 * 12.5e9))
    path = tmp_path / "ar.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, rows))
    samples, source = read_samples(path)
    assert source.kind == "nccl-tests" and {s.ranks for s in samples} == {8} and len(samples) == 15
    cal = fit_calibration(samples, "star:hosts=8,bandwidth=100Gbps", [source])
    entry = cal.classes["same-switch"]
    assert entry.latency == pytest.approx(6e-6, rel=0.02)
    assert entry.efficiency == pytest.approx(0.9, rel=0.005)


def test_nccl_tests_json_recovers_ring_alpha_beta(tmp_path):
    rows = nccl_rows("allgather", 4, [2**k for k in range(12, 26)], 8e-6, 1 / (0.8 * 12.5e9))
    path = tmp_path / "ag.json"
    path.write_text(json.dumps(nccl_json("all_gather_perf", 4, rows)))
    samples, source = read_samples(path)
    assert source.kind == "nccl-tests-json" and samples[0].collective == "allgather"
    entry = fit_calibration(samples, "star:hosts=4,bandwidth=100Gbps", [source]).classes["same-switch"]
    assert entry.latency == pytest.approx(8e-6, rel=0.02)
    assert entry.efficiency == pytest.approx(0.8, rel=0.005)


def test_validate_json_lines_recover_alpha_beta(tmp_path):
    lines = validate_lines("allreduce", "builtin", 4, [2**k for k in range(14, 25)], 300e-6, 1 / (0.95 * B))
    cal = fit(tmp_path, lines, name="v.jsonl")
    entry = cal.classes["same-switch"]
    assert entry.latency == pytest.approx(300e-6, rel=0.02)
    assert entry.efficiency == pytest.approx(0.95, rel=0.005)
    assert cal.sources[0].kind == "validate" and cal.sources[0].run_ids == ["validate-synthetic"]


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "reducescatter"])
def test_validates_ring_is_compared_as_the_rank_order_ring_it_ran(tmp_path, collective):
    """validate's ring runs its ranks in rank order (validate/algorithms/ring.py); the simulator's ``ring``
    takes the rail order on hosts of several GPUs. A measured ``ring`` is predicted as ``ring:order=rank``
    and keeps its label; a library's builtin keeps the schedule it stands for."""
    lines = validate_lines(collective, "ring", 16, [2**20, 2**24], 300e-6, 1 / B)
    samples, _ = read_samples(write_lines(tmp_path / "ring.jsonl", lines))
    assert {(s.algorithm, s.label) for s in samples} == {("ring:order=rank", "ring")}
    rank = simulate("dgx:hosts=2", collective, "ring:order=rank", 2**24, engine="message").time_s
    rail = simulate("dgx:hosts=2", collective, "ring", 2**24, engine="message").time_s
    assert abs(rank / rail - 1) > 1e-3
    (row,) = [r for r in predict(samples, "dgx:hosts=2", Calibration(topology="dgx:hosts=2")) if r.size_bytes == 2**24]
    assert row.nominal_s == pytest.approx(rank, rel=1e-9) and row.algorithm == "ring"
    builtin = validate_lines("allreduce", "builtin", 4, [2**20], 300e-6, 1 / B)
    assert {s.algorithm for s in read_samples(write_lines(tmp_path / "b.jsonl", builtin))[0]} == {"ring"}


def test_one_size_calibrates_bandwidth_only(tmp_path):
    rows = nccl_rows("allreduce", 8, [2**25], 6e-6, 1 / (0.9 * 12.5e9))
    path = tmp_path / "one.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, rows))
    samples, source = read_samples(path)
    cal = fit_calibration(samples, "star:hosts=8,bandwidth=100Gbps,latency=3us", [source])  # nominal α = 6 us
    assert cal.calibrated == ["same-switch.efficiency"] and cal.classes["same-switch"].latency is None
    assert cal.classes["same-switch"].efficiency == pytest.approx(0.9, rel=0.01)


def test_realistic_nccl_tests_sample(tmp_path):
    """A two-node all_reduce_perf log (tests/data/README.md): the bottleneck classes are the inter-host ones."""
    samples, source = read_samples(DATA / "all_reduce_perf_2x8.txt")
    # the header's nccl-library=22803: NCCL 2.28.3's tuner
    assert source.detail == "all_reduce_perf, 16 ranks, nccl:version=2.28.3" and len(samples) == 23
    cal = fit_calibration(samples, "dgx:hosts=2", [source])
    assert set(cal.classes) == {"same-switch", "cross-switch"}  # both cross the 400 Gb/s NICs
    entry = cal.classes["same-switch"]
    assert 0.5 < entry.efficiency < 1.0 and entry.fit.max_rel < 0.25
    save_calibration(cal, tmp_path / "c.json")
    r = simulate(
        Cluster("dgx:hosts=2", link_model=load_calibration(tmp_path / "c.json").link_model()), size=samples[-1].size
    )
    assert r.time_s == pytest.approx(samples[-1].time_s, rel=0.15)


def test_calibration_file_round_trip_and_refusals(tmp_path):
    cal = fit(tmp_path, probe_lines({("stream", "same-switch", 1): hockney(50e-6, 0.93, B)}, SIZES))
    for name in ("c.yaml", "c.json"):
        assert load_calibration(save_calibration(cal, tmp_path / name)) == cal
    bad = tmp_path / "bad.json"
    for text, message in [
        ('{"topology": "x", "calibrated": ["gamma"]}', "calibrated[0]: 'gamma' is listed but gamma has no value"),
        ('{"topology": "x", "calibrated": ["warp.latency"]}', "is not a parameter"),
        ('{"topology": "x", "topology": "y"}', "duplicate key 'topology'"),
        ('{"topology": "x", "gamma": NaN}', "NaN is not a number"),
        (
            '{"topology": "x", "classes": {"same-switch": {"efficiency": -1}}}',
            "classes.same-switch.efficiency: must be > 0",
        ),
        ('{"topology": "x", "format": "other"}', "format: expected 'collsim-calibration'"),
        ("[1, 2]", "expected a mapping at the top level"),
    ]:
        bad.write_text(text)
        with pytest.raises(CalibrationError, match=re.escape(message)):
            load_calibration(bad)


def test_calibrated_message_and_fast_paths_agree():
    cal = Calibration(
        topology="t",
        classes={"same-switch": {"latency": 3e-4, "efficiency": 0.8}},
        calibrated=["same-switch.latency", "same-switch.efficiency"],
    )
    g = Cluster("star:hosts=6,bandwidth=1Gbps,latency=5us", link_model=cal.link_model())
    one = simulate(g, "sendrecv", "direct", 2**20, ranks=2)
    assert one.time_s == pytest.approx(3e-4 + 2**20 / (0.8 * B), rel=1e-12)
    fast = simulate(g, "allreduce", "ring", "8MiB")
    slow = simulate(g, "allreduce", "ring", "8MiB", engine="message")
    assert fast.engine == "fast:maxplus" and fast.time_s == pytest.approx(slow.time_s, rel=1e-9)
    assert fast.closed_form_s == pytest.approx(fast.time_s, rel=1e-9)  # one α-β pair fits every rank pair
    dup = Cluster(
        "star:hosts=6,bandwidth=1Gbps",
        link_model=cal.model_copy(update={"duplex": {1: 0.5}, "calibrated": [*cal.calibrated, "duplex"]}).link_model(),
    )
    fast, slow = (
        simulate(dup, "allreduce", "ring", "8MiB"),
        simulate(dup, "allreduce", "ring", "8MiB", engine="message"),
    )
    assert fast.engine == "fast:events" and fast.time_s == pytest.approx(slow.time_s, rel=1e-9)
    assert fast.time_s > 1.9 * simulate(g, "allreduce", "ring", "8MiB").time_s  # every link busy both ways


def test_duplex_factor_needs_traffic_both_ways():
    cal = Calibration(topology="t", duplex={1: 0.5}, calibrated=["duplex"])
    g = Cluster("star:hosts=3,bandwidth=1Gbps", link_model=cal.link_model())
    alone = simulate(g, "sendrecv", "direct", 2**20, ranks=2).time_s  # 0->1 and 1->0: both ways
    assert alone == pytest.approx(2 * 2**20 / B, rel=1e-9)
    assert simulate(g, "broadcast", "flat", 2**20, ranks=2).time_s == pytest.approx(2**20 / B, rel=1e-9)


def test_compare_refuses_its_own_calibration_runs(tmp_path, capsys):
    lines = validate_lines("allreduce", "ring", 4, [2**k for k in range(14, 25)], 300e-6, 1 / (0.95 * B))
    measured = write_lines(tmp_path / "m.jsonl", lines)
    code = main(["validate", "calibrate", "-t", STAR, "--from", str(measured), "-o", str(tmp_path / "c.yaml")])
    assert code == 0 and (tmp_path / "c.yaml").exists()
    capsys.readouterr()
    code = main(compare_args(STAR, tmp_path / "c.yaml", measured, "--out", str(tmp_path / "o")))
    err = capsys.readouterr().err
    assert code == 2 and "separate runs" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "compare.json").exists()


def _calibrated_and_new_runs(tmp_path):
    """A calibration fitted to one ring run (run id a) and two later runs to compare (b: ring at
    1 and 4 MiB, c: builtin at 1 MiB), all on the same 300 us, 95%-efficient links."""
    fitted = validate_lines("allreduce", "ring", 4, [2**k for k in range(14, 25)], 300e-6, 1 / (0.95 * B), run_id="a")
    cal = str(tmp_path / "c.yaml")
    assert (
        main(
            ["validate", "calibrate", "-t", STAR, "--from", str(write_lines(tmp_path / "cal.jsonl", fitted)), "-o", cal]
        )
        == 0
    )
    new = validate_lines("allreduce", "ring", 4, [2**20, 2**22], 300e-6, 1 / (0.95 * B), run_id="b", seed=1)
    new += validate_lines("allreduce", "builtin", 4, [2**20], 300e-6, 1 / (0.95 * B), run_id="c", seed=2)
    return compare_args(STAR, cal, write_lines(tmp_path / "new.jsonl", new))


def test_compare_from_measured_files_writes_every_output(tmp_path, capsys):
    compare = _calibrated_and_new_runs(tmp_path)
    capsys.readouterr()
    code = main([*compare, "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0 and "builtin" in out
    doc = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert doc["summary"]["all"]["points"] == 3 and doc["summary"]["all"]["max_abs"] < 0.01
    assert doc["meta"]["calibration"]["calibrated"] == ["same-switch.latency", "same-switch.efficiency"]
    assert any("gamma" in item for item in doc["meta"]["calibration"]["nominal"])
    assert (tmp_path / "o" / "compare.csv").read_text().count("\n") == 4
    assert (tmp_path / "o" / "compare.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_selects_measured_algorithms_and_sizes(tmp_path, capsys):
    base = [*_calibrated_and_new_runs(tmp_path), "--no-plot"]
    capsys.readouterr()
    assert main([*base, "--algorithms", "builtin", "--sizes", "1MiB", "--out", str(tmp_path / "o")]) == 0
    rows = json.loads((tmp_path / "o" / "compare.json").read_text())["rows"]
    assert [(r["algorithm"], r["size_bytes"]) for r in rows] == [("builtin", 2**20)]
    for extra, message in [
        (["--algorithms", "rng"], "'rng' is not in the measured files (they hold: builtin, ring)"),
        (["--sizes", "8MiB"], "none of these sizes is in the measured files"),
    ]:
        capsys.readouterr()
        assert main([*base, *extra, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def test_simulate_and_compare_take_a_calibration(tmp_path, capsys):
    cal = Calibration(
        topology="t",
        classes={"same-switch": {"latency": 1e-3, "efficiency": 0.5}},
        gamma=1e-9,
        calibrated=["same-switch.latency", "same-switch.efficiency", "gamma"],
    )
    path = save_calibration(cal, tmp_path / "c.yaml")
    capsys.readouterr()
    assert main(["simulate", "-t", STAR, "--size", "1MiB", "--calibration", str(path), "--json"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert main(["simulate", "-t", STAR, "--size", "1MiB", "--json"]) == 0
    nominal = json.loads(capsys.readouterr().out)
    assert calibrated["time_s"] > 2 * nominal["time_s"]
    assert main(["compare", "-t", STAR, "--size", "1MiB", "--calibration", str(path), "--algorithms", "ring"]) == 0
    assert "(fitted on t; calibrated: same-switch.latency" in capsys.readouterr().out
    save_calibration(cal.model_copy(update={"topology": STAR}), path)
    assert main(["simulate", "-t", STAR, "--size", "1MiB", "--calibration", str(path)]) == 0
    assert f"# calibration: {path} (calibrated: same-switch.latency" in capsys.readouterr().out
    assert main(["simulate", "-t", STAR, "--calibration", str(tmp_path / "none.yaml")]) == 2
    assert "no such calibration file" in capsys.readouterr().err


def test_reports_apply_the_spec_calibration(tmp_path):
    from reports import build_report, parse_spec
    from tests.report_fixtures import tiny_spec

    cal = Calibration(
        topology="star",
        classes={"same-switch": {"latency": 1e-3, "efficiency": 0.5}},
        gamma=1e-9,
        calibrated=["same-switch.latency", "same-switch.efficiency", "gamma"],
    )
    save_calibration(cal, tmp_path / "fit.yaml")
    nominal = build_report(parse_spec(tiny_spec()), tmp_path / "n", executor="serial", progress=False)
    spec = parse_spec(tiny_spec(calibration="fit.yaml"), tmp_path)
    calibrated = build_report(spec, tmp_path / "c", executor="serial", progress=False)
    assert calibrated.data.parameters == "calibrated" and calibrated.data.job.gamma == 1e-9
    assert calibrated.data.summary[0].endswith("[calibrated]")
    t_nom = [row for row in nominal.data.iterations if row.gpus == 4][0].iteration_s
    t_cal = [row for row in calibrated.data.iterations if row.gpus == 4][0]
    assert t_cal.iteration_s > t_nom and t_cal.parameters == "calibrated"
