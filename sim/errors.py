"""The package's error hierarchy.

Every error collsim raises on purpose derives from :class:`CollsimError`; the CLI turns
each one into a single line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "AlgorithmError",
    "CalibrationError",
    "CollsimError",
    "ConfigError",
    "RoutingError",
    "RunError",
    "Stalled",
    "TopologyError",
    "one_line",
]


class CollsimError(Exception):
    """Base class of every error collsim raises on purpose.

    ``param`` names the parameter of the library call the error is about (``ranks``, ``size``, ...),
    when there is one; the message then starts with that name, and the CLI puts its own flag there
    (``--ranks``) so that each side names what its user typed.

    >>> str(ConfigError("ranks: must be >= 1, got 0", param="ranks")), ConfigError("x", param="ranks").param
    ('ranks: must be >= 1, got 0', 'ranks')
    """

    def __init__(self, *args: object, param: str | None = None) -> None:
        super().__init__(*args)
        self.param = param


class ConfigError(CollsimError, ValueError):
    """A spec, a file or an option is malformed (the message names where)."""


class TopologyError(ConfigError):
    """A topology file or inline spec is invalid."""


class RoutingError(CollsimError):
    """Two endpoints cannot reach each other."""


class AlgorithmError(ConfigError):
    """An unknown algorithm, or one that does not apply to the collective or the cluster."""


class CalibrationError(CollsimError):
    """Calibration input is unusable or a fit failed."""


class RunError(CollsimError):
    """A simulation or a real run failed while it ran."""


class Stalled(RunError):
    """An event loop of collsim's engines made no progress: a defect of collsim, not of the input (made by
    :meth:`at`; its one argument is the message, as every RunError's, so that a copy is made the usual way).

    >>> err = Stalled.at("the classes engine", 0.5, 3, "classes")
    >>> print(err)
    the classes engine made no progress at simulated t=0.5 s: 3 classes active, none completes or starts -- a defect of collsim, not of the input; please report it
    >>> err.t, err.active, str(type(err)(*err.args)) == str(err)
    (0.5, 3, True)
    """

    t: float = float("nan")  # the simulated instant
    active: int = 0  # the classes or flows left

    @classmethod
    def at(cls, engine: str, t: float, active: int, what: str) -> Stalled:
        """The error of ``engine`` stuck at simulated ``t`` with ``active`` ``what`` (classes, flows) left."""
        err = cls(
            f"{engine} made no progress at simulated t={float(t)!r} s: {active} {what} active, none completes or starts"
            " -- a defect of collsim, not of the input; please report it"
        )
        err.t, err.active = float(t), active
        return err


#: every character Python's str.splitlines() breaks at, with the escape that shows it instead
_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def one_line(text: object) -> str:
    r"""``text`` as one line: line breaks that user input carried into a message come out escaped.

    >>> print(one_line("unknown node 'a\nb\u2028c'"))
    unknown node 'a\nb\u2028c'
    """
    return str(text).translate(_BREAKS)
