"""``jax.tree_util``: stage 3's, unchanged (so far)."""

from stage3_vmap.tree_util import *  # noqa: F403
