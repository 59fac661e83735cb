"""``jax.lax``: stage 3's, and ``with_sharding_constraint`` (a ``reshard``)."""

from stage3_vmap.lax import *  # noqa: F403

from .reshard import with_sharding_constraint  # noqa: F401
