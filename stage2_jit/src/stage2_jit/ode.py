"""``jax.experimental.ode.odeint``: the solution of ``dy/dt = func(y, t, *args)`` at given
times, by an adaptive Runge–Kutta method, differentiated by the adjoint method.

The solver is Dormand and Prince's 5(4) pair ("dopri5"). A step of size ``dt`` evaluates
``func`` at six new points and combines the seven slopes twice: into a fifth-order answer,
which it keeps, and a fourth-order one; their difference estimates the step's error. The step
is taken when the root-mean-square of that error, each component measured against
``atol + rtol·|y|``, is at most 1; taken or not, the next size is the last one times
``0.9·ratio^(-1/5)``, at most ×10, never smaller after a taken step and at most ÷5 after a
refused one. The first size is Hairer, Nørsett and Wanner's guess from two slopes.

Steps do not stop at the requested times: they run past each one, and the answer there comes
from a quartic in time fitted over the last step (through its two ends, its midpoint, which
the same seven slopes give, and the slopes at both ends). All of it is a ``lax.scan`` over the
requested times, each advancing a ``lax.while_loop`` of steps.

A ``while_loop`` has no reverse mode, so the solve is a ``custom_vjp``. Its backward pass is
the adjoint method: the cotangent ``a`` of ``y(t)`` obeys ``da/dt = −aᵀ ∂f/∂y``, and the
cotangent of ``args`` gathers ``∫ aᵀ ∂f/∂args dt``. Both are integrated backwards in time,
interval by interval, by the same solver, together with ``y`` itself (recomputed backwards,
not stored step by step: memory does not grow with the number of steps), each output's
cotangent added to ``a`` at its time.

NB: JAX's is jax/experimental/ode.py (its adjoint after Chen et al., "Neural Ordinary
Differential Equations", appendix C), with the same tableau, first step, step control and
quartic, so the answers agree to the solver's accuracy; the steps taken can differ, since
whether one is taken turns on rounding (XLA fuses multiply-adds, NumPy does not: see the
Differences pages). JAX compiles the whole solve with ``jit``; here it runs as the loops of
whoever calls it (interpreted eagerly, compiled under ``jit``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from stage1_autodiff.autodiff import custom_vjp, vjp
from stage1_autodiff.core import Array, Tracer, get_aval
from stage1_autodiff.flatten_util import ravel_pytree
from stage1_autodiff.tree_util import tree_leaves, tree_map, tree_structure, tree_unflatten

from stage1_autodiff import dtypes
from stage1_autodiff import numpy as jnp

from .control_flow import scan, while_loop
from .everyday import closure_convert

__all__ = ["odeint"]

# The Dormand–Prince tableau: stage i+1 is evaluated at ``t + _C[i]·dt`` and
# ``y + dt·Σ_j _A[i][j]·k_j``. The last row is the fifth-order answer's weights: the last stage
# is the slope at the answer, which the next step reuses as its first ("first same as last").
_C = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
# The fifth-order weights minus the fourth-order ones: the error estimate.
_ERROR = (35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
          -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1 / 60)
# Weights of the seven slopes that give y at the middle of the step (Shampine, 1986).
_MIDPOINT = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2,
             -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
             -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)
# The quartic p(s) = a s⁴ + b s³ + c s² + d s + e on s in [0, 1] with p(0) = y0, p(1) = y1,
# p(1/2) = y_mid, p'(0) = dt·f0 and p'(1) = dt·f1: its coefficients (rows) from those five.
_QUARTIC = ((-8.0, -8.0, 16.0, -2.0, 2.0),
            (18.0, 14.0, -32.0, 5.0, -3.0),
            (-11.0, -5.0, 16.0, -4.0, 1.0),
            (0.0, 0.0, 0.0, 1.0, 0.0),
            (1.0, 0.0, 0.0, 0.0, 0.0))


class _Options(NamedTuple):
    rtol: float
    atol: float
    mxstep: float
    hmax: float


class _Solver(NamedTuple):
    """Between steps: the state ``y`` at time ``t``, its slope ``f``, the next step's size,
    and the quartic over the last step taken, from ``last_t`` to ``t``."""
    y: Array
    f: Array
    t: Array
    dt: Array
    last_t: Array
    quartic: Array


def odeint(func: Callable, y0: Any, t: Array, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = np.inf, hmax: float = np.inf) -> Any:
    """The solution of ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``, at each time of
    ``t`` (increasing), by an adaptive Dormand–Prince method. Differentiable (reverse mode,
    by the adjoint method) with respect to ``y0``, ``t``, ``args`` and the floats ``func``
    closes over.

    Args:
        func: the derivative, ``func(y, t, *args)``, a pytree of ``y0``'s size.
        y0: the initial state, an array or a pytree of arrays, of floats.
        t: a 1-D float array of the times to report, the first being ``y0``'s.
        *args: arrays or pytrees of arrays passed on to ``func``.
        rtol: the relative error tolerated per step.
        atol: the absolute error tolerated per step.
        mxstep: the most steps taken between two requested times.
        hmax: the largest step size.

    Returns:
        ``y0``'s pytree, each leaf with a leading axis of ``len(t)``: the state at each time.

    Example:
        >>> import stage2_jit.numpy as jnp
        >>> from stage2_jit.experimental.ode import odeint
        >>> ys = odeint(lambda y, t, k: -k * y, 1.0, jnp.array([0.0, 1.0, 2.0]), 0.5)
        >>> print(jnp.round(ys, 4))
        [1.     0.6065 0.3679]
    """
    _check_arguments(func, t, args, _Options(rtol, atol, mxstep, hmax))
    t = jnp.asarray(t)
    converted, consts = closure_convert(func, y0, t[0], *args)
    return _solve(converted, _Options(rtol, atol, mxstep, hmax), y0, t, *args, *consts)


def _check_arguments(func: Any, t: Any, args: tuple, options: _Options) -> None:
    """Refuse what JAX refuses, with the same classes, before anything is traced."""
    for leaf in tree_leaves(args):
        try:
            get_aval(leaf)
        except TypeError:
            raise TypeError(f"odeint: *args must hold arrays or numbers only (they are passed "
                            f"on to func), got {leaf!r}. Close over other values in func "
                            f"instead.") from None
    if not hasattr(t, "dtype"):
        raise AttributeError(f"odeint: t must be an array of times (it has no dtype), got "
                             f"{type(t).__name__}; pass jnp.asarray(t).")
    if not dtypes.issubdtype(t.dtype, np.floating):
        raise TypeError(f"odeint: t must be an array of floats, got dtype {t.dtype}; convert "
                        f"it, e.g. t.astype(jnp.float32).")
    if np.ndim(t) != 1:  # JAX fails on t[0] for a scalar (IndexError), later for more dims
        error = IndexError if np.ndim(t) == 0 else TypeError
        raise error(f"odeint: t must be 1-D (the times to report), got shape {np.shape(t)}.")
    if not callable(func):
        raise TypeError(f"odeint: func must be a function func(y, t, *args), got "
                        f"{type(func).__name__}.")
    for name, value in options._asdict().items():
        if isinstance(value, Tracer):
            raise ValueError(f"odeint: {name} must be a Python number, not a traced value: it "
                             f"shapes the solver's program, as a static argument of jit.")


def _solve(func: Callable, options: _Options, y0: Any, ts: Array, *args: Any) -> Any:
    """``odeint`` for a ``func`` that closes over no traced floats."""
    y0_flat, unravel = ravel_pytree(y0)
    if not dtypes.is_inexact(y0_flat.dtype):
        raise TypeError(f"odeint: y0 must hold floats (the state changes continuously), got "
                        f"{y0_flat.dtype}; pass floats, e.g. jnp.asarray(y0, jnp.float32).")
    ys = _integrate(_flat_derivative(func, unravel, y0_flat), options, y0_flat, ts, *args)
    return _unravel_rows(ys, y0)


def _flat_derivative(func: Callable, unravel: Callable, y0: Array) -> Callable:
    """``func`` on the state as one vector, like ``y0``: it unravels ``y``, ravels the
    derivative, and checks its size (any pytree of ``y0``'s size will do, as in JAX)."""
    def flat_func(y: Array, t: Array, *args: Any) -> Array:
        dy, _ = ravel_pytree(func(unravel(y), t, *args))
        if dy.size != y0.size:
            # JAX's unravel fails first (ValueError) when y0 is one number, else a broadcast.
            error = ValueError if y0.size == 1 else TypeError
            raise error(f"odeint: func must return a derivative with as many numbers as y0 "
                        f"({y0.size}; a pytree like y0's), it returned {dy.size}.")
        return dy.astype(y0.dtype)

    return flat_func


def _unravel_rows(ys: Array, y0: Any) -> Any:
    """Each row of ``ys`` (a state as one vector) as ``y0``'s pytree, rows stacked."""
    leaves, start = [], 0
    for leaf in tree_leaves(y0):
        shape = np.shape(leaf)
        size = math.prod(shape)
        part = ys[:, start:start + size].reshape((ys.shape[0], *shape))
        leaves.append(part.astype(jnp.result_type(leaf)))
        start += size
    return tree_unflatten(tree_structure(y0), leaves)


@partial(custom_vjp, nondiff_argnums=(0, 1))
def _integrate(func: Callable, options: _Options, y0: Array, ts: Array, *args: Any) -> Array:
    """The states at ``ts`` (rows) of ``dy/dt = func(y, t, *args)``, ``y`` a vector."""
    def f(y, t):
        return func(y, t, *args)

    f0 = f(y0, ts[0])
    dt = _first_step_size(f, ts[0], y0, f0, options)
    start = _Solver(y0, f0, ts[0], dt, ts[0], jnp.stack([y0] * 5))
    _, ys = scan(partial(_advance_to, f, options), start, ts[1:])
    return jnp.concatenate([y0[None], ys])


def _advance_to(f: Callable, options: _Options, solver: _Solver, target: Array
                ) -> tuple[_Solver, Array]:
    """Steps until ``target`` is passed (or ``mxstep`` steps, or a step size of 0); the state
    at ``target`` from the last step's quartic."""
    def more(carry):
        i, s = carry
        return (s.t < target) & (i < options.mxstep) & (s.dt > 0)

    _, solver = while_loop(more, partial(_try_step, f, options), (0, solver))
    where = (target - solver.last_t) / (solver.t - solver.last_t)
    return solver, _polyval(solver.quartic, where.astype(solver.quartic.dtype))


def _try_step(f: Callable, options: _Options, carry: tuple[Array, _Solver]
              ) -> tuple[Array, _Solver]:
    """One step tried: taken if its error is within tolerance; the step size updated."""
    i, s = carry
    y, f_y, error, k = _dopri5_step(f, s.y, s.f, s.t, s.dt)
    ratio = _error_ratio(error, s.y, y, options)
    dt = _next_step_size(s.dt, ratio, options.hmax)
    taken = _Solver(y, f_y, s.t + s.dt, dt, s.t, _fit_quartic(s.y, y, k, s.dt))
    refused = s._replace(dt=dt)
    return i + 1, tree_map(partial(jnp.where, ratio <= 1), taken, refused)


def _dopri5_step(f: Callable, y: Array, f_y: Array, t: Array, dt: Array
                 ) -> tuple[Array, Array, Array, list[Array]]:
    """A step from ``(t, y)``, whose slope is ``f_y``: the new ``y``, its slope, the error
    estimate, and the seven slopes."""
    h = dt.astype(y.dtype)
    ks = [f_y]
    for c, a in zip(_C, _A):
        y_stage = y + h * _combine(a, ks)
        ks.append(f(y_stage, t + c * dt))
    return y_stage, ks[-1], h * _combine(_ERROR, ks), ks


def _combine(weights: tuple[float, ...], vectors: list[Array]) -> Array:
    """``Σ wᵢ·vᵢ`` over the nonzero weights. Python floats, not an array: a traced program
    writes them in as literals, where an array would be a constant operand of the
    ``custom_vjp`` equation, which ``vmap`` of its gradient cannot lift."""
    terms = [w * v for w, v in zip(weights, vectors) if w != 0]
    return sum(terms[1:], terms[0])


def _error_ratio(error: Array, y: Array, y_next: Array, options: _Options) -> Array:
    """The root mean square of the error, each component over its tolerance."""
    tolerance = options.atol + options.rtol * jnp.maximum(jnp.abs(y), jnp.abs(y_next))
    ratio = error / tolerance.astype(error.dtype)
    return jnp.sqrt(jnp.mean(_abs2(ratio)))


def _abs2(x: Array) -> Array:
    return x.real ** 2 + x.imag ** 2 if jnp.iscomplexobj(x) else x ** 2


def _next_step_size(dt: Array, ratio: Array, hmax: float) -> Array:
    """``dt`` scaled for an error ``ratio`` of order 5, within ``[0, hmax]``."""
    smallest = jnp.where(ratio < 1, 1.0, 0.2)  # a step just taken never shrinks the next
    factor = jnp.minimum(10.0, jnp.maximum(ratio ** -0.2 * 0.9, smallest))
    return jnp.clip(jnp.where(ratio == 0, dt * 10.0, dt * factor), 0.0, hmax)


def _first_step_size(f: Callable, t0: Array, y0: Array, f0: Array, options: _Options
                     ) -> Array:
    """A first step size for a method of order 4 (Hairer, Nørsett and Wanner, *Solving
    Ordinary Differential Equations I*, II.4): one that moves ``y`` by about 1% of its size,
    shortened where the slope changes fast."""
    scale = options.atol + jnp.abs(y0) * options.rtol
    d0 = jnp.linalg.norm(y0 / scale.astype(y0.dtype))
    d1 = jnp.linalg.norm(f0 / scale.astype(y0.dtype))
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = f(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale.astype(y0.dtype)) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1 / 5))
    return jnp.clip(jnp.minimum(100 * h0, h1), 0.0, options.hmax)


