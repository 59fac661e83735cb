"""``lax.linalg``: the matrix decompositions and the triangular solve, as primitives.

Each primitive works on the last two dims of its operands (the *matrix* dims) and maps over
the dims before them (the *batch* dims), so one declaration (:data:`LINALG`: the matrix rank of
each operand and the shapes of the results) gives every later stage its rule: abstract eval
(stage 2), batching (stage 3: the batch axis goes to the front, as one more batch dim),
sharding and partitioning (stage 4: batch dims keep their split, matrix dims are whole). The
impls are NumPy's (LAPACK through ``np.linalg``; LU and the triangular solve by
substitution loops), one matrix at a time; a matrix LAPACK cannot
decompose gives NaNs, as JAX's do, never an exception.

Differentiation follows JAX: each decomposition has a JVP rule written with primitives (the
tangent map, linear in the tangents). Its VJP is that map *transposed by the tape*: reverse
mode over the linear map, evaluated at zero tangents (``_transposed``). So one formula per
decomposition serves both modes and every order; only ``triangular_solve``, the base of the
others, has a hand-written VJP. NB: JAX instead transposes the linear jaxpr of the JVP
(``jax/_src/interpreters/ad.py``: ``backward_pass``); its rules are in
``jax/_src/lax/linalg.py`` (``_cholesky_jvp_rule``, ``_lu_jvp_rule``, ``qr_jvp_rule``,
``_eigh_jvp_rule``, ``_svd_jvp_rule``, ``_triangular_solve_jvp_rule_a``).

Example:
    >>> from stage1_autodiff import lax
    >>> import numpy as np
    >>> lax.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]], np.float32))
    Array([[2., 0.],
           [1., 2.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import autodiff
from .complex_numbers import conj, real
from .contraction import dot_general
from .core import (
    Primitive,
    ShapedArray,
    get_aval,
    impl_rules,
    jvp_rules,
    jvp_rules_take_none,
    vjp_rules,
    vjp_rules_take_none,
)
from .primitives import (
    add,
    broadcast_in_dim,
    concatenate,
    convert_element_type,
    div,
    eq,
    full,
    integer_pow,
    iota,
    mul,
    neg,
    pad,
    reduce_sum,
    slice,
    squeeze,
    sub,
    transpose,
    zeros_like,
)

__all__ = ["LINALG", "cholesky", "cholesky_p", "eig", "eig_p", "eigh", "eigh_p", "lu", "lu_p",
           "output_avals", "qr", "qr_p", "svd", "svd_p", "triangular_solve",
           "triangular_solve_p"]

# ------------------------------------------------------------------------------------------
# The declaration every stage reads: matrix ranks and result shapes
# ------------------------------------------------------------------------------------------


class LinalgShapes(NamedTuple):
    """What a linear-algebra primitive is: the matrix rank of each operand (the dims before
    are batch dims, alike in every operand) and its results: ``results(*matrix_shapes,
    **params)`` gives a (matrix shape, dtype) per result, dtype ``None`` for the operands'
    (``"complex"``: the complex type of their width)."""

    ranks: tuple[int, ...]
    results: Callable[..., list[tuple[tuple[int, ...], Any]]]


LINALG: dict[Primitive, LinalgShapes] = {}
# Those that take complex matrices too (the others' rules are written for real ones only).
TAKE_COMPLEX: set[Primitive] = set()


def output_avals(prim: Primitive, *avals: ShapedArray, **params: Any) -> list[ShapedArray]:
    """The results' avals, with the operands checked: floating point, matrix dims present,
    one batch shape. Weakly typed when every operand is, as JAX's linalg primitives are."""
    ranks = LINALG[prim].ranks
    for i, (aval, rank) in enumerate(zip(avals, ranks)):
        if aval.dtype.kind == "c" and prim not in TAKE_COMPLEX:
            raise TypeError(f"{prim.name} requires real floating-point arguments, got "
                            f"{aval.str_short()} for operand {i}: complex matrices are "
                            f"decomposed by cholesky, lu and eigh only here (the course page "
                            f"'Differences from JAX').")
        if aval.dtype.kind not in "fc":
            raise TypeError(f"{prim.name} requires floating-point arguments, got "
                            f"{aval.str_short()} for operand {i}. Convert it first, e.g. "
                            f"x.astype(jnp.float32).")
        if aval.ndim < rank:
            raise TypeError(f"{prim.name}: operand {i} must have at least {rank} dims (a "
                             f"batch of matrices), got shape {aval.shape}.")
    batch = [aval.shape[:aval.ndim - rank] for aval, rank in zip(avals, ranks)]
    if any(b != batch[0] for b in batch) or any(a.dtype != avals[0].dtype for a in avals):
        raise ValueError(f"{prim.name} requires operands of one dtype and one batch shape, got "
                         f"{', '.join(a.str_short() for a in avals)}.")
    matrices = [aval.shape[aval.ndim - rank:] for aval, rank in zip(avals, ranks)]
    weak = all(aval.weak_type for aval in avals)
    return [ShapedArray(batch[0] + tuple(shape), _result_dtype(dtype, avals[0].dtype),
                        weak and dtype in (None, "real"))
            for shape, dtype in LINALG[prim].results(*matrices, **params)]


