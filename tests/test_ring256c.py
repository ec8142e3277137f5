"""The congested fast path's work on ring-rank-256, third round (docs/performance-log.md, "ring256c"): the compiled
core's table of private-message buckets empties the places of the buckets taken out where it can (few removed
places left, the table seldom made anew), reads ``cluster.paths.count`` once while the cluster's and the path
table's dicts stand, and picks a step's finished ranks out before it sorts them -- the same simulated time, events
and flows as the Python lines (``sim.fastpath._FAST_CORE`` off)."""

from __future__ import annotations

from typing import Any

import pytest

import sim.fastpath as fastpath
from sim import simulate
from sim.rates import _CORE
from sim.topology import dgx

pytestmark = pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")


def _run(core: bool, algorithm: str, size: float, hosts: int = 4, **kw: Any) -> tuple[Any, int]:
    """simulate(...) on ``hosts`` DGX hosts with the fast engine, the compiled core ``core``: (the result, the
    private messages the cores sent)."""
    executors: list[Any] = []
    bind = fastpath.FastExecutor._bind_core

    def bound(self: Any) -> None:
        bind(self)
        executors.append(self)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(fastpath, "_FAST_CORE", core)
        m.setattr(fastpath.FastExecutor, "_bind_core", bound)
        cluster = dgx(hosts=hosts, gpus_per_host=8, ecmp="hash")
        r = simulate(cluster, "allreduce", algorithm, size, engine="fast", **kw)
    private = sum(ex._core.private() for ex in executors if ex._core is not None)
    return r, private


@pytest.mark.parametrize(
    ("algorithm", "size", "kw"),
    [
        ("ring:order=rank", 2**22 + 7, {}),
        ("ring:order=rank", 2**24, {"gamma": 1e-11}),
        ("ring:order=rank", 3 * 2**20 + 5, {"dtype": "half"}),
        ("ring:order=rank", 2**26, {}),  # (a steady state: extrapolated, the buckets in flight moved)
        ("ring:order=rank,channels=2", 2**24, {}),  # (buckets of several messages: _done's ready ranks)
        ("halving-doubling", 2**22, {}),
    ],
)
def test_the_core_gives_the_python_lines_results(algorithm: str, size: float, kw: dict[str, Any]) -> None:
    off, _ = _run(False, algorithm, size, **kw)
    on, private = _run(True, algorithm, size, **kw)
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
    if algorithm.startswith("ring:order=rank"):  # (congested: the core holds private messages in its buckets)
        assert on.engine == "fast:events" and private > 100


def test_ring_rank_256_itself() -> None:
    """ring-rank-256 (256 MiB on 32 hosts): ~64k buckets made and taken out of the core's table, ~15k of several
    messages -- main's figures to the bit, and the Python lines'."""
    on, private = _run(True, "ring:order=rank", 2**28, hosts=32)
    assert (repr(on.time_s), on.events, on.flows) == ("0.03412642559999981", 70293, 130560)
    assert private > 50_000
    off, _ = _run(False, "ring:order=rank", 2**28, hosts=32)
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
