"""Real nccl-tests posts, mangled the way posting mangles them (benchmarks/fuzz_logs.py's mutations: lines dropped,
duplicated, swapped or cut, launcher / host / time-stamp labels, indentation, CRLF, tabs, Markdown fences and
quotes, a second table, NCCL INFO lines, junk numbers, non-ASCII, a column lost or added, busbw N/A, another
collective's binary), through everything a user's log reaches: calibration's reader, nccl_logs.py's hardware
inference and prediction, ``collsim validate calibrate`` and ``compare``. Each must end in a result or one
CollsimError line (exit 2 and one ``collsim: error:`` line), and a framing of the whole post must read the
same as the post (docs/calibration.md, "Mutated posts").

The seeds are the short excerpts below and, where a checkout has it (CI keeps ``../shared`` beside the
repository; elsewhere ``COLLSIM_NCCL_LOGS=DIR``), the development set of published logs."""

from __future__ import annotations

import os
import random
from pathlib import Path

import fuzz_logs
import nccl_logs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.errors import CalibrationError
from validate.calibration import read_samples

ROOT = Path(__file__).resolve().parents[1]

#: an 8-GPU H100 all-reduce (h100-ndr-node005-1node-default's shape: one process, -g 8)
ONE_NODE = """\
# nThread 1 nGpus 8 minBytes 134217728 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 2 agg iters: 1
#
# Using devices
#  Rank  0 Group  0 Pid 295203 on    node005 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 295203 on    node005 device  1 [0x6d] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid 295203 on    node005 device  2 [0x97] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid 295203 on    node005 device  3 [0xc0] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid 295203 on    node005 device  4 [0x19] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid 295203 on    node005 device  5 [0x6c] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid 295203 on    node005 device  6 [0x96] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid 295203 on    node005 device  7 [0xc1] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   134217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0
   268435456      67108864     float     sum      -1   1139.2  235.63  412.35      0   1134.8  236.56  413.97      0
   536870912     134217728     float     sum      -1   2175.8  246.75  431.81      0   2181.4  246.11  430.69      0
  1073741824     268435456     float     sum      -1   4038.8  265.85  465.25      0   4043.6  265.54  464.70      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 423.1
#
"""
#: a 16-rank A100 run over two hosts, one 10 GiB size, with its command and the test's own start / end lines
TWO_NODES = (
    "$ mpirun -n 16 -N 8 -hostfile ~/hostlist.txt ./build/all_reduce_perf -b 10G -e 10G -t 1 -g 1\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 1 minBytes 10737418240 maxBytes 10737418240 step: 1048576(bytes) warmup iters: 1 iters: 20\n"
    + "".join(
        f"#  Rank {r:2d} Group  0 Pid  {23053 + r} on inst-{r // 8} device  {r % 8} [0000:0f:00] NVIDIA A100-SXM4-40GB\n"
        for r in range(16)
    )
    + "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    + " 10737418240    2684354560     float     sum      -1   104989  102.27  191.76      0   104997  102.26  191.75      0\n"
    + "# Avg bus bandwidth    : 191.752\n# Collective test concluded: all_reduce_perf\n"
)


def _seeds() -> dict[str, str]:
    seeds = {"one-1node.txt": ONE_NODE, "two-2node.txt": TWO_NODES}
    for folder in (os.environ.get("COLLSIM_NCCL_LOGS"), ROOT.parent / "shared/data/nccl-tests"):
        if folder and Path(folder).is_dir():
            seeds.update({p.name: p.read_text() for p in sorted(Path(folder).glob("*.txt")) if p.name != "README.txt"})
            break
    return seeds


