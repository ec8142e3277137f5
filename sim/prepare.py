"""One place that turns a caller's inputs into a checked run: :func:`prepare` -> :class:`Run`.

Every caller -- :func:`sim.simulate`, training iterations (:mod:`sim.training`), the CLI, reports and
calibration -- prepares its runs here, so each input is checked once, in one order, with one message.
Errors name the library's parameters (``ranks: must be >= 1``) and carry them as ``param``; the CLI
puts its own flags there (``--ranks: must be >= 1``).

>>> run = prepare("star:hosts=4,bandwidth=100Gbps,latency=1us", "gather")
>>> run.algorithm.spec, run.ranks, run.gamma, run.engine     # the default algorithm follows the collective
('flat', 4, 0.0, 'auto')
>>> round(run.simulate("1MiB").time_s * 1e6, 3)
64.915
>>> prepare("star:hosts=4,bandwidth=1Gbps", ranks=9)
Traceback (most recent call last):
...
sim.errors.ConfigError: ranks: 9, but the cluster star-4 has only 4 GPUs
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import networkx as nx

from ._gc import paused_gc
from .algorithms import Algorithm, default_algorithm, get_algorithm
from .cluster import Cluster
from .collectives import DTYPES, Collective, get_collective
from .errors import ConfigError
from .linkmodel import MAX_GAMMA, LinkModel
from .units import check_size

if TYPE_CHECKING:
    from .results import SimResult

__all__ = ["ENGINES", "Run", "prepare", "resolve_cluster"]

#: the engines :func:`prepare` accepts (see :func:`sim.simulate`)
ENGINES = ("auto", "fast", "message")

Topology = str | os.PathLike[str] | nx.Graph | Cluster


@dataclass(frozen=True)
class Run:
    """A checked run: the cluster (with its link model), the collective, the algorithm and every option
    but the size, which :meth:`simulate` takes (one run, many sizes: a sweep)."""

    cluster: Cluster
    collective: Collective
    algorithm: Algorithm
    ranks: int
    dtype: str = "float"
    root: int = 0
    gamma: float = 0.0
    engine: str = "auto"
    check: bool = False
    check_links: bool = False
    until: float | None = None
    #: the sizes given to :func:`prepare`, checked (bytes)
    sizes: tuple[float, ...] = ()

    def simulate(self, size: float | str) -> SimResult:
        """Simulate the collective at ``size`` bytes (see :func:`sim.simulate.execute`)."""
        from .simulate import execute

        with paused_gc():
            return execute(self, check_size(size))


def resolve_cluster(topology: Topology, link_model: LinkModel | None = None) -> Cluster:
    """``topology`` as a :class:`Cluster` under ``link_model`` (a Cluster is reused, routes and all; its
    own link model stays unless another is given)."""
    if isinstance(topology, Cluster):
        return topology if link_model is None else topology.with_link_model(link_model)
    return Cluster(topology, link_model=link_model)


def nccl_release_of(algo: Algorithm, link_model: LinkModel) -> Algorithm:
    """``algo`` with the NCCL release of ``link_model`` (a calibration fitted through NCCL's schedules:
    :attr:`~sim.linkmodel.LinkModel.nccl_version`) where it has a ``version`` option it was not given;
    else ``algo`` itself."""
    release = link_model.nccl_version
    options = algo.options
    if release is None or "version" not in type(options).model_fields or "version" in options.model_fields_set:
        return algo
    return type(algo)(type(options).model_validate({**options.model_dump(exclude_unset=True), "version": release}))


def prepare(
    topology: Topology,
    collective: str = "allreduce",
    algorithm: str | Algorithm | None = None,
    sizes: Iterable[float | str] = (),
    *,
    ranks: int | None = None,
    dtype: str = "float",
    root: int = 0,
    gamma: float | None = None,
    engine: str = "auto",
    check: bool = False,
    check_links: bool = False,
    until: float | None = None,
    link_model: LinkModel | None = None,
) -> Run:
    """Check every input of a simulation and return the :class:`Run`.

    Parameters
    ----------
    topology : spec, path, graph or Cluster
        The cluster (a Cluster is reused as is, with its route cache).
    collective : str
        ``allreduce``, ``broadcast``, ... (aliases such as ``all-reduce`` too).
    algorithm : str or Algorithm, optional
        A spec such as ``tree:chunks=8``; default: the collective's first algorithm (``ring`` for
        all-reduce, ``flat`` for gather, ...: :func:`sim.algorithms.default_algorithm`).
    sizes : iterable of float or str
        Sizes to check now (bytes or strings such as ``64MiB``); kept in :attr:`Run.sizes`.
    ranks : int, optional
        Use the first ``ranks`` GPUs (the cluster keeps every GPU: dedicated servers use the others).
    dtype : str
        nccl-tests' type name (only the count column depends on it).
    root : int
        The root rank of rooted collectives.
    gamma : float, optional
        Seconds per byte of reduction arithmetic; default: the link model's γ, else 0.
    engine : {"auto", "fast", "message"}
    check, check_links : bool
        Track every contribution symbolically; verify no link direction exceeds its capacity.
    until : float, optional
        Simulated seconds after which the run stops with :class:`~sim.errors.RunError`.
    link_model : LinkModel, optional
        Overrides the cluster's link model (:mod:`sim.linkmodel`; a calibration's, say).
    """
    coll = get_collective(collective)
    with paused_gc():
        cluster = resolve_cluster(topology, link_model)
    p = cluster.size if ranks is None else ranks
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ConfigError(f"ranks: must be >= 1, got {p!r}", param="ranks")
    if p > cluster.size:
        raise ConfigError(f"ranks: {p}, but the cluster {cluster.name} has only {cluster.size} GPUs", param="ranks")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype: unknown dtype {dtype!r} (valid: {', '.join(DTYPES)})", param="dtype")
    checked = tuple(check_size(s) for s in sizes)
    if not 0 <= root < p:
        raise ConfigError(f"root: {root} is not a rank (0..{p - 1})", param="root")
    if gamma is None:
        gamma = cluster.link_model.gamma or 0.0
    if not (isinstance(gamma, int | float) and math.isfinite(gamma) and 0 <= gamma <= MAX_GAMMA):
        raise ConfigError(f"gamma: must be between 0 and {MAX_GAMMA:g} s/byte, got {gamma}", param="gamma")
    algo = get_algorithm(coll.name, default_algorithm(coll.name) if algorithm is None else algorithm)
    algo = nccl_release_of(algo, cluster.link_model)
    algo.check(p, cluster)
    if engine not in ENGINES:
        raise ConfigError(f"engine: unknown engine {engine!r} (valid: {', '.join(ENGINES)})", param="engine")
    if until is not None and not until > 0:
        raise ConfigError(f"until: must be > 0 simulated seconds, got {until}", param="until")
    return Run(cluster, coll, algo, p, dtype, root, float(gamma), engine, check, check_links, until, checked)
