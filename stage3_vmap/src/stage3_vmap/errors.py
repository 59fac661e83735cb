"""``jax.errors``: stage 2's, unchanged."""

from stage2_jit.errors import *  # noqa: F403
