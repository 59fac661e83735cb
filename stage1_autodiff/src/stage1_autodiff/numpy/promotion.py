"""Turning NumPy-style arguments into the operands primitives expect: arrays (or tracers) of
one dtype, broadcast to one shape. This is where NumPy's conveniences end and ``lax`` begins.
Stage 1's other modules and the later stages use these helpers too (``convert``, ``as_value``).
"""

from __future__ import annotations

import functools
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..config import State, config, one_of
from ..core import Array, Tracer, asarray, get_aval


def as_value(x: Any, dtype: Any = None) -> Any:
    """An array or tracer for ``x``; Python scalars become weakly typed arrays (or arrays of
    ``dtype``, so that ``2**31`` can be a uint32)."""
    if isinstance(x, (Array, Tracer)):
        return x if dtype is None else convert(x, dtypes.canonicalize_dtype(dtype))
    if isinstance(x, (list, tuple)) and any(_contains_tracer_or_array(e) for e in x):
        from .shapes import stack  # a list of arrays, e.g. jnp.array([x, y])
        stacked = stack([as_value(e) for e in x])
        stacked = convert(stacked, stacked.dtype, False)  # a list is never weakly typed
        return stacked if dtype is None else convert(stacked, dtypes.canonicalize_dtype(dtype))
    # Host data goes to ``dtype`` in one conversion from its own type: through the 32-bit
    # type first, a float64 16777217.0 would become the int32 16777216.
    return asarray(x, None if dtype is None else dtypes.canonicalize_dtype(dtype))


def _contains_tracer_or_array(x: Any) -> bool:
    if isinstance(x, (Array, Tracer)):
        return True
    return isinstance(x, (list, tuple)) and any(_contains_tracer_or_array(e) for e in x)


def convert(x: Any, dtype: np.dtype, weak_type: bool = False) -> Any:
    """``x`` with the given dtype and weak type, binding nothing when it already has them."""
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type:
        return x
    if type(x) is Array:  # a host constant: convert now, as the primitive's impl would
        return Array(dtypes.convert_values(x._value, dtype), weak_type)
    return lax.convert_element_type(x, dtype, weak_type)


def _scalar_like(x: Any, scalar: Any) -> Any | None:
    """A Python scalar next to an array takes the array's dtype when the lattice says so
    (the common case ``x * 2.0``); None when it does not (``int_array * 2.5``)."""
    if not isinstance(x, (Array, Tracer)):
        return None
    dtype, scalar_type = x.dtype, type(scalar)
    kind = dtype.kind if dtype.kind != "V" else dtypes.kind(dtype)  # (bfloat16's is "V")
    if kind == "c" and scalar_type in (int, float, complex) or (
            kind == "f" and scalar_type in (int, float)):
        if scalar_type is complex or abs(scalar) > _largest(dtype):
            with np.errstate(over="ignore"):  # 1e6 is inf in float16, as in JAX
                return Array(np.asarray(scalar, dtype), x.weak_type)
        return Array(np.asarray(scalar, dtype), x.weak_type)  # the eager fast path
    if kind in "iu" and scalar_type is int:
        return Array(_wrapped_int(scalar, dtype), x.weak_type)
    return None


@functools.cache
def _largest(dtype: np.dtype) -> float:
    """The largest finite value of a float or complex dtype (of its parts)."""
    return float(np.finfo(dtype).max)


def _wrapped_int(scalar: int, dtype: np.dtype) -> np.ndarray:
    """A Python int beside an integer array, as JAX takes it: it must fit the default int
    type (it is an int32 until it meets the array), and then wraps into the array's dtype
    (``int8_array + 300`` adds 44, ``uint32_array + -1`` adds 2**32 - 1)."""
    default = dtypes.default_int_dtype()
    if not np.iinfo(default).min <= scalar <= np.iinfo(default).max:
        raise OverflowError(f"Python int {scalar} is too large to convert to {default}, the "
                            f"type of a Python int beside an array of {dtype}. Make it an "
                            f"array of the type you mean first, e.g. jnp.asarray(x, {dtype}).")
    return np.asarray(scalar, default).astype(dtype)


_PYTHON_SCALARS = (int, float, complex)


def promote(*args: Any) -> list[Any]:
    """Converts all ``args`` to their common dtype, following JAX's promotion lattice."""
    if len(args) == 1 and isinstance(args[0], (Array, Tracer)) and args[0].dtype != np.bool_:
        return list(args)  # one operand keeps its type (a weak bool becomes a strong one)
    if len(args) == 2:  # fast paths: both already agree, or an array and a Python scalar
        x, y = args
        if isinstance(x, (Array, Tracer)) and isinstance(y, (Array, Tracer)):
            return _promote_pair(x, y)
        if type(y) in _PYTHON_SCALARS and (y_like := _scalar_like(x, y)) is not None:
            return [x, y_like]
        elif type(x) in _PYTHON_SCALARS and (x_like := _scalar_like(y, x)) is not None:
            return [x_like, y]
    values = [as_value(a) for a in args]
    typed = [(a.dtype, a.weak_type) for a in map(get_aval, values)]
    dtype, weak = dtypes.promote_types(*typed)
    if config.jax_numpy_dtype_promotion == "strict":
        _check_strict(typed, dtype)
    return [convert(v, dtype, weak) for v in values]


