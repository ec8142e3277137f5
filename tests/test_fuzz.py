"""Fuzzing every input surface: random, truncated, wrong-typed, huge, negative, NaN, unicode and
duplicate-key inputs for topologies (inline and YAML), algorithm specs, sizes and units, report specs,
the validate runner's options and netlab's names. Every input ends in a valid result or one clear error
(exit code 2 on the command line) -- never a traceback, a hang or a partial output file.

Each surface runs at the suite's profile (40 examples, derandomized) by default; its ``*_campaign`` twin,
marked ``benchmark``, runs ``COLLSIM_FUZZ_EXAMPLES`` (default 1000) random examples. docs/reliability.md
records the campaigns' counts and what they found. Calibration files and nccl-tests logs are fuzzed by
their own tests (the calibration work).
"""

from __future__ import annotations

import copy
import json
import random

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from netlab import make_plan, names
from reports import parse_spec, report_points
from sim.algorithms import algorithm_names, get_algorithm
from sim.collectives import COLLECTIVES
from sim.deadline import deadline
from sim.errors import CollsimError, ConfigError
from sim.schema import MAX_BANDWIDTH, MAX_TIME
from sim.topology import BUILDERS, bundled_topologies
from sim.units import MAX_SIZE, MAX_SWEEP, parse_bandwidth, parse_bytes, parse_size, parse_size_range, parse_time
from validate.options import OPTIONS, parse_options

from .fuzzing import JUNK, NUMBERS, VALUES, campaign, cli, fuzz_settings, no_hang, yaml_values
from .report_fixtures import TINY

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow warning is a finding too

STAR = "star:hosts=5,bandwidth=1GB/s,latency=1us"
REPORT_FILES = ("index.html", "report.md", "results.csv", "collectives.csv", "results.json")


# -- sizes and units ---------------------------------------------------------------------------------


def _units(value):
    for parse, top in ((parse_size, MAX_SIZE), (parse_bandwidth, None), (parse_time, None)):
        try:
            result = parse(value, "v")
        except ConfigError as exc:
            assert "\n" not in str(exc)
            continue
        assert isinstance(result, float) and abs(result) < float("inf")
        assert top is None or abs(result) <= top
    # parse_bytes is parse_size restricted to whole positive byte counts: accepted exactly then
    size, whole = _or_none(parse_size, value), _or_none(parse_bytes, value)
    if size is not None and size > 0 and size == int(size):
        assert type(whole) is int and whole == size
        assert 1 <= whole <= MAX_SIZE
    else:
        assert whole is None, (value, size, whole)
    if isinstance(value, str):
        try:
            sizes = parse_size_range(value, "v")
        except ConfigError:
            return
        assert 1 <= len(sizes) <= MAX_SWEEP and all(1 <= s <= MAX_SIZE for s in sizes)
        _sweep_oracle(value, sizes)


def _or_none(parse, value):
    try:
        return parse(value, "v")
    except ConfigError:
        return None


def _sweep_oracle(text, sizes):
    """What an accepted sweep must be, recomputed from its parts: a list is its sizes in order; a
    range starts at MIN, multiplies by FACTOR (2 by default) and stops at the last size <= MAX."""
    text = text.strip()
    if "," in text:
        assert sizes == [parse_bytes(part, "v") for part in text.split(",") if part.strip()]
        return
    parts = text.split(":")
    if len(parts) == 1:
        assert sizes == [parse_bytes(parts[0], "v")]
        return
    low, high = parse_bytes(parts[0], "v"), parse_bytes(parts[1], "v")
    factor = float(parts[2]) if len(parts) == 3 else 2.0
    assert sizes[0] == low and sizes[-1] <= high * (1 + 1e-9)
    assert all(b >= a for a, b in zip(sizes, sizes[1:]))  # (rounding may repeat a size: 3:100:1.1)
    following = low * factor ** len(sizes)  # the size one more step would give
    assert following > high * (1 - 1e-9)
    if factor.is_integer() and following < 2**53:  # exact in floating point: it must pass MAX
        assert following > high


@fuzz_settings
@given(st.one_of(VALUES, NUMBERS, st.builds(lambda a, b, f: f"{a}:{b}:{f}", VALUES, VALUES, VALUES)))
def test_units(value):
    with no_hang(10):
        _units(value)


