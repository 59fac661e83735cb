"""``jax.tree``: stage 3's, unchanged (so far)."""

from stage3_vmap.tree import *  # noqa: F403
