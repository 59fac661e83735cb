"""The line search of ``jax.scipy.optimize``: a step along a descent direction that satisfies
the strong Wolfe conditions (Nocedal and Wright, *Numerical Optimization*, 1999, algorithms
3.5 and 3.6), with JAX's choices, so that a minimizer takes the steps JAX's takes.

Along ``x + t p`` the function is ``phi(t)``, its slope ``dphi(t) = grad f(x + t p) . p``. A
step ``t`` is accepted when it decreases ``phi`` enough (``phi(t) <= phi(0) + c1 t dphi(0)``,
the first condition) and flattens the slope (``|dphi(t)| <= c2 |dphi(0)|``, the second). The
search tries ``t`` = a first guess, then doubles it, until a step is accepted or an interval
is found that holds one; *zoom* then narrows the interval, each new trial step the minimum of
a cubic through three known points, else of a quadratic through two, else the midpoint.

Both loops are written as ``lax.while_loop`` bodies (every branch a ``jnp.where``, as JAX
writes them) and run by ``extension.while_loop_eager_or_traced``: eagerly in stage 1, traced
under ``jit``.

NB: JAX (jax/_src/scipy/optimize/line_search.py) runs zoom twice each step, on the interval
``[t_prev, t]`` and on ``[t, t_prev]``, one of them passed through; here one zoom runs on
whichever interval the step chose, with the same results and one loop fewer to compile. As
JAX's, a zoom on ``[t, t_prev]`` (the slope turned positive) has a negative width, which its
first step counts as failed: it tries one point, and the search fails unless that point is
accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from .. import numpy as jnp
from ..autodiff import value_and_grad
from ..extension import while_loop_eager_or_traced
from ..numpy.promotion import promote_inexact
from ..precision import Precision

_dot = partial(jnp.dot, precision=Precision.HIGHEST)


class LineSearchResults(NamedTuple):
    """The end of a line search: whether it ``failed`` (no step satisfies the strong Wolfe
    conditions), its ``nit`` (``k``: ``nit + 1``), ``nfev`` and ``ngev`` (evaluations of
    ``f`` and of its gradient), the step ``a_k``, ``f`` and its gradient there (``f_k``,
    ``g_k``), and its ``status``: 0 a step was found, 1 zoom failed, 3 ``maxiter`` steps
    were tried."""
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


class _Point(NamedTuple):
    """A trial step ``a`` with ``phi`` and ``dphi`` there."""
    a: Any
    phi: Any
    dphi: Any


def _pick(flag: Any, new: Any, old: Any) -> Any:
    """``new`` where ``flag`` holds, else ``old``, leaf by leaf."""
    return type(old)(*(jnp.where(flag, n, o) for n, o in zip(new, old)))


def _cubic_minimum(lo: _Point, hi: _Point, a_c: Any, phi_c: Any) -> Any:
    """Where the cubic through ``(lo.a, lo.phi)`` with slope ``lo.dphi``, ``(hi.a, hi.phi)``
    and ``(a_c, phi_c)`` has its minimum (NaN when it has none). JAX solves for the cubic's
    two leading coefficients with a 2x2 matrix product; here they are written out."""
    slope, db, dc = lo.dphi, hi.a - lo.a, a_c - lo.a
    denominator = (db * dc) ** 2 * (db - dc)
    rise_b, rise_c = hi.phi - lo.phi - slope * db, phi_c - lo.phi - slope * dc
    a3 = (dc ** 2 * rise_b + -db ** 2 * rise_c) / denominator
    a2 = (-dc ** 3 * rise_b + db ** 3 * rise_c) / denominator
    return lo.a + (-a2 + jnp.sqrt(a2 * a2 - 3. * a3 * slope)) / (3. * a3)


def _quadratic_minimum(lo: _Point, hi: _Point) -> Any:
    """Where the parabola through ``(lo.a, lo.phi)`` with slope ``lo.dphi`` and through
    ``(hi.a, hi.phi)`` has its minimum."""
    db = hi.a - lo.a
    curvature = (hi.phi - lo.phi - lo.dphi * db) / (db ** 2)
    return lo.a - lo.dphi / (2. * curvature)


class _Zoom(NamedTuple):
    done: Any
    failed: Any
    j: Any
    lo: _Point      # the end with the lower phi, whose slope points into the interval
    hi: _Point
    a_rec: Any      # the third point the cubic goes through: the end replaced last
    phi_rec: Any
    star: _Point    # the accepted step
    g_star: Any
    nfev: Any


def _zoom(phi_dphi_g: Callable, too_high: Callable, flat_enough: Callable, lo: _Point,
          hi: _Point, g_0: Any, pass_through: Any) -> _Zoom:
    """Algorithm 3.6: narrows ``[lo.a, hi.a]`` until a step there satisfies the strong Wolfe
    conditions; gives up when the interval is narrower than 1e-5 (1e-10 in 64 bits) or after
    30 steps. ``pass_through``: run no step at all."""
    threshold = 1e-5 if jnp.finfo(jnp.result_type(lo.a)).bits < 64 else 1e-10

    def body(s: _Zoom) -> _Zoom:
        width = s.hi.a - s.lo.a
        left, right = jnp.minimum(s.hi.a, s.lo.a), jnp.maximum(s.hi.a, s.lo.a)
        failed = s.failed | (width <= threshold)
        cubic = _cubic_minimum(s.lo, s.hi, s.a_rec, s.phi_rec)  # NaN fails the bounds check
        use_cubic = (s.j > 0) & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
        quadratic = _quadratic_minimum(s.lo, s.hi)
        use_quadratic = (~use_cubic & (quadratic > left + 0.1 * width)
                         & (quadratic < right - 0.1 * width))
        a_j = jnp.where(use_cubic, cubic,
                        jnp.where(use_quadratic, quadratic, (s.lo.a + s.hi.a) / 2.))
        phi_j, dphi_j, g_j = phi_dphi_g(a_j)
        point = _Point(a_j, phi_j.astype(s.lo.phi.dtype), dphi_j.astype(s.lo.dphi.dtype))
        g_j = g_j.astype(s.g_star.dtype)
        # The new point replaces the high end (not low enough), is accepted (flat enough), or
        # replaces the low end, which becomes the high end first if the slope there points
        # out of the interval.
        to_hi = too_high(point.a, point.phi) | (point.phi >= s.lo.phi)
        accept = flat_enough(point.dphi) & ~to_hi
        to_lo = ~to_hi & ~accept
        lo_to_hi = (point.dphi * (s.hi.a - s.lo.a) >= 0.) & to_lo
        hi = _pick(to_hi, point, _pick(lo_to_hi, s.lo, s.hi))
        replaced_hi = to_hi | lo_to_hi
        a_rec = jnp.where(replaced_hi, s.hi.a, jnp.where(to_lo, s.lo.a, s.a_rec))
        phi_rec = jnp.where(replaced_hi, s.hi.phi, jnp.where(to_lo, s.lo.phi, s.phi_rec))
        j = s.j + 1
        return _Zoom(done=s.done | accept, failed=failed | (j >= 30), j=j,
                     lo=_pick(to_lo, point, s.lo), hi=hi, a_rec=a_rec, phi_rec=phi_rec,
                     star=_pick(accept, point, s.star),
                     g_star=jnp.where(accept, g_j, s.g_star), nfev=s.nfev + 1)

    start = _Zoom(done=jnp.asarray(False), failed=jnp.asarray(False), j=jnp.asarray(0), lo=lo,
                  hi=hi, a_rec=(lo.a + hi.a) / 2., phi_rec=(lo.phi + hi.phi) / 2.,
                  star=_Point(jnp.ones_like(lo.a), lo.phi, lo.dphi), g_star=g_0,
                  nfev=jnp.asarray(0))
    return while_loop_eager_or_traced(lambda s: ~s.done & ~pass_through & ~s.failed, body,
                                      start, name="jax.scipy.optimize.minimize")


class _Search(NamedTuple):
    done: Any
    failed: Any
    i: Any
    prev: _Point    # the step tried before (0 at first)
    nfev: Any
    star: _Point
    g_star: Any


def line_search(f: Callable, xk: Any, pk: Any, old_fval: Any = None, old_old_fval: Any = None,
                gfk: Any = None, c1: float = 1e-4, c2: float = 0.9,
                maxiter: int = 20) -> LineSearchResults:
    """Algorithm 3.5: a step ``a_k`` along the descent direction ``pk`` from ``xk`` that
    satisfies the strong Wolfe conditions with constants ``c1``, ``c2``, in at most
    ``maxiter`` trial steps. ``old_fval``, ``gfk``: ``f`` and its gradient at ``xk``, if
    known; ``old_old_fval``: ``f`` at the previous iterate, which sets the first trial step
    (as SciPy does: the step that would repeat the last decrease, at most 1).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> r = line_search(lambda x: jnp.sum(x ** 2), jnp.array([1.0]), jnp.array([-1.0]))
        >>> print(r.a_k, r.f_k, r.failed)
        1.0 0.0 False
    """
    xk, pk = promote_inexact(xk, pk)

    def phi_dphi_g(t):
        phi, g = value_and_grad(f)(xk + jnp.array(t, dtype=pk.dtype) * pk)
        return phi, jnp.real(_dot(g, pk)), g

    given = old_fval is not None and gfk is not None
    if given:
        phi_0, dphi_0 = old_fval, jnp.real(_dot(gfk, pk))
    else:
        phi_0, dphi_0, gfk = phi_dphi_g(0)
    if old_old_fval is None:
        first = 1
    else:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        first = jnp.where(candidate > 1, 1.0, candidate)

    def too_high(a, phi):  # the first condition fails
        return phi > phi_0 + c1 * a * dphi_0

    def flat_enough(dphi):  # the second condition holds
        return jnp.abs(dphi) <= -c2 * dphi_0

    def body(s: _Search) -> _Search:
        # No largest step: the guess doubles, as in SciPy. JAX counts from 1, as Nocedal and
        # Wright do (SciPy from 0).
        a_i = jnp.where(s.i == 1, first, s.prev.a * 2.)
        phi_i, dphi_i, g_i = phi_dphi_g(a_i)
        point = _Point(a_i, phi_i, dphi_i)
        bracket_before = too_high(a_i, phi_i) | ((phi_i >= s.prev.phi) & (s.i > 1))
        accept = flat_enough(dphi_i) & ~bracket_before
        bracket_after = (dphi_i >= 0.) & ~bracket_before & ~accept
        zoom = _zoom(phi_dphi_g, too_high, flat_enough,
                     _pick(bracket_before, s.prev, point), _pick(bracket_before, point, s.prev),
                     gfk, ~(bracket_before | bracket_after))
        zoomed = bracket_before | bracket_after
        star = _pick(zoomed, zoom.star, _pick(accept, point, s.star))
        g_star = jnp.where(zoomed, zoom.g_star, jnp.where(accept, g_i, s.g_star))
        return _Search(done=s.done | zoomed | accept, failed=s.failed | (zoomed & zoom.failed),
                       i=s.i + 1, prev=point, nfev=s.nfev + 1 + zoom.nfev, star=star,
                       g_star=g_star)

    dtype = jnp.result_type(dphi_0)
    start = _Search(done=jnp.asarray(False), failed=jnp.asarray(False), i=jnp.asarray(1),
                    prev=_Point(jnp.zeros((), dtype), phi_0, dphi_0),
                    nfev=jnp.asarray(0 if given else 1),
                    star=_Point(jnp.zeros((), dtype), phi_0, dphi_0), g_star=gfk)
    s = while_loop_eager_or_traced(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body,
                                   start, name="jax.scipy.optimize.minimize")
    status = jnp.where(s.failed, 1, jnp.where(s.i > maxiter, 3, 0))
    # Below 64 bits a step under 1e-8 would leave the iterate where it is: JAX floors it.
    a_k = s.star.a
    if jnp.finfo(a_k.dtype).bits != 64:
        a_k = jnp.where(jnp.abs(a_k) < 1e-8, jnp.sign(a_k) * 1e-8, a_k)
    return LineSearchResults(failed=s.failed | ~s.done, nit=s.i - 1, nfev=s.nfev, ngev=s.nfev,
                             k=s.i, a_k=a_k, f_k=s.star.phi, g_k=s.g_star, status=status)


__all__ = ["LineSearchResults", "line_search"]
