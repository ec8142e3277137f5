"""Topology generators, in the manner of networkx's: ``star(hosts=4, bandwidth="100Gbps")`` returns
a :class:`networkx.DiGraph` (see :mod:`sim.topology.graph` for its attributes).

Every generator is registered under the name it has in inline specs (``star:hosts=4,bandwidth=..``);
its keyword arguments are validated by a schema, so numbers and unit strings are both accepted.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Literal

import networkx as nx
from pydantic import Field, PositiveInt, field_validator

from .._gc import paused_gc
from ..errors import TopologyError
from ..schema import Bandwidth, Spec, Time, validate_spec
from ..units import format_bandwidth, format_time
from .graph import MAX_GPUS, MAX_LINKS, ClusterBuilder, check_memory

__all__ = ["BUILDERS", "MAX_GPUS", "MAX_LINKS", "dgx", "leaf_spine", "register_builder", "ring", "star", "torus"]


class _HostParams(Spec):
    gpus_per_host: PositiveInt = 1
    intra_bandwidth: Bandwidth | None = None
    intra_latency: Time = 0.0
    overhead: Time = 0.0


class StarParams(_HostParams):
    hosts: PositiveInt
    bandwidth: Bandwidth
    latency: Time = 0.0


class LeafSpineParams(_HostParams):
    leaves: PositiveInt
    hosts_per_leaf: PositiveInt
    spines: PositiveInt = 1
    bandwidth: Bandwidth
    uplink_bandwidth: Bandwidth | None = None
    latency: Time = 0.0
    ecmp: Literal["hash", "destination"] = "hash"


class DgxParams(Spec):
    hosts: PositiveInt
    gpus_per_host: PositiveInt = 8
    nvlink_bandwidth: Bandwidth = 900e9
    nvlink_latency: Time = 0.6e-6
    nic_bandwidth: Bandwidth = 400e9 / 8
    pcie_bandwidth: Bandwidth = 64e9
    latency: Time = 1e-6
    hosts_per_leaf: PositiveInt = 32
    spines: PositiveInt | None = None
    uplink_bandwidth: Bandwidth | None = None
    overhead: Time = 0.0
    ecmp: Literal["hash", "destination"] = "destination"


class TorusParams(_HostParams):
    dims: tuple[PositiveInt, ...] = Field(min_length=1, max_length=6)
    bandwidth: Bandwidth
    latency: Time = 0.0

    @field_validator("dims", mode="before")
    @classmethod
    def _dims(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return tuple(int(part) for part in value.lower().split("x"))
            except ValueError:
                raise ValueError(f"expected sizes like '4x4' or '4x4x4', got {value!r}") from None
        return value


class RingParams(_HostParams):
    hosts: PositiveInt
    bandwidth: Bandwidth
    latency: Time = 0.0


BuilderFunc = Callable[..., nx.DiGraph]
BUILDERS: dict[str, tuple[BuilderFunc, type[Spec]]] = {}


def register_builder(name: str, params: type[Spec]) -> Callable[[BuilderFunc], BuilderFunc]:
    """Register a generator under ``name`` for inline specs; a name can be registered once."""

    def decorate(func: BuilderFunc) -> BuilderFunc:
        if name in BUILDERS:
            raise ValueError(f"topology builder {name!r} is already registered")

        @functools.wraps(func)
        def build(*args: Any, **kwargs: Any) -> nx.DiGraph:
            with paused_gc():
                return func(*args, **kwargs)

        BUILDERS[name] = (build, params)
        return build

    return decorate


def _params(model: type[Spec], kind: str, values: dict[str, Any]) -> Any:
    return validate_spec(model, {k: v for k, v in values.items() if v is not None}, kind)


def _check_size(kind: str, gpus: int, links: int = 0) -> None:
    """Refuse, before anything is built, a cluster beyond :data:`MAX_GPUS` GPUs or :data:`MAX_LINKS` links."""
    if gpus > MAX_GPUS:
        raise TopologyError(f"{kind}: {gpus:,} GPUs is more than collsim builds (at most {MAX_GPUS:,})")
    if links > MAX_LINKS:
        raise TopologyError(f"{kind}: {links:,} links is more than collsim builds (at most {MAX_LINKS:,})")
    check_memory(kind, 2 * gpus, links)  # a GPU and its NIC or host node, at least


def _intra_links(hosts: int, gpus_per_host: int) -> int:
    return hosts * gpus_per_host if gpus_per_host > 1 else 0


def _spec(kind: str, p: Spec) -> str:
    """The canonical inline spec, values in readable units: ``star:hosts=4,bandwidth=100Gbps``."""
    fields = []
    for key, value in p.model_dump(exclude_defaults=True).items():
        if isinstance(value, tuple):
            value = "x".join(str(v) for v in value)
        elif "bandwidth" in key:
            value = format_bandwidth(value)
        elif "latency" in key or key == "overhead":
            value = format_time(value)
        fields.append(f"{key}={value}")
    return f"{kind}:{','.join(fields)}"


def _hosts(b: ClusterBuilder, p: _HostParams, names: list[str]) -> None:
    for name in names:
        b.add_host(
            name,
            gpus=p.gpus_per_host,
            intra_bandwidth=p.intra_bandwidth,
            intra_latency=p.intra_latency,
        )


@register_builder("star", StarParams)
def star(
    hosts: int,
    bandwidth: float | str,
    latency: float | str = 0.0,
    *,
    gpus_per_host: int = 1,
    intra_bandwidth: float | str | None = None,
    intra_latency: float | str = 0.0,
    overhead: float | str = 0.0,
) -> nx.DiGraph:
    """``hosts`` hosts, each with one link of ``bandwidth`` to the single switch ``sw0``.

    >>> g = star(4, "100Gbps", "1us")
    >>> g.graph["ranks"], g.edges["h0", "sw0"]["bandwidth"]
    (['h0', 'h1', 'h2', 'h3'], 12500000000.0)
    """
    p = _params(StarParams, "star", dict(locals()))
    _check_size("star", p.hosts * p.gpus_per_host, p.hosts + _intra_links(p.hosts, p.gpus_per_host))
    b = ClusterBuilder(f"star-{p.hosts}", overhead=p.overhead, spec=_spec("star", p))
    b.add_switch("sw0")
    names = [f"h{i}" for i in range(p.hosts)]
    _hosts(b, p, names)
    for name in names:
        b.add_link(name, "sw0", bandwidth=p.bandwidth, latency=p.latency)
    return b.build(routing="updown")


@register_builder("leaf-spine", LeafSpineParams)
def leaf_spine(
    leaves: int,
    hosts_per_leaf: int,
    spines: int,
    bandwidth: float | str,
    uplink_bandwidth: float | str | None = None,
    latency: float | str = 0.0,
    *,
    gpus_per_host: int = 1,
    intra_bandwidth: float | str | None = None,
    intra_latency: float | str = 0.0,
    overhead: float | str = 0.0,
    ecmp: str = "hash",
) -> nx.DiGraph:
    """A two-level fat-tree: ``leaves`` leaf switches with ``hosts_per_leaf`` hosts each, every leaf
    linked to every one of ``spines`` spine switches at ``uplink_bandwidth`` (default ``bandwidth``).
    Oversubscription = hosts_per_leaf * bandwidth / (spines * uplink_bandwidth). ``ecmp`` says how a
    flow between leaves picks its spine: ``hash`` (Ethernet ECMP: a hash of source and destination) or
    ``destination`` (InfiniBand: by the destination host, a leaf's hosts spread over the spines).

    >>> g = leaf_spine(2, 3, 1, "200Mbps", "300Mbps")
    >>> len(g.graph["ranks"]), g.edges["leaf0", "spine0"]["bandwidth"] * 8
    (6, 300000000.0)
    """
    p = _params(LeafSpineParams, "leaf-spine", dict(locals()))
    hosts = p.leaves * p.hosts_per_leaf
    _check_size(
        "leaf-spine", hosts * p.gpus_per_host, p.leaves * p.spines + hosts + _intra_links(hosts, p.gpus_per_host)
    )
    up = p.uplink_bandwidth or p.bandwidth
    b = ClusterBuilder(f"leaf-spine-{p.leaves}x{p.hosts_per_leaf}", overhead=p.overhead, spec=_spec("leaf-spine", p))
    b.graph.graph["ecmp"] = p.ecmp
    for s in range(p.spines):
        b.add_switch(f"spine{s}")
    host = 0
    for leaf in range(p.leaves):
        b.add_switch(f"leaf{leaf}")
        for s in range(p.spines):
            b.add_link(f"leaf{leaf}", f"spine{s}", bandwidth=up, latency=p.latency)
        names = [f"h{host + i}" for i in range(p.hosts_per_leaf)]
        host += p.hosts_per_leaf
        _hosts(b, p, names)
        for name in names:
            b.add_link(name, f"leaf{leaf}", bandwidth=p.bandwidth, latency=p.latency)
    return b.build(routing="updown")


@register_builder("dgx", DgxParams)
def dgx(
    hosts: int,
    gpus_per_host: int = 8,
    *,
    nvlink_bandwidth: float | str | None = None,
    nvlink_latency: float | str | None = None,
    nic_bandwidth: float | str | None = None,
    pcie_bandwidth: float | str | None = None,
    latency: float | str | None = None,
    hosts_per_leaf: int | None = None,
    spines: int | None = None,
    uplink_bandwidth: float | str | None = None,
    overhead: float | str | None = None,
    ecmp: str | None = None,
) -> nx.DiGraph:
    """DGX-style hosts on a rail-optimized leaf-spine network.

    Each host has ``gpus_per_host`` GPUs on an NVSwitch (``nvlink_bandwidth`` is NVIDIA's per-GPU figure
    for both directions together, 900 GB/s on H100, so each direction of a GPU's NVLink carries half of
    it) and one NIC per GPU (``HOST:nicI``, ``pcie_bandwidth`` from its GPU). NIC ``i`` of every host
    connects to a leaf of rail ``i`` (``leaf{i}.{group}``, ``hosts_per_leaf`` hosts per leaf); every leaf
    connects to every spine at ``uplink_bandwidth`` (default ``nic_bandwidth``; ``spines`` defaults to
    ``min(hosts, hosts_per_leaf)``, which makes the fabric non-blocking). Defaults are a DGX H100: 8 GPUs,
    900 GB/s NVLink, 400 Gb/s ConnectX-7 NICs. A flow between leaves picks its spine by ``ecmp``:
    ``destination`` (the default, as a DGX SuperPOD's InfiniBand subnet manager routes a fat-tree,
    D-mod-K: every flow to one host through the same spine, a leaf's hosts spread over the spines one
    each) or ``hash`` (a hash of source and destination per flow, as Ethernet ECMP does; two flows may
    meet on one spine while another idles).

    >>> g = dgx(2)
    >>> len(g.graph["ranks"]), g.edges["h0:gpu0", "h0"]["bandwidth"], g.edges["h0:nic0", "leaf0.0"]["bandwidth"]
    (16, 450000000000.0, 50000000000.0)
    >>> g.graph["ecmp"], dgx(2, ecmp="hash").graph["spec"]
    ('destination', 'dgx:hosts=2,ecmp=hash')
    """
    p = _params(DgxParams, "dgx", dict(locals()))
    spines = p.spines or min(p.hosts, p.hosts_per_leaf)
    up = p.uplink_bandwidth or p.nic_bandwidth
    groups = math.ceil(p.hosts / p.hosts_per_leaf)
    gpus = p.hosts * p.gpus_per_host
    _check_size("dgx", gpus, 3 * gpus + p.gpus_per_host * groups * spines)
    b = ClusterBuilder(f"dgx-{p.hosts}x{p.gpus_per_host}", overhead=p.overhead, spec=_spec("dgx", p))
    b.graph.graph["ecmp"] = p.ecmp
    for s in range(spines):
        b.add_switch(f"spine{s}")
    for rail in range(p.gpus_per_host):
        for group in range(groups):
            leaf = f"leaf{rail}.{group}"
            b.add_switch(leaf)
            for s in range(spines):
                b.add_link(leaf, f"spine{s}", bandwidth=up, latency=p.latency)
    for h in range(p.hosts):
        host = f"h{h}"
        gpus = b.add_host(
            host,
            gpus=p.gpus_per_host,
            intra_bandwidth=p.nvlink_bandwidth / 2,
            intra_latency=p.nvlink_latency,
        )
        for rail, gpu in enumerate(gpus):
            nic = f"{host}:nic{rail}"
            b.add_node(nic, "nic", host=host)
            b.add_link(gpu, nic, bandwidth=p.pcie_bandwidth, latency=0.0)
            b.add_link(nic, f"leaf{rail}.{h // p.hosts_per_leaf}", bandwidth=p.nic_bandwidth, latency=p.latency)
    return b.build(routing="updown")


@register_builder("torus", TorusParams)
def torus(
    dims: str | tuple[int, ...],
    bandwidth: float | str,
    latency: float | str = 0.0,
    *,
    gpus_per_host: int = 1,
    intra_bandwidth: float | str | None = None,
    intra_latency: float | str = 0.0,
    overhead: float | str = 0.0,
) -> nx.DiGraph:
    """Hosts on a wrap-around grid (``dims="4x4"`` or ``(4, 4, 4)``), each linked to its neighbour
    in every dimension; hosts are ``h{i}`` in row-major order (the last dimension fastest).

    >>> g = torus("2x3", "100Gbps")
    >>> len(g.graph["ranks"]), g.number_of_edges() // 2
    (6, 9)
    """
    p = _params(TorusParams, "torus", dict(locals()))
    total = math.prod(p.dims)
    _check_size("torus", total * p.gpus_per_host, total * len(p.dims) + _intra_links(total, p.gpus_per_host))
    b = ClusterBuilder(f"torus-{'x'.join(map(str, p.dims))}", overhead=p.overhead, spec=_spec("torus", p))
    names = [f"h{i}" for i in range(total)]
    _hosts(b, p, names)
    strides = [math.prod(p.dims[d + 1 :]) for d in range(len(p.dims))]
    for i in range(total):
        coords = [(i // strides[d]) % p.dims[d] for d in range(len(p.dims))]
        for d, size in enumerate(p.dims):
            if size == 1 or (size == 2 and coords[d] == 1):
                continue  # no self-links; a dimension of two needs one link, not two
            j = i + (((coords[d] + 1) % size) - coords[d]) * strides[d]
            b.add_link(names[i], names[j], bandwidth=p.bandwidth, latency=p.latency)
    return b.build()


@register_builder("ring", RingParams)
def ring(
    hosts: int,
    bandwidth: float | str,
    latency: float | str = 0.0,
    *,
    gpus_per_host: int = 1,
    intra_bandwidth: float | str | None = None,
    intra_latency: float | str = 0.0,
    overhead: float | str = 0.0,
) -> nx.DiGraph:
    """``hosts`` hosts in a cycle, each linked to the next (a one-dimensional torus).

    >>> ring(4, "10Gbps").number_of_edges() // 2
    4
    """
    p = _params(RingParams, "ring", dict(locals()))
    g = torus(
        dims=(p.hosts,),
        bandwidth=p.bandwidth,
        latency=p.latency,
        gpus_per_host=p.gpus_per_host,
        intra_bandwidth=p.intra_bandwidth,
        intra_latency=p.intra_latency,
        overhead=p.overhead,
    )
    g.graph["name"] = f"ring-{p.hosts}"
    g.graph["spec"] = _spec("ring", p)
    return g