def _result_dtype(declared: Any, operand: np.dtype) -> np.dtype:
    """A result's dtype as ``LinalgShapes.results`` declares it: ``None`` for the operands',
    ``"complex"`` for the complex type of their width (``eig``), ``"real"`` for the real
    type of their width (``eigh``'s eigenvalues), or a dtype."""
    if declared is None:
        return np.dtype(operand)
    if declared == "real":
        return np.dtype(operand.char.lower()) if operand.kind == "c" else np.dtype(operand)
    return np.result_type(operand, np.complex64) if declared == "complex" else np.dtype(declared)


def _square(name: str, shape: tuple[int, ...]) -> int:
    if shape[0] != shape[1]:
        raise ValueError(f"{name} requires square matrices, got matrices of shape {shape}.")
    return shape[0]


def _per_matrix(prim: Primitive, one: Callable) -> Callable:
    """An impl from ``one``, a function of one matrix per operand: looped over the batch
    dims. Where LAPACK fails (not positive definite, no convergence, NaNs in), the results
    of that matrix are NaN, as in JAX."""
    def impl(*operands, **params):
        avals = output_avals(prim, *[ShapedArray(x.shape, x.dtype) for x in operands], **params)
        outs = [np.empty(aval.shape, aval.dtype) for aval in avals]
        batch = operands[0].shape[:operands[0].ndim - LINALG[prim].ranks[0]]
        for index in np.ndindex(*batch):
            try:
                results = one(*[x[index] for x in operands], **params)
            except (np.linalg.LinAlgError, ValueError):
                results = [np.full(out.shape[len(batch):], np.nan) for out in outs]
            for out, result in zip(outs, results):
                out[index] = result
        return outs if prim.multiple_results else outs[0]
    return impl


# ------------------------------------------------------------------------------------------
# Matrix helpers on primitives (the rules are written with them, so they differentiate)
# ------------------------------------------------------------------------------------------


def _T(x):  # noqa: N802 -- the transpose of each matrix
    ndim = get_aval(x).ndim
    return transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def _conj(x):
    """The complex conjugate; a real ``x`` itself (``lax.conj`` would make it complex)."""
    return conj(x) if get_aval(x).dtype.kind == "c" else x


def _H(x):  # noqa: N802 -- the adjoint (conjugate transpose) of each matrix
    return _conj(_T(x))


def _matmul(x, y):
    """Each matrix of ``x`` times the matching matrix of ``y``."""
    batch = tuple(range(get_aval(x).ndim - 2))
    return dot_general(x, y, (((len(batch) + 1,), (len(batch),)), (batch, batch)))


def _constant_like(x, matrix: np.ndarray):
    """A NumPy matrix, of ``x``'s dtype, broadcast over ``x``'s batch dims."""
    aval = get_aval(x)
    shape = aval.shape[:-2] + matrix.shape
    return broadcast_in_dim(matrix.astype(aval.dtype), shape, (len(shape) - 2, len(shape) - 1))


def _masked(x, mask: np.ndarray):
    return mul(x, _constant_like(x, mask))


def _tril(x, k: int = 0):
    return _masked(x, np.tri(*get_aval(x).shape[-2:], k))


def _triu(x, k: int = 0):
    return _masked(x, 1 - np.tri(*get_aval(x).shape[-2:], k - 1))


def _eye_like(x):
    return _constant_like(x, np.eye(*get_aval(x).shape[-2:]))


def _diagonal(x):
    """The diagonal of each square matrix: shape (..., n)."""
    return reduce_sum(mul(x, _eye_like(x)), (get_aval(x).ndim - 1,))


