"""The pipelined trees' dataflows built in array operations are the ones the chunk-by-chunk loops built.

:func:`sim.algorithms.tree.pipelined_tree` adds every chunk's messages in one call per direction and each
kind of edge in one call (the rows of a loop over the chunks, in its order), and
:func:`sim.algorithms.double_binary_tree.dtree_parents` takes NCCL's two trees' parents in array
operations. The loops they replace are kept here (``_loop_pipelined_tree``) and every array of the
programs they build -- messages, edges in their order, the dependency tables -- must be the same, on
random forests, the binary tree and the double binary tree at many sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sim.algorithms.double_binary_tree import dbt_dataflow, dtree_parents, nccl_dtree
from sim.algorithms.tree import pipelined_tree, tree_dataflow, tree_pairs
from sim.dataflow import ARRIVED, HELD, Dataflow, DataflowBuilder


def _loop_pipelined_tree(b: Any, parent: Any, endpoint: Any, proc: Any, k: int, chunk: float, seg_off: int = 0) -> None:
    """``pipelined_tree`` as it was: chunk by chunk (the reference)."""
    parent = np.asarray(parent, dtype=np.int64)
    n = len(parent)
    kids, up_of, sib, sib_of, inner = tree_pairs(parent)  # (unchanged: taken from the loop's lines)
    up = np.full((k, n), -1, dtype=np.int64)
    down = np.full((k, n), -1, dtype=np.int64)
    for c in range(k):
        up[c, kids] = b.messages(endpoint[kids], endpoint[up_of], chunk, reduce=True, proc=proc[up_of], seg=seg_off + c)
    for c in range(k):
        down[c, kids] = b.messages(
            endpoint[up_of], endpoint[kids], chunk, reduce=False, proc=proc[kids], seg=seg_off + c
        )
    last = up[k - 1]
    for c in range(k):
        prev = up[c - 1] if c else np.full(n, -1, dtype=np.int64)
        b.after(up[c, parent[inner]], up[c, inner], HELD)
        b.after(up[c, kids], prev[kids], ARRIVED)
        b.gate(up[c, sib], prev[sib_of], HELD)
        if c >= 2:
            b.gate(up[c, kids], up[c - 2, up_of], ARRIVED)
        b.after(down[c, kids], down[c, up_of], HELD)
        if c:
            b.after(down[c, sib], down[c - 1, sib_of], ARRIVED)
        else:
            b.after(down[0, sib], last[sib_of], HELD)
            b.after(down[0, kids], last[up_of], ARRIVED)


def _arrays(flow: Dataflow) -> dict[str, Any]:
    """Every array of a program, as lists with their dtypes."""
    out: dict[str, Any] = {}
    for name in ("src", "dst", "nbytes", "reduce", "proc", "combine", "seg_lo", "seg_hi", "dep_count", "gate_count"):
        a = getattr(flow, name)
        out[name] = (a.dtype.str, a.tolist())
    for name in ("deps", "gates"):
        out[name] = [(a.dtype.str, a.tolist()) for a in getattr(flow, name)]
    for name in ("on_arrived", "on_held", "gate_on_arrived", "gate_on_held"):
        ptr, (idx,) = getattr(flow, name)
        out[name] = (ptr.tolist(), idx.tolist())
    out["endpoints"] = flow.endpoints
    return out


def _forest(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random forest on n nodes (node v's parent is an earlier node or none), relabelled at random."""
    parent = np.array([-1 if v == 0 or rng.random() < 0.15 else int(rng.integers(0, v)) for v in range(n)])
    perm = rng.permutation(n)
    out = np.full(n, -1, dtype=np.int64)
    out[perm] = np.where(parent >= 0, perm[np.maximum(parent, 0)], -1)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_a_forest_builds_what_the_loop_built(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    parent = _forest(rng, n)
    endpoints = int(rng.integers(1, 12))
    endpoint = rng.integers(0, endpoints, n)
    proc = rng.integers(0, 2 * n, n)
    chunks = int(rng.integers(1, 7))
    chunk, seg_off = float(rng.integers(1, 2**20)), int(rng.integers(0, 5))
    built = []
    for build in (pipelined_tree, _loop_pipelined_tree):
        b = DataflowBuilder(endpoints)
        b.messages([0], [min(1, endpoints - 1)], 3.0, reduce=False, proc=[0], seg=0)  # (ids not from 0)
        build(b, parent, endpoint, proc, chunks, chunk, seg_off)
        build(b, parent[::-1].copy(), endpoint, proc, chunks, chunk / 2, seg_off + chunks)  # (a second forest)
        built.append(_arrays(b.build()))
    assert built[0] == built[1]


@pytest.mark.parametrize("p", [2, 3, 4, 5, 7, 8, 13, 16, 33, 64])
@pytest.mark.parametrize("chunks", [1, 2, 3, 8])
def test_the_trees_build_what_the_loop_built(monkeypatch, p, chunks):
    import sim.algorithms.double_binary_tree as dbt
    import sim.algorithms.tree as tree

    built = []
    for build in (pipelined_tree, _loop_pipelined_tree):
        with monkeypatch.context() as m:
            m.setattr(dbt, "pipelined_tree", build)
            m.setattr(tree, "pipelined_tree", build)
            built.append(
                (_arrays(dbt_dataflow(p, 2.0**20 + 5, chunks)), _arrays(tree_dataflow(p, 2.0**20, chunks, 1 % p)))
            )
    assert built[0] == built[1]


def test_dbt64_512_builds_what_the_loop_built(monkeypatch):
    """The benchmark's program (dbt64-512: 512 ranks, 64 chunks, 130,816 messages)."""
    import sim.algorithms.double_binary_tree as dbt

    fast = _arrays(dbt_dataflow(512, 2.0**30, 64))
    with monkeypatch.context() as m:
        m.setattr(dbt, "pipelined_tree", _loop_pipelined_tree)
        ref = _arrays(dbt_dataflow(512, 2.0**30, 64))
    assert len(fast["src"][1]) == 130816
    assert fast == ref


@pytest.mark.parametrize("p", list(range(1, 70)) + [255, 256, 257, 512, 1000, 1024])
def test_the_trees_parents_are_nccls(p):
    ref = [[nccl_dtree(p, r)[t][0] for r in range(p)] for t in range(2)]
    got = dtree_parents(p)
    assert got.dtype == np.int64 and got.tolist() == ref


@pytest.mark.parametrize("seed", range(30))
def test_the_pairs_are_np_uniques(seed):
    """The messages' distinct (src, dst) pairs and where each message's is among them: by the table over
    every pair (few endpoints) and by the sort (many), both ``np.unique``'s values and inverse."""
    from sim.dataflow import _pairs

    rng = np.random.default_rng(seed)
    endpoints = int(rng.choice([1, 2, 5, 64, 512, 5000]))
    n = int(rng.integers(0, 3000))
    keys = rng.integers(0, endpoints, n) * endpoints + rng.integers(0, endpoints, n)
    pairs, where = _pairs(keys, endpoints)
    ref, inverse = np.unique(keys, return_inverse=True)
    assert pairs.tolist() == ref.tolist() and where.tolist() == inverse.ravel().tolist()


def test_edges_handed_over_are_kept_as_they_are():
    """``copy=False``: the builder keeps the arrays it is handed (no copy), and refuses what it could not
    keep as edges (2-d, of two lengths, not integers)."""
    b = DataflowBuilder(2)
    ids = b.messages([0, 1, 0], [1, 0, 1], 8.0, reduce=False, proc=[0, 0, 0], seg=0)
    m, on = ids[1:].astype(np.int32), ids[:2].astype(np.int32)
    b.after(m, on, HELD, copy=False)
    assert b._deps[2 * HELD][0] is m and b._deps[2 * HELD + 1][0] is on
    for bad in (np.zeros((1, 2), dtype=np.int32), np.zeros(3, dtype=np.int32), np.zeros(2)):
        with pytest.raises(ValueError):
            b.gate(m, bad, ARRIVED, copy=False)
    flow = b.build()
    assert flow.deps[0].tolist() == [1, 2] and flow.deps[1].tolist() == [0, 1]