test_units_campaign = campaign(given(st.one_of(VALUES, NUMBERS, st.builds(lambda a, b, f: f"{a}:{b}:{f}", VALUES, VALUES, VALUES)))(_units))  # fmt: skip


@st.composite
def size_options(draw):
    command = draw(st.sampled_from(["simulate", "compare"]))
    argv = [command, "-t", STAR, "--timeout", "5"]
    flag = draw(st.sampled_from(["--size", "--sizes", "--gamma", "--ranks", "--root", "--timeout"]))
    if command == "compare" and flag in ("--sizes", "--root"):
        flag = "--size"
    if command == "compare":
        argv += ["--algorithms", "ring,tree"]
    return [*argv, flag, str(draw(VALUES))]


def _options(capsys, argv):
    cli(capsys, argv)


test_size_and_number_options = fuzz_settings(given(size_options())(_options))
test_size_and_number_options_campaign = campaign(given(size_options())(_options))


# -- topologies ---------------------------------------------------------------------------------------


@st.composite
def inline_specs(draw):
    kind = draw(st.one_of(st.sampled_from(sorted(BUILDERS)), JUNK))
    known = sorted(BUILDERS[kind][1].model_fields) if kind in BUILDERS else ["hosts", "bandwidth"]
    keys = draw(st.lists(st.one_of(st.sampled_from(known), JUNK), max_size=6))
    items = [f"{k}={draw(VALUES)}" for k in keys]
    if kind in BUILDERS and draw(st.booleans()):  # mostly-valid specs reach the builders
        items = [f"{k}={draw(st.sampled_from(['2', '3', '1GB/s', '1us', '2x2']))}" for k in known] + items
    return f"{kind}:{','.join(items)}"


def _inline(capsys, spec):
    cli(capsys, ["simulate", "-t", spec, "--size", "64KiB", "--timeout", "5"])


@fuzz_settings
@given(inline_specs())
def test_inline_topology_specs(capsys, spec):
    _inline(capsys, spec)


test_inline_topology_specs_campaign = campaign(given(inline_specs())(_inline))


_NAMES = st.one_of(st.sampled_from(["a", "b", "c", "sw", "h0"]), JUNK)
_TOP_KEYS = st.sampled_from(
    ["name", "description", "builder", "params", "overhead", "defaults", "hosts", "switches", "nodes", "links",
     "placement", "extra"]
)  # fmt: skip


@st.composite
def topology_texts(draw):
    """YAML text: a near-valid explicit cluster with hostile values, a bundled file cut short or with a
    line given twice, or random nested data."""
    form = draw(st.sampled_from(["explicit", "explicit", "bundled", "random"]))
    if form == "bundled":
        path = draw(st.sampled_from(sorted(bundled_topologies().values())))
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        action = draw(st.sampled_from(["cut", "twice", "byte"]))
        if action == "cut":
            text = "".join(lines)
            return text[: draw(st.integers(0, len(text)))]
        i = draw(st.integers(0, len(lines) - 1))
        if action == "twice":
            return "".join(lines[: i + 1] + lines[i:])
        text = "".join(lines)
        j = draw(st.integers(0, max(len(text) - 1, 0)))
        return text[:j] + draw(st.sampled_from(["\x00", ":", "{", "-", "\t", "ü", "&a", "*a", "!!"])) + text[j + 1 :]
    if form == "random":
        return yaml.safe_dump(draw(st.dictionaries(_TOP_KEYS, yaml_values(_TOP_KEYS), max_size=6)), allow_unicode=True)
    names_ = draw(st.lists(_NAMES, min_size=2, max_size=5))
    switch = names_[-1]
    doc = {
        "name": draw(st.one_of(st.just("t"), JUNK)),
        "defaults": {"bandwidth": draw(st.one_of(st.just("1GB/s"), VALUES))},
    }
    doc["hosts"] = [{"name": n, **({"gpus": draw(NUMBERS), "intra_bandwidth": draw(VALUES)} if draw(st.booleans()) else {})}
                    for n in names_[:-1]]  # fmt: skip
    doc["switches"] = [switch]
    doc["links"] = []
    for n in names_[:-1]:
        link = {"between": [n, switch]}
        for key in draw(st.lists(st.sampled_from(["bandwidth", "latency", "weight", "reverse"]), max_size=2)):
            link[key] = {"bandwidth": draw(VALUES)} if key == "reverse" else draw(st.one_of(VALUES, NUMBERS))
        doc["links"].append(link)
    if draw(st.booleans()):
        doc[draw(_TOP_KEYS)] = draw(yaml_values(_TOP_KEYS))
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    if draw(st.booleans()):  # a key given twice
        text += text.splitlines(keepends=True)[0]
    return text


