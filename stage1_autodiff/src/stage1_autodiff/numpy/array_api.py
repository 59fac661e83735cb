"""Functions of the array API standard (which NumPy 2 adopted) that spell older ones anew:
running sums and products with an optional initial element, and products of vectors and
matrices that broadcast over leading dims.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.cumulative_sum(jnp.array([1, 2, 3]), include_initial=True)
    Array([0, 1, 3, 6], dtype=int32)
"""

from __future__ import annotations

from typing import Any

from .. import prims as lax
from ..core import get_aval
from .contractions import matmul
from .cumulative import cumprod, cumsum
from .mathematical import conj
from .promotion import as_value, canonicalize_axis
from .reductions import _accumulation_dtype
from .shapes import concatenate, moveaxis


def _running(name: str, running, initial: int, x, axis: int | None, dtype: Any,
             include_initial: bool):
    x = as_value(x)
    ndim = get_aval(x).ndim
    if ndim == 0:
        raise ValueError(f"{name}: the input must not be a scalar: a running total needs an "
                         f"axis to run along.")
    if axis is None and ndim > 1:
        raise ValueError(f"{name}: the input has {ndim} dims, so axis must be given (it may "
                         f"be left out only for 1-D inputs).")
    axis = canonicalize_axis(0 if axis is None else axis, ndim, name)
    out = running(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(get_aval(out).shape)
        shape[axis] = 1
        start = lax.full(tuple(shape), initial, get_aval(out).dtype)
        out = concatenate([start, out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False):
    """The running sum along ``axis`` (which 1-D inputs may leave out), starting with 0 if
    ``include_initial``. Booleans and narrow integers sum as the default integer.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.cumulative_sum(jnp.array([[1, 2], [3, 4]]), axis=1)
        Array([[1, 3],
               [3, 7]], dtype=int32)
    """
    if dtype is None:
        x = _accumulation_dtype(as_value(x), None, "cumulative_sum")
    return _running("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False):
    """The running product along ``axis`` (which 1-D inputs may leave out), starting with 1
    if ``include_initial``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.cumulative_prod(jnp.array([1.0, 2.0, 3.0]), include_initial=True)
        Array([1., 1., 2., 6.], dtype=float32)
    """
    return _running("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


def vecdot(x1, x2, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None):
    """The dot products of the vectors along ``axis`` of ``x1`` (conjugated) and ``x2``,
    the other dims broadcast.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.vecdot(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([1.0, 1.0]))
        Array([3., 7.], dtype=float32)
    """
    del precision, preferred_element_type
    x1, x2 = as_value(x1), as_value(x2)
    if get_aval(x1).shape[axis] != get_aval(x2).shape[axis]:
        raise ValueError(f"vecdot: the vectors' lengths must match; got shapes "
                         f"{get_aval(x1).shape} and {get_aval(x2).shape} with axis={axis}.")
    x1, x2 = moveaxis(conj(x1), axis, -1), moveaxis(x2, axis, -1)
    return matmul(x1[..., None, :], x2[..., :, None])[..., 0, 0]


def matvec(x1, x2, /):
    """The products of the matrices in ``x1`` (last two dims) and the vectors in ``x2``
    (last dim), the other dims broadcast.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.matvec(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
        Array([3, 7], dtype=int32)
    """
    x1, x2 = as_value(x1), as_value(x2)
    _check_ndims("matvec", x1, 2, x2, 1)
    return matmul(x1, x2[..., :, None])[..., 0]


def vecmat(x1, x2, /):
    """The products of the vectors in ``x1`` (last dim, conjugated) and the matrices in
    ``x2`` (last two dims), the other dims broadcast."""
    x1, x2 = as_value(x1), as_value(x2)
    _check_ndims("vecmat", x1, 1, x2, 2)
    return matmul(conj(x1)[..., None, :], x2)[..., 0, :]


def _check_ndims(name: str, x1, least1: int, x2, least2: int) -> None:
    for position, x, least in ((1, x1, least1), (2, x2, least2)):
        if get_aval(x).ndim < least:
            raise ValueError(f"{name}: x{position} must have at least {least} dims, got shape "
                             f"{get_aval(x).shape}.")
