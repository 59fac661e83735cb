"""Abstract evaluation: the type of each primitive's result, from the types of its operands.

To trace a function to a jaxpr (``make_jaxpr``, ``jit``), stage 2 runs it on tracers that
carry no numbers, only an abstract value (aval): a :class:`ShapedArray` of shape, dtype and
weak type. Each primitive bound on them becomes an equation of the jaxpr, and the rule here
gives the avals of its outputs, so every value in the program is typed without computing it.
The rules also check their operands, so a shape or dtype mistake is caught at trace time with a
message naming the primitive and the operand types in the jaxpr's notation (``f32[3]``).

A rule takes the operands' avals positionally and the primitive's params as keywords, as
``impl_rules`` takes arrays, and returns one aval (a list for ``multiple_results`` primitives).
The weak type follows stage 1's eval rule (``core.EvalTrace``), so ``jit(f)`` and ``f`` agree.

Example:
    >>> import numpy as np
    >>> f32 = np.dtype(np.float32)
    >>> abstract_eval_rules[p.add_p](ShapedArray((3,), f32), ShapedArray((3,), f32, True))
    ShapedArray(f32[3])

NB: in JAX each primitive has a shape rule, a dtype rule and a weak-type rule, combined by
``standard_abstract_eval`` in jax/_src/lax/utils.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.autodiff import custom_vjp_call_p
from stage1_autodiff.core import Primitive, ShapedArray, all_primitives
from stage1_autodiff.custom_derivatives import custom_jvp_call_p
from stage1_autodiff.fft import FftType, fft_p
from stage1_autodiff.slicing import GatherDimensionNumbers, gather_shape, window_operand_dims

from stage1_autodiff import (
    complex_numbers,
    convolution,
    dtypes,
    linalg,
    random_distributions,
    windowed,
)
from stage1_autodiff import prims as p

AbstractEvalRule = Callable[..., ShapedArray | list[ShapedArray]]
abstract_eval_rules: dict[Primitive, AbstractEvalRule] = {}

# The dtype kinds (``np.dtype.kind``) a primitive accepts, and how errors describe them.
_BOOLEAN, _FLOAT, _INT, _INT_OR_BOOL, _NUMERIC, _ANY = "b", "f", "iu", "biu", "iufc", "biufc"
_INEXACT = "fc"
_KIND_NAMES = {_BOOLEAN: "boolean", _FLOAT: "floating-point", _INT: "integer",
               _INT_OR_BOOL: "integer or boolean", _NUMERIC: "numeric", _ANY: "array",
               _INEXACT: "floating-point or complex", "c": "complex"}
_BOOL, _INT32, _UINT32 = np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.uint32)


def _types(avals: Sequence[ShapedArray]) -> str:
    """``f32[3]``, ``f32[3] and i32[3]``, ``f32[3], f32[3] and f32[4]``."""
    names = [aval.str_short() for aval in avals]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _check_kinds(prim: Primitive, kinds: str, *avals: ShapedArray) -> None:
    if any(dtypes.kind(aval.dtype) not in kinds for aval in avals):  # bfloat16 is "f"
        raise TypeError(f"{prim.name} requires {_KIND_NAMES[kinds]} arguments, got "
                        f"{_types(avals)}.")


def _check_equal(prim: Primitive, *avals: ShapedArray) -> None:
    first = avals[0]
    if any(aval.shape != first.shape or aval.dtype != first.dtype for aval in avals):
        raise TypeError(f"{prim.name} requires arguments of equal shapes and dtypes, got "
                        f"{_types(avals)}. (jax.numpy broadcasts and promotes before binding.)")


def _check_dims(prim: Primitive, name: str, dims: Sequence[int], x: ShapedArray) -> None:
    """``dims`` must be distinct dims of ``x``, none negative: the numpy layer canonicalizes
    axes before it binds."""
    if len(set(dims)) != len(dims) or any(not 0 <= d < x.ndim for d in dims):
        raise TypeError(f"{prim.name} {name} must be distinct dims in [0, {x.ndim}), got "
                        f"{tuple(dims)} for {x.str_short()}.")


def _weak_type(out_dtype: np.dtype, *avals: ShapedArray) -> bool:
    """Stage 1's rule: weak when every operand of the result's dtype is weak. Operands of
    another dtype (a select's bool predicate, a gather's indices) do not count."""
    same_dtype = [aval.weak_type for aval in avals if aval.dtype == out_dtype]
    return bool(same_dtype) and all(same_dtype)


def _short(shape: Sequence[int], dtype: np.dtype) -> str:
    return ShapedArray(tuple(shape), dtype).str_short()

# ------------------------------------------------------------------------------------------
# Elementwise
# ------------------------------------------------------------------------------------------


def _unary(prim: Primitive, kinds: str) -> AbstractEvalRule:
    """An elementwise op on one operand: the result has the operand's type."""
    def rule(x: ShapedArray, **params) -> ShapedArray:
        _check_kinds(prim, kinds, x)
        return x
    return rule


