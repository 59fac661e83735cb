"""Reductions: sum, mean, var, std, max, min, prod, argmax, argmin, all, any.

Each takes ``axis`` (None, an int or a tuple, negative allowed) and ``keepdims``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .promotion import as_value, canonicalize_axes, convert, promote_inexact, real_only

Axis = int | Sequence[int] | None


def _keep_dims(out: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    if not keepdims:
        return out
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return lax.reshape(out, kept_shape)


def _reduce(name: str, lax_fn, x, axis: Axis, keepdims: bool) -> Any:
    aval = get_aval(as_value(x))
    # A reduction's result is never weakly typed, even of a Python scalar (``jnp.sum(1.5)``):
    # NB: JAX's jnp reductions (jax/_src/numpy/reductions.py:_reduction) convert the operand
    # to a strong dtype first, as here; the lax reductions themselves keep the weak type.
    x = convert(as_value(x), aval.dtype)
    shape = aval.shape
    axes = canonicalize_axes(axis, len(shape), name)
    return _keep_dims(lax_fn(x, axes), shape, axes, keepdims)


# --8<-- [start:sum]
def sum(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False,  # noqa: A001
        initial=None, where=None, promote_integers: bool = True):
    """Sum over ``axis``. Booleans and small integers sum as the default integer (unless
    ``promote_integers=False``). ``where``: only the elements where it is true count;
    ``initial`` is added to each sum.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.sum(jnp.ones((2, 3)), axis=0)
        Array([2., 2., 2.], dtype=float32)
    """
    _check_no_out(out)
    a, narrow = widened(as_value(a), dtype)
    a = _accumulation_dtype(a, dtype, "sum", promote_integers)
    a = _masked(a, where, 0)
    reduce, add = (lax.reduce_sum, lax.add) if get_aval(a).dtype != np.bool_ else (
        lax.reduce_or, lax.bitwise_or)  # summed as bool (dtype=bool): true if any is, as JAX
    out = _with_initial(_reduce("sum", reduce, a, axis, keepdims), initial, add)
    return narrowed(out, narrow)
# --8<-- [end:sum]


def widened(a: Any, dtype: Any) -> tuple[Any, np.dtype | None]:
    """A float16, bfloat16 or 8-bit float operand in float32, when no dtype is asked for,
    and the type to round the result back to: as JAX's, sums of 16-bit floats accumulate in
    float32 (in their own type, 4096 bfloat16 values sum with an error of several units;
    JAX sums 8-bit floats in their own type: see "Differences from JAX")."""
    narrow = get_aval(a).dtype
    if dtype is None and dtypes.accumulation_dtype(narrow) != narrow:
        return convert(a, np.dtype(np.float32)), narrow
    return a, None


def narrowed(out: Any, narrow: np.dtype | None) -> Any:
    return out if narrow is None else convert(out, narrow)


def _masked(a: Any, where: Any, identity: Any) -> Any:
    """``a`` with ``identity`` where ``where`` is false: what a masked reduction reduces."""
    if where is None:
        return a
    from .ufuncs import where as select
    a = as_value(a)
    return select(where, a, lax.full((), identity, get_aval(a).dtype))


def _with_initial(result: Any, initial: Any, combine) -> Any:
    """The reduction of ``initial`` with each result (it joins every reduced slice)."""
    if initial is None:
        return result
    aval = get_aval(result)
    return combine(result, lax.broadcast_in_dim(convert(as_value(initial), aval.dtype),
                                                aval.shape, ()))


def _check_no_out(out: Any) -> None:
    if out is not None:
        raise NotImplementedError("The 'out' argument is not supported: JAX arrays are "
                                  "immutable. Use the returned array instead.")


def _accumulation_dtype(a: Any, dtype: Any, fun_name: str, promote_integers: bool = True
                        ) -> Any:
    """Sums and products of booleans and of integers narrower than the default integer
    accumulate in the default integer (int64 with jax_enable_x64), as NumPy and JAX do;
    with ``promote_integers=False``, integers keep their type."""
    if dtype is not None:
        return convert(a, dtypes.check_and_canonicalize_user_dtype(dtype, fun_name))
    a_dtype = get_aval(a).dtype
    if a_dtype == np.bool_:
        return convert(a, dtypes.default_int_dtype())
    if not promote_integers:
        return a
    if dtypes.is_int(a_dtype) and a_dtype.itemsize < dtypes.default_int_dtype().itemsize:
        wide = (dtypes.canonicalize_dtype(dtypes.uint64) if a_dtype.kind == "u"
                else dtypes.default_int_dtype())  # uint32 without x64
        return convert(a, wide)
    return a


def _requested_dtype(a: Any, dtype: Any, fun_name: str) -> Any:
    if dtype is None:
        return a
    return convert(a, dtypes.check_and_canonicalize_user_dtype(dtype, fun_name))


def integer_mean_dtype(dtype: Any, fun_name: str) -> tuple[np.dtype, np.dtype] | None:
    """For a mean asked in an integer ``dtype``: the float type to average in and the integer
    one to round the mean toward zero into, as JAX's; None for no dtype or an inexact one."""
    if dtype is None or dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
        return None  # (the caller warns of a 64-bit request, once)
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)
    if dtype == np.dtype(bool):
        raise TypeError(f"jnp.{fun_name}: a mean cannot be computed in bool; ask for a "
                        f"number type.")
    return dtypes.promote_types((dtype, False), (np.dtype(float), True))[0], dtype


