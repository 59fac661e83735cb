"""``jax.ad_checkpoint``: naming values for the checkpoint policies (``checkpoint_name``), the
policies themselves, and the answers a policy may give.

NB: JAX's module is jax/ad_checkpoint.py, over jax/_src/ad_checkpoint.py. It also has
``print_saved_residuals``, which we do not have (see "Differences from JAX").
"""

from .remat import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_name,
    checkpoint_policies,
)
