"""JAX's smaller ``lax`` conveniences (``lax_composed.py``, and ``axis_size`` beside the
collectives) against JAX: values, dtypes, weak types, errors, and gradients where they
compute."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage4_sharding as oj  # noqa: E402

X = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)


def _same(ours, theirs, tol=1e-5):
    ours, theirs = oj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=tol, atol=tol)


def _scatter_numbers(lax):
    return lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))


CASES = {
    "broadcast_to_rank": lambda j: j.lax.broadcast_to_rank(X[0], 3),
    "broadcast_to_rank_same": lambda j: j.lax.broadcast_to_rank(X, 1),
    "batch_matmul": lambda j: j.lax.batch_matmul(np.stack([X, X * 2]),
                                                np.stack([X.T, X.T + 1])),
    "batch_matmul_2d": lambda j: j.lax.batch_matmul(X, X.T),
    "cumlogsumexp": lambda j: j.lax.cumlogsumexp(X, axis=1),
    "cumlogsumexp_reverse": lambda j: j.lax.cumlogsumexp(X * 100, axis=0, reverse=True),
    "split": lambda j: j.lax.split(X, (1, 3), axis=1),
    "split_empty_piece": lambda j: j.lax.split(X, (0, 3, 0), axis=0),
    "optimization_barrier": lambda j: j.lax.optimization_barrier((X, 3.0, [np.int32(2)])),
    "scatter_sub": lambda j: j.lax.scatter_sub(X[0], np.array([[1], [3], [1]]),
                                               np.float32([2.0, 3.0, 0.5]),
                                               _scatter_numbers(j.lax)),
    # lax.full without a dtype, and full_like with dtype, shape or keywords: each raised
    # TypeError here once (a required dtype, unknown keywords)
    "full_of_a_python_float": lambda j: j.lax.full((2, 3), 1.5),
    "full_of_a_python_int": lambda j: j.lax.full((2,), 3),
    "full_of_a_numpy_scalar": lambda j: j.lax.full((2,), np.float32(2)),
    "full_by_keyword": lambda j: j.lax.full((2,), fill_value=1.5, dtype=np.int32),
    "full_like_dtype": lambda j: j.lax.full_like(X, 2, dtype=np.int32),
    "full_like_shape": lambda j: j.lax.full_like(X, 2, shape=(5,)),
    "full_like_weak": lambda j: j.lax.full_like(1.0, fill_value=3),
    "iota": lambda j: j.lax.iota(np.int32, 5),
    "iota_float": lambda j: j.lax.iota("float32", np.int64(3)),
    "iota_empty": lambda j: j.lax.iota(np.uint8, 0),
    "axis_size": lambda j: j.vmap(j.vmap(lambda x: x * j.lax.axis_size(("i", "j")),
                                         axis_name="j"), axis_name="i")(X),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lax_conveniences_match_jax(name):
    _same(CASES[name](oj), CASES[name](jax))


def test_broadcast_shapes_and_dtype_match_jax():
    for shapes in [((2, 1), (3,)), ((), (4, 1, 2)), ((5,),)]:
        assert oj.lax.broadcast_shapes(*shapes) == jax.lax.broadcast_shapes(*shapes)
    for value in (1.0, 2, True, np.int64(1), X, np.float16(1)):
        assert oj.lax.dtype(value) == jax.lax.dtype(value)


def test_axis_size_is_a_python_int():
    sizes = []
    oj.vmap(lambda x: sizes.append(oj.lax.axis_size("i")) or x, axis_name="i")(X)
    assert sizes == [3] and type(sizes[0]) is int


def test_cumlogsumexp_and_scatter_sub_have_gradients():
    x = X.astype(np.float64)
    with oj.enable_x64(True):
        check_grads(lambda x: oj.lax.cumlogsumexp(x, axis=1, reverse=True), (x,), order=2)
        check_grads(lambda x: oj.lax.scatter_sub(x[0], np.array([[1], [3]]), x[1, :2],
                                                 _scatter_numbers(oj.lax)), (x,), order=2)


@pytest.mark.parametrize("call, words", [
    (lambda j: j.lax.broadcast_shapes((2,), (3,)), "Incompatible shapes"),
    (lambda j: j.lax.batch_matmul(X, np.stack([X, X])), "same ndim"),
    (lambda j: j.lax.split(X, (1, 1)), "Sum of sizes 2"),
])
def test_bad_arguments_raise_jaxs_errors(call, words):
    with pytest.raises(ValueError, match=words):
        call(jax)
    with pytest.raises(ValueError, match=words):
        call(oj)


@pytest.mark.parametrize("size", [(3,), -1, 2.5])
def test_iota_takes_a_length_as_jax_does(size):
    for module in (jax, oj):
        with pytest.raises(TypeError, match="Shapes must be|nonnegative"):
            module.lax.iota(np.int32, size)
