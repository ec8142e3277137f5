"""collsim's simulator: collectives on a flow-level SimPy network over a networkx cluster graph.

>>> from sim import simulate
>>> r = simulate("star:hosts=8,bandwidth=100Gbps,latency=1us", "allreduce", "ring", "64MiB")
>>> f"{r.busbw_GBps:.2f} GB/s"
'12.46 GB/s'

The package never imports torch, matplotlib or a web stack.
"""

from __future__ import annotations

from .algorithms import Algorithm, algorithm_names, get_algorithm, register
from .cluster import Cluster
from .collectives import COLLECTIVES, get_collective
from .errors import (
    AlgorithmError,
    CalibrationError,
    CollsimError,
    ConfigError,
    RoutingError,
    RunError,
    TopologyError,
)
from .linkmodel import NOMINAL, LinkModel
from .network import Network
from .prepare import Run, prepare
from .results import SimResult
from .runtime import DataCheck, Job
from .simulate import simulate, sweep
from .topology import load_graph

__all__ = [
    "COLLECTIVES",
    "Algorithm",
    "AlgorithmError",
    "CalibrationError",
    "Cluster",
    "CollsimError",
    "ConfigError",
    "DataCheck",
    "Job",
    "LinkModel",
    "NOMINAL",
    "Network",
    "RoutingError",
    "Run",
    "RunError",
    "SimResult",
    "TopologyError",
    "algorithm_names",
    "get_algorithm",
    "get_collective",
    "load_graph",
    "prepare",
    "register",
    "simulate",
    "sweep",
]
__version__ = "0.1.0"