# --8<-- [start:abstract_eval_binary]
def _binary(prim: Primitive, kinds: str) -> AbstractEvalRule:
    """An elementwise op on two operands of one shape and dtype: the result has that type,
    weak only when both operands are. A scalar stands for an array of the other's shape,
    as in JAX (``x * 2.0`` binds it so: ``mul a 2.0:f32[]``)."""
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        _check_equal(prim, *_scalar_as(x, y))
        _check_kinds(prim, kinds, x, y)
        return ShapedArray(x.shape or y.shape, x.dtype, x.weak_type and y.weak_type)
    return rule
# --8<-- [end:abstract_eval_binary]


def _scalar_as(x: ShapedArray, y: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    """``x`` and ``y``, a scalar one seen with the other's shape."""
    return (x._replace(shape=y.shape) if not x.shape else x,
            y._replace(shape=x.shape) if not y.shape else y)


def _comparison(prim: Primitive, kinds: str) -> AbstractEvalRule:
    """Like a binary op, but the result is a bool (weak when both operands are, as in
    stage 1: ``1.5 > 2`` is a weak bool)."""
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        _check_equal(prim, *_scalar_as(x, y))
        _check_kinds(prim, kinds, x, y)
        return ShapedArray(x.shape or y.shape, _BOOL, x.weak_type and y.weak_type)
    return rule


# The dtype kinds each elementwise primitive accepts. NB: JAX's add_p and mul_p reject bool.
_UNARY_KINDS = {
    **dict.fromkeys([p.neg_p, p.abs_p, p.sign_p, p.integer_pow_p], _NUMERIC),
    **dict.fromkeys([p.exp_p, p.log_p, p.log1p_p, p.expm1_p, p.sin_p, p.cos_p, p.tan_p,
                     p.tanh_p, p.logistic_p, p.sqrt_p], _INEXACT),
    **dict.fromkeys([p.floor_p, p.ceil_p], _FLOAT),
    p.not_p: _INT_OR_BOOL}
_BINARY_KINDS = {
    **dict.fromkeys([p.add_p, p.mul_p, p.max_p, p.min_p], _ANY),
    **dict.fromkeys([p.sub_p, p.div_p, p.rem_p, p.pow_p], _NUMERIC),
    **dict.fromkeys([p.and_p, p.or_p, p.xor_p], _INT_OR_BOOL),
    **dict.fromkeys([p.shift_left_p, p.shift_right_logical_p, p.shift_right_arithmetic_p], _INT),
    p.atan2_p: _FLOAT}
_COMPARISONS = [p.eq_p, p.ne_p, p.lt_p, p.le_p, p.gt_p, p.ge_p]
for prim in all_primitives:  # registered in the order primitives.py makes them
    if prim in _UNARY_KINDS:
        abstract_eval_rules[prim] = _unary(prim, _UNARY_KINDS[prim])
    elif prim in _BINARY_KINDS or prim in _COMPARISONS:
        make = _binary if prim in _BINARY_KINDS else _comparison
        abstract_eval_rules[prim] = make(prim, _BINARY_KINDS.get(prim, _ANY))


def abs_abstract_eval(x: ShapedArray) -> ShapedArray:
    """|x| is real: the magnitude of a complex64 is a float32 (registered above, in
    primitives.py's order, as a plain unary op first)."""
    _check_kinds(p.abs_p, _NUMERIC, x)
    return x._replace(dtype=dtypes.real_dtype(x.dtype))
abstract_eval_rules[p.abs_p] = abs_abstract_eval


def select_n_abstract_eval(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if not cases:
        raise TypeError("select_n requires at least one case.")
    _check_equal(p.select_n_p, *cases)
    if which.dtype not in (_BOOL, _INT32) or which.shape not in ((), cases[0].shape):
        raise TypeError(f"select_n requires a bool or int32 predicate that is a scalar or has "
                        f"the cases' shape, got predicate {which.str_short()} and cases "
                        f"{_types(cases)}.")
    if which.dtype == _BOOL and len(cases) != 2:
        raise TypeError(f"select_n with a bool predicate requires two cases, got "
                        f"{_types(cases)}.")
    case = cases[0]
    return ShapedArray(case.shape, case.dtype, _weak_type(case.dtype, *cases))  # (not which)
abstract_eval_rules[p.select_n_p] = select_n_abstract_eval

# ------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------


def convert_element_type_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype,
                                       weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, np.dtype(new_dtype), weak_type)  # a param, as in eval
abstract_eval_rules[p.convert_element_type_p] = convert_element_type_abstract_eval


def bitcast_convert_type_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    new_dtype = np.dtype(new_dtype)
    if new_dtype.itemsize != x.dtype.itemsize:  # NB: JAX also allows different widths
        raise TypeError(f"bitcast_convert_type requires a dtype of the same width, got "
                        f"{x.str_short()} to {new_dtype.name}.")
    return ShapedArray(x.shape, new_dtype, _weak_type(new_dtype, x))
abstract_eval_rules[p.bitcast_convert_type_p] = bitcast_convert_type_abstract_eval
abstract_eval_rules[p.stop_gradient_p] = _unary(p.stop_gradient_p, _ANY)
abstract_eval_rules[p.copy_p] = _unary(p.copy_p, _ANY)
abstract_eval_rules[p.name_p] = _unary(p.name_p, _ANY)


# ------------------------------------------------------------------------------------------
# Shapes
# ------------------------------------------------------------------------------------------


def broadcast_in_dim_abstract_eval(x: ShapedArray, *, shape: tuple[int, ...],
                                   broadcast_dimensions: tuple[int, ...],
                                   out_sharding: Any = None) -> ShapedArray:
    problem = p.broadcast_in_dim_problem(x.shape, shape, broadcast_dimensions)
    if problem is not None:
        raise TypeError(f"broadcast_in_dim can't broadcast {x.str_short()} to "
                        f"{_short(shape, x.dtype)}: {problem}")
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)
abstract_eval_rules[p.broadcast_in_dim_p] = broadcast_in_dim_abstract_eval