def _rows(x):
    """A vector (..., n) as the rows of matrices (..., 1, n), to be broadcast down columns."""
    shape = get_aval(x).shape
    return broadcast_in_dim(x, shape[:-1] + (shape[-1], shape[-1]),
                            (*range(len(shape) - 1), len(shape)))


def _block(x, rows: tuple[int, int], cols: tuple[int, int]):
    shape = get_aval(x).shape
    return slice(x, (0,) * (len(shape) - 2) + (rows[0], cols[0]), shape[:-2] + (rows[1], cols[1]))


def _padded(x, rows_after: int, cols_after: int):
    ndim = get_aval(x).ndim
    config = [(0, 0, 0)] * (ndim - 2) + [(0, rows_after, 0), (0, cols_after, 0)]
    return pad(x, full((), 0, get_aval(x).dtype), config)


# ------------------------------------------------------------------------------------------
# Both derivative rules from one tangent map
# ------------------------------------------------------------------------------------------


def _floating(outs) -> list:
    return [o for o in outs if get_aval(o).dtype.kind in "fc"]


def _jvp_of(prim: Primitive, tangent_map: Callable) -> Callable:
    """The JVP rule: the primitive, then ``tangent_map(primals, outs, tangents, **params)``
    (the tangents of its floating-point results; integer ones have none)."""
    def jvp(primals, tangents, **params):
        outs = prim.bind(*primals, **params)
        out_list = outs if prim.multiple_results else [outs]
        dots = iter(tangent_map(primals, out_list, tangents, **params))
        out_dots = [next(dots) if get_aval(o).dtype.kind in "fc" else None for o in out_list]
        return outs, (out_dots if prim.multiple_results else out_dots[0])
    return jvp


# --8<-- [start:transposed]
def _transposed(tangent_map: Callable, multiple_results: bool) -> Callable:
    """The VJP rule from the JVP's tangent map, a linear function of the tangents: its
    transpose is its reverse mode, so the tape runs ``tangent_map`` from zero tangents and
    pulls the cotangents back. Every step is a primitive with rules of its own, so the
    result can be differentiated again."""
    def vjp(cts, *primals, out, **params):
        outs, cts = (out, cts) if multiple_results else ([out], [cts])
        cts = [ct for ct, o in zip(cts, outs) if get_aval(o).dtype.kind in "fc"]
        reached = [i for i, ct in enumerate(cts) if ct is not None]  # None: a zero

        def linear(*tangents):
            dots = tangent_map(primals, outs, tangents, **params)
            return [dots[i] for i in reached]
        _, pullback = autodiff.vjp(linear, *[zeros_like(x) for x in primals])
        return list(pullback([cts[i] for i in reached]))
    return vjp
# --8<-- [end:transposed]


def _rules(prim: Primitive, tangent_map: Callable) -> None:
    jvp_rules[prim] = _jvp_of(prim, tangent_map)
    vjp_rules[prim] = _transposed(tangent_map, prim.multiple_results)
    vjp_rules_take_none.add(prim)  # (only one with several results is given a None)


# ------------------------------------------------------------------------------------------
# triangular_solve: op(a) x = b (left side) or x op(a) = b, with a triangular
# ------------------------------------------------------------------------------------------

triangular_solve_p = Primitive("triangular_solve")


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solves ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for ``x``, reading only
    the ``lower`` (or upper) triangle of ``a``; ``op`` transposes when ``transpose_a``. A
    ``b`` of one dim fewer than ``a`` is one vector per matrix."""
    vector = get_aval(b).ndim == get_aval(a).ndim - 1
    if vector:
        b = broadcast_in_dim(b, get_aval(b).shape + (1,), tuple(range(get_aval(b).ndim)))
        b = b if left_side else _T(b)
    x = triangular_solve_p.bind(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    if vector:
        x = x if left_side else _T(x)
        shape = get_aval(x).shape
        x = slice(x, (0,) * len(shape), shape[:-1] + (1,))
        x = squeeze(x, (len(shape) - 1,))
    return x


def _triangular_solve_results(a, b, *, left_side, **_):
    m = _square("triangular_solve", a)
    if b[0 if left_side else 1] != m:
        side = "rows" if left_side else "columns"
        raise ValueError(f"triangular_solve: b must have {m} {side} to match a of shape {a}, "
                         f"got b of shape {b} (left_side={left_side}).")
    return [(b, None)]


LINALG[triangular_solve_p] = LinalgShapes((2, 2), _triangular_solve_results)


def _substitute(t, b, lower: bool, unit_diagonal: bool):
    """``t x = b`` for triangular ``t``, one row of ``x`` at a time: forward substitution
    (``lower``) or back substitution. A zero on the diagonal gives infinities, as BLAS's."""
    n = t.shape[0]
    x = np.zeros(b.shape, np.result_type(t, b))
    for i in range(n) if lower else range(n - 1, -1, -1):
        known = np.s_[:i] if lower else np.s_[i + 1:]
        rest = b[i] - t[i, known] @ x[known]
        x[i] = rest if unit_diagonal else rest / t[i, i]
    return x


