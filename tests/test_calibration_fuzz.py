"""Fuzzing calibration's input surfaces: calibration files, nccl-tests text and -J JSON, validate and probe
JSON lines. Random, truncated, wrong-typed, huge, negative, NaN, unicode and duplicate-key inputs must
each end in a valid result or one :class:`CollsimError` line -- and through the CLI, in exit 0 or one
``collsim: error:`` line with exit 2, never a traceback and never a partial output file."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from collsim.cli import main
from sim.errors import CollsimError
from tests.calib_fixtures import compare_args, hockney, nccl_json, nccl_rows, nccl_text, probe_lines, validate_lines
from validate.calibration import fit_calibration, load_calibration, read_samples
from validate.calibration.inputs import MAX_LINE_BYTES

STAR = "star:hosts=4,bandwidth=1Gbps"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        ["allreduce", "ring", "builtin", "same-switch", "stream", "gamma", "1e400", "-1", "NaN", "\u202e\x00"]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def valid_texts() -> dict[str, str]:
    b = 1e9 / 8
    probes = probe_lines(
        {("stream", "same-switch", 1): hockney(5e-5, 0.9, b), ("reduce", "local", 1): lambda n: 1e-6 + n * 1e-10},
        [2**k for k in range(10, 20)],
    )
    validate = validate_lines("allreduce", "ring", 4, [2**k for k in range(14, 22)], 3e-4, 1 / (0.95 * b))
    rows = nccl_rows("allreduce", 4, [2**k for k in range(10, 20)], 6e-6, 1 / 1e10)
    return {
        "probes.jsonl": "\n".join(probes) + "\n",
        "validate.jsonl": "\n".join(validate) + "\n",
        "ar.txt": nccl_text("all_reduce_perf", "allreduce", 4, rows),
        "ar.json": json.dumps(nccl_json("all_reduce_perf", 4, rows), indent=1),
        "cal.yaml": "topology: star\nclasses:\n  same-switch: {latency: 1.0e-4, efficiency: 0.9}\ncalibrated: [same-switch.latency]\n",
        "cal.json": json.dumps({"topology": "star", "gamma": 1e-10, "calibrated": ["gamma"]}),
    }


VALID = valid_texts()


def mutate(text: str, data: st.DataObject) -> str:
    """Truncate, splice a random JSON value in, duplicate a key, or replace a number with junk."""
    kind = data.draw(st.sampled_from(["truncate", "splice", "duplicate", "number", "unicode", "as-is"]))
    if kind == "truncate":
        return text[: data.draw(st.integers(0, len(text)))]
    if kind == "splice":
        at = data.draw(st.integers(0, len(text)))
        return text[:at] + json.dumps(data.draw(values), allow_nan=True) + text[at:]
    if kind == "duplicate":
        return text.replace('"size_bytes": ', '"size_bytes": 5, "size_bytes": ', 1).replace(
            '"topology": ', '"topology": "a", "topology": ', 1
        )
    if kind == "number":
        junk = data.draw(
            st.sampled_from(
                ["-1", "0", "NaN", "Infinity", "1e999", "-0.0", "99999999999999999999999", '"x"', "null", "[]"]
            )
        )
        digits = [i for i, c in enumerate(text) if c.isdigit()]
        if not digits:
            return text
        at = data.draw(st.sampled_from(digits))
        return text[:at] + junk + text[at + 1 :]
    if kind == "unicode":
        at = data.draw(st.integers(0, len(text)))
        return text[:at] + data.draw(st.text(min_size=1, max_size=5)) + text[at:]
    return text


def one_line(exc: BaseException) -> None:
    assert isinstance(exc, CollsimError), repr(exc)
    assert str(exc) and "\n" not in str(exc)


@FUZZ
@given(data=st.data(), name=st.sampled_from(sorted(VALID)))
def test_mutated_inputs_read_or_fail_in_one_line(tmp_path_factory, data, name):
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_text(mutate(VALID[name], data), encoding="utf-8")
    try:
        if name.startswith("cal."):
            load_calibration(path)
        else:
            samples, source = read_samples(path)
            fit_calibration(samples, STAR, [source])
    except CollsimError as exc:
        one_line(exc)


@FUZZ
@given(
    records=st.lists(
        st.dictionaries(
            st.sampled_from(
                [
                    "source",
                    "test",
                    "link_class",
                    "fan",
                    "size_bytes",
                    "time_s",
                    "times_s",
                    "world_size",
                    "run_id",
                    "collective",
                    "algorithm",
                    "ranks",
                    "wrong",
                    "backend",
                ]
            ),
            values,
            max_size=10,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_wrong_typed_json_lines(tmp_path_factory, records):
    path = tmp_path_factory.mktemp("fuzz") / "x.jsonl"
    path.write_text("\n".join(json.dumps(r, allow_nan=True) for r in records) + "\n")
    try:
        samples, source = read_samples(path)
        for s in samples:
            assert s.size > 0 and math.isfinite(s.time_s) and s.time_s > 0
        fit_calibration(samples, STAR, [source])
    except CollsimError as exc:
        one_line(exc)


@FUZZ
@given(doc=values)
def test_random_documents_as_calibration_and_nccl_json(tmp_path_factory, doc):
    folder = tmp_path_factory.mktemp("fuzz")
    for name in ("c.json", "c.yaml", "n.json"):
        path = folder / name
        path.write_text(json.dumps(doc, allow_nan=True))
        try:
            if name.startswith("c."):
                load_calibration(path)
            else:
                read_samples(path)
        except CollsimError as exc:
            one_line(exc)


@FUZZ
@given(blob=st.binary(max_size=300))
def test_random_bytes(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fuzz") / "blob.txt"
    path.write_bytes(blob)
    for reader in (load_calibration, read_samples):
        try:
            reader(path)
        except CollsimError as exc:
            one_line(exc)


def test_huge_and_empty_inputs(tmp_path):
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"source": "collsim-probe", "run_id": "' + "x" * (MAX_LINE_BYTES + 10) + '"}\n')
    long_text = tmp_path / "long.txt"
    long_text.write_text("1" * (MAX_LINE_BYTES + 10) + "\n")
    for path, message in [
        (huge, "not an nccl-tests JSON file"),
        (long_text, "is not a measurement"),
        (tmp_path / "missing", "no such file"),
        (tmp_path, "is a directory"),
    ]:
        with pytest.raises(CollsimError, match=message):
            read_samples(path)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(CollsimError, match="empty"):
        read_samples(empty)
    big = tmp_path / "big.yaml"
    big.write_text("#" * (17 * 2**20))
    with pytest.raises(CollsimError, match="too large"):
        load_calibration(big)


@FUZZ
@given(data=st.data(), name=st.sampled_from(["probes.jsonl", "validate.jsonl", "ar.txt", "ar.json"]))
def test_cli_exit_codes_and_no_partial_output(tmp_path_factory, capsys, data, name):
    folder = tmp_path_factory.mktemp("cli")
    src = folder / name
    src.write_text(mutate(VALID[name], data), encoding="utf-8")
    out = folder / "cal.yaml"
    code = main(["validate", "calibrate", "-t", STAR, "--from", str(src), "-o", str(out)])
    captured = capsys.readouterr()
    assert code in (0, 2)
    if code == 2:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("collsim: error: ")
        assert not out.exists()
    else:
        load_calibration(out)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    if code == 0 and name.startswith("validate"):
        assume(True)


@FUZZ
@given(data=st.data())
def test_compare_cli_with_fuzzed_measurements(tmp_path_factory, capsys, data):
    folder = tmp_path_factory.mktemp("cmp")
    cal = folder / "cal.yaml"
    cal.write_text(VALID["cal.yaml"])
    measured = folder / "m.jsonl"
    measured.write_text(mutate(VALID["validate.jsonl"], data), encoding="utf-8")
    code = main(compare_args(STAR, cal, measured, "--out", str(folder / "o"), "--no-plot"))
    captured = capsys.readouterr()
    assert code in (0, 2)
    if code == 2:
        assert len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
        assert not (folder / "o" / "compare.json").exists()
    else:
        doc = json.loads((folder / "o" / "compare.json").read_text())
        assert doc["summary"]["all"]["points"] >= 1


def test_truncated_calibration_never_half_written(tmp_path, capsys, monkeypatch):
    """A failure while writing leaves the old file, not half a new one."""
    import os

    from validate.calibration import file as calibration

    out = tmp_path / "c.yaml"
    out.write_text(VALID["cal.yaml"])
    src = tmp_path / "v.jsonl"
    src.write_text(VALID["validate.jsonl"])

    def boom(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(calibration.os, "fsync", boom)
    code = main(["validate", "calibrate", "-t", STAR, "--from", str(src), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == VALID["cal.yaml"]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert os.path.exists(src)
