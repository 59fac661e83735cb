"""More of ``jax.lax``, each composed of the primitives we have: JAX's conveniences over one
primitive (``dot``, ``broadcast``, ``broadcasted_iota``, ``slice_in_dim``, ``index_in_dim``,
``sort_key_val``, ``collapse``), and elementwise functions that JAX makes primitives of
(``square``, ``round``, ``is_finite``, ``population_count``, ``clz``), which here are a few
primitives each, so every interpreter of later stages runs them with no new rules.

NB: JAX's are in jax/_src/lax/lax.py and jax/_src/lax/slicing.py, with ``square_p``,
``round_p``, ``is_finite_p``, ``population_count_p`` and ``clz_p`` as primitives of their own.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from . import prims as lax
from .core import get_aval
from .numpy.promotion import as_value

__all__ = ["RoundingMethod", "approx_max_k", "approx_min_k", "batch_matmul",
           "broadcast", "broadcast_shapes", "broadcast_to_rank", "broadcasted_iota",
           "clz", "collapse", "cumlogsumexp", "dot", "dtype", "index_in_dim", "iota",
           "is_finite", "mulhi", "optimization_barrier", "pad", "population_count", "pow",
           "reciprocal", "reduce_xor", "round", "scatter_sub", "slice_in_dim",
           "sort_key_val", "split", "square"]


def _check_kind(name: str, x: Any, kinds: str, accepted: str) -> Any:
    """``x`` as an array whose dtype's kind is one of ``kinds``, or JAX's TypeError."""
    x = as_value(x)
    dtype = get_aval(x).dtype
    if dtypes.kind(dtype) not in kinds:
        raise TypeError(f"{name} does not accept dtype {dtype.name}. Accepted dtypes are "
                        f"subtypes of {accepted}.")
    return x


def _full_like(x: Any, value: Any) -> Any:
    return lax.full_like(x, np.asarray(value, get_aval(x).dtype))


# ------------------------------------------------------------------------------------------
# Elementwise
# ------------------------------------------------------------------------------------------


def reciprocal(x: Any) -> Any:
    """1 / x, as ``integer_pow(x, -1)`` (so an integer ``x`` is refused, as in JAX).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.lax.reciprocal(jax.numpy.array([2.0, 4.0]))
        Array([0.5 , 0.25], dtype=float32)
    """
    return lax.integer_pow(as_value(x), -1)


def square(x: Any) -> Any:
    """x * x, as ``integer_pow(x, 2)`` (a number of any kind but bool).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.lax.square(jax.numpy.array([-3, 2]))
        Array([9, 4], dtype=int32)
    """
    x = _check_kind("square", x, "iufc", "integer, floating, complexfloating")
    return lax.integer_pow(x, 2)


class RoundingMethod(enum.IntEnum):
    """How ``round`` breaks a tie (a value exactly halfway between two integers)."""

    AWAY_FROM_ZERO = 0  # 0.5 -> 1, -0.5 -> -1
    TO_NEAREST_EVEN = 1  # 0.5 -> 0, 1.5 -> 2: "banker's rounding"


def round(x: Any, rounding_method: RoundingMethod | int = RoundingMethod.AWAY_FROM_ZERO
          ) -> Any:  # noqa: A001 -- lax's name
    """Each element rounded to the nearest integer, ties broken by ``rounding_method``.

    The fraction ``x - floor(x)`` is exact in floating point, so comparing it with 0.5 finds
    the ties exactly (``floor(x + 0.5)`` would not: 0.49999997 + 0.5 rounds up to 1).
    The derivative is 0, as JAX's.

    Example:
        >>> import stage1_autodiff as jax
        >>> x = jax.numpy.array([0.5, 1.5, -2.5, 2.7])
        >>> jax.lax.round(x), jax.lax.round(x, jax.lax.RoundingMethod.TO_NEAREST_EVEN)
        (Array([ 1.,  2., -3.,  3.], dtype=float32), Array([ 0.,  2., -2.,  3.], dtype=float32))
    """
    rounding_method = RoundingMethod(rounding_method)
    x = _check_kind("round", x, "f", "floating")
    below = lax.floor(x)
    above = lax.add(below, _full_like(below, 1))
    fraction = lax.sub(x, below)
    half = _full_like(x, 0.5)
    if rounding_method == RoundingMethod.AWAY_FROM_ZERO:
        tie = lax.select_n(lax.lt(x, _full_like(x, 0)), above, below)
    else:  # the even one of below and above: below is even when below / 2 is an integer
        halved = lax.mul(below, half)
        below_is_even = lax.eq(lax.floor(halved), halved)
        tie = lax.select_n(below_is_even, above, below)
    nearest = lax.select_n(lax.lt(fraction, half), above, below)
    # select_n picks its second case where the predicate holds
    rounded = lax.select_n(lax.eq(fraction, half), nearest, tie)
    # A zero keeps x's sign, as IEEE rounding's does (-0.3 rounds to -0.0): x * 0 has it
    return lax.select_n(lax.eq(rounded, _full_like(x, 0)), rounded, lax.mul(x, _full_like(x, 0)))


def is_finite(x: Any) -> Any:
    """True where an element is neither infinite nor NaN: |x| < inf (NaN compares false).

    Example:
        >>> import stage1_autodiff as jax, numpy as np
        >>> jax.lax.is_finite(jax.numpy.array([1.0, np.inf, np.nan]))
        Array([ True, False, False], dtype=bool)
    """
    x = _check_kind("is_finite", x, "f", "floating")
    return lax.lt(lax.abs(x), _full_like(x, np.inf))


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """``operand``'s bits read as ``new_dtype``. To a narrower type, each element becomes a
    new last dim of ``itemsize`` ratio pieces (low bits first, as on a little-endian machine);
    to a wider one, the last dim (of that ratio) is read as one element. Booleans and complex
    numbers only to their own type, as in JAX (``x.view`` converts them).

    Example:
        >>> import stage1_autodiff as jax, numpy as np
        >>> jax.lax.bitcast_convert_type(np.float32([1.0, 2.0]), np.uint8)
        Array([[  0,   0, 128,  63],
               [  0,   0,   0,  64]], dtype=uint8)
    """
    operand = as_value(operand)
    old, new = get_aval(operand).dtype, dtypes.check_and_canonicalize_user_dtype(
        new_dtype, "bitcast_convert_type")
    if old == new:
        return lax.bitcast_convert_type_p.bind(operand, new_dtype=new)
    if old.kind in "bc" or new.kind in "bc":
        raise TypeError(f"lax.bitcast_convert_type does not take bool or complex values unless "
                        f"both types are the same: got {old} to {new}. Use x.view({new}), "
                        f"which converts them.")
    if old.itemsize == new.itemsize:
        return lax.bitcast_convert_type_p.bind(operand, new_dtype=new)
    if old.itemsize > new.itemsize:
        return _split_words(operand, old, new)
    return _join_words(operand, old, new)


def _split_words(x: Any, old: np.dtype, new: np.dtype) -> Any:
    """Each element's bits as ``old.itemsize // new.itemsize`` pieces, a new last dim."""
    ratio, shape = old.itemsize // new.itemsize, get_aval(x).shape
    words, wide = _unsigned(x)
    narrow = np.dtype(f"uint{8 * new.itemsize}")
    spread = lax.broadcast_in_dim(words, (*shape, ratio), tuple(range(len(shape))))
    shifts = lax.broadcast_in_dim(lax.mul(lax.iota(wide, (ratio,)), np.array(8 * new.itemsize,
                                                                            wide)),
                                  (*shape, ratio), (len(shape),))
    pieces = lax.convert_element_type(lax.shift_right_logical(spread, shifts), narrow)
    return pieces if narrow == new else bitcast_convert_type(pieces, new)


