"""Reading a topology from wherever a user names one: an inline builder spec
(``star:hosts=4,bandwidth=100Gbps``), a YAML file, a bundled file's name (``dgx-h100-4``) or a graph.

The YAML format is documented in docs/topologies.md; :class:`TopologyFile` is its schema.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import networkx as nx
import yaml
from pydantic import Field, PositiveInt, model_validator

from .. import files
from ..errors import ConfigError, TopologyError
from ..schema import Bandwidth, Spec, Time, check_bandwidth, check_kind, check_time, shown_key, validate_spec
from .builders import BUILDERS
from .graph import NODE_KINDS, ClusterBuilder, check_connected

__all__ = ["TopologyFile", "bundled_topologies", "load_graph", "parse_inline"]

#: Where bundled topology files live (the repository's topologies/ folder); COLLSIM_TOPOLOGIES overrides.
BUNDLED_DIR = Path(os.environ.get("COLLSIM_TOPOLOGIES", Path(__file__).resolve().parents[2] / "topologies"))


class LinkDefaults(Spec):
    bandwidth: Bandwidth | None = None
    latency: Time = 0.0


class HostEntry(Spec):
    name: str = Field(min_length=1)
    gpus: PositiveInt = 1
    intra_bandwidth: Bandwidth | None = None
    intra_latency: Time = 0.0
    overhead: Time | None = None
    compute_scale: float | None = Field(default=None, gt=0, le=1e6, allow_inf_nan=False)


class NodeEntry(Spec):
    name: str = Field(min_length=1)
    kind: str
    host: str | None = None

    @model_validator(mode="after")
    def _kind(self) -> NodeEntry:
        if self.kind not in NODE_KINDS:
            raise ValueError(f"kind: must be one of {', '.join(NODE_KINDS)}, got {self.kind!r}")
        return self


class Direction(Spec):
    bandwidth: Bandwidth | None = None
    latency: Time | None = None


class LinkEntry(Spec):
    between: tuple[str, str]
    bandwidth: Bandwidth | None = None
    latency: Time | None = None
    weight: float = Field(default=1.0, gt=0, le=1e9, allow_inf_nan=False)
    reverse: Direction | None = None


class TopologyFile(Spec):
    """Schema of a topology YAML file: either ``builder`` + ``params``, or explicit ``hosts``,
    ``switches``, ``nodes`` and ``links``."""

    name: str = Field(min_length=1)
    description: str = ""
    source: str = ""
    builder: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    overhead: Time = 0.0
    defaults: LinkDefaults = LinkDefaults()
    hosts: list[HostEntry] = Field(default_factory=list)
    switches: list[str] = Field(default_factory=list)
    nodes: list[NodeEntry] = Field(default_factory=list)
    links: list[LinkEntry] = Field(default_factory=list)
    placement: list[str] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> TopologyFile:
        explicit = self.hosts or self.switches or self.nodes or self.links
        if self.builder and explicit:
            raise ValueError("give either builder + params or hosts/switches/nodes/links, not both")
        if not self.builder and not explicit:
            raise ValueError("a topology needs either builder + params or hosts and links")
        if self.params and not self.builder:
            raise ValueError("params: only meaningful with builder")
        return self


def _build_file(spec: TopologyFile, where: str) -> nx.DiGraph:
    if spec.builder:
        graph = parse_inline(spec.builder, spec.params, where=f"{where}: params")
        graph.graph["name"] = spec.name
        return graph
    b = ClusterBuilder(spec.name, overhead=spec.overhead, spec=where)
    try:
        for i, host in enumerate(spec.hosts):
            _entry(
                f"hosts[{i}]",
                lambda h=host: b.add_host(
                    h.name,
                    gpus=h.gpus,
                    intra_bandwidth=h.intra_bandwidth,
                    intra_latency=h.intra_latency,
                    overhead=h.overhead,
                    compute_scale=h.compute_scale,
                ),
            )
        for i, name in enumerate(spec.switches):
            _entry(f"switches[{i}]", lambda n=name: b.add_switch(n))
        for i, node in enumerate(spec.nodes):
            _entry(f"nodes[{i}]", lambda n=node: b.add_node(n.name, n.kind, host=n.host))
        known = set(b.graph.nodes)
        for i, link in enumerate(spec.links):
            for j, end in enumerate(link.between):
                if end not in known:
                    raise TopologyError(f"links[{i}].between[{j}]: unknown node {end!r}{_known(known)}")
            bandwidth = link.bandwidth or spec.defaults.bandwidth
            if bandwidth is None:
                raise TopologyError(f"links[{i}].bandwidth: required (no defaults.bandwidth given)")
            latency = spec.defaults.latency if link.latency is None else link.latency
            rev = link.reverse or Direction()
            _entry(
                f"links[{i}]",
                lambda a=link.between[0], c=link.between[1], bw=bandwidth, lat=latency, r=rev, w=link.weight: (
                    b.add_link(
                        a,
                        c,
                        bandwidth=bw,
                        latency=lat,
                        weight=w,
                        reverse_bandwidth=r.bandwidth,
                        reverse_latency=r.latency,
                    )
                ),
            )
        if spec.placement is not None:
            for i, node in enumerate(spec.placement):
                if node not in known:
                    raise TopologyError(f"placement[{i}]: unknown node {node!r}{_known(known)}")
        return b.build(spec.placement)
    except TopologyError as exc:
        raise TopologyError(f"{where}: {exc}") from None


def _entry(where: str, action: Any) -> None:
    try:
        action()
    except TopologyError as exc:
        raise TopologyError(f"{where}: {exc}") from None


def _known(names: set[str]) -> str:
    shown = sorted(names)[:12]
    more = "" if len(names) <= 12 else f", ... ({len(names)} in all)"
    return f" (known: {', '.join(shown)}{more})"


def parse_inline(kind: str, params: dict[str, Any], where: str | None = None) -> nx.DiGraph:
    """Build ``kind`` (a registered builder) from a mapping of its parameters."""
    if kind not in BUILDERS:
        raise TopologyError(f"unknown topology builder {kind!r} (valid: {', '.join(sorted(BUILDERS))})")
    func, model = BUILDERS[kind]
    checked = validate_spec(model, params, where or kind)
    return func(**checked.model_dump())


def _parse_inline_text(text: str) -> nx.DiGraph:
    return parse_inline(*inline_params(text))


def inline_params(text: str) -> tuple[str, dict[str, str]]:
    """An inline spec ``kind:key=value,...`` as (kind, its parameters as written)."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise TopologyError(f"{kind}: expected key=value, got {item!r} in {text!r}")
        if key.strip() in params:
            raise TopologyError(f"{kind}: {key.strip()!r} is given twice in {text!r}")
        params[key.strip()] = value.strip()
    return kind, params


