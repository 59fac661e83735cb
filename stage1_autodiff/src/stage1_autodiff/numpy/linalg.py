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

import functools
import math
import operator
from typing import Any, NamedTuple

import numpy as np

from .. import linalg as lax_linalg
from .. import numpy as jnp
from ..core import get_aval
from ..custom_derivatives import custom_jvp
from .promotion import as_value, promote_inexact

__all__ = ["EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
           "multi_dot", "norm", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv",
           "tensorsolve", "trace", "vecdot", "vector_norm"]


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


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
    """The lower ``l`` with ``l @ l.T.conj() == a`` (``upper``: its adjoint); NaNs where
    ``a`` is not positive definite."""
    (a,) = _matrices("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return jnp.conj(_mT(factor)) if upper else factor


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


def eig(a):
    """``EigResult(eigenvalues, eigenvectors)`` of square matrices, complex: the eigenvalues
    in LAPACK's order, the eigenvectors the unit-norm columns of the second. Only the
    eigenvalues are differentiable, as in JAX (``eigh`` differentiates both, for a
    symmetric matrix)."""
    (a,) = _matrices("eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    return EigResult(w, v)


def eigvals(a):
    """The eigenvalues of square matrices, complex, in LAPACK's order."""
    (a,) = _matrices("eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


def _lu_solve(lu, permutation, b):
    """``a x = b`` from ``a``'s LU factors: permute b's rows, then two triangular solves."""
    # rows gathered, not multiplied by a permutation matrix, whose zeros times an infinite
    # entry of b would be NaN
    permuted = jnp.take_along_axis(b, permutation[..., :, None], axis=-2)
    y = lax_linalg.triangular_solve(lu, permuted, left_side=True, lower=True,
                                    unit_diagonal=True)
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
    sign flips with each row swap and each negative pivot (of a complex matrix, it turns by
    each pivot's phase); a zero pivot gives (0, -inf)."""
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'; only 'lu' is implemented here.")
    (a,) = _matrices("slogdet", a)
    lu, pivots, _ = lax_linalg.lu(a)
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = jnp.any(diag == 0, axis=-1)
    swaps = pivots != jnp.arange(get_aval(a).shape[-1], dtype=np.int32)
    complex_ = jnp.iscomplexobj(a)
    negative = 0 if complex_ else jnp.count_nonzero(diag < 0, axis=-1)
    parity = jnp.count_nonzero(swaps, axis=-1) + negative
    sign = jnp.where(is_zero, 0, 1 - 2 * (parity % 2)).astype(a.dtype)
    if complex_:
        sign = sign * jnp.prod(diag / jnp.abs(diag).astype(a.dtype), axis=-1)
    # (a zero pivot makes the sum -inf by itself: a where choosing -inf would make the
    # derivative there 0 in forward mode, where it is infinite)
    logdet = jnp.sum(jnp.log(jnp.abs(diag)), axis=-1)
    return SlogdetResult(sign, logdet.astype(jnp.real(a).dtype))


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
    return _pinv(a, rtol)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _pinv(a, rtol):
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    cutoff = jnp.asarray(rtol, dtype=a.dtype)[..., None] * s[..., :1]
    s = jnp.where(s > cutoff, s, np.inf)
    return _mT(vh) @ (_mT(u) / s[..., :, None])


@_pinv.defjvp
def _pinv_jvp(rtol, primals, tangents):
    """Golub and Pereyra's derivative of the pseudo-inverse p of a (1973), as JAX's rule:
    dp = -p da p + p p^T da^T (I - a p) + (I - p a) da^T p^T p. Through the SVD the derivative
    would be NaN at every matrix with a repeated singular value, the identity included (the
    singular vectors' slopes are infinite there)."""
    (a,), (a_dot,) = primals, tangents
    p = _pinv(a, rtol)
    m, n = get_aval(a).shape[-2:]
    a_dot_t, p_t = _mT(a_dot), _mT(p)
    p_dot = (-(p @ a_dot @ p) + p @ p_t @ a_dot_t @ (jnp.eye(m, dtype=a.dtype) - a @ p)
             + (jnp.eye(n, dtype=a.dtype) - p @ a) @ a_dot_t @ p_t @ p)
    return p, p_dot


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
    rank = jnp.sum(mask)  # the default integer type, as JAX's (int64 under x64)
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


def _squared_magnitude(x):
    """|x|**2, real for complex x too."""
    return jnp.real(x * jnp.conj(x))


def _vector_norm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(_squared_magnitude(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        real = jnp.finfo(get_aval(x).dtype).dtype  # an integer x raises here, as in JAX
        return jnp.sum(x != 0, axis=axis, keepdims=keepdims, dtype=real)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        hint = {"inf": "Use 'jax.numpy.inf' instead.", "-inf": "Use '-jax.numpy.inf' instead."}
        raise ValueError(f"Invalid order '{ord}' for vector norm." + hint.get(ord, ""))
    magnitude = jnp.abs(x)
    dtype = get_aval(magnitude).dtype
    total = jnp.sum(magnitude ** jnp.asarray(ord, dtype), axis=axis, keepdims=keepdims)
    return total ** jnp.asarray(1.0 / ord, dtype)


def _matrix_norm(x, ord, rows: int, cols: int, keepdims: bool):
    if ord is None or ord in ("f", "fro"):
        return jnp.sqrt(jnp.sum(_squared_magnitude(x), axis=(rows, cols), keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        summed, kept = (rows, cols) if ord in (1, -1) else (cols, rows)
        if not keepdims and kept > summed:
            kept -= 1
        sums = jnp.sum(jnp.abs(x), axis=summed, keepdims=keepdims)
        if ord in (1, np.inf):
            return jnp.max(sums, axis=kept, keepdims=keepdims, initial=0)
        return jnp.min(sums, axis=kept, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = lax_linalg.svd(jnp.moveaxis(x, (rows, cols), (-2, -1)), compute_uv=False)
        y = jnp.max(s, axis=-1, initial=0) if ord == 2 else (
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
            return jnp.sqrt(jnp.sum(_squared_magnitude(x), keepdims=keepdims))
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


# ------------------------------------------------------------------------------------------
# The array API's names (thin wrappers whose axes are the last ones) and NumPy's functions of
# matrices and tensors, each a composition of the functions above.
# NB: JAX's are in jax/_src/numpy/linalg.py too; their ``precision`` and
# ``preferred_element_type`` arguments are not taken here.
# ------------------------------------------------------------------------------------------


def vector_norm(x, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float | str = 2):
    """The ``ord``-norm of the vectors along ``axis`` (all elements when None). Unlike
    ``norm``, an integer ``x`` stays integer where the sum allows (``ord=1``, ``inf``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.vector_norm(jnp.array([[3.0, 4.0], [6.0, 8.0]]), axis=1)
        Array([ 5., 10.], dtype=float32)
    """
    return _vector_norm(as_value(x), ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord: int | str = "fro"):
    """The ``ord``-norm of each matrix (the last two dims); ``norm`` with ``axis=(-2, -1)``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.matrix_norm(jnp.array([[1.0, -2.0], [3.0, 4.0]]), ord=1)
        Array(6., dtype=float32)
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along ``axis`` (``jnp.cross`` takes 2-vectors too;
    this one does not)."""
    x1, x2 = as_value(x1), as_value(x2)
    if get_aval(x1).shape[axis] != 3 or get_aval(x2).shape[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they have x1.shape[axis]={get_aval(x1).shape[axis]} and "
                         f"x2.shape[axis]={get_aval(x2).shape[axis]}")
    return jnp.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset: int = 0):
    """The ``offset`` diagonal of each matrix (the last two dims)."""
    return jnp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matrix_transpose(x, /):
    """Each matrix transposed (the last two dims swapped).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.matrix_transpose(jnp.ones((4, 2, 3))).shape
        (4, 3, 2)
    """
    x = as_value(x)
    ndim = get_aval(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={ndim}")
    return _mT(x)


def outer(x1, x2, /):
    """The outer product of two vectors (``jnp.outer`` flattens; this refuses other ranks)."""
    x1, x2 = as_value(x1), as_value(x2)
    if get_aval(x1).ndim != 1 or get_aval(x2).ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={get_aval(x1).ndim} x2.ndim={get_aval(x2).ndim}")
    return x1[:, None] * x2[None, :]


def tensordot(x1, x2, /, *, axes: int | tuple[Any, Any] = 2):
    """``jnp.tensordot`` with ``axes`` by keyword, as the array API has it."""
    return jnp.tensordot(x1, x2, axes=axes)


def vecdot(x1, x2, /, *, axis: int = -1):
    """``jnp.vecdot``: the dot products ``sum(conj(x1) * x2)`` along ``axis``, the other dims
    broadcast.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.vecdot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
        Array([3, 7], dtype=int32)
    """
    return jnp.vecdot(x1, x2, axis=axis)


def matmul(x1, x2, /):
    """``jnp.matmul``: the product of (batches of) matrices."""
    return jnp.matmul(x1, x2)


def multi_dot(arrays, *, precision: None = None):
    """The product of a chain of matrices (the first and last may be vectors), in the order
    of multiplications that costs the fewest flops.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.multi_dot([jnp.ones(3), jnp.ones((3, 4)), jnp.ones((4, 2))])
        Array([12., 12.], dtype=float32)
    """
    del precision  # NB: accepted for JAX's signature; stage 1 computes at full precision
    arrays = [as_value(a) for a in arrays]
    shapes = [get_aval(a).shape for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrays)}")
    if not (len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2)
            and all(len(s) == 2 for s in shapes[1:-1])):
        raise ValueError(f"multi_dot: input arrays must all be two-dimensional, except for the "
                         f"first and last array which may be 1 or 2 dimensional. Got array "
                         f"shapes {shapes}")
    if any(a[-1] != b[0] for a, b in zip(shapes[:-1], shapes[1:])):
        raise ValueError(f"multi_dot: last dimension of each array must match first dimension "
                         f"of following array. Got array shapes {shapes}")
    return _chain_product(arrays, _chain_order(shapes), 0, len(arrays) - 1)


def _chain_order(shapes: list[tuple[int, ...]]) -> dict[tuple[int, int], int]:
    """Where to split each run i..j of the chain, by the textbook dynamic programme over
    the flop counts (a vector end is a matrix with one row or column)."""
    dims = [1 if len(shapes[0]) == 1 else shapes[0][0]] + [s[-1] if len(s) == 2 else 1
                                                           for s in shapes]
    n = len(shapes)
    cost = {(i, i): 0 for i in range(n)}
    split = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            options = [(cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                       for k in range(i, j)]
            cost[i, j], split[i, j] = min(options)
    return split


def _chain_product(arrays: list[Any], split: dict[tuple[int, int], int], i: int, j: int):
    if i == j:
        return arrays[i]
    k = split[i, j]
    return jnp.dot(_chain_product(arrays, split, i, k), _chain_product(arrays, split, k + 1, j))


def svdvals(x, /):
    """The singular values of each matrix, descending.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.svdvals(jnp.array([[3.0, 0.0], [0.0, -4.0]]))
        Array([4., 3.], dtype=float32)
    """
    return svd(x, compute_uv=False)


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):  # noqa: N803
    """The number of singular values of each matrix above ``rtol`` (by default the largest
    times max(m, n) times the dtype's eps); for fewer than 2 dims, 1 if any element is
    nonzero.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.matrix_rank(jnp.array([[1.0, 2.0], [2.0, 4.0]]))
        Array(1, dtype=int32)
    """
    del hermitian  # the general SVD serves
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,) = promote_inexact(as_value(M))  # noqa: N806
    if get_aval(M).ndim < 2:
        return jnp.any(M != 0).astype(np.int32)
    s = lax_linalg.svd(M, full_matrices=False, compute_uv=False)
    if rtol is None:
        largest = max(get_aval(M).shape[-2:])
        eps = np.finfo(get_aval(s).dtype).eps
        rtol = jnp.max(s, axis=-1) * np.asarray(largest * eps, get_aval(s).dtype)
    rtol = as_value(rtol)
    return jnp.sum(s > jnp.expand_dims(rtol, get_aval(rtol).ndim), axis=-1)


def cond(x, p=None):
    """The condition number of each matrix in the ``p``-norm: the ratio of the extreme
    singular values for p = None, 2 or -2, else norm(x) * norm(inv(x)) (square x); inf,
    not NaN, for a singular matrix.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.linalg.cond(jnp.array([[2.0, 0.0], [0.0, 0.5]]))
        Array(4., dtype=float32)
    """
    x = as_value(x)
    shape = get_aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape="
                         f"{shape}")
    if shape[-1] == 0 or shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape="
                         f"{shape}")
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        ratio = s[..., -1] / s[..., 0]
    else:
        if shape[-2] != shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                             f"arr.shape={shape}")
        ratio = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    # A NaN from a singular matrix means an infinite condition number
    return jnp.where(jnp.isnan(ratio) & ~jnp.isnan(x).any(axis=(-2, -1)), np.inf, ratio)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` as a tensor: ``tensordot(tensorinv(a, ind), a, ind)`` is the
    identity, the first ``ind`` dims of ``a`` seen as one matrix dim and the rest as the
    other.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> a = jnp.eye(6).reshape(6, 2, 3) * 2
        >>> jnp.linalg.tensorinv(a, ind=1).shape
        (2, 3, 6)
    """
    a = as_value(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    shape = get_aval(a).shape
    rows, cols = shape[:ind], shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise ValueError(f"tensorinv is only possible when the product of the first `ind` "
                         f"dimensions equals that of the remaining dimensions. got "
                         f"arr.shape={shape} with ind={ind}.")
    matrix = jnp.reshape(a, (math.prod(rows), math.prod(cols)))
    return jnp.reshape(inv(matrix), cols + rows)


def tensorsolve(a, b, axes: tuple[int, ...] | None = None):
    """``x`` with ``tensordot(a, x, x.ndim) == b``: ``a``'s leading dims are ``b``'s, its
    others ``x``'s (``axes`` of ``a`` are first moved to the end).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> a = (jnp.eye(6) * 2).reshape(2, 3, 6)
        >>> jnp.linalg.tensorsolve(a, jnp.ones((2, 3)))
        Array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], dtype=float32)
    """
    a, b = as_value(a), as_value(b)
    if axes is not None:
        ndim = get_aval(a).ndim
        a = jnp.moveaxis(a, axes, len(axes) * (ndim - 1,))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    out_shape = a_shape[len(b_shape):]
    if a_shape[:len(b_shape)] != b_shape:
        raise ValueError(f"After moving axes to end, leading shape of a must match shape of "
                         f"b. got a.shape={a_shape}, b.shape={b_shape}")
    if math.prod(b_shape) != math.prod(out_shape):
        raise ValueError(f"Input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]); got a.shape={a_shape}, b.ndim={len(b_shape)}.")
    matrix = jnp.reshape(a, (math.prod(b_shape), math.prod(out_shape)))
    return jnp.reshape(solve(matrix, jnp.ravel(b)), out_shape)
