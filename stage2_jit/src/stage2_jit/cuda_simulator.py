"""What Numba's CUDA simulator needs to compute as a GPU does.

The simulator runs a kernel as plain Python, so ``math.exp`` in a kernel is Python's: it
computes a float32 argument in float64, and it raises ``OverflowError`` where libdevice's
``expf`` gives infinity, and ``ValueError`` where ``logf`` gives -inf or NaN (``log(0)``,
``sin(inf)``, ``sqrt(-1)``...). A kernel module run under the simulator sees ``math`` as
``IEEE_MATH`` instead: NumPy's function of the argument's own dtype, which gives the IEEE
values as the GPU does, and, for float32, eager NumPy's values to the bit, as the CPU
backend's kernels do (so a folded constant and a computed value agree exactly). The
generated source is the same for both.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable

import numpy as np

# math's name -> NumPy's, for the functions whose domain or range Python's math checks
_NUMPY_NAMES = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
                "log2": "log2", "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
                "tan": "tan", "asin": "arcsin", "acos": "arccos", "acosh": "arccosh",
                "atanh": "arctanh", "sinh": "sinh", "cosh": "cosh", "pow": "power",
                "fmod": "fmod", "atan2": "arctan2"}


def _ieee(name: str) -> Callable[..., float]:
    if name not in _NUMPY_NAMES:  # lgamma and gamma: Python's, infinite at their poles
        function = getattr(math, name)

        def at_poles(x: float) -> float:
            try:
                return function(x)
            except (ValueError, OverflowError):
                return math.inf
        return at_poles
    function = getattr(np, _NUMPY_NAMES[name])

    def call(*args: float) -> float:
        with np.errstate(all="ignore"):
            return function(*args)
    call.__name__ = name
    return call


IEEE_MATH = types.SimpleNamespace(**{
    **{name: getattr(math, name) for name in dir(math) if not name.startswith("_")},
    **{name: _ieee(name) for name in [*_NUMPY_NAMES, "lgamma", "gamma"]}})


def use_ieee_math(module: types.ModuleType) -> None:
    """Under the simulator, ``module``'s kernels call ``IEEE_MATH`` for ``math``."""
    from numba import config
    if config.ENABLE_CUDASIM:
        module.math = IEEE_MATH
