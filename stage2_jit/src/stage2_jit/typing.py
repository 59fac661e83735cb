"""``jax.typing``: stage1_autodiff's, unchanged."""

from stage1_autodiff.typing import ArrayLike, DTypeLike

__all__ = ["ArrayLike", "DTypeLike"]
