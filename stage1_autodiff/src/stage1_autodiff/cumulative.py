"""Cumulative reductions (``cumsum``, ``cumprod``, ``cummax``, ``cummin``), the parallel prefix
scan they are differentiated through (``associative_scan``), a general ``reduce``, and
``top_k``.

A cumulative reduction along ``axis`` gives, at each position, the reduction of everything up
to it (from it to the end with ``reverse``). Its impl is one NumPy ``accumulate``. A sum is
linear, so its VJP is again a cumulative sum, running the other way. For a product, a max and
a min, JAX does not write a derivative by hand: it differentiates the parallel prefix scan
(Blelloch 1990) built from ``mul``, ``max`` or ``min``, whose derivatives are known. We do the
same, so the VJP is exact at zeros of a product, and ties of a max share the cotangent the way
``max``'s own rule splits it, as in JAX.

NB: JAX's cumulative primitives and ``associative_scan`` live in
``jax/_src/lax/control_flow/loops.py`` (``cumsum_p``, ``_cumulative_jvp_rule``); ``top_k_p``
and ``reduce`` in ``jax/_src/lax/lax.py``.

Example:
    >>> from stage1_autodiff import lax
    >>> import stage1_autodiff.numpy as jnp
    >>> lax.cumsum(jnp.arange(4.0), reverse=True)
    Array([6., 6., 5., 3.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import autodiff, dtypes, signed_zeros
from .core import Array, Primitive, get_aval, impl_rules, jvp_rules, vjp_rules
from .primitives import (
    _linear_jvp,
    add,
    bitwise_and,
    bitwise_or,
    broadcast_in_dim,
    concatenate,
    full,
    max,
    min,
    mul,
    pad,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reshape,
    rev,
    slice,
    transpose,
    zeros_like,
)
from .slicing import index_grid, point_dimension_numbers, point_gather, scatter_add
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["CUMULATIVE", "associative_scan", "cummax", "cummax_p", "cummin", "cummin_p",
           "cumprod", "cumprod_p", "cumsum", "cumsum_p", "reduce", "top_k", "top_k_p"]


def _canonical(axis: int, ndim: int, name: str = "associative_scan") -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of {ndim} "
                         f"dims.")
    return axis % ndim


def _check_numeric(prim: Primitive, x: Any) -> None:
    if dtypes.kind(get_aval(x).dtype) not in "iufc":  # (bfloat16 is a float)
        raise TypeError(f"{prim.name} does not accept dtype {get_aval(x).dtype}: it needs "
                        f"numbers (convert booleans with astype first).")


def _accumulate(accumulate: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The impl of a running reduction by ``accumulate`` (``np.add.accumulate``...)."""
    def impl(x, *, axis, reverse):
        x = np.flip(x, axis) if reverse else x
        # A narrow float accumulates in float32, each result rounded once, as XLA's for
        # float16 (dtypes.accumulation_dtype).
        wide = dtypes.accumulation_dtype(x.dtype)
        out = accumulate(x, axis=axis, dtype=wide).astype(x.dtype, copy=False)
        return np.ascontiguousarray(np.flip(out, axis) if reverse else out)
    return impl


def _cumulative(name: str, accumulate: Callable[..., np.ndarray]) -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = _accumulate(accumulate)
    return prim


def _bind(prim: Primitive, operand: Any, axis: int, reverse: bool) -> Any:
    _check_numeric(prim, operand)
    if axis < 0:  # as JAX's lax, which leaves negative axes to jnp
        raise ValueError(f"{prim.name}: XLA operations do not allow negative axes, got axis "
                         f"{axis}; use {axis % max(get_aval(operand).ndim, 1)}.")
    return prim.bind(operand, axis=_canonical(axis, get_aval(operand).ndim, prim.name),
                     reverse=bool(reverse))


