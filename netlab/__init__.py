"""netlab: an emulated cluster on one Linux machine, built from a collsim topology.

Each host becomes a network namespace, each switch a Linux bridge in a namespace of its own, each link a
veth pair shaped with tbf in both directions, so that validate runs on a real TCP network whose shape and
link rates are known. Needs root and iproute2 (``ip``, ``tc``); see docs/netlab.md.

Planning needs neither:

>>> from netlab import make_plan
>>> plan = make_plan("netlab-star4")
>>> len(plan.hosts), len(plan.switches), len(plan.links), plan.world_size
(4, 1, 4, 4)
"""

from __future__ import annotations

from .errors import NetlabError, NetlabUnavailable
from .lab import (
    Checks,
    Leftovers,
    Status,
    check,
    down,
    find_leftovers,
    interrupts_as_keyboard,
    running_plan,
    status,
    up,
)
from .launch import RunOutcome, launch, rank_commands, results_path
from .plan import Plan, Shaping, make_plan
from .probe import Transfer, reachability, transfer, transfers
from .system import missing

__all__ = [
    "Checks",
    "Leftovers",
    "NetlabError",
    "NetlabUnavailable",
    "Plan",
    "RunOutcome",
    "Shaping",
    "Status",
    "Transfer",
    "check",
    "down",
    "find_leftovers",
    "interrupts_as_keyboard",
    "launch",
    "make_plan",
    "missing",
    "rank_commands",
    "results_path",
    "running_plan",
    "reachability",
    "status",
    "transfer",
    "transfers",
    "up",
]