SEEDS = _seeds()
FUZZ = settings(
    max_examples=250,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> dict[str, tuple[object, object]]:
    folder = tmp_path_factory.mktemp("clean")
    return {name: fuzz_logs.reading(_write(folder, name, text)) for name, text in SEEDS.items()}


@FUZZ
@given(name=st.sampled_from(sorted(SEEDS)), seed=st.integers(0, 2**32 - 1))
def test_mutated_posts_read_or_refuse_in_one_line(tmp_path_factory, clean, name, seed):
    """Any 1-3 mutations: the reader, parse_log and topology end in a result or one CollsimError / LogError
    line; where the mutations keep the collective and its ranks (a line duplicated, lines swapped, a second
    table, INFO lines, busbw N/A, a framing), a log that still reads reads them."""
    text, how = fuzz_logs.mutate(SEEDS[name], random.Random(seed))
    path = _write(tmp_path_factory.mktemp("fuzz"), name, text)
    assert fuzz_logs.run_one(path) == [], how
    assert fuzz_logs.misread(clean[name], fuzz_logs.reading(path), how) is None, how


FRAMINGS = [f"prefix:{p!r}" for p in fuzz_logs.PREFIXES] + ["indent", "tab-indent", "crlf", "tabs", "fence", "quote"]


def _framed(text: str, framing: str) -> str:
    lines = text.splitlines()
    if framing.startswith("prefix:"):
        label = eval(framing.partition(":")[2])  # (a repr of one of PREFIXES)
        lines = fuzz_logs._every(lines, lambda ln: label + ln)
    elif framing in ("indent", "tab-indent"):
        pad = "    " if framing == "indent" else "\t"
        lines = fuzz_logs._every(lines, lambda ln: pad + ln)
    else:
        lines = fuzz_logs.MUTATIONS[framing](lines, random.Random(0))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_framed_post_reads_as_the_post(tmp_path, clean, framing):
    """A label on every line (srun, Open MPI, a gathering host, a time stamp, a Markdown quote), indentation,
    CRLF, tabs between the columns, a Markdown fence: the same samples and the same hardware as the post."""
    for name, text in SEEDS.items():
        path = _write(tmp_path, name, _framed(text, framing))
        assert fuzz_logs.reading(path) == clean[name], name


def test_a_duplicated_line_keeps_the_ranks(tmp_path, clean):
    """Every line of the excerpts duplicated in turn (a rank line, a row, the header): a log that reads has the
    ranks and collective of the post."""
    for name in ("one-1node.txt", "two-2node.txt"):
        lines = SEEDS[name].splitlines()
        for i in range(len(lines)):
            text = "\n".join(lines[: i + 1] + lines[i:]) + "\n"
            got = fuzz_logs.reading(_write(tmp_path, name, text))
            assert fuzz_logs.misread(clean[name], got, ["duplicate"]) is None, (name, lines[i])


def test_a_framed_post_predicts_as_the_post(tmp_path):
    """nccl_logs' prediction (the largest size) of a post with a gathering host's label on every line and CRLF."""
    plain = _write(tmp_path, "plain-1node.txt", ONE_NODE)
    framed = _write(tmp_path / "x", "plain-1node.txt", "".join(f"node01: {ln}\r\n" for ln in ONE_NODE.splitlines()))
    rows = [nccl_logs.predict(nccl_logs.parse_log(p), 1 << 30) for p in (plain, framed)]
    assert rows[0] == rows[1] and len(rows[0]) == 1


@pytest.mark.parametrize(
    "mutant",
    [
        "".join(f"> node01: {ln}\n" for ln in TWO_NODES.splitlines()),  # reads
        TWO_NODES.replace(" 10737418240    2684354560", " 10737418240    2,684,354,560"),  # mangled count, no row after
        ONE_NODE.replace("   268435456      67108864", "   268435456      nan"),  # mangled count between rows
    ],
    ids=["framed", "cut-last-row", "mangled-row"],
)
def test_mutants_through_the_cli(tmp_path, mutant):
    """``collsim validate calibrate --from`` and ``compare --measured``: exit 0, or exit 2 with one ``collsim:
    error:`` line and no output file."""
    folder = tmp_path / "run"
    folder.mkdir()
    # (the CLI topology builds H100s: an A100 log is refused there, so the A100 excerpt's device lines say H100)
    path = _write(tmp_path, "mutant.txt", mutant.replace("A100-SXM4-40GB", "H100 80GB HBM3"))
    cal = tmp_path / "cal.yaml"
    source = _write(tmp_path, "r.txt", TWO_NODES.replace("A100-SXM4-40GB", "H100 80GB HBM3"))
    code, lines = fuzz_logs._cli(
        ["validate", "calibrate", "-t", fuzz_logs.CLI_TOPOLOGY, "--from", str(source), "-o", str(cal)]
    )
    assert code == 0, lines
    assert fuzz_logs.run_cli(path, folder, cal) is None


# -- the classes the fuzzer found on main, one excerpt each ------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    ["node01: ", "2024-05-01T12:00:00.123Z ", "[2024-05-01 12:00:00] ", "> ", "node01:  0: ", "> [1,0]<stdout>:"],
)
def test_host_time_stamp_and_quote_labels_are_stripped(tmp_path, label):
    """pdsh / clush / ``kubectl logs --prefix`` put a host's name before every line, log collectors a time stamp,
    Markdown a ``>``; they stack. On main every one was "not an nccl-tests log (no result rows ...)"."""
    samples, _ = read_samples(_write(tmp_path, "p.txt", "".join(f"{label}{ln}\n" for ln in ONE_NODE.splitlines())))
    plain, _ = read_samples(_write(tmp_path, "q.txt", ONE_NODE))
    assert [(s.size, s.time_s, s.ranks) for s in samples] == [(s.size, s.time_s, s.ranks) for s in plain]
    # a setting is not a label: NCCL_MIN_NCHANNELS: 32 stays a setting the model does not represent
    _, source = read_samples(_write(tmp_path, "s.txt", "NCCL_MIN_NCHANNELS: 32\n" + ONE_NODE))
    assert source.unmodelled == ["NCCL_MIN_NCHANNELS=32"]