def _promote_pair(x: Any, y: Any) -> list[Any]:
    """``promote`` of two arrays or tracers, comparing their types directly: the common case
    of an eager op or a tape entry, so it skips building abstract values."""
    x_typed, y_typed = (x.dtype, x.weak_type), (y.dtype, y.weak_type)
    if x_typed == y_typed and (not x_typed[1] or x_typed[0] != np.bool_):
        return [x, y]  # (but two weak bools make a strong bool: the lattice says so)
    typed = dtypes.promote_types(x_typed, y_typed)
    if config.jax_numpy_dtype_promotion == "strict":
        _check_strict([x_typed, y_typed], typed[0])
    return [x if x_typed == typed else convert(x, *typed),
            y if y_typed == typed else convert(y, *typed)]


config.define("jax_numpy_dtype_promotion", "standard",
              "'strict': an operation on arrays of different dtypes raises TypePromotionError "
              "instead of promoting (a Python number still takes an array's dtype of its kind "
              "or above).", on_update=one_of("jax_numpy_dtype_promotion", "standard", "strict"),
              changes_tracing=True)
numpy_dtype_promotion = State("jax_numpy_dtype_promotion")
"""``jax_numpy_dtype_promotion`` for a block: ``with jax.numpy_dtype_promotion("strict"):``."""


def _check_strict(typed: list[tuple[np.dtype, bool]], result: np.dtype) -> None:
    """Strict promotion: the result must be the one dtype of the strongly typed operands (a
    weak one, such as a Python number, may join it; ``int32_array + 1.5`` may not)."""
    strong = {np.dtype(d) for d, weak in typed if not weak}
    if not strong or strong == {np.dtype(result)}:
        return
    names = ", ".join(sorted({str(np.dtype(d)) if not w else f"weak {np.dtype(d)}"
                              for d, w in typed}))
    raise dtypes.TypePromotionError(
        f"No implicit dtype promotion for operands of types {names}: "
        f"jax_numpy_dtype_promotion is 'strict'. Convert them to the dtype you mean first "
        f"(x.astype(jnp.float32)), or set the option to 'standard'.")


def promote_inexact(*args: Any) -> list[Any]:
    """Like :func:`promote`, then integers and booleans become floats: 64-bit integers the
    default float, narrower ones and booleans float32 (JAX's ``to_inexact_dtype``: with x64
    on, ``jnp.exp`` of an int32 is a float32)."""
    values = promote(*args)
    first = values[0]
    if dtypes.is_inexact(first.dtype):
        return values
    return [convert(v, dtypes.inexact_dtype(first.dtype), first.weak_type) for v in values]