def reshape_abstract_eval(x: ShapedArray, *, new_sizes: tuple[int, ...],
                          dimensions: None, out_sharding: Any = None) -> ShapedArray:
    # NB: JAX's ``dimensions`` transposes first; stage 1 always binds None.
    out = ShapedArray(tuple(new_sizes), x.dtype, x.weak_type)
    if any(n < 0 for n in new_sizes) or out.size != x.size:
        raise TypeError(f"reshape can't reshape {x.str_short()} to {out.str_short()}: the "
                        f"sizes must be non-negative and keep the number of elements.")
    return out
abstract_eval_rules[p.reshape_p] = reshape_abstract_eval


def transpose_abstract_eval(x: ShapedArray, *, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation must be a permutation of the dims of "
                        f"{x.str_short()}, got {permutation}.")
    shape = tuple(x.shape[d] for d in permutation)
    return ShapedArray(shape, x.dtype, x.weak_type)
abstract_eval_rules[p.transpose_p] = transpose_abstract_eval


def squeeze_abstract_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    _check_dims(p.squeeze_p, "dimensions", dimensions, x)
    if any(x.shape[d] != 1 for d in dimensions):
        raise TypeError(f"squeeze can only remove dims of size 1, got dimensions "
                        f"{dimensions} of {x.str_short()}.")
    shape = tuple(n for d, n in enumerate(x.shape) if d not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)
abstract_eval_rules[p.squeeze_p] = squeeze_abstract_eval


def concatenate_abstract_eval(*operands: ShapedArray, dimension: int) -> ShapedArray:
    if not operands:
        raise TypeError("concatenate requires at least one operand.")
    first = operands[0]
    without_dim = [x.shape[:dimension] + x.shape[dimension + 1:] for x in operands]
    if (not 0 <= dimension < first.ndim or any(x.ndim != first.ndim for x in operands)
            or any(x.dtype != first.dtype or s != without_dim[0]
                   for x, s in zip(operands, without_dim))):
        raise TypeError(f"concatenate requires operands of one dtype and rank whose shapes "
                        f"differ only in dimension {dimension}, got {_types(operands)}.")
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in operands)
    return ShapedArray(tuple(shape), first.dtype, _weak_type(first.dtype, *operands))
abstract_eval_rules[p.concatenate_p] = concatenate_abstract_eval


def pad_abstract_eval(x: ShapedArray, padding_value: ShapedArray, *,
                      padding_config: tuple[tuple[int, int, int], ...]) -> ShapedArray:
    if padding_value.shape != () or padding_value.dtype != x.dtype:
        raise TypeError(f"pad requires a scalar padding value of the operand's dtype, got "
                        f"{_types([x, padding_value])}.")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad requires one (low, high, interior) per dim of {x.str_short()}, "
                        f"got {padding_config}.")
    if any(n < 0 for config in padding_config for n in config):  # as stage 1's impl says
        raise ValueError(f"pad: negative padding is not supported, got {padding_config}.")
    shape = tuple(lo + hi + (n - 1) * interior + n if n else lo + hi
                  for n, (lo, hi, interior) in zip(x.shape, padding_config))
    return ShapedArray(shape, x.dtype, _weak_type(x.dtype, x, padding_value))
abstract_eval_rules[p.pad_p] = pad_abstract_eval