def _triangular_solve_one(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    # op(a) x = b directly; x op(a) = b as op(a)^T x^T = b^T. Each transpose flips the triangle.
    a = np.conj(a) if conjugate_a else a
    op_a, lower = (a.T, not lower) if transpose_a else (a, lower)
    if left_side:
        return [_substitute(op_a, b, lower, unit_diagonal)]
    return [_substitute(op_a.T, b.T, not lower, unit_diagonal).T]


impl_rules[triangular_solve_p] = _per_matrix(triangular_solve_p, _triangular_solve_one)


def _used_triangle(a_dot, lower: bool, unit_diagonal: bool):
    k = -1 if unit_diagonal else 0
    return _tril(a_dot, k) if lower else _triu(a_dot, -k)


def triangular_solve_jvp_map(primals, outs, tangents, **params):
    # x_dot = op(a)^-1 (b_dot - op(a_dot) x), or (b_dot - x op(a_dot)) op(a)^-1. Forward
    # mode gives None for a zero tangent (a constant a or b), whose term is left out: with
    # an infinite x, the product of a zero a_dot and x would be NaN.
    (a, _), (x,), (a_dot, b_dot) = primals, outs, tangents
    if a_dot is None:
        return [triangular_solve_p.bind(a, b_dot, **params)]
    op_a_dot = _used_triangle(a_dot, params["lower"], params["unit_diagonal"])
    op_a_dot = _conj(op_a_dot) if params["conjugate_a"] else op_a_dot
    op_a_dot = _T(op_a_dot) if params["transpose_a"] else op_a_dot
    product = _matmul(op_a_dot, x) if params["left_side"] else _matmul(x, op_a_dot)
    rhs = neg(product) if b_dot is None else sub(b_dot, product)
    return [triangular_solve_p.bind(a, rhs, **params)]


jvp_rules[triangular_solve_p] = _jvp_of(triangular_solve_p, triangular_solve_jvp_map)
jvp_rules_take_none.add(triangular_solve_p)


def triangular_solve_vjp(ct, a, b, *, out, **params):
    """Linear in ``b``: its cotangent is the solve with ``op(a)`` transposed. ``a``'s is
    minus that times ``x`` (a rank-k update), on the triangle ``a`` is read from."""
    flipped = dict(params, transpose_a=not params["transpose_a"])
    ct_b = triangular_solve_p.bind(a, ct, **flipped)
    ct_op_a = neg(_matmul(ct_b, _T(out)) if params["left_side"] else _matmul(_T(out), ct_b))
    ct_a = _T(ct_op_a) if params["transpose_a"] else ct_op_a
    ct_a = _conj(ct_a) if params["conjugate_a"] else ct_a  # (conj's transpose is conj)
    return [_used_triangle(ct_a, params["lower"], params["unit_diagonal"]), ct_b]


vjp_rules[triangular_solve_p] = triangular_solve_vjp
TAKE_COMPLEX.add(triangular_solve_p)

# ------------------------------------------------------------------------------------------
# cholesky: a = l l^T, l lower triangular
# ------------------------------------------------------------------------------------------

cholesky_p = Primitive("cholesky")


def symmetrize(x):
    """``(x + x^H) / 2`` for each matrix (``x^H``, the adjoint, is the transpose of a real
    one)."""
    return _masked(add(x, _H(x)), np.full(get_aval(x).shape[-2:], 0.5))


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower-triangular ``l`` with ``l @ l.T == x``, for each symmetric positive-definite
    matrix of ``x`` (NaNs where ``x`` is not). ``symmetrize_input`` first averages ``x`` with
    its transpose; otherwise only the lower triangle is read."""
    output_avals(cholesky_p, get_aval(x))  # a bad operand is named before symmetrizing
    return cholesky_p.bind(symmetrize(x) if symmetrize_input else x)


def _cholesky_results(a):
    _square("cholesky", a)
    return [(a, None)]


LINALG[cholesky_p] = LinalgShapes((2,), _cholesky_results)
_cholesky_per_matrix = _per_matrix(cholesky_p, lambda a: [np.linalg.cholesky(a)])
# np.tril: a failed factor's NaNs stay below the diagonal only, as JAX's.
impl_rules[cholesky_p] = lambda a: np.tril(_cholesky_per_matrix(a))


# --8<-- [start:cholesky_jvp]
def _phi(x):
    """The lower triangle of each matrix, its diagonal halved."""
    n = get_aval(x).shape[-1]
    return _masked(x, np.tri(n) - 0.5 * np.eye(n))


def cholesky_jvp_map(primals, outs, tangents):
    # a = l l^T gives a_dot = l_dot l^T + l l_dot^T, so l^-1 a_dot l^-T = (l^-1 l_dot) + its
    # transpose, and l^-1 l_dot is lower triangular: its lower half, the diagonal halved.
    (chol,), (a_dot,) = outs, tangents
    # (For a complex a = l l^H, the same with adjoints: conjugate_a changes no real solve.)
    a_dot_l_inv_t = triangular_solve(chol, a_dot, left_side=False, lower=True, transpose_a=True,
                                     conjugate_a=True)
    middle = triangular_solve(chol, a_dot_l_inv_t, left_side=True, lower=True)
    return [_matmul(chol, _phi(middle))]
# --8<-- [end:cholesky_jvp]


_rules(cholesky_p, cholesky_jvp_map)
TAKE_COMPLEX.add(cholesky_p)

# ------------------------------------------------------------------------------------------
# lu: p a = l u with partial pivoting (l unit lower, u upper, packed in one matrix)
# ------------------------------------------------------------------------------------------

lu_p = Primitive("lu", multiple_results=True)


def lu(x) -> tuple[Any, Any, Any]:
    """``(lu, pivots, permutation)`` of each (m, n) matrix: ``x[permutation] = l @ u``, with
    ``l`` (unit diagonal, not stored) below the diagonal of ``lu`` and ``u`` on and above it;
    ``pivots`` (int32, min(m, n)) are the row swaps, ``permutation`` (int32, m) their result."""
    return tuple(lu_p.bind(x))


def _lu_results(a):
    return [(a, None), ((min(a),), np.int32), ((a[0],), np.int32)]


LINALG[lu_p] = LinalgShapes((2,), _lu_results)


def _lu_one(a):
    """LAPACK's unblocked ``getf2``: for each column, the row of the largest entry swapped
    up (the first on ties), the column below divided by the pivot, the rest updated."""
    packed, (m, n) = a.copy(), a.shape
    pivots = np.zeros(min(m, n), np.int32)
    permutation = np.arange(m, dtype=np.int32)
    for j in range(min(m, n)):
        p = pivots[j] = j + int(np.argmax(np.abs(packed[j:, j])))
        packed[[j, p]], permutation[[j, p]] = packed[[p, j]], permutation[[p, j]]
        if packed[j, j] != 0:  # a zero pivot: u is singular, left so (as LAPACK, as JAX)
            packed[j + 1:, j] /= packed[j, j]
        packed[j + 1:, j + 1:] -= np.outer(packed[j + 1:, j], packed[j, j + 1:])
    return [packed, pivots, permutation]


impl_rules[lu_p] = _per_matrix(lu_p, _lu_one)


def _one_hot(permutation, like):
    """The permutation matrix ``p`` with ``(p @ a)[i] = a[permutation[i]]``."""
    shape = get_aval(permutation).shape
    square = shape + shape[-1:]
    rows = broadcast_in_dim(permutation, square, tuple(range(len(shape))))
    hits = eq(rows, iota(np.int32, square, len(square) - 1))
    return convert_element_type(hits, get_aval(like).dtype)


def _l_and_u(packed):
    """``l`` (m, m) and ``u`` (n, n) from the packed (m, n) factors, each completed to a
    square with the identity."""
    m, n = get_aval(packed).shape[-2:]
    k = min(m, n)
    lower = _padded(_tril(_block(packed, (0, m), (0, k)), -1), 0, m - k)
    lower = add(lower, _eye_like(lower))
    u = _padded(_triu(_block(packed, (0, k), (0, n))), n - k, 0)
    return lower, add(u, _constant_like(u, np.diag([0.0] * k + [1.0] * (n - k))))


def lu_jvp_map(primals, outs, tangents):
    # p a_dot = l_dot u + l u_dot, so l^-1 p a_dot u^-1 = l^-1 l_dot + u_dot u^-1: a strictly
    # lower part (l's) plus an upper part (u's). (De Hoog, Anderssen and Lukas.)
    (packed, _, permutation), (a_dot,) = outs, tangents
    lower, u = _l_and_u(packed)
    pa_dot = _matmul(_one_hot(permutation, a_dot), a_dot)
    l_inv_pa_dot = triangular_solve(lower, pa_dot, left_side=True, lower=True, unit_diagonal=True)
    middle = triangular_solve(u, l_inv_pa_dot, left_side=False, lower=False)
    return [add(_matmul(lower, _tril(middle, -1)), _matmul(_triu(middle), u))]


_rules(lu_p, lu_jvp_map)
TAKE_COMPLEX.add(lu_p)  # (its rule has no transpose: the same for complex matrices)

# ------------------------------------------------------------------------------------------
# qr: a = q r, q orthogonal, r upper triangular
# ------------------------------------------------------------------------------------------

qr_p = Primitive("qr", multiple_results=True)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma: bool | None = None):
    """``(q, r)`` of each (m, n) matrix: q (m, m) and r (m, n), or with ``full_matrices=False``
    q (m, k) and r (k, n), k = min(m, n)."""
    del use_magma  # a GPU library choice in JAX
    if pivoting:
        raise NotImplementedError("lax.linalg.qr: pivoting=True is not implemented here; use "
                                  "pivoting=False.")
    return tuple(qr_p.bind(x, full_matrices=full_matrices))


def _qr_results(a, *, full_matrices):
    m, n = a
    k = m if full_matrices else min(m, n)
    return [((m, k), None), ((k, n), None)]


LINALG[qr_p] = LinalgShapes((2,), _qr_results)
impl_rules[qr_p] = _per_matrix(qr_p, lambda a, *, full_matrices: np.linalg.qr(
    a, mode="complete" if full_matrices else "reduced"))


def _thin_qr_dots(q, r, x_dot):
    """Tangents of q (m, n) and r (n, n) for m >= n. With c = q^T x_dot r^-1, q^T q_dot is
    antisymmetric and r_dot r^-1 upper triangular, and they add up to c: so q^T q_dot is the
    strictly lower part of c minus its transpose. (J. Townsend's note on QR derivatives.)"""
    x_dot_r_inv = triangular_solve(r, x_dot)  # x_dot r^-1: right side, upper
    c = _matmul(_T(q), x_dot_r_inv)
    below = _tril(c, -1)
    omega = sub(below, _T(below))
    q_dot = add(_matmul(q, sub(omega, c)), x_dot_r_inv)
    return q_dot, _matmul(sub(c, omega), r)


def qr_jvp_map(primals, outs, tangents, *, full_matrices):
    (x,), (q, r), (x_dot,) = primals, outs, tangents
    m, n = get_aval(x).shape[-2:]
    if m < n:  # x = [x1 x2], r = [r1 r2]: x1 = q r1 is square; r2 = q^T x2
        q_dot, r1_dot = _thin_qr_dots(q, _block(r, (0, m), (0, m)),
                                      _block(x_dot, (0, m), (0, m)))
        r2_dot = add(_matmul(_T(q_dot), _block(x, (0, m), (m, n))),
                     _matmul(_T(q), _block(x_dot, (0, m), (m, n))))
        return [q_dot, concatenate([r1_dot, r2_dot], get_aval(x).ndim - 1)]
    if full_matrices and m > n:
        raise NotImplementedError(
            "The derivative of qr with full_matrices=True of a tall matrix is not implemented "
            "here (the last m - n columns of q are an arbitrary completion); use "
            "full_matrices=False (jnp.linalg.qr's default mode='reduced').")
    return list(_thin_qr_dots(q, r, x_dot))


_rules(qr_p, qr_jvp_map)

# ------------------------------------------------------------------------------------------
# eigh: a = v diag(w) v^T for symmetric a
# ------------------------------------------------------------------------------------------

eigh_p = Primitive("eigh", multiple_results=True)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: Any = None) -> tuple[Any, Any]:
    """``(v, w)`` of each symmetric matrix: eigenvectors as the columns of ``v``, eigenvalues
    ``w`` in ascending order. Without ``symmetrize_input`` only the ``lower`` (or upper)
    triangle is read."""
    del implementation  # JAX's choice of algorithm: LAPACK's syevd here
    n = get_aval(x).shape[-1]
    if subset_by_index not in (None, (0, n)):
        raise NotImplementedError("lax.linalg.eigh: subset_by_index is not implemented here; "
                                  "slice the full result instead.")
    output_avals(eigh_p, get_aval(x), lower=lower, sort_eigenvalues=sort_eigenvalues)
    x = symmetrize(x) if symmetrize_input else x
    return tuple(eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues))


