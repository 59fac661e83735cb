"""``lax.custom_linear_solve``, ``lax.custom_root`` and ``jax.scipy.sparse.linalg`` (``cg``,
``bicgstab``, ``gmres``) against JAX 0.10.2 (all were missing): values of symmetric positive
definite and non-symmetric float32 systems, a pytree right-hand side, preconditioners (a
matrix and a function), ``has_aux``; implicit gradients with respect to ``b`` and to a
matrix the operator closes over (reverse and forward mode, and a second derivative); roots
of a scalar (Newton, bisection) and a vector equation with their gradients; ``vmap`` of a
solve; eagerly and, for a few, under ``jit``; and the errors JAX raises."""

import numpy as np
import pytest
from oracle import assert_call_as_jax, assert_raises_as_jax

import stage4_sharding as ours

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(0)
N = 5
_G = RNG.standard_normal((N, N)).astype(np.float32)
SPD = (_G @ _G.T + N * np.eye(N)).astype(np.float32)
NONSYM = (_G + 3 * N * np.eye(N) / 2).astype(np.float32)
B = RNG.standard_normal(N).astype(np.float32)
BS = RNG.standard_normal((3, N)).astype(np.float32)
TREE_B = {"u": B, "v": RNG.standard_normal((2, 2)).astype(np.float32)}


def _blocks(lib, a):
    """A pytree operator: ``a`` on one leaf, a scaling on the other."""
    return lambda t: {"u": lib.numpy.dot(a, t["u"]), "v": 3.0 * t["v"]}


def _direct(lib, a, b, **options):
    """``custom_linear_solve`` with dense solvers: ``solve`` and ``transpose_solve`` by LU."""
    solve = lib.numpy.linalg.solve
    return lib.lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, v: solve(a, v),
                                       lambda vm, v: solve(a.T, v), **options)


def _with_aux(lib, a, b):
    solve = lib.numpy.linalg.solve
    return lib.lax.custom_linear_solve(
        lambda x: a @ x, b, lambda mv, v: (solve(a, v), lib.numpy.int32(1)),
        lambda vm, v: (solve(a.T, v), lib.numpy.int32(2)), has_aux=True)


def _sqrt_newton(lib, a):
    """The positive root of ``x² − a`` by Newton's method, its derivative implicit."""
    def newton(f, x0):
        return lib.lax.fori_loop(0, 20, lambda _, x: x - f(x) / lib.grad(f)(x), x0)
    return lib.lax.custom_root(lambda x: x * x - a, 1.0, newton, lambda g, y: y / g(1.0))


def _cbrt_bisection(lib, a):
    """The root of ``x³ − a`` in [0, 4] by bisection (a solver with no derivative at all)."""
    jnp = lib.numpy

    def bisect(f, _):
        def step(_, bounds):
            mid = bounds.mean()
            return jnp.where(f(mid) < 0, bounds.at[0].set(mid), bounds.at[1].set(mid))
        return lib.lax.fori_loop(0, 40, step, jnp.array([0.0, 4.0])).mean()
    return lib.lax.custom_root(lambda x: x ** 3 - a, 1.0, bisect, lambda g, y: y / g(1.0))


def _vector_root(lib, a, y):
    """The ``x`` with ``a x + tanh(x) / 2 = y``, by Newton's method on the Jacobian."""
    jnp = lib.numpy

    def newton(f, x0):
        step = lambda _, x: x - jnp.linalg.solve(lib.jacobian(f)(x), f(x))  # noqa: E731
        return lib.lax.fori_loop(0, 30, step, x0)
    return lib.lax.custom_root(lambda x: a @ x + jnp.tanh(x) / 2 - y, jnp.zeros(N), newton,
                               lambda g, v: jnp.linalg.solve(lib.jacobian(g)(v), v))