# --8<-- [start:cumsum]
cumsum_p = _cumulative("cumsum", np.add.accumulate)
def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``lax.cumsum``: running sums along ``axis`` (from the end with ``reverse``)."""
    return _bind(cumsum_p, operand, axis, reverse)
def cumsum_vjp(ct, x, *, out, axis, reverse):
    # Each input adds into every output after it: its cotangent sums theirs, the other way.
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]
vjp_rules[cumsum_p] = cumsum_vjp
jvp_rules[cumsum_p] = _linear_jvp(cumsum_p)
# --8<-- [end:cumsum]


# --8<-- [start:scan_derivatives]
def _through_prefix_scan(combine: Callable[[Any, Any], Any]):
    """The VJP and JVP rules of a cumulative reduction by ``combine``: those of the parallel
    prefix scan computing the same values from ``combine`` (JAX's ``_cumulative_jvp_rule``)."""
    def scan_of(axis, reverse):
        return lambda x: associative_scan(combine, x, reverse=reverse, axis=axis)

    def vjp(ct, x, *, out, axis, reverse):
        _, pullback, *_ = autodiff._vjp(scan_of(axis, reverse), (x,), False)
        return [pullback([ct])[0]]

    def jvp(primals, tangents, *, axis, reverse):
        return autodiff.jvp(scan_of(axis, reverse), primals, tangents)
    return vjp, jvp
# --8<-- [end:scan_derivatives]


cumprod_p = _cumulative("cumprod", np.multiply.accumulate)
def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``lax.cumprod``: running products along ``axis``."""
    return _bind(cumprod_p, operand, axis, reverse)
vjp_rules[cumprod_p], jvp_rules[cumprod_p] = _through_prefix_scan(mul)

cummax_p = _cumulative("cummax", signed_zeros.accumulation(np.maximum))  # XLA's zeros
def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``lax.cummax``: running maxima along ``axis`` (a NaN propagates)."""
    return _bind(cummax_p, operand, axis, reverse)
vjp_rules[cummax_p], jvp_rules[cummax_p] = _through_prefix_scan(max)

cummin_p = _cumulative("cummin", signed_zeros.accumulation(np.minimum))
def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``lax.cummin``: running minima along ``axis`` (a NaN propagates)."""
    return _bind(cummin_p, operand, axis, reverse)
vjp_rules[cummin_p], jvp_rules[cummin_p] = _through_prefix_scan(min)

# The cumulative reductions, one tuple for the later stages' tables: each takes the
# params (axis, reverse) and gives a result of its operand's type.
CUMULATIVE = (cumsum_p, cumprod_p, cummax_p, cummin_p)

# ------------------------------------------------------------------------------------------
# The parallel prefix scan
# ------------------------------------------------------------------------------------------


def _along(x: Any, axis: int, start: int, limit: int | None = None, stride: int = 1) -> Any:
    """``x[start:limit:stride]`` along ``axis``."""
    shape = get_aval(x).shape
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], strides[axis] = start, stride
    if limit is not None:
        limits[axis] = limit if limit >= 0 else shape[axis] + limit
    return slice(x, starts, limits, strides)


def _interleave(even: Any, odd: Any, axis: int) -> Any:
    """``even[0], odd[0], even[1], odd[1], ...`` along ``axis`` (``even`` as long as ``odd``
    or one longer): each spread out by interior padding, the other's places left zero, and
    the two added (or-ed, for booleans)."""
    ndim, n_even = get_aval(even).ndim, get_aval(even).shape[axis]
    n_odd = get_aval(odd).shape[axis]

    def spread(x, low, high):
        config = [(0, 0, 0)] * ndim
        config[axis] = (low, high, 1)
        aval = get_aval(x)
        return pad(x, full((), 0, aval.dtype, aval.weak_type), config)
    combine = bitwise_or if get_aval(even).dtype == np.bool_ else add
    return combine(spread(even, 0, 1 if n_even == n_odd else 0),
                   spread(odd, 1, 0 if n_even == n_odd else 1))


# --8<-- [start:associative_scan]
def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
    """``lax.associative_scan``: the running combination by the associative ``fn`` of the
    slices of ``elems`` (a pytree of arrays) along ``axis``: ``[a, fn(a, b), fn(fn(a, b), c),
    ...]``; with ``reverse``, ``[..., fn(fn(z, y), x), fn(z, y), z]``.

    The parallel prefix algorithm: combine neighbouring pairs, scan those half as many
    (recursively), which gives the odd positions; each even one is then an odd result combined
    with the next element. ``fn`` is applied to whole slices, about 2n times in 2 log n steps.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> associative_scan(jnp.add, jnp.arange(4))
        Array([0, 1, 3, 6], dtype=int32)
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    flat, tree = tree_flatten(elems)
    axis = _canonical(axis, get_aval(flat[0]).ndim)
    lengths = [get_aval(x).shape[axis] for x in flat]
    if any(n != lengths[0] for n in lengths):
        raise ValueError(f"Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[get_aval(x).shape for x in flat]})")
    if reverse:
        flat = [rev(x, (axis,)) for x in flat]

    def combine(a, b):
        return tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))[0]

    def scan(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        odd = scan(combine([_along(x, axis, 0, -1, 2) for x in xs],
                           [_along(x, axis, 1, None, 2) for x in xs]))
        firsts = odd if n % 2 else [_along(o, axis, 0, -1) for o in odd]
        even = combine(firsts, [_along(x, axis, 2, None, 2) for x in xs])
        even = [concatenate([_along(x, axis, 0, 1), e], axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(flat)
    return tree_unflatten(tree, [rev(x, (axis,)) for x in out] if reverse else out)
# --8<-- [end:associative_scan]



# ------------------------------------------------------------------------------------------
# A general reduce
# ------------------------------------------------------------------------------------------

# A computation that is one of these, starting from its identity, is that reduction primitive.
_MONOIDS = {add: (reduce_sum, lambda dtype: 0), mul: (reduce_prod, lambda dtype: 1),
            max: (reduce_max, dtypes.lowest), min: (reduce_min, dtypes.highest)}
_BOOLEAN_MONOIDS = {bitwise_and: (reduce_and, lambda dtype: True),
                    bitwise_or: (reduce_or, lambda dtype: False)}


def _monoid_reducer(computation, x, init) -> Callable | None:
    """The reduction primitive ``computation`` from ``init`` is, if any: ``init`` must be
    concrete and the identity (JAX's ``_get_monoid_reducer`` asks the same)."""
    dtype = get_aval(x).dtype
    table = _BOOLEAN_MONOIDS if dtype == np.bool_ else _MONOIDS
    if computation not in table or not hasattr(init, "_value") and not np.isscalar(init):
        return None
    reducer, identity = table[computation]
    value = np.asarray(getattr(init, "_value", init))
    return reducer if value.shape == () and value == np.asarray(identity(dtype), dtype) else None


def _by_halving(xs: list, inits: list, combine, dims: tuple[int, ...]) -> list:
    """The reduced dims moved first and flattened into one of length n, then neighbours
    combined pairwise, halving n each step (the last of an odd n kept for the next step), and
    the one left combined with the initial values."""
    shape = get_aval(xs[0]).shape
    kept = [d for d in range(len(shape)) if d not in dims]
    rest = tuple(shape[d] for d in kept)
    n = int(np.prod([shape[d] for d in dims]))
    xs = [reshape(transpose(x, (*dims, *kept)), (n,) + rest) for x in xs]
    while get_aval(xs[0]).shape[0] > 1:
        n = get_aval(xs[0]).shape[0]
        pairs = combine([_along(x, 0, 0, n - n % 2, 2) for x in xs],
                        [_along(x, 0, 1, n - n % 2, 2) for x in xs])
        xs = [concatenate([c, _along(x, 0, n - 1)], 0) if n % 2 else c
              for c, x in zip(pairs, xs)]
    starts = [broadcast_in_dim(i, rest, ()) for i in inits]
    if get_aval(xs[0]).shape[0] == 0:
        return starts
    return combine(starts, [reshape(x, rest) for x in xs])


def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int]) -> Any:
    """``lax.reduce``: ``operands`` (a pytree of arrays of one shape) reduced over
    ``dimensions`` by ``computation`` from ``init_values`` (a pytree of scalars alike).

    ``lax.add``, ``mul``, ``max``, ``min`` (and ``bitwise_and``/``or`` of booleans) from their
    identity are the reduction primitives; any other computation, which must be associative
    and commutative as XLA requires, is applied to whole slices, halving the reduced length at
    each step. NB: JAX binds ``reduce_p`` with the computation as a jaxpr
    (jax/_src/lax/lax.py); here it is a composition, so it differentiates and batches as its
    parts do.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> reduce(jnp.arange(6.0).reshape(2, 3), 0.0, add, (1,))
        Array([ 3., 12.], dtype=float32)
    """
    xs, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands and init_values must have the same tree "
                         f"structure, got {tree} and {init_tree}.")
    ndim = get_aval(xs[0]).ndim
    dims = tuple(sorted(_canonical(d, ndim, "reduce") for d in dimensions))
    inits = [_init_like(i, x) for i, x in zip(inits, xs)]
    reducer = _monoid_reducer(computation, xs[0], inits[0]) if len(xs) == 1 else None
    if reducer is not None:
        return tree_unflatten(tree, [reducer(xs[0], dims)])

    def combine(a, b):
        return tree_flatten(computation(tree_unflatten(tree, a), tree_unflatten(tree, b)))[0]
    return tree_unflatten(tree, _by_halving(xs, inits, combine, dims))


