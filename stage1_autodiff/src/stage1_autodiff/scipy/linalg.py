"""``jax.scipy.linalg``: Cholesky, LU and triangular solves, and SciPy's spellings of the
decompositions, on the primitives of ``stage1_autodiff.linalg``; the matrices with a
formula (Toeplitz, Hankel, companion...) from ``special_matrices.py``, and ``expm`` from
``matrix_exponential.py``.

NB: JAX's functions are in ``jax/_src/scipy/linalg.py``. SciPy's ``overwrite_*`` and
``check_finite`` arguments are accepted and ignored, as in JAX (arrays are immutable, and a
non-finite input gives NaNs rather than an error).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.scipy import linalg
    >>> a = jnp.array([[4.0, 2.0], [2.0, 5.0]])
    >>> linalg.cho_solve(linalg.cho_factor(a), jnp.array([6.0, 7.0]))
    Array([1., 1.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import linalg as lax_linalg
from .. import numpy as jnp
from ..core import get_aval
from ..custom_derivatives import custom_jvp
from ..numpy import linalg as jnp_linalg
from ..numpy.linalg import _mT
from ..numpy.promotion import as_value, promote_inexact
from .matrix_exponential import expm
from .special_matrices import (
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
           "convolution_matrix", "det", "dft", "eigh", "expm", "fiedler", "fiedler_companion",
           "hadamard", "hankel", "helmert", "hilbert", "inv", "invhilbert", "invpascal",
           "leslie", "lu", "lu_factor", "lu_solve", "pascal", "polar", "qr", "solve",
           "solve_triangular", "svd", "toeplitz"]


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor: upper ``u`` with ``u.T @ u == a``, or lower with ``lower``."""
    del overwrite_a, check_finite
    return jnp_linalg.cholesky(a, upper=not lower)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """``(c, lower)`` for :func:`cho_solve`: the Cholesky factor and which triangle it is."""
    return cholesky(a, lower, overwrite_a, check_finite), lower


def cho_solve(c_and_lower: tuple[Any, bool], b, overwrite_b: bool = False,
              check_finite: bool = True):
    """``x`` with ``a @ x == b``, given ``cho_factor(a)``: two triangular solves, with the
    factor and with its transpose."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = promote_inexact(as_value(c), as_value(b))
    # a = l l^H: solve l y = b, then l^H x = y (with an upper factor u = l^H, the other way).
    y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                    conjugate_a=not lower)
    return lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                                       conjugate_a=lower)


_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(a, b, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True):
    """``x`` with ``op(a) @ x == b`` for triangular ``a`` (only its ``lower`` or upper
    triangle read); ``trans``: 0 or 'N' for ``a``, 1 or 'T' for its transpose, 2 or 'C' for
    its adjoint."""
    del overwrite_b, debug, check_finite
    if trans not in _TRANS:
        raise ValueError(f"Invalid 'trans' value {trans!r}: use 0, 1, 2, 'N', 'T' or 'C'.")
    a, b = promote_inexact(as_value(a), as_value(b))
    return lax_linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                       transpose_a=_TRANS[trans], conjugate_a=trans in (2, "C"),
                                       unit_diagonal=unit_diagonal)


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a == p @ l @ u`` (``permute_l``: ``(p @ l, u)``)."""
    del overwrite_a, check_finite
    (a,) = promote_inexact(as_value(a))
    packed, _, permutation = lax_linalg.lu(a)
    m, n = get_aval(a).shape[-2:]
    k = min(m, n)
    lower = jnp.tril(packed[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    u = jnp.triu(packed[..., :k, :])
    p = (permutation[..., None, :] == jnp.arange(m, dtype=np.int32)[:, None]).astype(a.dtype)
    return (p @ lower, u) if permute_l else (p, lower, u)


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """``(lu, piv)`` for :func:`lu_solve`, as LAPACK's ``getrf`` gives them: ``l`` (unit
    diagonal, not stored) below the diagonal of ``lu`` and ``u`` on and above it, and
    ``piv[j]``, the row swapped with row ``j`` at step ``j`` (int32)."""
    del overwrite_a, check_finite
    (a,) = promote_inexact(as_value(a))
    packed, pivots, _ = lax_linalg.lu(a)
    return packed, pivots


def _pivots_to_permutation(pivots, m: int):
    """The row order the swaps ``pivots`` make of ``range(m)``, one swap at a time (so it
    works on traced pivots too)."""
    permutation = jnp.broadcast_to(jnp.arange(m, dtype=np.int32), (*pivots.shape[:-1], m))
    for j in range(pivots.shape[-1]):
        p = pivots[..., j:j + 1]
        here = permutation[..., j:j + 1]
        there = jnp.take_along_axis(permutation, p, axis=-1)
        permutation = jnp.where(jnp.arange(m) == j, there, permutation)
        permutation = jnp.where(jnp.arange(m) == p, here, permutation)
    return permutation


def lu_solve(lu_and_piv: tuple[Any, Any], b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """``x`` with ``op(a) @ x == b``, given ``lu_factor(a)``; ``trans`` 0 for ``a``, 1 for its
    transpose, 2 for its conjugate transpose. With ``a[perm] == l @ u``: ``x = u \\ (l \\
    b[perm])``, or for the transpose ``x[perm] = l.T \\ (u.T \\ b)``."""
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"Invalid 'trans' value {trans!r}: use 0, 1 or 2.")
    packed, pivots = lu_and_piv
    packed, b = promote_inexact(as_value(packed), as_value(b))
    m = packed.shape[-1]
    if packed.ndim != 2 or packed.shape[0] != m or b.shape[0] != m:
        raise ValueError(f"lu_solve: lu must be a square matrix and b have as many rows; got "
                         f"shapes {packed.shape} and {b.shape}.")
    permutation = _pivots_to_permutation(as_value(pivots), m)
    vector = b.ndim == 1
    b = b[:, None] if vector else b
    if trans == 0:
        x = jnp_linalg._lu_solve(packed, permutation, b)  # noqa: SLF001 -- jnp's, shared
    else:
        lu = jnp.conjugate(packed) if trans == 2 else packed
        y = lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True)
        z = lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, transpose_a=True,
                                        unit_diagonal=True)
        x = jnp.zeros_like(z).at[permutation].set(z)
    return x[:, 0] if vector else x


