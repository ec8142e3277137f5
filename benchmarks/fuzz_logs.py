"""Mutate real nccl-tests posts the way posting mangles them, and run each mutant through everything a user's
log reaches: calibration's reader (``read_samples``), ``benchmarks/nccl_logs.py``'s hardware inference
(``parse_log``, ``topology``) and, optionally, its prediction and the CLI.

    python benchmarks/fuzz_logs.py [FOLDER] [--count 20000] [--seed 0] [--predict 0.01] [--cli 0.005] [--show 3]

Each mutant must end in a result or one :class:`~sim.errors.CollsimError` line (``LogError`` for nccl_logs'
own refusals); anything else (another exception, a message over several lines, a read slower than
``--slow`` seconds) is counted by class and the first ``--show`` of each class are printed with the mutation
that made them. The mutations (:data:`MUTATIONS`) are the ones tests/test_logs_fuzz.py draws from.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import nccl_logs  # noqa: E402

from sim.errors import CollsimError  # noqa: E402
from validate.calibration import read_samples  # noqa: E402

Mutation = Callable[[list[str], random.Random], list[str]]

#: what launchers and job runners put in front of every line
PREFIXES = ("  0: ", "[1,0]<stdout>:", "node01: ", "2024-05-01T12:00:00.123Z ", "[2024-05-01 12:00:00] ", "> ")
#: what a number may become in a post (an edit, a failed run, a renderer)
JUNK = ("nan", "inf", "-nan", "-1", "0", "1e999", "99999999999999999999999999", "", "N/A", "1,024", "１２", "-0")
#: NCCL_DEBUG=INFO lines interleaved with the rows
INFO = (
    "node01:1234:1240 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
    "node01:1234:1240 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f recvbuff 0x7f count 262144 datatype 7 op 0",
    "node01:1234:1240 [0] NCCL INFO 1048576 Bytes -> Algo 1 proto 2 time 30.5",
    "node01:1234:1240 [0] NCCL INFO comm 0x5 rank 0 nranks 16 cudaDev 0 busId 19000 - Init COMPLETE",
    "NCCL version 2.18.3+cuda12.2",
)


def _rows(lines: list[str]) -> list[int]:
    """The indexes of lines that look like result rows (a size first)."""
    return [i for i, ln in enumerate(lines) if re.match(r"^\s*\d+\s+\d+\s+\w+", ln)]


def _pick(lines: list[str], rng: random.Random, rows_only: bool = False) -> int | None:
    where = _rows(lines) if rows_only else list(range(len(lines)))
    return rng.choice(where) if where else None


def drop(lines: list[str], rng: random.Random) -> list[str]:
    i = _pick(lines, rng, rng.random() < 0.5)
    return lines if i is None else lines[:i] + lines[i + 1 :]


def duplicate(lines: list[str], rng: random.Random) -> list[str]:
    i = _pick(lines, rng, rng.random() < 0.5)
    return lines if i is None else lines[: i + 1] + [lines[i]] + lines[i + 1 :]


def swap(lines: list[str], rng: random.Random) -> list[str]:
    if len(lines) < 2:
        return lines
    i = rng.randrange(len(lines) - 1)
    return lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2 :]


def cut(lines: list[str], rng: random.Random) -> list[str]:
    """A line cut mid-way, and (half the time) the post ends there."""
    i = _pick(lines, rng, rng.random() < 0.5)
    if i is None:
        return lines
    line = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return lines[:i] + [line] + ([] if rng.random() < 0.5 else lines[i + 1 :])


def _posted(lines: list[str]) -> int:
    """Where the log as posted starts: after the ``#%`` lines the development set's curators put on top."""
    return next((i for i, ln in enumerate(lines) if not ln.startswith("#%")), len(lines))


def _every(lines: list[str], f: Callable[[str], str]) -> list[str]:
    k = _posted(lines)
    return lines[:k] + [f(ln) for ln in lines[k:]]


def prefix(lines: list[str], rng: random.Random) -> list[str]:
    label = rng.choice(PREFIXES)
    return _every(lines, lambda ln: label + ln)


