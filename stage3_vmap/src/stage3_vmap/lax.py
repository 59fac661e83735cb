"""``jax.lax``: stage 2's primitive wrappers, plus the collectives over named axes."""

from stage2_jit.lax import *  # noqa: F403

from .collectives import all_gather, axis_index, pmax, pmean, pmin, psum  # noqa: F401