def bundled_topologies() -> dict[str, Path]:
    """Name -> path of the topology files bundled in topologies/."""
    if not BUNDLED_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(BUNDLED_DIR.glob("*.yaml"))}


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses duplicate keys instead of keeping the last one silently."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: a mapping key must be a plain value") from None
        if key in mapping:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: duplicate key {shown_key(key, quote=True)}")
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


#: The largest config file collsim reads (16 MiB): far above any real topology or report spec, and a
#: bound on what ``--topology /dev/zero`` or a runaway generated file can cost.
MAX_FILE_BYTES = files.MAX_FILE_BYTES


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """YAML integers, bounded before Python converts them (see :func:`sim.files.bounded_int`)."""
    text = str(node.value)
    if len(text) > files.MAX_INT_DIGITS:
        try:
            files.bounded_int(text.replace("_", ""))
        except files.NumberTooLong as exc:
            raise ConfigError(f"line {node.start_mark.line + 1}: {exc}") from None
    return loader.construct_yaml_int(node)


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def read_yaml(path: Path, noun: str = "file") -> Any:
    """Parse a YAML file (read by :func:`sim.files.read_text`: a regular file of at most 16 MiB, within the
    ``--timeout`` in force); errors become one-line :class:`ConfigError` naming the file and line."""
    text = files.read_text(path, limit=MAX_FILE_BYTES, noun=noun)
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: {line}invalid YAML ({problem})") from None
    except RecursionError:
        raise ConfigError(f"{path}: YAML nested too deeply") from None


