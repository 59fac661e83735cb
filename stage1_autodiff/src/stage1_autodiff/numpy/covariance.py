"""How variables spread and vary together: the range (``ptp``), the covariance matrix and the
correlation coefficients, composed of reductions and one matrix product.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.cov(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval
from .arrangement import diag
from .contractions import dot
from .creation import full
from .mathematical import conj, imag, real
from .promotion import as_value, promote_inexact
from .reductions import Axis, _check_no_out, max, min, sum
from .shapes import atleast_2d, concatenate, squeeze
from .statistics import average
from .ufuncs import abs, astype, clip, sqrt


def ptp(a, axis: Axis = None, out: None = None, keepdims: bool = False):
    """Peak to peak: the largest element over ``axis`` less the smallest.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.ptp(jnp.array([[1, 5], [7, 2]]), axis=1)
        Array([4, 5], dtype=int32)
    """
    _check_no_out(out)
    return max(a, axis=axis, keepdims=keepdims) - min(a, axis=axis, keepdims=keepdims)


def _check_inexact_dtype(name: str, dtype: Any) -> None:
    if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
        raise ValueError(f"{name}: dtype must be a float or complex type, got {dtype}.")


def _observations(m, y, rowvar: bool):
    """One variable per row: ``m``'s (and ``y``'s) rows, or columns when not ``rowvar``."""
    m, y = (promote_inexact(m) + [None]) if y is None else promote_inexact(m, y)
    for name, x in (("m", m), ("y", y)):
        if x is not None and get_aval(as_value(x)).ndim > 2:
            raise ValueError(f"cov: {name} has more than 2 dimensions; pass one variable "
                             f"per row (or per column with rowvar=False).")
    rows = atleast_2d(m)
    if not rowvar and get_aval(as_value(m)).ndim != 1:
        rows = rows.T
    if y is not None:
        y_rows = atleast_2d(y)
        if not rowvar and get_aval(y_rows).shape[0] != 1:
            y_rows = y_rows.T
        rows = concatenate([rows, y_rows], axis=0)
    return rows


def _sample_weights(fweights: Any, aweights: Any, n: int):
    """The weight of each observation: frequency times reliability weights (their absolute
    values), or None when neither is given."""
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        w = as_value(w)
        if get_aval(w).ndim > 1:
            raise RuntimeError(f"cov: cannot handle multidimensional {name}; pass one weight "
                               f"per observation.")
        if get_aval(w).shape[0] != n:
            raise RuntimeError(f"cov: incompatible numbers of samples ({n}) and {name} "
                               f"({get_aval(w).shape[0]}).")
        if name == "fweights" and not dtypes.is_int(get_aval(w).dtype):
            raise TypeError("cov: fweights must be integers (how often each observation "
                            "occurs).")
        weights = abs(w) if weights is None else weights * abs(w)
    return weights


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None):
    """The covariance matrix of the variables in ``m``'s rows (columns if not ``rowvar``),
    and ``y``'s; normalized by N - 1 (N if ``bias``, N - ``ddof`` if given), weighted by
    ``fweights`` and ``aweights``. A single variable gives a scalar.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.cov(jnp.array([1.0, 2.0, 4.0]))
        Array(2.3333335, dtype=float32)
    """
    _check_inexact_dtype("cov", dtype)
    rows = _observations(m, y, rowvar)
    count, n = get_aval(rows).shape
    if count == 0:
        return full((0, 0), np.nan, get_aval(rows).dtype)
    if n == 0:
        return full(() if count == 1 else (count, count), np.nan, get_aval(rows).dtype)
    ddof = (0 if bias else 1) if ddof is None else ddof
    weights = _sample_weights(fweights, aweights, n)
    if dtype is not None:
        rows = astype(rows, dtype)
        weights = None if weights is None else astype(weights, dtype)
    means, total_weight = average(rows, axis=1, weights=weights, returned=True)
    total_weight = total_weight[0]
    if weights is None:
        factor = n - ddof
    elif ddof == 0:
        factor = total_weight
    elif aweights is None:
        factor = total_weight - ddof
    else:
        factor = total_weight - ddof * sum(weights * abs(as_value(aweights))) / total_weight
    centered = rows - means[:, None]
    weighted = centered if weights is None else centered * weights
    return squeeze(dot(centered, conj(weighted).T) / factor)


def corrcoef(x, y=None, rowvar: bool = True, dtype: Any = None):
    """Pearson's correlation coefficients of the variables in ``x``'s rows (columns if not
    ``rowvar``), and ``y``'s: :func:`cov` over the outer product of the standard
    deviations, clipped to [-1, 1].

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.corrcoef(jnp.array([1.0, 2.0, 3.0]), jnp.array([3.0, 2.0, 1.0]))
        Array([[ 1., -1.],
               [-1.,  1.]], dtype=float32)
    """
    _check_inexact_dtype("corrcoef", dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return c / c  # 1, or NaN for a variable with no spread
    deviations = astype(sqrt(real(diag(c))), get_aval(c).dtype)
    c = c / deviations[:, None] / deviations[None, :]
    clipped = clip(real(c), -1, 1)
    if dtypes.is_complex(get_aval(c).dtype):
        return clipped + 1j * clip(imag(c), -1, 1)
    return clipped