def _join_words(x: Any, old: np.dtype, new: np.dtype) -> Any:
    """The last dim (``new.itemsize // old.itemsize`` pieces, low bits first) as one element."""
    ratio, shape = new.itemsize // old.itemsize, get_aval(x).shape
    if not shape or shape[-1] != ratio:
        raise ValueError(f"bitcast_convert_type from {old} to {new} reads {ratio} elements as "
                         f"one, so the operand's last dim must be {ratio}; its shape is {shape}.")
    pieces, _ = _unsigned(x)
    wide = np.dtype(f"uint{8 * new.itemsize}")
    shifts = lax.broadcast_in_dim(lax.mul(lax.iota(wide, (ratio,)), np.array(8 * old.itemsize,
                                                                            wide)),
                                  shape, (len(shape) - 1,))
    placed = lax.shift_left(lax.convert_element_type(pieces, wide), shifts)
    words = lax.reduce_sum(placed, (len(shape) - 1,))  # the pieces' bits do not overlap
    return words if wide == new else bitcast_convert_type(words, new)


def _unsigned(x: Any) -> tuple[Any, np.dtype]:
    """``x``'s bits as the unsigned integer type of its width, and that type."""
    dtype = get_aval(x).dtype
    unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
    return (x if dtype == unsigned else bitcast_convert_type(x, unsigned)), unsigned


