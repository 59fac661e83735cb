"""``jax.scipy``: stage 2's modules, registered as this stage's submodules so that
``import <stage>.scipy.linalg`` works."""

from stage2_jit.scipy import (  # noqa: F401
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    register_submodules,
    signal,
    sparse,
    special,
    stats,
)

register_submodules(__name__)