def slice_abstract_eval(x: ShapedArray, *, start_indices: tuple[int, ...],
                        limit_indices: tuple[int, ...],
                        strides: tuple[int, ...] | None) -> ShapedArray:
    strides = strides or (1,) * x.ndim
    bounds = list(zip(start_indices, limit_indices, strides, x.shape))
    if (not len(start_indices) == len(limit_indices) == len(strides) == x.ndim
            or any(not 0 <= start <= limit <= n or stride < 1
                   for start, limit, stride, n in bounds)):
        raise TypeError(f"slice requires 0 <= start <= limit <= size and stride >= 1 in "
                        f"every dim of {x.str_short()}, got start_indices={start_indices}, "
                        f"limit_indices={limit_indices}, strides={strides}.")
    shape = tuple((limit - start + stride - 1) // stride for start, limit, stride, _ in bounds)
    return ShapedArray(shape, x.dtype, x.weak_type)
abstract_eval_rules[p.slice_p] = slice_abstract_eval


def rev_abstract_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    _check_dims(p.rev_p, "dimensions", dimensions, x)
    return x
abstract_eval_rules[p.rev_p] = rev_abstract_eval


def iota_abstract_eval(*, dtype: np.dtype, shape: tuple[int, ...],
                       dimension: int) -> ShapedArray:
    out = ShapedArray(tuple(shape), np.dtype(dtype), False)
    _check_kinds(p.iota_p, _NUMERIC, out)
    if not 0 <= dimension < len(shape) or any(n < 0 for n in shape):
        raise TypeError(f"iota requires a dimension of the shape, got dimension {dimension} "
                        f"for {out.str_short()}.")
    return out
abstract_eval_rules[p.iota_p] = iota_abstract_eval

# ------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------


def _reduction(prim: Primitive, kinds: str) -> AbstractEvalRule:
    """Reduces away the dims ``axes``: the result keeps the others and the operand's type."""
    def rule(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        _check_kinds(prim, kinds, x)
        _check_dims(prim, "axes", axes, x)
        shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def _arg_reduction(prim: Primitive) -> AbstractEvalRule:
    """The position of the max or min along one axis, as ``index_dtype``."""
    def rule(x: ShapedArray, *, axes: tuple[int, ...], index_dtype: np.dtype) -> ShapedArray:
        _check_dims(prim, "axes", axes, x)
        if len(axes) != 1 or x.shape[axes[0]] == 0:
            raise TypeError(f"{prim.name} requires one non-empty axis, got axes {axes} of "
                            f"{x.str_short()}.")
        shape = tuple(n for d, n in enumerate(x.shape) if d != axes[0])
        dtype = np.dtype(index_dtype)
        return ShapedArray(shape, dtype, _weak_type(dtype, x))
    return rule


abstract_eval_rules[p.reduce_sum_p] = _reduction(p.reduce_sum_p, _NUMERIC)
abstract_eval_rules[p.reduce_max_p] = _reduction(p.reduce_max_p, _ANY)
abstract_eval_rules[p.reduce_min_p] = _reduction(p.reduce_min_p, _ANY)
abstract_eval_rules[p.reduce_prod_p] = _reduction(p.reduce_prod_p, _NUMERIC)
# NB: JAX's reduce_and/or also take integers (bitwise); stage 1's impls are logical.
abstract_eval_rules[p.reduce_and_p] = _reduction(p.reduce_and_p, _BOOLEAN)
abstract_eval_rules[p.reduce_or_p] = _reduction(p.reduce_or_p, _BOOLEAN)
abstract_eval_rules[p.argmax_p] = _arg_reduction(p.argmax_p)
abstract_eval_rules[p.argmin_p] = _arg_reduction(p.argmin_p)

# ------------------------------------------------------------------------------------------
# The PRNG's hash (two results)
# ------------------------------------------------------------------------------------------


def threefry2x32_abstract_eval(key1: ShapedArray, key2: ShapedArray, x1: ShapedArray,
                               x2: ShapedArray) -> list[ShapedArray]:
    args = (key1, key2, x1, x2)
    if any(a.dtype != _UINT32 or a.shape != x1.shape for a in args):
        raise TypeError(f"threefry2x32 requires four uint32 arrays of one shape, got "
                        f"{_types(args)}.")
    out = ShapedArray(x1.shape, _UINT32, _weak_type(_UINT32, *args))
    return [out, out]
abstract_eval_rules[p.threefry2x32_p] = threefry2x32_abstract_eval

# ------------------------------------------------------------------------------------------
# Contraction
# ------------------------------------------------------------------------------------------


# --8<-- [start:abstract_eval_dot_general]
def dot_general_abstract_eval(x: ShapedArray, y: ShapedArray, *, dimension_numbers,
                              preferred_element_type: np.dtype | None,
                              out_sharding: Any = None) -> ShapedArray:
    # --8<-- [start:task2_1]
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    _check_kinds(p.dot_general_p, _ANY, x, y)
    if x.dtype != y.dtype:
        raise TypeError(f"dot_general requires operands of one dtype, got {_types([x, y])}.")
    _check_dims(p.dot_general_p, "contracting and batch dims", x_contract + x_batch, x)
    _check_dims(p.dot_general_p, "contracting and batch dims", y_contract + y_batch, y)
    for kind, x_dims, y_dims in (("contracting", x_contract, y_contract),
                                 ("batch", x_batch, y_batch)):
        x_sizes = tuple(x.shape[d] for d in x_dims)
        y_sizes = tuple(y.shape[d] for d in y_dims)
        if x_sizes != y_sizes:
            raise TypeError(f"dot_general requires {kind} dims of equal sizes, got {x_sizes} "
                            f"(dims {x_dims} of {x.str_short()}) and {y_sizes} (dims {y_dims} "
                            f"of {y.str_short()}).")
    # The result's dims: batch, then x's free dims, then y's free dims.
    batch = tuple(x.shape[d] for d in x_batch)
    x_free = tuple(n for d, n in enumerate(x.shape) if d not in x_contract + x_batch)
    y_free = tuple(n for d, n in enumerate(y.shape) if d not in y_contract + y_batch)
    dtype = x.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    return ShapedArray(batch + x_free + y_free, dtype, _weak_type(dtype, x, y))
    # --8<-- [end:task2_1]
abstract_eval_rules[p.dot_general_p] = dot_general_abstract_eval
# --8<-- [end:abstract_eval_dot_general]


# ------------------------------------------------------------------------------------------
# Gather and scatter, with XLA's dimension numbers (stage1_autodiff/slicing.py says what they
# mean): the index vectors are the last dim of ``indices``.
# ------------------------------------------------------------------------------------------


def _check_indices(prim: Primitive, operand: ShapedArray, indices: ShapedArray,
                   indexed: tuple[int, ...], dropped: tuple[int, ...],
                   batching: tuple[int, ...]) -> None:
    problem = None
    if indices.dtype.kind not in _INT or indices.ndim == 0:
        problem = "integer indices with the index vectors along their last dim"
    elif indices.shape[-1] != len(indexed):
        problem = f"index vectors of length {len(indexed)} (one per indexed dim {indexed})"
    elif any(not 0 <= d < operand.ndim for d in (*indexed, *dropped, *batching)):
        problem = f"dims within the operand's rank {operand.ndim}"
    if problem:
        raise TypeError(f"{prim.name} requires {problem}, got operand {operand.str_short()} "
                        f"and indices {indices.str_short()}.")


def gather_abstract_eval(operand: ShapedArray, indices: ShapedArray, *, dimension_numbers,
                         slice_sizes, mode, fill_value) -> ShapedArray:
    dn = dimension_numbers
    _check_indices(p.gather_p, operand, indices, dn.start_index_map, dn.collapsed_slice_dims,
                   dn.operand_batching_dims)
    if len(slice_sizes) != operand.ndim or any(
            not 0 <= s <= n for s, n in zip(slice_sizes, operand.shape)):
        raise TypeError(f"gather requires one slice size per operand dim, each at most the "
                        f"dim's size, got slice_sizes={slice_sizes} for operand "
                        f"{operand.str_short()}.")
    shape = gather_shape(operand.shape, indices.shape, dn, slice_sizes)
    return ShapedArray(shape, operand.dtype, _weak_type(operand.dtype, operand, indices))
abstract_eval_rules[p.gather_p] = gather_abstract_eval


def _scatter(prim: Primitive) -> AbstractEvalRule:
    """Scatters ``updates`` into a copy of ``operand``: the result has the operand's type.
    The updates' shape is the indices' batch dims with the windows' dims among them."""
    def rule(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *,
             dimension_numbers, mode) -> ShapedArray:
        dn = dimension_numbers
        _check_indices(prim, operand, indices, dn.scatter_dims_to_operand_dims,
                       dn.inserted_window_dims, dn.operand_batching_dims)
        window = window_operand_dims(operand.ndim, dn.inserted_window_dims,
                                     dn.operand_batching_dims)
        sizes = [1] * operand.ndim
        for d, u in zip(window, dn.update_window_dims):
            sizes[d] = updates.shape[u] if u < updates.ndim else -1
        numbers = GatherDimensionNumbers(*dn)  # the gather that reads the same windows
        expected = None if len(window) != len(dn.update_window_dims) else gather_shape(
            operand.shape, indices.shape, numbers, sizes)
        if (updates.shape != expected or updates.dtype != operand.dtype
                or any(not 0 <= s <= n for s, n in zip(sizes, operand.shape))):
            raise TypeError(f"{prim.name} requires updates whose windows fit the operand and "
                            f"whose other dims are the indices' batch dims, of the operand's "
                            f"dtype, got operand {operand.str_short()}, indices "
                            f"{indices.str_short()} and updates {updates.str_short()} with "
                            f"{dn}.")
        weak_type = _weak_type(operand.dtype, operand, indices, updates)
        return ShapedArray(operand.shape, operand.dtype, weak_type)
    return rule


abstract_eval_rules[p.scatter_add_p] = _scatter(p.scatter_add_p)
abstract_eval_rules[p.scatter_p] = _scatter(p.scatter_p)
abstract_eval_rules[p.scatter_mul_p] = _scatter(p.scatter_mul_p)
abstract_eval_rules[p.scatter_min_p] = _scatter(p.scatter_min_p)
abstract_eval_rules[p.scatter_max_p] = _scatter(p.scatter_max_p)

# ------------------------------------------------------------------------------------------
# Sorting (multiple results)
# ------------------------------------------------------------------------------------------


def sort_abstract_eval(*operands: ShapedArray, dimension: int,
                       num_keys: int) -> list[ShapedArray]:
    if not operands:
        raise TypeError("sort requires at least one operand.")
    shape = operands[0].shape
    if any(x.shape != shape for x in operands) or not 0 <= dimension < len(shape):
        raise TypeError(f"sort requires operands of one shape and a dimension of it, got "
                        f"dimension {dimension} of {_types(operands)}.")
    if not 1 <= num_keys <= len(operands):
        raise TypeError(f"sort requires 1 <= num_keys <= {len(operands)}, got {num_keys}.")
    return [ShapedArray(shape, x.dtype, _weak_type(x.dtype, *operands)) for x in operands]
abstract_eval_rules[p.sort_p] = sort_abstract_eval


def tile_abstract_eval(x: ShapedArray, *, reps: tuple[int, ...]) -> ShapedArray:
    return ShapedArray(tuple(r * n for r, n in zip(reps, x.shape)), x.dtype, x.weak_type)
abstract_eval_rules[p.tile_p] = tile_abstract_eval
for prim in p.MORE_MATH:  # made after slicing.py's primitives; complex but for cbrt
    abstract_eval_rules[prim] = _unary(prim, _FLOAT if prim is p.cbrt_p else _INEXACT)


def clamp_abstract_eval(low: ShapedArray, x: ShapedArray, high: ShapedArray) -> ShapedArray:
    _check_equal(p.clamp_p, low, x, high)  # lax.clamp broadcasts scalar bounds before binding
    _check_kinds(p.clamp_p, _NUMERIC, x)
    return ShapedArray(x.shape, x.dtype, _weak_type(x.dtype, low, x, high))


# special.py's functions: unary and binary on floats; clamp on three operands of one type
for prim in p.SPECIAL:
    abstract_eval_rules[prim] = (
        clamp_abstract_eval if prim is p.clamp_p else
        _binary(prim, _FLOAT) if prim in (p.polygamma_p, p.nextafter_p) else
        _unary(prim, _FLOAT))


def _nary(prim: Primitive, kinds: str) -> AbstractEvalRule:
    """An elementwise op on three or more operands of one shape and dtype (their wrappers
    broadcast and promote first): the result has that type, weak only when all are."""
    def rule(*operands: ShapedArray) -> ShapedArray:
        _check_equal(prim, *operands)
        _check_kinds(prim, kinds, *operands)
        weak = all(x.weak_type for x in operands)
        return ShapedArray(operands[0].shape, operands[0].dtype, weak)
    return rule


# special_functions.py's: unary or binary on floats, but for betainc, hyp1f1 and hyp2f1
for prim in p.SPECIAL_FUNCTIONS:
    abstract_eval_rules[prim] = (
        _unary(prim, _FLOAT) if prim in p.UNARY_SPECIAL_FUNCTIONS else
        _nary(prim, _FLOAT) if prim in (p.regularized_incomplete_beta_p, p.hyp1f1_p,
                                        p.hyp2f1_p) else
        _binary(prim, _FLOAT))
# the derivative of a gamma sample by its shape (random.gamma's gradient): binary on floats
abstract_eval_rules[p.random_gamma_grad_p] = _binary(p.random_gamma_grad_p, _FLOAT)




# ------------------------------------------------------------------------------------------
# Cumulative reductions, top_k and dynamic slicing (stage 1's cumulative.py and
# dynamic_slicing.py)
# ------------------------------------------------------------------------------------------


def _cumulative(prim: Primitive) -> AbstractEvalRule:
    """A running reduction along ``axis``: the result has the operand's type."""
    def rule(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        _check_kinds(prim, _NUMERIC, x)
        _check_dims(prim, "axis", (axis,), x)
        return ShapedArray(x.shape, x.dtype, x.weak_type)  # stage 4's rule gives the layout
    return rule


for prim in p.CUMULATIVE:
    abstract_eval_rules[prim] = _cumulative(prim)


def top_k_abstract_eval(x: ShapedArray, *, k: int, axis: int) -> list[ShapedArray]:
    _check_dims(p.top_k_p, "axis", (axis,), x)
    if not 0 <= k <= x.shape[axis]:
        raise TypeError(f"top_k requires 0 <= k <= {x.shape[axis]} (the size of dim {axis} "
                        f"of {x.str_short()}), got k={k}.")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, _INT32)]
abstract_eval_rules[p.top_k_p] = top_k_abstract_eval


def _check_starts(prim: Primitive, x: ShapedArray, starts: Sequence[ShapedArray]) -> None:
    if len(starts) != x.ndim or any(s.ndim != 0 for s in starts) or any(
            s.dtype.kind not in _INT or s.dtype != starts[0].dtype for s in starts):
        raise TypeError(f"{prim.name} requires one integer scalar start index per dim of "
                        f"{x.str_short()}, all of one dtype, got {_types(starts or [x])}.")


def dynamic_slice_abstract_eval(x: ShapedArray, *starts: ShapedArray,
                                slice_sizes: tuple[int, ...]) -> ShapedArray:
    _check_starts(p.dynamic_slice_p, x, starts)
    if len(slice_sizes) != x.ndim or any(not 0 <= m <= n for m, n in zip(slice_sizes, x.shape)):
        raise TypeError(f"dynamic_slice requires slice sizes between zero and the operand's "
                        f"shape, got slice_sizes={slice_sizes} for {x.str_short()}.")
    return ShapedArray(tuple(slice_sizes), x.dtype, _weak_type(x.dtype, x, *starts))
abstract_eval_rules[p.dynamic_slice_p] = dynamic_slice_abstract_eval


def dynamic_update_slice_abstract_eval(x: ShapedArray, update: ShapedArray,
                                       *starts: ShapedArray) -> ShapedArray:
    _check_starts(p.dynamic_update_slice_p, x, starts)
    if update.dtype != x.dtype or update.ndim != x.ndim or any(
            m > n for m, n in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice requires an update of the operand's dtype and "
                        f"rank that fits in it, got operand {x.str_short()} and update "
                        f"{update.str_short()}.")
    return ShapedArray(x.shape, x.dtype, _weak_type(x.dtype, x, update, *starts))
abstract_eval_rules[p.dynamic_update_slice_p] = dynamic_update_slice_abstract_eval


# ------------------------------------------------------------------------------------------
# Windowed reductions and convolution (stage 1's windowed.py and convolution.py): their
# shape functions live there, beside the impls that must agree with them
# ------------------------------------------------------------------------------------------


def _reduce_window(prim: Primitive, kinds: str) -> AbstractEvalRule:
    def rule(x: ShapedArray, **params: Any) -> ShapedArray:
        _check_kinds(prim, kinds, x)
        windowed.check_window(x.shape, **params)
        shape = windowed.window_out_shape(x.shape, **params)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


for prim, kinds in zip(p.REDUCE_WINDOWS, (_NUMERIC, _ANY, _ANY)):
    abstract_eval_rules[prim] = _reduce_window(prim, kinds)


def conv_general_dilated_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *,
                                       precision: Any, preferred_element_type: np.dtype | None,
                                       out_sharding: Any, **params: Any) -> ShapedArray:
    _check_kinds(p.conv_general_dilated_p, _NUMERIC, lhs, rhs)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"conv_general_dilated requires operands of one dtype, got "
                        f"{_types([lhs, rhs])}.")
    shape = convolution.conv_shape(lhs.shape, rhs.shape, **params)
    dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    return ShapedArray(shape, dtype, _weak_type(dtype, lhs, rhs))