def _yaml(capsys, tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    cli(capsys, ["simulate", "-t", str(path), "--size", "64KiB", "--timeout", "5"])


@fuzz_settings
@given(topology_texts())
def test_topology_files(capsys, tmp_path, text):
    _yaml(capsys, tmp_path, text)


test_topology_files_campaign = campaign(given(topology_texts())(_yaml))


# -- algorithm specs -----------------------------------------------------------------------------------

_OPTION_NAMES = sorted(
    {key for coll in COLLECTIVES for name in algorithm_names(coll) for key in get_algorithm(coll, name).Options.model_fields}
)  # fmt: skip


@st.composite
def algorithm_argv(draw):
    collective = draw(st.one_of(st.sampled_from(sorted(COLLECTIVES)), JUNK))
    valid = algorithm_names(collective) if collective in COLLECTIVES else ["ring"]
    name = draw(st.one_of(st.sampled_from(valid), JUNK))
    options = [
        f"{draw(st.one_of(st.sampled_from(_OPTION_NAMES), JUNK))}={draw(VALUES)}"
        for _ in range(draw(st.integers(0, 3)))
    ]
    spec = name + (":" + ",".join(options) if options else "")
    return ["simulate", "-t", STAR, "--collective", collective, "-a", spec, "--size", "64KiB", "--timeout", "5"]


def _algorithm(capsys, argv):
    cli(capsys, argv)


@fuzz_settings
@given(algorithm_argv())
def test_algorithm_specs(capsys, argv):
    _algorithm(capsys, argv)


test_algorithm_specs_campaign = campaign(given(algorithm_argv())(_algorithm))


# -- report specs ---------------------------------------------------------------------------------------

_SPEC_KEYS = st.sampled_from(
    ["name", "job", "cluster", "algorithms", "ddp", "sweep", "gamma", "tolerance", "parameters", "gradient_bytes",
     "compute_time", "builder", "params", "sizes", "topology", "bucket_size", "first_bucket", "message_sizes",
     "samples_per_gpu", "forward_fraction", "bandwidth", "hosts", "extra"]
)  # fmt: skip


def _mutate(draw, data):
    """Replace, delete or add one entry somewhere in nested ``data``."""
    node = data
    while isinstance(node, dict) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node)))
        if not isinstance(node[key], dict):
            break
        node = node[key]
    if not isinstance(node, dict):
        return
    action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    if action == "add" or not node:
        node[draw(_SPEC_KEYS)] = draw(yaml_values(_SPEC_KEYS))
    elif action == "delete":
        del node[draw(st.sampled_from(sorted(node)))]
    else:
        node[draw(st.sampled_from(sorted(node)))] = draw(st.one_of(VALUES, NUMBERS, yaml_values(_SPEC_KEYS)))


@st.composite
def report_specs(draw):
    data = copy.deepcopy(TINY)
    for _ in range(draw(st.integers(1, 3))):
        _mutate(draw, data)
    return data


def _report(data):
    with no_hang(60), deadline(10):
        try:
            spec = parse_spec(data)
            report_points(spec)  # builds every cluster of the sweep
        except CollsimError as exc:
            assert "\n" not in str(exc)


@fuzz_settings
@given(report_specs())
def test_report_specs(data):
    _report(data)


test_report_specs_campaign = campaign(given(report_specs())(_report))


@settings(max_examples=8, deadline=None)
@given(report_specs())
def test_a_refused_report_spec_writes_nothing(tmp_path_factory, data):
    """On the command line, a spec that does not validate is one line, exit 2, and no report file."""
    try:
        parse_spec(data)
        assume(False)
    except CollsimError:
        pass
    tmp = tmp_path_factory.mktemp("report")
    path = tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = tmp / "out"
    from collsim.cli import main

    with no_hang(60):
        code = main(["report", str(path), "--out", str(out), "--executor", "serial", "--no-progress"])
    assert code == 2
    assert not any((out / name).exists() for name in REPORT_FILES)


# -- the validate runner's options ----------------------------------------------------------------------

_FLAGS = [flag for opt in OPTIONS for flag in opt.flags]


