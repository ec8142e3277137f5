"""What NCCL would run:
``nccl[:algo=ring|tree|collnet-direct|collnet-chain|nvls|nvls-tree,proto=ll|ll128|simple,version=2.26.2]``.

For each size, NCCL's tuner (:mod:`sim.nccl.tuner`, ported from ``tuning.cc`` and ``enqueue.cc``) picks
the algorithm, protocol and channel count on this topology; that schedule is then *simulated* on the
network -- :mod:`sim.nccl.rings` (``ring:channels=K``), :mod:`~sim.algorithms.nccl_tree`,
:mod:`~sim.algorithms.nvls` / :mod:`~sim.algorithms.nvls_tree`, :mod:`~sim.algorithms.collnet_direct` /
:mod:`~sim.algorithms.collnet_chain` -- with the protocol's bytes on the wire
(LL 2x, LL128 16/15x) and, before any data moves, NCCL's own latency estimate for that choice
(base + per-hop latencies, ``tuning.cc``; the newest modelled release's, whichever release picked:
:meth:`Nccl.charged`) as the collective's fixed cost -- under a calibration's link model corrected per
protocol (``nccl_offset``: added to the estimate less its NET hops; or ``nccl_latency``: in place of
it). ``algo`` and ``proto`` restrict
the choice as ``NCCL_ALGO`` / ``NCCL_PROTO`` do (``|`` separates several; ``^`` in front excludes).
``version`` picks the NCCL release whose tuner decides (``2.26.2``, or ``2.26`` for its last release;
:mod:`sim.nccl.versions`; default the newest modelled, 2.30.7). ``buffsize``, ``nvls_chunksize`` and
``nvlstree_max_chunksize`` are NCCL_BUFFSIZE, NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE (default
NCCL's, or those AWS's EFA plugin exports: :mod:`sim.nccl.efa`): the chunks the schedules move.

:meth:`Nccl.choice` gives the pick for a size, as ``NCCL_DEBUG=INFO`` would print it.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from ..errors import AlgorithmError
from ..nccl import agrs, bcred, p2p, tuner
from ..nccl.layout import host_ranks, run_program
from ..nccl.pipeline import pipelined_s
from ..nccl.protocols import get_protocol
from ..nccl.rings import chain_slices, direct_cycles, rings_chain_program, rings_gather_program, rings_program
from ..nccl.versions import NEWEST, Release, Tuning, parse_version, tuning_for
from ..program import StepProgram
from ..runtime import Job
from ..schema import PositiveSize, Spec
from .base import Algorithm
from .collnet_direct import collnet_direct_program
from .nccl_tree import rails, tree_program
from .nvls import nvls_gather_program, nvls_program
from .registry import register

__all__ = ["NCCL_ALGO_NAMES", "Nccl"]

#: NCCL_ALGO names (any case: ``CollNetDirect``, ``NVLSTree``) and the tuner's -> the tuner's names
NCCL_ALGO_NAMES = {name.lower(): a for a, name in tuner.NCCL_NAMES.items()} | {a: a for a in tuner.ALGORITHMS}
_PROTOS = {"ll": "ll", "ll128": "ll128", "simple": "simple"}


def _parse(value: str, names: dict[str, str], what: str) -> str:
    value = value.strip().lower()
    if value in ("", "auto"):
        return "auto"
    body = value[1:] if value.startswith("^") else value
    for item in body.split("|"):
        if item.strip() not in names:
            raise ValueError(f"unknown NCCL {what} {item.strip()!r} (valid: {', '.join(sorted(set(names)))}, auto)")
    return value


class NcclOptions(Spec):
    algo: str = "auto"
    proto: str = "auto"
    version: Release = NEWEST.last
    #: which of NCCL's per-channel caps besides NVLS-tree's (always applied) the simulated schedule applies:
    #: the ring's LL128 one (``ring``), the tree's (``tree``: perChMaxTreeBws and, with LL128,
    #: perChMaxTreeLL128Bws), both (``all``) or neither (``none``, the default: docs/nccl.md, "Per-channel caps
    #: of the ring and the tree", has why)
    caps: Literal["none", "ring", "tree", "all"] = "none"
    #: NCCL_BUFFSIZE, NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE (bytes; default NCCL's, or what the
    #: cluster's NET plugin exports: sim.nccl.efa.exported_env): the Simple step a tree moves and the chunks
    #: NVLS / NVLS-tree start from (sim.nccl.tuner.simple_step, nvls_chunks); NCCL's tuner reads none of them
    buffsize: PositiveSize | None = None
    nvls_chunksize: PositiveSize | None = None
    nvlstree_max_chunksize: PositiveSize | None = None
    #: slices in flight per connection of the pipelined schedules (tree, NVLS-tree, CollNet): NCCL_STEPS
    #: buffer slots hide a hop's latency behind the other slices (sim.nccl.pipeline.Streams._windowed);
    #: 1: every step pays its hops' latency in series
    slots: int = Field(1, ge=1, le=64)

    @field_validator("algo")
    @classmethod
    def _algo(cls, value: str) -> str:
        return _parse(value, NCCL_ALGO_NAMES, "algorithm")

    @field_validator("buffsize", "nvls_chunksize", "nvlstree_max_chunksize")
    @classmethod
    def _bytes(cls, value: float | None, info: Any) -> float | None:
        """Whole bytes in the range collsim accepts: a buffer of 256 KiB - 1 GiB (a Simple step of 32 KiB -
        128 MiB), NVLS chunks of 32 KiB (NVLS-tree's smallest) - 8 MiB."""
        low, high = (256 * 1024, 2**30) if info.field_name == "buffsize" else (32 * 1024, 8 * 2**20)
        if value is not None and not (low <= value <= high and value == int(value)):
            raise ValueError(f"{info.field_name} is whole bytes from {low} to {high}, not {value:g}")
        return value

    @field_validator("proto")
    @classmethod
    def _proto(cls, value: str) -> str:
        return _parse(value, _PROTOS, "protocol")


def _select(value: str, names: dict[str, str], universe: tuple[str, ...]) -> set[str] | None:
    if value == "auto":
        return None
    exclude = value.startswith("^")
    chosen = {names[x.strip()] for x in value.lstrip("^").split("|")}
    return set(universe) - chosen if exclude else chosen


def _ring_cap(cluster: Any, p: int, c: tuner.Candidate, tuning: Tuning, caps: str) -> float:
    """The busBw (bytes/s) NCCL's per-channel cap allows the ring pick ``c`` where the ``caps`` option
    applies the ring's (LL128: perChMaxRingLL128Bws times the ring's channels, of ``tuning``'s release:
    :func:`~sim.nccl.tuner.ring_ll128_cap`); ``inf`` for the other protocols, or with the cap off."""
    if c.protocol != "ll128" or caps not in ("ring", "all"):
        return math.inf
    return tuner.ring_ll128_cap(tuner.describe(cluster, p), tuning)


def _ring_channels(cluster: Any, p: int, c: tuner.Candidate) -> tuple[int, float]:
    """The rings the simulation lays out for NCCL's ring pick ``c`` -- one per GPU of a host, or per rail
    where there are more, or one per ring of a host whose GPUs are linked directly (:func:`direct_cycles`:
    NCCL's six rings of a 4-GPU board) -- and the protocol's bytes on the wire per byte of data."""
    groups = host_ranks(cluster, p)
    k = max(len(groups[0]), len(rails(cluster, groups)) if len(groups) > 1 else 1, len(direct_cycles(cluster, groups)))
    return k, 1.0 / get_protocol(c.protocol).payload


@register
class Nccl(Algorithm):
    name = "nccl"
    collective = "allreduce"
    Options = NcclOptions
    summary = "the algorithm, protocol and channels NCCL's tuner picks per size, simulated on the network"
    examples = ("nccl:algo=ring", "nccl:algo=tree,proto=ll128", "nccl:version=2.26.2")
    options: NcclOptions
    #: NCCL_ALGO names this collective's ``algo`` option takes, and every algorithm ``^...`` excludes from
    algo_names: ClassVar[dict[str, str]] = NCCL_ALGO_NAMES
    universe: ClassVar[tuple[str, ...]] = tuner.ALGORITHMS

    # -- the tuner of this collective (all-reduce: sim.nccl.tuner; all-gather / reduce-scatter override)
    def _enabled(self, sys: tuner.System, graphs: dict[str, tuner.Graph], tuning: Tuning) -> set[str]:
        return tuner.enabled(sys, graphs, tuning)

    def _refusal(self, sys: tuner.System, graphs: dict[str, tuner.Graph], a: str, tuning: Tuning) -> str:
        return f"nccl: algorithm {a} {tuner.disabled(sys, graphs, a, tuning)}"

    def _candidates(self, sys: tuner.System, nbytes: float, algos: set[str], protos: set[str]) -> list[Any]:
        """The newest release's candidates (what :meth:`charged` charges)."""
        return tuner.candidates(sys, nbytes, algos, protos)

    def _pick(self, sys: tuner.System, nbytes: float, algos: Any, protos: Any, tuning: Tuning) -> tuner.Candidate:
        return tuner.pick(sys, nbytes, algos, protos, tuning)

    def _system(self, p: int, cluster: Any) -> tuple[tuner.System, set[str] | None, set[str] | None]:
        sys = tuner.describe(cluster, p)
        algos = _select(self.options.algo, self.algo_names, self.universe)
        protos = _select(self.options.proto, _PROTOS, tuner.PROTOS)
        tuner.platform_protocols(sys, protos)  # a protocol the NET plugin turns off: refused here, once
        if algos is not None:
            tuning = self.tuner_release()[0]
            graphs = tuner.search(sys, tuning)
            allowed = self._enabled(sys, graphs, tuning)
            for a in sorted(algos - allowed):
                if self.options.algo.startswith("^"):
                    continue
                raise AlgorithmError(f"{self._refusal(sys, graphs, a, tuning)}; {self._cannot(cluster, p)}")
            algos = algos & allowed
        return sys, algos, protos

    def _cannot(self, cluster: Any, p: int) -> str:
        return f"{cluster.name} with {p} ranks cannot run it"

    def check(self, p: int, cluster: Any) -> None:
        host_ranks(cluster, p)
        if p > 1:
            self._system(p, cluster)

    def tuner_release(self) -> tuple[Tuning, str]:
        """The :class:`~sim.nccl.versions.Tuning` of the ``version`` option and its one-line description
        (``2.26.2 (as 2.25.1-2.27.7)``; a release older than the modelled ones says which it is run as)."""
        return tuning_for(parse_version(self.options.version))

    def choice(self, p: int, nbytes: float, cluster: Any) -> tuner.Candidate:
        """NCCL's pick for ``nbytes`` on ``p`` ranks of ``cluster``, by the tuner of the ``version`` option
        (its ``tuner`` field describes the release)."""
        sys, algos, protos = self._system(p, cluster)
        tuning, described = self.tuner_release()
        return replace(self._pick(sys, nbytes, algos, protos, tuning), tuner=described)

    def closed_form_exact(self, p: int) -> bool:
        return False

    def charged(self, p: int, nbytes: float, cluster: Any, c: tuner.Candidate) -> tuner.Candidate:
        """The estimate whose latency the choice ``c`` is charged: NCCL's estimate for that algorithm and
        protocol by the newest modelled release, whichever release picked it. The release decides what
        runs; the latencies charged are the hardware's, which NCCL's newest tables measure best (2.28.9
        raised NVLSTree's NET hop from 14 to 20.9 us). docs/nccl.md, "Releases", has the measurements."""
        if self.tuner_release()[0] is NEWEST:
            return c
        sys = tuner.describe(cluster, p)
        return next(iter(self._candidates(sys, nbytes, {c.algorithm}, {c.protocol})), c)

    def fixed_cost(self, p: int, nbytes: float, cluster: Any, c: tuner.Candidate) -> float:
        """Seconds paid before any data of the choice ``c`` moves: the :meth:`charged` estimate's latency --
        or, under a link model with ``nccl_offset`` (a calibration), the estimate less its network hops
        plus that correction per protocol (at least 0), then the hops; with ``nccl_latency``, that fixed
        cost per protocol in place of the estimate less its hops."""
        e = self.charged(p, nbytes, cluster, c)
        model = getattr(cluster, "link_model", None)
        fitted = getattr(model, "nccl_latency", {}).get(c.protocol)
        offset = getattr(model, "nccl_offset", {}).get(c.protocol)
        # a NET plugin's latencyInter steers NCCL's choice and is not charged (the links carry the network's
        # latency: sim.nccl.efa); 0 for NCCL's own InfiniBand transport
        hops = (e.net_latency_us - e.plugin_latency_us) * 1e-6
        if fitted is not None:  # a calibrated fixed cost in place of NCCL's estimate, its network hops kept
            return fitted + hops
        if offset is not None:  # NCCL's estimate less its hops, corrected by the calibration (never below 0)
            return hops + max(0.0, (e.latency_us - e.net_latency_us) * 1e-6 + offset)
        return (e.latency_us - e.plugin_latency_us) * 1e-6

    def settings(self, p: int, cluster: Any) -> tuner.System:
        """:func:`~sim.nccl.tuner.describe` of ``p`` ranks of ``cluster`` with the NCCL settings the options
        set (``buffsize``, ``nvls_chunksize``, ``nvlstree_max_chunksize``) in place of the NET plugin's."""
        sys = tuner.describe(cluster, p)
        o = self.options
        given = {
            k: int(v)
            for k, v in (
                ("buffsize", o.buffsize),
                ("nvls_chunksize", o.nvls_chunksize),
                ("nvlstree_max_chunksize", o.nvlstree_max_chunksize),
            )
            if v is not None
        }
        return replace(sys, **given) if given else sys

    def _build(self, p: int, nbytes: float, cluster: Any) -> tuple[StepProgram, int]:
        c = self.choice(p, nbytes, cluster)
        launch = self.fixed_cost(p, nbytes, cluster, c)
        tuning = self.tuner_release()[0]
        slots = self.options.slots
        if c.algorithm == "ring":
            k, wire = _ring_channels(cluster, p, c)
            cap = _ring_cap(cluster, p, c, tuning, self.options.caps)
            return rings_program(cluster, p, nbytes, k, wire, launch, cap), k * p
        if c.algorithm == "tree":
            capped = tuning if self.options.caps in ("tree", "all") else None
            return tree_program(
                cluster, p, nbytes, 0, c.protocol, launch, tuning=capped, sys=self.settings(p, cluster), slots=slots
            )
        if c.algorithm == "collnet-chain":
            return tree_program(
                cluster, p, nbytes, 0, c.protocol, launch, sharp=True, sys=self.settings(p, cluster), slots=slots
            )
        if c.algorithm == "collnet-direct":
            return collnet_direct_program(cluster, p, nbytes, launch, slots)
        sys = self.settings(p, cluster)
        return nvls_program(cluster, p, nbytes, launch, c.algorithm == "nvls", tuning, sys, slots)

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        if p == 1:
            return None
        return self._build(p, nbytes, cluster)[0]

    def run(self, job: Job) -> Generator[Any, Any, None]:
        if job.p > 1:
            program, segments = self._build(job.p, job.nbytes, job.net.cluster)
            yield from run_program(job, program, segments)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma


#: NCCL_ALGO names for all-gather and reduce-scatter: the all-reduce's and PAT
GATHER_ALGO_NAMES = NCCL_ALGO_NAMES | {"pat": "pat"}


class NcclGatherOptions(NcclOptions):
    @field_validator("algo")
    @classmethod
    def _algo(cls, value: str) -> str:  # (overrides the all-reduce's: PAT too)
        return _parse(value, GATHER_ALGO_NAMES, "algorithm")


class _NcclGathering(Nccl):
    """``nccl`` for all-gather and reduce-scatter: NCCL's tuner for that collective
    (:mod:`sim.nccl.agrs`), the pick simulated where collsim builds its schedule -- the ring, with NCCL's
    channels and the protocol's bytes on the wire (:func:`sim.nccl.rings.rings_gather_program`), and NVLS
    on one host (:func:`~sim.algorithms.nvls.nvls_gather_program`). A pick of NVLS across hosts,
    CollNetDirect or PAT is priced and printed but not simulated: the run is refused with one line naming
    it (``nccl:algo=ring`` forces the ring)."""

    Options = NcclGatherOptions
    examples = ("nccl:algo=ring", "nccl:algo=ring,proto=ll128", "nccl:version=2.22.3")
    #: a star has one GPU a host, where NCCL picks PAT for small sizes (not built, so refused):
    #: tests/test_nccl_agrs.py runs the oracle on the examples
    star_oracle: ClassVar[bool] = False
    options: NcclGatherOptions  # type: ignore[assignment]

    algo_names: ClassVar[dict[str, str]] = GATHER_ALGO_NAMES

    def _release(self) -> tuple[int, int, int]:
        return parse_version(self.options.version)

    universe: ClassVar[tuple[str, ...]] = agrs.AGRS_ALGORITHMS + tuner.ALGORITHMS

    def _enabled(self, sys: tuner.System, graphs: dict[str, tuner.Graph], tuning: Tuning) -> set[str]:
        return agrs.enabled(sys, graphs, tuning, self._release())

    def _refusal(self, sys: tuner.System, graphs: dict[str, tuner.Graph], a: str, tuning: Tuning) -> str:
        return f"nccl: algorithm {agrs.NCCL_NAMES.get(a, a)} {agrs.disabled(sys, graphs, a, tuning, self._release())}"

    def _cannot(self, cluster: Any, p: int) -> str:
        return f"{cluster.name} with {p} ranks cannot run its {self.collective}"

    def _candidates(self, sys: tuner.System, nbytes: float, algos: set[str], protos: set[str]) -> list[Any]:
        return agrs.candidates(sys, nbytes, algos, protos)

    def _pick(self, sys: tuner.System, nbytes: float, algos: Any, protos: Any, tuning: Tuning) -> tuner.Candidate:
        return agrs.pick(sys, nbytes, algos, protos, tuning, self._release())

    def builds(self, p: int, nbytes: float, cluster: Any) -> bool:
        """Whether NCCL's pick for ``nbytes`` is a schedule collsim builds (the ring; NVLS on one host), i.e.
        whether a run of this size is simulated rather than refused."""
        if p < 2:
            return True
        a = self.choice(p, nbytes, cluster).algorithm
        return a == "ring" or (a == "nvls" and len(host_ranks(cluster, p)) == 1)

    def _build(self, p: int, nbytes: float, cluster: Any) -> tuple[StepProgram, int]:
        c = self.choice(p, nbytes, cluster)
        if c.algorithm == "nvls" and len(host_ranks(cluster, p)) == 1:  # one host: the NVSwitch multicasts
            launch = self.fixed_cost(p, nbytes, cluster, c)
            return nvls_gather_program(cluster, p, nbytes, self.collective, launch, self.tuner_release()[0])
        if c.algorithm != "ring":
            name = f"{agrs.NCCL_NAMES[c.algorithm]}/{get_protocol(c.protocol).name}"
            raise AlgorithmError(
                f"nccl: NCCL {c.tuner} picks {name} for this {self.collective} of {nbytes:.0f} bytes, whose "
                f"schedule collsim does not build; nccl:algo=ring simulates the ring instead"
            )
        k, wire = _ring_channels(cluster, p, c)
        launch = self.fixed_cost(p, nbytes, cluster, c)
        cap = _ring_cap(cluster, p, c, self.tuner_release()[0], self.options.caps)
        return rings_gather_program(cluster, p, nbytes, k, self.collective, wire, launch, cap), k * p

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        reduce = gamma if self.collective == "reducescatter" else 0.0
        return (p - 1) * alpha + (p - 1) / p * n * (beta + reduce)


@register
class NcclAllGather(_NcclGathering):
    name = "nccl"
    collective = "allgather"
    summary = (
        "the algorithm, protocol and channels NCCL's tuner picks for all-gather (Ring, NVLS on one host simulated)"
    )


@register
class NcclReduceScatter(_NcclGathering):
    name = "nccl"
    collective = "reducescatter"
    summary = (
        "the algorithm, protocol and channels NCCL's tuner picks for reduce-scatter (Ring, NVLS on one host simulated)"
    )


class NcclChainOptions(NcclGatherOptions):
    @field_validator("caps")
    @classmethod
    def _caps(cls, value: str) -> str:
        if value != "none":  # (the chain's program has no per-channel cap to apply)
            raise ValueError(
                "NCCL's per-channel caps are applied to the all-reduce, all-gather and reduce-scatter schedules, "
                "not to broadcast's or reduce's chain: leave caps out"
            )
        return value


class _NcclChain(Nccl):
    """``nccl`` for broadcast and reduce: NCCL's tuner for that collective (:mod:`sim.nccl.bcred`: the
    ring, the protocol priced per size), simulated as NCCL runs it -- a chain along each channel's ring,
    from the root (broadcast) or ending at it (reduce), in NCCL's chunks (the protocol's step), over the
    all-reduce ring's channels and actors (:func:`sim.nccl.rings.rings_chain_program`), NCCL's estimate
    at one hop's latency (:meth:`charged`) charged before the data moves. ``algo`` takes NCCL_ALGO's names and refuses any but Ring in one line.

    The step program depends on the root, which :meth:`program` is not given: :meth:`dataflow` (which
    the simulation asks next, with the root) returns it, and :meth:`program` returns None."""

    Options = NcclChainOptions
    examples = ("nccl:algo=ring", "nccl:proto=ll128", "nccl:version=2.20.5")
    options: NcclChainOptions  # type: ignore[assignment]
    algo_names: ClassVar[dict[str, str]] = GATHER_ALGO_NAMES
    universe: ClassVar[tuple[str, ...]] = tuner.ALGORITHMS + ("pat",)

    def _enabled(self, sys: tuner.System, graphs: dict[str, tuner.Graph], tuning: Tuning) -> set[str]:
        return set(bcred.BCRED_ALGORITHMS)

    def _refusal(self, sys: tuner.System, graphs: dict[str, tuner.Graph], a: str, tuning: Tuning) -> str:
        return f"nccl: algorithm {agrs.NCCL_NAMES.get(a, a)} {bcred.disabled(sys, graphs, a, tuning)}"

    def _cannot(self, cluster: Any, p: int) -> str:
        return f"{cluster.name} with {p} ranks cannot run its {self.collective}"

    def _candidates(self, sys: tuner.System, nbytes: float, algos: set[str], protos: set[str]) -> list[Any]:
        return bcred.candidates(self.collective, sys, nbytes, algos, protos)

    def _pick(self, sys: tuner.System, nbytes: float, algos: Any, protos: Any, tuning: Tuning) -> tuner.Candidate:
        return bcred.pick(self.collective, sys, nbytes, algos, protos, tuning)

    def charged(self, p: int, nbytes: float, cluster: Any, c: tuner.Candidate) -> tuner.Candidate:
        """The newest release's estimate for the choice ``c`` (:meth:`Nccl.charged`) at one hop's latency
        (:func:`sim.nccl.bcred.chunked`): the chain's fill is simulated, not charged first."""
        return bcred.chunked(super().charged(p, nbytes, cluster, c))

    def _chunk(self, p: int, cluster: Any, c: tuner.Candidate) -> int:
        """NCCL's chunk of the pick ``c`` (bytes of data): the protocol's step -- Simple's NCCL_BUFFSIZE /
        NCCL_STEPS (the ``buffsize`` option or the NET plugin's setting, else 512 KiB), LL's 32 KiB,
        LL128's 576,000 B (``enqueue.cc``: calcCollChunking, BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1)."""
        if c.protocol == "simple":
            return tuner.simple_step(self.settings(p, cluster))
        return get_protocol(c.protocol).step

    def chain(self, p: int, nbytes: float, cluster: Any, root: int = 0) -> tuple[StepProgram, int]:
        """The step program of NCCL's pick for ``nbytes`` with root ``root``, and its data-check segments."""
        c = self.choice(p, nbytes, cluster)
        k, wire = _ring_channels(cluster, p, c)
        launch = self.fixed_cost(p, nbytes, cluster, c)
        chunk = self._chunk(p, cluster, c)
        return rings_chain_program(
            cluster, p, nbytes, k, self.collective, root, chunk, wire, launch, self.options.slots
        )

    def program(self, p: int, nbytes: float, cluster: Any = None) -> StepProgram | None:
        return None  # (the root's: :meth:`dataflow`)

    def dataflow(self, p: int, nbytes: float, cluster: Any = None, root: int = 0) -> StepProgram | None:  # type: ignore[override]
        if p == 1:
            return None
        return self.chain(p, nbytes, cluster, root)[0]

    def run(self, job: Job) -> Generator[Any, Any, None]:
        if job.p > 1:
            program, segments = self.chain(job.p, job.nbytes, job.net.cluster, job.root)
            yield from run_program(job, program, segments)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        """One chain (one GPU a host, one NIC), Simple's 512 KiB chunks, one in flight: p - 1 hops, then a
        chunk a hop -- each hop α + (n/M)(β + γ for reduce), M = ⌈n / 512 KiB⌉ chunks (:func:`chain_s`).
        Without the fixed cost charged first (:meth:`fixed_cost`), so not the simulated time."""
        return chain_s(p, n, alpha, beta, gamma if self.collective == "reduce" else 0.0)


def chain_s(
    p: int, n: float, alpha: float, beta: float, gamma: float = 0.0, chunk: float = 512 * 1024, slots: int = 1
) -> float:
    """The closed form of NCCL's chain over ``p`` ranks alone on its links (a star, one channel): ``n``
    bytes in M = :func:`~sim.nccl.rings.chain_slices` chunks, each hop α + (n/M)(β + γ) (γ: the
    reduce's, 0 for broadcast), ``slots`` in flight (:func:`~sim.nccl.pipeline.pipelined_s`)."""
    if p < 2:
        return 0.0
    m = chain_slices(n, chunk)
    return pipelined_s(p - 1, m, alpha, n / m * (beta + gamma), slots)


@register
class NcclBroadcast(_NcclChain):
    name = "nccl"
    collective = "broadcast"
    summary = "NCCL's ring broadcast: the protocol its tuner picks per size, a chain from the root per channel"


@register
class NcclReduce(_NcclChain):
    name = "nccl"
    collective = "reduce"
    summary = "NCCL's ring reduce: the protocol its tuner picks per size, a chain to the root per channel"


class NcclP2pOptions(Spec):
    """``nccl`` for all-to-all and send/recv: NCCL_ALGO / NCCL_PROTO do not apply (``algo`` / ``proto`` other
    than ``auto`` are refused in one line); ``pxn=false`` is NCCL_PXN_DISABLE=1, ``ll_threshold``
    NCCL_P2P_LL_THRESHOLD, ``buffsize`` NCCL_BUFFSIZE (Simple's buffer: the p2p chunk is at most an eighth)."""

    algo: str = "auto"
    proto: str = "auto"
    version: Release = NEWEST.last
    pxn: bool = True
    ll_threshold: int = Field(p2p.LL_THRESHOLD, ge=0, le=2**30)
    buffsize: PositiveSize | None = None

    @field_validator("algo", "proto")
    @classmethod
    def _auto(cls, value: str, info: Any) -> str:
        if value.strip().lower() not in ("", "auto"):
            what = "NCCL_ALGO" if info.field_name == "algo" else "NCCL_PROTO"
            raise ValueError(
                f"{what} does not apply to NCCL's send/recv path (enqueue.cc: one p2p kernel, LL below "
                "NCCL_P2P_LL_THRESHOLD, else Simple): leave it out (ll_threshold=0 forces Simple)"
            )
        return "auto"

    @field_validator("buffsize")
    @classmethod
    def _bytes(cls, value: float | None) -> float | None:
        if value is not None and not (256 * 1024 <= value <= 2**30 and value == int(value)):
            raise ValueError(f"buffsize is whole bytes from {256 * 1024} to {2**30}, not {value:g}")
        return value


class _NcclP2p(Nccl):
    """``nccl`` for all-to-all and send/recv: NCCL's p2p path (:mod:`sim.nccl.p2p`) -- the channels and
    protocol ``addP2pToPlan`` gives each send, PXN where NCCL relays a send between hosts -- simulated as
    one group: every send a message posted at once, sharing links max-min, after a fixed cost of one Ring
    hop (NCCL's tuner prices no p2p)."""

    Options = NcclP2pOptions
    examples = ("nccl:pxn=false", "nccl:version=2.26.2")
    options: NcclP2pOptions  # type: ignore[assignment]

    def check(self, p: int, cluster: Any) -> None:
        host_ranks(cluster, p)

    def segments(self, p: int) -> int:
        return p * p if self.collective == "alltoall" else 1

    def settings(self, p: int, cluster: Any) -> tuner.System:
        sys = tuner.describe(cluster, p)
        b = self.options.buffsize
        return replace(sys, buffsize=int(b)) if b is not None else sys

    def _plan(self, p: int, nbytes: float, cluster: Any) -> tuple[p2p.P2pPick, list[Any], p2p.Setup]:
        tuning, described = self.tuner_release()
        nvswitch = bool(cluster.graph.graph.get("nvswitch", True))
        s = p2p.setup(
            self.settings(p, cluster), parse_version(self.options.version), nvswitch, self.options.pxn, tuning
        )
        pick, sends = p2p.plan(cluster, p, nbytes, self.collective, s, self.options.ll_threshold, NEWEST, described)
        return pick, sends, s

    def choice(self, p: int, nbytes: float, cluster: Any) -> p2p.P2pPick:  # type: ignore[override]
        """NCCL's plan of the group for ``nbytes`` (:func:`sim.nccl.p2p.plan`)."""
        return self._plan(p, nbytes, cluster)[0]

    def charged(self, p: int, nbytes: float, cluster: Any, c: tuner.Candidate) -> tuner.Candidate:
        return c  # (priced with the newest release's hop latencies already)

    def _build(self, p: int, nbytes: float, cluster: Any) -> tuple[StepProgram, int]:
        pick, sends, s = self._plan(p, nbytes, cluster)
        launch = self.fixed_cost(p, nbytes, cluster, pick)
        return p2p.p2p_program(cluster, p, sends, nbytes, self.collective, s.pxn, launch)

    def cost(self, p: int, n: float, alpha: float, beta: float, gamma: float = 0.0) -> float:
        """Every send at once on a star (one GPU a host): each host's link carries its p - 1 blocks of n/p
        (all-to-all), or its one buffer of n (send/recv): α + (p-1)/p · n · β, α + n · β. Without the fixed
        cost charged first (:meth:`fixed_cost`), so not the simulated time."""
        if p < 2:
            return 0.0
        return alpha + ((p - 1) / p * n if self.collective == "alltoall" else n) * beta


@register
class NcclAllToAll(_NcclP2p):
    name = "nccl"
    collective = "alltoall"
    summary = "NCCL's p2p all-to-all: every send at once on its channels and protocol, PXN between hosts"


@register
class NcclSendRecv(_NcclP2p):
    name = "nccl"
    collective = "sendrecv"
    summary = "NCCL's p2p send/recv (rank+1): its channels and protocol, PXN between hosts"
