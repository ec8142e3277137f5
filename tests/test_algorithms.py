"""Every registered algorithm through the one oracle (tests/oracle.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.algorithms import algorithm_names, get_algorithm
from sim.errors import AlgorithmError

from .oracle import check_algorithm, registered_specs

SPECS = registered_specs()


@pytest.mark.parametrize("collective, spec", SPECS, ids=[f"{c}-{s}" for c, s in SPECS])
@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 13])
def test_oracle_on_a_star(collective, spec, p):
    check_algorithm(collective, spec, p, 3 * 2**20 + 7)


@pytest.mark.parametrize("collective, spec", SPECS, ids=[f"{c}-{s}" for c, s in SPECS])
def test_oracle_with_overhead_and_reduction_cost(collective, spec):
    check_algorithm(collective, spec, 6, 2**22, latency=5e-6, overhead=3e-6, gamma=2e-11)


@given(
    p=st.integers(2, 64),
    nbytes=st.floats(1, 2**30),
    bandwidth=st.floats(1e6, 1e12),
    latency=st.floats(0, 1e-3),
    overhead=st.floats(0, 1e-4),
    gamma=st.sampled_from([0.0, 1e-12, 1e-10]),
)
def test_ring_matches_closed_form_everywhere(p, nbytes, bandwidth, latency, overhead, gamma):
    """Random ranks (sizes need not divide by p), bandwidths, latencies, overheads and γ."""
    check_algorithm(
        "allreduce", "ring", p, nbytes, bandwidth=bandwidth, latency=latency, overhead=overhead, gamma=gamma
    )


def test_registry_refuses_duplicates_and_lists_valid_names():
    from sim.algorithms import register
    from sim.algorithms.ring import RingAllReduce

    with pytest.raises(ValueError, match="already registered"):
        register(RingAllReduce)
    with pytest.raises(AlgorithmError) as info:
        get_algorithm("allreduce", "rnig")
    assert "valid: " in str(info.value) and "ring" in str(info.value)
    assert "ring" in algorithm_names("all-reduce")


def test_unknown_option_is_a_clear_error():
    with pytest.raises(AlgorithmError) as info:
        get_algorithm("allreduce", "ring:chunks=4")
    assert "chunks" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("collective, spec", SPECS, ids=[f"{c}-{s}" for c, s in SPECS])
@pytest.mark.parametrize("p, root", [(5, 3), (8, 7)])
def test_oracle_with_a_root_other_than_zero(collective, spec, p, root):
    """Rooted collectives renumber from the root; master-worker's master and the tree's root move too."""
    check_algorithm(collective, spec, p, 2**20 + 3, root=root, gamma=1e-11)


@given(
    case=st.sampled_from(SPECS),
    p=st.integers(2, 24),
    nbytes=st.floats(1, 2**28),
    bandwidth=st.floats(1e6, 1e12),
    latency=st.floats(0, 1e-3),
    gamma=st.sampled_from([0.0, 1e-11, 1e-9]),
    data=st.data(),
)
def test_every_algorithm_on_random_stars(case, p, nbytes, bandwidth, latency, gamma, data):
    """Every algorithm, random ranks, sizes, links and γ: the data check always, the closed form where
    the algorithm says it is exact."""
    collective, spec = case
    root = data.draw(st.integers(0, p - 1), label="root")
    check_algorithm(collective, spec, p, nbytes, bandwidth=bandwidth, latency=latency, gamma=gamma, root=root)


EXPECTED_NAMES = {
    "allreduce": {
        "ring",
        "tree",
        "double-binary-tree",
        "master-worker",
        "ps",
        "halving-doubling",
        "recursive-doubling",
    },
    "broadcast": {"binomial-tree", "ring", "flat"},
    "reduce": {"binomial-tree", "ring"},
    "gather": {"flat"},
    "scatter": {"flat"},
    "allgather": {"ring", "recursive-doubling"},
    "reducescatter": {"ring"},
    "alltoall": {"pairwise"},
    "sendrecv": {"direct"},
}


@pytest.mark.parametrize("collective", sorted(EXPECTED_NAMES))
def test_every_collective_has_the_shared_algorithm_names(collective):
    """The names validate/ uses too (the preamble's list)."""
    assert EXPECTED_NAMES[collective] <= set(algorithm_names(collective))


#: what listings show (`collsim algorithms`, `collsim compare`, a report's default algorithms), in order:
#: the first all-reduce algorithm is the default
LISTED = {
    "allreduce": [
        "ring",
        "tree",
        "double-binary-tree",
        "recursive-doubling",
        "halving-doubling",
        "hierarchical",
        "master-worker",
        "ps",
        "nccl-tree",
        "nvls",
        "nvls-tree",
        "collnet-direct",
        "collnet-chain",
        "nccl",
    ],
    "broadcast": ["flat", "binomial-tree", "ring", "nccl"],
    "reduce": ["binomial-tree", "ring", "nccl"],
    "allgather": ["recursive-doubling", "ring", "nccl"],
    "reducescatter": ["ring", "nccl"],
    "gather": ["flat", "binomial-tree"],
    "scatter": ["flat", "binomial-tree"],
    "alltoall": ["pairwise", "nccl"],
    "sendrecv": ["direct", "nccl"],
}


def test_listings_keep_their_order():
    """Module order in sim/algorithms/__init__.py (and its list_first pin) gives exactly this order."""
    assert {c: algorithm_names(c) for c in LISTED} == LISTED


#: algorithm names whose module is not the name with '-' as '_'
MODULE_OF = {"binomial-tree": "binomial"}


def algorithm_module(name: str) -> str:
    """The module (in sim/algorithms/ and in validate/algorithms/) that holds algorithm ``name``."""
    return MODULE_OF.get(name, name.replace("-", "_"))


def test_one_module_per_algorithm_name():
    """An algorithm name's every collective lives in one module named after it (docs/algorithms.md,
    "Adding an algorithm")."""
    from sim.algorithms.registry import _REGISTRY

    ours = {key: cls.__module__ for key, cls in _REGISTRY.items() if cls.__module__.startswith("sim.")}
    assert ours == {key: f"sim.algorithms.{algorithm_module(key[1])}" for key in ours}


@pytest.mark.parametrize(
    "spec, message",
    [
        ("tree:chunks=0", "algorithm tree.chunks: must be > 0"),
        ("ps:placement=remote", "algorithm ps.placement"),
        ("ps:shards=x", "algorithm ps.shards: expected a whole number"),
        ("double-binary-tree:fanout=3", "double-binary-tree.fanout: unknown field"),
    ],
)
def test_bad_options_are_one_line_errors(spec, message):
    with pytest.raises(AlgorithmError) as info:
        get_algorithm("allreduce", spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_ps_refuses_placements_that_do_not_fit():
    from sim.simulate import simulate

    topo = "star:hosts=6,bandwidth=10Gbps"
    with pytest.raises(
        AlgorithmError, match=r"4 dedicated server\(s\) need 4 host\(s\) that hold no rank; .* leaves 2"
    ):
        simulate(topo, "allreduce", "ps:placement=dedicated", 2**20, ranks=4)
    with pytest.raises(AlgorithmError, match="6 ranks on star-6 .* leave none"):
        simulate(topo, "allreduce", "ps:placement=dedicated", 2**20)
    with pytest.raises(AlgorithmError, match="7 co-located servers need 7 ranks, there are 6"):
        simulate(topo, "allreduce", "ps:shards=7", 2**20)
    # two spare hosts fit two servers
    r = simulate(topo, "allreduce", "ps:placement=dedicated,shards=2", 2**20, ranks=4, check=True)
    assert r.wrong == 0 and r.algorithm == "ps:shards=2,placement=dedicated"


def test_dedicated_servers_sit_on_hosts_without_ranks():
    """On DGX-style hosts of 8 GPUs, --ranks 4 leaves GPUs free on host h0, but a server needs a host
    that holds no rank: the servers land on the first GPU of h1 and h2."""
    from sim.algorithms.ps import server_hosts
    from sim.cluster import Cluster

    cluster = Cluster("dgx:hosts=3")
    assert [cluster.ranks[q] for q in server_hosts(cluster, 4)] == ["h1:gpu0", "h2:gpu0"]
    assert server_hosts(cluster, 9) == [16]


# where a form is not exact it still bounds the simulated time on a star, from one side
UPPER = [
    ("allreduce", "tree"),
    ("allreduce", "tree:chunks=4"),
    ("allreduce", "double-binary-tree"),
    ("allreduce", "double-binary-tree:chunks=4"),
    ("reduce", "binomial-tree"),
    ("gather", "binomial-tree"),
]
LOWER = [("allreduce", "recursive-doubling"), ("allreduce", "halving-doubling"), ("allgather", "recursive-doubling")]


@pytest.mark.parametrize("collective, spec", UPPER + LOWER, ids=[f"{c}-{s}" for c, s in UPPER + LOWER])
def test_inexact_forms_bound_the_simulated_time(collective, spec):
    """Trees' forms assume every sibling pair in lockstep (the slowest case); the fold of recursive
    doubling and halving-doubling assumes no contention with the fold (the fastest case)."""
    from sim.cluster import Cluster
    from sim.simulate import simulate
    from sim.topology import star

    for p in range(2, 25):
        cluster = Cluster(star(p, 1e9, 1e-6))
        for gamma in (0.0, 2e-9):
            r = simulate(cluster, collective, spec, 1e6, gamma=gamma, check=True)
            assert r.wrong == 0
            if (collective, spec) in UPPER:
                assert r.time_s <= r.closed_form_s * (1 + 1e-9), (p, gamma)
            else:
                assert r.time_s >= r.closed_form_s * (1 - 1e-9), (p, gamma)