def _fit_quartic(y0: Array, y1: Array, k: list[Array], dt: Array) -> Array:
    """The coefficients (rows, highest power first) of the quartic over a step, in the
    fraction ``s`` of the step."""
    h = dt.astype(y0.dtype)
    y_mid = y0 + h * _combine(_MIDPOINT, k)
    conditions = [y0, y1, y_mid, h * k[0], h * k[-1]]
    return jnp.stack([_combine(row, conditions) for row in _QUARTIC])


def _polyval(coefficients: Array, s: Array) -> Array:
    out = coefficients[0]
    for c in coefficients[1:]:
        out = out * s + c
    return out


def _integrate_fwd(func: Callable, options: _Options, y0: Array, ts: Array, *args: Any
                   ) -> tuple[Array, tuple]:
    ys = _integrate(func, options, y0, ts, *args)
    return ys, (ys, ts, args)


def _integrate_bwd(func: Callable, options: _Options, residuals: tuple, g: Array) -> tuple:
    """Cotangents of ``y0``, ``ts`` and ``args``, integrating backwards from the last time
    to the first, one interval per step of a reverse ``scan``."""
    ys, ts, args = residuals

    def augmented(state, minus_t, *args):
        # Time runs backwards: the solver's time is −t, so each derivative changes sign.
        y, a, _, _ = state
        y_dot, pullback = vjp(func, y, -minus_t, *args)
        a_dot, t_ct, *args_ct = pullback(a)
        return -y_dot, a_dot, t_ct, tuple(args_ct)

    def back_one_interval(carry, x):
        a, t0_bar, args_bar = carry
        y, t, t_before, g_t, g_before = x
        t_bar = jnp.dot(func(y, t, *args), g_t).real  # moving t moves the output y(t)
        state = (y, a, t0_bar - t_bar, args_bar)
        ends = _solve(augmented, options, state, jnp.stack([-t, -t_before]), *args)
        _, a, t0_bar, args_bar = tree_map(lambda leaf: leaf[1], ends)
        return (a + g_before, t0_bar, args_bar), t_bar

    start = (g[-1], jnp.zeros((), ts.dtype), tree_map(jnp.zeros_like, args))
    xs = (ys[1:], ts[1:], ts[:-1], g[1:], g[:-1])
    (a, t0_bar, args_bar), ts_bar = scan(back_one_interval, start, xs, reverse=True)
    return (a, jnp.concatenate([t0_bar[None], ts_bar]), *args_bar)


_integrate.defvjp(_integrate_fwd, _integrate_bwd)
