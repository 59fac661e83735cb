"""``lax.custom_linear_solve`` and ``lax.custom_root``: solves differentiated by the equation
their answer satisfies, not through the solver's steps.

Differentiating *through* an iterative solver would differentiate every step of its loop
(and a ``while_loop`` has no reverse mode at all). The answer of ``x = solve(matvec, b)``
satisfies ``A x = b``, where ``A`` is the linear map ``matvec``; differentiating that gives

    A ẋ + Ȧ x = ḃ,   so   ẋ = A⁻¹ (ḃ − Ȧ x):

the tangent is one more solve, of the same system. Reverse mode transposes that solve, which
solves with ``Aᵀ`` (``transpose_solve``, applied to ``vecmat``, the transpose of ``matvec``).
``custom_root`` does the same for a root of ``f(x) = 0`` (the implicit function theorem):
``ẋ = −(∂f/∂x)⁻¹ ḟ``, the inverse left to the user's ``tangent_solve``.

Built from what the library has: ``closure_convert`` makes the arrays the user's functions
close over (a matrix being differentiated) explicit constants; a ``custom_jvp`` applies the
solve, its rule the formula above. The tangent's solve is a ``custom_vjp`` declared linear in
its right-hand side (``bwd.linear_in``), whose backward pass solves the transposed system in
the same way. Reverse mode transposes the ``custom_jvp`` rule (stage 1's
``custom_jvp_call_vjp``), and that declaration lets it run the tangent's solve backwards. A
``custom_vjp`` has no forward mode, so under ``jvp`` (a second forward derivative) the
tangent's solve is the ``custom_jvp`` one instead.

NB: JAX's is one primitive, ``linear_solve_p``, with JVP, transpose and batching rules of its
own (jax/_src/lax/control_flow/solves.py), and ``custom_root`` a ``custom_jvp`` there too. Its
transpose does not recompute the forward solve; here reverse mode does, once (the custom_jvp
rule returns the primal answer as well as the tangent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from stage1_autodiff.autodiff import JVPTrace, custom_vjp_call_p, jvp, vjp, zero_derivative
from stage1_autodiff.core import find_top_trace, full_raise
from stage1_autodiff.custom_derivatives import custom_jvp
from stage1_autodiff.linear_transpose import linear_transpose
from stage1_autodiff.numpy.promotion import as_value
from stage1_autodiff.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

from stage1_autodiff import prims as lax

from .everyday import closure_convert


def _check_callables(where: str, **funs: Any) -> None:
    for name, fun in funs.items():
        if not callable(fun):
            raise TypeError(f"{where}: {name} must be a function, got {type(fun).__name__} "
                            f"{fun!r}.")


def _split_aux(out: Any, name: str, has_aux: bool) -> tuple[Any, Any]:
    """``out`` as (answer, aux): with ``has_aux`` the function returns a pair."""
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise ValueError(f"{name}() must return a pair (solution, aux) because has_aux=True; "
                         f"it returned {tree_flatten(out)[1]}.")
    return out[0], out[1]


def _checked(fun: Callable, name: str, like: Any, like_name: str, has_aux: bool = False,
             shapes: bool = True) -> Callable:
    """``fun``, checking as it is traced that its answer is a vector like ``like``: of the same
    shapes (else ValueError; custom_root's checks skip this, as JAX's), then of the same
    pytree structure (else TypeError)."""
    def checked(v: Any) -> Any:
        out = fun(v)
        answer, _ = _split_aux(out, name, has_aux)
        got, want = [[np.shape(a) for a in tree_leaves(t)] for t in (answer, like)]
        if shapes and got != want:
            raise ValueError(f"{name}() must return arrays shaped as {like_name}, "
                             f"{want}; it returned {got}.")
        if tree_flatten(answer)[1] != tree_flatten(like)[1]:
            raise TypeError(f"{name}() must return the pytree structure of {like_name}, "
                            f"{tree_flatten(like)[1]}; it returned {tree_flatten(answer)[1]}.")
        return out
    return checked


def _explicit(fun: Callable, example: Any) -> tuple[Callable, list[Any]]:
    """``fun`` of one vector, made ``fun(consts, v)``: its traced closed-over floats explicit."""
    converted, consts = closure_convert(fun, example)
    return (lambda c, v: converted(v, *c)), consts


def _sub(a: Any, b: Any) -> Any:
    return tree_map(lax.sub, a, b)


# ------------------------------------------------------------------------------------------
# custom_linear_solve
# ------------------------------------------------------------------------------------------


class _Consts(NamedTuple):
    """What each of a system's four functions closes over (lists of arrays)."""

    matvec: list[Any]
    vecmat: list[Any]
    solve: list[Any]
    transpose_solve: list[Any]

    def transposed(self) -> _Consts:
        return _Consts(self.vecmat, self.matvec, self.transpose_solve, self.solve)


