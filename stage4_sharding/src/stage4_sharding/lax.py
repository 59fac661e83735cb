"""``jax.lax``: stage 3's, ``with_sharding_constraint`` (a ``reshard``) and ``pcast``."""

import sys as _sys

from stage3_vmap.lax import *  # noqa: F403

from .reshard import with_sharding_constraint  # noqa: F401
from .shard_map import pcast  # noqa: F401

_sys.modules[f"{__name__}.linalg"] = linalg  # noqa: F405 (``import <stage>.lax.linalg``)
