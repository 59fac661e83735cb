"""``jax.ops``: stage 3's, unchanged (the scatters it is built on have their sharding
rules)."""

from stage3_vmap.ops import *  # noqa: F403
