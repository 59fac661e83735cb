"""Creating arrays: from data, filled, ranges and the identity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes, extension
from .. import prims as lax
from ..config import config
from ..core import Array, Tracer, get_aval
from ..core import asarray as _core_asarray
from ..errors import ConcretizationTypeError
from .promotion import as_value, broadcast_to_shape, convert

Shape = int | Sequence[int]


def _shape(shape: Shape) -> tuple[int, ...]:
    if isinstance(shape, Tracer) or (isinstance(shape, (tuple, list))
                                     and any(isinstance(d, Tracer) for d in shape)):
        raise TypeError(
            "Shapes must be concrete: a traced value was used as a shape. Under jit, pass the "
            "size as a static argument (static_argnums or static_argnames).")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in shape:
        if not isinstance(d, (int, np.integer)) or d < 0:
            raise TypeError(f"Shapes must be sequences of non-negative integers, got {shape}. "
                            f"A shape cannot depend on a traced value.")
    return tuple(int(d) for d in shape)


def _dtype(dtype: Any, default: np.dtype, fun_name: str) -> np.dtype:
    """The requested dtype (a warning if 64 bits are asked for without x64), or ``default``."""
    if dtype is None:
        return default
    return dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)


def array(object: Any, dtype: Any = None, copy: bool = True, order: Any = "K",  # noqa: A002
          ndmin: int = 0, *, device: Any = None, out_sharding: Any = None) -> Any:
    """An array from data: nested lists, NumPy arrays, scalars or arrays, with at least
    ``ndmin`` dims (leading ones added). NumPy data is always copied; an array is copied
    (a new array: donating it leaves ``object`` alone) unless ``copy=False``.

    Python scalars stay weakly typed, as in JAX; float64 data becomes float32 unless
    ``jax_enable_x64`` is on. ``device``/``out_sharding``: where the result lives (see
    :func:`zeros`).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.array([[1, 2], [3, 4]])
        Array([[1, 2],
               [3, 4]], dtype=int32)
    """
    out = _array(object, dtype, "array", order, copy)
    missing = ndmin - get_aval(out).ndim
    if missing > 0:
        out = lax.reshape(out, (1,) * missing + get_aval(out).shape)
    return placed(out, device, out_sharding)


def asarray(a: Any, dtype: Any = None, order: Any = None, *, copy: bool | None = None,
            device: Any = None, out_sharding: Any = None) -> Any:
    """Like :func:`array`, but an array is returned as it is unless ``copy=True``."""
    return placed(_array(a, dtype, "asarray", order, copy), device, out_sharding)


def _array(object: Any, dtype: Any, fun_name: str, order: Any = None,  # noqa: A002
           copy: bool | None = None) -> Any:
    if order not in (None, "K"):
        raise NotImplementedError(
            f"{fun_name}: only order='K' is implemented, as in JAX (got order={order!r}): "
            f"an array's memory layout is not the user's to choose.")
    if object is None:
        raise ValueError(f"jnp.{fun_name}(None): None is not an array value. Pass a number "
                         f"or a sequence of numbers (jnp.nan for a missing one).")
    if dtype is None:
        out = as_value(object)
    else:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)
        out = convert(as_value(object, dtype), dtype)
    # An array (or tracer) passed through unchanged is copied when asked: JAX's ``copy``.
    return lax.copy(out) if copy and out is object else out


def placed(x: Any, device: Any, out_sharding: Any) -> Any:
    """``x`` on ``device`` (a device or a sharding) or laid out as ``out_sharding``: the
    keywords of the functions that make arrays. Stage 1 has one device, the host; later
    stages place arrays on a GPU or over a mesh (``extension.place``)."""
    if device is None and out_sharding is None and config.jax_default_device is None:
        return x  # (else the placement puts x on jax.default_device's device)
    if device is not None and out_sharding is not None:
        raise ValueError(f"Only one of device= and out_sharding= can be given: got "
                         f"device={device!r} and out_sharding={out_sharding!r}.")
    return extension.place(x, device, out_sharding)


def full(shape: Shape, fill_value: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (which may be an array).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.full((2,), 7)
        Array([7, 7], dtype=int32, weak_type=True)
    """
    weak_type = False if device is not None else None  # JAX's: a placed fill is strong
    return placed(_full(shape, fill_value, dtype, "full", weak_type), device, out_sharding)


def _full(shape: Shape, fill_value: Any, dtype: Any, fun_name: str,
          weak_type: bool | None = None) -> Any:
    """``fill_value`` broadcast to ``shape``, weakly typed as ``weak_type`` says (when None:
    as the fill value is, if no dtype is asked)."""
    shape = _shape(shape)
    requested = None if dtype is None else _dtype(dtype, None, fun_name)
    if type(fill_value) is float and requested is not None and dtypes.is_int(requested):
        # As lax.full: XLA's conversion from the float64 value (NaN gives 0, 1e10 saturates).
        value = Array(dtypes.convert_values(np.asarray(fill_value), requested), False)
    else:
        value = as_value(fill_value, requested)
    aval = get_aval(value)
    if weak_type is None:
        weak_type = aval.weak_type and dtype is None
    value = convert(value, aval.dtype if requested is None else requested, weak_type)
    return broadcast_to_shape(value, shape) if aval.shape != shape else value


