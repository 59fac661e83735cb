"""``jax.random``: stage 3's, with ``out_sharding=`` on the samplers (replicated otherwise).

Example:
    >>> import stage4_sharding as jax
    >>> from stage4_sharding.sharding import NamedSharding, P
    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> x = jax.random.normal(jax.random.key(0), (16,), out_sharding=NamedSharding(mesh, P("data")))
    >>> print(jax.typeof(x))
    float32[16@data]
"""

from stage3_vmap.random import *  # noqa: F403

from stage3_vmap import random as _stage3

from .out_sharding import with_out_sharding

bits = with_out_sharding(_stage3.bits)
uniform = with_out_sharding(_stage3.uniform)
normal = with_out_sharding(_stage3.normal)
bernoulli = with_out_sharding(_stage3.bernoulli)
randint = with_out_sharding(_stage3.randint)
gumbel = with_out_sharding(_stage3.gumbel)