def _eigh_results(a, **_):
    n = _square("eigh", a)
    return [(a, None), ((n,), "real")]


LINALG[eigh_p] = LinalgShapes((2,), _eigh_results)
impl_rules[eigh_p] = _per_matrix(eigh_p, lambda a, *, lower, sort_eigenvalues: np.linalg.eigh(
    a, "L" if lower else "U")[::-1])


def eigh_jvp_map(primals, outs, tangents, **params):
    # v^H a_dot v = diag(w_dot) + (v^H v_dot) diag(w) - diag(w) (v^H v_dot): its diagonal
    # is w_dot (real, for a Hermitian a_dot), its (i, j) entry off it (w_j - w_i)
    # (v^H v_dot)_ij. Distinct eigenvalues only.
    (v, w), (a_dot,) = outs, tangents
    rotated = _matmul(_matmul(_H(v), a_dot), v)
    w_j = _rows(w)
    eye = _eye_like(w_j)  # (real, as w is)
    gaps_inv = sub(integer_pow(add(eye, sub(w_j, _T(w_j))), -1), eye)  # 0 on the diagonal
    gaps_inv = convert_element_type(gaps_inv, get_aval(v).dtype)
    w_dot = _diagonal(rotated)
    return [_matmul(v, mul(gaps_inv, rotated)),
            real(w_dot) if get_aval(w_dot).dtype.kind == "c" else w_dot]


