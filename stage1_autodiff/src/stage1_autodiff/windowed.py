"""Windowed reductions: ``lax.reduce_window`` and the three monoids it is made of here,
``reduce_window_sum``, ``reduce_window_max`` and ``reduce_window_min`` (sum, max and min
pooling).

A window slides over the operand. Along each dim ``d`` the operand is first *dilated* by
``base_dilation[d]`` (``b - 1`` holes between neighbours), then *padded* by ``padding[d]``
(``(low, high)``; negative values crop); the holes and the padding hold the reduction's
identity. The window has ``window_dimensions[d]`` taps ``window_dilation[d]`` apart, and it
moves by ``window_strides[d]``. Each result element reduces the taps of one window position.

The same windows are a convolution's (``convolution.py``), so the helpers that find them live
here: on NumPy arrays, a strided *view* of the padded operand with one extra dim per window dim
(no copy); on traced values, one strided ``slice`` per tap (what the code generators of stage 2
compile, through ``*_by_slices`` below).

The VJP of a sum of windows is a sum of windows over the cotangent (dilated by the strides,
padded so every tap lands back where it came from); the VJP of a max or min sends each
window's cotangent to the *first* tap that holds the result, in row-major window order, as
XLA's ``select_and_scatter_add`` with ``ge`` (``le``) does.

NB: JAX's are in ``jax/_src/lax/windowed_reductions.py`` (``reduce_window_sum_p``,
``_reduce_window_chooser_jvp_rule``, ``_select_and_scatter_add``); its ``reduce_window`` picks
one of these by ``_get_monoid_window_reducer`` and otherwise lowers a general
``reduce_window_p`` holding the ``computation`` as a jaxpr.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from .core import Primitive, Tracer, get_aval, impl_rules, jvp_rules, vjp_rules
from .primitives import (
    Shape,
    _linear_jvp,
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    broadcast_in_dim,
    convert_element_type,
    eq,
    full,
    full_like,
    max,
    min,
    pad,
    select_n,
    slice,
)

__all__ = ["REDUCE_WINDOWS", "padtype_to_pads", "reduce_window", "reduce_window_max",
           "reduce_window_max_p", "reduce_window_min", "reduce_window_min_p",
           "reduce_window_sum", "reduce_window_sum_p"]

Pads = tuple[tuple[int, int], ...]

# ------------------------------------------------------------------------------------------
# Window geometry, shared with convolution.py
# ------------------------------------------------------------------------------------------


def dilate_dim(n: int, dilation: int) -> int:
    """The size of ``n`` elements with ``dilation - 1`` holes between neighbours."""
    return 0 if n == 0 else (n - 1) * dilation + 1


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """``(low, high)`` per dim for ``'VALID'`` (none), ``'SAME'`` (``ceil(n / stride)``
    results, the odd element of padding high) or ``'SAME_LOWER'`` (the odd one low).

    Example:
        >>> padtype_to_pads((5,), (3,), (2,), "SAME")
        [(1, 1)]
    """
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(f"Unknown padding type {padding!r}: expected 'SAME', 'SAME_LOWER', "
                         f"'VALID' or a sequence of (low, high) pairs, one per spatial dim.")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = builtins_max(0, (math.ceil(n / s) - 1) * s + k - n)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


def builtins_max(a: int, b: int) -> int:  # ``max`` here is lax's
    return a if a >= b else b


def window_out_shape(shape: Sequence[int], window_dimensions: Sequence[int],
                     window_strides: Sequence[int], padding: Pads,
                     base_dilation: Sequence[int], window_dilation: Sequence[int]) -> Shape:
    """How many window positions fit along each dim (0 when none does)."""
    out = []
    for n, k, s, (lo, hi), b, w in zip(shape, window_dimensions, window_strides, padding,
                                       base_dilation, window_dilation):
        room = dilate_dim(n, b) + lo + hi - dilate_dim(k, w)
        out.append(room // s + 1 if room >= 0 else 0)
    return tuple(out)


def dilate_and_pad(x: np.ndarray, value: Any, dilation: Sequence[int], padding: Pads,
                   first: int = 0) -> np.ndarray:
    """NumPy: dims ``first:`` of ``x`` dilated, then padded (a negative pad crops), the new
    elements ``value``. The unchanged array itself when there is nothing to do."""
    dims = range(first, x.ndim)
    if all(b == 1 for b in dilation) and all(p == (0, 0) for p in padding):
        return x
    grown = [builtins_max(lo, 0) + dilate_dim(x.shape[d], b) + builtins_max(hi, 0)
             for d, b, (lo, hi) in zip(dims, dilation, padding)]
    out = np.full(x.shape[:first] + tuple(grown), value, x.dtype)
    place = tuple(np.s_[builtins_max(lo, 0)::b] for b, (lo, _) in zip(dilation, padding))
    out[(np.s_[:],) * first + place][tuple(np.s_[:n] for n in x.shape)] = x
    crop = tuple(np.s_[builtins_max(-lo, 0):g - builtins_max(-hi, 0)]
                 for g, (lo, hi) in zip(grown, padding))
    return out[(np.s_[:],) * first + crop]


def windows_view(x: np.ndarray, window: Sequence[int], strides: Sequence[int],
                 window_dilation: Sequence[int], first: int = 0) -> np.ndarray:
    """NumPy: a read-only view of the (already dilated and padded) ``x`` with dims
    ``x.shape[:first] + positions + window``: element ``[..., i, k]`` is the tap ``k`` of the
    window at position ``i``."""
    spatial = x.strides[first:]
    positions = [(n - dilate_dim(k, w)) // s + 1 if n >= dilate_dim(k, w) else 0
                 for n, k, s, w in zip(x.shape[first:], window, strides, window_dilation)]
    return np.lib.stride_tricks.as_strided(
        x, x.shape[:first] + tuple(positions) + tuple(window),
        x.strides[:first] + tuple(t * s for t, s in zip(spatial, strides))
        + tuple(t * w for t, w in zip(spatial, window_dilation)), writeable=False)


def pad_for_windows(x: Any, value: Any, padding: Pads, base_dilation: Sequence[int],
                    first: int = 0) -> Any:
    """Traced: ``x`` with its dims from ``first`` on dilated and padded by the non-negative
    pads, holding ``value`` (a reader of its windows crops the negative ones): a ``pad``, or
    ``x`` itself when there is nothing to add. (``dilate_and_pad`` is the NumPy form.)"""
    config = [(0, 0, 0)] * first + [(builtins_max(lo, 0), builtins_max(hi, 0), b - 1)
                                    for (lo, hi), b in zip(padding, base_dilation)]
    if all(c == (0, 0, 0) for c in config):
        return x
    return pad(x, full((), value, get_aval(x).dtype), config)


def window_taps(x: Any, value: Any, window_dimensions: Sequence[int],
                window_strides: Sequence[int], padding: Pads, base_dilation: Sequence[int],
                window_dilation: Sequence[int], first: int = 0) -> list[Any]:
    """Traced: one array per window tap (row-major over the window), each ``x``'s value at
    that tap of every window position: a ``pad`` (dilation and the non-negative padding,
    holding ``value``), then a strided ``slice`` per tap (which also crops negative pads)."""
    shape = get_aval(x).shape
    spatial = shape[first:]
    padded = pad_for_windows(x, value, padding, base_dilation, first)
    window, strides = window_dimensions, window_strides
    out = window_out_shape(spatial, window, strides, padding, base_dilation, window_dilation)
    taps = []
    for tap in itertools.product(*(range(k) for k in window)):
        starts = [builtins_max(-lo, 0) + t * w
                  for (lo, _), t, w in zip(padding, tap, window_dilation)]
        limits = [a + (n - 1) * s + 1 if n else a for a, n, s in zip(starts, out, strides)]
        taps.append(slice(padded, [0] * first + starts, list(shape[:first]) + limits,
                          [1] * first + list(strides)))
    return taps

# ------------------------------------------------------------------------------------------
# The three monoid reductions
# ------------------------------------------------------------------------------------------


def check_window(shape: Shape, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation) -> None:
    named = {"window_dimensions": window_dimensions, "window_strides": window_strides,
             "padding": padding, "base_dilation": base_dilation,
             "window_dilation": window_dilation}
    for name, value in named.items():
        if len(value) != len(shape):
            raise TypeError(f"reduce_window: {name} {tuple(value)} must have one entry per "
                            f"dim of the operand, of shape {shape}.")
    for name in ("window_dimensions", "window_strides", "base_dilation", "window_dilation"):
        if any(v < 1 for v in named[name]):
            raise TypeError(f"reduce_window: {name} must be positive integers, got "
                            f"{tuple(named[name])}.")


def _bind(prim: Primitive, x, window_dimensions, window_strides, padding,
          base_dilation=None, window_dilation=None):
    ndim = get_aval(x).ndim
    params = dict(window_dimensions=tuple(int(k) for k in window_dimensions),
                  window_strides=tuple(int(s) for s in window_strides),
                  padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                  base_dilation=tuple(base_dilation or (1,) * ndim),
                  window_dilation=tuple(window_dilation or (1,) * ndim))
    check_window(get_aval(x).shape, **params)
    return prim.bind(x, **params)


def _impl(reduce, identity):
    def impl(x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        padded = dilate_and_pad(x, identity(x.dtype), base_dilation, padding)
        view = windows_view(padded, window_dimensions, window_strides, window_dilation)
        axes = tuple(range(x.ndim, 2 * x.ndim))
        return np.asarray(reduce(view, axis=axes), dtype=x.dtype)
    return impl


def _by_slices(combine, identity):
    """The reduction as ``combine`` of its taps: elementwise code any backend compiles."""
    def decomposed(x, **params):
        taps = window_taps(x, identity(get_aval(x).dtype), **params)
        out = taps[0]
        for tap in taps[1:]:
            out = combine(out, tap)
        return out
    return decomposed


def _zero(dtype: np.dtype) -> Any:
    return 0


reduce_window_sum_p = Primitive("reduce_window_sum")
def reduce_window_sum(x, window_dimensions: Shape, window_strides: Shape, padding: Pads,
                      base_dilation: Shape | None = None, window_dilation: Shape | None = None):
    """The sum of each window (sum pooling); see the module docstring."""
    return _bind(reduce_window_sum_p, x, window_dimensions, window_strides, padding,
                 base_dilation, window_dilation)
impl_rules[reduce_window_sum_p] = _impl(np.sum, _zero)
reduce_window_sum_by_slices = _by_slices(add, _zero)
def reduce_window_sum_vjp(ct, x, *, out, window_dimensions, window_strides, padding,
                          base_dilation, window_dilation):
    # Each tap of each window added x[i] into one result: the cotangent of x[i] sums the
    # cotangents of those results. Dilating ct by the strides puts result j at j * stride;
    # then a window over it, reversed (a sum's window is symmetric), gathers exactly the
    # results whose taps read i, and the strides of this window skip x's holes.
    if not dtypes.is_float(get_aval(x).dtype):
        return [None]
    pads = transpose_padding(get_aval(x).shape, window_dimensions, window_strides,
                             get_aval(ct).shape, padding, base_dilation, window_dilation)
    return [reduce_window_sum_p.bind(ct, window_dimensions=window_dimensions,
                                     window_strides=base_dilation, padding=pads,
                                     base_dilation=window_strides,
                                     window_dilation=window_dilation)]
vjp_rules[reduce_window_sum_p] = reduce_window_sum_vjp
jvp_rules[reduce_window_sum_p] = _linear_jvp(reduce_window_sum_p)


def transpose_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                      window_dilation) -> Pads:
    """The padding of the cotangent (dilated by ``strides``) under the *reversed* window, so
    that a window at stride ``lhs_dilation`` reads, for input ``i``, every result whose
    window read ``i``: before, the window's reach less the original low padding; after,
    whatever makes one result per input element. (A convolution's lhs transpose uses it
    too.)"""
    pads = []
    for n, k, s, m, (lo, _), b, w in zip(in_shape, window, strides, out_shape, padding,
                                         lhs_dilation, window_dilation):
        before = dilate_dim(k, w) - 1 - lo
        after = dilate_dim(n, b) + dilate_dim(k, w) - 1 - dilate_dim(m, s) - before
        pads.append((before, after))
    return tuple(pads)


def _first_taps(x, out, identity, params) -> list[Any]:
    """For each tap, a bool array: whether it is the first tap of its window (row-major)
    that holds the window's result. Exactly one per window, unless the result is NaN."""
    taken, firsts = None, []
    for tap in window_taps(x, identity, **params):
        hit = eq(tap, out)
        if taken is not None:
            hit = bitwise_and(hit, bitwise_not(taken))
        taken = hit if taken is None else bitwise_or(taken, hit)
        firsts.append(hit)
    return firsts