@dataclass(frozen=True)
class _LinearSystem:
    """The user's functions, each taking its constants and then a vector. ``vecmat`` and
    ``transpose_solve`` are None when no ``transpose_solve`` was given."""

    matvec: Callable
    vecmat: Callable | None
    solve: Callable  # returns (x, aux) when has_aux
    transpose_solve: Callable | None
    has_aux: bool

    def transposed(self) -> _LinearSystem:
        """The system of ``Aᵀ``: its matvec is our vecmat, its solve our transpose_solve."""
        return _LinearSystem(self.vecmat, self.matvec, self.transpose_solve, self.solve,
                             self.has_aux)

    def x_of(self, out: Any) -> Any:
        return out[0] if self.has_aux else out


# --8<-- [start:custom_linear_solve]
def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """``solve(matvec, b)``, the ``x`` with ``matvec(x) == b``, differentiated implicitly:
    its derivative comes from that equation, not from ``solve``'s steps, so ``solve`` may be
    any solver (a ``while_loop``, a factorization) and need not be differentiable.

    Forward mode solves again with ``solve``; reverse mode solves with ``transpose_solve``,
    applied to ``vecmat``, the transpose of ``matvec`` (or with ``solve`` and ``matvec``
    themselves when ``symmetric``). Without either, reverse mode raises TypeError. Gradients
    reach ``b`` and the arrays ``matvec`` closes over. ``b`` may be a pytree; with
    ``has_aux``, the solvers return ``(x, aux)``, and so does this.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> a = jnp.array([[4.0, 1.0], [1.0, 3.0]])
        >>> def x_of(a, b):
        ...     return jax.lax.custom_linear_solve(lambda x: a @ x, b,
        ...         solve=lambda mv, b: jnp.linalg.solve(a, b), symmetric=True)
        >>> print(x_of(a, jnp.array([1.0, 2.0])))
        [0.09090909 0.6363636 ]
        >>> print(jax.grad(lambda b: x_of(a, b).sum())(jnp.array([1.0, 2.0])))
        [0.18181819 0.27272728]
    """
    _check_callables("custom_linear_solve", matvec=matvec, solve=solve)
    if transpose_solve is not None:
        _check_callables("custom_linear_solve", transpose_solve=transpose_solve)
    elif symmetric:
        transpose_solve = solve
    b = tree_map(as_value, b)
    mv, mv_consts = _explicit(_checked(matvec, "matvec", b, "b"), b)
    sv, s_consts = _explicit(_checked(partial(solve, matvec), "solve", b, "b", has_aux), b)
    vm, vm_consts, tsv, t_consts = None, [], None, []
    if transpose_solve is not None:
        vecmat = matvec if symmetric else _transposed(matvec, b)
        vm, vm_consts = (mv, mv_consts) if symmetric else _explicit(vecmat, b)
        tsv, t_consts = _explicit(_checked(partial(transpose_solve, vecmat), "transpose_solve",
                                           b, "b", has_aux), b)
    system = _LinearSystem(mv, vm, sv, tsv, has_aux)
    return _linear_solve(system, _Consts(mv_consts, vm_consts, s_consts, t_consts), b)
# --8<-- [end:custom_linear_solve]


def _transposed(matvec: Callable, b: Any) -> Callable:
    """``vecmat``: the transpose of the linear map ``matvec`` at vectors shaped as ``b``."""
    transpose = linear_transpose(matvec, b)
    return lambda ct: transpose(ct)[0]


