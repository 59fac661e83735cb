"""Sequences as signals: convolution and cross-correlation of 1-D arrays, differences and
finite-difference gradients, integration by the trapezoidal rule, and phase unwrapping.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .arrangement import diff
from .cumulative import cumsum
from .mathematical import conj
from .promotion import as_value, canonicalize_axes, promote, promote_inexact
from .shapes import concatenate, flip, moveaxis, ravel, reshape
from .ufuncs import abs, astype, mod, where

_MODES = ("full", "same", "valid")


def _padding(mode: str, kernel_length: int) -> tuple[int, int]:
    """How much the signal is padded on each side, so that 'valid' has the positions where
    the kernel fits, 'full' every overlap and 'same' the signal's length."""
    if mode == "valid":
        return (0, 0)
    if mode == "same":
        return (kernel_length // 2, kernel_length - kernel_length // 2 - 1)
    if mode == "full":
        return (kernel_length - 1, kernel_length - 1)
    raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}.")


def _sliding_products(name: str, a, v, mode: str, preferred_element_type: Any):
    """The 1-D ``a`` and ``v`` (the longer first, and whether they were swapped), promoted as
    NumPy's convolutions do (to an inexact type unless ``preferred_element_type``)."""
    if np.ndim(a) != 1 or np.ndim(v) != 1:
        raise ValueError(f"{name}: only 1-D inputs are supported, got shapes {np.shape(a)} "
                         f"and {np.shape(v)}.")
    a, v = (as_value(x) for x in (promote(a, v) if preferred_element_type is not None
                                  else promote_inexact(a, v)))
    if get_aval(a).size == 0 or get_aval(v).size == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {get_aval(a).shape} "
                         f"and {get_aval(v).shape}.")
    swapped = get_aval(a).shape[0] < get_aval(v).shape[0]
    return (v, a, swapped) if swapped else (a, v, swapped)


def _slide(signal, kernel, mode: str, preferred_element_type: Any):
    """``sum_k signal[i + k] * kernel[k]`` at each position ``i`` of the padded signal: one
    1-D convolution (which, as in lax, does not flip its kernel)."""
    padding = _padding(mode, get_aval(kernel).shape[0])
    out = lax.conv_general_dilated(signal[None, None, :], kernel[None, None, :], (1,),
                                   [padding], preferred_element_type=preferred_element_type)
    return out[0, 0]


def convolve(a, v, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None):
    """The discrete convolution of the 1-D ``a`` and ``v``: ``sum_k a[k] * v[n - k]``, over
    every overlap ('full'), the length of the longer ('same') or where one covers the other
    ('valid').

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.convolve(jnp.array([1, 2, 3]), jnp.array([1, 1]), mode="valid")
        Array([3., 5.], dtype=float32)
    """
    del precision
    signal, kernel, _ = _sliding_products("convolve", a, v, mode, preferred_element_type)
    return _slide(signal, flip(kernel), mode, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None):
    """The cross-correlation of the 1-D ``a`` and ``v``: ``sum_n a[n + k] * conj(v[n])``,
    with the modes of :func:`convolve` (here 'valid' by default).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]), "full")
        Array([0.5, 2. , 3.5, 3. , 0. ], dtype=float32)
    """
    del precision
    if np.ndim(a) == 1 and np.ndim(v) == 1:
        v = conj(as_value(v))
    signal, kernel, swapped = _sliding_products("correlate", a, v, mode,
                                                preferred_element_type)
    result = _slide(signal, kernel, mode, preferred_element_type)
    return result[::-1] if swapped else result


def ediff1d(ary, to_end: Any = None, to_begin: Any = None):
    """The differences of consecutive elements of the flattened ``ary``, with ``to_begin``
    and ``to_end`` (cast to its dtype) put before and after.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.ediff1d(jnp.array([1, 4, 9]), to_begin=0)
        Array([0, 3, 5], dtype=int32)
    """
    flat = ravel(as_value(ary))
    parts = [lax.sub(flat[1:], flat[:-1])]
    if to_begin is not None:
        parts.insert(0, ravel(astype(to_begin, get_aval(flat).dtype)))
    if to_end is not None:
        parts.append(ravel(astype(to_end, get_aval(flat).dtype)))
    return concatenate(parts) if len(parts) > 1 else parts[0]


