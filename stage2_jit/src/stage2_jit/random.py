"""``jax.random``: stage 1's, unchanged."""

from stage1_autodiff.random import *  # noqa: F403
