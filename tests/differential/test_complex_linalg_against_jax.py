"""Complex matrices through the solves, ``cholesky``, ``lu``, ``eigh`` and ``expm``, against
JAX: values, and derivatives in both modes (a real loss of complex matrices, as a quantum
simulation's energy is). Each was a TypeError here before; ``qr``, ``svd`` and ``eig`` still
are (on the Differences page)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

import stage4_sharding.numpy as jnp  # noqa: E402

import stage4_sharding as sj  # noqa: E402

RNG = np.random.default_rng(0)


def _complex(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


A, B = _complex(4, 4), _complex(4, 2)
H = (A + A.conj().T) / 2  # Hermitian
P = A @ A.conj().T + 4 * np.eye(4, dtype=np.complex64)  # Hermitian positive definite
SKEW = (A - A.conj().T) / 2


def _cases(lib, m):
    sl = lib.scipy.linalg
    return {
        "solve": lambda: m.linalg.solve(A, B),
        "inv": lambda: m.linalg.inv(A),
        "det 4x4": lambda: m.linalg.det(A),
        "det 2x2": lambda: m.linalg.det(A[:2, :2]),
        "slogdet": lambda: m.linalg.slogdet(A),
        "cholesky": lambda: m.linalg.cholesky(P),
        "cholesky upper": lambda: m.linalg.cholesky(P, upper=True),
        "eigvalsh": lambda: m.linalg.eigvalsh(H),
        "eigh, |v|": lambda: m.abs(m.linalg.eigh(H)[1]),
        "expm": lambda: sl.expm(-0.3j * H),
        "cho_solve": lambda: sl.cho_solve(sl.cho_factor(P), B),
        "cho_solve upper": lambda: sl.cho_solve(sl.cho_factor(P, lower=False), B),
        "lu_factor": lambda: sl.lu_factor(A)[0],
        "solve_triangular C": lambda: sl.solve_triangular(m.tril(A), B, lower=True, trans="C"),
        "solve_triangular T": lambda: sl.solve_triangular(m.triu(A), B, trans=1),
        "lax triangular_solve conjugate_a": lambda: lib.lax.linalg.triangular_solve(
            m.tril(A) + 3 * m.eye(4), B.T, lower=True, conjugate_a=True),
        "jit slogdet": lambda: lib.jit(m.linalg.slogdet)(A),
        "vmap inv": lambda: lib.vmap(m.linalg.inv)(np.stack([A, P])),
        "grad |det|": lambda: lib.grad(lambda x: m.abs(m.linalg.det(x)))(A),
        "grad of a solve": lambda: lib.grad(
            lambda x: m.sum(m.abs(m.linalg.solve(x, B)) ** 2))(A),
        "grad eigvalsh": lambda: lib.grad(lambda x: m.linalg.eigvalsh(x + x.conj().T)[0])(A),
        "grad expm": lambda: lib.grad(lambda x: m.real(m.trace(sl.expm(x) @ H)))(A * 0.3),
        "grad cholesky": lambda: lib.grad(lambda x: m.sum(m.abs(
            m.linalg.cholesky(x @ x.conj().T + 4 * m.eye(4))) ** 2))(A),
        "grad cho_solve": lambda: lib.grad(lambda b: m.sum(m.abs(
            sl.cho_solve(sl.cho_factor(P), b)) ** 2))(B),
        "grad triangular_solve conjugate_a": lambda: lib.grad(lambda a: m.sum(m.abs(
            lib.lax.linalg.triangular_solve(a, B.T, lower=True, conjugate_a=True,
                                            transpose_a=True)) ** 2))(
            np.tril(A) + 3 * np.eye(4, dtype=np.complex64)),
        "jvp eigvalsh": lambda: lib.jvp(m.linalg.eigvalsh, (H,), (0.1 * H + 0.05j * SKEW,))[1],
        "jvp inv": lambda: lib.jvp(m.linalg.inv, (A,), (0.1 * B @ B.conj().T,))[1],
        "jvp cholesky": lambda: lib.jvp(m.linalg.cholesky, (P,), (0.1 * H,))[1],
        "hessian of |det|^2": lambda: lib.hessian(
            lambda t: m.abs(m.linalg.det(A + t * H)) ** 2)(np.float32(0.3)),
    }


@pytest.mark.parametrize("name", list(_cases(jax, jjnp)))
def test_complex_linear_algebra_agrees_with_jax(name):
    theirs = jax.tree.leaves(_cases(jax, jjnp)[name]())
    ours = jax.tree.leaves(_cases(sj, jnp)[name]())
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        o, t = np.asarray(o), np.asarray(t)
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        np.testing.assert_allclose(o, t, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("fun", [
    lambda x: jnp.linalg.solve(x, B),
    lambda x: jnp.linalg.eigvalsh(x @ x.conj().T),
    lambda x: sj.scipy.linalg.expm(0.3 * x),
    lambda x: jnp.linalg.cholesky(x @ x.conj().T + 4 * jnp.eye(4)),
], ids=["solve", "eigvalsh", "expm", "cholesky"])
def test_complex_derivatives_match_numerical_ones_to_second_order(fun):
    x = A.astype(np.complex128)
    with sj.enable_x64(True):
        sj.test_util.check_grads(fun, (x,), order=2, modes=("fwd", "rev"))
