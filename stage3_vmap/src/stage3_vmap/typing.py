"""``jax.typing``: stage2_jit's, unchanged."""

from stage2_jit.typing import ArrayLike, DTypeLike

__all__ = ["ArrayLike", "DTypeLike"]
