"""``jax.scipy``: stage 1's modules, unchanged (primitives carry every later stage's rules),
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

for _name, _module in {"fft": fft, "integrate": integrate, "interpolate": interpolate,
                      "linalg": linalg, "ndimage": ndimage, "optimize": optimize,
                      "signal": signal, "special": special, "stats": stats}.items():
    sys.modules[f"{__name__}.{_name}"] = _module
for _name in stats.DISTRIBUTIONS:  # each module, so that ``import <stage>.scipy.stats.t`` works
    sys.modules[f"{__name__}.stats.{_name}"] = getattr(stats, _name)

# ``jax.scipy.sparse`` holds ``linalg`` alone: the iterative solvers, which start in this stage
# (they need while_loop). A module object, so that ``import <stage>.scipy.sparse.linalg`` works.
from . import sparse_linalg  # noqa: E402

sparse = ModuleType(f"{__name__}.sparse", "``jax.scipy.sparse``: its ``linalg`` module.")
sparse.linalg = sparse_linalg
sys.modules[f"{__name__}.sparse"] = sparse
sys.modules[f"{__name__}.sparse.linalg"] = sparse_linalg
