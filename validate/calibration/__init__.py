"""Calibration: fit the simulator's link model to real measurements, and check its predictions.

One package holds the whole loop, and it never imports torch at import time (fitting a log needs numpy
only; the probes import torch inside the ranks):

=================  ===========================================================================
``file``           the calibration file format (:class:`Calibration`), reading and writing it, and
                   :meth:`Calibration.link_model`: the :class:`sim.linkmodel.LinkModel` it hands
                   to the simulator -- the only way a calibration reaches the engine
``inputs``         measurements as :class:`Sample` records: probe and validate JSON lines,
                   nccl-tests' text and ``-J`` JSON output (:func:`read_samples`)
``fit``            per-class latency, efficiency and size segments, γ and the sharing factors
                   (:func:`fit_calibration`)
``probes``         the point-to-point probes one rank runs (``python -m validate.calibration.probes``)
``campaign``       where probes and collectives run: netlab or local ranks
``compare``        predicted against measured: rows, error summary, outputs
``workflow``       the two workflows end to end: :func:`calibrate` and :func:`compare`
=================  ===========================================================================

>>> cal = load_calibration("docs/validation-run/star4.calibration.yaml")
>>> model = cal.link_model()
>>> sorted(model.classes), model.gamma is not None, model.shares
(['same-switch'], True, True)
"""

from __future__ import annotations

from .file import Calibration, load_calibration, nominal_parameters, save_calibration
from .fit import fit_calibration
from .inputs import Sample, read_samples
from .workflow import calibrate, calibration_line, calibration_report, compare

__all__ = [
    "Calibration",
    "Sample",
    "calibrate",
    "calibration_line",
    "calibration_report",
    "compare",
    "fit_calibration",
    "load_calibration",
    "nominal_parameters",
    "read_samples",
    "save_calibration",
]
