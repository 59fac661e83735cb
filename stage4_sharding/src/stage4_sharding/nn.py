"""``jax.nn``: stage 3's, unchanged (so far)."""

from stage3_vmap.nn import *  # noqa: F403