@pytest.mark.parametrize(
    ("row", "junk"),
    [("   268435456      67108864", "   nan      67108864"), ("   268435456      67108864", "   268435456      -1")]
    + [("67108864     float", "67108864     0"), ("   268435456      67108864", "   1,024      67108864")]
    + [("   268435456      67108864", "  x   268435456      67108864")],
)
def test_a_mangled_row_between_rows_is_refused_naming_its_line(tmp_path, row, junk):
    """A size or count of ``nan``, ``-1``, ``1,024``, a type gone, a word before the size: main dropped the row
    without a word and calibrated from the rest; a row that reads follows it, so it is no row cut at the post's end."""
    text = ONE_NODE.replace(row, junk, 1)
    line = 1 + text.splitlines().index(next(ln for ln in text.splitlines() if junk in ln))
    with pytest.raises(CalibrationError, match=rf"p\.txt:{line}: a result row that does not read"):
        read_samples(_write(tmp_path, "p.txt", text))
    # the second half of a row that NCCL INFO lines cut (nccl-tests prints it apart) names no type: left out
    tail = ONE_NODE.replace(
        "   268435456", "node01:1:2 [0] NCCL INFO Connected all trees\n    1139.2  235.63  412.35  0", 1
    )
    assert len(read_samples(_write(tmp_path, "t.txt", tail))[0]) == 3
    # the post's last row cut mid-line (the post ends there) is left out, as before
    head = ONE_NODE[: ONE_NODE.index("   268435456      67108864") + len("   268435456      671")]
    assert [s.size for s in read_samples(_write(tmp_path, "c.txt", head + "\n"))[0]] == [134217728]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "   536870912",
            "   99999999999999999999999999",
            r"99999999999999999999999999 B in 2175.8 us is 4.6e\+19 GB/s",
        ),
        ("2175.8", "99999999999999999999999999", r"536870912 B in 1e\+26 us is 5.37e-21 GB/s"),
        ("246.75", "1e999", r"but the row prints algbw 1e999"),
        ("2175.8  246.75", "246.75", r"a mangled row"),  # the time column lost: the columns shift
    ],
)
def test_a_row_whose_algbw_is_not_its_size_over_time_is_refused(tmp_path, old, new, message):
    """A row whose algbw is not size / time where the rows above agree: main read a size of 1e26 B or a time of
    1e20 us as printed (the "read as printed" fallback that keeps a -C cputime table readable)."""
    with pytest.raises(CalibrationError, match=message):
        read_samples(_write(tmp_path, "p.txt", ONE_NODE.replace(old, new, 1)))


def test_a_fraction_for_wrong_is_named_a_shifted_column(tmp_path):
    """busbw lost from a row: the in-place time lands in #wrong (2181.4), which main called wrong results."""
    text = ONE_NODE.replace(
        "   134217728      33554432     float     sum      -1    613.3  218.85  382.99",
        "   134217728      33554432     float     sum      -1    613.3  218.85",
        1,
    )
    with pytest.raises(CalibrationError, match=r"#wrong is 614.3, not a count: a column lost or shifted"):
        read_samples(_write(tmp_path, "p.txt", text))
