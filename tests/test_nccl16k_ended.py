"""The argument behind re-solving only the flows that can speed up when flows end (docs/nccl.md,
"Scale"; measured there and not built, as it would re-solve only ~8% fewer flows at 16k GPUs): after
flows end, every flow whose max-min rate was below the smallest rate ``r0`` of the ended ones keeps its
rate, and the others' rates are the max-min rates of those others alone over the capacities the slower
flows leave -- the same, to rounding, as solving every remaining flow again."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.maxmin import maxmin_rates


@st.composite
def _networks(draw):
    links = draw(st.integers(2, 8))
    capacity = np.array(draw(st.lists(st.floats(1.0, 100.0), min_size=links, max_size=links)))
    flows = draw(st.integers(2, 14))
    paths = [sorted(draw(st.sets(st.integers(0, links - 1), min_size=1, max_size=min(links, 4)))) for _ in range(flows)]
    ended = draw(st.sets(st.integers(0, flows - 1), min_size=1, max_size=flows - 1))
    return capacity, paths, sorted(ended)


def _solve(capacity: np.ndarray, paths: list[list[int]]) -> np.ndarray:
    flow = np.repeat(np.arange(len(paths)), [len(p) for p in paths])
    arc = np.array([a for p in paths for a in p], dtype=np.int64)
    return maxmin_rates(flow, arc, len(paths), capacity)


@settings(max_examples=300, deadline=None)
@given(_networks())
def test_flows_below_the_ended_rate_keep_theirs_and_the_rest_solve_alone(network):
    capacity, paths, ended = network
    before = _solve(capacity, paths)
    r0 = before[ended].min()
    left = [i for i in range(len(paths)) if i not in ended]
    after = _solve(capacity, [paths[i] for i in left])
    old = before[left]
    low = old < r0 * (1 - 1e-9)
    np.testing.assert_allclose(after[low], old[low], rtol=1e-12, atol=0)
    # the others: max-min over what the slower flows leave of every link
    rest = [paths[i] for i, slow in zip(left, low, strict=True) if not slow]
    residual = capacity.copy()
    for i, slow in zip(left, low, strict=True):
        if slow:
            residual[paths[i]] -= before[i]
    np.testing.assert_allclose(_solve(np.maximum(residual, 0.0), rest), after[~low], rtol=1e-12, atol=1e-12)