def _chooser_vjp(identity):
    def vjp(ct, x, *, out, **params):
        """Each window's cotangent to its first winning tap: the taps' transpose, a padded
        placement per tap (the transpose of its slice), summed, then the holes and padding
        dropped (the transpose of the first ``pad``)."""
        if not dtypes.is_float(get_aval(x).dtype):
            return [None]
        zero = full_like(ct, 0)
        placed = [select_n(first, zero, ct) for first in
                  _first_taps(x, out, identity(get_aval(x).dtype), params)]
        return [_taps_transpose(placed, get_aval(x).shape, **params)]
    return vjp


def _taps_transpose(taps: list[Any], shape: Shape, *, window_dimensions, window_strides,
                    padding, base_dilation, window_dilation) -> Any:
    """The sum of each tap's values put back where ``window_taps`` read them from."""
    grown = [builtins_max(lo, 0) + dilate_dim(n, b) + builtins_max(hi, 0)
             for n, b, (lo, hi) in zip(shape, base_dilation, padding)]
    total = None
    out = get_aval(taps[0]).shape
    for values, tap in zip(taps, itertools.product(*(range(k) for k in window_dimensions))):
        config = []
        for g, n, (lo, _), t, w, s in zip(grown, out, padding, tap, window_dilation,
                                          window_strides):
            start = builtins_max(-lo, 0) + t * w
            end = start + (n - 1) * s + 1 if n else start
            config.append((start, g - end, s - 1 if n else 0))
        placed = pad(values, full((), 0, get_aval(values).dtype), config)
        total = placed if total is None else add(total, placed)
    starts = [builtins_max(lo, 0) for lo, _ in padding]
    limits = [a + dilate_dim(n, b) for a, n, b in zip(starts, shape, base_dilation)]
    return slice(total, starts, limits, base_dilation)


