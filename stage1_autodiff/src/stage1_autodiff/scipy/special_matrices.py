"""``jax.scipy.linalg``'s matrices with a formula: Toeplitz, Hankel, circulant, companion,
Pascal, Hilbert... Those made from an array are gathers and arithmetic on it, so they batch
over leading axes and are differentiable; those made from a size are constants.

As in JAX, every float result is in the default float type (SciPy gives integers for
``pascal`` and float64 for the others), and a matrix built from an array takes its batch
dimensions from the leading axes of that array. The Pascal and inverse Hilbert entries are
computed exactly, in Python integers, then rounded once (JAX computes them in floating point,
so its largest entries are off by a few units in the last place).

NB: JAX's versions are in ``jax/_src/scipy/linalg.py``; the definitions are SciPy's
(``scipy.linalg``'s "special matrices").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from ..core import get_aval
from ..numpy.promotion import as_value, promote, promote_inexact


def _vector_args(name: str, *args: Any) -> list[Any]:
    """Array arguments, as JAX takes them: arrays or scalars (a list is refused, as by every
    ``jax.numpy`` function), promoted together; a scalar is a vector of one element."""
    for position, x in enumerate(args):
        if isinstance(x, (list, tuple)):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                            f"{type(x).__name__} at position {position}. Use jnp.asarray.")
    values = promote(*[as_value(x) for x in args])
    return [v if get_aval(v).ndim else v.reshape(1) for v in values]


def _gathered(values: Any, index: np.ndarray) -> Any:
    """``values[..., index]``: a matrix of entries picked from the last axis."""
    return values[..., index]


def _joined(a: Any, b: Any) -> Any:
    """``a`` and ``b`` end to end along the last axis, their batch axes broadcast."""
    batch = jnp.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    return jnp.concatenate([jnp.broadcast_to(a, (*batch, a.shape[-1])),
                            jnp.broadcast_to(b, (*batch, b.shape[-1]))], axis=-1)


def toeplitz(c, r=None):
    """Constant along each diagonal: first column ``c``, first row ``r`` (``r[0]`` is
    ignored; without ``r``, the conjugate of ``c``). Leading axes are batch axes."""
    (c,) = _vector_args("toeplitz", c)
    c, r = _vector_args("toeplitz", c, jnp.conjugate(c) if r is None else r)
    m, n = c.shape[-1], r.shape[-1]
    values = _joined(jnp.flip(r[..., 1:], -1), c)  # r reversed, then c: diagonals n-1..-(m-1)
    return _gathered(values, (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :])


def hankel(c, r=None):
    """Constant along each anti-diagonal: first column ``c``, last row ``r`` (``r[0]`` is
    ignored; without ``r``, zeros). Leading axes are batch axes."""
    (c,) = _vector_args("hankel", c)
    c, r = _vector_args("hankel", c, jnp.zeros_like(c) if r is None else r)
    m, n = c.shape[-1], r.shape[-1]
    return _gathered(_joined(c, r[..., 1:]), np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c):
    """Each column the one before it rotated down by one; the first column ``c``."""
    (c,) = _vector_args("circulant", c)
    n = c.shape[-1]
    return _gathered(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (highest power first):
    its eigenvalues are the polynomial's roots."""
    (a,) = promote_inexact(*_vector_args("companion", a))
    n = a.shape[-1]
    if n < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got "
                         f"shape {a.shape}.")
    first_row = -a[..., 1:] / a[..., :1]
    below = jnp.eye(n - 2, n - 1, dtype=a.dtype)
    return jnp.concatenate([first_row[..., None, :],
                            jnp.broadcast_to(below, (*a.shape[:-1], n - 2, n - 1))], axis=-2)


