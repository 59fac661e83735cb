"""``jax.scipy``: stage 1's modules, unchanged (primitives carry every later stage's rules),
registered as this stage's submodules so that ``import <stage>.scipy.linalg`` works."""

import sys

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

from stage2_jit.scipy import sparse  # noqa: E402 (the iterative solvers start in stage 2)

sys.modules[f"{__name__}.sparse"] = sparse
sys.modules[f"{__name__}.sparse.linalg"] = sparse.linalg
