"""The rows of a report's tables, one frozen record per row; the summary, the plots, the HTML and
Markdown tables, ``results.csv``, ``collectives.csv`` and ``results.json`` read these and nothing else.

Each row's JSON form (:meth:`~reports.jsonform.JsonForm.to_dict`) is a flat mapping in field order:
the field order is the column order of the CSV files and the key order of ``results.json``.

>>> cell = CrossoverCell(gpus=64, size_bytes=4096, fastest="tree", time_s=2e-5, runner_up="ring",
...                      margin=0.5, parameters="nominal")
>>> cell.to_dict()
{'gpus': 64, 'size_bytes': 4096, 'fastest': 'tree', 'time_s': 2e-05, 'runner_up': 'ring', 'margin': 0.5, 'parameters': 'nominal'}
>>> CrossoverCell.from_dict(cell.to_dict()) == cell
True
"""

from __future__ import annotations

from dataclasses import dataclass

from .jsonform import JsonForm

__all__ = ["CollectiveRow", "CrossoverCell", "IterationRow", "JobFacts", "LinkRow", "ProblemRow"]


@dataclass(frozen=True)
class IterationRow(JsonForm):
    """One training iteration of one algorithm at one cluster size (a line of ``results.csv``).

    Times are seconds; ``comm_s`` runs from the first bucket's all-reduce start to the last one's end.
    ``scaling_efficiency`` is weak scaling against the algorithm's smallest size,
    ``efficiency_baseline_gpus``: T(baseline) / T(gpus).
    """

    algorithm: str
    gpus: int
    cluster: str
    iteration_s: float
    samples_per_s: float
    forward_s: float
    backward_s: float
    optimizer_s: float
    exposed_comm_s: float
    exposed_fraction: float
    comm_s: float
    buckets: int
    bytes_sent: float
    max_rank_bytes: float
    link_bytes: float
    busiest_link: str
    max_link_utilization: float
    parameters: str
    scaling_efficiency: float
    efficiency_baseline_gpus: int


@dataclass(frozen=True)
class CollectiveRow(JsonForm):
    """One all-reduce of one message size, with one algorithm at one cluster size (a line of
    ``collectives.csv``); bandwidths in GB/s as nccl-tests reports them."""

    algorithm: str
    gpus: int
    cluster: str
    size_bytes: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    link_bytes: float
    busiest_link: str
    max_link_utilization: float
    parameters: str


@dataclass(frozen=True)
class CrossoverCell(JsonForm):
    """The fastest all-reduce at one (cluster size, message size), and the runner-up's margin
    (its time / the fastest's - 1; None and ``runner_up`` empty when only one algorithm ran)."""

    gpus: int
    size_bytes: int
    fastest: str
    time_s: float
    runner_up: str
    margin: float | None
    parameters: str


@dataclass(frozen=True)
class LinkRow(JsonForm):
    """One of the busiest link directions of an iteration: ``rank`` 1 is the busiest; ``utilization``
    is its bytes / (capacity x iteration time)."""

    algorithm: str
    gpus: int
    rank: int
    link: str
    bytes: float
    utilization: float
    parameters: str


@dataclass(frozen=True)
class ProblemRow(JsonForm):
    """A point without figures (skipped: the algorithm does not apply; or failed), and why."""

    kind: str
    algorithm: str
    gpus: int
    reason: str


@dataclass(frozen=True)
class JobFacts:
    """The training job and the clusters a report describes (its set-up list and the compute line of
    the iteration figure). ``parameters`` is the model's parameter count when the spec gives one
    (``gradient_dtype`` is then its gradients' type, else empty); ``clusters`` is (GPUs, label) pairs."""

    name: str
    gradient_bytes: float
    gradient_dtype: str
    parameters: float | None
    forward_s: float
    backward_s: float
    optimizer_s: float
    samples_per_gpu: float
    bucket_bytes: float
    first_bucket_bytes: float
    overlap: bool
    concurrent_buckets: bool
    gamma: float
    clusters: tuple[tuple[int, str], ...]

    @property
    def compute_s(self) -> float:
        """Forward, backward and the optimizer step: the iteration without communication."""
        return self.forward_s + self.backward_s + self.optimizer_s
