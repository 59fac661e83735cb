"""Finding elements: membership (``isin``), the positions of nonzero elements
(``argwhere``, ``flatnonzero``), the bins values fall in (``digitize``), and picking elements
by a condition (``compress``, ``extract``) or by an index array (``choose``); and whether two
arrays are equal once broadcast (``array_equiv``).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.isin(jnp.array([1, 2, 3, 4]), jnp.array([2, 4]))
    Array([False,  True, False,  True], dtype=bool)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval
from .arrangement import vstack
from .concrete import concrete_value
from .creation import ones, zeros, zeros_like
from .index_tricks import indices
from .promotion import as_value, broadcast_shapes, promote
from .reductions import _check_no_out, all, any
from .shapes import atleast_1d, broadcast_arrays, expand_dims, moveaxis, ravel, reshape
from .statistics import argsort, nonzero, searchsorted
from .ufuncs import astype, clip, where

_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")
_PASS_SIZE = "Pass size= (a Python int), and fill_value= for the missing elements."


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         method: str = "auto"):
    """Elementwise, whether ``element`` occurs in ``test_elements`` (any shape); with
    ``invert``, whether it does not. Every pair is compared, whatever ``method`` says.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.isin(jnp.array([[1, 5], [3, 0]]), jnp.array([0, 1]), invert=True)
        Array([[False,  True],
               [ True, False]], dtype=bool)
    """
    del assume_unique
    if method not in _ISIN_METHODS:
        raise ValueError(f"isin: method={method!r} is not implemented; options are "
                         f"{', '.join(repr(m) for m in _ISIN_METHODS)}.")
    element, test_elements = (as_value(x) for x in promote(element, test_elements))
    shape = get_aval(element).shape
    flat, tests = ravel(element), ravel(test_elements)
    if get_aval(flat).size == 0 or get_aval(tests).size == 0:
        return (ones if invert else zeros)(shape, dtype=bool)
    if invert:
        found = all(flat[:, None] != tests[None, :], axis=-1)
    else:
        found = any(flat[:, None] == tests[None, :], axis=-1)
    return reshape(found, shape)


def argwhere(a, *, size: int | None = None, fill_value: Any = None):
    """The indices of ``a``'s nonzero elements, one row each (``(count, a.ndim)``). Under a
    transformation ``size`` must give the count (see :func:`nonzero`).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.argwhere(jnp.array([[0, 3], [5, 0]]))
        Array([[0, 1],
               [1, 0]], dtype=int32)
    """
    a = as_value(a)
    ndim = get_aval(a).ndim
    found = vstack(nonzero(atleast_1d(a), size=size, fill_value=fill_value)).T
    if ndim == 0:
        return reshape(found[:0], (get_aval(found).shape[0], 0))
    return reshape(found, (get_aval(found).shape[0], ndim))


def flatnonzero(a, *, size: int | None = None, fill_value: Any = None):
    """The indices of the nonzero elements of the flattened ``a``."""
    return nonzero(ravel(as_value(a)), size=size, fill_value=fill_value)[0]


def digitize(x, bins, right: bool = False, *, method: str | None = None):
    """The index of the bin each element of ``x`` falls in, for monotonic ``bins`` (rising
    or falling): ``bins[i-1] <= x < bins[i]`` (``<`` and ``<=`` swapped if ``right``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.digitize(jnp.array([0.5, 1.0, 2.5]), jnp.array([1.0, 2.0]))
        Array([0, 1, 2], dtype=int32)
    """
    del method  # one search for every method
    right = bool(concrete_value(right, "digitize's right", "Pass a Python bool."))
    bins = as_value(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be 1-D, got shape {get_aval(bins).shape}.")
    n = get_aval(bins).shape[0]
    if n == 0:
        return zeros_like(x, dtype=np.int32)
    side = "left" if right else "right"
    rising = searchsorted(bins, x, side=side)
    falling = n - searchsorted(bins[::-1], x, side=side)
    return where(bins[-1] >= bins[0], rising, falling)


def compress(condition, a, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None):
    """The slices of ``a`` along ``axis`` (of the flattened ``a`` if None) where the 1-D
    ``condition`` is true. Under a transformation ``size`` must give their number: the
    first ``size`` are kept, and missing ones are ``fill_value``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.compress(jnp.array([True, False, True]), jnp.array([[1, 2, 3], [4, 5, 6]]),
        ...              axis=1)
        Array([[1, 3],
               [4, 6]], dtype=int32)
    """
    _check_no_out(out)
    condition = astype(condition, bool)
    if get_aval(condition).ndim != 1:
        raise ValueError(f"compress: condition must be 1-D, got shape "
                         f"{get_aval(condition).shape}.")
    a = ravel(as_value(a)) if axis is None else moveaxis(as_value(a), axis, 0)
    axis = 0 if axis is None else axis
    n = get_aval(a).shape[0]
    condition, beyond = condition[:n], condition[n:]
    a = a[:get_aval(condition).shape[0]]
    if size is None:
        found = concrete_value(condition, "compress without size=", _PASS_SIZE)
        if np.any(concrete_value(beyond, "compress without size=", _PASS_SIZE)):
            raise ValueError("compress: condition is true at entries beyond a's length "
                             f"{n} along the axis.")
        return moveaxis(a[np.flatnonzero(found)], 0, axis)
    if not 0 <= size <= n:
        raise ValueError(f"compress: size must be from 0 to a's length along the axis "
                         f"({n}), got {size}.")
    mask = expand_dims(condition, tuple(range(1, get_aval(a).ndim)))
    a = where(mask, a, astype(fill_value, get_aval(a).dtype))
    return moveaxis(a[argsort(condition, descending=True)][:size], 0, axis)


def extract(condition, arr, *, size: int | None = None, fill_value: Any = 0):
    """The elements of ``arr`` where ``condition`` (of the same size) is true, flattened
    (:func:`compress` of both flattened)."""
    return compress(ravel(as_value(condition)), ravel(as_value(arr)), size=size,
                    fill_value=fill_value)


def choose(a, choices: Sequence[Any], out: None = None, mode: str = "raise"):
    """Elementwise, ``choices[a]``: the integer array ``a`` picks which of the (broadcast)
    ``choices`` each element comes from. ``mode`` says what an index out of range does:
    'raise' (only outside a transformation), 'wrap' or 'clip'.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.choose(jnp.array([0, 1, 0]), [jnp.array([1, 2, 3]), jnp.array([10, 20, 30])])
        Array([ 1, 20,  3], dtype=int32)
    """
    _check_no_out(out)
    a = as_value(a)
    if not dtypes.is_int(get_aval(a).dtype):
        raise ValueError(f"choose: a must be of an integer type, got {get_aval(a).dtype}.")
    n = len(choices)
    if mode == "raise":
        values = concrete_value(a, "choose with mode='raise'",
                                "Use mode='wrap' or mode='clip' under jit.")
        if np.any((values < 0) | (values >= n)):
            raise ValueError(f"choose: an entry of a is out of range for {n} choices.")
    elif mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}.")
    a, *choices = broadcast_arrays(a, *choices)
    stacked = as_value(list(choices))  # as jnp.array of them: promoted, never weak
    return stacked[(a, *indices(get_aval(a).shape, sparse=True))]


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` have equal elements once broadcast together. Shapes that do
    not broadcast are a TypeError, as in JAX (NumPy answers False).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]]))
        Array(True, dtype=bool)
    """
    a1, a2 = as_value(a1), as_value(a2)
    try:
        broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape, op_name="array_equiv")
    except ValueError as error:
        # NB: JAX means to answer False here, but its jnp.equal raises a TypeError first.
        raise TypeError(f"{error} Compare arrays of broadcastable shapes, or check "
                        f"a1.shape == a2.shape first.") from None
    return all(a1 == a2)
