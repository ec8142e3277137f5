"""netlab's errors: both derive from :class:`sim.errors.RunError`, so the CLI prints one line and exits 2.

Topologies netlab cannot emulate raise :class:`sim.errors.TopologyError` instead (a config error).
"""

from __future__ import annotations

from sim.errors import RunError

__all__ = ["NetlabError", "NetlabUnavailable"]


class NetlabError(RunError):
    """Building, checking, using or removing an emulated cluster failed."""


class NetlabUnavailable(NetlabError):
    """This machine cannot run netlab: not root, or ``ip``/``tc`` missing (the message says which)."""
