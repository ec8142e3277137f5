"""The ``collsim`` command: the front door to the simulator, validate, netlab and reports.

Every subcommand lives in its own module (``collsim/cmd_*.py``) and registers itself on the app of
:mod:`collsim.app`; this module imports them and runs it.
Errors collsim raises on purpose, usage errors and unreadable input all end the same way: one line on
stderr, ``collsim: error: ...``, and exit code 2 -- never a traceback.
"""

from __future__ import annotations

import os
import signal
import sys

import typer

try:  # typer >= 0.26 vendors click; older releases use click itself
    from typer._click import exceptions as _click
except ImportError:  # pragma: no cover
    import click.exceptions as _click  # type: ignore[no-redef]

from collsim import HELD_SIGNALS
from sim import lifetime
from sim.errors import CollsimError, one_line

from .app import app, clip, error_line, fail

__all__ = ["app", "clip", "entry", "fail", "main"]

_ABORT: type[BaseException] = getattr(_click, "Abort", typer.Abort)


def _register() -> None:
    from . import cmd_sim  # noqa: F401  (registers its commands)

    for optional in ("cmd_compare", "cmd_validate", "cmd_calibrate", "cmd_netlab", "cmd_report"):
        try:
            __import__(f"{__package__}.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{optional}":
                raise


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the console script)."""
    lifetime.reset()
    try:
        with lifetime.interrupt_on_signals((signal.SIGINT, signal.SIGTERM, signal.SIGHUP)):
            _register()  # the subcommands' imports (validate, pydantic, ...)
            # what the console script held during the imports (collsim.entry) arrives now, at our handlers;
            # before any child process is started (a child inherits the mask)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)
            result = app(args=argv, prog_name="collsim", standalone_mode=False)
    except _click.NoArgsIsHelpError:
        return 0
    except _click.UsageError as exc:
        hint = f" (see: collsim {exc.ctx.command_path.partition(' ')[2]} --help)".replace("  ", " ") if exc.ctx else ""
        print(f"collsim: error: {clip(one_line(exc.format_message()))}{hint}", file=sys.stderr)
        return 2
    except (_ABORT, KeyboardInterrupt):
        return _interrupted()
    except CollsimError as exc:
        print(error_line(exc), file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (collsim ... | head): not an error worth a traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        return _interrupted() if code == 130 and lifetime.received() else code
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"collsim: error: {clip(one_line(f'{exc.strerror or exc}{where}'))}", file=sys.stderr)
        return 2
    except MemoryError:
        print("collsim: error: out of memory (try fewer ranks or a smaller sweep)", file=sys.stderr)
        return 2
    if lifetime.received() is not None:  # typer turns an interrupt into a silent exit 130
        return _interrupted()
    return result if isinstance(result, int) else 0


def _interrupted() -> int:
    """Exit 130 after an interruption, with one line saying so unless the command said it already."""
    if not lifetime.announced():
        sig = lifetime.received()
        how = f" ({signal.Signals(sig).name})" if sig is not None and sig != signal.SIGINT else ""
        lifetime.announce(f"collsim: interrupted{how}")
    return 130


def entry() -> None:
    """The console script's entry point (:func:`collsim.entry`, which imports this module inside it)."""
    from collsim import entry as package_entry

    package_entry()


if __name__ == "__main__":
    entry()
