"""``jax.scipy.linalg``'s matrices with a formula (``scipy/special_matrices.py``) and
``lu_factor``/``lu_solve`` against JAX: values, dtypes and weak types, batches, errors; those
built from an array are differentiable (checked numerically) and compile under ``jit``."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jjnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402
from stage4_sharding.scipy import linalg as osl  # noqa: E402

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(11)
C = RNG.standard_normal(4).astype(np.float32)
R = RNG.standard_normal(6).astype(np.float32)
BATCH = RNG.standard_normal((2, 3, 4)).astype(np.float32)
POLY = np.array([2.0, -3.0, 0.5, 4.0, 1.5, -1.0], np.float32)
SQUARE = (RNG.standard_normal((5, 5)) + 3 * np.eye(5)).astype(np.float32)
RHS = RNG.standard_normal((5, 2)).astype(np.float32)


def _same(ours, theirs, rtol=2e-5, atol=1e-5):
    for o, t in zip(oj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert o.dtype == t.dtype, (o.dtype, t.dtype)
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        assert o.shape == t.shape
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=rtol, atol=atol)


CASES = {
    "toeplitz": lambda m: m.toeplitz(C),
    "toeplitz_c_r": lambda m: m.toeplitz(C, R),
    "toeplitz_batch": lambda m: m.toeplitz(BATCH, BATCH[0, 0, :2]),
    "toeplitz_int": lambda m: m.toeplitz(np.arange(3, dtype=np.int32)),
    "toeplitz_scalar": lambda m: m.toeplitz(np.float32(2.0)),
    "toeplitz_complex": lambda m: m.toeplitz(C + 1j * C[::-1]),
    "hankel": lambda m: m.hankel(C),
    "hankel_c_r": lambda m: m.hankel(C, R),
    "hankel_batch": lambda m: m.hankel(BATCH),
    "circulant": lambda m: m.circulant(C),
    "circulant_batch": lambda m: m.circulant(BATCH),
    "companion": lambda m: m.companion(POLY),
    "companion_int": lambda m: m.companion(np.array([1, 2, 3], np.int32)),
    "companion_batch": lambda m: m.companion(BATCH),
    "fiedler": lambda m: m.fiedler(C),
    "fiedler_batch": lambda m: m.fiedler(BATCH),
    **{f"fiedler_companion_{n}": (lambda m, n=n: m.fiedler_companion(POLY[:n]))
       for n in range(2, 7)},
    "leslie": lambda m: m.leslie(C, R[:3]),
    "leslie_batch": lambda m: m.leslie(BATCH, BATCH[..., :3]),
    **{f"convolution_matrix_{mode}_{n}": (lambda m, mode=mode, n=n: m.convolution_matrix(C, n,
                                                                                      mode))
       for mode in ("full", "same", "valid") for n in (2, 4, 7)},
    "block_diag": lambda m: m.block_diag(SQUARE[:2, :3], C, np.float32(5.0), BATCH[0]),
    "block_diag_mixed": lambda m: m.block_diag(np.ones((2, 2), np.int32), C),
    "block_diag_none": lambda m: m.block_diag(),
    "hilbert": lambda m: m.hilbert(5),
    "invhilbert": lambda m: m.invhilbert(5),
    **{f"pascal_{kind}": (lambda m, kind=kind: m.pascal(6, kind))
       for kind in (None, "symmetric", "lower", "upper")},
    **{f"invpascal_{kind}": (lambda m, kind=kind: m.invpascal(6, kind))
       for kind in (None, "symmetric", "lower", "upper")},
    "hadamard": lambda m: m.hadamard(8),
    "hadamard_float": lambda m: m.hadamard(4, np.float32),
    "dft": lambda m: m.dft(6),
    "dft_sqrtn": lambda m: m.dft(5, "sqrtn"),
    "dft_n": lambda m: m.dft(4, "n"),
    "helmert": lambda m: m.helmert(5),
    "helmert_full": lambda m: m.helmert(5, full=True),
    "lu_factor": lambda m: m.lu_factor(SQUARE),
    **{f"lu_solve_{trans}": (lambda m, trans=trans: m.lu_solve(m.lu_factor(SQUARE), RHS, trans))
       for trans in (0, 1, 2)},
    "lu_solve_vector": lambda m: m.lu_solve(m.lu_factor(SQUARE), RHS[:, 0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_matrices_and_lu_match_jax(name):
    # JAX computes Pascal and inverse Hilbert entries in floating point; ours are exact
    rtol = 2e-4 if "pascal" in name or "hilbert" in name else 2e-5
    _same(CASES[name](osl), CASES[name](jsl), rtol=rtol)


def test_invhilbert_and_invpascal_invert_hilbert_and_pascal():
    for n in (3, 6):
        i = np.arange(n)
        exact = np.round(np.linalg.inv(1.0 / (i[:, None] + i[None, :] + 1)))  # integers
        np.testing.assert_array_equal(np.asarray(osl.invhilbert(n)), exact.astype(np.float32))
        for kind in ("symmetric", "lower", "upper"):
            np.testing.assert_array_equal(
                np.asarray(osl.invpascal(n, kind)) @ np.asarray(osl.pascal(n, kind)), np.eye(n))


def test_the_companion_matrices_eigenvalues_are_the_roots():
    roots = np.sort_complex(np.roots(POLY.astype(np.float64)))
    for make in (osl.companion, osl.fiedler_companion):
        eigenvalues = np.sort_complex(np.linalg.eigvals(np.asarray(make(POLY), np.float64)))
        np.testing.assert_allclose(eigenvalues, roots, rtol=1e-4, atol=1e-4)


def test_convolution_matrix_times_v_is_the_convolution():
    v = RNG.standard_normal(7).astype(np.float32)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(np.asarray(osl.convolution_matrix(C, 7, mode)) @ v,
                                   np.convolve(C, v, mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda c: osl.toeplitz(c, c[::-1] * 2.0), lambda c: osl.hankel(c, c * 3.0), osl.circulant,
    osl.companion, osl.fiedler_companion, lambda c: osl.leslie(c, c[1:] * 0.5),
    lambda c: osl.convolution_matrix(c, 3, "same"), lambda c: osl.block_diag(c, c[:2] * c[0]),
    lambda c: osl.fiedler(c * c)])
def test_matrices_made_from_an_array_have_gradients_and_compile(make):
    c = (C + np.array([3.0, 0.0, 0.0, 0.0], np.float32)).astype(np.float64)  # a[0] far from 0
    with oj.enable_x64(True):
        check_grads(lambda c: oj.numpy.sum(make(c) * oj.numpy.arange(1.0, 1.0 + make(c).size)
                                           .reshape(make(c).shape)), (c,), order=2)
    np.testing.assert_allclose(np.asarray(oj.jit(make)(C)), np.asarray(make(C)), rtol=1e-6)


def test_lu_solve_solves_under_jit_and_vmap():
    lu_and_piv = osl.lu_factor(SQUARE)
    x = oj.jit(osl.lu_solve)(lu_and_piv, RHS)
    np.testing.assert_allclose(SQUARE @ np.asarray(x), RHS, rtol=1e-4, atol=1e-4)
    columns = oj.vmap(lambda b: osl.lu_solve(lu_and_piv, b), in_axes=1, out_axes=1)(RHS)
    np.testing.assert_allclose(np.asarray(columns), np.asarray(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.toeplitz([1.0, 2.0]), TypeError, "ndarray or scalar"),
    (lambda m: m.hadamard(6), ValueError, "power of 2"),
    (lambda m: m.companion(np.ones(1, np.float32)), ValueError, "at least 2"),
    (lambda m: m.pascal(3, "diagonal"), ValueError, "kind"),
    (lambda m: m.convolution_matrix(np.ones(3, np.float32), 4, "middle"), ValueError, "mode"),
    (lambda m: m.dft(4, "half"), ValueError, "scale"),
])
def test_bad_arguments_raise_as_in_jax(call, error, words):
    with pytest.raises(error):
        call(jsl)
    with pytest.raises(error, match=words):
        call(osl)


def test_the_jax_oracle_is_the_one_we_think():
    assert jjnp.asarray(1.0).dtype == np.float32  # x64 off, as in the comparisons above
