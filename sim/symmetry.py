"""Symmetric step programs run on one representative of every orbit (the fast path's quotient).

NCCL's channels are copies of one another moved across the rails: channel ``c + 1`` is channel ``c``
with every GPU index of a host shifted by one (its own NIC, its own rail), and an NVLS head ``q + 1``
is head ``q`` shifted the same way. A program builder states such a shift as a permutation ``σ`` of the
endpoints (:attr:`sim.program.StepProgram.symmetry`). When the shift maps the program onto itself and
the cluster onto itself -- every step's messages onto messages of the same step with the same bytes,
reductions and rate bounds, every route onto the route of the shifted pair link by link, links onto
links of the same capacity and latency, senders onto senders of the same per-message overhead and
processor speed -- the whole run is symmetric: the max-min fair rates are unique, so flows that are
images of one another always have the same rate, start and end at the same instants, and endpoints
that are images of one another go through their steps at the same instants.

So the run needs one member of every orbit. With ``n`` the order of ``σ``, the kept endpoints are the
smallest of every orbit of ``n`` endpoints and the endpoints ``σ`` fixes (an NVSwitch's engines); the
kept messages are those between kept endpoints -- one of every orbit of ``n`` messages, which is
checked, as is that a kept endpoint loses none of its messages. A link direction ``a`` stands for its
orbit: the flows crossing it in the whole run are the images of the kept flows crossing any direction
of the orbit, each once when ``σ`` moves ``a`` (a kept route must then cross each orbit at most once)
and ``n / |orbit|`` times when some power of ``σ`` fixes it (two channels on the same links: the
orbit's capacity is divided by that count). Max-min fairness over the kept flows, their routes written
on the orbits' representatives with those capacities, gives every kept flow the rate it has in the
whole run, and the executor's steps the same times. Bytes and flows are booked back on every image's
route at the end, so the run's link bytes, rank bytes and flow count are the whole program's.

Anything that does not check out -- a shift that is not a symmetry, a link model with link classes or
shared capacities, stragglers off the orbits -- runs the whole program, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from ._arrays import all_distinct, distinct
from .cluster import _PathTable
from .msgmodel import MessageModel
from .program import Step, StepProgram
from .rates import gather_arcs

__all__ = ["Quotient", "quotient"]

_MAX_ORDER = 64  # the largest order of a shift that is looked at
_MAX_TRANSLATION = 1024  # the largest order of a further shift (a ring's leaf groups: 64 at 16k GPUs)


class _QuotientCluster:
    """The cluster as the quotient run sees it: its own path table (routes on the orbits'
    representatives) and capacities (divided by the orbits' fixed counts), and its endpoints, the kept
    ones numbered from 0 (``ids``: each one's endpoint in the cluster), with their overheads and speeds;
    everything else is the cluster's."""

    def __init__(self, base: Any, paths: _PathTable, capacity: np.ndarray, ids: np.ndarray) -> None:
        self._base = base
        self.paths = paths
        self.capacity = capacity
        self.overhead = base.overhead[ids]
        self.compute_scale = base.compute_scale[ids]
        self.message_model = MessageModel(self)  # type: ignore[arg-type] - the nominal model (checked)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def path_id(self, src: int, dst: int) -> int:
        raise RuntimeError("quotient run: a route that was not prepared")

    path_ids = path_id  # type: ignore[assignment]


@dataclass
class Quotient:
    """A program's run on one member of every orbit (see the module docstring): ``program`` over
    ``cluster`` (a view of the original cluster), then :meth:`rebook` on the network it ran on."""

    program: StepProgram
    cluster: Any
    base: Any
    order: int  # the group's
    real_pid: np.ndarray  # the original route of each quotient route
    #: per generator: (original route -> the route of its image under it (-1: unused), its order)
    images: list[tuple[np.ndarray, int]]
    ids: np.ndarray  # each endpoint of :attr:`program`: its endpoint in the original program

    def rebook(self, net: Any) -> None:
        """Give ``net`` (which ran :attr:`program` over :attr:`cluster`) the original cluster back, with
        the bytes of every image of every kept message booked on its own route, and all the flows."""
        quotient_bytes = net.path_bytes()
        full = np.zeros(self.base.paths.count)
        pids = [self.real_pid[: len(quotient_bytes)].copy()]
        for image_pid, n in self.images:  # every element of the group: the generators' powers in turn
            more = []
            for pid in pids:
                for _ in range(n):
                    more.append(pid)
                    pid = image_pid[pid]
            pids = more
        for pid in pids:
            np.add.at(full, pid, quotient_bytes)
        net.rebook(self.base, full, net.flows * self.order)


def _order(perm: np.ndarray, most: int = _MAX_ORDER) -> int:
    """The order of the permutation ``perm`` (0 when above ``most``)."""
    ident = np.arange(len(perm))
    cur = perm.copy()
    for k in range(1, most + 1):
        if np.array_equal(cur, ident):
            return k
        cur = perm[cur]
    return 0


def _orbit_min(perm: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """(the smallest member of every element's orbit, the orbit's size) under ``perm`` of ``order``."""
    ident = np.arange(len(perm))
    low = ident.copy()
    size = np.full(len(perm), order, dtype=np.int64)
    cur = ident
    for k in range(1, order):
        cur = perm[cur]
        np.minimum(low, cur, out=low)
        back = (cur == ident) & (size == order)
        size[back] = k
    return low, size


def quotient(program: StepProgram, cluster: Any, gamma: float) -> Quotient | None:
    """The quotient run of ``program`` on ``cluster`` under its shift ``σ`` -- or, where ``σ`` is not
    a symmetry of the run, under the largest group of its powers ``σ^d`` that is (an ECMP fabric may
    send rail ``q`` and rail ``q + 1`` over different spines, while two channels on one rail share
    every route) -- together with the further shifts the builder states (a ring's translation by a leaf
    group, :func:`_translations`) where they check out too; None where there is none (see the module
    docstring)."""
    stated = getattr(program, "symmetry", None)
    model = cluster.message_model
    if stated is None or model.shares or model.link_model.classes:
        return None
    sigma, *others = stated if isinstance(stated, tuple) else (stated,)
    e = program.endpoints
    sigma = _permutation(program, cluster, gamma, sigma)
    n = 0 if sigma is None else _order(sigma)
    images, borrowed, whole = _images(program, sigma if n >= 2 else np.arange(e))  # type: ignore[arg-type]
    if n < 2 or any(image is None for image in images):
        n = 0  # no channel shift: the further shifts alone, if any
    net = SimpleNamespace(cluster=cluster)  # routes are interned as a network over the cluster finds them
    pids = [
        step.pids(net) if len(step) and key is None else np.zeros(0, dtype=np.int64)
        for (step, _), key in zip(program.phases, borrowed, strict=True)
    ]
    extra = _translations(program, cluster, gamma, others, sigma if n else None, net, pids, e)
    power, moved = sigma, images
    whole_moved = {key: edge_image for key, (_, edge_image, _) in whole.items()}
    for d in range(1, n // 2 + 1):
        if n % d == 0:
            first = (power, n // d, _pairs(net, pids, moved, whole, whole_moved))
            for gens in ([first, *extra], [first]) if extra else ([first],):
                got = _quotient(program, cluster, gens, gamma)
                if got is not None:
                    return got
        power = sigma[power]  # type: ignore[index]
        moved = [image[m] for image, m in zip(images, moved, strict=True)]  # type: ignore[index]
        whole_moved = {key: whole[key][1][m] for key, m in whole_moved.items()}
    return _quotient(program, cluster, extra, gamma) if extra else None


def _permutation(program: StepProgram, cluster: Any, gamma: float, perm: Any) -> np.ndarray | None:
    """``perm`` as an array where it is a permutation of the endpoints that keeps the senders' overheads
    and (where reductions take time) the endpoints' speeds, else None."""
    e = program.endpoints
    perm = np.asarray(perm, dtype=np.int64)
    if len(perm) != e or not np.array_equal(np.sort(perm), np.arange(e)):
        return None
    if not np.array_equal(cluster.overhead[:e][perm], cluster.overhead[:e]):
        return None
    if gamma > 0 and not np.array_equal(cluster.compute_scale[:e][perm], cluster.compute_scale[:e]):
        return None
    return perm


def _translations(
    program: StepProgram,
    cluster: Any,
    gamma: float,
    others: list[Any],
    sigma: np.ndarray | None,
    net: Any,
    pids: list[np.ndarray],
    e: int,
) -> list[tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray] | None]]:
    """The further shifts a builder states beside ``σ`` (a ring's translation by one leaf group of hosts:
    host ``h`` onto ``h + hosts_per_leaf``), each as (permutation, order, :func:`_pairs`), where each is a
    permutation of order 2.. :data:`_MAX_TRANSLATION` that commutes with ``σ`` (None: no channel shift) and
    with the others and maps every step onto itself; [] where one does not (the quotient then takes
    ``σ``'s group alone)."""
    out = []
    for other in others:
        tau = _permutation(program, cluster, gamma, other)
        if tau is None or (sigma is not None and not np.array_equal(sigma[tau], tau[sigma])):
            return []
        if any(not np.array_equal(t[tau], tau[t]) for t, _, _ in out):
            return []
        n = _order(tau, _MAX_TRANSLATION)
        images, _, whole = _images(program, tau)
        if n < 2 or any(image is None for image in images):
            return []
        out.append((tau, n, _pairs(net, pids, images, whole, {key: w[1] for key, w in whole.items()})))
    return out


def _pairs(
    net: Any,
    pids: list[np.ndarray],
    moved: list[np.ndarray],
    whole: dict[int, tuple[Step, np.ndarray, np.ndarray]],
    whole_moved: dict[int, np.ndarray],
) -> tuple[np.ndarray, np.ndarray] | None:
    """(route, image's route) pairs of every message (None where there is none): a step's own, or, for
    steps that are rows of a bigger one (``whole``: its images and the rows they use), that one's rows
    once -- the same pairs, each once rather than once a step (:func:`_links` reads the set of pairs)."""
    firsts = [p for p in pids if len(p)]
    seconds = [p[image] for p, image in zip(pids, moved, strict=True) if len(p)]
    for key, (edges, _, used) in whole.items():
        rows = np.flatnonzero(used)
        edge_pids = edges.pids(net)
        firsts.append(edge_pids[rows])
        seconds.append(edge_pids[whole_moved[key][rows]])
    if not firsts:
        return None
    return np.concatenate(firsts), np.concatenate(seconds)


def _images(
    program: StepProgram, sigma: np.ndarray
) -> tuple[list[np.ndarray | None], list[int | None], dict[int, tuple[Step, np.ndarray, np.ndarray]]]:
    """:func:`_image` of every step; which bigger step's images each one's come from (its key, or None);
    and those steps by key: (the step, its images, the rows of it the steps use). A step whose messages
    are rows of a bigger one whose (sender, receiver) pairs are distinct (:attr:`~sim.program.Step.routes_of`:
    NCCL's slices of its edges) takes its images from that one's, found once: a message's image is the
    row of the pair it moves to, where the step holds that row."""
    images: list[np.ndarray | None] = []
    borrowed: list[int | None] = []
    found: dict[int, tuple[np.ndarray | None, np.ndarray]] = {}
    whole: dict[int, tuple[Step, np.ndarray, np.ndarray]] = {}
    for step, _ in program.phases:
        borrowed.append(None)
        if not len(step):
            images.append(np.zeros(0, dtype=np.int64))
            continue
        if step.routes_of is None:
            images.append(_image(step, sigma))
            continue
        edges, rows = step.routes_of
        key = id(edges)
        got = found.get(key)
        if got is None:
            distinct_pairs = all_distinct(edges.src * edges.endpoints + edges.dst)
            found[key] = got = (
                _image(edges, sigma) if distinct_pairs else None,
                np.full(len(edges), -1, dtype=np.int64),
            )
        edge_image, at = got
        if edge_image is None:
            images.append(_image(step, sigma))
            continue
        at[rows] = np.arange(len(rows))  # (scratch: each row's place in the step, -1 elsewhere)
        image = at[edge_image[rows]]
        at[rows] = -1
        images.append(None if (image < 0).any() else _same(step, image))
        if key not in whole:
            whole[key] = (edges, edge_image, np.zeros(len(edges), dtype=bool))
        whole[key][2][rows] = True
        borrowed[-1] = key
    return images, borrowed, whole


def _same(step: Step, image: np.ndarray) -> np.ndarray | None:
    """``image`` where every message's image has its bytes, reduction and rate bound, else None."""
    same = (
        np.array_equal(step.nbytes[image], step.nbytes)
        and np.array_equal(step.reduce[image], step.reduce)
        and (step.bound is None or np.array_equal(step.bound[image], step.bound))
    )
    return image if same else None


def _image(step: Step, sigma: np.ndarray) -> np.ndarray | None:
    """Each message's image under ``sigma`` (its index in the step), or None where some image is not a
    message of the step with the same bytes, reduction and rate bound."""
    width = step.endpoints
    keys = step.src * width + step.dst
    order = np.argsort(keys, kind="stable")
    moved = sigma[step.src] * width + sigma[step.dst]
    at = np.minimum(np.searchsorted(keys[order], moved), len(keys) - 1)
    if not np.array_equal(keys[order][at], moved):
        return None
    return _same(step, order[at])


def _quotient(
    program: StepProgram,
    cluster: Any,
    gens: list[tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray] | None]],
    gamma: float,
) -> Quotient | None:
    """:func:`quotient` under the group the commuting shifts ``gens`` generate -- (permutation, its order,
    the messages' routes and their images' routes under it, :func:`_pairs`) each. A kept message is one
    whose sender is kept (or, from an endpoint the group fixes, whose receiver is); it goes to its
    receiver's orbit's representative (a ring's hop out of the kept leaf group comes back to its start).
    The quotient's endpoints are the kept ones that send or receive, numbered from 0 in their order (the
    executor's arrays, its early arrivals' window among them, are then as long as the quotient, not the
    program) -- unless reductions take time and the speeds of the first endpoints are not theirs (a
    caller hands the executor the cluster's speeds): then the numbering is the program's."""
    e = program.endpoints
    if any(pairs is None for _, _, pairs in gens):
        return None
    perms, orders = [g for g, _, _ in gens], [n for _, n, _ in gens]
    group = int(np.prod(orders))
    low, size = _group_orbits(perms, orders)
    fixed = size == 1
    free = size == group
    kept_end = (low == np.arange(e)) & (free | fixed)
    kept_free = np.flatnonzero(kept_end & free)
    links = [_links(cluster, pairs, n) for _, n, pairs in gens]
    if any(got is None for got in links):
        return None
    taus = [got[0] for got in links]  # type: ignore[index]
    if any(not np.array_equal(t[u], u[t]) for i, t in enumerate(taus) for u in taus[i + 1 :]):
        return None  # link shifts that do not commute: no group of this order
    rep, size_arc = _group_orbits(taus, orders)
    capacity = cluster.capacity / (group // size_arc)
    steps: list[tuple[Step, np.ndarray, np.ndarray]] = []
    for step, _times in program.phases:
        keep = dst = np.zeros(0, dtype=np.int64)
        if len(step):
            ends = np.concatenate([step.src, step.dst])
            if not (free[ends] | fixed[ends]).all() or (fixed[step.src] & fixed[step.dst]).any():
                return None
            keep = np.flatnonzero(np.where(fixed[step.src], kept_end[step.dst], kept_end[step.src]))
            src, dst = step.src[keep], low[step.dst[keep]]
            if len(keep) * group != len(step) or not all_distinct(src * e + dst):
                return None  # an orbit not kept once, or two kept messages onto one pair
            # (every message a kept endpoint sends is kept; what it receives, counted here, not cached on
            # the step: the program's steps would each keep two arrays as long as the endpoints)
            if not np.array_equal(
                np.bincount(dst, minlength=e)[kept_free], np.bincount(step.dst, minlength=e)[kept_free]
            ):
                return None  # a kept endpoint would lose a message
        steps.append((step, keep, dst))
    ids = distinct(np.concatenate([np.concatenate([s.src[keep], dst]) for s, keep, dst in steps if len(keep)]))
    speed = cluster.compute_scale
    if gamma > 0 and not np.array_equal(speed[ids], speed[: len(ids)]):
        ids = np.arange(e)
    number = np.full(e, -1, dtype=np.int64)
    number[ids] = np.arange(len(ids))
    net = SimpleNamespace(cluster=cluster)
    # the quotient's routes: one per original route of a kept message, on the orbits' representatives
    kept_pids = distinct(np.concatenate([_kept_pids(s, net, keep) for s, keep, _ in steps if len(keep)]))
    paths = cluster.paths
    flow, arcs = gather_arcs(paths, kept_pids)
    arcs = rep[arcs]
    if len(flow) and len(distinct(flow * cluster.num_arcs + arcs)) != len(flow):
        return None  # a route crossing two links of one orbit
    lens = paths.length[kept_pids]
    rows = np.full((len(kept_pids), int(lens.max(initial=0)) or 1), -1, dtype=np.int64)
    rows[flow, np.arange(len(flow)) - np.repeat(np.cumsum(lens) - lens, lens)] = arcs
    table = _PathTable()
    qids = table.add_many(rows, paths.latency[kept_pids], paths.src[kept_pids], paths.dst[kept_pids], capacity)
    qcluster = _QuotientCluster(cluster, table, capacity, ids)
    key = id(qcluster)
    phases = []
    for (step, keep, dst), (_, times) in zip(steps, program.phases, strict=True):
        sub = Step(
            number[step.src[keep]],
            number[dst],
            step.nbytes[keep],
            step.reduce[keep],
            len(ids),
            step.combine[keep],
            step.seg[:, keep],  # (with each kept message's place in the step's segment table, kept whole)
            None if step.bound is None else step.bound[keep],
            table=step.table,
        )
        sub.__dict__["reduce_at"] = step.reduce_at[ids]  # a fixed endpoint reduces what all the images bring
        if len(keep):
            sub._pids[key] = qids[np.searchsorted(kept_pids, _kept_pids(step, net, keep))]
        phases.append((sub, times))
    images = [(got[1], n) for got, n in zip(links, orders, strict=True)]  # type: ignore[index]
    return Quotient(StepProgram(len(ids), tuple(phases)), qcluster, cluster, group, kept_pids, images, ids)


def _group_orbits(perms: list[np.ndarray], orders: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(the smallest member of every element's orbit, the orbit's size) under the group the commuting
    permutations ``perms`` of ``orders`` generate: the orbit under the first ones, moved by the next one's
    powers -- ``k`` of them distinct, ``k`` the first power that lands back in the same orbit."""
    low, size = _orbit_min(perms[0], orders[0])
    for perm, n in zip(perms[1:], orders[1:], strict=True):
        cur = np.arange(len(perm))
        merged, first = low.copy(), np.zeros(len(perm), dtype=np.int64)
        for k in range(1, n + 1):
            cur = perm[cur]
            np.minimum(merged, low[cur], out=merged)
            first[(first == 0) & (low[cur] == low)] = k
        low, size = merged, size * first
    return low, size


def _kept_pids(step: Step, net: Any, keep: np.ndarray) -> np.ndarray:
    """``step.pids(net)[keep]``, from the bigger step whose rows the step's messages are where they are
    (not the step's routes for all its messages, a copy of that one's)."""
    if step.routes_of is not None:
        whole, rows = step.routes_of
        return whole.pids(net)[rows[keep]]
    return step.pids(net)[keep]


def _links(cluster: Any, pairs: tuple[np.ndarray, np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """From (route, image's route) pairs: the shift on link directions (each route's k-th link onto
    its image's k-th), checked to be a permutation of the links used that keeps capacities and
    latencies and whose ``n``-th power moves none; returns (that permutation of the link directions,
    route -> image route) or None."""
    paths = cluster.paths
    image_pid = np.full(paths.count, -1, dtype=np.int64)
    image_pid[pairs[0]] = pairs[1]
    if not np.array_equal(image_pid[pairs[0]], pairs[1]):
        return None  # a route with two images
    a_pid = np.flatnonzero(image_pid >= 0)
    b_pid = image_pid[a_pid]
    if not np.array_equal(paths.length[a_pid], paths.length[b_pid]):
        return None
    _, a_arcs = gather_arcs(paths, a_pid)
    _, b_arcs = gather_arcs(paths, b_pid)
    m = cluster.num_arcs
    image_arc = np.full(m, -1, dtype=np.int64)
    image_arc[a_arcs] = b_arcs
    if not np.array_equal(image_arc[a_arcs], b_arcs):
        return None  # a link direction with two images
    a = np.flatnonzero(image_arc >= 0)
    b = image_arc[a]
    if len(distinct(b)) != len(b):
        return None  # two link directions with one image
    tau = np.where(image_arc >= 0, image_arc, np.arange(m))  # links no route crosses stay put
    if not np.array_equal(np.sort(tau), np.arange(m)):
        return None
    cap, lat = cluster.capacity, cluster.latency
    if not (np.array_equal(cap[b], cap[a]) and np.array_equal(lat[b], lat[a])):
        return None
    cur = tau.copy()
    for _ in range(n - 1):
        cur = tau[cur]
    if not np.array_equal(cur, np.arange(m)):
        return None  # the shift's n-th power moves a link
    return tau, image_pid
