"""The general eigenproblem against JAX: ``lax.linalg.eig``, ``jnp.linalg.eig`` and
``eigvals``, and what stands on them (``jnp.roots``, ``jnp.poly`` of a matrix). Values,
dtypes, LAPACK's order and normalization, batches, ``jit``, ``vmap``, eigenvalue gradients
(checked numerically) and the errors."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jjnp  # noqa: E402
import stage4_sharding.numpy as ojnp  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(5)
A = RNG.standard_normal((4, 4)).astype(np.float32)  # real and complex eigenvalues
ROTATION = np.array([[0.0, -2.0], [2.0, 0.0]], np.float32)  # eigenvalues +-2i
BATCH = RNG.standard_normal((3, 3, 3)).astype(np.float32)


def _same(ours, theirs, tol=2e-4):
    for o, t in zip(oj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert o.dtype == t.dtype, (o.dtype, t.dtype)
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=tol, atol=tol)


CASES = {
    "eig": lambda m: m.lax.linalg.eig(A),
    "eig_right": lambda m: m.lax.linalg.eig(A, compute_left_eigenvectors=False),
    "eig_values": lambda m: m.lax.linalg.eig(ROTATION, compute_left_eigenvectors=False,
                                             compute_right_eigenvectors=False),
    "linalg_eig": lambda m: tuple(m.numpy.linalg.eig(A)),
    "linalg_eig_batch": lambda m: tuple(m.numpy.linalg.eig(BATCH)),
    "eigvals": lambda m: m.numpy.linalg.eigvals(A),
    "eigvals_int": lambda m: m.numpy.linalg.eigvals(np.arange(9).reshape(3, 3)),
    "eigvals_jit": lambda m: m.jit(m.numpy.linalg.eigvals)(BATCH),
    "eigvals_vmap": lambda m: m.vmap(m.numpy.linalg.eigvals)(BATCH),
    "roots": lambda m: m.numpy.roots(np.float32([1.0, -6.0, 11.0, -6.0])),
    "roots_complex": lambda m: m.numpy.roots(np.float32([1.0, 0.0, 4.0])),
    "roots_leading_zeros": lambda m: m.numpy.roots(np.float32([0.0, 0.0, 2.0, -4.0])),
    "roots_trailing_zero": lambda m: m.numpy.roots(np.float32([1.0, -1.0, 0.0])),
    "roots_kept_zeros": lambda m: m.numpy.roots(np.float32([0.0, 1.0, -3.0, 2.0]),
                                                strip_zeros=False),
    "roots_kept_zeros_jit": lambda m: m.jit(lambda p: m.numpy.roots(p, strip_zeros=False))(
        np.float32([0.0, 0.0, 1.0, -5.0])),
    "roots_constant": lambda m: m.numpy.roots(np.float32([3.0])),
    "poly_of_a_matrix": lambda m: m.numpy.poly(A),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_eig_and_what_uses_it_match_jax(name):
    _same(CASES[name](oj), CASES[name](jax))


def test_the_eigenpairs_are_eigenpairs():
    w, vl, vr = (np.asarray(x) for x in oj.lax.linalg.eig(A))
    np.testing.assert_allclose(A @ vr, vr * w, atol=1e-5)
    np.testing.assert_allclose(vl.conj().T @ A, w[:, None] * vl.conj().T, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vr, axis=0), 1.0, rtol=1e-6)


def test_eigenvalues_have_gradients():
    a = A.astype(np.float64)
    with oj.enable_x64(True):
        check_grads(lambda a: ojnp.real(ojnp.linalg.eigvals(a) * (1.0 + 2.0j)).sum(), (a,),
                    order=1)
        check_grads(lambda a: ojnp.abs(ojnp.linalg.eigvals(a)).sum(), (a,), order=1,
                    modes=("fwd",))
    ours = oj.grad(lambda a: ojnp.real(ojnp.linalg.eigvals(a)).sum())(A)
    theirs = jax.grad(lambda a: jjnp.real(jjnp.linalg.eigvals(a)).sum())(A)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-5)


def test_eigenvectors_are_not_differentiated_as_in_jax():
    for lib, np_mod in ((oj, ojnp), (jax, jjnp)):
        with pytest.raises(NotImplementedError):
            lib.grad(lambda a: np_mod.real(np_mod.linalg.eig(a)[1]).sum())(A)
    with pytest.raises(NotImplementedError, match="eigenvalues"):
        oj.grad(lambda a: ojnp.real(ojnp.linalg.eig(a)[1]).sum())(A)


def test_bad_inputs_raise_as_in_jax():
    for lib in (oj, jax):
        with pytest.raises(ValueError):
            lib.numpy.linalg.eigvals(np.ones((2, 3), np.float32))
        with pytest.raises(ValueError):
            lib.numpy.roots(np.ones((2, 2), np.float32))
        with pytest.raises(lib.errors.ConcretizationTypeError):
            lib.jit(lib.numpy.roots)(np.float32([1.0, 2.0]))
    with pytest.raises(ValueError, match="square"):
        ojnp.linalg.eigvals(np.ones((2, 3), np.float32))
    with pytest.raises(oj.errors.ConcretizationTypeError, match="strip_zeros=False"):
        oj.jit(ojnp.roots)(np.float32([1.0, 2.0]))
