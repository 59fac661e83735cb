"""``jax.typing``: the types to annotate a function's arguments with.

``ArrayLike`` is what a ``jax.numpy`` function accepts as an array (an Array, a NumPy array or
scalar, a Python number); ``DTypeLike`` what it accepts as a dtype (a name, a type, a NumPy
dtype, or anything with a ``dtype``). For return values, annotate ``jax.Array``.

Example:
    >>> from stage1_autodiff.typing import ArrayLike
    >>> def double(x: ArrayLike) -> "jax.Array": ...
"""

from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from .core import Array


class SupportsDType(Protocol):
    """Anything with a ``dtype`` attribute (a ``ShapeDtypeStruct``, an array)."""

    @property
    def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]  # noqa: UP007
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]  # noqa: UP007

__all__ = ["ArrayLike", "DTypeLike"]