def _chooser_jvp(prim: Primitive, identity):
    def jvp(primals, tangents, **params):
        (x,), (x_dot,) = primals, tangents
        out = prim.bind(x, **params)
        if not dtypes.is_float(get_aval(x).dtype):
            return out, full_like(out, 0)
        firsts = _first_taps(x, out, identity(get_aval(x).dtype), params)
        out_dot = full_like(out, 0)
        for first, tap in zip(firsts, window_taps(x_dot, 0, **params)):
            out_dot = add(out_dot, select_n(first, full_like(out, 0), tap))
        return out, out_dot
    return jvp


reduce_window_max_p = Primitive("reduce_window_max")
def reduce_window_max(x, window_dimensions: Shape, window_strides: Shape, padding: Pads,
                      base_dilation: Shape | None = None, window_dilation: Shape | None = None):
    """The largest element of each window (max pooling); see the module docstring."""
    return _bind(reduce_window_max_p, x, window_dimensions, window_strides, padding,
                 base_dilation, window_dilation)
impl_rules[reduce_window_max_p] = _impl(np.max, dtypes.lowest)
reduce_window_max_by_slices = _by_slices(max, dtypes.lowest)
vjp_rules[reduce_window_max_p] = _chooser_vjp(dtypes.lowest)
jvp_rules[reduce_window_max_p] = _chooser_jvp(reduce_window_max_p, dtypes.lowest)

