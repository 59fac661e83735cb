"""``jax.lax``: stage 3's, unchanged (so far)."""

from stage3_vmap.lax import *  # noqa: F403
