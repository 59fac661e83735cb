"""``jax.numpy``: stage 3's, unchanged (so far)."""

from stage3_vmap.numpy import *  # noqa: F403