reduce_window_min_p = Primitive("reduce_window_min")
def reduce_window_min(x, window_dimensions: Shape, window_strides: Shape, padding: Pads,
                      base_dilation: Shape | None = None, window_dilation: Shape | None = None):
    """The smallest element of each window (min pooling); see the module docstring."""
    return _bind(reduce_window_min_p, x, window_dimensions, window_strides, padding,
                 base_dilation, window_dilation)
impl_rules[reduce_window_min_p] = _impl(np.min, dtypes.highest)
reduce_window_min_by_slices = _by_slices(min, dtypes.highest)
vjp_rules[reduce_window_min_p] = _chooser_vjp(dtypes.highest)
jvp_rules[reduce_window_min_p] = _chooser_jvp(reduce_window_min_p, dtypes.highest)

# The three, for the later stages' tables (one rule each serves them all).
REDUCE_WINDOWS = (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p)
DECOMPOSITIONS = {reduce_window_sum_p: reduce_window_sum_by_slices,
                  reduce_window_max_p: reduce_window_max_by_slices,
                  reduce_window_min_p: reduce_window_min_by_slices}

# ------------------------------------------------------------------------------------------
# lax.reduce_window
# ------------------------------------------------------------------------------------------

# computation -> (primitive, identity, combine); jnp's spellings are accepted too (below).
_MONOIDS = {add: (reduce_window_sum_p, _zero, add), max: (reduce_window_max_p, dtypes.lowest, max),
            min: (reduce_window_min_p, dtypes.highest, min)}


