"""``jax.tree``: stage 2's, unchanged."""

from stage2_jit.tree import *  # noqa: F403
