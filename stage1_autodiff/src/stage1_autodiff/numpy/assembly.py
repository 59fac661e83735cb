"""Putting arrays together from pieces and taking them apart: ``block`` (nested lists of
blocks), ``array_split`` (into nearly equal parts), ``unstack``, ``rollaxis``, ``diagflat``
and ``trim_zeros``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.block([[jnp.eye(2), jnp.zeros((2, 1))], [jnp.ones((1, 2)), jnp.full((1, 1), 5.0)]])
    Array([[1., 0., 0.],
           [0., 1., 0.],
           [1., 1., 5.]], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import Tracer, get_aval
from .arrangement import diag
from .promotion import as_value, canonicalize_axis, convert
from .shapes import concatenate, moveaxis, ravel, reshape, split


def _at_least(x, ndim: int):
    """``x`` with leading dims of size 1 up to ``ndim``."""
    shape = get_aval(x).shape
    return reshape(x, (1,) * (ndim - len(shape)) + shape)


def _block(blocks: Any) -> tuple[Any, int]:
    """The array a nested list of blocks makes, and how deep the lists were: the innermost
    lists join along the last axis, the ones around them along the one before, and so on."""
    if isinstance(blocks, tuple):
        raise ValueError(f"jnp.block takes nested lists, not tuples; got {blocks!r}. Make "
                         f"each tuple a list.")
    if not isinstance(blocks, list):
        return as_value(blocks), 1
    if not blocks:
        raise ValueError("jnp.block does not take empty lists.")
    parts, depths = zip(*(_block(b) for b in blocks))
    if any(d != depths[0] for d in depths):
        raise ValueError(f"jnp.block: mismatched list depths {list(depths)}: every block "
                         f"must be nested in as many lists.")
    rank = max(depths[0], max(get_aval(p).ndim for p in parts))
    return concatenate([_at_least(p, rank) for p in parts], axis=-depths[0]), depths[0] + 1


def block(arrays: Any | list[Any]):
    """One array from a nested list of blocks (see NumPy's ``block``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.block([jnp.array([1, 2]), 3])
        Array([1, 2, 3], dtype=int32)
    """
    result, _ = _block(arrays)
    return result


def array_split(ary, indices_or_sections: int | Sequence[int] | Any, axis: int = 0):
    """Splits ``ary`` along ``axis`` at the given indices, or into ``indices_or_sections``
    parts whose sizes differ by at most one (the first ones larger).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> [p.tolist() for p in jnp.array_split(jnp.arange(5), 3)]
        [[0, 1], [2, 3], [4]]
    """
    ary = as_value(ary)
    if isinstance(axis, Tracer):
        raise TypeError("array_split: axis must be a concrete int.")
    n = get_aval(ary).shape[canonicalize_axis(operator.index(axis), get_aval(ary).ndim,
                                              "array_split")]
    if isinstance(indices_or_sections, (tuple, list)) or np.ndim(indices_or_sections) > 0:
        if isinstance(indices_or_sections, Tracer):
            raise TypeError("array_split: the split indices must be concrete: they give "
                            "the shapes of the parts.")
        return split(ary, [int(i) for i in np.asarray(indices_or_sections)], axis)
    if isinstance(indices_or_sections, Tracer):
        raise TypeError("array_split: the number of sections must be a concrete int.")
    sections = int(indices_or_sections)
    if sections == 0:  # the error JAX's division by the number of sections raises
        raise ZeroDivisionError("array_split: cannot split into 0 sections; pass a positive "
                                "number of sections, or the indices to split at.")
    if sections < 0:
        raise ValueError(f"array_split: the number of sections must be positive, got "
                         f"{sections}.")
    size, extra = divmod(n, sections)
    sizes = [size + 1] * extra + [size] * (sections - extra)
    return split(ary, list(np.cumsum(sizes)[:-1]), axis)


def unstack(x, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)
        (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
    """
    x = as_value(x)
    if get_aval(x).ndim == 0:
        raise ValueError("unstack: x must have at least one dim to unstack along; it is a "
                         "scalar.")
    moved = moveaxis(x, canonicalize_axis(axis, get_aval(x).ndim, "unstack"), 0)
    return tuple(moved[i] for i in range(get_aval(moved).shape[0]))


def rollaxis(a, axis: int, start: int = 0):
    """``a`` with ``axis`` moved to stand before position ``start`` (NumPy's older
    :func:`moveaxis`).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape
        (4, 2, 3)
    """
    a = as_value(a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim, "rollaxis")
    start = operator.index(start)
    if not -ndim <= start <= ndim:
        raise ValueError(f"rollaxis: start={start} must be from {-ndim} to {ndim}.")
    start = start + ndim if start < 0 else start
    return moveaxis(a, axis, start - 1 if start > axis else start)


def diagflat(v, k: int = 0):
    """A square matrix with the flattened ``v`` on its ``k``-th diagonal, zeros elsewhere.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.diagflat(jnp.array([[1, 2]]), k=1)
        Array([[0, 1, 0],
               [0, 0, 2],
               [0, 0, 0]], dtype=int32)
    """
    flat = ravel(as_value(v))
    return diag(convert(flat, get_aval(flat).dtype), k)  # never weak, as a new array


def trim_zeros(filt, trim: str = "fb", axis: int | Sequence[int] | None = None):
    """``filt`` without its leading ('f' in ``trim``) and trailing ('b') zeros along each
    of ``axis`` (every axis by default): slices that are all zero are cut off. The result's
    shape depends on the values, so ``filt`` must be concrete.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.trim_zeros(jnp.array([0, 0, 3, 0, 2, 0]))
        Array([3, 0, 2], dtype=int32)
    """
    filt = as_value(filt)
    if isinstance(filt, Tracer):
        raise TypeError("trim_zeros: the result's shape depends on the values, so filt must "
                        "be concrete (not traced). Under a transformation, mask the zeros "
                        "instead.")
    values = np.asarray(filt._value)
    axes = range(values.ndim) if axis is None else \
        [canonicalize_axis(a, values.ndim, "trim_zeros") for a in np.atleast_1d(axis)]
    front, back = "f" in trim.lower(), "b" in trim.lower()
    slices = [slice(None)] * values.ndim
    for ax in axes:
        nonzero = np.any(values != 0, axis=tuple(d for d in range(values.ndim) if d != ax))
        if not nonzero.any():
            slices[ax] = slice(0, 0)
            continue
        found = np.flatnonzero(nonzero)
        slices[ax] = slice(found[0] if front else None, found[-1] + 1 if back else None)
    return filt[tuple(slices)]
