"""``jax.errors``: stage 3's, unchanged."""

from stage3_vmap.errors import *  # noqa: F403
