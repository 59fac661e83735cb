"""Linear algebra against JAX: ``lax.linalg``'s primitives, ``jnp.linalg`` and
``jax.scipy.linalg`` give JAX's values (float32 tolerance), dtypes and weak types; the
gradients agree with finite differences to order 2; and each primitive obeys the laws
(jit equals eager, vmap equals a loop, sharded over a batch dim equals unsharded)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jjnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
import stage4_sharding.numpy as ojnp  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402
from stage4_sharding.scipy import linalg as osl  # noqa: E402

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 4)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)
WIDE = TALL.T.copy()
B = RNG.standard_normal((4, 2)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
BATCH = RNG.standard_normal((3, 4, 4)).astype(np.float32)
SPD_BATCH = (BATCH @ BATCH.transpose(0, 2, 1) + 4 * np.eye(4)).astype(np.float32)


def _leaves(x):
    return oj.tree_util.tree_leaves(x)


def _same(ours, theirs, tol=2e-4):
    """Values (to float32 tolerance), dtypes and weak types, leaf by leaf."""
    ours, theirs = _leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.dtype == t.dtype, (o.dtype, t.dtype)
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=tol, atol=tol)


# Decompositions whose vectors are fixed only up to sign are compared through what they
# determine (products, projectors, singular values); LAPACK's signs agree with JAX's on CPU,
# so the direct comparisons hold too.
CASES = {
    "cholesky": (lambda m: m.linalg.cholesky(SPD), None),
    "cholesky_upper": (lambda m: m.linalg.cholesky(SPD, upper=True), None),
    "qr_reduced": (lambda m: m.linalg.qr(TALL), None),
    "qr_complete": (lambda m: m.linalg.qr(TALL, mode="complete"), None),
    "qr_r": (lambda m: m.linalg.qr(WIDE, mode="r"), None),
    "svd": (lambda m: m.linalg.svd(TALL, full_matrices=False), None),
    "svd_values": (lambda m: m.linalg.svd(BATCH, compute_uv=False), None),
    "eigh": (lambda m: m.linalg.eigh(SPD), None),
    "eigvalsh": (lambda m: m.linalg.eigvalsh(SPD_BATCH), None),
    "solve_vector": (lambda m: m.linalg.solve(A, V), None),
    "solve_matrix": (lambda m: m.linalg.solve(BATCH, B), None),
    "inv": (lambda m: m.linalg.inv(BATCH), 1e-3),
    "det": (lambda m: m.linalg.det(BATCH), 1e-3),
    "det_5x5": (lambda m: m.linalg.det(RNG_5), 1e-3),
    "slogdet": (lambda m: m.linalg.slogdet(BATCH), None),
    "pinv": (lambda m: m.linalg.pinv(TALL), None),
    "matrix_power": (lambda m: m.linalg.matrix_power(A, 5), 1e-3),
    "matrix_power_neg": (lambda m: m.linalg.matrix_power(SPD, -2), None),
    "lstsq": (lambda m: m.linalg.lstsq(TALL, TALL[:, 0] + 1)[:3], None),
    "trace": (lambda m: m.linalg.trace(BATCH, offset=1), None),
    "int_input": (lambda m: m.linalg.det(np.array([[2, 1], [1, 3]], np.int32)), None),
}
RNG_5 = RNG.standard_normal((5, 5)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jnp_linalg_matches_jax(name):
    fn, tol = CASES[name]
    _same(fn(ojnp), fn(jjnp), tol or 2e-4)


NORM_ORDS = [(None, None), ("fro", None), ("nuc", None), (1, None), (-1, None), (2, None),
             (-2, None), (np.inf, None), (-np.inf, None), (None, 0), (0, 1), (1, -1),
             (3, 0), (np.inf, 1), (-np.inf, 0), (2, (0, 2)), ("fro", (2, 1))]


@pytest.mark.parametrize("ord_, axis", NORM_ORDS, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_matches_jax(ord_, axis, keepdims):
    x = BATCH if isinstance(axis, tuple) and max(axis) == 2 else A
    _same(ojnp.linalg.norm(x, ord_, axis, keepdims), jjnp.linalg.norm(x, ord_, axis, keepdims))


def test_norm_of_a_python_list_and_weak_scalar():
    _same(ojnp.linalg.norm([3.0, 4.0]), jjnp.linalg.norm(jjnp.asarray([3.0, 4.0])))


SCIPY_CASES = {
    "cho_solve": lambda m: m.cho_solve(m.cho_factor(SPD), B),
    "cho_solve_lower_vector": lambda m: m.cho_solve(m.cho_factor(SPD, lower=True), V),
    "solve_triangular": lambda m: m.solve_triangular(np.tril(SPD), B, lower=True),
    "solve_triangular_T": lambda m: m.solve_triangular(np.triu(SPD), V, trans="T"),
    "solve_triangular_unit": lambda m: m.solve_triangular(np.tril(A), B, trans=1, lower=True,
                                                          unit_diagonal=True),
    "cholesky": lambda m: m.cholesky(SPD),
    "lu": lambda m: m.lu(TALL),
    "lu_permute_l": lambda m: m.lu(WIDE, permute_l=True),
    "qr": lambda m: m.qr(TALL, mode="economic"),
    "qr_r": lambda m: m.qr(TALL, mode="r"),
    "svd": lambda m: m.svd(A),
    "eigh": lambda m: m.eigh(SPD),
    "eigvals_only": lambda m: m.eigh(SPD, eigvals_only=True),
    "inv": lambda m: m.inv(SPD),
    "det": lambda m: m.det(SPD),
    "solve": lambda m: m.solve(SPD, B),
}


@pytest.mark.parametrize("name", sorted(SCIPY_CASES))
def test_scipy_linalg_matches_jax(name):
    _same(SCIPY_CASES[name](osl), SCIPY_CASES[name](jsl), 1e-3)


LAX_CASES = {
    "cholesky": lambda la: la.cholesky(SPD_BATCH),
    "triangular_solve": lambda la: la.triangular_solve(np.tril(SPD), B, left_side=True,
                                                     lower=True),
    "triangular_solve_right": lambda la: la.triangular_solve(np.triu(SPD), B.T,
                                                           transpose_a=True),
    "lu": lambda la: la.lu(TALL),
    "lu_wide": lambda la: la.lu(WIDE),
    "qr": lambda la: la.qr(BATCH),
    "eigh": lambda la: [abs(v) for v in la.eigh(SPD_BATCH)],  # eigenvectors up to sign
    "svd": lambda la: la.svd(WIDE),
}


@pytest.mark.parametrize("name", sorted(LAX_CASES))
def test_lax_linalg_matches_jax(name):
    _same(LAX_CASES[name](oj.lax.linalg), LAX_CASES[name](jax.lax.linalg), 1e-3)


def test_failures_give_nans_as_in_jax():
    not_pd = -SPD
    _same(ojnp.linalg.cholesky(not_pd), jjnp.linalg.cholesky(not_pd))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    _same(ojnp.linalg.slogdet(singular), jjnp.linalg.slogdet(singular))
    assert not np.isfinite(np.asarray(ojnp.linalg.inv(singular))).all()


ERRORS = {
    "cholesky_vector": lambda m: m.linalg.cholesky(V),
    "det_not_square": lambda m: m.linalg.det(TALL),
    "eigh_uplo": lambda m: m.linalg.eigh(SPD, UPLO="X"),
    "norm_bad_ord": lambda m: m.linalg.norm(A, ord=3),
    "norm_three_axes": lambda m: m.linalg.norm(BATCH, axis=(0, 1, 2)),
    "norm_bad_vector_ord": lambda m: m.linalg.norm(V, ord="fro"),
    "matrix_power_not_square": lambda m: m.linalg.matrix_power(TALL, 2),
    "qr_mode": lambda m: m.linalg.qr(A, mode="bogus"),
    "solve_legacy_batch": lambda m: m.linalg.solve(np.ones((2, 3, 3), np.float32),
                                                   np.ones((2, 3), np.float32)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_jaxs_classes(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](jjnp)
    with pytest.raises(theirs.type):
        ERRORS[name](ojnp)


def test_lax_errors_say_what_to_do():
    with pytest.raises(TypeError, match="floating-point"):
        oj.lax.linalg.cholesky(np.eye(2, dtype=np.int32))
    with pytest.raises(ValueError, match="square"):
        oj.lax.linalg.eigh(TALL)
    with pytest.raises(ValueError, match="batch shape"):
        oj.lax.linalg.triangular_solve(BATCH, np.ones((2, 4, 4), np.float32))
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        oj.grad(lambda x: oj.lax.linalg.qr(x)[0].sum())(TALL)


# ------------------------------------------------------------------------------------------
# Gradients, numerically, to order 2 (float64, where finite differences are sharp)
# ------------------------------------------------------------------------------------------

X64 = np.random.default_rng(3).standard_normal((3, 3))
SPD64 = X64 @ X64.T + 3 * np.eye(3)
GRAD_CASES = {
    "cholesky": (lambda a: ojnp.linalg.cholesky(a), SPD64),
    "solve": (lambda a: ojnp.linalg.solve(a, X64[:, :2]), X64),
    "det": (lambda a: ojnp.linalg.det(a), X64),
    "det_4x4": (lambda a: ojnp.linalg.det(a), np.kron(np.eye(2), X64[:2, :2]) + np.eye(4)),
    "slogdet": (lambda a: ojnp.linalg.slogdet(a).logabsdet, X64),
    "inv": (lambda a: ojnp.linalg.inv(a), X64),
    "eigh_values": (lambda a: ojnp.linalg.eigh(a).eigenvalues, SPD64),
    "eigh_vectors": (lambda a: ojnp.abs(ojnp.linalg.eigh(a).eigenvectors), SPD64),
    "svd_values": (lambda a: ojnp.linalg.svd(a, compute_uv=False), X64[:, :2]),
    "svd_vectors": (lambda a: ojnp.linalg.svd(a, full_matrices=False), X64[:2]),
    "qr": (lambda a: ojnp.linalg.qr(a), X64[:, :2]),
    "qr_wide": (lambda a: ojnp.linalg.qr(a), X64[:2]),
    "lu": (lambda a: oj.lax.linalg.lu(a)[0], X64[:2]),
    "triangular_solve": (lambda a: osl.solve_triangular(a, X64, lower=True), SPD64),
    "cho_solve": (lambda a: osl.cho_solve(osl.cho_factor(a), X64[0]), SPD64),
    "pinv": (lambda a: ojnp.linalg.pinv(a), X64[:, :2]),
}


@pytest.fixture
def x64():
    oj.config.update("jax_enable_x64", True)
    yield
    oj.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_to_order_2(name, x64):
    fn, x = GRAD_CASES[name]
    check_grads(fn, (x,), order=2)


def test_gradient_matches_jaxs():
    def loss(m):
        return lambda a: m.linalg.slogdet(a)[1] + m.linalg.cholesky(a @ a.T + 4 * m.eye(4)).sum()
    _same(oj.grad(loss(ojnp))(A), jax.grad(loss(jjnp))(A), 1e-3)


# ------------------------------------------------------------------------------------------
# Laws of each primitive: jit == eager, vmap == loop, sharded == unsharded
# ------------------------------------------------------------------------------------------

PRIMITIVES = {
    "cholesky": lambda la, x: la.cholesky(x),
    "triangular_solve": lambda la, x: la.triangular_solve(x, x[..., :2], left_side=True,
                                                        lower=True),
    "lu": lambda la, x: la.lu(x),
    "qr": lambda la, x: la.qr(x, full_matrices=False),
    "eigh": lambda la, x: la.eigh(x),
    "svd": lambda la, x: la.svd(x),
}
STACK = np.stack([SPD_BATCH[0], SPD_BATCH[1], SPD_BATCH[2], SPD]).repeat(2, axis=0)  # 8


def _close(xs, ys):
    for x, y in zip(_leaves(xs), _leaves(ys)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_jit_equals_eager_and_vmap_equals_a_loop(name):
    fn = PRIMITIVES[name]
    eager = fn(oj.lax.linalg, STACK)
    _close(oj.jit(lambda x: fn(oj.lax.linalg, x))(STACK), eager)
    batched = oj.vmap(lambda x: fn(oj.lax.linalg, x))(STACK)
    loop = [fn(oj.lax.linalg, x) for x in STACK]
    for i, example in enumerate(loop):
        _close([leaf[i] for leaf in _leaves(batched)], example)


def test_vmap_of_grad_equals_a_loop():
    g = oj.grad(lambda x: ojnp.linalg.slogdet(x)[1] + oj.lax.linalg.eigh(x)[1][-1])
    batched = oj.vmap(g)(STACK)
    for i, x in enumerate(STACK):
        _close([batched[i]], [g(x)])


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_sharded_over_the_batch_equals_unsharded(name):
    from stage4_sharding.sharding import NamedSharding
    from stage4_sharding.sharding import PartitionSpec as P
    mesh = oj.make_mesh((8,), ("data",))
    sharded = oj.device_put(STACK, NamedSharding(mesh, P("data")))
    fn = oj.jit(lambda x: PRIMITIVES[name](oj.lax.linalg, x))
    out = fn(sharded)
    _close(out, fn(STACK))
    for leaf in _leaves(out):
        assert str(oj.typeof(leaf)).split("[")[1].startswith("8@data")


def test_a_split_matrix_dim_is_refused():
    from stage4_sharding.sharding import NamedSharding
    from stage4_sharding.sharding import PartitionSpec as P
    mesh = oj.make_mesh((8,), ("data",))
    x = oj.device_put(np.tile(np.eye(8, dtype=np.float32), (2, 1, 1)),
                      NamedSharding(mesh, P(None, "data")))
    with pytest.raises(TypeError, match="reads each matrix whole"):
        oj.jit(lambda x: oj.lax.linalg.cholesky(x, symmetrize_input=False))(x)


def test_lstsq_under_x64_returns_its_rank_in_the_default_integer_type(x64_both):
    a = np.random.default_rng(0).standard_normal((5, 3))
    ours, theirs = ojnp.linalg.lstsq(a, np.ones(5)), jjnp.linalg.lstsq(a, np.ones(5))
    for o, t in zip(ours, theirs, strict=True):
        assert np.asarray(o).dtype == np.asarray(t).dtype
    assert np.asarray(ours[2]).dtype == np.int64 and int(ours[2]) == int(theirs[2]) == 3
