"""All-gather and reduce-scatter rings as one step repeated p - 1 times (``sim/algorithms/ring.py:
gathering_steps``): the block a message carries is looked up in the step's segment table by ring position
(NCCL's K rings) or is the position itself (the rank-order ring); the data check proves every rank's
contribution delivered exactly once, and the fast path (which may now jump the ring's steady state)
gives the message level's times to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from sim.algorithms import get_algorithm
from sim.cluster import Cluster
from sim.network import Network
from sim.program import Step, StepProgram, concat, merge, overlay, run_messages
from sim.runtime import DataCheck, Job
from sim.simulate import simulate
from sim.topology import hgx, star
from tests.test_fastpath import perturb

GATHERING = ("allgather", "reducescatter")


def _data_phase(program: StepProgram) -> tuple[Step, int]:
    data = [(step, times) for step, times in program.phases if (step.nbytes > 0).any()]
    assert len(data) == 1, "the ring's data steps are one step repeated"
    return data[0]


def _run_with_check(cluster: Cluster, collective: str, program: StepProgram, p: int, segments: int, gamma: float):
    """``program`` message-level over its endpoints with the data check (actors beyond the ranks count as
    their ranks, as ``sim.nccl.layout.run_program`` runs it); returns (wrong ranks, end time)."""
    from sim.nccl.pipeline import EndpointData

    env = simpy.Environment()
    data = DataCheck(collective, p, segments)
    job = Job(env, Network(env, cluster), p, 1.0, gamma=gamma, data=data)
    if program.endpoints > p:
        job.data = EndpointData(data, cluster, p)
    env.run(env.process(run_messages(job, program)))
    return data.wrong_ranks(), env.now


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize(
    "spec, k",
    [
        ("ring:order=rank", 1),
        ("ring", 1),
        ("ring:order=rail", 1),
        ("ring:channels=3", 3),
        ("ring:channels=16", 16),
        ("nccl", 8),
    ],
)
def test_the_ring_is_one_step_repeated_with_a_table_only_where_ranks_are_out_of_order(collective, spec, k):
    """On 2 x DGX H100 (16 ranks): one data step, p - 1 = 15 times, K rings x 16 actors' messages; the
    rank-order ring's blocks are its positions (no table), the rail-order ring and NCCL's rings look their
    ranks up (a table of K x p entries: the step holds O(K p), not O(K p^2)); ``ring`` is the rail order
    on hosts of several GPUs (``order=auto``, as for all-reduce)."""
    cluster = Cluster(hgx(2, "dgx-h100"))
    program = get_algorithm(collective, spec).program(16, 2**26, cluster)
    step, times = _data_phase(program)
    assert times == 15 and len(step) == 16 * k
    assert (step.table is None) == (spec == "ring:order=rank")
    if step.table is not None:
        assert len(step.table) == 16 * k
    assert (step.seg[3] == -1).all() and (step.seg[4] == 16).all()  # the position moves back one a step


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize("gamma", [0.0, 1e-10])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_the_rank_order_rings_program_passes_the_data_check(collective, gamma, p):
    """``ring`` (K = 1) runs as SimPy processes at the message level; its step program (the fast path's)
    delivers every block exactly once too, at the processes' time, on a perturbed star."""
    graph = perturb(star(p, "100Gbps", "1us"), seed=p)
    cluster = Cluster(graph)
    algo = get_algorithm(collective, "ring")
    program = algo.program(p, 3e6 * p, cluster)
    wrong, now = _run_with_check(cluster, collective, program, p, algo.segments(p), gamma)
    assert wrong == []
    ref = simulate(graph, collective, "ring", 3e6 * p, gamma=gamma, engine="message")
    assert now == pytest.approx(ref.time_s, rel=1e-12)


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize("gamma", [0.0, 1e-11])
@pytest.mark.parametrize(
    "topology, spec",
    [
        ("hgx:preset=dgx-h100,hosts=2", "ring:channels=1"),
        ("hgx:preset=dgx-h100,hosts=2", "ring:channels=3"),
        ("hgx:preset=dgx-h100,hosts=2", "ring:channels=16"),
        ("hgx:preset=dgx-h100,hosts=3", "ring:channels=16"),
        ("hgx:preset=dgx-h100,hosts=2", "nccl"),
        ("hgx:preset=hgx-a100-200g,hosts=2", "ring:channels=3"),
        ("dgx:hosts=2", "ring"),
        ("dgx:hosts=3", "ring"),
        ("dgx:hosts=3", "ring:order=rank"),
        ("dgx:hosts=3", "ring:order=rail"),
        ("dgx:hosts=2", "ring:channels=3"),
    ],
)
def test_fast_path_equals_the_message_level_with_the_data_check(collective, gamma, topology, spec):
    """The repeated step (jumped where the run turns periodic) gives the message level's time to 1e-9,
    and the message level's data check passes: every rank's contribution delivered exactly once."""
    cluster = Cluster(topology)
    m = simulate(cluster, collective, spec, 3 * 2**24, engine="message", gamma=gamma, check=True)
    f = simulate(cluster, collective, spec, 3 * 2**24, engine="fast", gamma=gamma)
    assert m.wrong == 0
    assert f.time_s == pytest.approx(m.time_s, rel=1e-9)


@pytest.mark.parametrize("collective", GATHERING)
@pytest.mark.parametrize(
    "spec, k", [("ring:channels=1", 1), ("ring:order=rail", 1), ("ring:channels=3", 3), ("ring:channels=16", 16)]
)
def test_k_rings_program_passes_the_data_check_through_the_table(collective, spec, k):
    """The rings' program run message-level with the data check: each actor's block looked up in the
    table per repetition; a message sent with the wrong rank's block reads 0 or 2 somewhere. (The single
    ring's program is the fast path's; its message level runs SimPy processes: the same time.)"""
    cluster = Cluster(hgx(2, "dgx-h100"))
    algo = get_algorithm(collective, spec)
    program = algo.program(16, 3 * 2**24, cluster)
    wrong, now = _run_with_check(cluster, collective, program, 16, 16 * k, 1e-11)
    assert wrong == []
    if k == 1:
        ref = simulate(cluster, collective, spec, 3 * 2**24, gamma=1e-11, engine="message", check=True)
        assert ref.wrong == 0 and now == pytest.approx(ref.time_s, rel=1e-12)


def _table_step(endpoints: int, shift: int = 0) -> Step:
    """A 3-actor ring (actors ``shift`` + 0..2) whose positions hold ranks 2, 0, 1: all-gather blocks
    looked up in the table."""
    order = np.arange(3) + shift
    return Step.make(
        order,
        np.roll(order, -1),
        1.0,
        endpoints=endpoints,
        seg=np.arange(3),
        seg_stride=-1,
        seg_mod=3,
        seg_table=[2, 0, 1],
        seg_at=0,
    )


def test_segments_read_the_table_and_the_tables_are_carried_through_merge_overlay_and_from_repetition():
    """``lo = off + scale * table[at + (base + k stride) % mod]``; merging steps puts their tables end to
    end and moves each message's ``at`` with its table; a step without a table keeps its formula."""
    a = _table_step(8)
    assert [a.segments(m, 0).start for m in range(3)] == [2, 0, 1]
    assert [a.segments(m, 1).start for m in range(3)] == [1, 2, 0]  # position i - 1's rank
    plain = Step.make([6], [7], 1.0, endpoints=8, seg=5, seg_stride=1, seg_mod=100)
    b = _table_step(8, shift=3)
    b.table[:] = [7, 8, 9]  # (b's own table)
    both = merge([StepProgram(8, ((a, 2),)), StepProgram(8, ((plain, 2),)), StepProgram(8, ((b, 2),))], 8).phases[0][0]
    assert both.table is not None and both.table.tolist() == [2, 0, 1, 7, 8, 9]
    for k in range(2):
        expect = [a.segments(m, k) for m in range(3)] + [plain.segments(0, k)] + [b.segments(m, k) for m in range(3)]
        assert [both.segments(m, k) for m in range(7)] == expect
    later = overlay(8, [(plain, 1), (a, 2)], [(b, 3)])
    assert [t for _, t in later.phases] == [1, 2]
    second = later.phases[1][0]  # a's first repetition beside b's second
    assert [second.segments(m, 0) for m in range(6)] == [a.segments(m, 0) for m in range(3)] + [
        b.segments(m, 1) for m in range(3)
    ]
    moved = a.from_repetition(2)
    assert [moved.segments(m, 0) for m in range(3)] == [a.segments(m, 2) for m in range(3)]
    assert concat(StepProgram(8, ((a, 2),)), StepProgram(8, ((b, 1),))).phases[1][0].table is b.table
    with pytest.raises(ValueError, match="within the segment table"):
        Step.make([0], [1], 1.0, endpoints=2, seg_table=[0, 1], seg_at=1, seg_mod=2)


def test_the_symmetry_quotient_keeps_each_kept_message_s_table_entry():
    """NCCL's channels run on one member of every orbit (sim.symmetry): the kept messages' rows keep
    their place in the step's table, which the quotient's step carries whole."""
    from sim.symmetry import quotient

    cluster = Cluster(hgx(2, "dgx-h100"))
    program = get_algorithm("allgather", "ring:channels=16").program(16, 2**26, cluster)
    got = quotient(program, cluster, 0.0)
    assert got is not None
    (whole, _), (sub, _) = _data_phase(program), _data_phase(got.program)
    assert sub.table is whole.table
    rows = {(s, d): m for m, (s, d) in enumerate(zip(whole.src.tolist(), whole.dst.tolist(), strict=True))}
    for m in range(len(sub)):
        w = rows[(int(got.ids[sub.src[m]]), int(got.ids[sub.dst[m]]))]  # (the quotient's endpoints numbered anew)
        assert [sub.segments(m, k) for k in range(15)] == [whole.segments(w, k) for k in range(15)]


@pytest.mark.parametrize("collective", GATHERING)
def test_the_gathering_ring_takes_the_all_reduce_rings_order(collective):
    """``ring`` for all-gather / reduce-scatter orders its ranks as the all-reduce ring does (``auto``: the
    rail order where hosts hold several ranks, rank order where each holds one), and says so."""
    dgx3 = Cluster("dgx:hosts=3,ecmp=hash")  # hashed: the rank order's cross-rail hops meet on the spines
    spec = get_algorithm(collective, "ring")
    assert spec.options.order == get_algorithm("allreduce", "ring").options.order == "auto"
    rail = simulate(dgx3, collective, "ring:order=rail", 3 * 2**24, engine="message")
    rank = simulate(dgx3, collective, "ring:order=rank", 3 * 2**24, engine="message")
    auto = simulate(dgx3, collective, "ring", 3 * 2**24, engine="message")
    assert auto.time_s == rail.time_s and auto.time_s != rank.time_s
    star4 = Cluster(star(4, "100Gbps", "1us"))
    a, r = (simulate(star4, collective, s, 2**22, engine="message").time_s for s in ("ring", "ring:order=rank"))
    assert a == r
