"""``jax.scipy.optimize``: ``minimize`` by BFGS or L-BFGS, and its ``OptimizeResults``.

Both methods are quasi-Newton: each iteration steps along ``-H g``, ``g`` the gradient (by
``value_and_grad``) and ``H`` an estimate of the inverse Hessian, as far as the strong-Wolfe
line search (``line_search.py``) says, then updates ``H`` from the step ``s`` and the change
of gradient ``y``. BFGS keeps ``H`` as a matrix (Nocedal and Wright, *Numerical
Optimization*, algorithm 6.1); L-BFGS keeps the last ``maxcor`` pairs ``(s, y)`` and applies
``H`` by the two-loop recursion (algorithm 7.4), which takes memory linear in ``n``.

The iterations are a ``lax.while_loop`` body, run by ``extension.while_loop_eager_or_traced``:
eagerly in stage 1, as one traced loop under ``jit`` (stage 2). The steps, counts and status
codes are JAX's (jax/_src/scipy/optimize/bfgs.py and _lbfgs.py).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.scipy.optimize import minimize
    >>> r = minimize(lambda x: jnp.sum((x - 2.0) ** 2), jnp.zeros(2), method="BFGS")
    >>> print(r.x, r.success, r.status, r.nit)
    [2. 2.] True 0 2
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..autodiff import value_and_grad
from ..extension import while_loop_eager_or_traced
from ..precision import Precision
from ..typing import Array
from .line_search import line_search

__all__ = ["OptimizeResults", "minimize"]

_dot = partial(jnp.dot, precision=Precision.HIGHEST)
_LOOP = "jax.scipy.optimize.minimize"


class OptimizeResults(NamedTuple):
    """What ``minimize`` found.

    Attributes:
        x: the final iterate.
        success: whether the gradient's norm fell below ``gtol`` (and no line search failed).
        status: 0 converged; BFGS: 1 ``maxiter`` iterations, 3 the line search's zoom failed,
            5 the line search ran out of steps, -1 another end; L-BFGS: 1 ``maxiter``,
            2 ``maxfun``, 3 ``maxgrad`` reached, 4 too little decrease (``ftol``), 5 the line
            search failed.
        fun: the function's value at ``x``.
        jac: its gradient there.
        hess_inv: the estimate of the inverse Hessian (BFGS), or None (L-BFGS).
        nfev: how many times the function was evaluated.
        njev: how many times its gradient was (with the function: the same count).
        nit: how many iterations ran.
    """
    x: Array
    success: bool | Array
    status: int | Array
    fun: Array
    jac: Array
    hess_inv: Array | None
    nfev: int | Array
    njev: int | Array
    nit: int | Array


def minimize(fun: Callable, x0: Array, args: tuple = (), *, method: str,
             tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """The minimum of ``fun(x, *args)`` (a real scalar) over a 1-D ``x``, from ``x0``.

    ``method``: ``"BFGS"`` or ``"l-bfgs-experimental-do-not-rely-on-this"`` (in any case).
    ``tol`` is accepted and, as in JAX, unused: ``options`` set the tolerances. BFGS's
    options: ``maxiter`` (default ``200 n``), ``norm`` (the order of the gradient's norm,
    default ``inf``), ``gtol`` (1e-5), ``line_search_maxiter`` (10). L-BFGS's: ``maxiter``,
    ``norm``, ``maxcor`` (10 pairs kept), ``ftol`` (2.22e-9: stop when ``f`` decreases by
    less), ``gtol``, ``maxfun``, ``maxgrad`` (limits on the evaluations), ``maxls`` (20 line
    search steps); without any of ``maxiter``, ``maxfun`` and ``maxgrad``, ``maxiter`` is
    ``200 n``. Works under ``jit`` and ``vmap``, and ``jvp``. Reverse mode: under ``jit``,
    JAX's error (a ``while_loop`` has none); eagerly, where JAX raises the same, ``grad``
    here goes through the iterations the loop took (see "Differences from JAX").

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> rosen = lambda x: jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> r = minimize(rosen, jnp.array([0.5, 0.5]), method="BFGS")
        >>> print(jnp.round(r.x, 3), r.success, r.nit)
        [1. 1.] True 14
    """
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple of fun's extra arguments, got "
                        f"{type(args).__name__} {args!r}; write args=(a,) for one.")
    if len(np.shape(x0)) != 1:  # (JAX checks nothing, and fails later: see Differences)
        raise ValueError(f"minimize: x0 must be a 1-D array of the parameters, got shape "
                         f"{np.shape(x0)}. Ravel them (jax.flatten_util.ravel_pytree for a "
                         f"pytree) and reshape them inside fun.")

    def fun_with_args(x):
        return fun(x, *args)

    if method.lower() == "bfgs":
        r = _minimize_bfgs(fun_with_args, x0, **options)
        hess_inv = r.H_k
    elif method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        r = _minimize_lbfgs(fun_with_args, x0, **options)
        hess_inv = None
    else:
        raise ValueError(f"minimize: method {method!r} is not one of 'BFGS' and "
                         f"'l-bfgs-experimental-do-not-rely-on-this', JAX's two.")
    return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                           fun=r.f_k, jac=r.g_k, hess_inv=hess_inv, nfev=r.nfev, njev=r.ngev,
                           nit=r.k)


class _BFGS(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _minimize_bfgs(fun: Callable, x0: Any, maxiter: int | None = None, norm: Any = np.inf,
                   gtol: float = 1e-5, line_search_maxiter: int = 10) -> _BFGS:
    """BFGS, algorithm 6.1 of Nocedal and Wright: the inverse Hessian's estimate is
    ``(I - rho s y^T) H (I - rho y s^T) + rho s s^T``, ``rho = 1 / (y . s)``, kept as it was
    when ``y . s`` is 0."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    eye = jnp.eye(d, dtype=x0.dtype)
    f_0, g_0 = value_and_grad(fun)(x0)
    zero = jnp.asarray(0)
    start = _BFGS(converged=jnp.linalg.norm(g_0, ord=norm) < gtol, failed=jnp.asarray(False),
                  k=zero, nfev=zero + 1, ngev=zero + 1, x_k=jnp.asarray(x0, g_0.dtype), f_k=f_0,
                  g_k=g_0, H_k=eye, old_old_fval=f_0 + jnp.linalg.norm(g_0) / 2, status=zero,
                  line_search_status=zero)

    def body(s: _BFGS) -> _BFGS:
        p_k = -_dot(s.H_k, s.g_k)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                         gfk=s.g_k, maxiter=line_search_maxiter)
        step = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho = jnp.reciprocal(_dot(y_k, step))
        w = eye.astype(rho.dtype) - rho * (step[:, None] * y_k[None, :])
        H_k = (jnp.einsum("ij,jk,lk", w, s.H_k, w, precision=Precision.HIGHEST)
               + rho * step[:, None] * step[None, :])
        return s._replace(converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol,
                          failed=ls.failed, k=s.k + 1, nfev=s.nfev + ls.nfev,
                          ngev=s.ngev + ls.ngev, x_k=s.x_k + step, f_k=ls.f_k, g_k=ls.g_k,
                          H_k=jnp.where(jnp.isfinite(rho), H_k, s.H_k), old_old_fval=s.f_k,
                          line_search_status=ls.status)

    s = while_loop_eager_or_traced(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body,
                                   start, name=_LOOP)
    # 2 + the line search's status: 3 its zoom failed, 5 it ran out of steps.
    status = jnp.where(s.converged, 0, jnp.where(
        s.k == maxiter, 1, jnp.where(s.failed, 2 + s.line_search_status, -1)))
    return s._replace(status=status)


