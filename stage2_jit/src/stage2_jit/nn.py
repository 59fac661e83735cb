"""``jax.nn``: stage 1's, unchanged."""

from stage1_autodiff.nn import *  # noqa: F403
