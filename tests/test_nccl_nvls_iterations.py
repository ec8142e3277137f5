"""NVLS inside one host steps as NCCL's one-node kernel does: one iteration of every channel a step
(one chunk per channel and head), each paying one Simple step's hand-off over NVLink.

Figures worked out from NCCL's source (v2.30.7 unless named): ``enqueue.cc`` calcCollChunking (the NVLS
chunk), ``transport/nvls.cc`` (16 NVLS channels on Hopper, 24 on one B200 host), ``device/all_reduce.h``
(``loopCount = nHeads * chunkSize``), ``graph/tuning.cc`` hwLatencies (NVLink, Ring, Simple: 3.4 us).
docs/nccl.md, "NVLS on one host at middle sizes", has the measurements.
"""

from __future__ import annotations

import pytest

from sim.algorithms.nvls import STEP_LATENCY, hand_off_s, nvls_iterations
from sim.cluster import Cluster
from sim.nccl import tuner
from sim.nccl.versions import NEWEST
from sim.simulate import simulate
from sim.topology import hgx
from tests.test_fastpath import assert_same, perturb


def test_iterations_are_nccls_chunks_per_channel_and_head():
    # 16 channels x 8 heads = 128 chunks in flight; the chunk 128 KiB from 1 GiB, 64 KiB from 64 MiB,
    # 32 KiB from 8 MiB, else 16 KiB: 2 MiB / (128 x 16 KiB) = 1, 8 MiB / (128 x 32 KiB) = 2, ...
    sizes = (2**21, 2**22, 2**23, 2**24, 2**25, 2**26, 2**27, 2**29, 2**30, 2**32)
    assert [nvls_iterations(n, 8) for n in sizes] == [1, 2, 2, 4, 8, 8, 16, 64, 64, 256]
    # a share that is not whole chunks: the last iteration is a short one (NCCL's lastChunkSize)
    assert nvls_iterations(2**27 + 7, 8) == 17
    # one B200 host: 24 channels (NVLS_NCHANNELS_SM100_NVL); 1 GiB < 64 x 192 x 128 KiB: 64 KiB chunks
    b200 = tuner.describe(Cluster(hgx(1, "dgx-b200")), 8)
    assert nvls_iterations(2**30, 8, NEWEST, b200) == -(-(2**30) // (192 * 65536)) == 86


def test_every_iteration_pays_the_simple_hand_off():
    """Between 256 and 512 MiB (both 64 KiB chunks, 32 and 64 iterations of 8 MiB) the simulated time
    grows by 32 iterations, each the NVLink link's latency, the hand-off and the bytes through a GPU's
    NVLink at the NVLS efficiency -- not by the bytes alone."""
    assert STEP_LATENCY == pytest.approx(3.4e-6)
    # NCCL's 3.4 us for a Simple step over a ring hop GPU -> NVSwitch -> GPU, less that hop's 2 x 0.3 us
    assert hand_off_s(Cluster(hgx(1)), [0, 1]) == pytest.approx(2.8e-6)
    assert hand_off_s(Cluster(hgx(1, nvlink_latency=2e-6)), [0, 1]) == 0.0
    a = simulate("hgx:hosts=1", "allreduce", "nvls", 2**28).time_s
    b = simulate("hgx:hosts=1", "allreduce", "nvls", 2**29).time_s
    moving = (1 + 1 / 8) * 2**23 / (370.8e9 * 0.85)
    assert b - a == pytest.approx(32 * (0.3e-6 + 2.8e-6 + moving), rel=1e-3)


@pytest.mark.parametrize(
    "preset, gpus, size",
    [
        ("dgx-h100", 8, 2**23),
        ("dgx-h100", 8, 3 * 2**24 + 5),
        ("dgx-h100", 6, 2**25),
        ("dgx-b200", 8, 2**26),
    ],
)
@pytest.mark.parametrize("spec", ["nvls", "nccl:algo=nvls"])
def test_iterations_fast_equals_message_and_data_check(preset, gpus, size, spec):
    g = hgx(1, preset, gpus_per_host=gpus)
    a = simulate(g, "allreduce", spec, size, check=True, gamma=1e-12)
    b = simulate(g, "allreduce", spec, size, engine="fast", gamma=1e-12)
    assert a.wrong == 0
    assert_same(a, b)


@pytest.mark.parametrize("seed", [0, 1])
def test_iterations_fast_equals_message_with_stragglers_and_slow_links(seed):
    """A straggler's per-message overhead adds to the hand-off of its GPU's copy actor; slowed NVLink
    links break the symmetry between the heads."""
    g = perturb(hgx(1, "dgx-h100", gpus_per_host=8), seed)
    a = simulate(g, "allreduce", "nvls", 2**24 + 3, check=True)
    b = simulate(g, "allreduce", "nvls", 2**24 + 3, engine="fast")
    assert a.wrong == 0
    assert_same(a, b)


def test_a_stragglers_overhead_adds_to_its_hand_off():
    """Every iteration of the straggler's copy actor pays its GPU's per-message overhead on top of the
    hand-off, and the others wait for it at the switch: each of the 4 iterations is that much longer (its
    head actor, a channel of the GPU, pays it once more on the pipeline's last stretch)."""
    plain = hgx(1, "dgx-h100", gpus_per_host=8)
    slow = plain.copy()
    slow.nodes["h0:gpu3"]["overhead"] = 5e-6
    a = simulate(plain, "allreduce", "nvls", 2**24).time_s
    b = simulate(slow, "allreduce", "nvls", 2**24).time_s
    assert 4 * 5e-6 < b - a < 6 * 5e-6
