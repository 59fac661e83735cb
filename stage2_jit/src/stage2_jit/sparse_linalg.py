"""``jax.scipy.sparse.linalg``: iterative solvers of ``A x = b``: ``cg`` (for a symmetric
positive definite ``A``), ``bicgstab`` and ``gmres`` (for any square ``A``).

``A`` is a matrix or a function computing ``A @ x`` (matrix-free: a sparse or structured map
that is never stored as a matrix). ``b`` and ``x`` may be pytrees of arrays: the vector is the
whole tree, and a dot product adds up over its leaves. Each solver is a ``lax.while_loop``
that stops once ``‖b − A x‖ ≤ max(tol·‖b‖, atol)`` or after ``maxiter`` steps, wrapped in
``lax.custom_linear_solve``: a derivative is one more solve of the same kind, not the
derivative of the loop (a ``while_loop`` has no reverse mode). Derivatives are accurate when
both solves converge. The second result stands for SciPy's convergence ``info``: None for
``cg`` and ``bicgstab``, and for ``gmres`` 0, or −1 when the answer holds NaNs, as in JAX.

NB: JAX's are in jax/_src/scipy/sparse/linalg.py. We take the same steps and stopping rules,
so our iterates agree with JAX's up to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from stage1_autodiff.core import Array, Tracer
from stage1_autodiff.scipy import linalg as scipy_linalg
from stage1_autodiff.tree_util import tree_leaves, tree_map, tree_structure

from stage1_autodiff import numpy as jnp
from stage1_autodiff import prims as lax

from .control_flow import fori_loop, while_loop
from .solves import custom_linear_solve

__all__ = ["bicgstab", "cg", "gmres"]

# ------------------------------------------------------------------------------------------
# Vectors as pytrees, and operators
# ------------------------------------------------------------------------------------------


def _vdot(x: Any, y: Any) -> Array:
    """``⟨x, y⟩`` over every leaf, ``x`` conjugated."""
    return sum(jnp.vdot(a, b) for a, b in zip(tree_leaves(x), tree_leaves(y)))


def _vdot_real(x: Any, y: Any) -> Array:
    """The real part of ``⟨x, y⟩``, a real number: what ``‖x‖²`` and ``⟨r, M r⟩`` are."""
    def real_part(a, b):
        if jnp.iscomplexobj(a) or jnp.iscomplexobj(b):
            return jnp.vdot(a.real, b.real) + jnp.vdot(a.imag, b.imag)
        return jnp.vdot(a, b)
    return sum(real_part(a, b) for a, b in zip(tree_leaves(x), tree_leaves(y)))


def _norm(x: Any) -> Array:
    return jnp.sqrt(_vdot_real(x, x))


def _add(x: Any, y: Any) -> Any:
    return tree_map(lambda a, b: a + b, x, y)


def _sub(x: Any, y: Any) -> Any:
    return tree_map(lambda a, b: a - b, x, y)


def _scale(s: Any, x: Any) -> Any:
    return tree_map(lambda a: s * a, x)


def _dtype(x: Any) -> np.dtype:
    return jnp.result_type(*tree_leaves(x))


def _identity(x: Any) -> Any:
    return x


def _operator(a: Any, name: str) -> Callable[[Any], Any]:
    """``a`` as the function ``x -> a @ x``: a function as it is, a square matrix by ``dot``."""
    if callable(a):
        return a
    if isinstance(a, (np.ndarray, Array, Tracer)) or hasattr(a, "__matmul__"):
        shape = tuple(np.shape(a))
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"The linear operator {name} must be a square matrix (or a "
                             f"function computing {name} @ x); it has shape {shape}.")
        if isinstance(a, (np.ndarray, Array, Tracer)):
            return partial(jnp.dot, a)
        return lambda x: a @ x
    raise TypeError(f"The linear operator {name} must be a square matrix or a function "
                    f"computing {name} @ x; got {type(a).__name__} {a!r}.")


def _start(A: Any, b: Any, x0: Any, M: Any, check_shapes: bool = True
           ) -> tuple[Callable, Any, Any, Callable]:
    """The operators as functions, ``b`` as arrays, and ``x0`` (zeros by default) checked to
    be a vector like ``b``."""
    A = _operator(A, "A")
    M = _identity if M is None else _operator(M, "M")
    b = tree_map(jnp.asarray, b)
    x0 = tree_map(jnp.zeros_like, b) if x0 is None else tree_map(jnp.asarray, x0)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"x0 must have the pytree structure of b, {tree_structure(b)}; it "
                         f"has {tree_structure(x0)}.")
    shapes = [[np.shape(v) for v in tree_leaves(t)] for t in (x0, b)]
    if check_shapes and shapes[0] != shapes[1]:
        raise ValueError(f"x0's arrays must have the shapes of b's, {shapes[1]}; they have "
                         f"{shapes[0]}.")
    return A, b, x0, M


def _size(b: Any) -> int:
    return sum(np.size(v) for v in tree_leaves(b))


def _residual_bound(b: Any, tol: float, atol: float) -> Array:
    """``max(tol·‖b‖, atol)²``: the loops compare squared norms with it."""
    return jnp.maximum(jnp.square(tol) * _vdot_real(b, b), jnp.square(atol))


def _implicit(solver: Callable, A: Callable, b: Any, symmetric: bool) -> Any:
    """``solver(A, b)`` differentiated implicitly; the transposed system is solved with the
    same solver (applied to ``Aᵀ``)."""
    return custom_linear_solve(A, b, solve=solver, transpose_solve=solver, symmetric=symmetric)


# ------------------------------------------------------------------------------------------
# cg
# ------------------------------------------------------------------------------------------


class _CGState(NamedTuple):
    x: Any
    r: Any  # the residual b − A x
    gamma: Array  # ⟨r, M r⟩
    p: Any  # the search direction
    k: Any


def _cg_solve(A: Callable, b: Any, *, x0: Any, tol: float, atol: float, maxiter: int,
              M: Callable) -> Any:
    """Preconditioned conjugate gradients: each step moves ``x`` along ``p`` to the minimum
    of the energy ``½ xᵀA x − bᵀx`` there, and the next ``p`` is ``A``-conjugate to it."""
    bound = _residual_bound(b, tol, atol)
    r = _sub(b, A(x0))
    z = M(r)
    dtype = _dtype(z)

    def unconverged(s: _CGState) -> Array:
        rs = s.gamma.real if M is _identity else _vdot_real(s.r, s.r)
        return (rs > bound) & (s.k < maxiter)

    def step(s: _CGState) -> _CGState:
        ap = A(s.p)
        alpha = s.gamma / _vdot_real(s.p, ap).astype(dtype)
        r = _sub(s.r, _scale(alpha, ap))
        z = M(r)
        gamma = _vdot_real(r, z).astype(dtype)
        p = _add(z, _scale(gamma / s.gamma, s.p))
        return _CGState(_add(s.x, _scale(alpha, s.p)), r, gamma, p, s.k + 1)

    start = _CGState(x0, r, _vdot_real(r, z).astype(dtype), z, 0)
    return while_loop(unconverged, step, start).x


# --8<-- [start:cg]
def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solves ``A x = b`` by conjugate gradients, for a symmetric (Hermitian) positive
    definite ``A``: a matrix or a function computing ``A @ x``. ``M`` is a preconditioner,
    an approximation of ``A⁻¹`` (a matrix or a function). Stops when
    ``‖b − A x‖ ≤ max(tol·‖b‖, atol)`` or after ``maxiter`` steps (``10·size`` by default).
    Returns ``(x, None)``; ``x`` has ``b``'s structure.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> a = jnp.array([[4.0, 1.0], [1.0, 3.0]])
        >>> x, _ = jax.scipy.sparse.linalg.cg(a, jnp.array([1.0, 2.0]))
        >>> print(x)
        [0.09090909 0.6363636 ]
    """
    A, b, x0, M = _start(A, b, x0, M)
    maxiter = 10 * _size(b) if maxiter is None else maxiter
    solver = partial(_cg_solve, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # A real positive definite matrix is symmetric: the transposed solve is the same solve.
    real = not any(jnp.iscomplexobj(v) for v in tree_leaves(b))
    return _implicit(solver, A, b, symmetric=real), None
# --8<-- [end:cg]


# ------------------------------------------------------------------------------------------
# bicgstab
# ------------------------------------------------------------------------------------------


class _BiCGStabState(NamedTuple):
    x: Any
    r: Any
    r_hat: Any  # the shadow residual: the first residual, kept
    alpha: Array
    omega: Array
    rho: Array
    p: Any
    q: Any  # A M p
    k: Any  # the step; −10 or −11 after a breakdown (a zero rho, alpha or omega)


def _bicgstab_solve(A: Callable, b: Any, *, x0: Any, tol: float, atol: float, maxiter: int,
                    M: Callable) -> Any:
    """Preconditioned BiCGSTAB: a biconjugate-gradient step, then a one-dimensional
    minimization of the residual (the "stabilizing" step, ``omega``)."""
    bound = _residual_bound(b, tol, atol)

    def unconverged(s: _BiCGStabState) -> Array:
        return (_vdot_real(s.r, s.r) > bound) & (s.k < maxiter) & (s.k >= 0)

    def step(s: _BiCGStabState) -> _BiCGStabState:
        rho = _vdot(s.r_hat, s.r)
        beta = rho / s.rho * s.alpha / s.omega
        p = _add(s.r, _scale(beta, _sub(s.p, _scale(s.omega, s.q))))
        p_hat = M(p)
        q = A(p_hat)
        alpha = rho / _vdot(s.r_hat, q)
        half = _sub(s.r, _scale(alpha, q))  # the residual after the first half-step
        done_at_half = _vdot_real(half, half) < bound
        half_hat = M(half)
        t = A(half_hat)
        omega = _vdot(t, half) / _vdot(t, t)
        x_half = _add(s.x, _scale(alpha, p_hat))
        x = tree_map(partial(jnp.where, done_at_half), x_half,
                     _add(x_half, _scale(omega, half_hat)))
        r = tree_map(partial(jnp.where, done_at_half), half, _sub(half, _scale(omega, t)))
        k = jnp.where((omega == 0) | (alpha == 0), -11, s.k + 1)
        k = jnp.where(rho == 0, -10, k)
        return _BiCGStabState(x, r, s.r_hat, alpha, omega, rho, p, q, k)

    r = _sub(b, A(x0))
    one = jnp.ones((), _dtype(b))
    return while_loop(unconverged, step, _BiCGStabState(x0, r, r, one, one, one, r, r, 0)).x


# --8<-- [start:bicgstab]
def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solves ``A x = b`` by BiCGSTAB, for any square ``A`` (a matrix or a function computing
    ``A @ x``); the arguments are ``cg``'s. Returns ``(x, None)``.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> a = jnp.array([[3.0, 1.0], [-1.0, 2.0]])
        >>> x, _ = jax.scipy.sparse.linalg.bicgstab(a, jnp.array([4.0, 1.0]))
        >>> print(x.round(5))
        [1. 1.]
    """
    A, b, x0, M = _start(A, b, x0, M)
    maxiter = 10 * _size(b) if maxiter is None else maxiter
    solver = partial(_bicgstab_solve, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    return _implicit(solver, A, b, symmetric=False), None
# --8<-- [end:bicgstab]


# ------------------------------------------------------------------------------------------
# gmres
# ------------------------------------------------------------------------------------------


def _normalized(x: Any, thresh: Any = None) -> tuple[Any, Array]:
    """``(x / ‖x‖, ‖x‖)``, or ``(0, 0)`` when ``‖x‖`` is at most ``thresh`` (by default the
    dtype's epsilon): a vector that small is taken to be zero."""
    norm = _norm(x)
    dtype = _dtype(x)
    thresh = jnp.finfo(norm.dtype).eps if thresh is None else thresh
    big = norm > jnp.asarray(thresh).astype(dtype).real
    unit = tree_map(lambda v: jnp.where(big, v / norm.astype(dtype), 0.0), x)
    return unit, jnp.where(big, norm, 0.0)


def _arnoldi_step(k: Any, A: Callable, M: Callable, V: Any, H: Array) -> tuple[Any, Array, Array]:
    """Adds the Krylov vector ``M A V[:, k]``, made orthonormal to ``V[:, :k+1]``, as column
    ``k + 1`` of ``V``, its overlaps with them as row ``k`` of ``H``. Returns whether it was
    zero (the Krylov space is invariant: the breakdown that means the answer is in it).

    NB: JAX orthogonalizes in a loop that may repeat the projection; with its
    ``max_iterations=2`` it runs once, as here (one classical Gram–Schmidt projection)."""
    dtype = _dtype(V)
    v = M(A(tree_map(lambda X: X[..., k], V)))
    _, v_norm = _normalized(v)
    h = sum(jnp.einsum("...n,...->n", X.conj(), y)
            for X, y in zip(tree_leaves(V), tree_leaves(v)))
    v = _sub(v, tree_map(lambda X: jnp.dot(X, h), V))
    unit, new_norm = _normalized(v, thresh=jnp.finfo(dtype).eps * v_norm)
    V = tree_map(lambda X, u: X.at[..., k + 1].set(u), V, unit)
    H = H.at[k, :].set(h.at[k + 1].set(new_norm.astype(dtype)))
    return V, H, new_norm == 0.0


def _krylov_basis(unit_residual: Any, restart: int) -> Any:
    """``V``: the unit residual as the first of ``restart + 1`` columns (the others zero)."""
    return tree_map(lambda v: jnp.pad(v[..., None], ((0, 0),) * v.ndim + ((0, restart),)),
                    unit_residual)


def _rotate(v: Array, i: Any, cs: Array, sn: Array) -> Array:
    """``v`` with the Givens rotation ``(cs, sn)`` applied to its entries ``i, i + 1``."""
    a, b = v[i], v[i + 1]
    v = v.at[i].set(cs.conj() * a - sn.conj() * b)
    return v.at[i + 1].set(sn * a + cs * b)


def _givens(a: Array, b: Array) -> tuple[Array, Array]:
    """The rotation ``(cs, sn)`` that zeroes ``b`` against ``a``, dividing by the larger."""
    b_zero, a_smaller = abs(b) == 0, abs(a) < abs(b)
    t = -jnp.where(a_smaller, a, b) / jnp.where(a_smaller, b, a)
    r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    cs = jnp.where(b_zero, 1, jnp.where(a_smaller, r * t, r))
    sn = jnp.where(b_zero, 0, jnp.where(a_smaller, r, r * t))
    return cs, sn


def _restart_result(A: Callable, b: Any, M: Callable, x0: Any, V: Any, y: Array
                    ) -> tuple[Any, Any, Array]:
    """``x = x0 + V y`` and its preconditioned residual, as a unit vector and a norm."""
    x = _add(x0, tree_map(lambda X: jnp.dot(X[..., :-1], y), V))
    unit, norm = _normalized(M(_sub(b, A(x))))
    return x, unit, norm


def _gmres_incremental(A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Array,
                       ptol: Array, restart: int, M: Callable) -> tuple[Any, Any, Array]:
    """One restart, factoring ``H = QR`` as it grows (a Givens rotation per row), which gives
    the residual norm at each step: it stops early once that is below ``ptol``."""
    dtype = _dtype(b)
    beta = jnp.zeros(restart + 1, dtype).at[0].set(residual_norm.astype(dtype))
    start = (0, residual_norm, _krylov_basis(unit_residual, restart),
             jnp.eye(restart, restart + 1, dtype=dtype), beta, jnp.zeros((restart, 2), dtype))

    def step(carry):
        k, _, V, R, beta, givens = carry
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row = fori_loop(0, k, lambda i, row: _rotate(row, i, *givens[i, :]), H[k, :])
        givens = givens.at[k, :].set(jnp.stack(_givens(row[k], row[k + 1])))
        R = R.at[k, :].set(_rotate(row, k, *givens[k, :]))
        beta = _rotate(beta, k, *givens[k, :])
        return k + 1, abs(beta[k + 1]), V, R, beta, givens

    _, _, V, R, beta, _ = while_loop(lambda c: (c[0] < restart) & (c[1] > ptol), step, start)
    y = scipy_linalg.solve_triangular(R[:, :-1].T, beta[:-1])
    return _restart_result(A, b, M, x0, V, y)


def _gmres_batched(A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Array,
                   ptol: Array, restart: int, M: Callable) -> tuple[Any, Any, Array]:
    """One restart: the whole Krylov basis (unless it breaks down), then the least-squares
    problem ``min ‖Hᵀ y − ‖r‖ e₁‖`` solved at once, by its normal equations."""
    del ptol  # no residual norm until the end: no early stop
    dtype = _dtype(b)
    start = (_krylov_basis(unit_residual, restart), jnp.eye(restart, restart + 1, dtype=dtype),
             jnp.asarray(False), 0)

    def step(carry):
        V, H, _, k = carry
        return (*_arnoldi_step(k, A, M, V, H), k + 1)

    V, H, _, _ = while_loop(lambda c: (c[3] < restart) & ~c[2], step, start)
    beta = jnp.zeros(restart + 1, dtype).at[0].set(residual_norm.astype(dtype))
    a = H.T
    y = scipy_linalg.solve(a.T.conj() @ a, a.T.conj() @ beta, assume_a="pos")
    return _restart_result(A, b, M, x0, V, y)


_RESTARTS = {"incremental": _gmres_incremental, "batched": _gmres_batched}


def _gmres_solve(A: Callable, b: Any, *, x0: Any, atol: Array, ptol: Array, restart: int,
                 maxiter: int, M: Callable, one_restart: Callable) -> Any:
    """Restarts GMRES from the last answer until the residual is below ``atol`` (``ptol``
    bounds the preconditioned residual within a restart), at most ``maxiter`` times."""
    unit, norm = _normalized(M(_sub(b, A(x0))))

    def step(carry):
        x, k, unit, norm = carry
        x, unit, norm = one_restart(A, b, x, unit, norm, ptol, restart, M)
        return x, k + 1, unit, norm

    start = (x0, 0, unit, norm)
    return while_loop(lambda c: (c[1] < maxiter) & (c[3] > atol), step, start)[0]


# --8<-- [start:gmres]
def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
          restart: int = 20, maxiter: int | None = None, M: Any = None,
          solve_method: str = "batched") -> tuple[Any, Array]:
    """Solves ``A x = b`` by restarted GMRES, for any square ``A``: each restart finds the
    ``x`` of least residual in a Krylov space of dimension ``restart`` around the last one.
    ``maxiter`` bounds the restarts (``10·size`` by default). ``solve_method``:
    ``"incremental"`` factors the small least-squares problem as it grows (and can stop a
    restart early), ``"batched"`` solves it once per restart. Returns ``(x, info)``, ``info``
    0, or −1 when ``x`` holds NaNs.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> a = jnp.array([[3.0, 1.0], [-1.0, 2.0]])
        >>> x, info = jax.scipy.sparse.linalg.gmres(a, jnp.array([4.0, 1.0]))
        >>> print(x.round(5), info)
        [1. 1.] 0
    """
    if solve_method not in _RESTARTS:
        raise ValueError(f"gmres: solve_method must be 'incremental' or 'batched', got "
                         f"{solve_method!r}.")
    A, b, x0, M = _start(A, b, x0, M, check_shapes=False)  # (JAX checks the structure only)
    size = _size(b)
    b_norm = _norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)
    solver = partial(_gmres_solve, x0=x0, atol=atol, ptol=ptol, restart=min(restart, size),
                     maxiter=10 * size if maxiter is None else maxiter, M=M,
                     one_restart=_RESTARTS[solve_method])
    x = _implicit(solver, A, b, symmetric=False)
    return x, jnp.where(jnp.isnan(_norm(x)), -1, 0)
# --8<-- [end:gmres]
