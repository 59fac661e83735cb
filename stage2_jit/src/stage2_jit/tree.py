"""``jax.tree``: stage 1's, unchanged."""

from stage1_autodiff.tree import *  # noqa: F403
