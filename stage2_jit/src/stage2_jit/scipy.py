"""``jax.scipy``: stage 1's modules, unchanged (primitives carry every later stage's rules),
and ``sparse.linalg``, whose iterative solvers start in this stage (they need while_loop),
registered as this stage's submodules so that ``import <stage>.scipy.linalg`` works."""

import sys
from types import ModuleType

from stage1_autodiff.scipy import (
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    signal,
    special,
    stats,
)

from . import sparse_linalg

sparse = ModuleType(f"{__name__}.sparse", "``jax.scipy.sparse``: its ``linalg`` module.")
sparse.linalg = sparse_linalg

# Every module by its name under ``scipy``; each later stage registers them under its own.
SUBMODULES = {"fft": fft, "integrate": integrate, "interpolate": interpolate,
              "linalg": linalg, "ndimage": ndimage, "optimize": optimize, "signal": signal,
              "special": special, "stats": stats, "sparse": sparse,
              "sparse.linalg": sparse_linalg,
              # each distribution, so that ``import <stage>.scipy.stats.t`` works
              **{f"stats.{name}": getattr(stats, name) for name in stats.DISTRIBUTIONS}}


def register_submodules(package: str) -> None:
    """Makes ``import <package>.linalg`` (and the others) find these modules."""
    for name, module in SUBMODULES.items():
        sys.modules[f"{package}.{name}"] = module


register_submodules(__name__)
