"""What every real algorithm is: a plan for one rank over a :class:`Task`, registered under the same
(collective, name) as the simulator's algorithm whose schedule it runs.

A subclass defines ``name``, ``collective``, ``summary``, optional ``Options`` (a :class:`sim.schema.Spec`,
read from ``name:key=value,...`` exactly as the simulator's registry reads it) and :meth:`plan`, which
builds everything once per size and returns the callable the benchmark times.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch

from sim.algorithms.base import NoOptions
from sim.errors import AlgorithmError
from sim.schema import Spec

from ..schedule import Comm

__all__ = ["RealAlgorithm", "Task"]


@dataclass(frozen=True)
class Task:
    """One rank's side of a collective.

    ``inp`` and ``out`` are the buffers in nccl-tests' sense: for the in-place collectives (all-reduce,
    broadcast, reduce) they are the same tensor; for the gathering ones ``inp`` holds this rank's block
    (or, for scatter, reduce-scatter and all-to-all, the ``p`` blocks) and ``out`` receives the result.
    """

    comm: Comm
    inp: torch.Tensor
    out: torch.Tensor
    root: int = 0
    gpus_per_host: int = 1

    @property
    def rank(self) -> int:
        return self.comm.rank

    @property
    def p(self) -> int:
        return self.comm.size


class RealAlgorithm(ABC):
    """Base class of every real algorithm (see the module docstring)."""

    name: ClassVar[str]
    collective: ClassVar[str]
    Options: ClassVar[type[Spec]] = NoOptions
    summary: ClassVar[str] = ""
    #: True for the library's own collectives (``builtin``), False for point-to-point schedules
    library: ClassVar[bool] = False

    def __init__(self, options: Spec | None = None) -> None:
        self.options = options if options is not None else self.Options()

    @property
    def spec(self) -> str:
        """The canonical spec, e.g. ``tree:chunks=8`` (only options that differ from the defaults)."""
        changed = self.options.model_dump(exclude_defaults=True)
        return self.name + "".join(f"{':' if i == 0 else ','}{k}={v}" for i, (k, v) in enumerate(changed.items()))

    def check(self, p: int, gpus_per_host: int = 1) -> None:
        """Raise :class:`~sim.errors.AlgorithmError` when the algorithm cannot run on ``p`` ranks."""
        return None

    def refuse(self, why: str) -> AlgorithmError:
        """An :class:`~sim.errors.AlgorithmError` naming this algorithm."""
        return AlgorithmError(f"{self.collective} algorithm {self.spec}: {why}")

    @abstractmethod
    def plan(self, task: Task) -> Callable[[], None]:
        """Everything prepared for ``task``; calling the result runs one collective."""

    def __repr__(self) -> str:
        return f"<real {self.collective} algorithm {self.spec}>"
