"""Whole components that grow too big (``Rates._spilled``: the spills counted, the change spread along full links
from the ``_SPREAD_AFTER``-th on) in the compiled wake-up: the Python lines' results, spills and solves."""

from __future__ import annotations

from typing import Any

import pytest

import sim.network as network
import sim.rates as rates
from sim.rates import _CORE

from .test_wake_core import _both

pytestmark = pytest.mark.skipif(
    _CORE is None or network._ops is network._PyDue, reason="the compiled core is not built (or COLLSIM_PURE=1)"
)

LS = "leaf-spine:leaves=16,hosts_per_leaf=64,spines=4,bandwidth=100Gbps,uplink_bandwidth=400Gbps,latency=1us"


@pytest.mark.parametrize(
    ("spec", "algorithm", "engine"), [(LS, "halving-doubling", "fast"), (LS, "tree:chunks=8", "fast")]
)
def test_spills_in_the_core_are_the_python_lines(monkeypatch, spec, algorithm, engine):
    made: list[Any] = []
    init = network.Network.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(network.Network, "__init__", recording)
    _both(monkeypatch, spec, "allreduce", algorithm, "256MiB", engine=engine)
    core, ref = made[0].rates, made[-1].rates
    fields = ("_spills", "_spread", "solves", "partial", "regrown", "cache_hits", "_skip", "_skip_next")
    assert {f: getattr(core, f) for f in fields} == {f: getattr(ref, f) for f in fields}
    assert ref._spills >= rates._SPREAD_AFTER  # (spilled, and spread after)