def load_file(path: Path) -> nx.DiGraph:
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise TopologyError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        check_kind(TopologyFile, data, "topology")
        spec = validate_spec(TopologyFile, data, "")
    except ConfigError as exc:
        raise TopologyError(f"{path}: {exc}") from None
    graph = _build_file(spec, str(path))
    graph.graph["spec"] = str(path)
    return graph


def load_graph(spec: str | os.PathLike[str] | nx.DiGraph | nx.Graph) -> nx.DiGraph:
    """The cluster graph for a spec: an inline builder spec, a YAML file, a bundled name or a graph.

    >>> load_graph("star:hosts=2,bandwidth=1GB/s").graph["ranks"]
    ['h0', 'h1']
    """
    if isinstance(spec, nx.Graph):
        return _from_graph(spec)
    text = os.fspath(spec)
    if not isinstance(text, str) or not text.strip():
        raise TopologyError(f"no topology given ({text!r}): name a builder spec, a YAML file or a bundled name")
    path = Path(text)
    kind = text.partition(":")[0].strip()
    exists = _exists(path)
    if kind in BUILDERS and ":" in text and not exists:
        return _parse_inline_text(text)
    if path.suffix in (".yaml", ".yml") or exists:
        return load_file(path)
    bundled = bundled_topologies()
    if text in bundled:
        graph = load_file(bundled[text])
        graph.graph["spec"] = text
        return graph
    if kind in BUILDERS:
        return _parse_inline_text(text)
    names = ", ".join(sorted(bundled)) or "none"
    raise TopologyError(
        f"no topology {_shown(text)}: not a file, a bundled name ({names}) or a builder spec "
        f"like star:hosts=4,bandwidth=100Gbps (builders: {', '.join(sorted(BUILDERS))})"
    )


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; False for names no file can have (too long, NUL bytes)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _shown(text: str, limit: int = 80) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def _from_graph(graph: nx.Graph) -> nx.DiGraph:
    """Accept a user's own networkx graph: undirected links become two arcs; ranks default to the
    GPU nodes in insertion order."""
    g = graph.to_directed() if not graph.is_directed() else graph.copy()
    for u, v, data in g.edges(data=True):
        for attr in ("bandwidth", "latency"):
            if attr not in data:
                raise TopologyError(f"link {u}--{v}: missing {attr!r}")
        if not data["bandwidth"] > 0 or not data["latency"] >= 0:
            raise TopologyError(f"link {u}->{v}: need bandwidth > 0 and latency >= 0")
        try:
            check_bandwidth(float(data["bandwidth"]))
            check_time(float(data["latency"]))
        except ValueError as exc:
            raise TopologyError(f"link {u}->{v}: {exc}") from None
        data.setdefault("weight", 1.0)
        data.setdefault("link", f"{min(str(u), str(v))}--{max(str(u), str(v))}")
    for node, data in g.nodes(data=True):
        if data.get("kind") not in NODE_KINDS:
            raise TopologyError(f"node {node!r}: kind must be one of {', '.join(NODE_KINDS)}")
        data.setdefault("host", node if data["kind"] == "gpu" else None)
    g.graph.setdefault("name", "graph")
    g.graph.setdefault("overhead", 0.0)
    g.graph.setdefault("spec", g.graph["name"])
    if "ranks" not in g.graph:
        g.graph["ranks"] = [n for n, d in g.nodes(data=True) if d["kind"] == "gpu"]
    if not g.graph["ranks"]:
        raise TopologyError("the graph has no GPU nodes")
    check_connected(g, g.graph["ranks"])
    return g
