"""``jnp.linalg``'s array-API names and tensor functions against JAX: vector_norm,
matrix_norm, cross, diagonal, matrix_transpose, outer, tensordot, vecdot, matmul, multi_dot,
svdvals, matrix_rank, cond, tensorinv, tensorsolve. Values (float32 tolerance), dtypes and
weak types, on float, integer and complex inputs; JAX's errors; gradients to order 2."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jjnp  # noqa: E402
import stage4_sharding.numpy as ojnp  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402
from test_linalg_against_jax import _same  # noqa: E402 (values, dtypes, weak types)

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(11)
A = RNG.standard_normal((4, 4)).astype(np.float32)
BATCH = RNG.standard_normal((3, 4, 4)).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)
V3 = RNG.standard_normal((2, 3)).astype(np.float32)
W3 = RNG.standard_normal((2, 3)).astype(np.float32)
INTS = RNG.integers(-4, 5, (3, 4)).astype(np.int32)
CPLX = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
T6 = (RNG.standard_normal((6, 6)) + 3 * np.eye(6)).astype(np.float32)


CASES = {
    "vector_norm": lambda m: m.linalg.vector_norm(A),
    "vector_norm_axis": lambda m: m.linalg.vector_norm(BATCH, axis=1, keepdims=True),
    "vector_norm_axes": lambda m: m.linalg.vector_norm(BATCH, axis=(0, 2), ord=1),
    "vector_norm_inf": lambda m: m.linalg.vector_norm(A, axis=0, ord=np.inf),
    "vector_norm_-inf": lambda m: m.linalg.vector_norm(A, ord=-np.inf),
    "vector_norm_0": lambda m: m.linalg.vector_norm(INTS.astype(np.float32), ord=0, axis=1),
    "vector_norm_3": lambda m: m.linalg.vector_norm(A, ord=3, axis=-1),
    "vector_norm_-1.5": lambda m: m.linalg.vector_norm(A + 3, ord=-1.5),
    "vector_norm_int": lambda m: m.linalg.vector_norm(INTS, axis=1),
    "vector_norm_int_1": lambda m: m.linalg.vector_norm(INTS, ord=1),
    "vector_norm_int_inf": lambda m: m.linalg.vector_norm(INTS, ord=np.inf),
    "vector_norm_complex": lambda m: m.linalg.vector_norm(CPLX, axis=1),
    "vector_norm_complex_0": lambda m: m.linalg.vector_norm(CPLX, ord=0),
    "vector_norm_empty_inf": lambda m: m.linalg.vector_norm(np.zeros((0,), np.float32),
                                                            ord=np.inf),
    "vector_norm_python": lambda m: m.linalg.vector_norm(3.0),
    "matrix_norm": lambda m: m.linalg.matrix_norm(BATCH),
    "matrix_norm_ords": lambda m: [m.linalg.matrix_norm(A, ord=o)
                                   for o in (1, -1, 2, -2, np.inf, -np.inf, "nuc", "fro")],
    "matrix_norm_keepdims": lambda m: m.linalg.matrix_norm(BATCH, ord=np.inf, keepdims=True),
    "matrix_norm_complex": lambda m: m.linalg.matrix_norm(CPLX),
    "matrix_norm_int": lambda m: m.linalg.matrix_norm(INTS, ord=1),
    "norm_complex": lambda m: [m.linalg.norm(CPLX), m.linalg.norm(CPLX, axis=0)],
    "cross": lambda m: m.linalg.cross(V3, W3),
    "cross_axis": lambda m: m.linalg.cross(V3.T, W3.T, axis=0),
    "cross_int": lambda m: m.linalg.cross(INTS[:, :3], INTS[0, 1:]),
    "diagonal": lambda m: m.linalg.diagonal(BATCH),
    "diagonal_offset": lambda m: m.linalg.diagonal(TALL, offset=-1),
    "matrix_transpose": lambda m: m.linalg.matrix_transpose(BATCH[:, :3]),
    "outer": lambda m: m.linalg.outer(V3[0], W3[1, :2]),
    "outer_int": lambda m: m.linalg.outer(INTS[0], W3[0]),
    "tensordot": lambda m: m.linalg.tensordot(BATCH, A),
    "tensordot_axes": lambda m: m.linalg.tensordot(TALL, BATCH[:, :, :2], axes=([1], [0])),
    "tensordot_int": lambda m: m.linalg.tensordot(INTS, INTS.T, axes=1),
    "vecdot": lambda m: m.linalg.vecdot(V3, W3),
    "vecdot_axis": lambda m: m.linalg.vecdot(BATCH, A[:, :1], axis=-2),
    "vecdot_broadcast": lambda m: m.linalg.vecdot(BATCH, A[0]),
    "vecdot_int": lambda m: m.linalg.vecdot(INTS, INTS[0]),
    "vecdot_complex": lambda m: m.linalg.vecdot(CPLX, CPLX[::-1]),
    "matmul": lambda m: m.linalg.matmul(BATCH, TALL[:4]),
    "matmul_int": lambda m: m.linalg.matmul(INTS, INTS.T),
    "multi_dot": lambda m: m.linalg.multi_dot([A, BATCH[0], TALL[:4], TALL.T]),
    "multi_dot_vectors": lambda m: m.linalg.multi_dot([A[0], BATCH[1], A[:, 1]]),
    "multi_dot_two": lambda m: m.linalg.multi_dot([TALL, TALL[:3].T]),
    "multi_dot_int": lambda m: m.linalg.multi_dot([INTS, INTS.T, INTS]),
    "svdvals": lambda m: m.linalg.svdvals(BATCH),
    "svdvals_int": lambda m: m.linalg.svdvals(INTS),
    "matrix_rank": lambda m: m.linalg.matrix_rank(BATCH),
    "matrix_rank_singular": lambda m: m.linalg.matrix_rank(SINGULAR),
    "matrix_rank_rtol": lambda m: m.linalg.matrix_rank(A, rtol=0.5),
    "matrix_rank_tol": lambda m: m.linalg.matrix_rank(BATCH, tol=np.array([0.1, 1.0, 10.0])),
    "matrix_rank_vector": lambda m: m.linalg.matrix_rank(INTS[0]),
    "matrix_rank_int": lambda m: m.linalg.matrix_rank(INTS),
    "cond": lambda m: m.linalg.cond(BATCH),
    "cond_ords": lambda m: [m.linalg.cond(A, p) for p in (-2, 1, -1, np.inf, -np.inf, "fro",
                                                          "nuc")],
    "cond_singular": lambda m: m.linalg.cond(SINGULAR, p=1),
    "cond_tall": lambda m: m.linalg.cond(TALL),
    "tensorinv": lambda m: m.linalg.tensorinv(T6.reshape(6, 2, 3), ind=1),
    "tensorinv_2": lambda m: m.linalg.tensorinv(T6.reshape(2, 3, 3, 2)),
    "tensorsolve": lambda m: m.linalg.tensorsolve(T6.reshape(2, 3, 6), TALL[:2, :3]),
    "tensorsolve_axes": lambda m: m.linalg.tensorsolve(T6.reshape(3, 2, 3, 2), A[:2, :3],
                                                       axes=(0,)),
    "tensorsolve_int": lambda m: m.linalg.tensorsolve(np.eye(4, dtype=np.int32).reshape(
        2, 2, 4), INTS[:2, :2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_jax(name):
    _same(CASES[name](ojnp), CASES[name](jjnp), 1e-3)


@pytest.mark.parametrize("name", ["vector_norm_int", "vector_norm_python", "matrix_norm",
                                  "vecdot_int", "matrix_rank", "cond", "multi_dot_vectors"])
def test_linalg_matches_jax_with_x64(name, x64_both):
    _same(CASES[name](ojnp), CASES[name](jjnp), 1e-3)


ERRORS = {
    "vector_norm_str": lambda m: m.linalg.vector_norm(A, ord="inf"),
    "vector_norm_0_int": lambda m: m.linalg.vector_norm(INTS, ord=0),
    "matrix_norm_vector": lambda m: m.linalg.matrix_norm(A[0]),
    "matrix_norm_ord": lambda m: m.linalg.matrix_norm(A, ord=3),
    "cross_2": lambda m: m.linalg.cross(V3[:, :2], W3[:, :2]),
    "matrix_transpose_1d": lambda m: m.linalg.matrix_transpose(A[0]),
    "outer_2d": lambda m: m.linalg.outer(A, A[0]),
    "vecdot_mismatch": lambda m: m.linalg.vecdot(A, TALL),
    "multi_dot_none": lambda m: m.linalg.multi_dot([]),
    "multi_dot_3d": lambda m: m.linalg.multi_dot([A, BATCH, A]),
    "multi_dot_shapes": lambda m: m.linalg.multi_dot([A, TALL]),
    "matrix_rank_both": lambda m: m.linalg.matrix_rank(A, rtol=0.1, tol=0.1),
    "cond_1d": lambda m: m.linalg.cond(A[0]),
    "cond_empty": lambda m: m.linalg.cond(np.zeros((0, 3), np.float32)),
    "cond_not_square": lambda m: m.linalg.cond(TALL, p=1),
    "tensorinv_ind": lambda m: m.linalg.tensorinv(A, ind=0),
    "tensorinv_shape": lambda m: m.linalg.tensorinv(TALL, ind=1),
    "tensorsolve_shape": lambda m: m.linalg.tensorsolve(T6, TALL[:3, 0]),
    "tensorsolve_size": lambda m: m.linalg.tensorsolve(BATCH[:, :2], TALL[:3, :2]),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_jaxs(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](jjnp)
    with pytest.raises(theirs.type) as ours:
        ERRORS[name](ojnp)
    if theirs.type is ValueError and name != "vecdot_mismatch":  # (jnp.vecdot's own words)
        assert str(ours.value).split(";")[0] == str(theirs.value).split(";")[0]


X64 = np.random.default_rng(5).standard_normal((3, 3)) + 2 * np.eye(3)
GRAD_CASES = {
    "vector_norm": (lambda a: ojnp.linalg.vector_norm(a, axis=0), X64),
    "vector_norm_3": (lambda a: ojnp.linalg.vector_norm(a, ord=3, axis=1), X64),
    "matrix_norm_nuc": (lambda a: ojnp.linalg.matrix_norm(a, ord="nuc"), X64),
    "cross": (lambda a: ojnp.linalg.cross(a, a[::-1]), X64),
    "vecdot": (lambda a: ojnp.linalg.vecdot(a, a.T), X64),
    "multi_dot": (lambda a: ojnp.linalg.multi_dot([a[0], a, a.T, a]), X64),
    "svdvals": (lambda a: ojnp.linalg.svdvals(a), X64[:, :2]),
    "cond": (lambda a: ojnp.linalg.cond(a), X64),
    "cond_1": (lambda a: ojnp.linalg.cond(a, p=np.inf), X64),
    "tensorinv": (lambda a: ojnp.linalg.tensorinv(a.reshape(3, 3), ind=1), X64),
    "tensorsolve": (lambda a: ojnp.linalg.tensorsolve(a, a[0]), X64),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_to_order_2(name):
    fn, x = GRAD_CASES[name]
    oj.config.update("jax_enable_x64", True)
    try:
        check_grads(fn, (x,), order=2)
    finally:
        oj.config.update("jax_enable_x64", False)


def test_under_jit_and_vmap_equal_jax():
    def f(m):
        return lambda x: (m.linalg.cond(x), m.linalg.matrix_rank(x), m.linalg.vector_norm(x),
                          m.linalg.multi_dot([x, x, x[0]]))
    _same(oj.jit(oj.vmap(f(ojnp)))(BATCH), jax.vmap(f(jjnp))(BATCH), 1e-3)


def test_solving_with_an_infinite_right_hand_side_gives_jaxs_infinities():
    """The LU solve permutes b's rows by gathering them: a permutation matrix's zeros times
    an infinite entry made NaN where JAX has infinities."""
    a = np.array([[4.0, 1.0], [2.0, 3.0]], np.float32)
    b = np.array([[np.inf, 1.0], [1.0, 2.0]], np.float32)
    for module in (oj, jax):
        np.testing.assert_array_equal(module.numpy.linalg.solve(a, b[:, 0]), [np.inf, -np.inf])
    for f in (lambda m: m.numpy.linalg.solve(a, b),
              lambda m: m.scipy.linalg.lu_solve(m.scipy.linalg.lu_factor(a), b)):
        np.testing.assert_array_equal(f(oj), f(jax))