def indent(lines: list[str], rng: random.Random) -> list[str]:
    pad = rng.choice(("    ", "\t", "  "))
    return _every(lines, lambda ln: pad + ln)


def crlf(lines: list[str], rng: random.Random) -> list[str]:
    return [ln + "\r" for ln in lines]


def tabs(lines: list[str], rng: random.Random) -> list[str]:
    return [re.sub(r" +", "\t", ln) if i in set(_rows(lines)) else ln for i, ln in enumerate(lines)]


def fence(lines: list[str], rng: random.Random) -> list[str]:
    k = _posted(lines)
    return [*lines[:k], "Here is the output:", "", "```" + rng.choice(("", "text", "console")), *lines[k:], "```", ""]


def quote(lines: list[str], rng: random.Random) -> list[str]:
    return _every(lines, lambda ln: "> " + ln if ln else ">")


def second_table(lines: list[str], rng: random.Random) -> list[str]:
    return lines + [""] + lines[rng.randrange(len(lines) + 1) :] if lines else lines


def info(lines: list[str], rng: random.Random) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 5)):
        out.insert(rng.randrange(len(out) + 1), rng.choice(INFO))
    return out


def number(lines: list[str], rng: random.Random) -> list[str]:
    """A number of a line (a row's, half the time) replaced by junk."""
    i = _pick(lines, rng, rng.random() < 0.7)
    if i is None:
        return lines
    spans = [m.span() for m in re.finditer(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", lines[i])]
    if not spans:
        return lines
    a, b = rng.choice(spans)
    return lines[:i] + [lines[i][:a] + rng.choice(JUNK) + lines[i][b:]] + lines[i + 1 :]


def non_ascii(lines: list[str], rng: random.Random) -> list[str]:
    i = _pick(lines, rng)
    if i is None:
        return lines
    at = rng.randrange(len(lines[i]) + 1)
    return (
        lines[:i]
        + [lines[i][:at] + rng.choice(("\u00a0", "\u2009", "é", "\u202e", "\ufeff", "×", "µs")) + lines[i][at:]]
        + lines[i + 1 :]
    )


def columns(lines: list[str], rng: random.Random) -> list[str]:
    """A row with a field dropped or one added."""
    i = _pick(lines, rng, True)
    if i is None:
        return lines
    fields = lines[i].split()
    k = rng.randrange(len(fields) + 1)
    fields = (
        fields[:k] + fields[k + 1 :]
        if rng.random() < 0.5
        else fields[:k] + [rng.choice(("0", "x", "1.5"))] + fields[k:]
    )
    return lines[:i] + ["  " + "  ".join(fields)] + lines[i + 1 :]


def busbw_na(lines: list[str], rng: random.Random) -> list[str]:
    out = []
    for i, ln in enumerate(lines):
        fields = ln.split()
        if i in set(_rows(lines)) and len(fields) > 7:
            fields[7] = "N/A"
            ln = "  " + "  ".join(fields)
        out.append(ln)
    return out


def other_collective(lines: list[str], rng: random.Random) -> list[str]:
    other = rng.choice(("all_gather_perf", "reduce_scatter_perf", "broadcast_perf", "alltoall_perf", "sendrecv_perf"))
    return [re.sub(r"all_reduce_perf", other, ln) for ln in lines]


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (
        drop,
        duplicate,
        swap,
        cut,
        prefix,
        indent,
        crlf,
        tabs,
        fence,
        quote,
        second_table,
        info,
        number,
        non_ascii,
        columns,
        busbw_na,
        other_collective,
    )
}


def mutate(text: str, rng: random.Random, steps: int | None = None) -> tuple[str, list[str]]:
    """``text`` after 1-3 random mutations, and their names."""
    lines = text.splitlines()
    names = []
    for _ in range(steps or rng.randint(1, 3)):
        name = rng.choice(sorted(MUTATIONS))
        names.append(name)
        lines = MUTATIONS[name](lines, rng)
    return "\n".join(lines) + "\n", names


#: mutations after which a log must read exactly as before (the samples and the hardware): a whole post's framing
SAME = {"prefix", "indent", "crlf", "tabs", "fence", "quote"}
#: mutations after which a log that still reads must read the same collective on the same ranks
SAME_RANKS = SAME | {"duplicate", "swap", "second_table", "info", "busbw_na"}


def reading(path: Path) -> tuple[object, object]:
    """What the reader makes of a log, to compare: (the samples' figures, the hardware), each an error's class
    where it refuses."""
    try:
        samples = [
            (s.size, s.time_s, s.ranks, s.collective, s.algorithm, s.in_place_s, s.hosts)
            for s in read_samples(str(path))[0]
        ]
    except CollsimError as exc:
        samples = type(exc).__name__
    try:
        log = nccl_logs.parse_log(path)
        hw: object = (log.ranks, log.hosts, log.gpu, log.nccl, log.unmodelled, log.efa, log.collective, log.note)
    except (CollsimError, nccl_logs.LogError) as exc:
        hw = type(exc).__name__
    return samples, hw


def misread(clean: tuple[object, object], got: tuple[object, object], how: list[str]) -> str | None:
    """How a mutant's reading breaks the invariant its mutations keep (None where it keeps it): a framing reads
    as the post; a line duplicated, lines swapped ... keep the collective and its ranks; one number or column
    changed reads no (size, time) the post does not have, and leaves no row out but the last (a post cut there)."""
    if set(how) <= SAME and got != clean:
        return f"reads differently: {str(got)[:120]} (clean: {str(clean)[:120]})"
    if how in (["number"], ["columns"]) and isinstance(got[0], list) and isinstance(clean[0], list):
        pairs = [s[:2] for s in clean[0]]
        if wrong := [s[:2] for s in got[0] if s[:2] not in pairs]:
            return f"reads a row wrong: (size, s) {wrong[0]}"
        if left := [p for p in pairs[:-1] if p not in [s[:2] for s in got[0]]]:
            return f"leaves a row out: (size, s) {left[0]}"
    if set(how) <= SAME_RANKS and isinstance(got[0], list) and isinstance(clean[0], list) and got[0] and clean[0]:
        (_, _, p, c, *_), (_, _, p0, c0, *_) = got[0][0], clean[0][0]
        if (p, c) != (p0, c0):
            return f"{c} on {p} ranks, the clean log {c0} on {p0}"
    return None


def one_line(exc: BaseException) -> str | None:
    """Why ``exc`` is not an acceptable refusal (None where it is one clear line)."""
    if not isinstance(exc, (CollsimError, nccl_logs.LogError)):
        return f"{type(exc).__name__}"
    text = str(exc)
    if not text or "\n" in text:
        return f"{type(exc).__name__} over {text.count(chr(10)) + 1} lines"
    return None


def run_one(path: Path, predict: bool = False) -> list[tuple[str, str]]:
    """(stage, problem) for every stage of the reader that did not end in a result or one error line."""
    problems = []
    for stage, call in (
        ("read_samples", lambda: read_samples(str(path))),
        ("parse_log", lambda: nccl_logs.parse_log(path)),
    ):
        try:
            out = call()
        except Exception as exc:  # noqa: BLE001 -- what the fuzzer is looking for
            if why := one_line(exc):
                problems.append((stage, f"{why}: {str(exc)[:160]!r} at {_where(exc)}"))
            continue
        if stage == "parse_log":
            try:
                nccl_logs.topology(out)
                if predict:
                    nccl_logs.predict(out, max(s.size for s in read_samples(str(path))[0]))
            except Exception as exc:  # noqa: BLE001
                if why := one_line(exc):
                    problems.append(("topology/predict", f"{why}: {str(exc)[:160]!r} at {_where(exc)}"))
    return problems


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"


#: the topology the CLI stage calibrates and compares on (the development set's 2-node H100 logs' hardware)
CLI_TOPOLOGY = "hgx:hosts=2,preset=dgx-h100"


def _cli(args: list[str]) -> tuple[int, list[str]]:
    """``collsim ARGS`` in process: (exit status, stderr lines)."""
    import contextlib
    import io

    from collsim.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    return code, err.getvalue().strip().splitlines()


def run_cli(path: Path, folder: Path, calibration: Path) -> str | None:
    """``collsim validate calibrate --from`` the mutant and ``collsim validate compare --measured`` it on
    :data:`CLI_TOPOLOGY`: exit 0, or exit 2 with one ``collsim: error:`` line and no output file."""
    out, cmp = folder / "cal.yaml", folder / "cmp"
    for what, args, made in (
        ("calibrate", ["validate", "calibrate", "-t", CLI_TOPOLOGY, "--from", str(path), "-o", str(out)], out),
        (
            "compare",
            ["validate", "compare", "-t", CLI_TOPOLOGY, "--calibration", str(calibration), "--measured", str(path)]
            + ["--out", str(cmp), "--no-plot"],
            cmp / "compare.json",
        ),
    ):
        code, lines = _cli(args)
        if code not in (0, 2):
            return f"{what}: exit {code}"
        if code == 2 and (len(lines) != 1 or not lines[0].startswith("collsim: error: ") or made.exists()):
            return f"{what}: exit 2 with {len(lines)} stderr lines: {' | '.join(lines)[-240:]!r}"
        made.unlink(missing_ok=True)
    return None


def calibration_for_cli(folder: Path, seeds: Path) -> Path:
    """A calibration of :data:`CLI_TOPOLOGY` from the development set's 2-node ring log (compare needs one)."""
    cal = folder / "fuzz-cal.yaml"
    log = seeds / "h100-ndr-node005-2node-ring.txt"
    code, lines = _cli(["validate", "calibrate", "-t", CLI_TOPOLOGY, "--from", str(log), "-o", str(cal)])
    if code:
        raise SystemExit(f"fuzz_logs: cannot calibrate {log} for the CLI stage: {lines[-1:]}")
    return cal


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "folder",
        nargs="?",
        default=str(Path(__file__).resolve().parents[1] / "tests" / "data"),
        help="a folder of nccl-tests logs (*.txt) to mutate (default: the repository's tests/data excerpt)",
    )
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--predict", type=float, default=0.0, help="fraction of mutants also predicted (slow)")
    ap.add_argument("--cli", type=float, default=0.0, help="fraction of mutants also calibrated by the CLI (slow)")
    ap.add_argument("--slow", type=float, default=2.0, help="seconds a read may take")
    ap.add_argument("--show", type=int, default=3)
    args = ap.parse_args(argv)
    seeds = {p.name: p.read_text() for p in sorted(Path(args.folder).glob("*.txt")) if p.name != "README.txt"}
    if not seeds:
        print(f"fuzz_logs: no .txt logs in {args.folder}: give a folder of nccl-tests logs", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    clean = {name: reading(Path(args.folder) / name) for name in seeds}
    classes: Counter[str] = Counter()
    shown: dict[str, list[str]] = {}
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        calibration = calibration_for_cli(folder, Path(args.folder)) if args.cli else Path()
        for k in range(args.count):
            name = rng.choice(sorted(seeds))
            text, how = mutate(seeds[name], rng)
            path = folder / name
            path.write_text(text, encoding="utf-8")
            t0 = time.perf_counter()
            problems = run_one(path, rng.random() < args.predict)
            if (dt := time.perf_counter() - t0) > args.slow:
                problems.append(("time", f"{dt:.1f} s"))
            if rng.random() < args.cli and (why := run_cli(path, folder, calibration)):
                problems.append(("cli", why))
            if (
                (set(how) <= SAME_RANKS or how in (["number"], ["columns"]))
                and not problems
                and (why := misread(clean[name], reading(path), how))
            ):
                problems.append(("oracle", f"{'+'.join(how)}: {why}"))
            failed += bool(problems)
            for stage, problem in problems:
                what = problem.split(": ", 1)[1] if stage == "oracle" else problem
                key = f"{stage}: {re.sub(r'[(:].*', '', what)[:60]} @ {problem.rsplit(' at ', 1)[-1][:40]}"
                key = key.split(" @ ")[0] if stage == "oracle" else key
                classes[key] += 1
                if len(shown.setdefault(key, [])) < args.show:
                    shown[key].append(f"  #{k} {name} {'+'.join(how)}: {problem[:300]}")
    print(f"{failed} of {args.count} mutants failed (seed {args.seed})")
    for key, n in classes.most_common():
        print(f"{n:6d}  {key}")
        print("\n".join(shown[key]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
