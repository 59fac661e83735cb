"""``jax.ops``: stage 1's, unchanged (the scatters it is built on have their jit rules)."""

from stage1_autodiff.ops import *  # noqa: F403