def refuse_integer_dtype(dtype: Any, fun_name: str) -> None:
    """A variance (or standard deviation) asked in a dtype that is not inexact: refused, as
    JAX's ``std`` does (JAX's ``var`` computes it in integer arithmetic)."""
    if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
        raise ValueError(f"dtype argument to jnp.{fun_name} must be inexact (a float or complex "
                         f"type); got {np.dtype(dtype)}. Compute in floats and convert the "
                         f"result.")


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[d] for d in axes], dtype=np.int64))


def mean(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, *,
         where=None):
    """Arithmetic mean over ``axis`` (in floating point); of the elements where ``where`` is
    true, if given.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.mean(jnp.array([1, 2, 3, 4]))
        Array(2.5, dtype=float32)
    """
    _check_no_out(out)
    if (integer := integer_mean_dtype(dtype, "mean")) is not None:
        return convert(mean(a, axis, integer[0], None, keepdims, where=where), integer[1])
    (a,) = promote_inexact(_requested_dtype(as_value(a), dtype, "mean"))
    a, narrow = widened(a, dtype)
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape), "mean")
    total = sum(a, axes, keepdims=keepdims, where=where)
    aval = get_aval(total)
    if where is not None:  # as many as are kept
        return narrowed(lax.div(total, _kept(where, shape, axes, keepdims, aval.dtype)), narrow)
    # divided by a scalar, as JAX's: div b 3.0:f32[]
    return narrowed(lax.div(total, lax.full((), _count(shape, axes), aval.dtype,
                                             aval.weak_type)), narrow)


def _kept(where: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool,
          dtype: np.dtype) -> Any:
    """How many elements ``where`` keeps in each reduced slice, in ``dtype``."""
    from .shapes import broadcast_to
    return sum(convert(broadcast_to(where, shape), dtype), axes, keepdims=keepdims)


def var(a, axis: Axis = None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False,
        *, where=None, mean: Any = None, correction: float | None = None):
    """Variance: the mean squared deviation from the mean (or the given ``mean``, kept dims),
    divided by ``n - ddof`` (``correction`` is the array API's name for ``ddof``); of the
    elements where ``where`` is true, if given.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.var(jnp.array([1.0, 2.0, 3.0, 4.0]))
        Array(1.25, dtype=float32)
    """
    _check_no_out(out)
    if correction is not None:
        if ddof:
            raise ValueError("var: ddof and correction are the same argument; give one.")
        ddof = correction
    refuse_integer_dtype(dtype, "var")
    (a,) = promote_inexact(_requested_dtype(as_value(a), dtype, "var"))
    a, narrow = widened(a, dtype)
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape), "var")
    center = _mean(a, axes, keepdims=True, where=where) if mean is None else as_value(mean)
    centered = lax.sub(a, lax.broadcast_in_dim(convert(center, get_aval(a).dtype), shape,
                                               tuple(range(len(shape)))))
    if get_aval(centered).dtype.kind == "c":  # |x - mean|², a real number
        real, imag = lax.real(centered), lax.imag(centered)
        squares = lax.add(lax.mul(real, real), lax.mul(imag, imag))
    else:
        squares = lax.mul(centered, centered)
    total = sum(squares, axes, keepdims=keepdims, where=where)
    # n - ddof <= 0 leaves no degrees of freedom: NaN (and a NaN gradient), as JAX's where
    # gives (NumPy: inf, and a plain quotient would be a negative "variance")
    if where is None:
        degrees = lax.full_like(total, _count(shape, axes) - ddof)
    else:
        degrees = lax.sub(_kept(where, shape, axes, keepdims, get_aval(total).dtype),
                          lax.full_like(total, ddof))
    positive = lax.gt(degrees, lax.full_like(degrees, 0))
    return narrowed(lax.select_n(positive, lax.full_like(total, np.nan), lax.div(total, degrees)),
                    narrow)


_mean = mean


