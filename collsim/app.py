"""The ``collsim`` Typer application every command module registers on, and how errors are worded.

Command modules (``collsim/cmd_*.py``) import :data:`app` from here; :mod:`collsim.cli` imports the
command modules and runs the app. Nothing here imports a command module, so there is no import circle.
"""

from __future__ import annotations

import sys

import typer

from sim.errors import CollsimError, one_line

__all__ = ["FLAGS", "MAX_ERROR_CHARS", "app", "clip", "error_line", "fail"]

app = typer.Typer(
    name="collsim",
    help="How long will gradient synchronization take on this cluster, and where is the bottleneck?",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: the longest error line printed: a message quoting a 100 KB input is cut in its middle
MAX_ERROR_CHARS = 1000


def clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut in the middle to at most about ``limit`` characters (the end often says what to do).

    >>> clip("a" * 30 + "b" * 30, 40)
    'aaaaaaaaaaaaaaaaaaaaaaaaaa ... [24 characters cut] ... bbbbbbbbbb'
    """
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 4
    return f"{text[:head]} ... [{len(text) - head - tail:,} characters cut] ... {text[-tail:]}"


#: library parameter -> the CLI flag that sets it (errors name what the user typed)
FLAGS = {
    "topology": "--topology",
    "collective": "--collective",
    "algorithm": "--algorithm",
    "size": "--size",
    "sizes": "--sizes",
    "ranks": "--ranks",
    "dtype": "--dtype",
    "root": "--root",
    "gamma": "--gamma",
    "engine": "--engine",
    "until": "--until",
    "link_model": "--calibration",
    "timeout": "--timeout",
}


def error_line(exc: BaseException) -> str:
    """``collsim: error: ...`` for a library error: a message that starts with the parameter it names
    (:attr:`sim.errors.CollsimError.param`) starts with the CLI's flag instead.

    >>> from sim.errors import ConfigError
    >>> error_line(ConfigError("ranks: must be >= 1, got 0", param="ranks"))
    'collsim: error: --ranks: must be >= 1, got 0'
    """
    message = str(exc)
    param = getattr(exc, "param", None) if isinstance(exc, CollsimError) else None
    flag = FLAGS.get(param or "")
    if flag and param and message.startswith(param):
        message = flag + message[len(param) :]
    return f"collsim: error: {clip(one_line(message))}"


def fail(message: str, code: int = 2) -> None:
    """Print one error line and exit."""
    print(f"collsim: error: {clip(one_line(message))}", file=sys.stderr)
    raise SystemExit(code)