def trapezoid(y, x: Any = None, dx: Any = 1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x``
    (or spaced ``dx`` apart).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.trapezoid(jnp.array([1.0, 2.0, 3.0]), dx=0.5)
        Array(2., dtype=float32)
    """
    if x is None:
        (y,) = promote_inexact(y)
        spacing = as_value(dx)
        if get_aval(spacing).ndim > 0:
            spacing = reshape(spacing, (1,) * (get_aval(as_value(y)).ndim
                                               - get_aval(spacing).ndim)
                              + get_aval(spacing).shape)
            spacing = moveaxis(spacing, axis, -1)
    else:
        y, x = promote_inexact(y, x)
        x = as_value(x)
        spacing = diff(x) if get_aval(x).ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(as_value(y), axis, -1)
    if get_aval(spacing).ndim == 0 or get_aval(spacing).shape[-1] == 1:
        step = spacing if get_aval(spacing).ndim == 0 else spacing[..., 0]
        return step * (y.sum(-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * (spacing * (y[..., 1:] + y[..., :-1])).sum(-1)


def _along(a, axis: int, start: int | None, stop: int | None):
    """``a[start:stop]`` along ``axis``."""
    return a[(slice(None),) * axis + (slice(start, stop),)]


def _gradient_along(a, h, axis: int):
    """Central differences inside, one-sided ones at the two edges, for a scalar spacing
    ``h`` or the 1-D coordinates ``h`` of the points."""
    first = _along(a, axis, 1, 2) - _along(a, axis, 0, 1)
    last = _along(a, axis, -1, None) - _along(a, axis, -2, -1)
    if np.ndim(h) == 0:
        inner = (_along(a, axis, 2, None) - _along(a, axis, None, -2)) * 0.5 / h
        return concatenate([first / h, inner, last / h], axis=axis)
    if np.ndim(h) != 1:
        raise ValueError("gradient: spacing arrays must be 1-D arrays or scalars.")
    if get_aval(h).shape[0] != get_aval(a).shape[axis]:
        raise ValueError("gradient: a spacing array must have the length of the axis the "
                         "gradient is taken along.")
    shape = [1] * get_aval(a).ndim
    shape[axis] = get_aval(h).shape[0]
    h = reshape(h, tuple(shape))
    first = first / (_along(h, axis, 1, 2) - _along(h, axis, 0, 1))
    last = last / (_along(h, axis, -1, None) - _along(h, axis, -2, -1))
    dx1 = _along(h, axis, 1, -1) - _along(h, axis, 0, -2)
    dx2 = _along(h, axis, 2, None) - _along(h, axis, 1, -1)
    inner = (-dx2 / (dx1 * (dx1 + dx2)) * _along(a, axis, 0, -2)
             + (dx2 - dx1) / (dx1 * dx2) * _along(a, axis, 1, -1)
             + dx1 / (dx2 * (dx1 + dx2)) * _along(a, axis, 2, None))
    return concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None):
    """The gradient of the sampled function ``f`` along each of ``axis`` (every axis by
    default): second-order central differences inside, first-order at the edges. Each of
    ``varargs`` is a spacing (a scalar) or the points' coordinates (1-D), one for all axes
    or one per axis. One array for one axis, else a list.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.gradient(jnp.array([1.0, 2.0, 4.0, 7.0]))
        Array([1. , 1.5, 2.5, 3. ], dtype=float32)
    """
    if edge_order is not None:
        raise NotImplementedError("gradient: edge_order is not supported (the edges are "
                                  "first-order differences).")
    a, *spacings = (as_value(x) for x in promote_inexact(f, *varargs))
    axes = canonicalize_axes(axis, get_aval(a).ndim, "gradient")
    if not axes:
        return []
    if min(get_aval(a).shape[d] for d in axes) < 2:
        raise ValueError("gradient: the array is too small to take a numerical gradient: "
                         "at least 2 elements are needed along each axis.")
    if len(spacings) not in (0, 1, len(axes)):
        raise TypeError(f"gradient: {len(spacings)} spacing arguments for {len(axes)} "
                        f"axes; pass none, one, or one per axis.")
    spacings = spacings or [1.0]
    steps = spacings * len(axes) if len(spacings) == 1 else spacings
    grads = [_gradient_along(a, h, d) for d, h in zip(axes, steps)]
    return grads[0] if len(axes) == 1 else grads


def unwrap(p, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi):
    """``p`` with jumps between neighbours along ``axis`` of more than ``discont`` (by
    default half the ``period``) taken back by multiples of ``period``: a phase made
    continuous.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.unwrap(jnp.array([0.0, 3.0, -3.0]))
        Array([0.       , 3.       , 3.2831855], dtype=float32)
    """
    p, period = (as_value(x) for x in promote(p, period))
    if dtypes.is_complex(get_aval(p).dtype):
        raise ValueError("jnp.unwrap does not support complex numbers; unwrap jnp.angle(p).")
    if get_aval(p).shape[axis] == 0:
        return p
    discont = period / 2 if discont is None else discont
    interval = period // 2 if dtypes.is_int(get_aval(p).dtype) else period / 2
    steps = diff(p, axis=axis)
    wrapped = mod(steps + interval, period) - interval
    wrapped = where((wrapped == -interval) & (steps > 0), interval, wrapped)
    correction = where(abs(steps) < discont, 0, wrapped - steps)
    axis = axis % get_aval(p).ndim
    return concatenate([_along(p, axis, 0, 1),
                        _along(p, axis, 1, None) + cumsum(correction, axis=axis)], axis=axis)
