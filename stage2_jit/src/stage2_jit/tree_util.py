"""``jax.tree_util``: stage 1's, unchanged."""

from stage1_autodiff.tree_util import *  # noqa: F403
