"""``jax.debug``: stage 3's ``print``."""

from stage3_vmap.debug import print  # noqa: F401, A004
