"""Shared fixtures and hypothesis settings for the suite."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile("dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Every real torch.distributed run in the suite means gloo on CPU tensors: it starts several ranks on
# one machine, and NCCL runs one rank per GPU. Said once here (validate reads COLLSIM_BACKEND), so the
# suite means the same on a GPU workstation as on a CPU-only CI machine; a test that means another
# backend passes --backend itself. (Without it, validate's default also falls back to gloo when ranks
# outnumber GPUs -- validate/device.py -- and says so.)
os.environ.setdefault("COLLSIM_BACKEND", "gloo")
