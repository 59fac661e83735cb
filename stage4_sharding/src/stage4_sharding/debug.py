"""``jax.debug``: stage 3's ``print``, and ``visualize_array_sharding`` (where JAX 0.10 has
it: ``jax.debug.visualize_array_sharding``)."""

from stage3_vmap.debug import callback, print  # noqa: F401, A004

from .arrays import visualize_array_sharding  # noqa: F401