def _monoid(computation) -> tuple[Primitive, Any, Any]:
    from .numpy import add as jnp_add, maximum, minimum  # noqa: I001 -- numpy builds on this
    aliases = {jnp_add: add, maximum: max, minimum: min}
    found = _MONOIDS.get(aliases.get(computation, computation))
    if found is None:
        raise NotImplementedError(
            f"reduce_window: computation {getattr(computation, '__name__', computation)!r} is "
            f"not supported. Only lax.add, lax.max and lax.min (sum, max and min pooling) are "
            f"implemented; write others from these, or from lax.reduce_window_sum and friends.")
    return found


def _is_identity(init_value, identity: Any) -> bool:
    """Whether ``init_value`` is known now (not traced) and is the monoid's identity."""
    if isinstance(init_value, Tracer) or np.ndim(init_value) != 0:
        return False
    return bool(np.asarray(init_value) == identity)


def reduce_window(operand, init_value, computation, window_dimensions: Shape,
                  window_strides: Shape | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Shape | None = None, window_dilation: Shape | None = None):
    """``lax.reduce_window``: ``computation`` folded over each window, from ``init_value``
    (see the module docstring). ``padding`` is ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'``
    or one ``(low, high)`` per dim; strides default to 1.

    With ``lax.add`` from 0, or ``lax.max`` (``lax.min``) from the lowest (highest) value of
    the dtype, this is one primitive, as in JAX. Another ``init_value`` is combined once with
    each window's result, as JAX computes it (padding and holes count as the identity).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff import lax
        >>> x = jnp.arange(6.0).reshape(2, 3)
        >>> lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID")
        Array([[4., 5.]], dtype=float32)
    """
    prim, identity, combine = _monoid(computation)
    aval = get_aval(operand)
    ndim = aval.ndim
    window_strides = tuple(window_strides or (1,) * ndim)
    window_dilation = tuple(window_dilation or (1,) * ndim)
    base_dilation = tuple(base_dilation or (1,) * ndim)
    if isinstance(padding, str):
        dilated = [dilate_dim(k, w) for k, w in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(aval.shape, dilated, window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    reduced = _bind(prim, operand, window_dimensions, window_strides, padding, base_dilation,
                    window_dilation)
    if _is_identity(init_value, identity(aval.dtype)):
        return reduced
    init = _as_init(init_value, aval.dtype)
    return combine(reduced, broadcast_in_dim(init, get_aval(reduced).shape, ()))


def _as_init(init_value, dtype: np.dtype) -> Any:
    aval = get_aval(init_value)
    if aval.shape != ():
        raise TypeError(f"reduce_window: init_value must be a scalar, got shape {aval.shape}.")
    if aval.dtype != dtype and not aval.weak_type:
        raise TypeError(f"reduce_window: init_value of dtype {aval.dtype} does not match the "
                        f"operand's dtype {dtype}; convert one of them.")
    return convert_element_type(init_value, dtype)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Pads,
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> Shape:
    """The result shape of a :func:`reduce_window` with these windows (``padding`` as
    ``(low, high)`` pairs), without an operand.

    Example:
        >>> reduce_window_shape_tuple((1, 8, 8, 3), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4)
        (1, 4, 4, 3)
    """
    ones = (1,) * len(operand_shape)
    return window_out_shape(operand_shape, window_dimensions, window_strides, padding,
                            base_dilation or ones, window_dilation or ones)
