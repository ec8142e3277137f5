"""A disturbed size of an nccl-tests log is left out of the NCCL fit, with a warning (docs/calibration.md,
"A disturbed size is left out"): a size slower than a larger size of the same run, which no schedule fits."""

from __future__ import annotations

import pytest

from collsim.cli import main
from sim.cluster import Cluster
from sim.linkmodel import LinkModel, Segment
from sim.simulate import simulate
from tests.calib_fixtures import nccl_text
from validate.calibration import fit_calibration, nccl_fit, read_samples
from validate.calibration.inputs import Sample
from validate.calibration.nccl_fit import DISTURBED, fit_nccl, leave_out_disturbed

ONE = "hgx:hosts=1,preset=dgx-h100"
SIZES = [2**20, 2**22, 2**24, 2**26, 2**28]
#: NVLink at 0.8 of line rate, NCCL's Simple fixed cost 8 us less than its estimate
TRUTH = LinkModel(classes={"intra-host": (Segment(0, None, 0.8),)}, nccl_offset={"simple": -8e-6})


def _clean() -> list[tuple[int, float]]:
    cluster = Cluster(ONE, link_model=TRUTH)
    return [(n, simulate(cluster, "allreduce", "nccl", n, ranks=8, gamma=0.0).time_s) for n in SIZES]


def _fit(tmp_path, name: str, rows: list[tuple[int, float]]) -> nccl_fit.NcclFit:
    path = tmp_path / f"{name}.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, rows))
    samples, _ = read_samples(path)
    return fit_nccl(samples, Cluster(ONE))


def _same_fit(a: nccl_fit.NcclFit, b: nccl_fit.NcclFit) -> None:
    assert a.entries.keys() == b.entries.keys() and a.nccl_offset.keys() == b.nccl_offset.keys()
    for cls, entry in a.entries.items():
        assert entry.efficiency == pytest.approx(b.entries[cls].efficiency, rel=1e-12, abs=1e-12)
        assert [r.size_bytes for r in entry.fit.residuals] == [r.size_bytes for r in b.entries[cls].fit.residuals]
    for proto, offset in a.nccl_offset.items():
        assert offset == pytest.approx(b.nccl_offset[proto], rel=1e-12, abs=1e-12)


def test_a_disturbed_size_is_left_out_as_if_the_log_had_not_measured_it(tmp_path):
    """16 MiB at 1.5x the time of 64 MiB (another job on the fabric): the fit is the fit of the log without
    16 MiB, and one warning names it, its time and the larger size it is slower than."""
    clean = _clean()
    slow = 1.5 * clean[3][1]
    disturbed = [(n, slow if n == 2**24 else t) for n, t in clean]
    got = _fit(tmp_path, "disturbed", disturbed)
    want = _fit(tmp_path, "without", [(n, t) for n, t in clean if n != 2**24])
    _same_fit(got, want)
    assert want.warnings == []
    [warning] = [w for w in got.warnings if "left out" in w]
    assert warning.startswith(f"{tmp_path / 'disturbed.txt'}: left out of the fit: 16MiB ({slow * 1e6:,.1f} us) ")
    assert f"slower than 64MiB ({clean[3][1] * 1e6:,.1f} us) -- a disturbed run?" in warning
    # (and the fit is not the one that takes it in)
    assert abs(got.entries["intra-host"].efficiency - 0.8) < 0.02


def test_a_clean_log_fits_as_before_without_a_warning(tmp_path, monkeypatch):
    clean = _clean()
    got = _fit(tmp_path, "clean", clean)
    assert got.warnings == []
    monkeypatch.setattr(nccl_fit, "leave_out_disturbed", lambda samples: (list(samples), []))
    _same_fit(got, _fit(tmp_path, "before", clean))