@st.composite
def runner_argv(draw):
    argv = []
    for _ in range(draw(st.integers(0, 4))):
        argv.append(draw(st.one_of(st.sampled_from(_FLAGS), JUNK)))
        if draw(st.integers(0, 9)):
            argv.append(draw(VALUES))
    env = {draw(st.sampled_from([o.env for o in OPTIONS])): draw(VALUES) for _ in range(draw(st.integers(0, 2)))}
    return argv, env


def _runner(case):
    argv, env = case
    with no_hang(10):
        try:
            opts = parse_options(argv, environ=env)
        except ConfigError as exc:
            assert "\n" not in str(exc)
            return
    assert opts.sizes and all(1 <= s <= MAX_SIZE for s in opts.sizes) and len(opts.sizes) <= MAX_SWEEP
    assert 0 < opts.timeout <= float("inf") and opts.iters >= 1 and opts.warmup >= 0


@fuzz_settings
@given(runner_argv())
def test_validate_runner_options(case):
    _runner(case)


test_validate_runner_options_campaign = campaign(given(runner_argv())(_runner))


# -- netlab names ------------------------------------------------------------------------------------------

HOSTILE = st.one_of(
    st.text(min_size=1, max_size=48),
    st.sampled_from(["a b", "x;reboot", "$(rm -rf /)", "`id`", "-h0", "h0\n", "ü" * 40, "n" * 40, "../etc", "cs-h0"]),
)


def _netlab_names(tmp_path, host_names, prefix):
    path = tmp_path / "hostile.yaml"
    hosts = ", ".join(json.dumps({"name": n}) for n in host_names)
    links = "\n".join(f"  - {{between: [{json.dumps(n)}, {json.dumps('sw')}]}}" for n in host_names)
    path.write_text(f"name: h\ndefaults: {{bandwidth: 1Gbps}}\nhosts: [{hosts}]\nswitches: [sw]\nlinks:\n{links}\n")
    try:
        plan = make_plan(str(path), prefix=prefix)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert names.PREFIX_PATTERN.fullmatch(prefix)
    made = plan.namespaces + [e.ifname for k in plan.links for e in (k.a, k.b)] + [s.bridge for s in plan.switches]
    for name in made:
        assert names.owns_netns(prefix, name) or names.owns_link(prefix, name), name
        assert len(name) <= 15 and name.isascii() and " " not in name
    for host in host_names:  # what the user wrote never becomes a system name
        assert host in ("sw",) or host not in made


@fuzz_settings
@given(st.lists(HOSTILE, min_size=1, max_size=6, unique=True), st.one_of(st.just("q"), JUNK))
def test_netlab_never_turns_user_text_into_system_names(tmp_path, host_names, prefix):
    _netlab_names(tmp_path, host_names, prefix)


test_netlab_names_campaign = campaign(
    given(st.lists(HOSTILE, min_size=1, max_size=6, unique=True), st.one_of(st.just("q"), JUNK))(_netlab_names)
)


# -- limits, spelled out ---------------------------------------------------------------------------------


def test_extremes_stay_finite_or_are_refused(capsys):
    """The corners a fuzzer reaches only by luck: the largest accepted size over the slowest accepted link
    still gives a finite time, one byte over the fastest link too, and past either bound is one line."""
    slow = f"star:hosts=3,bandwidth=1bps,latency={MAX_TIME:g}"
    code, out, _ = cli(capsys, ["simulate", "-t", slow, "--size", "1PiB", "--json", "-a", "tree"])
    assert code == 0 and json.loads(out)["time_s"] < 1e30
    code, out, _ = cli(capsys, ["simulate", "-t", f"star:hosts=3,bandwidth={MAX_BANDWIDTH:g}", "--size", "1", "--json"])
    assert code == 0 and json.loads(out)["time_s"] > 0
    for argv in (
        ["simulate", "-t", "star:hosts=3,bandwidth=0.1", "--size", "1"],
        ["simulate", "-t", "star:hosts=3,bandwidth=1e19", "--size", "1"],
        ["simulate", "-t", "star:hosts=3,bandwidth=1GB/s,latency=2e6", "--size", "1"],
        ["simulate", "-t", STAR, "--gamma", "2"],
        ["simulate", "-t", STAR, "--gamma", "inf"],
        ["simulate", "-t", STAR, "--sizes", "1:1PiB:1.0001"],
        ["simulate", "-t", STAR, "--sizes", ",,"],
        ["simulate", "-t", STAR, "--sizes", "1:8:x"],
        ["simulate", "-t", STAR, "--size", "0.5"],
    ):
        assert cli(capsys, argv)[0] == 2, argv


