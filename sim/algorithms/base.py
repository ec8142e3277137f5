"""What every algorithm is: a SimPy process over a :class:`~sim.runtime.Job`, beside its closed-form
cost, registered under a name for one collective.

An algorithm module (one per algorithm name, e.g. ``ring.py``) defines, for each collective it serves,
a subclass of :class:`Algorithm` with

* ``name`` and ``collective`` -- the registry key (``allreduce`` / ``ring``);
* ``Options`` -- a schema of its options (``tree:chunks=8`` gives ``chunks=8``);
* :meth:`run` -- the generator that moves the data through ``job.send`` / ``job.recv``;
* :meth:`cost` -- the closed form on an uncongested star (model.md), in α, β, γ;
* :meth:`program` -- optionally, the same schedule as a step program, for the fast path;
* :meth:`dataflow` -- or as a dataflow (per-message dependencies: pipelined trees);
* :meth:`segments` -- how finely it cuts the buffer, for the data check.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator
from typing import Any, ClassVar

from ..schema import Spec

__all__ = ["Algorithm", "NoOptions"]


class NoOptions(Spec):
    """An algorithm without options."""


class Algorithm(ABC):
    """Base class of every algorithm (see the module docstring)."""

    name: ClassVar[str]
    collective: ClassVar[str]
    Options: ClassVar[type[Spec]] = NoOptions
    summary: ClassVar[str] = ""
    #: further option sets the oracle harness runs besides the defaults, e.g. ``("tree:chunks=4",)``
    examples: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: Spec | None = None) -> None:
        self.options = options if options is not None else self.Options()

    @property
    def spec(self) -> str:
        """The canonical spec string, e.g. ``tree:chunks=8``."""
        fields = self.options.model_dump(exclude_defaults=True)
        if not fields:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in fields.items())

    def check(self, p: int, cluster: Any) -> None:
        """Raise :class:`~sim.errors.AlgorithmError` when the algorithm cannot run on ``p`` ranks of
        ``cluster`` (too few ranks, no spare hosts, ...)."""
        return None

    def spare_hosts(self, p: int) -> int:
        """Hosts beyond the ``p`` ranks the algorithm needs (dedicated servers); 0 for most."""
        return 0

    def closed_form_exact(self, p: int) -> bool:
        """Whether :meth:`cost` is the exact simulated time on an uncongested star with ``p`` ranks
        (False where it is only an approximation, e.g. p not a power of two for some schemes)."""
        return True

    def segments_for(self, p: int, cluster: Any) -> int:
        """:meth:`segments` on a given cluster (algorithms whose cut depends on the hosts override it)."""
        return self.segments(p)

    def segments(self, p: int) -> int:
        """Number of buffer segments the data check tracks (per-rank buffer, or total for the
        gathering collectives)."""
        return p

    def program(self, p: int, nbytes: float, cluster: Any) -> Any:
        """The algorithm as a :class:`~sim.fastpath.StepProgram` for the fast path, or ``None``.

        An algorithm that returns one must mean by it exactly what its :meth:`run` does; the tests hold
        both paths to the same times (tests/test_fastpath.py)."""
        return None

    def fan(self, p: int, nbytes: float, cluster: Any, root: int = 0) -> Any:
        """The algorithm as a :class:`~sim.classes.FanPlan` (push to servers, reduce, pull) for the
        flow-class fast path, or ``None``; like :meth:`program`, it must mean exactly what :meth:`run`
        does (tests/test_classes.py holds both to the same times)."""
        return None

    def dataflow(self, p: int, nbytes: float, cluster: Any = None, root: int = 0) -> Any:
        """The algorithm as a :class:`~sim.dataflow.Dataflow` (messages with dependencies) for the fast
        path, or ``None``; as with :meth:`program`, it must mean exactly what :meth:`run` does."""
        return None

    @abstractmethod
    def run(self, job: Any) -> Generator[Any, Any, None]:
        """The SimPy process body: returns when every rank is done."""

    @abstractmethod
    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        """Closed-form time on an uncongested star with Hockney parameters α, β and reduction γ."""

    def __repr__(self) -> str:
        return f"<{self.collective} algorithm {self.spec}>"