def test_a_log_whose_every_size_falls_is_kept_whole_and_warned(tmp_path, monkeypatch):
    """Times that fall at every size (a run, not a disturbance of it): leaving them out would keep 1 size of
    5, so all are fitted, as before, and the warning says they were kept."""
    falling = [(n, (600 - 100 * i) * 1e-6) for i, n in enumerate(SIZES)]
    got = _fit(tmp_path, "falling", falling)
    assert got.warnings[0] == (
        f"{tmp_path / 'falling.txt'}: kept in the fit (leaving them out would keep 1 of 5 sizes): 1MiB (600.0 us), "
        "4MiB (500.0 us), 16MiB (400.0 us), 64MiB (300.0 us) slower than 256MiB (200.0 us) -- a disturbed run? "
        "(sizes whose time falls as the message grows cannot be fitted by any schedule)"
    )
    monkeypatch.setattr(nccl_fit, "leave_out_disturbed", lambda samples: (list(samples), []))
    before = _fit(tmp_path, "before", falling)
    _same_fit(got, before)
    assert got.warnings[1:] == before.warnings


def _sample(size: int, us: float, *, log: str = "a.txt", in_place: float = 0.0, label: str = "nccl") -> Sample:
    return Sample(
        size=size,
        time_s=us * 1e-6,
        collective="allreduce",
        algorithm="nccl",
        label=label,
        ranks=8,
        run_id=f"nccl-tests-{log}",
        origin=f"{log}:{size}",
        in_place_s=in_place * 1e-6,
    )


def test_only_a_larger_size_of_the_same_run_says_a_sample_was_disturbed():
    """The tolerance: (1 + DISTURBED) x the larger size's time is kept, above it left out; the faster of
    out-of-place and in-place is what is compared (and fitted); sizes below 1 MiB, another log's rows and
    another forced algorithm are never compared with."""
    edge = 100.0 * (1 + DISTURBED)
    run = [_sample(2**20, edge), _sample(2**21, edge * 1.0001), _sample(2**22, 100.0), _sample(2**23, 200.0)]
    kept, warnings = leave_out_disturbed(run)
    assert [s.size for s in kept] == [2**20, 2**22, 2**23] and len(warnings) == 1
    assert warnings[0].startswith("a.txt: left out of the fit: 2MiB (") and "slower than 4MiB (100.0 us)" in warnings[0]
    # a warning names 6 sizes at most
    many = [_sample(2**k, 300.0) for k in range(20, 28)] + [_sample(2**28, 100.0), _sample(2**29, 400.0)]
    kept, [warning] = leave_out_disturbed(many)
    assert (
        kept == many
        and "kept in the fit (leaving them out would keep 2 of 10 sizes): " in warning
        and "32MiB (300.0 us) and 2 more slower than 256MiB (100.0 us)" in warning
    )
    # an out-of-place time disturbed but an in-place one not: the fit takes the in-place one, nothing is left out
    assert leave_out_disturbed([_sample(2**21, 300.0, in_place=90.0), _sample(2**22, 100.0)])[1] == []
    small = [_sample(2**19, 300.0), _sample(2**20, 100.0), _sample(2**21, 150.0)]
    assert leave_out_disturbed(small) == (small, [])
    two_logs = [_sample(2**21, 300.0, log="a.txt"), _sample(2**22, 100.0, log="b.txt"), _sample(2**23, 400.0)]
    assert leave_out_disturbed(two_logs) == (two_logs, [])
    forced = [_sample(2**21, 300.0, label="builtin:nccl_algo=tree"), _sample(2**22, 100.0), _sample(2**23, 400.0)]
    assert leave_out_disturbed(forced) == (forced, [])


def test_the_warning_is_one_line_of_calibrate_and_of_its_fit(tmp_path, capsys):
    clean = _clean()
    path = tmp_path / "disturbed.txt"
    path.write_text(nccl_text("all_reduce_perf", "allreduce", 8, [(n, t * (3 if n == 2**20 else 1)) for n, t in clean]))
    samples, source = read_samples(path)
    assert sum("1MiB" in w and "left out" in w for w in fit_calibration(samples, ONE, [source]).warnings) == 1
    code = main(["validate", "calibrate", "-t", ONE, "--from", str(path), "-o", str(tmp_path / "c.yaml")])
    out, err = capsys.readouterr()
    # one line in the summary, one on stderr (as every calibration warning)
    [summary] = [ln for ln in out.splitlines() if "left out of the fit" in ln]
    [stderr] = [ln for ln in err.splitlines() if "left out of the fit" in ln]
    assert code == 0 and "Traceback" not in out + err
    assert summary == f"# WARNING: {stderr.removeprefix('collsim: warning: ')}"
    assert f"{path}: left out of the fit: 1MiB (" in summary and "slower than 4MiB (" in summary
