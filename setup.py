"""The compiled cores of the rate computation (sim/_ratecore.c, sim/_classcore.c), built where a C compiler is
found.

Everything else is in pyproject.toml. The extension is optional: without a compiler the install goes on
and sim.rates runs its Python path (the same rates; COLLSIM_PURE=1 forces it where the core is built).
"""

import sys

from setuptools import Extension, setup

# IEEE arithmetic exactly as written (no fused multiply-adds): the core's rates are the Python path's
# to the bit
flags = [] if sys.platform == "win32" else ["-std=c99", "-O2", "-ffp-contract=off", "-fno-fast-math"]

setup(
    ext_modules=[
        Extension("sim._ratecore", ["sim/_ratecore.c"], extra_compile_args=flags, optional=True),
        # sim.maxmin.maxmin_rates' rounds (the flow classes' solves)
        Extension("sim._classcore", ["sim/_classcore.c"], extra_compile_args=flags, optional=True),
    ]
)