_rules(eigh_p, eigh_jvp_map)
TAKE_COMPLEX.add(eigh_p)

# ------------------------------------------------------------------------------------------
# eig: a vr = vr diag(w), vl^H a = diag(w) vl^H for any square a (complex results)
# ------------------------------------------------------------------------------------------

eig_p = Primitive("eig", multiple_results=True)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation: Any = None,
        use_magma: Any = None) -> list[Any]:
    """``[w, vl, vr]`` of each square matrix (``vl`` and ``vr`` only when asked for):
    eigenvalues ``w`` in LAPACK's order, left and right eigenvectors as columns of unit norm,
    all complex. Only the eigenvalues are differentiated, as in JAX by default."""
    del implementation, use_magma  # JAX's choices of routine: LAPACK's geev here
    if enable_eigvec_derivs:
        raise NotImplementedError("lax.linalg.eig: enable_eigvec_derivs=True is not "
                                  "implemented here; only the eigenvalues have derivatives.")
    params = dict(compute_left_eigenvectors=compute_left_eigenvectors,
                  compute_right_eigenvectors=compute_right_eigenvectors)
    output_avals(eig_p, get_aval(x), **params)
    return list(eig_p.bind(x, **params))


def _eig_results(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    n = _square("eig", a)
    vectors = [(a, "complex")] * (compute_left_eigenvectors + compute_right_eigenvectors)
    return [((n,), "complex"), *vectors]


def _eig_one(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    from scipy.linalg import eig as lapack_eig  # geev, with both sides' vectors

    w, vl, vr = lapack_eig(a, left=True, right=True)
    vectors = [vl] * compute_left_eigenvectors + [vr] * compute_right_eigenvectors
    return [np.asarray(v, np.result_type(a.dtype, np.complex64)) for v in (w, *vectors)]


LINALG[eig_p] = LinalgShapes((2,), _eig_results)
impl_rules[eig_p] = _per_matrix(eig_p, _eig_one)


def eig_jvp_map(primals, outs, tangents, *, compute_left_eigenvectors,
                compute_right_eigenvectors):
    # With a vr_i = w_i vr_i and vl_i^H a = w_i vl_i^H: w_i' = vl_i^H a' vr_i / vl_i^H vr_i.
    if compute_left_eigenvectors or compute_right_eigenvectors:
        raise NotImplementedError(
            "The derivatives of eig's eigenvectors are not implemented, only its eigenvalues' "
            "(as JAX without enable_eigvec_derivs=True): differentiate jnp.linalg.eigvals, or "
            "eigh for a symmetric matrix.")
    (a,), (a_dot,) = primals, tangents
    _, vl, vr = eig_p.bind(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True)
    left = conj(vl)
    a_dot = convert_element_type(a_dot, get_aval(vr).dtype)
    along = get_aval(a).ndim - 2  # the rows of each matrix: sum over them, column by column
    numerator = reduce_sum(mul(left, _matmul(a_dot, vr)), (along,))
    return [div(numerator, reduce_sum(mul(left, vr), (along,)))]


_rules(eig_p, eig_jvp_map)

# ------------------------------------------------------------------------------------------
# svd: a = u diag(s) v^T
# ------------------------------------------------------------------------------------------

svd_p = Primitive("svd", multiple_results=True)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm: Any = None):
    """``(u, s, vh)`` of each (m, n) matrix, singular values ``s`` descending; only ``s``
    when not ``compute_uv``. ``full_matrices`` makes u (m, m) and vh (n, n) rather than
    (m, k) and (k, n), k = min(m, n)."""
    del algorithm  # LAPACK's gesdd here
    if subset_by_index not in (None, (0, min(get_aval(x).shape[-2:]))):
        raise NotImplementedError("lax.linalg.svd: subset_by_index is not implemented here; "
                                  "slice the full result instead.")
    outs = svd_p.bind(x, full_matrices=full_matrices, compute_uv=compute_uv)
    return (outs[1], outs[0], outs[2]) if compute_uv else outs[0]


def _svd_results(a, *, full_matrices, compute_uv):
    m, n = a
    k = min(m, n)
    if not compute_uv:
        return [((k,), None)]
    return [((k,), None), ((m, m if full_matrices else k), None),
            ((n if full_matrices else k, n), None)]


def _svd_one(a, *, full_matrices, compute_uv):
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False)]
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return [s, u, vh]