def _as_type_of(x: Any, count: Any) -> Any:
    """An unsigned ``count`` (small, so its bits are the same number) in ``x``'s dtype and
    weak type."""
    aval = get_aval(x)
    if get_aval(count).dtype != aval.dtype:
        count = bitcast_convert_type(count, aval.dtype)
    return lax.convert_element_type(count, aval.dtype, aval.weak_type) if aval.weak_type else count


def _ones_in(u: Any, unsigned: np.dtype) -> Any:
    """The number of 1 bits of each unsigned element, by the classic parallel sums: 2-bit
    fields, then 4-bit, then bytes, then all the bytes at once by one multiplication."""
    bits = unsigned.itemsize * 8
    pattern = (1 << bits) - 1

    def masked(v, byte_pattern):
        return lax.bitwise_and(v, _full_like(v, pattern // 255 * byte_pattern))

    def shifted(v, n):
        return lax.shift_right_logical(v, _full_like(v, n))

    u = lax.sub(u, masked(shifted(u, 1), 0x55))
    u = lax.add(masked(u, 0x33), masked(shifted(u, 2), 0x33))
    u = masked(lax.add(u, shifted(u, 4)), 0x0F)
    return shifted(lax.mul(u, _full_like(u, pattern // 255)), bits - 8)


def population_count(x: Any) -> Any:
    """The number of 1 bits in each integer (of its two's complement bits if signed).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.lax.population_count(jax.numpy.array([0, 7, -1]))
        Array([ 0,  3, 32], dtype=int32)
    """
    x = _check_kind("population_count", x, "iu", "integer")
    u, unsigned = _unsigned(x)
    return _as_type_of(x, _ones_in(u, unsigned))


def clz(x: Any) -> Any:
    """The number of leading 0 bits of each integer: ``bits - popcount`` of the integer
    with every bit below its highest 1 set (by shifts of 1, 2, 4, ... bits).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.lax.clz(jax.numpy.array([0, 1, 255, -1]))
        Array([32, 31, 24,  0], dtype=int32)
    """
    x = _check_kind("clz", x, "iu", "integer")
    u, unsigned = _unsigned(x)
    bits = unsigned.itemsize * 8
    shift = 1
    while shift < bits:
        u = lax.bitwise_or(u, lax.shift_right_logical(u, _full_like(u, shift)))
        shift *= 2
    return _as_type_of(x, lax.sub(_full_like(u, bits), _ones_in(u, unsigned)))


def mulhi(x: Any, y: Any, /) -> Any:
    """The high half of the bits of each product ``x * y`` (the product has twice the
    integers' width), from four products of half-width pieces, which cannot overflow. A
    signed product's high half is the unsigned one's less ``y`` where ``x < 0`` and ``x``
    where ``y < 0`` (two's complement reads a negative ``x`` as ``x + 2**bits``).

    Example:
        >>> import stage1_autodiff as jax, numpy as np
        >>> jax.lax.mulhi(np.uint8([200, 5]), np.uint8([200, 3]))
        Array([156,   0], dtype=uint8)
    """
    x, y = _check_kind("mulhi", x, "iu", "integer"), _check_kind("mulhi", y, "iu", "integer")
    if get_aval(x).dtype != get_aval(y).dtype:
        raise TypeError(f"lax.mulhi requires arguments to have the same dtypes, got "
                        f"{get_aval(x).dtype.name}, {get_aval(y).dtype.name}. lax does not "
                        f"promote: convert one first (x.astype(...)).")
    (u, unsigned), (v, _) = _unsigned(x), _unsigned(y)
    half = unsigned.itemsize * 4

    def low(w):
        return lax.bitwise_and(w, _full_like(w, (1 << half) - 1))

    def high(w):
        return lax.shift_right_logical(w, _full_like(w, half))

    cross = lax.add(lax.mul(high(u), low(v)), high(lax.mul(low(u), low(v))))
    middle = lax.add(low(cross), lax.mul(low(u), high(v)))
    out = lax.add(lax.add(lax.mul(high(u), high(v)), high(cross)), high(middle))
    if dtypes.kind(get_aval(x).dtype) == "i":
        zero = _full_like(v, 0)
        out = lax.sub(out, lax.select_n(lax.lt(x, _full_like(x, 0)), zero, v))
        out = lax.sub(out, lax.select_n(lax.lt(y, _full_like(y, 0)), zero, u))
    return _as_type_of(x, out)


# ------------------------------------------------------------------------------------------
# Conveniences over one primitive
# ------------------------------------------------------------------------------------------


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None) -> Any:
    """The product of vectors or matrices (``lhs``'s last dim with ``rhs``'s first), or
    ``dot_general`` with ``dimension_numbers``; ``precision`` and ``preferred_element_type``
    as ``dot_general``'s.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.dot(jnp.ones((2, 3)), jnp.arange(3.0))
        Array([3., 3.], dtype=float32)
    """
    lhs, rhs = as_value(lhs), as_value(rhs)
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    if dimension_numbers is None:
        if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
                and lhs_shape[-1] == rhs_shape[0]):
            raise ValueError(f"jax.lax.dot: dimension_numbers must be specified when not "
                             f"performing simple un-batched matrix-matrix, matrix-vector, or "
                             f"vector-vector products; got lhs_shape={lhs_shape} "
                             f"rhs_shape={rhs_shape}")
        dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
    return lax.dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """``operand`` repeated over new leading dims of ``sizes``.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.broadcast(jnp.arange(2), (3,)).shape
        (3, 2)
    """
    operand = as_value(operand)
    shape = get_aval(operand).shape
    if len(sizes) == 0:
        return operand
    dims = tuple(range(len(sizes), len(sizes) + len(shape)))
    return lax.broadcast_in_dim(operand, tuple(sizes) + shape, dims)


def iota(dtype: Any, size: int, *, sharding: Any = None) -> Any:
    """0, 1, ..., ``size - 1`` as a vector of ``dtype`` (``broadcasted_iota`` counts along
    one axis of a larger shape). ``sharding`` is accepted for JAX's signature: the vector is
    replicated.

    Example:
        >>> import stage1_autodiff as jax, numpy as np
        >>> jax.lax.iota(np.int32, 4)
        Array([0, 1, 2, 3], dtype=int32)
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "iota")
    if not hasattr(size, "__index__"):  # a tracer has one, and raises its own error
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, "
                        f"got ({size!r},). lax.iota takes a length; for an array of a "
                        f"shape counting along one axis, use lax.broadcasted_iota.")
    size = operator.index(size)
    if size < 0:
        raise TypeError(f"iota shape must have every element be nonnegative, got ({size},).")
    return lax.iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """0, 1, 2, ... along ``dimension`` of an array of ``shape``, the same along the others.

    Example:
        >>> import stage1_autodiff as jax, numpy as np
        >>> jax.lax.broadcasted_iota(np.int32, (2, 3), 1)
        Array([[0, 1, 2],
               [0, 1, 2]], dtype=int32)
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "broadcasted_iota")
    return lax.iota(dtype, tuple(shape), operator.index(dimension))


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    """``operand[start_index:limit_index:stride]`` along ``axis`` (None: that end; negative
    indices count from the end once).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.slice_in_dim(jnp.arange(10), -3, None)
        Array([7, 8, 9], dtype=int32)
    """
    operand = as_value(operand)
    shape = get_aval(operand).shape
    axis = int(axis)
    size = shape[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = size if limit_index is None else operator.index(limit_index)
    start, limit = (start + size if start < 0 else start), (limit + size if limit < 0 else limit)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
    return lax.slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The slice at ``index`` along ``axis`` (negative: from the end), that dim kept with
    size 1 unless ``keepdims`` is False.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.index_in_dim(jnp.arange(6).reshape(2, 3), -1, axis=1, keepdims=False)
        Array([2, 5], dtype=int32)
    """
    operand = as_value(operand)
    index, axis = operator.index(index), int(axis)
    size = get_aval(operand).shape[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return result if keepdims else lax.squeeze(result, (axis % get_aval(operand).ndim,))


def sort_key_val(keys: Any, values: Any, dimension: int = -1,
                 is_stable: bool = True) -> tuple[Any, Any]:
    """``keys`` sorted along ``dimension``, and ``values`` permuted as the keys were.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([10.0, 20.0, 30.0]))
        (Array([1, 2, 3], dtype=int32), Array([20., 30., 10.], dtype=float32))
    """
    return lax.sort((keys, values), dimension, is_stable, num_keys=1)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """``operand`` with its dims ``start_dimension:stop_dimension`` merged into one.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.lax.collapse(jnp.ones((2, 3, 4)), 1).shape
        (2, 12)
    """
    operand = as_value(operand)
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: {shape}"
                         f"[{start_dimension}:{stop_dimension}]")
    return lax.reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


# --- JAX's smaller conveniences ------------------------------------------------------------


def dtype(x: Any) -> np.dtype:
    """The dtype ``x`` has as an array (a Python float: the default float type)."""
    return get_aval(as_value(x)).dtype


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy's broadcasting gives ``shapes``, or JAX's ``ValueError``."""
    from .numpy.promotion import broadcast_shapes as numpy_broadcast_shapes

    try:
        return numpy_broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                         f"{[tuple(s) for s in shapes]}") from None


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """``x`` with leading dims of size 1 added up to ``rank`` (unchanged if it has as many)."""
    x = as_value(x)
    ndim = get_aval(x).ndim
    return x if ndim >= rank else broadcast(x, (1,) * (rank - ndim))


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """A matrix product per batch index: the last two dims are matrices, the leading ones
    (the same in both) batch dims."""
    lhs, rhs = as_value(lhs), as_value(rhs)
    ndim = get_aval(lhs).ndim
    if ndim != get_aval(rhs).ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ndim}, "
                         f"{get_aval(rhs).ndim}")
    if ndim < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ndim}, "
                         f"{get_aval(rhs).ndim}")
    batch = tuple(range(ndim - 2))
    return lax.dot_general(lhs, rhs, (((ndim - 1,), (ndim - 2,)), (batch, batch)),
                           precision=precision)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``log(cumsum(exp(operand)))`` along ``axis``, without overflow: a scan of
    ``logaddexp`` (``associative_scan``), so it differentiates through its steps."""
    from . import numpy as jnp
    from .cumulative import associative_scan

    operand = _check_kind("cumlogsumexp", operand, "f", "floating")
    return associative_scan(jnp.logaddexp, operand, reverse=reverse, axis=axis)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """``operand`` cut along ``axis`` into consecutive pieces of the given ``sizes``."""
    operand = as_value(operand)
    shape = get_aval(operand).shape
    if sum(sizes) != shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                         f"operand shape {list(shape)}")
    starts = np.cumsum([0, *sizes])
    return [slice_in_dim(operand, int(start), int(stop), axis=axis)
            for start, stop in zip(starts[:-1], starts[1:])]


def optimization_barrier(operand: Any, /) -> Any:
    """``operand`` (a pytree), its leaves as arrays. In XLA it stops computations moving
    across it; the kernel generator here does not move them, so it changes nothing else."""
    from .tree_util import tree_map

    return tree_map(as_value, operand)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: Any = None) -> Any:
    """``updates`` subtracted from ``operand`` at the indices: ``scatter_add`` of their
    negation."""
    from .slicing import scatter_add

    return scatter_add(operand, scatter_indices, lax.neg(as_value(updates)), dimension_numbers,
                       mode=mode, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices)


def pow(x: Any, y: Any) -> Any:  # noqa: A001 -- lax's name
    """``x ** y`` elementwise. An integer ``y`` may raise a float or complex ``x``, as in JAX,
    where ``pow`` takes it as it is: here it is converted to ``x``'s dtype first, so the
    primitive sees one dtype (the derivative by an integer ``y`` is none, as in JAX)."""
    x, y = as_value(x), as_value(y)
    x_aval, y_aval = get_aval(x), get_aval(y)
    if dtypes.kind(y_aval.dtype) in "iu" and dtypes.kind(x_aval.dtype) in "fc":
        y = lax.convert_element_type(y, x_aval.dtype, y_aval.weak_type)
    return lax.pow(x, y)


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """The exclusive or of ``operand``'s elements over ``axes`` (booleans or integers)."""
    operand = _check_kind("reduce_xor", operand, "biu", "integer or bool")
    from .cumulative import reduce

    return reduce(operand, np.zeros((), get_aval(operand).dtype), lax.bitwise_xor, axes)


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """The ``k`` largest values along ``reduction_dimension`` and their indices. XLA's CPU
    backend computes them exactly, and so does this: a stable sort with the NaNs last and
    -0 equal to 0, from which ``aggregate_to_topk=False`` keeps every element."""
    return _sorted_k(operand, k, reduction_dimension, aggregate_to_topk, "approx_max_k")


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """The ``k`` smallest values along ``reduction_dimension`` and their indices (see
    ``approx_max_k``)."""
    return _sorted_k(operand, k, reduction_dimension, aggregate_to_topk, "approx_min_k")


