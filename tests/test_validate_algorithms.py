"""The real algorithms, run in one process on threads (:class:`validate.comm.ThreadWorld`): exact
results for every algorithm and collective on awkward sizes, and the same messages as the simulator."""

from __future__ import annotations

import importlib.util
from collections import Counter, defaultdict

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from sim.algorithms import algorithm_names as sim_algorithm_names
from sim.collectives import COLLECTIVES
from sim.errors import AlgorithmError, RunError
from sim.runtime import Job
from sim.simulate import simulate
from validate.algorithms import Task, algorithm_names, get_algorithm
from validate.algorithms.double_binary_tree import nccl_dtree
from validate.algorithms.tree import heap_tree
from validate.comm import PeerError, ThreadWorld
from validate.conformance import VARIANTS
from validate.data import make_buffers
from validate.layout import layout
from validate.schedule import Op

P2P_SPECS = [
    (coll, spec)
    for coll in COLLECTIVES
    for name in algorithm_names(coll)
    if name != "builtin"
    for spec in (name, *VARIANTS.get((coll, name), ()))
]


def run_case(coll, spec, p, count, root=0, gpus_per_host=1, dtype="float", iterations=2):
    """Run ``spec`` on ``p`` thread ranks; returns (wrong elements, the world's message trace)."""
    algo = get_algorithm(coll, spec)
    lay = layout(coll, count * 4 * (p if COLLECTIVES[coll].size_is_total else 1), p, "float")
    if dtype != "float":
        from dataclasses import replace

        lay = replace(lay, dtype=dtype)
    world = ThreadWorld(p, timeout=10)

    def body(comm):
        bufs = make_buffers(lay, comm.rank, root)
        run = algo.plan(Task(comm, bufs.inp, bufs.out, root, gpus_per_host))
        wrong = 0
        for _ in range(iterations):
            bufs.reset()
            run()
            wrong += bufs.wrong()
        return wrong

    return sum(world.run(body)), world.trace


def applicable(coll, spec, p, g=1):
    try:
        get_algorithm(coll, spec).check(p, g)
    except AlgorithmError:
        return False
    return True


def _hosts(p):
    return 2 if p % 2 == 0 and p > 2 else 1


AWKWARD = [
    (coll, spec, p) for p in (1, 2, 3, 4, 5, 8) for coll, spec in P2P_SPECS if applicable(coll, spec, p, _hosts(p))
]


@pytest.mark.parametrize(("coll", "spec", "p"), AWKWARD)
def test_every_algorithm_is_exact_on_awkward_sizes(coll, spec, p):
    root = p - 1  # a root other than 0 exercises the relative ranks
    for count in (1, 7, 1009):
        wrong, _ = run_case(coll, spec, p, count, root=root, gpus_per_host=_hosts(p))
        assert wrong == 0, f"{coll} {spec} p={p} count={count}: {wrong} wrong elements"


def test_algorithms_refuse_what_they_cannot_run():
    assert applicable("allgather", "recursive-doubling", 3)  # folded, as MPICH does
    assert not applicable("allreduce", "ps:shards=2", 1)
    assert not applicable("allreduce", "hierarchical", 6, 4)
    with pytest.raises(AlgorithmError, match="placement=colocated"):
        get_algorithm("allreduce", "ps:placement=dedicated").check(4)
    with pytest.raises(AlgorithmError, match="unknown allreduce algorithm 'nope'.*valid: ring"):
        get_algorithm("allreduce", "nope")
    with pytest.raises(AlgorithmError, match="chunks"):
        get_algorithm("allreduce", "tree:chunks=0")


@given(p=st.integers(1, 9), count=st.integers(1, 3000), chunks=st.integers(1, 12), g=st.sampled_from([1, 2, 3]))
def test_allreduce_schedules_are_exact_for_any_size(p, count, chunks, g):
    specs = [
        f"tree:chunks={chunks}",
        f"double-binary-tree:chunks={chunks}",
        "ring",
        "halving-doubling",
        "recursive-doubling",
        "ps",
        "master-worker",
        "hierarchical:outer=halving-doubling",
    ]
    for spec in specs:
        if applicable("allreduce", spec, p, g):
            assert run_case("allreduce", spec, p, count, gpus_per_host=g, iterations=1)[0] == 0, spec


@pytest.mark.parametrize("dtype", ["half", "bfloat16", "int8", "uint8", "double", "int64"])
def test_sums_are_exact_in_small_types(dtype):
    for spec in ("ring", "tree:chunks=3", "halving-doubling"):
        assert run_case("allreduce", spec, 6, 333, dtype=dtype)[0] == 0


