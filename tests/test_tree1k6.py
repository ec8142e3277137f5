"""tree1k6: the ``dgx`` fabric's arrays and names in one compiled pass each (``dgx_arcs``, ``dgx_names``) --
every array, dtype and name the numpy lines' (``COLLSIM_PURE``'s path), on fabrics of one, two, four and eight
GPUs a host, leaves not full, spines given, either routing."""

from __future__ import annotations

import numpy as np
import pytest

from sim.schema import validate_spec
from sim.topology import fabric as fabric_mod
from sim.topology.builders import DgxParams
from sim.topology.load import inline_params

_CORE = fabric_mod._CORE

SPECS = [
    "dgx:hosts=128,ecmp=hash",  # tree-1k's
    "dgx:hosts=2",
    "dgx:hosts=1,gpus_per_host=1",
    "dgx:hosts=5,gpus_per_host=4,hosts_per_leaf=2,spines=3,ecmp=hash",
    "dgx:hosts=3,gpus_per_host=1,hosts_per_leaf=2,ecmp=hash",
    "dgx:hosts=7,gpus_per_host=2,hosts_per_leaf=3,spines=5",
    "dgx:hosts=70,hosts_per_leaf=16,uplink_bandwidth=100Gbps,overhead=1us,pcie_bandwidth=32GB/s,ecmp=hash",
    "dgx:hosts=33,hosts_per_leaf=32,nvlink_latency=0.7us,latency=2us",
    "dgx:hosts=1100,hosts_per_leaf=32,spines=12,ecmp=hash",  # names past three digits
]


def _fabric(spec: str, core: object, monkeypatch: pytest.MonkeyPatch) -> fabric_mod.Fabric:
    monkeypatch.setattr(fabric_mod, "_CORE", core)
    kind, params = inline_params(spec)
    got = fabric_mod.dgx_fabric(validate_spec(DgxParams, params, kind))
    assert got is not None
    return got


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("spec", SPECS)
def test_dgx_fabric_compiled_equals_numpy(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, ref = _fabric(spec, _CORE, monkeypatch), _fabric(spec, None, monkeypatch)
    for name in (
        "is_gpu",
        "endpoint_only",
        "arc_u",
        "arc_v",
        "capacity",
        "latency",
        "weight",
        "rank_node",
        "rank_host",
    ):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name  # (to the bit: -0.0 and NaN told apart)
    assert (fast.dest_key is None) == (ref.dest_key is None)
    if fast.dest_key is not None:
        assert fast.dest_key.dtype == ref.dest_key.dtype and np.array_equal(fast.dest_key, ref.dest_key)
    assert fast.nodes == ref.nodes and all(type(s) is str for s in fast.nodes)
    assert fast.hosts == ref.hosts and all(type(s) is str for s in fast.hosts)
    for name in ("name", "spec", "routing", "overhead", "builder", "params"):
        assert getattr(fast, name) == getattr(ref, name), name


@pytest.mark.skipif(_CORE is None, reason="the compiled core is not built")
def test_dgx_arcs_refuses_wrong_arrays() -> None:
    m = 2 * 1 * 8 + 8 + 40  # one host of 8 GPUs, one spine
    tail, head, cap, lat = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m), np.empty(m)
    rank, gpu = np.empty(8, dtype=np.int64), np.empty(1 + 8 + 17, dtype=bool)
    bands = (1.0, 1.0, 0.0, 1.0, 0.0, 1.0)
    assert _CORE.dgx_arcs(1, 1, 32, 1, 8, *bands, tail, head, cap, lat, rank, gpu) == m
    with pytest.raises(ValueError):
        _CORE.dgx_arcs(1, 1, 32, 1, 8, *bands, tail[:-1], head, cap, lat, rank, gpu)
    with pytest.raises(ValueError):
        _CORE.dgx_arcs(1, 1, 32, 1, 8, *bands, tail, head[::2], cap, lat, rank, gpu)
    with pytest.raises(ValueError):
        _CORE.dgx_arcs(0, 1, 32, 1, 8, *bands, tail, head, cap, lat, rank, gpu)
    with pytest.raises(ValueError):
        _CORE.dgx_names(1, 0, 1, 1)
