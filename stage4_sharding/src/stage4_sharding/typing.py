"""``jax.typing``: stage3_vmap's, unchanged."""

from stage3_vmap.typing import ArrayLike, DTypeLike

__all__ = ["ArrayLike", "DTypeLike"]