def zeros(shape: Shape, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    """An array of zeros (float32 by default). ``device``: a device or a sharding to put
    it on; ``out_sharding``: its layout over a mesh (stage 4). At most one of them."""
    out = lax.full(_shape(shape), 0, _dtype(dtype, dtypes.default_float_dtype(), "zeros"))
    return placed(out, device, out_sharding)


def ones(shape: Shape, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    """An array of ones (float32 by default); ``device``, ``out_sharding`` as for zeros."""
    out = lax.full(_shape(shape), 1, _dtype(dtype, dtypes.default_float_dtype(), "ones"))
    return placed(out, device, out_sharding)


class _Like(NamedTuple):
    """What a ``*_like`` result takes from its operand (or from the arguments that override)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool
    sharding: Any


def _like(a: Any, dtype: Any, shape: Shape | None, fun_name: str, device: Any) -> _Like:
    """As JAX's ``lax.full_like``: the result is weak when ``a`` is and no dtype (nor, as in
    JAX, a ``device``) is asked, and keeps ``a``'s sharding (stage 4) when no shape is."""
    aval = get_aval(as_value(a))
    weak_type = aval.weak_type and dtype is None and device is None
    # JAX's choice: a traced ``a`` gives its sharding without ``shape``; a concrete one,
    # when the shape is its own and the result is not weakly typed.
    if isinstance(a, Tracer):
        keep = shape is None
    else:
        keep = (shape is None or tuple(_shape(shape)) == tuple(aval.shape)) and not weak_type
    return _Like(aval.shape if shape is None else _shape(shape),
                 _dtype(dtype, aval.dtype, fun_name), weak_type,
                 aval.sharding if keep else None)


def zeros_like(a: Any, dtype: Any = None, shape: Shape | None = None, *, device: Any = None,
               out_sharding: Any = None) -> Any:
    """Zeros with the shape, dtype and weak type of ``a``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.zeros_like(1.5)
        Array(0., dtype=float32, weak_type=True)
    """
    like = _like(a, dtype, shape, "zeros_like", device)
    out = lax.full(like.shape, 0, like.dtype, like.weak_type, like.sharding)
    return placed(out, device, out_sharding)


def ones_like(a: Any, dtype: Any = None, shape: Shape | None = None, *, device: Any = None,
              out_sharding: Any = None) -> Any:
    """Ones with the shape, dtype and weak type of ``a``."""
    like = _like(a, dtype, shape, "ones_like", device)
    out = lax.full(like.shape, 1, like.dtype, like.weak_type, like.sharding)
    return placed(out, device, out_sharding)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Shape | None = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:
    """``fill_value`` with the shape, dtype and weak type of ``a``."""
    like = _like(a, dtype, shape, "full_like", device)
    if np.ndim(fill_value) != 0:  # NB: JAX broadcasts an array fill value as jnp.full does
        out = _full(like.shape, fill_value, like.dtype, "full_like", weak_type=False)
    else:
        out = _full(like.shape, fill_value, like.dtype, "full_like", like.weak_type)
        out = out if like.sharding is None else lax.with_sharding_of(out, a)
    return placed(out, device, out_sharding)


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None, out_sharding: Any = None) -> Any:
    """Evenly spaced values in [start, stop), as NumPy's ``arange``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.arange(4)
        Array([0, 1, 2, 3], dtype=int32)
    """
    for bound in (start, stop, step):
        if isinstance(bound, Tracer):
            raise ConcretizationTypeError(
                "arange requires concrete bounds: its length would depend on a traced value. "
                "Use a static argument or a fixed size.")
    if stop is None and step is None and dtype is None and isinstance(start, int):
        out = lax.iota(dtypes.default_int_dtype(), (max(int(start), 0),))
    else:
        values = np.arange(start, stop, step)
        # the bounds' promoted type, a Python number counting as weak (np.int8(5): int8)
        typed = [(get_aval(v).dtype, get_aval(v).weak_type) for v in
                 (as_value(b) for b in (start, stop, step) if b is not None)]
        out = _core_asarray(values, _dtype(dtype, dtypes.promote_types(*typed)[0], "arange"))
    return placed(out, device, out_sharding)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *, device: Any = None,
             out_sharding: Any = None) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (arrays: along a new ``axis``),
    as ``start * (1 - t) + stop * t``, which lands on both ends; with ``retstep``, also the
    step. The type is ``start``'s and ``stop``'s made inexact (complex stays complex);
    integers are floored from it. Differentiable in both ends.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linspace(0.0, 1.0, 5)
        Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    from .shapes import concatenate, expand_dims, reshape
    from .ufuncs import floor
    num = _count(num, "linspace")
    start, stop, dtype, work = _ends(start, stop, dtype, "linspace")
    shape = np.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape)
    start, stop = broadcast_to_shape(start, shape), broadcast_to_shape(stop, shape)
    axis = axis + len(shape) + 1 if axis < 0 else axis
    bounds = (*shape[:axis], 1, *shape[axis:])
    div = num - 1 if endpoint else num
    delta = lax.full((), np.nan, work)
    if num > 1:
        delta = (stop - start) / lax.full((), div, work)
        real = dtypes.real_dtype(work)
        t = reshape(lax.iota(real, (div,)), (1,) * axis + (div,) + (1,) * len(shape[axis:]))
        # times 1/div rather than over div: XLA folds the division by a constant that way
        t = convert(t * lax.full((), 1 / np.asarray(div, real), real), work, False)
        out = reshape(start, bounds) * (1 - t) + reshape(stop, bounds) * t
        if endpoint:
            out = concatenate([out, expand_dims(stop, axis)], axis)
    elif num == 1:
        delta = delta if endpoint else stop - start
        out = reshape(start, bounds)
    else:
        out = lax.full((*shape[:axis], 0, *shape[axis:]), 0, work)
    if not dtypes.is_inexact(dtype):
        out = floor(out)
    out = placed(convert(out, dtype, False), device, out_sharding)
    return (out, delta) if retstep else out


