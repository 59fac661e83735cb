"""``ShapeDtypeStruct``: an array's type without its values (shape, dtype, weak type,
sharding). ``eval_shape`` returns them; ``eval_shape`` and ``jit(f).lower`` accept them.

NB: in JAX this is jax/_src/api.py:ShapeDtypeStruct.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stage1_autodiff.core import Array, ShapedArray
from stage1_autodiff.tree_util import tree_map


# --8<-- [start:shape_dtype_struct]
class ShapeDtypeStruct:
    """A stand-in for an array: its shape, dtype, weak type and sharding, no values. What
    ``eval_shape`` returns, and what ``eval_shape`` and ``jit(f).lower`` accept.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> jax.ShapeDtypeStruct((2, 3), jnp.float32)
        ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape: Any, dtype: Any, *, sharding: Any = None,
                 weak_type: bool = False) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @property
    def aval(self) -> ShapedArray:
        # stage 4's types carry the NamedSharding itself
        return ShapedArray(self.shape, self.dtype, self.weak_type, self.sharding)

    def stand_in(self) -> Array:
        """An array of this type for tracing (a broadcast zero: it holds no memory)."""
        value = np.broadcast_to(np.zeros((), self.dtype), self.shape)
        return Array(value, self.weak_type)

    def _key(self) -> tuple:
        return self.shape, self.dtype, self.sharding, self.weak_type

    def __eq__(self, other: Any) -> bool:
        return type(other) is ShapeDtypeStruct and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"
# --8<-- [end:shape_dtype_struct]


def struct_of(aval: ShapedArray) -> ShapeDtypeStruct:
    """The ShapeDtypeStruct of a traced type (its sharding is stage 4's, else None)."""
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type,
                            sharding=aval.sharding)


def stand_ins(tree: Any) -> Any:
    """``tree`` with each ShapeDtypeStruct replaced by an array of its type."""
    return tree_map(lambda x: x.stand_in() if isinstance(x, ShapeDtypeStruct) else x, tree)