class _LBFGS(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    s_history: Any  # the last maxcor steps, the newest last (zeros before there are as many)
    y_history: Any
    rho_history: Any
    gamma: Any      # (s . y) / (y . y): the scale of the initial inverse Hessian
    status: Any
    ls_status: Any


def _minimize_lbfgs(fun: Callable, x0: Any, maxiter: float | None = None, norm: Any = np.inf,
                    maxcor: int = 10, ftol: float = 2.220446049250313e-09,
                    gtol: float = 1e-05, maxfun: float | None = None,
                    maxgrad: float | None = None, maxls: int = 20) -> _LBFGS:
    """L-BFGS, algorithm 7.5 of Nocedal and Wright, for complex ``x`` too (Sorber, Van Barel
    and De Lathauwer, 2012). Each limit is checked against the counts before the iteration
    that reaches it, as JAX does: ``maxiter=m`` runs ``m + 1`` iterations."""
    d = len(x0)
    dtype = jnp.result_type(x0)
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200
    f_0, g_0 = value_and_grad(fun)(x0)
    zero = jnp.asarray(0)
    start = _LBFGS(converged=jnp.asarray(False), failed=jnp.asarray(False), k=zero,
                   nfev=zero + 1, ngev=zero + 1, x_k=jnp.asarray(x0, g_0.dtype), f_k=f_0,
                   g_k=g_0, s_history=jnp.zeros((maxcor, d), dtype=dtype),
                   y_history=jnp.zeros((maxcor, d), dtype=dtype),
                   rho_history=jnp.zeros((maxcor,), dtype=dtype),
                   gamma=jnp.ones((), g_0.dtype), status=zero, ls_status=zero)

    def body(s: _LBFGS) -> _LBFGS:
        p_k = _two_loop_recursion(s)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
        step = jnp.asarray(ls.a_k).astype(p_k.dtype) * p_k
        y_k = ls.g_k - s.g_k
        curvature = jnp.real(_dot(y_k, step))
        status = jnp.where(s.f_k - ls.f_k < ftol, 4, jnp.asarray(0))
        for limit, count, code in ((maxgrad, s.ngev, 3), (maxfun, s.nfev, 2),
                                   (maxiter, s.k, 1)):
            if limit is not None:
                status = jnp.where(count >= limit, code, status)
        status = jnp.where(ls.failed, 5, status)
        converged = jnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return s._replace(
            converged=converged, failed=(status > 0) & ~converged, k=s.k + 1,
            nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev,
            x_k=(s.x_k + step).astype(s.x_k.dtype), f_k=ls.f_k.astype(s.f_k.dtype),
            g_k=ls.g_k.astype(s.g_k.dtype),
            s_history=_push(s.s_history, step), y_history=_push(s.y_history, y_k),
            rho_history=_push(s.rho_history, jnp.reciprocal(curvature).astype(y_k.dtype)),
            gamma=(curvature / jnp.real(_dot(jnp.conj(y_k), y_k))).astype(s.g_k.dtype),
            status=jnp.where(converged, 0, status), ls_status=ls.status)

    return while_loop_eager_or_traced(lambda s: ~s.converged & ~s.failed, body, start,
                                      name=_LOOP)


def _two_loop_recursion(s: _LBFGS) -> Any:
    """The direction ``-H g`` from the pairs kept: newest to oldest, then back. JAX loops
    over the ``min(k, maxcor)`` pairs there are; these loops go over all ``maxcor`` slots
    (the empty ones, all zeros, change nothing), as loops, not unrolled: under ``jit`` two
    small loops compile faster than ``2 maxcor`` copies of their bodies."""
    dtype = s.rho_history.dtype
    size = s.rho_history.shape[0]

    def newest_first(carry):
        j, q, alphas = carry
        i = size - 1 - j
        alpha = s.rho_history[i] * _dot(jnp.conj(s.s_history[i]), q).real.astype(dtype)
        return j + 1, q - alpha * jnp.conj(s.y_history[i]), alphas.at[i].set(alpha)

    def oldest_first(carry):
        i, q = carry
        beta = s.rho_history[i] * _dot(s.y_history[i], q).real.astype(dtype)
        return i + 1, q + (alphas[i] - beta) * s.s_history[i]

    zero = jnp.asarray(0)
    _, q, alphas = while_loop_eager_or_traced(
        lambda carry: carry[0] < size, newest_first,
        (zero, -jnp.conj(s.g_k), jnp.zeros_like(s.rho_history)), name=_LOOP)
    _, q = while_loop_eager_or_traced(lambda carry: carry[0] < size, oldest_first,
                                      (zero, s.gamma * q), name=_LOOP)
    return q


def _push(history: Any, new: Any) -> Any:
    """``history`` with its oldest entry dropped and ``new`` appended."""
    return jnp.roll(history, -1, axis=0).at[-1].set(new)