abstract_eval_rules[p.conv_general_dilated_p] = conv_general_dilated_abstract_eval


# ------------------------------------------------------------------------------------------
# Complex numbers and the FFT (stage 1's complex_numbers.py and fft.py)
# ------------------------------------------------------------------------------------------


def _complex_part(prim: Primitive) -> AbstractEvalRule:
    """``real`` and ``imag``: a complex operand, a real result of its precision."""
    def rule(x: ShapedArray) -> ShapedArray:
        _check_kinds(prim, "c", x)
        return x._replace(dtype=dtypes.real_dtype(x.dtype))
    return rule
abstract_eval_rules[complex_numbers.real_p] = _complex_part(complex_numbers.real_p)
abstract_eval_rules[complex_numbers.imag_p] = _complex_part(complex_numbers.imag_p)


def conj_abstract_eval(x: ShapedArray) -> ShapedArray:
    _check_kinds(complex_numbers.conj_p, "c", x)
    return x
abstract_eval_rules[complex_numbers.conj_p] = conj_abstract_eval


def complex_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    """Two floats of one type make the complex type of that precision."""
    _check_equal(complex_numbers.complex_p, *_scalar_as(x, y))
    _check_kinds(complex_numbers.complex_p, _FLOAT, x, y)
    return ShapedArray(x.shape or y.shape, dtypes.complex_dtype(x.dtype),
                       x.weak_type and y.weak_type)
