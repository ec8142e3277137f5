"""The documented commands run as written.

README.md's quick start runs through the CLI in process (the cheap lines: not those under sudo, not the
16,384-GPU ones, not `validate run`, which starts torch ranks), every `$ collsim ...` line of README.md and
docs/*.md parses (its subcommand and options exist), and every `collsim SUBCOMMAND` the docs name answers
`--help`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from collsim import cli
from collsim.app import app
from tests.calib_fixtures import nccl_rows, nccl_text

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# performance-log.md is history: its commands are as they were then
DOCS = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "performance-log.md")]
PROMPT = re.compile(r"^\s*\$ (.*)$")


def _commands(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of every `$ ` line, continuation lines joined."""
    lines = path.read_text().splitlines()
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        m = PROMPT.match(lines[i])
        start = i
        i += 1
        if not m:
            continue
        text = m.group(1)
        while text.rstrip().endswith("\\") and i < len(lines):
            text = text.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        out.append((start + 1, text))
    return out


def _collsim_argv(text: str) -> tuple[list[str], bool] | None:
    """The arguments after `collsim` and whether it runs under sudo; None for another program."""
    words = shlex.split(text, comments=True)
    sudo = bool(words) and words[0] == "sudo"
    words = words[sudo:]
    while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value before the program
        words = words[1:]
    if not words or Path(words[0]).name != "collsim":
        return None
    return words[1:], sudo


def _documented() -> list[tuple[str, list[str], bool]]:
    found = []
    for path in DOCS:
        for line, text in _commands(path):
            parsed = _collsim_argv(text)
            if parsed is not None:
                found.append((f"{path.relative_to(ROOT)}:{line}", *parsed))
    return found


def _tree():
    cli._register()
    return typer.main.get_command(app)


def _parse(argv: list[str]):
    """Parse argv as the CLI would, down to the subcommand, without running it (click's own errors raise)."""
    cmd = _tree()
    ctx = cmd.make_context("collsim", list(argv))
    while hasattr(cmd, "resolve_command"):
        protected = getattr(ctx, "_protected_args", None)  # click >= 8.2 (typer's own copy); before: protected_args
        name, sub, rest = cmd.resolve_command(ctx, (ctx.protected_args if protected is None else protected) + ctx.args)
        ctx = sub.make_context(name, rest, parent=ctx)
        cmd = sub
    return ctx


DOCUMENTED = _documented()


def test_the_docs_show_commands():
    names = {where.split(":")[0] for where, _, _ in DOCUMENTED}
    assert "README.md" in names and len(DOCUMENTED) >= 40
    assert len(RANK_ARGVS) >= 6


@pytest.mark.parametrize("where, argv, sudo", DOCUMENTED, ids=[d[0] for d in DOCUMENTED])
def test_documented_command_parses(where, argv, sudo):
    _parse(argv)  # No such option / command, missing argument, bad choice: raises


def _rank_argvs() -> list[tuple[str, list[str]]]:
    """The rank options of every documented `... -m validate ARGS` and `collsim netlab run SPEC -- ARGS`."""
    found = []
    for path in DOCS:
        for line, text in _commands(path):
            words = shlex.split(text, comments=True)
            if "validate" in words and words[words.index("validate") - 1] == "-m":
                found.append((f"{path.relative_to(ROOT)}:{line}", words[words.index("validate") + 1 :]))
            elif "netlab" in words and "run" in words and "--" in words:
                found.append((f"{path.relative_to(ROOT)}:{line}", words[words.index("--") + 1 :]))
    return found


RANK_ARGVS = _rank_argvs()


@pytest.mark.parametrize("where, argv", RANK_ARGVS, ids=[r[0] for r in RANK_ARGVS])
def test_documented_rank_options_parse(where, argv):
    from validate.options import build_parser

    build_parser().parse_args(argv)  # argparse exits 2 on an unknown option


def _quick_start() -> list[tuple[str, list[str], str | None]]:
    """README's quick-start lines, each with why it is not run here (None: run)."""
    out, unmade = [], set()
    for where, argv, sudo in DOCUMENTED:
        if not where.startswith("README.md:"):
            continue
        why = None
        if sudo:
            why = "needs root (netlab)"
        elif any("hosts=2048" in a for a in argv):
            why = "16,384 GPUs"
        elif argv[:2] == ["validate", "run"]:
            why = "starts torch ranks (tens of seconds)"
        elif unmade & set(argv):
            why = "needs a file a skipped line writes"
        if why and "-o" in argv:
            unmade.add(argv[argv.index("-o") + 1])
        out.append((where, argv, why))
    return out


QUICK_START = _quick_start()
#: the lines run here (the others are parsed, not run: test_documented_command_parses)
RUN = [(where, argv) for where, argv, why in QUICK_START if why is None]


def test_quick_start_is_there():
    ran = [argv[0] for _, argv in RUN]
    assert {"simulate", "topology", "algorithms", "compare", "report", "validate"} <= set(ran)
    # what is not run is only what needs root, 16k GPUs, real torch ranks or a file of those
    assert {why for _, _, why in QUICK_START} - {None} <= {
        "needs root (netlab)",
        "16,384 GPUs",
        "starts torch ranks (tens of seconds)",
        "needs a file a skipped line writes",
    }


@pytest.mark.parametrize("where, argv", RUN, ids=[r[0] for r in RUN])
def test_quick_start_runs(where, argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # stands for the user's nccl-tests log (one 8-GPU H100 node)
    rows = nccl_rows("allreduce", 8, [2**k for k in range(20, 31)], 20e-6, 1 / 150e9)
    (tmp_path / "all_reduce_perf.txt").write_text(nccl_text("all_reduce_perf", "allreduce", 8, rows))
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, f"{where}: collsim {shlex.join(argv)} -> exit {code}: {err[-2000:]}"
    assert out and "Traceback" not in out + err


COMMAND = re.compile(
    r"(?:^|[;&|]\s*)(?:sudo\s+)?(?:[\w./-]*/)?collsim\s+([a-z][a-z-]*)\b(?!:)(?:\s+([a-z][a-z-]*)\b(?!:))?"
)


def _named_subcommands() -> list[tuple[str, ...]]:
    """Every `collsim SUB [SUBSUB]` in the docs' code (spans and `$ ` lines)."""
    groups = {name for name, cmd in _tree().commands.items() if hasattr(cmd, "commands")}
    found: set[tuple[str, ...]] = set()
    for path in DOCS:
        prose = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("```"))
        code = re.findall(r"`([^`\n]+)`", prose) + [t for _, t in _commands(path)]
        for span in code:  # a command begins the span or follows `;` / `&&` (not: an error message naming collsim)
            for m in re.finditer(COMMAND, span):
                first, second = m.groups()
                found.add((first, second) if first in groups and second else (first,))
    return sorted(found)


NAMED = _named_subcommands()


def test_docs_name_subcommands():
    assert ("validate", "calibrate") in NAMED and ("simulate",) in NAMED


@pytest.mark.parametrize("names", NAMED, ids=[" ".join(n) for n in NAMED])
def test_named_subcommand_exists(names, capsys):
    assert cli.main([*names, "--help"]) == 0
    assert "Usage:" in capsys.readouterr().out