def _ends(start: Any, stop: Any, dtype: Any, fun_name: str) -> tuple[Any, Any, np.dtype,
                                                                      np.dtype]:
    """A range's ends in the type it computes in, the type asked for (by default the ends'
    made inexact) and the type it computes in (floats up to 32 bits for integers, as JAX)."""
    from .promotion import promote_inexact
    start, stop = promote_inexact(start, stop)
    dtype = _dtype(dtype, get_aval(start).dtype, fun_name)
    work = dtypes.inexact_dtype(dtype)
    return convert(start, work, False), convert(stop, work, False), dtype, work


def _count(num: Any, fun_name: str) -> int:
    if isinstance(num, Tracer):
        raise ConcretizationTypeError(
            f"{fun_name}: the number of samples must be concrete, but it is a traced value. "
            f"Under jit, pass it as a static argument (static_argnums or static_argnames).")
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    return num


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *,
        device: Any = None, out_sharding: Any = None) -> Any:
    """A 2-d array with ones on the ``k``-th diagonal.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.eye(2)
        Array([[1., 0.],
               [0., 1.]], dtype=float32)
    """
    M = N if M is None else M
    shape = (N, M)
    rows = lax.iota(np.int32, shape, 0)
    cols = lax.iota(np.int32, shape, 1)
    on_diagonal = lax.eq(lax.add(rows, lax.full(shape, k, np.dtype(np.int32))), cols)
    out = lax.convert_element_type(on_diagonal,
                                   _dtype(dtype, dtypes.default_float_dtype(), "eye"))
    return placed(out, device, out_sharding)


def identity(n: int, dtype: Any = None) -> Any:
    """The ``n`` by ``n`` identity matrix."""
    return eye(n, dtype=_dtype(dtype, dtypes.default_float_dtype(), "identity"))



def empty(shape: Shape, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    """An array of ``shape``: zeros, as JAX's arrays are never uninitialised."""
    return zeros(shape, dtype, device=device, out_sharding=out_sharding)


def empty_like(prototype: Any, dtype: Any = None, shape: Shape | None = None, *,
               device: Any = None, out_sharding: Any = None) -> Any:
    """An array like ``prototype``: zeros, as in JAX."""
    return zeros_like(prototype, dtype, shape, device=device, out_sharding=out_sharding)


def copy(a: Any, order: Any = None) -> Any:
    """A copy of ``a``: a new array, which can be donated or deleted without ``a``."""
    return array(a, copy=True, order=order)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """``base`` to the powers of ``linspace(start, stop, num)``."""
    from .ufuncs import power
    start, stop, dtype, _ = _ends(start, stop, dtype, "logspace")
    return convert(power(base, linspace(start, stop, num, endpoint, axis=axis)), dtype, False)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    """``num`` values from ``start`` to ``stop`` in geometric progression (each the last
    times a constant): ``logspace`` of their base-10 logs, with ``start``'s sign."""
    from .mathematical import log10
    from .shapes import moveaxis
    from .ufuncs import sign
    start, stop, dtype, work = _ends(start, stop, dtype, "geomspace")
    direction = sign(start)
    out = direction * logspace(log10(start / direction), log10(stop / direction), num,
                               endpoint, 10.0, work)
    return convert(moveaxis(out, 0, axis), dtype, False)
