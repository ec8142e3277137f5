"""Options several commands share (typer annotations), and reading ``--calibration`` once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from sim.linkmodel import LinkModel
    from validate.calibration import Calibration

__all__ = ["CalibrationOpt", "GammaOpt", "RanksOpt", "TopologyOpt", "read_calibration"]

TopologyOpt = Annotated[
    str,
    typer.Option(
        "--topology",
        "-t",
        envvar="COLLSIM_TOPOLOGY",
        help="Inline spec (star:hosts=8,bandwidth=100Gbps,latency=1us), a YAML file or a bundled name.",
    ),
]
RanksOpt = Annotated[
    Optional[int], typer.Option("--ranks", "-r", envvar="COLLSIM_RANKS", help="Use the first N GPUs.", min=1)
]
CalibrationOpt = Annotated[
    Optional[str],
    typer.Option(
        "--calibration",
        envvar="COLLSIM_CALIBRATION",
        help="A calibration file (collsim validate calibrate) applied to the topology.",
    ),
]
GammaOpt = Annotated[
    Optional[float],
    typer.Option(
        "--gamma", envvar="COLLSIM_GAMMA", help="Reduction cost, seconds per byte (default: calibrated, else 0)."
    ),
]


def read_calibration(path: str | None, topology: str) -> tuple[LinkModel | None, str | None]:
    """``--calibration`` read once: (the link model it applies, the header line that says so), or
    (None, None) without one."""
    if path is None:
        return None, None
    from validate.calibration import calibration_line, load_calibration

    cal: Calibration = load_calibration(path)
    return cal.link_model(source=str(path)), calibration_line(path, cal, topology)