abstract_eval_rules[complex_numbers.complex_p] = complex_abstract_eval


def fft_abstract_eval(x: ShapedArray, *, fft_type, fft_lengths) -> ShapedArray:
    """The transformed dims are the last ``len(fft_lengths)``; RFFT halves the last one
    (``n // 2 + 1`` frequencies) and IRFFT restores it to ``fft_lengths[-1]``."""
    rank, kind = len(fft_lengths), fft_type.name
    real_in = fft_type == FftType.RFFT
    expected = list(fft_lengths)
    if fft_type == FftType.IRFFT:
        expected[-1] = fft_lengths[-1] // 2 + 1
    if not 1 <= rank <= x.ndim or list(x.shape[x.ndim - rank:]) != expected:
        raise TypeError(f"fft {kind} with fft_lengths={tuple(fft_lengths)} requires an operand "
                        f"whose last dims are {tuple(expected)}, got {x.str_short()}.")
    _check_kinds(fft_p, _FLOAT if real_in else "c", x)
    out_shape = list(x.shape)
    if fft_type == FftType.RFFT:
        out_shape[-1] = fft_lengths[-1] // 2 + 1
        dtype = dtypes.complex_dtype(x.dtype)
    elif fft_type == FftType.IRFFT:
        out_shape[-1] = fft_lengths[-1]
        dtype = dtypes.real_dtype(x.dtype)
    else:
        dtype = x.dtype
    return ShapedArray(tuple(out_shape), dtype, x.weak_type)