def cases(lib):
    sparse, jnp = lib.scipy.sparse.linalg, lib.numpy

    def cg_loss(a, b):
        return (sparse.cg(a, b)[0] ** 2).sum()

    return {
        "cg": (sparse.cg, SPD, B),
        "cg from x0 for 3 steps": (lambda a, b: sparse.cg(a, b, B, maxiter=3), SPD, B),
        "cg, a matrix preconditioner": (
            lambda a, b: sparse.cg(a, b, M=jnp.diag(1 / jnp.diag(a)), tol=1e-6), SPD, B),
        "cg of a pytree": (lambda b: sparse.cg(_blocks(lib, SPD), b), TREE_B),
        "bicgstab": (sparse.bicgstab, NONSYM, B),
        "bicgstab, a function preconditioner": (
            lambda a, b: sparse.bicgstab(lambda x: a @ x, b, M=lambda r: r / jnp.diag(a)),
            NONSYM, B),
        "gmres": (sparse.gmres, NONSYM, B),
        "gmres incremental, restart 3": (
            lambda a, b: sparse.gmres(a, b, restart=3, solve_method="incremental"), NONSYM, B),
        "gmres of a pytree, preconditioned": (
            lambda b: sparse.gmres(_blocks(lib, NONSYM), b, M=lambda t: t), TREE_B),
        "custom_linear_solve": (lambda a, b: _direct(lib, a, b), NONSYM, B),
        "custom_linear_solve, has_aux": (lambda a, b: _with_aux(lib, a, b), NONSYM, B),
        "grad of cg: b and the matrix": (lib.grad(cg_loss, (0, 1)), SPD, B),
        "grad of bicgstab: the matrix": (
            lib.grad(lambda a: sparse.bicgstab(a, B)[0].sum()), NONSYM),
        "grad of gmres: b": (lib.grad(lambda b: sparse.gmres(NONSYM, b)[0] @ B), B),
        "grad of cg of a pytree": (
            lib.grad(lambda b: jnp.vdot(sparse.cg(_blocks(lib, SPD), b)[0]["u"], B)), TREE_B),
        "grad of custom_linear_solve: the matrix": (
            lib.grad(lambda a: _direct(lib, a, B) @ B), NONSYM),
        "grad of has_aux": (lib.grad(lambda b: _with_aux(lib, NONSYM, b)[0].sum()), B),
        "jvp of custom_linear_solve: the matrix": (
            lambda a: lib.jvp(lambda a: _direct(lib, a, B), (a,), (SPD,)), NONSYM),
        "jvp of cg: b and the matrix": (
            lambda a, b: lib.jvp(sparse.cg, (a, b), (NONSYM + NONSYM.T, B))[1], SPD, B),
        "second derivative of cg": (
            lib.grad(lambda s: lib.grad(cg_loss)(s * SPD, B).sum()), np.float32(1.0)),
        "vmap of cg over b": (lib.vmap(lambda b: sparse.cg(SPD, b)[0]), BS),
        "vmap of gmres over matrices": (
            lib.vmap(lambda a, b: sparse.gmres(a, b)[0]), np.stack([NONSYM, SPD, NONSYM.T]),
            BS),
        "vmap of a gradient": (lib.vmap(lib.grad(lambda b: sparse.bicgstab(NONSYM, b)[0] @ B)),
                               BS),
        "root: Newton": (lambda a: _sqrt_newton(lib, a), np.float32(2.0)),
        "root: bisection": (lambda a: _cbrt_bisection(lib, a), np.float32(5.0)),
        "grad of a root": (lib.grad(lambda a: _cbrt_bisection(lib, a)), np.float32(5.0)),
        "jvp and second derivative of a root": (
            lambda a: lib.jvp(lib.grad(lambda a: _sqrt_newton(lib, a)), (a,), (1.0,)),
            np.float32(2.0)),
        "vector root": (lambda a, y: _vector_root(lib, a, y), NONSYM, B),
        "grad of a vector root": (
            lib.grad(lambda a, y: (_vector_root(lib, a, y) ** 2).sum(), (0, 1)), NONSYM, B),
        "jacfwd of a vector root": (lib.jacfwd(lambda y: _vector_root(lib, NONSYM, y)), B),
        "vmap of a root": (lib.vmap(lambda a: _sqrt_newton(lib, a)),
                           np.array([2.0, 3.0, 9.0], np.float32)),
    }


