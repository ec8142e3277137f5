"""From a collsim topology to the namespaces, bridges, veths, addresses and tbf settings that emulate it.

Planning is pure (no root, no system calls): :func:`make_plan` reads a topology and returns a frozen
:class:`Plan`, which :mod:`netlab.lab` applies and the state file stores.

Mapping: each host becomes a network namespace (all its GPUs' ranks run there; traffic between them is
loopback); each switch becomes a Linux bridge in a namespace of its own; each link between a host and a
switch, or between two switches, becomes a veth pair whose two ends are shaped separately with tbf at the
rate of the direction that leaves through them. Links inside a host (GPU--NVSwitch, GPU--NIC) have no
veth. netlab refuses what it cannot emulate: hosts linked directly to hosts (torus, ring), hosts with
several network links (multi-NIC, rail-optimized), switches that form a loop (it bridges at layer 2
without spanning tree), and more than :data:`MAX_HOSTS` hosts or :data:`MAX_SWITCHES` switches.

>>> plan = make_plan("netlab-2rack", prefix="t")
>>> [(h.name, h.ns, h.ifname, h.address) for h in plan.hosts][:2]
[('a0', 't-h0', 't-l0a', '10.213.0.1'), ('a1', 't-h1', 't-l1a', '10.213.0.2')]
>>> [(s.name, s.ns, s.bridge) for s in plan.switches]
[('tora', 't-s0', 't-br0'), ('torb', 't-s1', 't-br1'), ('core', 't-s2', 't-br2')]
>>> plan.path_rate("a0", "b0") * 8 / 1e6, len(plan.path("a0", "b0"))
(200.0, 4)
>>> plan.links[0].a.egress.tc_args()
['tbf', 'rate', '200000000bit', 'burst', '81920', 'limit', '2581920']
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx

from sim.errors import ConfigError, TopologyError
from sim.topology import SWITCH, hosts_of, load_graph

from . import names

__all__ = [
    "BURST_TIME",
    "DEFAULT_MTU",
    "DEFAULT_QUEUE",
    "MAX_HOSTS",
    "MAX_SWITCHES",
    "MIN_BURST",
    "SUBNET",
    "Endpoint",
    "HostPlan",
    "LinkPlan",
    "Plan",
    "Shaping",
    "SwitchPlan",
    "make_plan",
]

#: The most hosts one lab emulates: the kernel takes more, but their ranks share one machine's CPUs.
MAX_HOSTS = 64
MAX_SWITCHES = 64
#: Host addresses: host ``i`` gets the ``i+1``-th address. They live only inside the lab's namespaces.
SUBNET = ipaddress.IPv4Network("10.213.0.0/24")
DEFAULT_MTU = 1500
#: tbf queue: this much time's worth of bytes at the link's rate (model.md's measurements used 100 ms).
DEFAULT_QUEUE = 0.1
#: tbf bucket: 1 ms worth of bytes at the link's rate, at least 80 KiB. Smaller buckets cannot keep up at
#: high rates (1 Gbit/s with a 16 KiB bucket delivers ~81%), and a bucket smaller than a 64 KiB GSO
#: packet makes tbf cut every packet into frames, which costs so much CPU that 8 flows of 200 Mbit/s
#: reach only a third of their rate on 2 cores (docs/netlab.md). The price: a message smaller than the
#: bucket crosses an idle link at once; ``burst=`` (``--burst``) trades CPU for small-message fidelity.
BURST_TIME = 1e-3
MIN_BURST = 80 * 1024
ETHERNET_HEADER = 14


@dataclass(frozen=True)
class Shaping:
    """tbf settings of one direction of a link: ``rate`` (bytes/s), ``burst`` and ``limit`` (bytes)."""

    rate: float
    burst: int
    limit: int

    @classmethod
    def for_rate(
        cls, rate: float, *, queue: float = DEFAULT_QUEUE, mtu: int = DEFAULT_MTU, burst: int | None = None
    ) -> Shaping:
        """The settings netlab uses for ``rate`` bytes/s: burst = max(1 ms of rate, 80 KiB) unless
        ``burst`` is given (at least two frames either way), limit = ``queue`` seconds of rate plus the
        burst."""
        if not rate > 0:
            raise ConfigError(f"link rate must be > 0, got {rate}")
        auto = max(int(rate * BURST_TIME), MIN_BURST) if burst is None else int(burst)
        burst = max(auto, 2 * (mtu + ETHERNET_HEADER))
        return cls(rate=float(rate), burst=burst, limit=int(rate * queue) + burst)

    def tc_args(self) -> list[str]:
        """The qdisc part of ``tc qdisc add dev DEV root ...``."""
        return ["tbf", "rate", f"{round(self.rate * 8)}bit", "burst", str(self.burst), "limit", str(self.limit)]


@dataclass(frozen=True)
class Endpoint:
    """One end of a veth pair: the topology node it stands for, where it lives, what leaves through it."""

    node: str
    ns: str
    ifname: str
    egress: Shaping
    bridge: str | None = None


@dataclass(frozen=True)
class LinkPlan:
    """A topology link as a veth pair; ``a`` is the host end of a host link."""

    index: int
    link: str
    a: Endpoint
    b: Endpoint


@dataclass(frozen=True)
class HostPlan:
    """A host: its namespace, its one network interface and address (None on a lone host), its GPUs
    and their ranks."""

    index: int
    name: str
    ns: str
    ifname: str | None
    address: str | None
    gpus: tuple[str, ...]
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class SwitchPlan:
    index: int
    name: str
    ns: str
    bridge: str


@dataclass(frozen=True)
class Plan:
    """Everything a lab is made of, by netlab name and by topology name."""

    prefix: str
    name: str
    spec: str
    hosts: tuple[HostPlan, ...]
    switches: tuple[SwitchPlan, ...]
    links: tuple[LinkPlan, ...]
    mtu: int = DEFAULT_MTU
    queue: float = DEFAULT_QUEUE

    @property
    def namespaces(self) -> list[str]:
        return [h.ns for h in self.hosts] + [s.ns for s in self.switches]

    @property
    def world_size(self) -> int:
        return sum(len(h.ranks) for h in self.hosts)

    def host(self, name: str) -> HostPlan:
        """The host named ``name`` in the topology."""
        for host in self.hosts:
            if host.name == name:
                return host
        shown = ", ".join(h.name for h in self.hosts[:12]) + (", ..." if len(self.hosts) > 12 else "")
        raise ConfigError(f"unknown host {name!r} in {self.name} (hosts: {shown})")

    def rank_hosts(self) -> list[HostPlan]:
        """The host of every rank, in rank order."""
        by_rank = {rank: host for host in self.hosts for rank in host.ranks}
        return [by_rank[r] for r in range(len(by_rank))]

    def path(self, src: str, dst: str) -> list[Endpoint]:
        """The veth ends a packet from host ``src`` to host ``dst`` leaves through, in order."""
        a, b = self.host(src), self.host(dst)
        tree = nx.Graph()
        ends: dict[tuple[Any, Any], Endpoint] = {}
        for link in self.links:
            u, v = self._vertex(link.a), self._vertex(link.b)
            tree.add_edge(u, v)
            ends[(u, v)], ends[(v, u)] = link.a, link.b
        if a.index == b.index:
            return []
        hops = nx.shortest_path(tree, ("h", a.ns), ("h", b.ns))
        return [ends[(u, v)] for u, v in zip(hops, hops[1:], strict=False)]

    def path_rate(self, src: str, dst: str) -> float:
        """The bottleneck shaped rate (bytes/s) of one flow from ``src`` to ``dst``."""
        return min((end.egress.rate for end in self.path(src, dst)), default=float("inf"))

    def farthest_pair(self) -> tuple[str, str] | None:
        """The first host and the host most hops away from it (the last such), or None on a lone host."""
        if len(self.hosts) < 2:
            return None
        first = self.hosts[0].name
        far = max(self.hosts[1:], key=lambda h: (len(self.path(first, h.name)), h.index))
        return first, far.name

    def _vertex(self, end: Endpoint) -> tuple[str, str]:
        return ("s" if end.bridge else "h", end.ns)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        def endpoint(d: dict[str, Any]) -> Endpoint:
            return Endpoint(**{**d, "egress": Shaping(**d["egress"])})

        return cls(
            prefix=data["prefix"],
            name=data["name"],
            spec=data["spec"],
            hosts=tuple(HostPlan(**{**h, "gpus": tuple(h["gpus"]), "ranks": tuple(h["ranks"])}) for h in data["hosts"]),
            switches=tuple(SwitchPlan(**s) for s in data["switches"]),
            links=tuple(
                LinkPlan(index=k["index"], link=k["link"], a=endpoint(k["a"]), b=endpoint(k["b"]))
                for k in data["links"]
            ),
            mtu=int(data["mtu"]),
            queue=float(data["queue"]),
        )


def _host_of(graph: nx.DiGraph, node: str) -> str | None:
    data = graph.nodes[node]
    host = data.get("host")
    if data.get("kind") == SWITCH and host is None:
        return None  # a fabric switch (a switch inside a host, such as hgx's PCIe switches, names its host)
    if host is None:
        raise TopologyError(
            f"netlab: node {node!r} (kind {data.get('kind')}) belongs to no host; "
            "every GPU, NIC and NVSwitch node needs a host"
        )
    return str(host)


def make_plan(
    topology: Any,
    *,
    prefix: str = names.DEFAULT_PREFIX,
    queue: float = DEFAULT_QUEUE,
    mtu: int = DEFAULT_MTU,
    burst: int | None = None,
) -> Plan:
    """Plan the emulation of ``topology`` (anything :func:`sim.topology.load_graph` accepts).

    Raises :class:`TopologyError` for topologies netlab cannot emulate and :class:`ConfigError` for bad
    options.
    """
    names.check_prefix(prefix)
    if not 0 < queue <= 10:
        raise ConfigError(f"--queue: must be > 0 and <= 10 s, got {queue}")
    if not 576 <= mtu <= 9000:
        raise ConfigError(f"--mtu: must be between 576 and 9000, got {mtu}")
    if burst is not None and not 0 < burst <= 64 << 20:
        raise ConfigError(f"--burst: must be > 0 and <= 64 MiB, got {burst}")
    graph = topology if isinstance(topology, nx.DiGraph) else load_graph(topology)
    title = str(graph.graph.get("name", "topology"))
    rank_of = {gpu: r for r, gpu in enumerate(graph.graph["ranks"])}
    members: dict[str, list[str]] = {host: list(gpus) for host, gpus in hosts_of(graph).items()}
    switches = [n for n, d in graph.nodes(data=True) if d.get("kind") == SWITCH and d.get("host") is None]
    for node in graph.nodes:
        host = _host_of(graph, node)
        if host is not None:
            members.setdefault(host, [])
    if len(members) > MAX_HOSTS:
        raise TopologyError(f"netlab: {title} has {len(members)} hosts; netlab emulates at most {MAX_HOSTS}")
    if len(switches) > MAX_SWITCHES:
        raise TopologyError(f"netlab: {title} has {len(switches)} switches; netlab emulates at most {MAX_SWITCHES}")
    host_index = {host: i for i, host in enumerate(members)}
    switch_index = {sw: j for j, sw in enumerate(switches)}

    def end(node: str, rate: float, index: int, side: str) -> Endpoint:
        host = _host_of(graph, node)
        if host is None:
            j = switch_index[node]
            ns, bridge = names.switch_ns(prefix, j), names.bridge_name(prefix, j)
        else:
            ns, bridge = names.host_ns(prefix, host_index[host]), None
        shaping = Shaping.for_rate(rate, queue=queue, mtu=mtu, burst=burst)
        return Endpoint(host or node, ns, names.veth_name(prefix, index, side), shaping, bridge)

    links: list[LinkPlan] = []
    host_links: dict[str, list[str]] = {host: [] for host in members}
    seen: set[frozenset[str]] = set()
    trunk = nx.Graph()
    trunk.add_nodes_from(switches)
    for u, v, data in graph.edges(data=True):
        pair = frozenset((u, v))
        if pair in seen:
            continue
        seen.add(pair)
        hu, hv = _host_of(graph, u), _host_of(graph, v)
        name = str(data.get("link", f"{u}--{v}"))
        if hu is not None and hv is not None:
            if hu == hv:
                continue  # inside one host: loopback in its namespace
            raise TopologyError(
                f"netlab: link {name!r} joins hosts {hu!r} and {hv!r} directly; netlab needs every host link "
                "to end at a switch (torus and ring topologies cannot be emulated)"
            )
        if hv is not None:  # the host end first
            u, v, hu, hv = v, u, hv, hu
        index = len(links)
        a = end(u, graph.edges[u, v]["bandwidth"], index, "a")
        b = end(v, graph.edges[v, u]["bandwidth"], index, "b")
        links.append(LinkPlan(index, name, a, b))
        if hu is not None:
            host_links[hu].append(name)
        else:
            trunk.add_edge(u, v)
    for host, own in host_links.items():
        if len(own) > 1:
            raise TopologyError(
                f"netlab: host {host!r} has {len(own)} network links ({', '.join(map(repr, own[:4]))}"
                f"{', ...' if len(own) > 4 else ''}); netlab gives each host one network interface, so multi-NIC "
                "(rail-optimized) hosts cannot be emulated"
            )
    if trunk.number_of_nodes() and not nx.is_forest(trunk):
        loop = " - ".join(repr(u) for u, _ in nx.find_cycle(trunk))
        raise TopologyError(
            f"netlab: switches {loop} form a loop; netlab bridges switches at layer 2 without spanning tree, so "
            "the switches must form a tree (e.g. leaf-spine with spines=1)"
        )
    hosts = []
    for host, i in host_index.items():
        own_link = next((link for link in links if link.a.node == host and link.a.bridge is None), None)
        hosts.append(
            HostPlan(
                index=i,
                name=host,
                ns=names.host_ns(prefix, i),
                ifname=own_link.a.ifname if own_link else None,
                address=str(SUBNET[i + 1]) if own_link else None,
                gpus=tuple(members[host]),
                ranks=tuple(rank_of[g] for g in members[host]),
            )
        )
    return Plan(
        prefix=prefix,
        name=title,
        spec=str(graph.graph.get("spec", title)),
        hosts=tuple(hosts),
        switches=tuple(
            SwitchPlan(j, sw, names.switch_ns(prefix, j), names.bridge_name(prefix, j))
            for sw, j in switch_index.items()
        ),
        links=tuple(links),
        mtu=mtu,
        queue=queue,
    )