def _sorted_k(operand: Any, k: int, dim: int, aggregate: bool, name: str) -> tuple[Any, Any]:
    operand = as_value(operand)
    aval = get_aval(operand)
    if dtypes.kind(aval.dtype) != "f":
        raise ValueError(f"{name}: operand must be a floating type, got {aval.dtype.name}.")
    if not -aval.ndim <= dim < aval.ndim:
        raise ValueError(f"{name}: reduction_dimension {dim} is out of range for an operand of "
                         f"rank {aval.ndim}.")
    dim %= aval.ndim
    if not 0 < operator.index(k) <= aval.shape[dim]:
        raise ValueError(f"{name}: k must be in [1, {aval.shape[dim]}] (the size of dimension "
                         f"{dim} of {aval.str_short()}), got {k}.")
    zero = _full_like(operand, 0)
    key = lax.neg(operand) if name == "approx_max_k" else operand
    is_nan = lax.ne(operand, operand)
    key = lax.select_n(lax.bitwise_or(is_nan, lax.eq(key, zero)), key, zero)  # -0 as 0, NaN aside
    index = lax.iota(np.dtype(np.int32), aval.shape, dim)
    _, _, values, indices = lax.sort((is_nan, key, operand, index), dim, num_keys=2)
    count = k if aggregate else aval.shape[dim]
    return slice_in_dim(values, 0, count, axis=dim), slice_in_dim(indices, 0, count, axis=dim)


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """Pads each dim of ``operand`` with ``(low, high, interior)`` copies of
    ``padding_value``. A negative ``low`` or ``high``, as in JAX, removes that many elements
    from that end once the interior padding is in: here the ``pad`` primitive takes the
    non-negative parts, and a ``slice`` removes the rest."""
    operand = as_value(operand)
    config = [tuple(operator.index(n) for n in c) for c in padding_config]
    if any(interior < 0 for _, _, interior in config):
        raise ValueError(f"pad: interior padding must be non-negative, got {config}.")
    if all(lo >= 0 and hi >= 0 for lo, hi, _ in config):
        return lax.pad(operand, padding_value, config)
    padded = lax.pad(operand, padding_value,
                     [(max(lo, 0), max(hi, 0), interior) for lo, hi, interior in config])
    shape = get_aval(padded).shape
    starts = [max(-lo, 0) for lo, _, _ in config]
    limits = [n - max(-hi, 0) for n, (_, hi, _) in zip(shape, config)]
    if any(limit < start for start, limit in zip(starts, limits)):
        raise ValueError(f"pad: padding {config} of {get_aval(operand).str_short()} removes "
                         f"more elements than a dimension has (a negative size).")
    return lax.slice(padded, starts, limits)
