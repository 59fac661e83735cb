"""``jax.random``: stage 3's, unchanged (so far)."""

from stage3_vmap.random import *  # noqa: F403
