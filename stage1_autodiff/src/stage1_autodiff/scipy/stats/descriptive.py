"""``jax.scipy.stats.mode``, ``rankdata`` and ``sem``: statistics of a sample rather than of
a distribution.

Example:
    >>> import stage1_autodiff as jax
    >>> import numpy as np
    >>> print(jax.scipy.stats.rankdata(np.float32([30, 10, 20, 10])))
    [4.  1.5 3.  1.5]

NB: JAX's functions are in ``jax/_src/scipy/stats/_core.py``; JAX jits each (ours run
eagerly; under our jit they trace as any composition does).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ... import numpy as jnp
from ...dtypes import default_float_dtype
from ...numpy.promotion import canonicalize_axis
from ._util import check_arraylike, promote_args_inexact

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(nan_policy: str, fun_name: str) -> None:
    """Only "propagate" is implemented, as in JAX: under jit a function cannot look at the
    values to omit NaNs or to raise on them."""
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(f"In order to best JIT compile `{fun_name}`, we cannot know "
                                  "whether `x` contains nans. Please check if nans exist in "
                                  f"`x` outside of the `{fun_name}` function.")


class ModeResult(NamedTuple):
    """What ``mode`` returns: the most frequent values and how often each occurs."""

    mode: Any
    count: Any


def _column_modes(columns: Any) -> tuple[Any, Any]:
    """The mode of each column of a (n, m) array: sorted, each entry counts its equals (NaNs
    count as equal, as in ``jnp.unique``), and the first largest count picks the smallest
    of the most frequent values."""
    ordered = jnp.sort(columns, axis=0)
    equal = ordered[:, None, :] == ordered[None, :, :]
    equal = equal | (jnp.isnan(ordered)[:, None, :] & jnp.isnan(ordered)[None, :, :])
    counts = jnp.sum(equal, axis=1)
    first = jnp.argmax(counts, axis=0)
    modes = jnp.take_along_axis(ordered, first[None, :], axis=0)[0]
    return modes, jnp.max(counts, axis=0)


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """The most frequent value along ``axis`` (all of ``a`` for None), the smallest among
    ties, with its count.

    Example:
        >>> import stage1_autodiff as jax
        >>> import numpy as np
        >>> print(jax.scipy.stats.mode(np.int32([3, 1, 3, 2])))
        ModeResult(mode=Array(3, dtype=int32), count=Array(2, dtype=int32))
    """
    check_arraylike("mode", a)
    _check_nan_policy(nan_policy, "mode")
    x = jnp.atleast_1d(a)
    if axis is None:
        out_shape = (1,) * x.ndim if keepdims else ()
        x, axis = x.ravel(), 0
    else:
        axis = canonicalize_axis(axis, x.ndim)
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape) if keepdims or
                          i != axis)
    if x.shape[axis] == 0:
        nan = jnp.full(out_shape, np.nan, default_float_dtype())
        return ModeResult(nan, jnp.zeros(out_shape, default_float_dtype()))
    columns = jnp.moveaxis(x, axis, 0)
    columns = columns.reshape(columns.shape[0], math.prod(columns.shape[1:]))
    modes, counts = _column_modes(columns)
    return ModeResult(modes.reshape(out_shape), counts.reshape(out_shape))


def _ranks(a: Any, method: str) -> Any:
    """The ranks of a 1-D ``a``, from 1. Ties: "ordinal" ranks them in order of appearance,
    "min"/"max" give all the tie's lowest/highest rank, "average" their mean, "dense" the
    tie's index among the distinct values."""
    out_dtype = default_float_dtype()
    sorter = jnp.argsort(a, stable=True)
    ordered = a[sorter]
    if method == "ordinal":
        return (jnp.argsort(sorter, stable=True) + 1).astype(out_dtype)
    if method == "dense":
        is_new = jnp.concatenate([jnp.array([True]), ordered[1:] != ordered[:-1]])
        return jnp.cumsum(is_new)[jnp.argsort(sorter, stable=True)].astype(out_dtype)
    lowest = (jnp.searchsorted(ordered, a, side="left") + 1).astype(out_dtype)
    highest = jnp.searchsorted(ordered, a, side="right").astype(out_dtype)
    if method == "min":
        return lowest
    if method == "max":
        return highest
    return 0.5 * (lowest + highest)


def rankdata(a: Any, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Any:
    """The ranks of ``a``'s values, from 1, over all of ``a`` (flattened) or along
    ``axis``; all NaN where a NaN is among them. ``method`` says how ties rank: "average",
    "min", "max", "dense" or "ordinal".

    Example:
        >>> import stage1_autodiff as jax
        >>> import numpy as np
        >>> print(jax.scipy.stats.rankdata(np.int32([30, 10, 20, 10]), "min"))
        [4. 1. 3. 1.]
    """
    check_arraylike("rankdata", a)
    _check_nan_policy(nan_policy, "rankdata")
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is not None:
        return jnp.apply_along_axis(rankdata, axis, a, method)
    a = jnp.ravel(a)
    ranks = _ranks(a, method)
    return jnp.where(jnp.any(jnp.isnan(a)), jnp.full_like(ranks, np.nan), ranks)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Any:
    """The standard error of the mean: the standard deviation (with ``ddof``) over the
    square root of the count. ``nan_policy="omit"`` leaves NaNs out of both.

    Example:
        >>> import stage1_autodiff as jax
        >>> import numpy as np
        >>> print(jax.scipy.stats.sem(np.float32([1, 2, 3, 4])))
        0.6454972
    """
    (b,) = promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~jnp.isnan(b)).sum(axis, keepdims=keepdims)
        spread = jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
        return spread / jnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