def fiedler(a):
    """Symmetric, with entries ``|a[i] - a[j]|``."""
    (a,) = _vector_args("fiedler", a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's companion matrix of the polynomial with coefficients ``a``: pentadiagonal,
    with the same eigenvalues as :func:`companion`'s (``a`` is one polynomial, not a batch).
    The coefficients after the first, normalized and negated, go down its first column's top
    entry and then alternately on the diagonals just above and just below the main one;
    ones fill the diagonals two away, in the rows and columns the coefficients leave free."""
    (a,) = promote_inexact(*_vector_args("fiedler_companion", a))
    if a.ndim != 1:
        raise ValueError(f"fiedler_companion: a must be one-dimensional; got shape {a.shape}.")
    n = a.shape[0] - 1
    if n < 1:
        return jnp.zeros((0,), a.dtype)
    coefficients = -a[1:] / a[0]
    spots = [(0, 0)] + [(k - 1, k) if k % 2 else (k, k - 1) for k in range(1, n)]
    ones = [(1, 0)] if n > 1 else []
    ones += [(k - 2, k) if k % 2 == 0 else (k, k - 2) for k in range(2, n)]
    rows, columns = (np.array(axis, np.int32) for axis in zip(*spots))
    out = jnp.zeros((n, n), a.dtype).at[rows, columns].set(coefficients)
    if ones:
        rows, columns = (np.array(axis, np.int32) for axis in zip(*ones))
        out = out.at[rows, columns].set(1)
    return out


def leslie(f, s):
    """The Leslie matrix of a population model: fecundities ``f`` in the first row,
    survival rates ``s`` on the subdiagonal. Leading axes are batch axes."""
    f, s = _vector_args("leslie", f, s)
    n = f.shape[-1]
    if s.shape[-1] != n - 1:
        raise ValueError(f"leslie: s must have one element fewer than f along the last axis; "
                         f"got shapes {f.shape} and {s.shape}.")
    batch = jnp.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    below = s[..., :, None] * jnp.eye(n - 1, n, dtype=s.dtype)
    return jnp.concatenate([jnp.broadcast_to(f[..., None, :], (*batch, 1, n)),
                            jnp.broadcast_to(below, (*batch, n - 1, n))], axis=-2)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix ``A`` with ``A @ v == jnp.convolve(a, v, mode)`` for every ``v`` of length
    ``n``: ``a`` down each column, shifted one row per column."""
    (a,) = _vector_args("convolution_matrix", a)
    if a.ndim != 1:
        raise ValueError(f"convolution_matrix: a must be one-dimensional; got shape {a.shape}.")
    m = a.shape[0]
    if n <= 0 or m == 0:
        raise ValueError(f"convolution_matrix: n and len(a) must be positive; got n={n} and "
                         f"len(a)={m}.")
    rows = {"full": (0, m + n - 1),
            "same": ((min(m, n) - 1) // 2, (min(m, n) - 1) // 2 + max(m, n)),
            "valid": (min(m, n) - 1, max(m, n))}
    if mode not in rows:
        raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid'; got "
                         f"{mode!r}.")
    start, stop = rows[mode]
    shift = np.arange(start, stop)[:, None] - np.arange(n)[None, :]
    padded = jnp.concatenate([a, jnp.zeros(1, a.dtype)])  # index m: a zero
    return _gathered(padded, np.where((shift >= 0) & (shift < m), shift, m))


def block_diag(*arrs):
    """The arrays (each a matrix, a row or a scalar) along the diagonal, zeros elsewhere."""
    if not arrs:
        return jnp.zeros((1, 0), dtypes.default_float_dtype())
    blocks = promote(*[as_value(a) for a in arrs])
    blocks = [b.reshape((1,) * (2 - b.ndim) + b.shape) for b in blocks]
    if any(b.ndim != 2 for b in blocks):
        raise ValueError("block_diag: every argument must have at most two dimensions.")
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        k = b.shape[1]
        rows.append(jnp.pad(b, ((0, 0), (left, width - left - k))))
        left += k
    return jnp.concatenate(rows, axis=0)


# --- matrices of a size --------------------------------------------------------------------


def _float(entries: Any) -> Any:
    return jnp.asarray(np.asarray(entries, np.float64), dtypes.default_float_dtype())


def hilbert(n: int):
    """Entries ``1 / (i + j + 1)``."""
    i = np.arange(n)
    return _float(1.0 / (i[:, None] + i[None, :] + 1))


def invhilbert(n: int):
    """The inverse of :func:`hilbert` (its entries are integers), computed exactly."""
    def entry(i: int, j: int) -> int:
        return ((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2)
    return _float([[entry(i, j) for j in range(n)] for i in range(n)])


def _pascal_lower(n: int, sign: bool = False) -> np.ndarray:
    """``C(i, j)`` below the diagonal (the lower Pascal matrix), or with the signs
    ``(-1) ** (i - j)`` of its inverse."""
    return np.array([[math.comb(i, j) * (-1) ** (i - j if sign else 0) for j in range(n)]
                     for i in range(n)], dtype=object).reshape(n, n)


def _pascal_kind(kind: str | None) -> str:
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"kind must be 'symmetric', 'lower' or 'upper'; got {kind!r}.")
    return kind


def pascal(n: int, kind: str | None = None):
    """Binomial coefficients: ``C(i + j, i)`` (``kind='symmetric'``, the default), ``C(i, j)``
    (``'lower'``) or its transpose (``'upper'``)."""
    lower = _pascal_lower(n)
    return _float({"symmetric": lower @ lower.T, "lower": lower,
                   "upper": lower.T}[_pascal_kind(kind)])


def invpascal(n: int, kind: str | None = None):
    """The inverse of :func:`pascal` (integer entries), computed exactly."""
    inverse = _pascal_lower(n, sign=True)
    return _float({"symmetric": inverse.T @ inverse, "lower": inverse,
                   "upper": inverse.T}[_pascal_kind(kind)])


def hadamard(n: int, dtype: Any = int):
    """Sylvester's Hadamard matrix of order ``n`` (a power of 2): entries +1 and -1, rows
    orthogonal."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtypes.check_and_canonicalize_user_dtype(dtype, "hadamard"))


def dft(n: int, scale: str | None = None, *, dtype: Any = None):
    """The discrete Fourier transform matrix: ``dft(n) @ x == jnp.fft.fft(x)``; ``scale``
    ``'sqrtn'`` divides it by ``sqrt(n)`` (unitary), ``'n'`` by ``n``."""
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn' or 'n'; got {scale!r}.")
    k = np.arange(n)
    m = np.exp(-2j * np.pi * ((k[:, None] * k[None, :]) % max(n, 1)) / max(n, 1))
    m = m / {None: 1, "sqrtn": math.sqrt(n), "n": n}[scale]
    dtype = dtypes.default_complex_dtype() if dtype is None else dtype
    return jnp.asarray(m, dtypes.check_and_canonicalize_user_dtype(dtype, "dft"))


def helmert(n: int, full: bool = False):
    """The Helmert matrix: orthonormal rows, the first ``1/sqrt(n)`` everywhere (left out
    unless ``full``), row ``i`` then ``i`` equal entries, one ``-i`` times their size, zeros."""
    rows = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    rows[0] = 1.0
    norms = np.sqrt([n] + [i * (i + 1) for i in range(1, n)])
    out = rows / norms[:, None]
    return _float(out if full else out[1:])