def _init_like(init: Any, x: Any) -> Any:
    """A Python scalar initial value takes the operand's dtype; an array must have it."""
    dtype = get_aval(x).dtype
    if isinstance(init, (bool, int, float)):
        return full((), init, dtype)
    if get_aval(init).dtype != dtype or get_aval(init).shape != ():
        raise TypeError(f"reduce operand dtypes should match corresponding initial value "
                        f"dtypes (and initial values be scalars), got operand "
                        f"{get_aval(x).str_short()} and initial value "
                        f"{get_aval(init).str_short()}.")
    return init

# ------------------------------------------------------------------------------------------
# top_k
# ------------------------------------------------------------------------------------------


# --8<-- [start:top_k]
top_k_p = Primitive("top_k", multiple_results=True)
def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """``lax.top_k``: the ``k`` largest entries along ``axis`` and their int32 indices, largest
    first; NaN counts as the largest, 0.0 as larger than -0.0, and equal values come in the
    order of their indices.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> top_k(jnp.array([1.0, 3.0, 2.0, 3.0]), 2)
        [Array([3., 3.], dtype=float32), Array([1, 3], dtype=int32)]
    """
    shape = get_aval(operand).shape
    axis = _canonical(axis, len(shape), "top_k")
    k = int(k)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if k > shape[axis]:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with shape={list(shape)} and axis={axis}")
    return top_k_p.bind(operand, k=k, axis=axis)
