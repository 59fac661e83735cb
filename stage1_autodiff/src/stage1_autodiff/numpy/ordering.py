"""Orders short of a full sort, and sorts by several keys: ``lexsort`` (the last key first),
``partition`` and ``argpartition`` (the ``kth`` element in its sorted place, smaller ones
before it, larger after), and ``sort_complex``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.partition(jnp.array([5, 1, 4, 2, 3]), 1)
    Array([1, 2, 5, 4, 3], dtype=int32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .promotion import as_value, canonicalize_axis, convert
from .reductions import any
from .shapes import concatenate, swapaxes
from .ufuncs import where


def lexsort(keys: Sequence[Any], axis: int = -1):
    """The indices that sort by several ``keys`` along ``axis``: by the last key, ties broken
    by the one before it, and so on (a stable sort).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> surnames, names = jnp.array([2, 1, 2]), jnp.array([0, 5, 1])
        >>> jnp.lexsort([names, surnames])
        Array([1, 0, 2], dtype=int32)
    """
    keys = [as_value(k) for k in keys]
    if not keys:
        raise TypeError("lexsort: need a sequence of at least one key.")
    if len({get_aval(k).shape for k in keys}) > 1:
        raise ValueError(f"lexsort: all keys need to be the same shape, got "
                         f"{[get_aval(k).shape for k in keys]}.")
    shape = get_aval(keys[0]).shape
    if not shape:
        return lax.full((), 0, dtypes.default_int_dtype())
    axis = canonicalize_axis(axis, len(shape), "lexsort")
    index = lax.broadcast_in_dim(lax.iota(dtypes.default_int_dtype(), (shape[axis],)),
                                 shape, (axis,))
    return lax.sort([*keys[::-1], index], axis, num_keys=len(keys))[-1]


def _last_axis(name: str, a, kth: int, axis: int) -> tuple[Any, int]:
    """``a`` with ``axis`` swapped to the end, and ``kth`` counted from the start."""
    a = as_value(a)
    if dtypes.is_complex(get_aval(a).dtype):
        raise NotImplementedError(f"jnp.{name} of complex numbers is not implemented; "
                                  f"partition their real parts, or sort them.")
    axis = canonicalize_axis(axis, get_aval(a).ndim, name)
    kth = canonicalize_axis(kth, get_aval(a).shape[axis], f"{name}: kth")
    return swapaxes(a, axis, -1), kth


def _negated(a):
    """An order-reversing map of ``a``'s values (for unsigned integers, that keeps 0)."""
    if get_aval(a).dtype.kind == "u":
        return -(a + 1)
    return -a


def partition(a, kth: int, axis: int = -1):
    """``a`` along ``axis`` with its ``kth`` smallest element in its sorted place: the
    smaller ones before it (in ascending order here) and the larger after (descending).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.partition(jnp.array([3.0, 0.0, 2.0, 1.0]), 2)
        Array([0., 1., 2., 3.], dtype=float32)
    """
    original = axis
    a, kth = _last_axis("partition", a, kth, axis)
    low = lax.top_k(_negated(a), kth + 1)[0]
    bottom = -(low + 1) if get_aval(a).dtype.kind == "u" else -low  # the negation undone
    top = lax.top_k(a, get_aval(a).shape[-1] - kth - 1)[0]
    return swapaxes(concatenate([bottom, top], axis=-1), -1, original)


def argpartition(a, kth: int, axis: int = -1):
    """The indices that :func:`partition` ``a``: those of the ``kth + 1`` smallest elements
    first (in ascending order of value), then the others' in ascending order of index.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.argpartition(jnp.array([5, 1, 4, 2, 3]), 1)
        Array([1, 3, 0, 2, 4], dtype=int32)
    """
    original = axis
    a, kth = _last_axis("argpartition", a, kth, axis)
    n = get_aval(a).shape[-1]
    bottom = lax.top_k(_negated(a), kth + 1)[1]
    positions = lax.iota(np.dtype(np.int32), (n,))
    taken = any(bottom[..., :, None] == positions, axis=-2)
    rest = where(taken, 0.0, 1.0)  # top_k of ones and zeros: the ones by index
    top = lax.top_k(rest, n - kth - 1)[1]
    return swapaxes(concatenate([bottom, top], axis=-1), -1, original)


def sort_complex(a):
    """``a`` sorted along its last axis (complex numbers by real part, then imaginary part),
    as complex numbers.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.sort_complex(jnp.array([2, 1, 3]))
        Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    a = as_value(a)
    ordered = lax.sort(a, get_aval(a).ndim - 1)
    return convert(ordered, dtypes.complex_dtype(get_aval(a).dtype))