def std(a, axis: Axis = None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False,
        *, where=None, mean: Any = None, correction: float | None = None):
    """Standard deviation: the square root of :func:`var`."""
    refuse_integer_dtype(dtype, "std")
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                        correction=correction))


def _check_nonempty(name: str, x: Any, axis: Axis) -> None:
    shape = get_aval(x).shape
    axes = canonicalize_axes(axis, len(shape), name)
    if builtins.any(shape[d] == 0 for d in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no "
                         f"identity (shape {shape}, axis {axis}).")


def max(a, axis: Axis = None, out=None, keepdims: bool = False,  # noqa: A001
        initial=None, where=None):
    """Largest element over ``axis`` (NaN if any element is NaN), and ``initial``; with
    ``where``, of the elements where it is true (then ``initial`` is required: a slice may
    keep none)."""
    return _extremum("max", lax.reduce_max, lax.max, dtypes.lowest, a, axis, out, keepdims,
                     initial, where)


def min(a, axis: Axis = None, out=None, keepdims: bool = False,  # noqa: A001
        initial=None, where=None):
    """Smallest element over ``axis`` (NaN if any element is NaN), and ``initial``; with
    ``where``, of the elements where it is true (and ``initial``)."""
    return _extremum("min", lax.reduce_min, lax.min, dtypes.highest, a, axis, out, keepdims,
                     initial, where)


def _extremum(name: str, reduce, combine, identity, a, axis: Axis, out, keepdims: bool,
              initial, where) -> Any:
    _check_no_out(out)
    a = as_value(a)
    if where is not None and initial is None:
        raise ValueError(f"{name}: a reduction with no identity needs initial= to use a where "
                         f"mask (a slice may keep no element); pass the value an empty slice "
                         f"should give.")
    if initial is None:
        _check_nonempty(name, a, axis)
    if where is not None:
        a = _masked(a, where, identity(get_aval(a).dtype))
    return _with_initial(_reduce(name, reduce, a, axis, keepdims), initial, combine)


amax, amin = max, min


def prod(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, initial=None,
         where=None, promote_integers: bool = True):
    """Product over ``axis`` (of the elements where ``where`` is true), times ``initial``."""
    _check_no_out(out)
    a, narrow = widened(as_value(a), dtype)
    a = _masked(_accumulation_dtype(a, dtype, "prod", promote_integers), where, 1)
    reduce, mul = (lax.reduce_prod, lax.mul) if get_aval(a).dtype != np.bool_ else (
        lax.reduce_and, lax.bitwise_and)  # a product as bool: true if all are, as JAX
    out = _with_initial(_reduce("prod", reduce, a, axis, keepdims), initial, mul)
    return narrowed(out, narrow)


def all(a, axis: Axis = None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
    """Whether every element over ``axis`` (where ``where`` is true) is true."""
    from .ufuncs import _as_bool
    _check_no_out(out)
    return _reduce("all", lax.reduce_and, _masked(_as_bool(a), where, True), axis, keepdims)


def any(a, axis: Axis = None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
    """Whether any element over ``axis`` (where ``where`` is true) is true."""
    from .ufuncs import _as_bool
    _check_no_out(out)
    return _reduce("any", lax.reduce_or, _masked(_as_bool(a), where, False), axis, keepdims)


def _arg_reduce(name: str, lax_fn, a, axis: int | None, out, keepdims: bool):
    _check_no_out(out)
    a = as_value(a)
    original_ndim = get_aval(a).ndim
    if axis is None:
        flat = lax.reshape(a, (get_aval(a).size,))
        result = _arg_reduce(name, lax_fn, flat, 0, None, False)
        return lax.reshape(result, (1,) * original_ndim) if keepdims else result
    _check_nonempty(name, a, axis)
    shape = get_aval(a).shape
    (axis,) = canonicalize_axes(axis, len(shape), name)
    result = lax_fn(a, axis, dtypes.default_int_dtype())
    if keepdims:
        result = lax.reshape(result, tuple(1 if d == axis else n for d, n in enumerate(shape)))
    return result


@real_only(TypeError, "they have no order")
def argmax(a, axis: int | None = None, out=None, keepdims: bool = False):
    """Index of the largest element along ``axis`` (of the flattened array if None).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.argmax(jnp.array([[1, 5], [7, 2]]), axis=1)
        Array([1, 0], dtype=int32)
    """
    return _arg_reduce("argmax", lax.argmax, a, axis, out, keepdims)


@real_only(TypeError, "they have no order")
def argmin(a, axis: int | None = None, out=None, keepdims: bool = False):
    """Index of the smallest element along ``axis`` (of the flattened array if None)."""
    return _arg_reduce("argmin", lax.argmin, a, axis, out, keepdims)