def broadcast_shapes(*shapes: Sequence[int], op_name: str = "broadcast_shapes") -> tuple[int, ...]:
    """NumPy's broadcasting of shapes, with an error that names every shape."""
    if len(shapes) == 2 and (pair := _broadcast_pair(*shapes)) is not None:
        return pair  # (the usual case, ``x + b``, in one loop)
    nonscalar = {tuple(s) for s in shapes if len(s)}
    if len(nonscalar) <= 1:  # the common case: one shape, and scalars
        return nonscalar.pop() if nonscalar else ()
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(-ndim, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            listed = ", ".join(str(tuple(s)) for s in shapes)
            raise ValueError(f"{op_name} got incompatible shapes for broadcasting: {listed}. "
                             f"Dims must be equal or 1, aligned from the right.")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def _broadcast_pair(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """Two shapes broadcast together, or None when they do not."""
    if len(a) < len(b):
        a, b = b, a
    out, lead = list(a), len(a) - len(b)
    for i, n in enumerate(b, lead):
        if n != out[i]:
            if out[i] == 1:
                out[i] = n
            elif n != 1:
                return None
    return tuple(out)


def broadcast_to_shape(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` broadcast to ``shape`` by NumPy's rule (aligned from the right), or JAX's
    ``ValueError`` when it can't be."""
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    leading = len(shape) - aval.ndim
    if leading < 0 or any(n not in (1, shape[leading + i]) for i, n in enumerate(aval.shape)):
        raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} cannot be "
                         f"broadcast to {shape}.")
    return lax.broadcast_in_dim(x, shape, tuple(range(leading, len(shape))))


def promote_and_broadcast(op_name: str, *args: Any, inexact: bool = False,
                          keep_scalars: bool = True) -> list[Any]:
    """The operands of an elementwise op: one dtype, one shape; but a scalar beside an array
    stays a scalar when ``keep_scalars`` (the caller binds one binary primitive, which takes
    it as it is, as JAX's do: ``mul a 2.0:f32[]``)."""
    if len(args) == 2 and type(args[0]) is Array and type(args[1]) is Array:
        # The eager fast path: two host arrays of one type and shape need nothing (but two
        # weak bools make a strong bool, and an inexact op converts integers).
        x, y = args[0]._value, args[1]._value
        weak = args[0].weak_type
        if x.dtype == y.dtype and x.shape == y.shape and weak is args[1].weak_type \
                and x.dtype.kind in ("fc" if inexact else "fciub") \
                and not (weak and x.dtype.kind == "b"):
            return list(args)
    values = promote_inexact(*args) if inexact else promote(*args)
    if len(values) == 2:  # the usual binary op: the same shape, or a scalar kept as it is
        x_shape, y_shape = values[0].shape, values[1].shape
        if x_shape == y_shape or keep_scalars and (x_shape == () or y_shape == ()):
            return values
    shapes = [v.shape for v in values]
    if len(shapes) != 2 and all(s == shapes[0] for s in shapes):
        return values
    check_rank_promotion(op_name, shapes)
    shape = broadcast_shapes(*shapes, op_name=op_name)
    return [broadcast_to_shape(v, shape) for v in values]


config.define("jax_numpy_rank_promotion", "allow",
              "What an elementwise op does when its operands' ranks differ (NumPy adds leading "
              "dims): 'allow' it, 'warn' or 'raise'. A scalar beside an array is always "
              "allowed.", on_update=one_of("jax_numpy_rank_promotion", "allow", "warn", "raise"),
              changes_tracing=True)
numpy_rank_promotion = State("jax_numpy_rank_promotion")
"""``jax_numpy_rank_promotion`` for a block: ``with jax.numpy_rank_promotion("raise"): ...``."""


def check_rank_promotion(op_name: str, shapes: Sequence[Sequence[int]]) -> None:
    """Warns or raises, as ``jax_numpy_rank_promotion`` asks, when operands of different
    ranks (other than scalars) are broadcast: ``(3,)`` beside ``(2, 3)`` is often a bug that
    NumPy's rules hide."""
    mode = config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if len(s)}) <= 1:
        return
    listed = " ".join(str(tuple(s)) for s in shapes)
    if mode == "raise":
        raise ValueError(
            f"{op_name} would broadcast operands of different ranks, shapes {listed}, and "
            f"jax_numpy_rank_promotion is 'raise'. Add the leading dims yourself (x[None, :] "
            f"or jnp.expand_dims), or set the option to 'allow'.")
    warnings.warn(
        f"{op_name} broadcasts operands of different ranks, shapes {listed}, by NumPy's rank "
        f"promotion (jax_numpy_rank_promotion is 'warn'; 'allow' silences this).",
        stacklevel=_first_frame_outside_library())


def _first_frame_outside_library() -> int:
    """The stack level of the user's line that called in (an operator or a ``jnp`` function,
    through however many of the library's frames), for a warning to point at it."""
    frame, level = sys._getframe(2), 2
    while frame is not None and _LIBRARY.search(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


_LIBRARY = re.compile(r"[/\\]stage[1-4]_[a-z]+[/\\]")  # a file of one of the four packages


def canonicalize_axis(axis: int, ndim: int, op_name: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        valid = f"Valid axes are {-ndim} to {ndim - 1}." if ndim else "It has no axes."
        raise ValueError(f"{op_name}: axis {axis} is out of bounds for an array of dimension "
                         f"{ndim}. {valid}")
    return axis % ndim


def canonicalize_axes(axis: int | Sequence[int] | None, ndim: int,
                      op_name: str = "axis") -> tuple[int, ...]:
    """``None`` means every axis; negative axes count from the end; repeats are an error."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    result = tuple(canonicalize_axis(int(a), ndim, op_name) for a in axes)
    if len(set(result)) != len(result):
        raise ValueError(f"{op_name}: repeated axis in {axis}.")
    return result


def real_only(error: type[Exception], why: str) -> Callable[[Callable], Callable]:
    """Makes a function refuse complex arguments, with ``error`` (the type JAX raises) and a
    message saying ``why`` and what to do: for what needs an order, a sign or an exponent."""
    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for x in (*args, *kwargs.values()):
                if _is_complex(x):
                    raise error(f"{function.__name__} is not defined for complex numbers "
                                f"({why}). Take jnp.real, jnp.imag or jnp.abs first.")
            return function(*args, **kwargs)
        return checked
    return decorate


def _is_complex(x: Any) -> bool:
    if isinstance(x, complex):
        return True
    dtype = getattr(x, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind == "c"
