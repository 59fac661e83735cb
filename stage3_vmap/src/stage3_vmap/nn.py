"""``jax.nn``: stage 2's, unchanged."""

from stage2_jit.nn import *  # noqa: F403
