"""``jax.numpy.linalg``: linear algebra on the primitives of ``stage1_autodiff.linalg``.

Every function is a composition: the decompositions are ``lax.linalg``'s primitives, and
``solve``, ``inv``, ``det`` and ``slogdet`` go through ``lu``, ``pinv`` and ``lstsq`` through
``svd``, so their derivatives come from those primitives' rules. As in JAX, a matrix that
cannot be factored gives NaNs or infinities, never a ``LinAlgError``.

NB: JAX's functions are in ``jax/_src/numpy/linalg.py``, on the primitives of
``jax/_src/lax/linalg.py``. JAX gives ``det`` and ``pinv`` custom JVP rules (so that they
differentiate at singular matrices); here they differentiate through ``lu`` and ``svd``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.linalg.solve(jnp.array([[2.0, 0.0], [0.0, 4.0]]), jnp.array([2.0, 2.0]))
    Array([1. , 0.5], dtype=float32)
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from .. import linalg as lax_linalg
from .. import numpy as jnp
from ..core import get_aval
from .promotion import as_value, promote_inexact

__all__ = ["EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "det", "eigh",
           "eigvalsh", "inv", "lstsq", "matrix_power", "norm", "pinv", "qr", "slogdet", "solve",
           "svd", "trace"]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def _matrices(name: str, *arrays: Any, square: bool = True) -> list[Any]:
    """The arguments as arrays of one inexact dtype; the first a (batch of) matrices."""
    arrays = promote_inexact(*[as_value(a) for a in arrays])
    shape = get_aval(arrays[0]).shape
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        kind = "square matrices" if square else "matrices"
        error = TypeError if len(shape) < 2 else ValueError  # as JAX's
        raise error(f"jnp.linalg.{name}: the argument must be {kind} (shape [..., m, "
                    f"{'m' if square else 'n'}]), got shape {shape}.")
    return arrays


def _mT(x):  # noqa: N802 -- NumPy's name for the transpose of each matrix
    return jnp.swapaxes(x, -1, -2)


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The lower ``l`` with ``l @ l.T == a`` (``upper``: its transpose); NaNs where ``a`` is
    not positive definite."""
    (a,) = _matrices("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _mT(factor) if upper else factor


def qr(a, mode: str = "reduced"):
    """``QRResult(Q, R)``: ``mode="reduced"`` (k = min(m, n) columns of Q), ``"complete"``,
    or ``"r"`` for R alone."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}': use 'reduced', "
                         f"'complete' or 'r' ('raw' is not implemented here).")
    (a,) = _matrices("qr", a, square=False)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None):
    """``SVDResult(U, S, Vh)`` with ``a == U[..., :k] * S @ Vh[..., :k, :]``, S descending;
    only S when not ``compute_uv``. (``hermitian`` is accepted; the general SVD serves.)"""
    del hermitian
    (a,) = _matrices("svd", a, square=False)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):  # noqa: N803
    """``EighResult(eigenvalues, eigenvectors)`` of symmetric matrices, ascending."""
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    (a,) = _matrices("eigh", a)
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):  # noqa: N803
    """The eigenvalues of symmetric matrices, ascending."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def _lu_solve(lu, permutation, b):
    """``a x = b`` from ``a``'s LU factors: permute b's rows, then two triangular solves."""
    n = get_aval(lu).shape[-1]
    p = (permutation[..., :, None] == jnp.arange(n, dtype=np.int32)).astype(lu.dtype)
    y = lax_linalg.triangular_solve(lu, p @ b, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a, b):
    """``x`` with ``a @ x == b``: b one vector (m,), or (batches of) matrices (..., m, n)."""
    a, b = _matrices("solve", a, b)
    b_shape, a_shape = get_aval(b).shape, get_aval(a).shape
    if len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1 and b_shape[-1] == a_shape[-1] \
            and a_shape[-1] != b_shape[-2]:
        raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. A batch of vectors "
                         f"is solve(a, b[..., None])[..., 0].")
    vector = len(b_shape) == 1
    b = b[:, None] if vector else b
    batch = np.broadcast_shapes(a_shape[:-2], get_aval(b).shape[:-2])
    a = jnp.broadcast_to(a, batch + a_shape[-2:])
    b = jnp.broadcast_to(b, batch + get_aval(b).shape[-2:])
    lu, _, permutation = lax_linalg.lu(a)
    x = _lu_solve(lu, permutation, b)
    return x[..., 0] if vector else x


def inv(a):
    """The inverse of each square matrix (infinities or NaNs where it is singular)."""
    (a,) = _matrices("inv", a)
    n = get_aval(a).shape[-1]
    return solve(a, jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), get_aval(a).shape))


def slogdet(a, *, method: str | None = None) -> SlogdetResult:
    """``SlogdetResult(sign, logabsdet)`` of each square matrix, from its LU factors: the
    sign flips with each row swap and each negative pivot; a zero pivot gives (0, -inf)."""
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'; only 'lu' is implemented here.")
    (a,) = _matrices("slogdet", a)
    lu, pivots, _ = lax_linalg.lu(a)
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = jnp.any(diag == 0, axis=-1)
    swaps = pivots != jnp.arange(get_aval(a).shape[-1], dtype=np.int32)
    parity = jnp.count_nonzero(swaps, axis=-1) + jnp.count_nonzero(diag < 0, axis=-1)
    sign = jnp.where(is_zero, 0, 1 - 2 * (parity % 2)).astype(a.dtype)
    logdet = jnp.where(is_zero, -np.inf, jnp.sum(jnp.log(jnp.abs(diag)), axis=-1))
    return SlogdetResult(sign, logdet.astype(a.dtype))