JITTED = ["cg", "gmres incremental, restart 3", "grad of cg: b and the matrix",
          "grad of a vector root"]


@pytest.mark.parametrize("name, how", [(name, "eager") for name in cases(jax)]
                         + [(name, "jit") for name in JITTED])
def test_solves_as_jax(name, how):
    assert_call_as_jax(cases, name, how, rtol=1e-4, atol=1e-5)


def errors(lib):
    sparse, lax, jnp = lib.scipy.sparse.linalg, lib.lax, lib.numpy

    def identity_solve(mv, v):
        return v

    return {
        "matvec of another shape": (ValueError, lambda: lax.custom_linear_solve(
            lambda x: x[:2], B, identity_solve)),
        "solve of another structure": (TypeError, lambda: lax.custom_linear_solve(
            lambda x: x, B, lambda mv, v: [v])),
        "has_aux, a solve without aux": (ValueError, lambda: lax.custom_linear_solve(
            lambda x: x, B, identity_solve, has_aux=True)),
        "matvec not callable": (TypeError, lambda: lax.custom_linear_solve(
            SPD, B, identity_solve)),
        "solve not callable": (TypeError, lambda: lax.custom_linear_solve(
            lambda x: x, B, "lu")),
        "grad without transpose_solve": (TypeError, lambda: lib.grad(
            lambda b: lax.custom_linear_solve(lambda x: SPD @ x, b, lambda mv, v:
                                              jnp.linalg.solve(SPD, v)).sum())(B)),
        "root: f of another structure": (TypeError, lambda: lax.custom_root(
            lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y)),
        "root: tangent_solve of another structure": (TypeError, lambda: lax.custom_root(
            lambda x: x, 1.0, lambda f, x: x, lambda g, y: [y])),
        "root: solve not callable": (TypeError, lambda: lax.custom_root(
            lambda x: x, 1.0, None, lambda g, y: y)),
        "cg: A neither matrix nor function": (TypeError, lambda: sparse.cg(5, B)),
        "cg: A not square": (ValueError, lambda: sparse.cg(SPD[:3], B)),
        "cg: M not square": (ValueError, lambda: sparse.cg(SPD, B, M=B)),
        "cg: b of another size": (TypeError, lambda: sparse.cg(SPD, B[:3])),
        "bicgstab: x0 of another shape": (ValueError, lambda: sparse.bicgstab(
            NONSYM, B, x0=B[:3])),
        "gmres: x0 of another structure": (ValueError, lambda: sparse.gmres(
            NONSYM, B, x0=(B,))),
        "gmres: an unknown solve_method": (ValueError, lambda: sparse.gmres(
            NONSYM, B, solve_method="householder")),
    }


@pytest.mark.parametrize("name", list(errors(jax)))
def test_solves_refuse_as_jax(name):
    assert_raises_as_jax(errors, name)


def test_our_errors_say_what_to_do():
    lax = ours.lax
    with pytest.raises(TypeError, match="needs transpose_solve.*symmetric=True"):
        ours.grad(lambda b: lax.custom_linear_solve(lambda x: 2.0 * x, b,
                                                    lambda mv, v: v / 2.0).sum())(B)
    with pytest.raises(ValueError, match=r"matvec\(\) must return arrays shaped as b"):
        lax.custom_linear_solve(lambda x: x[:2], B, lambda mv, v: v)
    with pytest.raises(TypeError, match="must be a square matrix or a function"):
        ours.scipy.sparse.linalg.cg("A", B)


def test_the_modules_import_by_name():
    import stage4_sharding.scipy.sparse.linalg as linalg
    assert linalg is ours.scipy.sparse.linalg
    assert sorted(linalg.__all__) == ["bicgstab", "cg", "gmres"]
