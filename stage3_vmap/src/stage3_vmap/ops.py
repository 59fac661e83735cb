"""``jax.ops``: stage 2's, unchanged (the scatters it is built on have their batching
rules)."""

from stage2_jit.ops import *  # noqa: F403
