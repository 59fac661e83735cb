"""``jax.lax``: stage 2's primitive wrappers, plus the collectives over named axes."""

import sys as _sys

from stage2_jit.lax import *  # noqa: F403

from .collectives import (  # noqa: F401
    all_gather,
    all_gather_p,
    all_to_all,
    all_to_all_p,
    axis_index,
    axis_index_p,
    axis_size,
    pbroadcast,
    pmax,
    pmean,
    pmin,
    ppermute,
    ppermute_p,
    pshuffle,
    psum,
    psum_p,
    psum_scatter,
    pswapaxes,
)

_sys.modules[f"{__name__}.linalg"] = linalg  # noqa: F405 (``import <stage>.lax.linalg``)
