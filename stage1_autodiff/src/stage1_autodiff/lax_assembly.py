"""``jax.lax``'s array assembly: ``stack`` and ``unstack`` along a new axis, ``empty`` and
``broadcast_like``, each composed of the shape primitives (``broadcast_in_dim``,
``concatenate``, ``slice``, ``squeeze``), so that every later stage runs them with no rules
of its own.

NB: JAX makes ``stack``, ``unstack`` and ``empty`` primitives of their own (jax/_src/lax/lax.py:
``stack_p``, ``unstack_p``, ``empty_p``); here a jaxpr shows their parts instead.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from . import dtypes
from . import prims as lax
from .core import get_aval
from .numpy.promotion import as_value, broadcast_to_shape, canonicalize_axis

__all__ = ["broadcast_like", "empty", "stack", "unstack"]


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Joins arrays of one shape and dtype along a new ``axis`` (no promotion, as lax).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.stack([jnp.zeros(2), jnp.ones(2)], axis=1)
        Array([[0., 1.],
               [0., 1.]], dtype=float32)
    """
    if not operands:
        raise IndexError("lax.stack needs at least one array to stack, got an empty sequence.")
    arrays = [as_value(x) for x in operands]
    avals = [get_aval(x) for x in arrays]
    if len({a.dtype for a in avals}) > 1:
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"lax.stack requires arguments to have the same dtypes, got {names}. "
                        f"Convert them first (x.astype(...)), or use jnp.stack, which "
                        f"promotes.")
    if len({a.shape for a in avals}) > 1:
        shapes = ", ".join(str(a.shape) for a in avals)
        raise ValueError(f"All input arrays must have the same shape. Got {shapes}.")
    axis = canonicalize_axis(operator.index(axis), avals[0].ndim + 1, "lax.stack")
    return lax.concatenate([lax.expand_dims(x, (axis,)) for x in arrays], axis)


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, that dim removed: ``stack``'s inverse.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.unstack(jnp.arange(4).reshape(2, 2), axis=1)
        (Array([0, 2], dtype=int32), Array([1, 3], dtype=int32))
    """
    x = as_value(x)
    shape = get_aval(x).shape
    axis = canonicalize_axis(operator.index(axis), len(shape), "lax.unstack")
    pieces = []
    for i in range(shape[axis]):
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = i, i + 1
        pieces.append(lax.squeeze(lax.slice(x, start, limit), (axis,)))
    return tuple(pieces)


def empty(shape: Sequence[int], dtype: Any, *, out_sharding: Any = None) -> Any:
    """An array of ``shape`` and ``dtype`` whose values the program promises not to read
    before writing them. XLA may leave its memory as it finds it; here it is zeros (a
    broadcast scalar, so nothing is filled eagerly).

    Example:
        >>> import stage1_autodiff as jax, numpy as np
        >>> jax.lax.empty((2,), np.int32)
        Array([0, 0], dtype=int32)
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "empty")
    return lax.full(tuple(shape), 0, dtype, sharding=out_sharding)


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast, NumPy-style from the right, to ``like_arr``'s shape (and laid out
    as it is, from stage 4 on).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.broadcast_like(jnp.arange(2.0), jnp.zeros((2, 2)))
        Array([[0., 1.],
               [0., 1.]], dtype=float32)
    """
    out = broadcast_to_shape(as_value(arr), get_aval(as_value(like_arr)).shape)
    return lax.with_sharding_of(out, like_arr)
