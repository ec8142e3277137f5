"""The congested fast path's work on ring-rank-256, fourth round (docs/performance-log.md, "ring256d"): the compiled
core's common cases in line -- a new bucket's arrival queued without ``fast_call_at``'s call level, the clock, the
phase found last and the early arrays read in place, the bucket table's look-up, a rank's completion and a bucket's
removal -- and the digest's columns filled without a test per element: the same simulated time, events and flows
as the Python lines (``sim.fastpath._FAST_CORE`` off)."""

from __future__ import annotations

from typing import Any

import pytest

from sim.rates import _CORE
from tests.test_ring256c import _run

pytestmark = pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")


@pytest.mark.parametrize(
    ("algorithm", "size", "kw"),
    [
        ("ring:order=rank", 2**24 + 3, {"gamma": 1e-11}),  # (the reductions' timers: a rank's completion later)
        ("ring:order=rank", 2**26, {"gamma": 2e-11}),  # (a steady state: the digest, a jump over the buckets)
        ("ring:order=rank,channels=2", 2**25, {}),  # (buckets of several messages: the table's look-ups)
        ("halving-doubling", 2**23 + 5, {"gamma": 1e-11}),  # (phases of one step each: the phase looked up)
    ],
)
def test_the_core_in_line_gives_the_python_lines_results(algorithm: str, size: float, kw: dict[str, Any]) -> None:
    off, _ = _run(False, algorithm, size, **kw)
    on, private = _run(True, algorithm, size, **kw)
    assert (repr(on.time_s), on.events, on.flows) == (repr(off.time_s), off.events, off.flows)
    if algorithm.startswith("ring:order=rank"):
        assert on.engine == "fast:events" and private > 100