def test_one_rank_gives_json_not_a_traceback(capsys):
    """A collective on one rank takes no time; its algbw is not a number and reads null in JSON."""
    for command in (["simulate"], ["compare"]):
        code, out, _ = cli(capsys, [*command, "-t", "star:hosts=1,bandwidth=1GB/s", "--json"])
        assert code == 0 and json.loads(out.splitlines()[0])["algbw_GBps"] is None


def test_random_bytes_as_a_topology_file(capsys, tmp_path):
    rng = random.Random(9)
    for i in range(20):
        path = tmp_path / f"r{i}.yaml"
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
        cli(capsys, ["simulate", "-t", str(path), "--size", "1KiB"])


# -- issue 16: the hostile inputs that broke collsim (each failed before the fix) ----------------------

HUGE_INT = "9" * 5000  # Python refuses to convert more than 4,300 digits: a traceback before


def _special_files(tmp_path):
    """A FIFO with no writer, a symbolic link to /dev/zero, a directory, a socket-free set of non-files."""
    import os

    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    zero = tmp_path / "z.json"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "d.yaml"
    folder.mkdir()
    return {"fifo": fifo, "zero": zero, "dir": folder}


@pytest.mark.parametrize(
    "kind, what", [("fifo", "a named pipe"), ("zero", "a character device"), ("dir", "a directory")]
)
def test_special_files_are_refused_in_one_line_everywhere(tmp_path, capsys, kind, what):
    path = str(_special_files(tmp_path)[kind])
    for argv in (
        ["simulate", "-t", path, "--size", "1MiB", "--timeout", "5s"],
        ["topology", "show", path],
        ["simulate", "-t", "dgx:hosts=2", "--size", "1MiB", "--calibration", path],
        [
            "validate",
            "calibrate",
            "-t",
            "dgx:hosts=2",
            "--from",
            f"{path}:format=nccl-tests-json",
            "-o",
            str(tmp_path / "x.yaml"),
        ],
        ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", path, "-o", str(tmp_path / "x.yaml")],
        ["report", path, "--out", str(tmp_path / "r")],
        ["validate", "show", path],
    ):
        code, _, err = cli(capsys, argv, seconds=20)
        assert code == 2 and f"{path}: is {what}, not a regular file" in err, (argv, err)
    assert not (tmp_path / "r").exists() and not (tmp_path / "x.yaml").exists()


def test_the_bounded_reader_caps_size_and_checks_the_deadline(tmp_path):
    from sim import files
    from sim.deadline import SimulationTimeout

    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 101)
    assert files.read_bytes(big, limit=101) == b"a" * 101
    with pytest.raises(ConfigError, match="larger than 100 bytes"):
        files.read_bytes(big, limit=100)
    with pytest.raises(ConfigError, match="a line of more than 10 bytes"):
        list(files.iter_lines(big, max_line=10))
    with deadline(0.0), pytest.raises(SimulationTimeout):
        files.read_bytes(big)
    with pytest.raises(ConfigError, match="no such file"):
        files.read_text(tmp_path / "nope")


@pytest.mark.parametrize(
    "name, text, argv",
    [
        ("t.yaml", f"name: t\nhosts: [{{name: a, gpus: {HUGE_INT}}}]\n", ["simulate", "-t", "{path}"]),
        ("r.yaml", f"job: {{gradient_bytes: {HUGE_INT}}}\n", ["report", "{path}", "--out", "{dir}/r"]),
        ("c.json", f'{{"format": "collsim-calibration", "topology": "dgx:hosts=2", "version": {HUGE_INT}}}',
         ["simulate", "-t", "dgx:hosts=2", "--size", "1MiB", "--calibration", "{path}"]),
        ("m.jsonl", f'{{"size_bytes": {HUGE_INT}}}\n',
         ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", "{path}", "-o", "{dir}/x.yaml"]),
        ("n.json", f'{{"results": [{{"size": {HUGE_INT}}}]}}',
         ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", "{path}:format=nccl-tests-json", "-o", "{dir}/x.yaml"]),
    ],
)  # fmt: skip
def test_an_integer_of_5000_digits_is_one_line_not_a_traceback(tmp_path, capsys, name, text, argv):
    path = tmp_path / name
    path.write_text(text)
    argv = [a.format(path=path, dir=tmp_path) for a in argv]
    code, _, err = cli(capsys, argv, seconds=20)
    assert code == 2 and "an integer of 5,000 digits is out of range" in err, err


def test_a_calibration_of_200000_segments_is_refused_quickly(tmp_path, capsys):
    segments = [{"min_bytes": i, "latency": 1e-6, "efficiency": 0.9} for i in range(200_000)]
    cal = {"format": "collsim-calibration", "topology": "dgx:hosts=2", "calibrated": ["same-switch.segments"],
           "classes": {"same-switch": {"segments": segments}}}  # fmt: skip
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cal))
    code, _, err = cli(capsys, ["simulate", "-t", "dgx:hosts=2", "--size", "1MiB", "--calibration", str(path)], 30)
    assert code == 2 and "segments: too many items" in err, err