def qr(a, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True):
    """``(q, r)``: ``mode="full"`` or ``"economic"``; ``"r"`` gives ``(r,)``."""
    del overwrite_a, lwork, check_finite
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}': use 'full', "
                         f"'economic' or 'r' ('raw' is not implemented here).")
    (a,) = promote_inexact(as_value(a))
    q, r = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """``(u, s, vh)``, or ``s`` alone when not ``compute_uv``."""
    del overwrite_a, check_finite, lapack_driver
    out = jnp_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals: None = None, type: int = 1,
         check_finite: bool = True):
    """``(w, v)`` of a symmetric matrix, ``w`` ascending (``eigvals_only``: ``w``)."""
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None or eigvals is not None or type != 1:
        raise NotImplementedError("jax.scipy.linalg.eigh: only the standard problem (b=None, "
                                  "eigvals=None, type=1) is implemented.")
    w, v = jnp_linalg.eigh(a, "L" if lower else "U")
    return w if eigvals_only else (w, v)


def polar(a, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple[Any, Any]:
    """``a = u @ p`` (``side="right"``) or ``p @ u`` (``"left"``): ``u`` with orthonormal
    columns (or rows), ``p`` symmetric positive semidefinite. From the SVD ``a = w s vh``
    whatever ``method`` says: ``u = w vh``, and ``p = u.T a`` or ``a u.T``, symmetrized.
    (JAX's default, QDWH, iterates to the same ``u`` without an SVD; ``eps`` and
    ``max_iterations`` are its settings.) ``u`` has a derivative rule of its own."""
    del eps, max_iterations
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    a = as_value(a)
    if get_aval(a).ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if not dtypes.is_inexact(get_aval(a).dtype):
        raise ValueError(f"polar: data type {get_aval(a).dtype} is not inexact; convert the "
                         f"matrix to a float dtype first, e.g. a.astype(jnp.float32).")
    m, n = get_aval(a).shape[-2:]
    u = _unitary_factor(a) if m >= n else _mT(_unitary_factor(_mT(a)))  # the same u both sides
    p = _mT(u) @ a if side == "right" else a @ _mT(u)
    return u, (p + _mT(p)) / 2  # (symmetric to the last bit, as JAX makes it)


@custom_jvp
def _unitary_factor(a):
    """``u = w v.T`` from the SVD ``a = w s v.T`` of a matrix with at least as many rows as
    columns: the orthonormal factor of both polar decompositions."""
    w, _, vh = jnp_linalg.svd(a, full_matrices=False)
    return w @ vh


@_unitary_factor.defjvp
def _unitary_factor_jvp(primals, tangents):
    """In the SVD's bases u's derivative is antisymmetric: with m = w.T da v, it is
    du = w x v.T + (I - w w.T) da v s^-1 v.T, where x_ij = (m - m.T)_ij / (s_i + s_j) (the
    second term: the part of da outside w's columns, for a tall a). Through the SVD instead
    it would be NaN at every repeated singular value (an orthogonal matrix has only repeated
    ones), where u is smooth for any matrix of full rank."""
    (a,), (a_dot,) = primals, tangents
    w, s, vh = jnp_linalg.svd(a, full_matrices=False)
    v = _mT(vh)
    m = _mT(w) @ a_dot @ v
    x = (m - _mT(m)) / (s[..., :, None] + s[..., None, :])
    outside = a_dot - w @ (_mT(w) @ a_dot)
    return w @ vh, w @ x @ vh + outside @ (v / s[..., None, :]) @ vh


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of a square matrix."""
    del overwrite_a, check_finite
    return jnp_linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of a square matrix."""
    del overwrite_a, check_finite
    return jnp_linalg.det(a)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """``x`` with ``a @ x == b`` (by LU whatever ``assume_a`` says: same answer)."""
    del lower, overwrite_a, overwrite_b, debug, check_finite, assume_a
    return jnp_linalg.solve(a, b)
