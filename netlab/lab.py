"""Bringing a lab up and down, and asking what is up.

``up`` applies a :class:`~netlab.plan.Plan` with a handful of batched ``ip``/``tc`` calls (namespaces
and veth pairs in one batch each, then one ``ip`` and one ``tc`` batch per namespace), then checks
that every host reaches every other and that one transfer gets the shaped rate. Whatever goes wrong
-- an error, Ctrl-C, SIGTERM -- everything made so far is removed before the error goes on. ``down``
removes what carries the prefix: the namespaces (and so their veths and bridges), any stray device of
the prefix in the root namespace, the processes left inside those namespaces, and the state file. It
never touches a name without the prefix, and it works without the state file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sim.errors import ConfigError
from sim.lifetime import interrupt_on_signals

from . import names, probe, system
from .errors import NetlabError
from .plan import SUBNET, Plan, make_plan
from .state import locked, read_state, remove_state, write_state

__all__ = ["Checks", "Leftovers", "Status", "down", "find_leftovers", "interrupts_as_keyboard", "status", "up"]

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Checks:
    """What the checks after ``up`` found: pairs that connected, and the rate transfer (if one ran)."""

    pairs: int
    transfer: probe.Transfer | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Leftovers:
    """Everything on this machine that carries a prefix."""

    namespaces: tuple[str, ...] = ()
    links: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.namespaces or self.links)


@dataclass(frozen=True)
class Status:
    """A lab as its state file describes it and as the system shows it."""

    prefix: str
    state: str | None  # "creating", "up" or None (no state file)
    plan: Plan | None
    present: Leftovers
    missing: tuple[str, ...] = field(default_factory=tuple)  # planned namespaces that are not there
    created: float | None = None
    busy: tuple[int, ...] = ()  # processes living in its namespaces (a run's ranks, or an older run's)

    @property
    def healthy(self) -> bool:
        """Up, whole, and idle (a lab whose namespaces still hold processes is not ready for a run)."""
        return self.state == "up" and self.plan is not None and not self.missing and not self.busy


def interrupts_as_keyboard() -> contextlib.AbstractContextManager[None]:
    """Within the block, SIGTERM and SIGHUP raise KeyboardInterrupt (as Ctrl-C does), so that every
    ``finally`` cleanup runs. Only in the main thread; elsewhere it does nothing."""
    return interrupt_on_signals()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while cleanup runs; they are delivered afterwards."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def find_leftovers(prefix: str) -> Leftovers:
    """Namespaces and root-namespace devices whose names netlab would give with ``prefix``."""
    names.check_prefix(prefix)
    return Leftovers(
        namespaces=tuple(ns for ns in system.netns_list() if names.owns_netns(prefix, ns)),
        links=tuple(link for link in system.links() if names.owns_link(prefix, link)),
    )


def _apply(plan: Plan) -> None:
    system.batch(["ip"], (["netns", "add", ns] for ns in plan.namespaces))
    mtu = str(plan.mtu)
    system.batch(
        ["ip"],
        (
            [
                "link",
                "add",
                k.a.ifname,
                "mtu",
                mtu,
                "netns",
                k.a.ns,
                "type",
                "veth",
                "peer",
                "name",
                k.b.ifname,
                "mtu",
                mtu,
                "netns",
                k.b.ns,
            ]
            for k in plan.links
        ),
    )
    ends = [end for link in plan.links for end in (link.a, link.b)]
    for sw in plan.switches:
        lines = [["link", "set", "lo", "up"]]
        lines.append(["link", "add", sw.bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        lines.append(["link", "set", "dev", sw.bridge, "addrgenmode", "none"])
        lines.append(["link", "set", "dev", sw.bridge, "up"])
        for end in ends:
            if end.ns == sw.ns:
                lines.append(["link", "set", "dev", end.ifname, "addrgenmode", "none"])
                lines.append(["link", "set", "dev", end.ifname, "master", sw.bridge, "up"])
        system.batch(["ip", "-n", sw.ns], lines)
    for host in plan.hosts:
        lines = [["link", "set", "lo", "up"]]
        if host.ifname and host.address:
            lines.append(["link", "set", "dev", host.ifname, "addrgenmode", "none"])
            lines.append(["addr", "add", f"{host.address}/{SUBNET.prefixlen}", "dev", host.ifname])
            lines.append(["link", "set", "dev", host.ifname, "up"])
        system.batch(["ip", "-n", host.ns], lines)
    for ns in plan.namespaces:
        system.batch(
            ["tc", "-n", ns],
            (["qdisc", "add", "dev", end.ifname, "root", *end.egress.tc_args()] for end in ends if end.ns == ns),
        )


def check(plan: Plan, *, rate_check: bool = True, rate_bytes: int | None = None, tolerance: float = 0.10) -> Checks:
    """Every host reaches every other (else :class:`NetlabError`); then one transfer between the first
    host and the host farthest from it, with a warning when its rate is off the shaped rate by more than
    ``tolerance``."""
    failures = probe.reachability(plan)
    if failures:
        more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
        raise NetlabError(f"lab {plan.prefix!r} is up but not connected: {'; '.join(failures[:3])}{more}")
    n = sum(1 for h in plan.hosts if h.address)
    pair = plan.farthest_pair() if rate_check else None
    if pair is None:
        return Checks(pairs=n * (n - 1))
    shaped = plan.path_rate(*pair)
    nbytes = rate_bytes or int(min(max(shaped * 0.25, 1 << 20), 64 << 20))
    result = probe.transfer(plan, pair[0], pair[1], nbytes)
    warnings = ()
    if abs(result.fraction - 1) > tolerance:
        warnings = (
            f"rate check: {pair[0]} -> {pair[1]} got {result.rate * 8 / 1e6:.1f} Mbit/s, {result.fraction:.0%} of the "
            f"shaped {shaped * 8 / 1e6:.1f} Mbit/s (off by more than {tolerance:.0%}: is the CPU busy? see docs/netlab.md)",
        )
    return Checks(pairs=n * (n - 1), transfer=result, warnings=warnings)


def up(
    topology: Any,
    *,
    prefix: str = names.DEFAULT_PREFIX,
    queue: float | None = None,
    mtu: int | None = None,
    burst: int | None = None,
    checks: bool = True,
    rate_check: bool = True,
    warn: Warn | None = None,
) -> tuple[Plan, Checks | None]:
    """Build the lab of ``topology`` under ``prefix`` and check it; returns the plan and the checks.

    On any failure or interrupt, everything made is removed again before the exception propagates.
    """
    kwargs = {k: v for k, v in (("queue", queue), ("mtu", mtu)) if v is not None}
    plan = make_plan(topology, prefix=prefix, burst=burst, **kwargs)  # type: ignore[arg-type]
    system.require()
    with locked(prefix):
        _refuse_taken(prefix)
        try:
            write_state(
                prefix,
                {
                    "prefix": prefix,
                    "status": "creating",
                    "pid": os.getpid(),
                    "created": time.time(),
                    "plan": plan.to_dict(),
                },
            )
            _apply(plan)
            result = check(plan, rate_check=rate_check) if checks else None
            for message in result.warnings if result else ():
                (warn or (lambda _m: None))(message)
            write_state(
                prefix,
                {"prefix": prefix, "status": "up", "pid": os.getpid(), "created": time.time(), "plan": plan.to_dict()},
            )
        except BaseException as exc:
            with _signals_held():
                try:
                    _teardown(prefix)
                except NetlabError as cleanup:
                    exc.add_note(f"cleanup after the failure also failed: {cleanup}")
            raise
    return plan, result


def _refuse_taken(prefix: str) -> None:
    state = read_state(prefix)
    found = find_leftovers(prefix)
    if state or found:
        what = (
            f"a lab of {state['plan']['name']!r} is {state['status']}"
            if state
            else "leftovers exist: " + ", ".join((found.namespaces + found.links)[:6])
        )
        raise NetlabError(
            f"prefix {prefix!r} is in use ({what}); run `collsim netlab down --prefix {prefix}` or pick another --prefix"
        )


def _teardown(prefix: str) -> Leftovers:
    """Remove everything of ``prefix``; returns what was found. Never touches other names."""
    found = find_leftovers(prefix)
    _stop_processes(found.namespaces)
    system.batch(["ip"], (["netns", "delete", ns] for ns in found.namespaces), force=True)
    system.batch(["ip"], (["link", "delete", "dev", link] for link in found.links), force=True)
    remove_state(prefix)
    still = find_leftovers(prefix)
    if still:
        raise NetlabError(f"could not remove {', '.join(still.namespaces + still.links)} (prefix {prefix!r})")
    return found


def _stop_processes(namespaces: tuple[str, ...], grace: float = 2.0) -> None:
    """End the processes left inside ``namespaces`` (netlab's ranks and probes): TERM, then KILL."""
    me = os.getpid()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = {pid for ns in namespaces for pid in system.netns_pids(ns)} - {me}
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, waiting for its parent to reap it, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def running_plan(state: dict[str, Any], wanted: Plan, prefix: str) -> Plan:
    """The plan of the lab ``state`` records under ``prefix``, when it is up and built from the same
    topology as ``wanted``; otherwise a one-line :class:`ConfigError` (a run never reuses, or tears
    down, a lab it did not ask for)."""
    plan = Plan.from_dict(state["plan"])
    if state.get("status") != "up" or plan.spec != wanted.spec:
        raise ConfigError(
            f"netlab prefix {prefix!r} holds a lab of {plan.spec!r} ({state.get('status')}); "
            f"`collsim netlab down --prefix {prefix}` first, or use another --prefix"
        )
    return plan


def down(prefix: str = names.DEFAULT_PREFIX) -> Leftovers:
    """Remove the lab of ``prefix`` (and any leftovers carrying it); returns what was removed."""
    names.check_prefix(prefix)
    system.require()
    with locked(prefix), _signals_held():
        return _teardown(prefix)


def status(prefix: str = names.DEFAULT_PREFIX) -> Status:
    """What the state file of ``prefix`` says, checked against the namespaces that exist."""
    names.check_prefix(prefix)
    system.require()
    state = read_state(prefix)
    present = find_leftovers(prefix)
    try:
        plan = Plan.from_dict(state["plan"]) if state else None
    except (KeyError, TypeError, ValueError):
        state, plan = None, None  # unreadable: report what the system shows
    missing = tuple(ns for ns in plan.namespaces if ns not in present.namespaces) if plan else ()
    from .launch import busy_pids

    return Status(
        prefix,
        state["status"] if state else None,
        plan,
        present,
        missing,
        state.get("created") if state else None,
        tuple(busy_pids(present.namespaces)),
    )
