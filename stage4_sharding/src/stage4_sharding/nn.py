"""``jax.nn``: stage 3's, with initializers that take ``out_sharding``."""

import sys as _sys

from stage3_vmap.nn import *  # noqa: F403

from . import nn_initializers as initializers  # stage 1's, taking out_sharding

# ``import stage4_sharding.nn.initializers`` finds it, as in JAX (a module there).
_sys.modules[f"{__name__}.initializers"] = initializers
