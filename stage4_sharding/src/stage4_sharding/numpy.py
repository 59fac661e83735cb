"""``jax.numpy``: stage 3's, with ``out_sharding=`` on the functions that make arrays from
nothing.

Example:
    >>> import stage4_sharding as jax, stage4_sharding.numpy as jnp
    >>> from stage4_sharding.sharding import NamedSharding, P
    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> print(jax.typeof(jnp.zeros((16, 4), out_sharding=NamedSharding(mesh, P("data")))))
    float32[16@data,4]
"""

from stage3_vmap.numpy import *  # noqa: F403

from stage3_vmap import numpy as _stage3

from .out_sharding import with_out_sharding

zeros = with_out_sharding(_stage3.zeros)
ones = with_out_sharding(_stage3.ones)
full = with_out_sharding(_stage3.full)
arange = with_out_sharding(_stage3.arange)
linspace = with_out_sharding(_stage3.linspace)
eye = with_out_sharding(_stage3.eye)
zeros_like = with_out_sharding(_stage3.zeros_like)
ones_like = with_out_sharding(_stage3.ones_like)

import sys as _sys  # noqa: E402

from stage1_autodiff.numpy import fft, linalg  # noqa: E402

# ``import <stage>.numpy.linalg`` finds stage 1's modules (their functions are the same in
# every stage: primitives carry each stage's rules).
_sys.modules[f"{__name__}.fft"], _sys.modules[f"{__name__}.linalg"] = fft, linalg
