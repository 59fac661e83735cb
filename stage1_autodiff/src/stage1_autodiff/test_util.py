"""``check_grads``: derivatives checked against finite differences, to any order.

The check of reverse mode uses the identity ``<ct, J t> = <J^T ct, t>``: the VJP of a random
cotangent, dotted with a random tangent, must equal the cotangent dotted with the numerical
directional derivative. Forward mode is compared with the numerical derivative directly. For
order 2 the same checks run on the functions ``jvp(f)`` and ``vjp(f)`` themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from . import dtypes
from .autodiff import jvp, vjp
from .core import get_aval
from .numpy.promotion import as_value
from .tree_util import tree_flatten, tree_map

_DEFAULT_EPS = {np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-6}
_DEFAULT_TOL = {np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5}


def _wide(x: Any) -> np.ndarray:
    """``x`` in float64, or complex128 for a complex ``x``."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _leaves64(tree: Any) -> list[np.ndarray]:
    return [_wide(leaf) for leaf in tree_flatten(tree)[0]]


def _random_like(tree: Any, rng: np.random.Generator) -> Any:
    def draw(leaf):
        aval = get_aval(as_value(leaf))
        if not dtypes.is_inexact(aval.dtype):
            return leaf
        value = rng.standard_normal(aval.shape)
        if dtypes.is_complex(aval.dtype):
            value = value + 1j * rng.standard_normal(aval.shape)
        return as_value(value.astype(aval.dtype))
    return tree_map(draw, tree)


def _inner(xs: Any, ys: Any) -> float:
    """The real inner product ``Re sum(conj(x) y)`` over the leaves (a dot for real ones)."""
    return sum(float(np.real(np.vdot(x, y))) for x, y in zip(_leaves64(xs), _leaves64(ys)))


def _conj(tree: Any) -> Any:
    return tree_map(lambda x: as_value(np.conj(np.asarray(x))), tree)


def _shift(args: Any, tangents: Any, step: float) -> Any:
    def move(x, t):
        x = as_value(x)
        if not dtypes.is_inexact(get_aval(x).dtype):
            return x
        return as_value((_wide(x) + step * _wide(t)).astype(get_aval(x).dtype))
    return tree_map(move, args, tangents)


def numerical_jvp(f: Callable, args: Sequence[Any], tangents: Sequence[Any],
                  eps: float) -> list[np.ndarray]:
    """Central difference (f(x + eps t) - f(x - eps t)) / 2 eps, leaf by leaf, in float64."""
    ahead = _leaves64(f(*_shift(args, tangents, eps)))
    behind = _leaves64(f(*_shift(args, tangents, -eps)))
    return [(a - b) / (2 * eps) for a, b in zip(ahead, behind)]


def _assert_close(name: str, actual: Any, expected: Any, tol: float) -> None:
    for i, (a, e) in enumerate(zip(_leaves64(actual), _leaves64(expected))):
        if not np.allclose(a, e, atol=tol, rtol=tol, equal_nan=True):
            raise AssertionError(f"{name} mismatch at output leaf {i} (tolerance {tol}):\n"
                                 f"  got      {a}\n  expected {e}")


def check_jvp(f: Callable, args: Sequence[Any], eps: float, tol: float,
              rng: np.random.Generator) -> None:
    tangents = _random_like(tuple(args), rng)
    _, out_dot = jvp(f, tuple(args), tangents)
    _assert_close("JVP", out_dot, numerical_jvp(f, args, tangents, eps), tol)


def check_vjp(f: Callable, args: Sequence[Any], eps: float, tol: float,
              rng: np.random.Generator) -> None:
    out, f_vjp = vjp(f, *args)
    tangents = _random_like(tuple(args), rng)
    cotangent = _random_like(out, rng)
    numerical = numerical_jvp(f, args, tangents, eps)
    expected = _inner(numerical, cotangent)
    # (JAX's convention: the VJP is ct -> ct J, so conj(vjp(conj(ct))) is the adjoint's)
    actual = _inner(tangents, _conj(f_vjp(_conj(cotangent))))
    scale = max(1.0, abs(expected))
    if abs(actual - expected) > tol * scale:
        raise AssertionError(f"VJP mismatch: <vjp(ct), t> = {actual}, but <ct, J t> computed "
                             f"numerically = {expected} (tolerance {tol * scale}).")


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None, seed: int = 0) -> None:
    """Checks forward and reverse derivatives of ``f`` at ``args`` up to ``order``.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.check_grads(jnp.sin, (jnp.array([0.5, 1.0]),), order=2)
    """
    args = tuple(as_value(a) if not isinstance(a, (tuple, list, dict)) else a for a in args)
    float_dtypes = [get_aval(as_value(x)).dtype for x in tree_flatten(args)[0]]
    widest = max((dtypes.real_dtype(d) for d in float_dtypes if dtypes.is_inexact(d)),
                 key=lambda d: d.itemsize, default=np.dtype(np.float32))
    eps = eps or _DEFAULT_EPS[widest]
    tol = max(atol or 0.0, rtol or 0.0) or _DEFAULT_TOL[widest]
    rng = np.random.default_rng(seed)

    def check(fun: Callable, fun_args: Sequence[Any], order: int) -> None:
        if "fwd" in modes:
            check_jvp(fun, fun_args, eps, tol, rng)
            if order > 1:
                check(partial(jvp, fun), (tuple(fun_args), _random_like(tuple(fun_args), rng)),
                      order - 1)
        if "rev" in modes:
            check_vjp(fun, fun_args, eps, tol, rng)
            if order > 1:
                cotangent = _random_like(fun(*fun_args), rng)

                def fun_vjp(*primals):
                    _, pullback = vjp(fun, *primals)
                    return pullback(cotangent)
                check(fun_vjp, fun_args, order - 1)

    check(f, args, order)


__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
