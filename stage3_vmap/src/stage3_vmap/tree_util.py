"""``jax.tree_util``: stage 2's, unchanged."""

from stage2_jit.tree_util import *  # noqa: F403
