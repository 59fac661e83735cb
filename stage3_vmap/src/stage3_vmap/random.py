"""``jax.random``: stage 2's, unchanged."""

from stage2_jit.random import *  # noqa: F403
