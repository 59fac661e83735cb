"""lax.dynamic_slice, dynamic_update_slice and their _in_dim forms against JAX: clamped and
negative starts, dtypes, gradients (numerically, to order 2), jit == eager (a gather and a
scatter in the kernel), vmap == a loop with batched starts, an update into a donated array
written in place, a sharded case, and the errors."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from stage1_autodiff.test_util import check_grads  # noqa: E402
from stage4_sharding.sharding import NamedSharding, P  # noqa: E402

import stage4_sharding as ours  # noqa: E402
from stage4_sharding import lax as our_lax  # noqa: E402
from stage4_sharding import numpy as our_jnp  # noqa: E402

jnp, lax = jax.numpy, jax.lax
X = np.arange(20, dtype=np.float32).reshape(4, 5) * 0.5 - 3.0
U = -np.ones((2, 3), np.float32)

CALLS = [
    "lax.dynamic_slice(x, (1, 2), (2, 3))",
    "lax.dynamic_slice(x, (3, -1), (2, 2))",  # clamped; -1 from the end, then clamped
    "lax.dynamic_slice(x, (-9, 7), (4, 1))",
    "lax.dynamic_slice(x, jnp.array([2, 1]), (1, 4))",
    "lax.dynamic_slice(x, (i, i), (2, 2))",
    "lax.dynamic_slice(x, (jnp.asarray(i), 0), (2, 2), allow_negative_indices=False)",
    "lax.dynamic_slice_in_dim(x, i, 2, axis=1)",
    "lax.dynamic_index_in_dim(x, 2)", "lax.dynamic_index_in_dim(x, i, 1, keepdims=False)",
    "lax.dynamic_update_slice(x, u, (1, 1))",
    "lax.dynamic_update_slice(x, u, (i, 4))",
    "lax.dynamic_update_slice(x, u, (-1, -2))",
    "lax.dynamic_update_slice_in_dim(x, u[:, :1] * 0 + x[:2, :1], i, 0)",
    "lax.dynamic_update_index_in_dim(x, u[0, :1].repeat(5) * 7.0, i, 0)",
    "lax.dynamic_update_index_in_dim(x, x[:, :1], 3, 1)",
]


def same(a, b):
    assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
    assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("i", [np.int32(-2), np.int32(1), np.int32(7)], ids=str)
def test_against_jax(call, i):
    ours_out = eval(call, {"lax": our_lax, "jnp": our_jnp}, dict(x=X, u=U, i=i))
    theirs = eval(call, {"lax": lax, "jnp": jnp}, dict(x=X, u=U, i=i))
    same(ours_out, theirs)


def test_integer_operands_and_the_jaxpr():
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    same(our_lax.dynamic_slice(ints, (1, 1), (2, 4)), lax.dynamic_slice(ints, (1, 1), (2, 4)))
    text = str(ours.make_jaxpr(lambda x, i: our_lax.dynamic_slice(x, (i, 1), (2, 2)))(X, 1))
    assert "dynamic_slice[slice_sizes=(2, 2)]" in text and "1:i32[]" in text


def test_gradients():
    check_grads(lambda x: our_lax.dynamic_slice(x, (np.int32(1), np.int32(3)), (2, 2)), (X,),
                order=2)
    check_grads(lambda x, u: our_lax.dynamic_update_slice(x, u * u, (np.int32(3), 1)), (X, U),
                order=2)
    loss = lambda lib: lambda x, u: (lib.lax.dynamic_update_slice(x, u, (2, -1)) ** 2).sum()
    for got, want in zip(ours.grad(loss(ours), (0, 1))(X, U), jax.grad(loss(jax), (0, 1))(X, U)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want))


def test_jit_equals_eager():
    def f(x, u, i):
        window = our_lax.dynamic_slice(x, (i, i + 1), (2, 3))
        return window * 2.0, our_lax.dynamic_update_slice(x, u + window, (i, 4))
    for i in (-1, 0, 2, 9):
        for got, want in zip(ours.jit(f)(X, U, np.int32(i)), f(X, U, np.int32(i))):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_vmap_equals_a_loop_with_batched_starts():
    starts = np.array([-3, 0, 1, 2, 6], np.int32)
    xs = np.stack([X * k for k in range(5)])
    def f(x, u, i):
        return (our_lax.dynamic_slice(x, (i, 1), (2, 3)),
                our_lax.dynamic_update_slice(x, u, (1, i)))
    for in_axes in [(0, None, 0), (None, None, 0), (0, None, None)]:
        got = ours.vmap(f, in_axes=in_axes)(xs if in_axes[0] == 0 else X, U,
                                              starts if in_axes[2] == 0 else np.int32(2))
        for k in range(5):
            want = f(xs[k] if in_axes[0] == 0 else X, U,
                     starts[k] if in_axes[2] == 0 else np.int32(2))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(np.asarray(g)[k], np.asarray(w))


def test_an_update_into_a_donated_array_is_written_in_place():
    big = ours.jit(lambda a: a + 0.0)(our_jnp.zeros((256, 512)))
    address = np.asarray(big).ctypes.data
    step = ours.jit(lambda a, u, i: our_lax.dynamic_update_slice(a, u, (i, 0)),
                    donate_argnums=0)
    out = step(big, our_jnp.ones((2, 512)), np.int32(5))
    assert big.is_deleted() and np.asarray(out).ctypes.data == address
    assert np.asarray(out)[5:7].all() and np.asarray(out).sum() == 2 * 512


def test_sharded_equals_unsharded():
    mesh = ours.make_mesh((8,), ("d",))
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    xs = ours.device_put(x, NamedSharding(mesh, P("d")))
    f = lambda v, i: (our_lax.dynamic_slice(v, (0, i), (8, 3)),
                      our_lax.dynamic_update_slice(v, v[:, :2] * 0.0, (0, i)))
    for run in (f, ours.jit(f)):
        for got, want in zip(run(xs, np.int32(6)), f(x, np.int32(6))):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            assert str(ours.typeof(got)).endswith("@d,3]") or "@d" in str(ours.typeof(got))


@pytest.mark.parametrize("call, error, match", [
    ("lax.dynamic_slice(x, (1,), (2, 2))", ValueError, "Length of slice indices"),
    ("lax.dynamic_update_slice(x, u, (1, 2, 3))", ValueError, "Length of slice indices"),
    ("lax.dynamic_slice(x, (jnp.array([1, 2]), 0), (2, 2))", TypeError, "must be scalars"),
    ("lax.dynamic_slice(x, (1.5, 0), (2, 2))", TypeError, "integers"),
    ("lax.dynamic_slice(x, (0, 0), (5, 2))", TypeError, "slice_sizes"),
    ("lax.dynamic_update_slice(x, u.astype(jnp.int32), (0, 0))", TypeError, "same dtypes"),
    ("lax.dynamic_slice(x, (-1, 0), (2, 2), allow_negative_indices=False)", ValueError,
     "out of bounds"),
])
def test_errors_are_jaxs(call, error, match):
    for lax_module, jnp_module in ((our_lax, our_jnp), (lax, jnp)):
        with pytest.raises(error, match=match if lax_module is our_lax else None):
            eval(call, {"lax": lax_module, "jnp": jnp_module}, dict(x=X, u=U))
