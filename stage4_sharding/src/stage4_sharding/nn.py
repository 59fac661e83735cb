"""``jax.nn``: stage 3's, unchanged (so far)."""

import sys as _sys

from stage3_vmap.nn import *  # noqa: F403
from stage3_vmap.nn import initializers

# ``import <stage>.nn.initializers`` finds stage 1's module, as in JAX (a module there).
_sys.modules[f"{__name__}.initializers"] = initializers
