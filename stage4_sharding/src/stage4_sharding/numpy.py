"""``jax.numpy``: stage 3's. The functions that make arrays from nothing take
``out_sharding=`` (and ``device=``, a sharding or a device) through stage 1's placement seam,
which ``arrays.place`` fills in here.

Example:
    >>> import stage4_sharding as jax, stage4_sharding.numpy as jnp
    >>> from stage4_sharding.sharding import NamedSharding, P
    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> print(jax.typeof(jnp.zeros((16, 4), out_sharding=NamedSharding(mesh, P("data")))))
    float32[16@data,4]
"""

import sys as _sys  # noqa: E402

from stage1_autodiff.numpy import fft, linalg  # noqa: E402
from stage3_vmap.numpy import *  # noqa: F403

# ``import <stage>.numpy.linalg`` finds stage 1's modules (their functions are the same in
# every stage: primitives carry each stage's rules).
_sys.modules[f"{__name__}.fft"], _sys.modules[f"{__name__}.linalg"] = fft, linalg
