"""Reductions: sum, mean, var, std, max, min, prod, argmax, argmin, all, any.

Each takes ``axis`` (None, an int or a tuple, negative allowed) and ``keepdims``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import primitives as lax
from ..core import get_aval
from ._promote import as_value, canonicalize_axes, convert, promote_inexact

Axis = int | Sequence[int] | None


def _keep_dims(out: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    if not keepdims:
        return out
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return lax.reshape(out, kept_shape)


def _reduce(name: str, lax_fn, x, axis: Axis, keepdims: bool) -> Any:
    x = as_value(x)
    shape = get_aval(x).shape
    axes = canonicalize_axes(axis, len(shape), name)
    return _keep_dims(lax_fn(x, axes), shape, axes, keepdims)


# --8<-- [start:sum]
def sum(a, axis: Axis = None, dtype=None, keepdims: bool = False):  # noqa: A001
    """Sum over ``axis``. Booleans and small integers sum as the default integer.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.sum(jnp.ones((2, 3)), axis=0)
        Array([2., 2., 2.], dtype=float32)
    """
    a = as_value(a)
    aval = get_aval(a)
    if dtype is not None:
        a = convert(a, dtypes.canonicalize_dtype(dtype))
    elif aval.dtype == np.bool_:
        a = convert(a, dtypes.default_int_dtype())
    return _reduce("sum", lax.reduce_sum, a, axis, keepdims)
# --8<-- [end:sum]


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[d] for d in axes], dtype=np.int64))


def mean(a, axis: Axis = None, dtype=None, keepdims: bool = False):
    """Arithmetic mean over ``axis`` (in floating point).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.mean(jnp.array([1, 2, 3, 4]))
        Array(2.5, dtype=float32)
    """
    (a,) = promote_inexact(as_value(a) if dtype is None else as_value(a).astype(dtype))
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape), "mean")
    total = sum(a, axes, keepdims=keepdims)
    return lax.div(total, lax.full_like(total, _count(shape, axes)))


def var(a, axis: Axis = None, ddof: int = 0, keepdims: bool = False):
    """Variance: the mean squared deviation from the mean, divided by ``n - ddof``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.var(jnp.array([1.0, 2.0, 3.0, 4.0]))
        Array(1.25, dtype=float32)
    """
    (a,) = promote_inexact(a)
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape), "var")
    centered = lax.sub(a, lax.broadcast_in_dim(
        mean(a, axes, keepdims=True), shape, tuple(range(len(shape)))))
    total = sum(lax.mul(centered, centered), axes, keepdims=keepdims)
    return lax.div(total, lax.full_like(total, _count(shape, axes) - ddof))


def std(a, axis: Axis = None, ddof: int = 0, keepdims: bool = False):
    """Standard deviation: the square root of :func:`var`."""
    return lax.sqrt(var(a, axis, ddof=ddof, keepdims=keepdims))


def _check_nonempty(name: str, x: Any, axis: Axis) -> None:
    shape = get_aval(x).shape
    axes = canonicalize_axes(axis, len(shape), name)
    if builtins.any(shape[d] == 0 for d in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no "
                         f"identity (shape {shape}, axis {axis}).")


def max(a, axis: Axis = None, keepdims: bool = False):  # noqa: A001
    """Largest element over ``axis`` (NaN if any element is NaN)."""
    a = as_value(a)
    _check_nonempty("max", a, axis)
    return _reduce("max", lax.reduce_max, a, axis, keepdims)


def min(a, axis: Axis = None, keepdims: bool = False):  # noqa: A001
    """Smallest element over ``axis`` (NaN if any element is NaN)."""
    a = as_value(a)
    _check_nonempty("min", a, axis)
    return _reduce("min", lax.reduce_min, a, axis, keepdims)


amax, amin = max, min


def prod(a, axis: Axis = None, keepdims: bool = False):
    """Product over ``axis``."""
    a = as_value(a)
    if get_aval(a).dtype == np.bool_:
        a = convert(a, dtypes.default_int_dtype())
    return _reduce("prod", lax.reduce_prod, a, axis, keepdims)


def all(a, axis: Axis = None, keepdims: bool = False):  # noqa: A001
    """Whether every element over ``axis`` is true."""
    from .ufuncs import _as_bool
    return _reduce("all", lax.reduce_and, _as_bool(a), axis, keepdims)


def any(a, axis: Axis = None, keepdims: bool = False):  # noqa: A001
    """Whether any element over ``axis`` is true."""
    from .ufuncs import _as_bool
    return _reduce("any", lax.reduce_or, _as_bool(a), axis, keepdims)


def _arg_reduce(name: str, lax_fn, a, axis: int | None, keepdims: bool):
    a = as_value(a)
    if axis is None:
        a, axis = lax.reshape(a, (get_aval(a).size,)), 0
    _check_nonempty(name, a, axis)
    shape = get_aval(a).shape
    (axis,) = canonicalize_axes(axis, len(shape), name)
    out = lax_fn(a, axis, dtypes.default_int_dtype())
    if keepdims:
        out = lax.reshape(out, tuple(1 if d == axis else n for d, n in enumerate(shape)))
    return out


def argmax(a, axis: int | None = None, keepdims: bool = False):
    """Index of the largest element along ``axis`` (of the flattened array if None).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.argmax(jnp.array([[1, 5], [7, 2]]), axis=1)
        Array([1, 0], dtype=int32)
    """
    return _arg_reduce("argmax", lax.argmax, a, axis, keepdims)


def argmin(a, axis: int | None = None, keepdims: bool = False):
    """Index of the smallest element along ``axis`` (of the flattened array if None)."""
    return _arg_reduce("argmin", lax.argmin, a, axis, keepdims)
