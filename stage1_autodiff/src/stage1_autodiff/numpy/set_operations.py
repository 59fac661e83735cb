"""Sets as sorted 1-D arrays: intersection, union, difference and symmetric difference, and
the array API's four spellings of ``unique``.

How many elements a set operation gives depends on the values, which a traced array does not
have; so, as in JAX, ``size=`` fixes the length of the result (the first ``size`` elements
are kept, and missing ones are ``fill_value``). Without it the inputs must be concrete. Each
function here computes, over sorted candidates, a mask of the elements that belong to the
result, and then packs the masked elements to the front (``_packed``).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.intersect1d(jnp.array([3, 1, 2, 1]), jnp.array([2, 3, 5]))
    Array([2, 3], dtype=int32)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .concrete import concrete_array, concrete_value
from .creation import arange
from .cumulative import unique
from .promotion import as_value, convert, promote
from .reductions import min, sum
from .searching import isin
from .shapes import concatenate, ravel
from .statistics import argsort, nonzero, searchsorted
from .ufuncs import logical_not, where


class _Candidates(NamedTuple):
    """Sorted values, which of them belong to a result, and where each came from."""

    values: Any
    keep: Any
    origin: Any


def _sorted_firsts(x) -> _Candidates:
    """``x`` sorted, marking the first of each run of equal values."""
    order = argsort(x)  # stable: the first of a run is the first occurrence in x
    values = x[order]
    n = get_aval(values).shape[0]
    differs = values[1:] != values[:-1]
    firsts = concatenate([lax.full((1 if n else 0,), True, np.dtype(np.bool_)), differs])
    return _Candidates(values, firsts, order)


def _packed(name: str, values, keep, size: int | None, fill_value: Any):
    """The elements of ``values`` where ``keep`` holds, in order: all of them (concrete
    inputs only), or the first ``size``, then ``fill_value`` (by default the smallest
    element kept, or 0 if none is)."""
    if size is None:
        kept = concrete_value(keep, f"{name} without size= (the result's size depends on "
                                    f"the values)", "Pass size= (a Python int), and "
                                    "fill_value= for the missing elements.")
        return values[np.flatnonzero(kept)]
    count = sum(keep)
    n = get_aval(values).shape[0]
    positions = nonzero(keep, size=size, fill_value=0)[0]
    picked = values[positions] if n else lax.full((size,), 0, get_aval(values).dtype)
    valid = arange(size) < count
    if fill_value is None:
        smallest = min(where(keep, values, _largest(get_aval(values).dtype))) if n else 0
        fill_value = where(count > 0, smallest, 0)
    return where(valid, picked, convert(as_value(fill_value), get_aval(picked).dtype))


def _largest(dtype: np.dtype) -> Any:
    if dtypes.is_int(dtype):
        return np.iinfo(dtype).max
    return np.inf if dtype != np.bool_ else True


def _flat_pair(ar1, ar2) -> tuple[Any, Any]:
    ar1, ar2 = promote(ar1, ar2)
    return ravel(as_value(ar1)), ravel(as_value(ar2))


def _fixed(name: str, x, size: int | None, unique_first: bool):
    """``x`` as a constant when the result's size comes from its values (no ``size``) and
    it is made unique first: as in JAX, whose ``unique`` takes the concrete value, so no
    gradient flows back through it then."""
    if size is not None or not unique_first:
        return x
    return concrete_array(x, f"{name} without size= (the result's size depends on the "
                             f"values)", "Pass size= (a Python int), and fill_value= for "
                             "the missing elements.")


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value: Any = None):
    """The sorted values found in both ``ar1`` and ``ar2``; with ``return_indices``, also
    where each first occurs in each (missing ones: the array's length).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.intersect1d(jnp.array([1, 4, 2]), jnp.array([2, 1]), size=3, fill_value=-1)
        Array([ 1,  2, -1], dtype=int32)
    """
    ar1, ar2 = (_fixed("intersect1d", a, size, not assume_unique) for a in _flat_pair(ar1, ar2))
    first = _sorted_firsts(ar1)
    keep = first.keep & isin(first.values, ar2)
    values = _packed("intersect1d", first.values, keep, size, fill_value)
    if not return_indices:
        return values
    order2 = argsort(ar2)
    at2 = order2[searchsorted(ar2[order2], first.values)] if get_aval(ar2).size else \
        first.origin
    index1 = _packed("intersect1d", first.origin, keep, size, get_aval(ar1).shape[0])
    index2 = _packed("intersect1d", at2, keep, size, get_aval(ar2).shape[0])
    return values, index1, index2


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None):
    """The sorted unique values of ``ar1`` that are not in ``ar2`` (with ``assume_unique``,
    ``ar1``'s values in their order). Missing ones (with ``size``) are ``fill_value``, by
    default 0.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.setdiff1d(jnp.array([5, 1, 3, 1]), jnp.array([3]))
        Array([1, 5], dtype=int32)
    """
    ar1 = _fixed("setdiff1d", ravel(as_value(ar1)), size, not assume_unique)
    ar2 = ravel(as_value(ar2))
    fill_value = 0 if fill_value is None else fill_value
    if assume_unique:
        return _packed("setdiff1d", ar1, logical_not(isin(ar1, ar2)), size, fill_value)
    first = _sorted_firsts(ar1)
    keep = first.keep & logical_not(isin(first.values, ar2))
    return _packed("setdiff1d", first.values, keep, size, fill_value)


def union1d(ar1, ar2, *, size: int | None = None, fill_value: Any = None):
    """The sorted unique values found in ``ar1`` or ``ar2``. Missing ones (with ``size``)
    are ``fill_value``, by default the smallest value.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.union1d(jnp.array([3, 1]), jnp.array([2, 3]))
        Array([1, 2, 3], dtype=int32)
    """
    ar1, ar2 = (_fixed("union1d", as_value(a), size, True) for a in (ar1, ar2))
    return unique(concatenate([ar1, ar2], axis=None), size=size, fill_value=fill_value)


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None):
    """The sorted unique values found in exactly one of ``ar1`` and ``ar2``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
        Array([1, 4], dtype=int32)
    """
    ar1, ar2 = (_fixed("setxor1d", a, size, not assume_unique) for a in _flat_pair(ar1, ar2))
    first1, first2 = _sorted_firsts(ar1), _sorted_firsts(ar2)
    values = concatenate([first1.values, first2.values])
    keep = concatenate([first1.keep & logical_not(isin(first1.values, ar2)),
                        first2.keep & logical_not(isin(first2.values, ar1))])
    if get_aval(values).shape[0] == 0:
        return _packed("setxor1d", values, keep, size, fill_value)
    dropped, values = lax.sort([logical_not(keep), values], 0, num_keys=2)
    return _packed("setxor1d", values, logical_not(dropped), size, fill_value)


# ------------------------------------------------------------------------------------------
# The array API's unique functions: NaNs are each unique, as the standard asks. Their
# results are named tuples, with the (private) names JAX gives them.
# ------------------------------------------------------------------------------------------


class _UniqueAllResult(NamedTuple):
    """What :func:`unique_all` returns."""

    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class _UniqueCountsResult(NamedTuple):
    """What :func:`unique_counts` returns."""

    values: Any
    counts: Any


class _UniqueInverseResult(NamedTuple):
    """What :func:`unique_inverse` returns."""

    values: Any
    inverse_indices: Any


def unique_values(x, /, *, size: int | None = None, fill_value: Any = None):
    """The sorted unique values of ``x`` (flattened).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.unique_values(jnp.array([3, 1, 3]))
        Array([1, 3], dtype=int32)
    """
    return unique(_fixed("unique_values", x, size, True), equal_nan=False, size=size,
                  fill_value=fill_value)


def unique_counts(x, /, *, size: int | None = None,
                  fill_value: Any = None) -> _UniqueCountsResult:
    """The sorted unique values of ``x`` and how often each occurs."""
    return _UniqueCountsResult(*unique(_fixed("unique_counts", x, size, True),
                                      return_counts=True, equal_nan=False, size=size,
                                      fill_value=fill_value))


def unique_inverse(x, /, *, size: int | None = None,
                   fill_value: Any = None) -> _UniqueInverseResult:
    """The sorted unique values of ``x`` and, for each element of ``x``, the index of its
    value among them (shaped as ``x``)."""
    return _UniqueInverseResult(*unique(_fixed("unique_inverse", x, size, True),
                                       return_inverse=True, equal_nan=False, size=size,
                                       fill_value=fill_value))


def unique_all(x, /, *, size: int | None = None, fill_value: Any = None) -> _UniqueAllResult:
    """The sorted unique values of ``x``, where each first occurs, the inverse indices
    (see :func:`unique_inverse`) and the counts.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.unique_all(jnp.array([2, 1, 2])).counts
        Array([1, 2], dtype=int32)
    """
    return _UniqueAllResult(*unique(_fixed("unique_all", x, size, True), return_index=True,
                                    return_inverse=True, return_counts=True, equal_nan=False,
                                    size=size, fill_value=fill_value))