@pytest.mark.parametrize(
    "text, argv",
    [
        ("root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n", ["simulate", "-t", "{path}"]),
        ("root:*:19000:0:99999:7:::\n", ["topology", "show", "{path}"]),
        ("root:*:19000:0:99999:7:::\n", ["report", "{path}", "--out", "{dir}/r"]),
        ("root:*:19000:0:99999:7:::\n", ["simulate", "-t", "dgx:hosts=2", "--calibration", "{path}"]),
        ("hosts: [{name: a, 'root:*:190': 1}]\n", ["simulate", "-t", "{path}"]),
        ("secret: hunter2\n", ["simulate", "-t", "{path}"]),
    ],
)
def test_errors_never_echo_a_file_that_is_not_what_was_asked(tmp_path, capsys, text, argv):
    """collsim runs under sudo: `collsim netlab up /etc/shadow` must not print /etc/shadow."""
    path = tmp_path / "shadow"
    path.write_text(text)
    code, _, err = cli(capsys, [a.format(path=path, dir=tmp_path) for a in argv], seconds=20)
    assert code == 2
    assert "root:" not in err and "19000" not in err and "hunter2" not in err and "secret" not in err, err


def test_unknown_keys_with_brackets_are_named_and_long_errors_are_cut(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nhosts: [{name: a}]\n'x[0]': 1\n")
    _, _, err = cli(capsys, ["simulate", "-t", str(path)])
    assert "'x[0]': unknown field" in err
    _, _, err = cli(capsys, ["simulate", "-t", "star:hosts=2,bandwidth=1Gbps,x[1]=2"])
    assert "star.'x[1]': unknown field" in err
    _, _, err = cli(capsys, ["simulate", "-t", "nosuchbuilder" + "x" * 100_000])
    assert len(err) < 1200, len(err)


def test_validate_option_errors_come_before_any_rank(tmp_path, capsys, monkeypatch):
    (tmp_path / "d").mkdir()
    for argv, message in [
        (["--json", "/nonexistent/x.jsonl"], "--json /nonexistent/x.jsonl: no such directory"),
        (["--json", str(tmp_path / "d")], "is a directory"),
    ]:
        code, _, err = cli(capsys, ["validate", "run", "--ranks", "2", "--sizes", "1K", *argv], seconds=20)
        assert code == 2 and message in err and "rank" not in err.replace("--ranks", ""), err
    monkeypatch.setenv("COLLSIM_VALIDATE_FAULT", "garbage")
    code, _, err = cli(capsys, ["validate", "run", "--ranks", "2", "--sizes", "1K"], seconds=20)
    assert code == 2 and "COLLSIM_VALIDATE_FAULT='garbage'" in err, err


def test_validate_nccl_without_a_gpu_is_refused_up_front(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    code, _, err = cli(capsys, ["validate", "run", "--ranks", "2", "--sizes", "1K", "--backend", "nccl"], seconds=30)
    assert code == 2 and "no CUDA GPU is visible" in err, err


def test_a_build_beyond_the_memory_this_process_has_is_refused(monkeypatch, capsys):
    import sim.topology.graph as graph

    monkeypatch.setattr(graph, "available_memory", lambda: 1 << 30)
    code, _, err = cli(capsys, ["topology", "show", "dgx:hosts=262144"], seconds=20)
    assert code == 2 and "more than the 1.0 GiB of memory available" in err, err
