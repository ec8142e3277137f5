"""NCCL's three protocols: what each puts on the wire and how finely it cuts a buffer.

Constants from NVIDIA/nccl (master 5067397c, v2.30.7):

* LL -- 16-byte lines of two (4 B data + 4 B flag) pairs: half the bytes on the wire are payload
  (``src/include/device.h``: ``ncclLLFifoLine``).
* LL128 -- 128-byte lines carrying 120 B of data and an 8 B flag word: 15/16 payload
  (``device.h``: ``NCCL_LL128_LINEELEMS``, ``NCCL_LL128_DATAELEMS``).
* Simple -- raw data, readiness by fences and counters: all payload.

Per connection NCCL has ``NCCL_STEPS`` = 8 buffer slots (``device.h``); one step of payload is 32 KiB for LL
(512 KiB buffer / 8 steps of which half is flags), 576,000 B for LL128, and 512 KiB for Simple (4 MiB
``NCCL_BUFFSIZE`` / 8; ``src/init.cc``: ``DEFAULT_*_BUFFSIZE``). Ring all-reduce with Simple moves 4 steps per
chunk (``src/include/collectives.h``: ``ALLREDUCE_CHUNKSTEPS``); trees and the LL protocols one; NVLS moves
128 KiB chunks (``NCCL_NVLS_CHUNKSIZE``, ``src/enqueue.cc``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NVLS_CHUNK", "PROTOCOLS", "Protocol", "collnet_chunk", "get_protocol", "nvls_chunk", "tree_ll128_chunk"]


@dataclass(frozen=True)
class Protocol:
    """One protocol: ``payload`` bytes of data per byte on the wire, ``step`` payload bytes per buffer
    slot, ``ring_chunk_steps`` slots per ring chunk."""

    name: str
    payload: float
    step: int
    ring_chunk_steps: int

    def wire(self, nbytes: float) -> float:
        """Bytes on the wire for ``nbytes`` of data."""
        return nbytes / self.payload


PROTOCOLS: dict[str, Protocol] = {
    "ll": Protocol("LL", 0.5, 32 * 1024, 1),
    "ll128": Protocol("LL128", 120 / 128, 576_000, 1),
    "simple": Protocol("Simple", 1.0, 512 * 1024, 4),
}

#: NVLS chunk (``enqueue.cc``: ``NCCL_NVLS_CHUNKSIZE`` default 128 KiB)
NVLS_CHUNK = 128 * 1024


def nvls_chunk(
    nbytes: float,
    nodes: int,
    concurrent: int,
    tree: bool = True,
    tree_start: int = NVLS_CHUNK,
    cap4: bool = True,
    first: int = 64,
    start: int = NVLS_CHUNK,
) -> int:
    """The chunk NCCL's NVLS (``tree`` False or one node) or NVLS-tree all-reduce moves for ``nbytes`` with
    ``concurrent`` = channels x heads chunks in flight at once (``enqueue.cc``: calcCollChunking; the
    NVLS-tree ceiling is 64 KiB from 4 nodes on, ``transport/nvls.cc``: ncclNvlsTuning): smaller
    buffers get smaller chunks, so that every channel and head has work. Releases before 2.21 started
    NVLS-tree from ``tree_start`` = Simple's step (512 KiB), and 2.18 had no 4-node ceiling (``cap4``);
    NVLS's first halving (to 64 KiB) came below ``first`` = 64 chunks a channel and head (32 in 2.17.1).
    NVLS starts from ``start`` (NCCL_NVLS_CHUNKSIZE, no more than the Simple step:
    :func:`sim.nccl.tuner.nvls_chunks`)."""
    c = start
    if nodes == 1 or not tree:  # NVLS (across nodes over SHARP: the same rules; NCCL's 32 KiB ceiling
        # where its NVLS bandwidth estimate is under 150 GB/s is not applied)
        for times, above in ((first, 65536), (8, 32768), (2, 16384)):
            if nbytes < times * concurrent * c and c > above:
                c = above
        return c
    c = 65536 if nodes >= 4 and cap4 else tree_start
    for times, above in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if nbytes < times * concurrent * c and c > above:
            c = above
    return c


#: CollNet Chain's chunk ceiling (``enqueue.cc``: calcCollChunking, ``std::min(256 * 1024, ...)``)
COLLNET_CHAIN_CHUNK = 256 * 1024


def collnet_chunk(
    nbytes: float, channels: int, heads: int, depth: int, chain: bool, step: int = PROTOCOLS["simple"].step
) -> int:
    """The chunk NCCL's CollNet Direct (``chain`` False) or CollNet Chain all-reduce moves for ``nbytes``
    on ``channels`` channels (``enqueue.cc``: calcCollChunking). Direct starts from a Simple step (512
    KiB) and halves while fewer than ``depth`` x 64 (down to 128 KiB), ``depth`` x 8 (64 KiB, then 32
    KiB) chunks go to each of the ``heads``; ``depth`` is 2 where a node has several GPUs, else 1
    (``connect.cc``: ``collnetDirect.depth``). Chain starts from 256 KiB and halves while fewer than
    ``depth`` x 64 (down to 128 KiB), ``depth`` x 8 (64 KiB), ``depth`` (32 KiB) chunks go to each
    channel; its ``depth`` is the GPUs per node (``connect.cc``: ``collnetChain.depth``). ``step``: the
    Simple step, NCCL_BUFFSIZE / NCCL_STEPS."""
    c = min(COLLNET_CHAIN_CHUNK, step) if chain else step
    rules = ((64, 131072), (8, 65536), (1, 32768)) if chain else ((64, 131072), (8, 65536), (8, 32768))
    return _halved(nbytes, channels * (1 if chain else heads), c, [(depth * t, above) for t, above in rules])


def tree_ll128_chunk(nbytes: float, channels: int, nodes: int, ppn: int) -> int:
    """The chunk NCCL's tree all-reduce moves with LL128 for ``nbytes`` on ``channels`` channels of
    ``nodes`` nodes of ``ppn`` GPUs (``enqueue.cc``: calcCollChunking / computeColl, the same in every
    release from 2.10.3 to 2.30.7): from LL128's step (576,000 B) it halves while a channel gets fewer
    than ``nstepsLL128`` x 64 / ppn chunks (down to 128 KiB), then fewer than ``nstepsLL128`` x 16 / ppn
    (down to 32 KiB), with ``nstepsLL128`` = 1 + log2(nodes) + 0.1 ppn: smaller buffers get smaller chunks,
    so that the tree's pipeline fills."""
    steps = 1 + (max(1, nodes).bit_length() - 1) + 0.1 * ppn  # log2i: the floor of log2
    rules = [(steps * t / ppn, above) for t, above in ((64, 131072), (16, 32768))]
    return _halved(nbytes, channels, PROTOCOLS["ll128"].step, rules)


def _halved(nbytes: float, per: int, chunk: int, rules: list[tuple[float, int]]) -> int:
    """``chunk`` halved, rule by rule, while ``nbytes`` makes fewer than ``least`` whole chunks for each
    of ``per`` (channels, or channels x heads) and the chunk is above ``floor`` (enqueue.cc's ``while
    (nBytes / (n * chunkSize) < X && chunkSize > F) chunkSize /= 2`` loops)."""
    for least, floor in rules:
        while nbytes // (per * chunk) < least and chunk > floor:
            chunk //= 2
    return chunk


def get_protocol(name: str) -> Protocol:
    """``ll``, ``ll128`` or ``simple`` (any case)."""
    try:
        return PROTOCOLS[name.lower()]
    except KeyError:
        raise KeyError(f"unknown NCCL protocol {name!r} (valid: LL, LL128, Simple)") from None