abstract_eval_rules[fft_p] = fft_abstract_eval


# ------------------------------------------------------------------------------------------
# Linear algebra (stage 1's linalg.py): its declaration gives the result types
# ------------------------------------------------------------------------------------------


def _linalg(prim: Primitive) -> AbstractEvalRule:
    def rule(*avals: ShapedArray, **params: Any) -> list[ShapedArray] | ShapedArray:
        outs = linalg.output_avals(prim, *avals, **params)
        return outs if prim.multiple_results else outs[0]
    return rule


for prim in linalg.LINALG:
    abstract_eval_rules[prim] = _linalg(prim)


# ------------------------------------------------------------------------------------------
# custom_vjp_call: a call of a program (stage 1's autodiff.py)
# ------------------------------------------------------------------------------------------


def custom_vjp_call_abstract_eval(*avals: ShapedArray, call_jaxpr, num_consts: int, name: str,
                                  fwd, bwd, out_trees) -> list[ShapedArray]:
    """The program's output types, after checking the operands (its closed-over values, then
    the arguments) against its input types. Only an equation of a jaxpr has a rule: stage 1's
    eager call carries a Python function, whose types are known only by running it."""
    expected = call_jaxpr.in_avals
    if [(a.shape, a.dtype) for a in avals] != [(a.shape, a.dtype) for a in expected]:
        raise TypeError(f"custom_vjp_call[{name}] was given operands of types "
                        f"{[a.str_short() for a in avals]}, but its program (with {num_consts} "
                        f"closed-over values first) takes {[a.str_short() for a in expected]}.")
    return list(call_jaxpr.out_avals)
