"""Steps routed once where a program repeats their messages' ends (sim.program.share_routes), and the fast path's
private masks judged on the distinct steps only: the same path ids, masks and results as routing and judging every
step on its own."""

from __future__ import annotations

import numpy as np
import pytest

import sim.fastpath as fp
from sim.cluster import Cluster
from sim.program import share_routes
from sim.simulate import simulate

CASES = [
    ("leaf-spine:leaves=8,hosts_per_leaf=16,spines=2,bandwidth=100Gbps,uplink_bandwidth=400Gbps", "halving-doubling"),
    ("dgx:hosts=8,hosts_per_leaf=2,ecmp=hash", "halving-doubling"),
    ("dgx:hosts=4,gpus_per_host=4,hosts_per_leaf=2,spines=1", "ring:order=rank"),
    ("dgx:hosts=4,gpus_per_host=4,hosts_per_leaf=2,spines=1", "recursive-doubling"),
    ("dgx:hosts=4,gpus_per_host=4,hosts_per_leaf=2,spines=1", "nccl-tree"),  # (a sender's messages of one step)
    ("hgx:preset=dgx-h100,hosts=2", "nccl"),
]


def _masks_step_by_step(ex: fp.FastExecutor) -> dict[int, np.ndarray]:
    """_private_masks' meaning in plain Python, every step on its own: a message is private where each link
    direction on its path carries, over the program, one sender's messages only and one message a step."""
    net = ex.net
    paths = net.cluster.paths
    steps = [step for step, _ in ex.program.phases]
    senders: dict[int, set[int]] = {}
    bad: set[int] = set()
    for step in steps:
        per_step: dict[int, int] = {}
        for m, pid in enumerate(step.pids(net).tolist()):
            for arc in paths.arcs_of(pid).tolist():
                per_step[arc] = per_step.get(arc, 0) + 1
                senders.setdefault(arc, set()).add(int(step.src[m]))
        bad |= {arc for arc, n in per_step.items() if n > 1}
    bad |= {arc for arc, who in senders.items() if len(who) > 1}
    masks = {}
    for step in steps:
        pids = step.pids(net).tolist()
        mask = np.array([len(paths.arcs_of(pid)) > 0 and not bad & set(paths.arcs_of(pid).tolist()) for pid in pids])
        if len(mask) and mask.any():
            masks[id(step)] = mask
    return masks


def _run(spec: str, name: str) -> tuple[str, int, int]:
    r = simulate(Cluster(spec), "allreduce", name, "8MiB", engine="fast", gamma=1e-11)
    return repr(r.time_s), r.events, r.flows


@pytest.mark.parametrize(("spec", "name"), CASES)
def test_the_masks_of_distinct_steps_are_every_steps(spec, name, monkeypatch):
    """The masks from the distinct steps (counted step by step where that is cheap, else by one sort) are
    the masks of every step judged on its own, step for step."""
    got = []
    masks = fp.FastExecutor._private_masks

    def checked(self):
        mine = masks(self)
        want = _masks_step_by_step(self)
        assert mine.keys() == want.keys()
        for key, mask in want.items():
            assert np.array_equal(mine[key], mask)
        got.append(len(want))
        return mine

    monkeypatch.setattr(fp.FastExecutor, "_private_masks", checked)
    _run(spec, name)
    assert got  # (the masks were asked for)


@pytest.mark.parametrize(("spec", "name"), CASES[:2])
def test_the_masks_by_one_sort_are_the_counts(spec, name, monkeypatch):
    """The crossings sorted once (where the per-step counts would be too long) give the same masks."""
    got = []
    masks = fp.FastExecutor._private_masks

    def checked(self):
        want = masks(self)
        monkeypatch.setattr(fp, "_COUNT_SPAN", 0)
        sorted_once = masks(self)
        monkeypatch.setattr(fp, "_COUNT_SPAN", 4)
        assert sorted_once.keys() == want.keys() and all(np.array_equal(sorted_once[k], want[k]) for k in want)
        got.append(1)
        return want

    monkeypatch.setattr(fp.FastExecutor, "_private_masks", checked)
    _run(spec, name)
    assert got


@pytest.mark.parametrize(("spec", "name"), CASES)
def test_twins_take_the_path_ids_routing_step_by_step_gives(spec, name):
    """Every step's path ids with twins are the ids routing each step on its own gives, on a fresh cluster,
    interned in the same order."""
    from sim.algorithms import get_algorithm

    results = []
    for twins in (False, True):
        cluster = Cluster(spec)
        program = get_algorithm("allreduce", name).program(cluster.size, 2**23, cluster)
        steps = [step for step, _ in program.phases]
        if twins:
            share_routes(steps)
            assert any(step.twin is not None for step in steps) or name != "halving-doubling"

        class Net:
            pass

        net = Net()
        net.cluster = cluster
        results.append(([step.pids(net).tolist() for step in steps], cluster.paths.count))
    assert results[0] == results[1]


def test_share_routes_never_makes_a_loop():
    """Steps given in different orders (one step object in two programs) end with twins that lead to a step
    without one."""
    from sim.program import Step

    a, b, c = (Step.make([0, 1], [1, 0], 1.0, endpoints=2) for _ in range(3))
    share_routes([a, b, c])
    share_routes([c, b, a])
    share_routes([b, c, a])
    for step in (a, b, c):
        seen = set()
        while step.twin is not None:
            assert id(step) not in seen
            seen.add(id(step))
            step = step.twin
    assert a.twin is None and b.twin is a and c.twin is a


@pytest.mark.parametrize(("spec", "name"), CASES)
def test_the_same_results_without_twins(spec, name, monkeypatch):
    """A run with twins is the run without them, to the bit."""
    with_twins = _run(spec, name)
    monkeypatch.setattr(fp, "share_routes", lambda steps: None)
    assert _run(spec, name) == with_twins


def test_two_messages_of_one_sender_in_one_step_are_not_private():
    """Rank 0 sends to ranks 1 and 2 in one step (both cross its own link to the switch, which no other rank
    sends over) and rank 3 to rank 1 in the next: the two share a link, so neither is private; the third is.
    The same masks as the plain Python meaning, whichever way the steps are counted."""
    import simpy

    from sim.network import Network
    from sim.program import Step, StepProgram

    cluster = Cluster("star:hosts=4,bandwidth=100Gbps")
    env = simpy.Environment()
    net = Network(env, cluster)
    program = StepProgram(
        4,
        (
            (Step.make([0, 0], [1, 2], 2.0**20, endpoints=4), 1),
            (Step.make([3], [0], 2.0**20, endpoints=4), 1),
        ),
    )
    ex = fp.FastExecutor(net, program, 0.0, np.ones(4))
    for span in (4, 0):
        fp._COUNT_SPAN, kept = span, fp._COUNT_SPAN
        try:
            masks = ex._private_masks()
        finally:
            fp._COUNT_SPAN = kept
        want = _masks_step_by_step(ex)
        assert masks.keys() == want.keys() and all(np.array_equal(masks[k], want[k]) for k in want)
        first, second = (step for step, _ in program.phases)
        assert id(first) not in masks and masks[id(second)].tolist() == [True]
