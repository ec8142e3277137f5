"""Clusters at every size of a report: a builder scaled to N GPUs, the first N GPUs of one topology, or
whole topologies -- as self-contained, JSON-able references that any worker (local or on a dask
cluster) turns back into a graph.

A builder is scaled by the parameter that sets its number of hosts: ``hosts`` for ``star``, ``ring``,
``dgx`` and ``hgx`` (HGX servers: a report lists ``nccl``, what NCCL would run, beside the textbook
algorithms by default); ``leaves`` (with the given ``hosts_per_leaf``) for ``leaf-spine``; a near-square 2-D
``dims`` for ``torus``. An algorithm that needs spare hosts (dedicated parameter servers) gets them
added beyond the N data-parallel GPUs.

>>> from reports.spec import parse_spec
>>> ref = cluster_refs(parse_spec({"job": {"parameters": 1e6, "compute_time": 0.1},
...     "cluster": {"builder": "dgx", "params": {"gpus_per_host": 8}, "sizes": [16, 32]}}))[1]
>>> ref.gpus, ref.label, len(build_graph(ref, spare_hosts=1).graph["ranks"])
(32, 'dgx 4x8', 40)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx

from sim.errors import ConfigError
from sim.topology import BUILDERS, load_graph, parse_inline

from .spec import ReportSpec

if TYPE_CHECKING:
    from sim.linkmodel import LinkModel

__all__ = ["SCALERS", "ClusterRef", "build_graph", "cluster_refs", "link_model_of", "register_scaler"]

Scaler = Callable[[dict[str, Any], int], dict[str, Any]]
#: builder name -> (default GPUs per host, function(params, hosts) -> params for that many hosts)
SCALERS: dict[str, tuple[int, Scaler]] = {}


def register_scaler(builder: str, gpus_per_host: int = 1) -> Callable[[Scaler], Scaler]:
    """Teach the report how to scale ``builder`` to a number of hosts."""

    def decorate(func: Scaler) -> Scaler:
        if builder in SCALERS:
            raise ValueError(f"a scaler for builder {builder!r} is already registered")
        SCALERS[builder] = (gpus_per_host, func)
        return func

    return decorate


@register_scaler("star")
def _star(params: dict[str, Any], hosts: int) -> dict[str, Any]:
    return {**params, "hosts": hosts}


@register_scaler("ring")
def _ring(params: dict[str, Any], hosts: int) -> dict[str, Any]:
    return {**params, "hosts": hosts}


@register_scaler("dgx", gpus_per_host=8)
def _dgx(params: dict[str, Any], hosts: int) -> dict[str, Any]:
    return {**params, "hosts": hosts}


@register_scaler("hgx", gpus_per_host=8)
def _hgx(params: dict[str, Any], hosts: int) -> dict[str, Any]:
    return {**params, "hosts": hosts}


@register_scaler("leaf-spine")
def _leaf_spine(params: dict[str, Any], hosts: int) -> dict[str, Any]:
    per_leaf = int(params.get("hosts_per_leaf", 0))
    if per_leaf < 1:
        raise ConfigError("cluster.params.hosts_per_leaf: required to scale leaf-spine")
    if hosts <= per_leaf:
        return {**params, "leaves": 1, "hosts_per_leaf": hosts}
    # whole leaves; hosts beyond the ones asked for stay idle (or serve as spare hosts)
    return {**params, "leaves": math.ceil(hosts / per_leaf)}


@register_scaler("torus")
def _torus(params: dict[str, Any], hosts: int) -> dict[str, Any]:
    rows = max(d for d in range(1, math.isqrt(hosts) + 1) if hosts % d == 0)
    return {**params, "dims": f"{rows}x{hosts // rows}"}


#: the parameters a scaler sets, which a spec must leave to ``sizes``
_SIZE_PARAMS = ("hosts", "leaves", "dims")


@dataclass(frozen=True)
class ClusterRef:
    """One cluster size: ``gpus`` data-parallel GPUs on a graph built from ``builder`` + ``params`` or
    given as node-link ``graph`` data. ``digest`` identifies the cluster (for cache keys)."""

    label: str
    gpus: int
    builder: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    graph: dict[str, Any] | None = field(default=None, repr=False)
    digest: str = ""
    calibration: dict[str, Any] | None = field(default=None, repr=False)

    def identity(self) -> dict[str, Any]:
        """What the cluster is, for cache keys (the graph and the calibration by their digests)."""
        ident = {"gpus": self.gpus, "builder": self.builder, "params": self.params, "digest": self.digest}
        if self.calibration is not None:
            ident["calibration"] = _digest(self.calibration)
        return ident


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _graph_ref(graph: nx.DiGraph, gpus: int, label: str) -> ClusterRef:
    data = nx.node_link_data(graph, edges="links")
    return ClusterRef(label=label, gpus=gpus, graph=data, digest=_digest(data))


def cluster_refs(spec: ReportSpec) -> list[ClusterRef]:
    """The clusters of a report, smallest first (each carrying the spec's calibration, if any)."""
    refs = _refs(spec)
    if spec.calibration is None:
        return refs
    from dataclasses import replace

    from validate.calibration import load_calibration

    cal = load_calibration(spec.calibration).model_dump(mode="json")
    return [replace(ref, calibration=cal) for ref in refs]


def _refs(spec: ReportSpec) -> list[ClusterRef]:
    c = spec.cluster
    if c.builder is not None:
        assert c.sizes is not None
        if c.builder not in BUILDERS:
            raise ConfigError(f"cluster.builder: unknown builder {c.builder!r} (valid: {', '.join(sorted(BUILDERS))})")
        if c.builder not in SCALERS:
            raise ConfigError(
                f"cluster.builder: the report cannot scale {c.builder!r} (scalable: {', '.join(sorted(SCALERS))}); "
                "list its files under cluster.topologies instead"
            )
        for key in _SIZE_PARAMS:
            if key in c.params:
                raise ConfigError(f"cluster.params.{key}: set from cluster.sizes; remove it")
        refs = []
        for size in c.sizes:
            per_host = int(c.params.get("gpus_per_host", SCALERS[c.builder][0]))
            if size % per_host:
                raise ConfigError(f"cluster.sizes: {size} GPUs is not a whole number of {per_host}-GPU hosts")
            ref = ClusterRef(
                label=_label(c.builder, size, per_host), gpus=size, builder=c.builder, params=dict(c.params)
            )
            build_graph(ref)  # refuse bad params now, with the spec's path, not in a worker
            refs.append(ref)
        return refs
    if c.topology is not None:
        graph = _load(c.topology, "cluster.topology")
        total = len(graph.graph["ranks"])
        sizes = c.sizes or [total]
        for size in sizes:
            if size > total:
                raise ConfigError(f"cluster.sizes: {size} GPUs, but {graph.graph['name']!r} has only {total}")
        return [_graph_ref(graph, size, f"{graph.graph['name']} ({size} of {total} GPUs)") for size in sizes]
    assert c.topologies is not None
    refs = []
    for i, name in enumerate(c.topologies):
        graph = _load(name, f"cluster.topologies[{i}]")
        refs.append(_graph_ref(graph, len(graph.graph["ranks"]), str(graph.graph["name"])))
    refs.sort(key=lambda r: r.gpus)
    for a, b in zip(refs, refs[1:], strict=False):
        if a.gpus == b.gpus:
            raise ConfigError(f"cluster.topologies: {a.label!r} and {b.label!r} both have {a.gpus} GPUs")
    return refs


def _label(builder: str, gpus: int, per_host: int) -> str:
    return f"{builder} {gpus // per_host}x{per_host}" if per_host > 1 else f"{builder} {gpus}"


def _load(name: str, where: str) -> nx.DiGraph:
    try:
        return load_graph(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def build_graph(ref: ClusterRef, spare_hosts: int = 0) -> nx.DiGraph:
    """The graph of ``ref``, with ``spare_hosts`` more hosts where it comes from a builder (a whole
    topology has the hosts it has)."""
    if ref.graph is not None:
        graph = load_graph(nx.node_link_graph(ref.graph, edges="links"))
    else:
        assert ref.builder is not None
        per_host = int(ref.params.get("gpus_per_host", SCALERS[ref.builder][0]))
        params = SCALERS[ref.builder][1](ref.params, ref.gpus // per_host + spare_hosts)
        graph = parse_inline(ref.builder, params, where="cluster.params")
    return graph


def link_model_of(ref: ClusterRef) -> LinkModel | None:
    """The link model of ``ref``'s calibration (None: nominal)."""
    if ref.calibration is None:
        return None
    from validate.calibration import Calibration

    return Calibration.model_validate(ref.calibration).link_model()
