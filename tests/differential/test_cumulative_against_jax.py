"""lax.cumsum/cumprod/cummax/cummin, associative_scan, reduce and top_k, and jnp.cumsum,
unique and round, against JAX: values, dtypes and weak types, gradients (numerically, to
order 2, and against JAX's, ties included), jit == eager, vmap == a loop, and the errors."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage3_vmap as ours  # noqa: E402
from stage3_vmap import lax as our_lax  # noqa: E402
from stage3_vmap import numpy as our_jnp  # noqa: E402

jnp, lax = jax.numpy, jax.lax
rng = np.random.default_rng(0)
X = rng.standard_normal((3, 5)).astype(np.float32)
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.5, 0.5, -1.0, 4.0, 4.0]], np.float32)
INTS = rng.integers(-3, 4, (3, 5)).astype(np.int32)
CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin"]


def same(ours_out, theirs):
    """Values, dtype and weak type of every leaf agree."""
    ours_leaves, their_leaves = ours.tree_util.tree_leaves(ours_out), jax.tree.leaves(theirs)
    assert len(ours_leaves) == len(their_leaves)
    for a, b in zip(ours_leaves, their_leaves):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CUMULATIVE)
@pytest.mark.parametrize("x", [X, INTS], ids=["f32", "i32"])
@pytest.mark.parametrize("axis, reverse", [(0, False), (1, True), (1, False)])
def test_cumulative_values_against_jax(name, x, axis, reverse):
    same(getattr(our_lax, name)(x, axis, reverse), getattr(lax, name)(x, axis, reverse))


def test_weak_type_is_kept():
    same(our_lax.cumsum(our_jnp.asarray(2.0) * our_jnp.ones(3)),
         lax.cumsum(jnp.asarray(2.0) * jnp.ones(3)))


@pytest.mark.parametrize("name", CUMULATIVE)
@pytest.mark.parametrize("x", [X, TIES, np.array([2.0, 0.0, -1.5, 0.0], np.float32)],
                         ids=["normal", "ties", "zeros"])
def test_cumulative_gradients_are_jaxs(name, x):
    """JAX differentiates the prefix scan: so do we, so ties share as in JAX."""
    for reverse in (False, True):
        def loss(lib):
            return lambda v: (getattr(lib.lax, name)(v, 0, reverse) * np.arange(
                1.0, 1.0 + v.shape[0], dtype=np.float32).reshape((-1,) + (1,) * (v.ndim - 1))
                ).sum()
        np.testing.assert_allclose(np.asarray(ours.grad(loss(ours))(x)),
                                   np.asarray(jax.grad(loss(jax))(x)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CUMULATIVE)
def test_cumulative_check_grads_order_2(name):
    x = X if name != "cumprod" else X * 0.5 + 1.0
    check_grads(lambda v: getattr(our_lax, name)(v, 1, True), (x,), order=2)


def test_jit_equals_eager_and_vmap_equals_a_loop():
    def f(v):
        return (our_lax.cumsum(v, 1), our_lax.cumprod(v, 0, True), our_lax.cummax(v, 1),
                our_lax.cummin(v, 1, True), *our_lax.top_k(v, 2))
    eager = f(X)
    for got, want in zip(ours.jit(f)(X), eager):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    # vmap over dim 1 of X: each example is a column, ops along its only axis 0
    def g(col):
        return (our_lax.cumsum(col, 0), our_lax.cummax(col, 0, True), *our_lax.top_k(col, 2))
    batched = ours.vmap(g, in_axes=1, out_axes=1)(X)
    for k, out in enumerate(batched):
        want = np.stack([np.asarray(g(X[:, i])[k]) for i in range(X.shape[1])], axis=1)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def test_cumulative_errors_are_jaxs():
    with pytest.raises(ValueError, match="out of bounds"):
        our_lax.cumsum(X, 2)
    with pytest.raises(ValueError, match="negative axes"):
        our_lax.cumsum(X, -1)
    with pytest.raises(TypeError, match="dtype bool"):
        our_lax.cumsum(np.array([True, False]))


# --- associative_scan and reduce ----------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_against_jax(n, reverse):
    x = rng.standard_normal((2, n)).astype(np.float32)
    same(our_lax.associative_scan(our_jnp.add, x, reverse=reverse, axis=1),
         lax.associative_scan(jnp.add, x, reverse=reverse, axis=1))
    # a non-commutative operation on a pytree: affine maps x -> a * x + b, composed in order
    def compose(lib):
        return lambda f, g: (f[0] * g[0], g[0] * f[1] + g[1])
    ab = (x[0], x[1])
    same(our_lax.associative_scan(compose(ours), ab, reverse=reverse, axis=0),
         lax.associative_scan(compose(jax), ab, reverse=reverse, axis=0))


def test_associative_scan_errors():
    with pytest.raises(TypeError, match="callable"):
        our_lax.associative_scan(1, X)
    with pytest.raises(ValueError, match="same first dimension"):
        our_lax.associative_scan(lambda a, b: a, (X, X[:2]))


@pytest.mark.parametrize("fn_name, init, dims", [
    ("add", 0.0, (1,)), ("mul", 1.0, (0,)), ("max", -np.inf, (0, 1)), ("min", np.inf, (1,)),
    ("add", 2.0, (0,)),  # not the identity: the general path
])
def test_reduce_against_jax(fn_name, init, dims):
    same(our_lax.reduce(X, np.float32(init), getattr(our_lax, fn_name), dims),
         lax.reduce(X, np.float32(init), getattr(lax, fn_name), dims))


def test_reduce_with_a_general_computation_and_pytrees():
    """An argmax as a reduction of (value, index) pairs, as people write it for lax.reduce."""
    def pick(lib):
        def better(a, b):
            take_a = a[0] >= b[0]
            return lib.numpy.where(take_a, a[0], b[0]), lib.numpy.where(take_a, a[1], b[1])
        return better
    index = np.broadcast_to(np.arange(5, dtype=np.int32), X.shape)
    same(our_lax.reduce((X, index), (np.float32(-np.inf), np.int32(0)), pick(ours), (1,)),
         lax.reduce((X, index), (np.float32(-np.inf), np.int32(0)), pick(jax), (1,)))
    check_grads(lambda v: our_lax.reduce(v, np.float32(0.0), lambda a, b: a + b * 1.0, (1,)),
                (X,), order=2)


# --- top_k --------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [X, TIES, INTS, np.array([1.0, np.nan, 3.0, np.inf, 3.0],
                                                      np.float32),
                               # 0.0 above -0.0 (XLA's total order): it once came in index order
                               np.array([-0.0, 0.0, 1.0, -0.0, 0.0], np.float32)], ids=str)
def test_top_k_against_jax(x):
    for k in (0, 1, x.shape[-1]):
        same(our_lax.top_k(x, k), lax.top_k(x, k))
    if x.ndim == 2:
        same(our_lax.top_k(x, 2, axis=0), lax.top_k(x, 2, axis=0))


def test_top_k_gradients():
    check_grads(lambda v: our_lax.top_k(v, 3)[0], (X,), order=2)
    loss = lambda lib: lambda v: (lib.lax.top_k(v, 2)[0] * np.float32([1.0, 2.0])).sum()
    np.testing.assert_allclose(np.asarray(ours.grad(loss(ours))(TIES)),
                               np.asarray(jax.grad(loss(jax))(TIES)))


def test_top_k_errors_are_jaxs():
    with pytest.raises(ValueError, match="no larger than size along axis"):
        our_lax.top_k(X, 6)
    with pytest.raises(ValueError, match="nonnegative"):
        our_lax.top_k(X, -1)


# --- jnp ----------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    "jnp.cumsum(a)", "jnp.cumsum(a, axis=1)", "jnp.cumsum(i, dtype=jnp.float32)",
    "jnp.cumprod(i, axis=0)", "jnp.cumsum(b)", "jnp.nancumsum(n)", "jnp.nancumprod(n, 0)",
    "jnp.round(a * 2.5)", "jnp.around(a * 100, 1)", "jnp.round(h)",
    "jnp.unique(i)", "jnp.unique(i, return_index=True, return_inverse=True, "
    "return_counts=True)", "jnp.unique(i, axis=0, return_counts=True)",
    "jnp.unique(n, size=6, fill_value=-1.0)", "jnp.unique(n)",
])
def test_jnp_against_jax(call):
    inputs = dict(a=X, i=INTS, b=X > 0, n=np.where(X > 1, np.nan, X),
                  h=np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.0], np.float32))
    same(eval(call, {"jnp": our_jnp}, inputs), eval(call, {"jnp": jnp}, inputs))


def test_unique_with_size_is_traceable():
    f = ours.jit(lambda v: our_jnp.unique(v, size=4, return_counts=True))
    same(f(INTS[0]), jnp.unique(INTS[0], size=4, return_counts=True))
    with pytest.raises(TypeError, match="size="):
        ours.jit(our_jnp.unique)(INTS)


def test_round_has_zero_gradient_and_cumsum_check_grads():
    np.testing.assert_array_equal(np.asarray(ours.grad(lambda v: our_jnp.round(v).sum())(X)),
                                  0.0)
    check_grads(lambda v: our_jnp.cumsum(v, axis=None), (X,), order=2)
