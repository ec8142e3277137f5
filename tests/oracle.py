"""The one oracle every algorithm passes (networkx's ``validate_flows`` habit).

For each registered algorithm, on a star of ``p`` hosts (plus the spare hosts it asks for):

* the data check -- every rank (or the root) ends with every contribution exactly once;
* the closed form -- the simulated time equals :meth:`Algorithm.cost` to 1e-6 relative, with α and β
  read off the star (α = 2 x link latency + sender overhead, β = 1/bandwidth), wherever the algorithm
  says its closed form is exact;
* the invariants -- no message left unreceived, no link over its capacity.
"""

from __future__ import annotations

from sim.algorithms import get_algorithm
from sim.algorithms.registry import _REGISTRY
from sim.cluster import Cluster
from sim.simulate import simulate
from sim.topology import star


def registered_specs() -> list[tuple[str, str]]:
    """Every (collective, spec) the harness runs: each algorithm's defaults plus its examples."""
    out = []
    for (coll, name), cls in sorted(_REGISTRY.items()):
        if not getattr(cls, "star_oracle", True):  # needs hardware a star lacks (NVLS): see its own tests
            continue
        out.append((coll, name))
        out.extend((coll, ex) for ex in cls.examples)
    return out


def check_algorithm(
    collective: str,
    spec: str,
    p: int,
    nbytes: float,
    *,
    bandwidth: float = 12.5e9,
    latency: float = 1e-6,
    overhead: float = 0.0,
    gamma: float = 0.0,
    rtol: float = 1e-6,
    root: int = 0,
) -> float:
    """Run the oracle for one case; returns the simulated time.

    ``nbytes`` follows the collective's size convention (the total for the gathering ones); ``root`` is
    the root of rooted collectives (and the master / tree root of the all-reduces that have one).
    """
    algo = get_algorithm(collective, spec)
    hosts = p + algo.spare_hosts(p)
    cluster = Cluster(star(hosts, bandwidth, latency, overhead=overhead))  # ranks: the first p GPUs
    r = simulate(cluster, collective, algo, nbytes, ranks=p, gamma=gamma, root=root, check=True, check_links=True)
    assert r.wrong == 0, f"{collective} {spec} p={p} root={root}: {r.wrong} rank(s) hold wrong data"
    if algo.closed_form_exact(p):
        alpha, beta = 2 * latency + overhead, 1.0 / bandwidth
        expected = algo.cost(p, nbytes, alpha, beta, gamma)
        assert abs(r.time_s - expected) <= rtol * expected, (
            f"{collective} {spec} p={p} n={nbytes}: simulated {r.time_s!r} s, closed form {expected!r} s "
            f"(relative error {abs(r.time_s - expected) / expected:.3g})"
        )
    return r.time_s