# --8<-- [start:linear_solve_jvp]
@partial(custom_jvp, nondiff_argnums=(0,))
def _linear_solve(system: _LinearSystem, consts: _Consts, b: Any) -> Any:
    return system.solve(consts.solve, b)


@_linear_solve.defjvp
def _linear_solve_jvp(system: _LinearSystem, primals: tuple, tangents: tuple) -> tuple:
    """``ẋ = A⁻¹ (ḃ − Ȧ x)``: the tangent is a solve of the same system. Only the tangents
    of ``matvec``'s constants move ``A``; the solvers' constants do not count (as in JAX)."""
    (consts, b), (consts_dot, b_dot) = primals, tangents
    out = _linear_solve(system, consts, b)
    x = system.x_of(out)
    rhs = b_dot
    if consts.matvec:
        _, a_dot_x = jvp(lambda *c: system.matvec(list(c), x), tuple(consts.matvec),
                         tuple(consts_dot.matvec))
        rhs = _sub(b_dot, a_dot_x)
    x_dot = _solve_tangent(system, consts, rhs)
    if system.has_aux:  # aux is not differentiated: zero tangents (float0 for integers)
        return out, (x_dot, tree_map(zero_derivative, out[1]))
    return out, x_dot
# --8<-- [end:linear_solve_jvp]


# --8<-- [start:solve_tangent]
def _solve_tangent(system: _LinearSystem, consts: _Consts, rhs: Any) -> Any:
    """``A⁻¹ rhs`` as a custom_vjp declared linear in ``rhs`` (``bwd.linear_in``), so that
    reverse mode can transpose the JVP rule through it: its backward pass is the solve of
    the transposed system (see ``_transposed_solve``)."""
    flat_consts, consts_tree = tree_flatten(consts)
    flat_rhs, rhs_tree = tree_flatten(rhs)
    n = len(flat_consts)

    def fun(*args):
        c, v = tree_unflatten(consts_tree, args[:n]), tree_unflatten(rhs_tree, args[n:])
        return tree_leaves(system.x_of(system.solve(c.solve, v)))

    def fwd(*args):
        x = fun(*args)
        return x, (args[:n], x)

    def bwd(residuals, cts):
        c, x = tree_unflatten(consts_tree, residuals[0]), tree_unflatten(rhs_tree, residuals[1])
        return _transposed_solve(system, c, x, tree_unflatten(rhs_tree, cts))

    bwd.linear_in = range(n, n + len(flat_rhs))  # stage 1's check_linear reads this
    args = [as_value(a) for a in [*flat_consts, *flat_rhs]]
    trace = find_top_trace(args)
    if isinstance(trace, JVPTrace):  # a custom_vjp has no forward mode; the custom_jvp has
        return system.x_of(_linear_solve(system, consts, rhs))
    outs = trace.process_custom_vjp_call(custom_vjp_call_p, fun, fwd, bwd,
                                         [full_raise(trace, a) for a in args], lambda: rhs_tree)
    return tree_unflatten(rhs_tree, outs)
# --8<-- [end:solve_tangent]


def _transposed_solve(system: _LinearSystem, consts: _Consts, x: Any, ct: Any) -> list[Any]:
    """The cotangents of ``x = A⁻¹ rhs``: ``A⁻ᵀ ct`` for ``rhs``, a solve of the transposed
    system (itself implicit, so that second derivatives work too), and for ``matvec``'s
    constants ``−(∂A)ᵀ`` applied to it at ``x``; none for the other functions' constants."""
    if system.transpose_solve is None:
        raise TypeError("custom_linear_solve: reverse-mode differentiation (grad, vjp) needs "
                        "transpose_solve, the solve of the transposed system; pass it, or "
                        "symmetric=True if matvec is symmetric (then solve is used).")
    ct_b = system.x_of(_linear_solve(system.transposed(), consts.transposed(), ct))
    ct_matvec = []
    if consts.matvec:
        _, pullback = vjp(lambda *c: system.matvec(list(c), x), *consts.matvec)
        ct_matvec = list(pullback(tree_map(lax.neg, ct_b)))
    others = [None] * (len(consts.vecmat) + len(consts.solve) + len(consts.transpose_solve))
    return [*ct_matvec, *others, *tree_leaves(ct_b)]