def test_the_check_counts_wrong_elements():
    """A ring without its last all-gather step leaves one chunk stale on every rank: the check sees it."""
    from validate.algorithms.ring import ring_allreduce_ops
    from validate.schedule import schedule_plan

    p, count = 4, 1000
    lay = layout("allreduce", count * 4, p, "float")
    world = ThreadWorld(p, timeout=5)

    def body(comm):
        bufs = make_buffers(lay, comm.rank, 0)
        steps = ring_allreduce_ops(range(p), comm.rank, bufs.out)
        schedule_plan(comm, steps[:-1])()
        return bufs.wrong()

    wrong = world.run(body)
    assert all(0 < w <= count // p for w in wrong), wrong  # the chunk each rank would have received last
    world = ThreadWorld(p, timeout=5)

    def body_quiet(comm):
        bufs = make_buffers(lay, comm.rank, 0)
        steps = ring_allreduce_ops(range(p), comm.rank, bufs.out)
        last = steps[-1]
        schedule_plan(comm, [*steps[:-1], Op(sends=last.sends)])()  # sent, but nobody stores it
        return bufs.wrong()

    with pytest.raises(RunError, match="never received"):
        world.run(body_quiet)


def test_an_unanswered_receive_names_the_peer():
    world = ThreadWorld(2, timeout=0.2)

    def body(comm):
        if comm.rank == 0:
            comm.where = "allreduce (test), 4 B, iteration 1 of 1"
            comm.exchange([], [(torch.empty(1), 1, 0)])

    with pytest.raises(PeerError, match=r"rank 0: allreduce \(test\).*waiting for rank 1") as info:
        world.run(body)
    assert info.value.peer == 1


def test_tree_reduces_every_piece_up_then_broadcasts_it_down():
    for chunks in (1, 4):
        _, trace = run_case("allreduce", f"tree:chunks={chunks}", 7, 64, iterations=1)
        assert len(trace) == 2 * 6 * chunks  # every edge carries every piece up and down
        up = [m for m in trace if m.tag < chunks]
        assert len(up) == 6 * chunks and all(m.dst == (m.src - 1) // 2 for m in up)
        assert {m.tag for m in trace} == set(range(2 * chunks))


def test_trees_have_the_documented_shapes():
    t = heap_tree(range(6))
    assert t.children[0] == [1, 2] and t.children[2] == [5] and t.parent[5] == 2
    first, second = nccl_dtree(range(8))
    assert first.root == 0 and first.children[0] == [4] and sorted(first.children[4]) == [2, 6]
    assert second.root == 7  # mirrored for an even count (NCCL's trees.cc)
    leaves = {r for r, kids in first.children.items() if not kids}
    inner_in_second = {r for r, kids in second.children.items() if kids}
    assert leaves <= inner_in_second | {second.root}


def test_halving_doubling_moves_the_lower_bound():
    p, count = 8, 8 * 128
    _, trace = run_case("allreduce", "halving-doubling", p, count, iterations=1)
    sent = Counter()
    for m in trace:
        sent[m.src] += m.nbytes
    assert set(sent.values()) == {2 * (p - 1) * count * 4 // p}


def test_ps_pushes_and_pulls_one_shard_per_pair():
    p, count = 4, 4 * 100
    _, trace = run_case("allreduce", "ps", p, count, iterations=1)
    assert len(trace) == 2 * p * (p - 1)
    assert {m.nbytes for m in trace} == {count * 4 // p}


def _sim_messages(coll, spec, p, nbytes):
    sent = defaultdict(list)
    original = Job.send

    def recording(self, src, dst, size, payload=None, tag=0):
        sent[src].append((dst, size))
        return original(self, src, dst, size, payload, tag)

    Job.send = recording
    try:
        simulate(f"star:hosts={p},bandwidth=10Gbps,latency=1us", coll, spec, nbytes, ranks=p, engine="message")
    finally:
        Job.send = original
    return sent


SHARED = [
    (c, n, p)
    for c in COLLECTIVES
    for n in sim_algorithm_names(c)
    if n in algorithm_names(c)
    for p in (4, 6)
    if applicable(c, n, p)
]


@pytest.mark.parametrize(("coll", "name", "p"), SHARED)
def test_same_messages_as_the_simulator(coll, name, p):
    """Every rank sends the same messages (peer, bytes) as the simulator's algorithm of that name, on a
    size every chunking divides."""
    count = 2**10 * 3 * 5 * 7
    _, trace = run_case(coll, name, p, count, iterations=1)
    real = defaultdict(list)
    for m in trace:
        real[m.src].append((m.dst, m.nbytes))
    nbytes = count * 4 * (p if COLLECTIVES[coll].size_is_total else 1)
    simulated = _sim_messages(coll, name, p, nbytes)
    for r in range(p):
        assert Counter(real[r]) == Counter((d, int(b)) for d, b in simulated[r]), f"rank {r}"
    if name == "ring":  # and in the same order
        assert {r: real[r] for r in range(p)} == {r: [(d, int(b)) for d, b in simulated[r]] for r in range(p)}


#: what `collsim validate algorithms` lists, in order
LISTED = {
    "allreduce": [
        "ring",
        "tree",
        "double-binary-tree",
        "master-worker",
        "ps",
        "halving-doubling",
        "recursive-doubling",
        "hierarchical",
        "builtin",
    ],
    "broadcast": ["binomial-tree", "ring", "flat", "builtin"],
    "reduce": ["binomial-tree", "ring", "builtin"],
    "allgather": ["ring", "recursive-doubling", "builtin"],
    "reducescatter": ["ring", "builtin"],
    "gather": ["flat", "binomial-tree", "builtin"],
    "scatter": ["flat", "binomial-tree", "builtin"],
    "alltoall": ["pairwise", "builtin"],
    "sendrecv": ["direct", "builtin"],
}


def test_listings_keep_their_order():
    """Module order in validate/algorithms/__init__.py (and its list_first pin) gives exactly this order."""
    assert {c: algorithm_names(c) for c in LISTED} == LISTED


def test_one_module_per_algorithm_name_as_in_the_simulator():
    """A real algorithm lives in the module of the same name as the simulator's (validate/algorithms/ring.py
    beside sim/algorithms/ring.py)."""
    from validate.algorithms.registry import _REGISTRY

    from .test_algorithms import algorithm_module

    assert {key: cls.__module__ for key, cls in _REGISTRY.items()} == {
        key: f"validate.algorithms.{algorithm_module(key[1])}" for key in _REGISTRY
    }
    for module in {algorithm_module(name) for _, name in _REGISTRY if name != "builtin"}:
        assert importlib.util.find_spec(f"sim.algorithms.{module}") is not None, module