LINALG[svd_p] = LinalgShapes((2,), _svd_results)
impl_rules[svd_p] = _per_matrix(svd_p, _svd_one)


def _columns_divided(x, s):
    """Column j of each matrix of ``x`` divided by ``s[j]``."""
    shape = get_aval(x).shape
    return div(x, broadcast_in_dim(s, shape, (*range(len(shape) - 2), len(shape) - 1)))


def _svd_vector_dots(s, u, v, a_dot, ds_mat):
    """The tangents of u and v (k columns each) from ds_mat = u^T a_dot v."""
    eye, s_j = _eye_like(ds_mat), _rows(s)
    s_i = _T(s_j)
    gaps_inv = sub(integer_pow(add(mul(add(s_j, s_i), sub(s_j, s_i)), eye), -1), eye)
    ds_s, s_ds = mul(s_j, ds_mat), mul(s_i, ds_mat)
    # (JAX adds a term for complex matrices; it is zero for real ones.)
    u_dot = _matmul(u, mul(gaps_inv, add(ds_s, _T(ds_s))))
    v_dot = _matmul(v, mul(gaps_inv, add(s_ds, _T(s_ds))))
    m, n = get_aval(u).shape[-2], get_aval(v).shape[-2]
    if m > n:  # the part of a_dot v outside u's columns
        a_dot_v = _matmul(a_dot, v)
        u_dot = add(u_dot, _columns_divided(sub(a_dot_v, _matmul(u, _matmul(_T(u), a_dot_v))), s))
    if n > m:
        a_dot_t_u = _matmul(_T(a_dot), u)
        v_dot = add(v_dot, _columns_divided(
            sub(a_dot_t_u, _matmul(v, _matmul(_T(v), a_dot_t_u))), s))
    return u_dot, v_dot


def svd_jvp_map(primals, outs, tangents, *, full_matrices, compute_uv):
    # s_dot is the diagonal of u^T a_dot v; u_dot and v_dot as in JAX (Townsend's note).
    (a,), (a_dot,) = primals, tangents
    m, n = get_aval(a).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices: use "
            "full_matrices=False, or compute_uv=False for the singular values alone.")
    s, u, vt = outs if compute_uv else svd_p.bind(a, full_matrices=False, compute_uv=True)
    v = _T(vt)
    ds_mat = _matmul(_matmul(_T(u), a_dot), v)
    if not compute_uv:
        return [_diagonal(ds_mat)]
    u_dot, v_dot = _svd_vector_dots(s, u, v, a_dot, ds_mat)
    return [_diagonal(ds_mat), u_dot, _T(v_dot)]


_rules(svd_p, svd_jvp_map)