def top_k_impl(x, *, k, axis):
    if x.dtype.kind == "f":  # XLA's total order, as JAX's: a NaN first, then descending,
        # 0.0 before -0.0, a NaN with its sign bit set last; ties stay in order (stable)
        nan, sign = np.isnan(x), np.signbit(x)
        order = np.lexsort((sign, -x, ~(nan & ~sign), nan & sign), axis=axis)
    else:  # ~x reverses the order of integers and booleans without overflow
        order = np.argsort(~x, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis)
    # the indices are never weakly typed, even for a weak int32 operand
    return [np.take_along_axis(x, order, axis), Array(order.astype(np.int32), False)]
impl_rules[top_k_p] = top_k_impl
def _picked(indices, axis):
    """Index vectors of the elements top_k picked (for a scatter or gather of all dims)."""
    return index_grid(get_aval(indices).shape, axis, indices)
def top_k_vjp(cts, x, *, out, k, axis):
    if not dtypes.is_float(get_aval(x).dtype):
        return [None]
    grid = _picked(out[1], axis)
    numbers = point_dimension_numbers(get_aval(x).ndim)
    return [scatter_add(zeros_like(x), grid, cts[0], numbers)]
vjp_rules[top_k_p] = top_k_vjp
def top_k_jvp(primals, tangents, *, k, axis):
    values, indices = top_k_p.bind(primals[0], k=k, axis=axis)
    grid = _picked(indices, axis)
    return [values, indices], [point_gather(tangents[0], grid), zeros_like(indices)]
jvp_rules[top_k_p] = top_k_jvp
# --8<-- [end:top_k]