abstract_eval_rules[custom_vjp_call_p] = custom_vjp_call_abstract_eval


def custom_jvp_call_abstract_eval(*avals: ShapedArray, name: str, call_jaxpr, jvp,
                                  symbolic_zeros: bool, num_consts: int) -> list[ShapedArray]:
    """As ``custom_vjp_call``'s: the program's output types (stage 1's custom_jvp.py)."""
    return custom_vjp_call_abstract_eval(*avals, call_jaxpr=call_jaxpr, num_consts=num_consts,
                                         name=name, fwd=jvp, bwd=None, out_trees=None)
abstract_eval_rules[custom_jvp_call_p] = custom_jvp_call_abstract_eval


# ------------------------------------------------------------------------------------------
# Random sampling loops (stage 1's random_distributions.py)
# ------------------------------------------------------------------------------------------


def random_gamma_abstract_eval(k1: ShapedArray, k2: ShapedArray, a: ShapedArray, *,
                               log_space: bool) -> ShapedArray:
    """One sample per element of ``a``, each from its own key (two uint32 words)."""
    if k1.dtype != _UINT32 or k2.dtype != _UINT32 or not k1.shape == k2.shape == a.shape:
        raise TypeError(f"random_gamma requires two uint32 key words of the shape of `a`, got "
                        f"{_types((k1, k2, a))}.")
    _check_kinds(random_distributions.random_gamma_p, _FLOAT, a)
    return ShapedArray(a.shape, a.dtype, _weak_type(a.dtype, k1, k2, a))
abstract_eval_rules[random_distributions.random_gamma_p] = random_gamma_abstract_eval


def random_poisson_abstract_eval(key_data: ShapedArray, lam: ShapedArray, *,
                                 dtype: np.dtype) -> ShapedArray:
    """Counts of ``dtype`` shaped as ``lam``, which starts with the keys' batch shape."""
    batch = key_data.shape[:-1]
    if key_data.dtype != _UINT32 or key_data.shape[-1:] != (2,) or lam.shape[:len(batch)] != batch:
        raise TypeError(f"random_poisson requires uint32 keys (shape K + (2,)) and rates of "
                        f"shape K + S, got {_types((key_data, lam))}.")
    _check_kinds(random_distributions.random_poisson_p, _FLOAT, lam)
    return ShapedArray(lam.shape, np.dtype(dtype), False)
abstract_eval_rules[random_distributions.random_poisson_p] = random_poisson_abstract_eval
