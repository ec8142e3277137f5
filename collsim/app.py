"""The ``collsim`` Typer application every command module registers on, and how errors are worded.

Command modules (``collsim/cmd_*.py``) import :data:`app` from here; :mod:`collsim.cli` imports the
command modules and runs the app. Nothing here imports a command module, so there is no import circle.
"""

from __future__ import annotations

import sys

import typer

from sim.errors import CollsimError, one_line

__all__ = ["FLAGS", "app", "error_line", "fail"]

app = typer.Typer(
    name="collsim",
    help="How long will gradient synchronization take on this cluster, and where is the bottleneck?",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

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
    return f"collsim: error: {one_line(message)}"


def fail(message: str, code: int = 2) -> None:
    """Print one error line and exit."""
    print(f"collsim: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(code)