# ------------------------------------------------------------------------------------------
# custom_root
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RootProblem:
    """The user's functions, each taking its constants (a list) first."""

    f: Callable  # f(consts, x)
    solve: Callable  # solve(consts, guess) -> root, or (root, aux) when has_aux
    tangent_solve: Callable  # tangent_solve(consts, (x, y)): g⁻¹ y, g = f linearized at x
    has_aux: bool


# --8<-- [start:custom_root]
def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False) -> Any:
    """``solve(f, initial_guess)``, a root of ``f``, differentiated by the implicit function
    theorem: for the arrays ``f`` closes over, ``θ``, the root ``x`` moves as
    ``ẋ = −(∂f/∂x)⁻¹ (∂f/∂θ) θ̇``. ``solve`` need not be differentiable;
    ``tangent_solve(g, y)`` solves the linear system ``g(x) = y``, where ``g`` is ``f``
    linearized at the root (``y / g(1.0)`` for a scalar). Reverse mode works when
    ``tangent_solve`` is linear in ``y``.

    Example:
        >>> import stage2_jit as jax
        >>> def newton(f, x0):  # 20 steps of Newton's method
        ...     return jax.lax.fori_loop(0, 20, lambda _, x: x - f(x) / jax.grad(f)(x), x0)
        >>> def sqrt(a):  # the positive root of x² − a
        ...     return jax.lax.custom_root(lambda x: x * x - a, 1.0, newton,
        ...                                tangent_solve=lambda g, y: y / g(1.0))
        >>> print(sqrt(2.0), jax.grad(sqrt)(2.0))  # 1 / (2 sqrt(2))
        1.4142135 0.35355338
    """
    _check_callables("custom_root", f=f, solve=solve, tangent_solve=tangent_solve)
    guess = tree_map(as_value, initial_guess)
    check = partial(_checked, like=guess, like_name="initial_guess", shapes=False)
    fx, f_consts = _explicit(check(f, "f"), guess)
    sv, s_consts = _explicit(check(partial(solve, f), "solve", has_aux=has_aux), guess)

    def linearize_and_solve(xy: tuple[Any, Any]) -> Any:
        x, y = xy
        return tangent_solve(lambda v: jvp(f, (x,), (v,))[1], y)

    ls, ls_consts = _explicit(check(linearize_and_solve, "tangent_solve"), (guess, guess))
    problem = _RootProblem(fx, sv, ls, has_aux)
    return _root(problem, (f_consts, s_consts, ls_consts), guess)
# --8<-- [end:custom_root]


@partial(custom_jvp, nondiff_argnums=(0,))
def _root(problem: _RootProblem, consts: tuple[list, list, list], guess: Any) -> Any:
    return problem.solve(consts[1], guess)


# --8<-- [start:root_jvp]
@_root.defjvp
def _root_jvp(problem: _RootProblem, primals: tuple, tangents: tuple) -> tuple:
    """``f(x(θ), θ) = 0`` differentiated: ``∂f/∂x ẋ + ∂f/∂θ θ̇ = 0``, solved for ``ẋ`` by
    ``tangent_solve``. The initial guess's tangent does not count."""
    (consts, guess), (consts_dot, _) = primals, tangents
    out = _root(problem, consts, guess)
    x = out[0] if problem.has_aux else out
    f_dot = tree_map(lax.zeros_like, x)  # nothing to move f: a constant root
    if consts[0]:
        _, f_dot = jvp(lambda *c: problem.f(list(c), x), tuple(consts[0]),
                       tuple(consts_dot[0]))
    x_dot = tree_map(lax.neg, problem.tangent_solve(consts[2], (x, f_dot)))
    if problem.has_aux:  # aux is not differentiated: zero tangents (float0 for integers)
        return out, (x_dot, tree_map(zero_derivative, out[1]))
    return out, x_dot
# --8<-- [end:root_jvp]