def det(a):
    """The determinant of each square matrix: by formula for 2x2 and 3x3 (as JAX), else
    ``sign * exp(logabsdet)`` from ``slogdet``."""
    (a,) = _matrices("det", a)
    n = get_aval(a).shape[-1]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if n == 3:
        minors = [a[..., 1, (j + 1) % 3] * a[..., 2, (j + 2) % 3]
                  - a[..., 1, (j + 2) % 3] * a[..., 2, (j + 1) % 3] for j in range(3)]
        return a[..., 0, 0] * minors[0] + a[..., 0, 1] * minors[1] + a[..., 0, 2] * minors[2]
    sign, logdet = slogdet(a)
    return sign * jnp.exp(logdet)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse, by SVD: singular values at most ``rtol`` times the
    largest count as zero (default ``10 * max(m, n) * eps``)."""
    del hermitian
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    (a,) = _matrices("pinv", a, square=False)
    if rtol is None:
        rtol = 10.0 * max(get_aval(a).shape[-2:]) * float(np.finfo(a.dtype).eps)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    cutoff = jnp.asarray(rtol, dtype=a.dtype)[..., None] * s[..., :1]
    s = jnp.where(s > cutoff, s, np.inf)
    return _mT(vh) @ (_mT(u) / s[..., :, None])


def matrix_power(a, n: int):
    """``a`` times itself ``n`` times (by repeated squaring); the inverse's for ``n < 0``."""
    a = as_value(a)
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise TypeError(f"jnp.linalg.matrix_power: the argument must be square matrices "
                        f"(shape [..., m, m]), got shape {shape}.")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return jnp.broadcast_to(jnp.eye(shape[-1], dtype=a.dtype), shape)
    a, n = (inv(a), -n) if n < 0 else (a, n)
    result, square = None, a
    while n:
        n, bit = divmod(n, 2)
        if bit:
            result = square if result is None else result @ square
        if n:
            square = square @ square
    return result


def lstsq(a, b, rcond: float | None = None, *, numpy_resid: bool = False):
    """``(x, residuals, rank, s)``: the least-squares ``x`` of ``a @ x ~ b`` (a 2-D, b 1-D
    or 2-D), by SVD, with singular values under ``rcond * s[0]`` dropped."""
    a, b = promote_inexact(as_value(a), as_value(b))
    if get_aval(a).ndim != 2 or get_aval(b).ndim not in (1, 2):
        raise TypeError(f"jnp.linalg.lstsq: a must be 2-D and b 1-D or 2-D, got shapes "
                        f"{get_aval(a).shape} and {get_aval(b).shape}.")
    if get_aval(a).shape[0] != get_aval(b).shape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    vector = get_aval(b).ndim == 1
    b = b[:, None] if vector else b
    m, n = get_aval(a).shape
    rcond = float(np.finfo(a.dtype).eps) * max(m, n) if rcond is None else rcond
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    mask = (s > 0) & (s >= jnp.asarray(rcond, dtype=s.dtype) * s[0])
    rank = jnp.sum(mask).astype(np.int32)
    s_inv = jnp.where(mask, 1 / jnp.where(mask, s, 1), 0)[:, None]
    x = _mT(vt) @ (s_inv * (_mT(u) @ b))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = jnp.asarray([], dtype=a.dtype)
    else:
        resid = norm(b - a @ x, axis=0) ** 2
    return (x.ravel() if vector else x), resid, rank, s


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of each matrix's ``offset`` diagonal (the last two dims)."""
    return jnp.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def _vector_norm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(x != 0, axis=axis, keepdims=keepdims).astype(x.dtype)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    total = jnp.sum(jnp.abs(x) ** ord, axis=axis, keepdims=keepdims)
    return total ** (1.0 / ord)


def _matrix_norm(x, ord, rows: int, cols: int, keepdims: bool):
    if ord is None or ord in ("f", "fro"):
        return jnp.sqrt(jnp.sum(x * x, axis=(rows, cols), keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        summed, kept = (rows, cols) if ord in (1, -1) else (cols, rows)
        if not keepdims and kept > summed:
            kept -= 1
        sums = jnp.sum(jnp.abs(x), axis=summed, keepdims=keepdims)
        pick = jnp.max if ord in (1, np.inf) else jnp.min
        return pick(sums, axis=kept, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = lax_linalg.svd(jnp.moveaxis(x, (rows, cols), (-2, -1)), compute_uv=False)
        y = jnp.max(s, axis=-1) if ord == 2 else (
            jnp.min(s, axis=-1) if ord == -2 else jnp.sum(s, axis=-1))
        return jnp.expand_dims(y, (rows, cols)) if keepdims else y
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def norm(x, ord: int | str | None = None, axis: None | tuple[int, ...] | int = None,
         keepdims: bool = False):
    """A vector norm over one axis, or a matrix norm over two (``ord``: NumPy's, e.g. 2,
    1, inf, 'fro', 'nuc'); with neither ``axis`` nor ``ord``, the 2-norm of all elements."""
    (x,) = promote_inexact(as_value(x))
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return jnp.sqrt(jnp.sum(x * x, keepdims=keepdims))
        axis = tuple(range(ndim))
    axes = tuple(int(a) % ndim if -ndim <= int(a) < ndim else _bad_axis(a, ndim)
                 for a in (axis if isinstance(axis, tuple) else (axis,)))
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes[0], axes[1], keepdims)
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                     f"compute a vector-norm, or two axes to compute a matrix-norm.")


def _bad_axis(axis, ndim):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
