"""``lax.stack``, ``unstack``, ``empty``, ``broadcast_like``, ``mulhi`` and ``ragged_dot``
against JAX 0.10.2 (each an ``AttributeError`` under the import swap before): values,
dtypes, weak types and shapes, eagerly and a few under ``jit``; the gradients of the
composed ones; and the errors of misuse, of JAX's classes."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 3)).astype(np.float32)
LHS = RNG.standard_normal((6, 3)).astype(np.float32)
RHS = RNG.standard_normal((3, 3, 2)).astype(np.float32)
SIZES = np.array([2, 1, 2], np.int32)


def _integers(dtype):
    """Random integers of ``dtype`` over its whole range, the extremes and zero first."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, 40), endpoint=True).astype(dtype)
    x[:, :4] = [[info.min, info.max, 0, info.max], [info.min, info.min, info.max, info.max]]
    return x


INTEGERS = {dtype: _integers(dtype) for dtype in
            (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32)}

CASES = {
    **{f"mulhi_{np.dtype(t).name}": (lambda j, x=x: j.lax.mulhi(x[0], x[1]))
       for t, x in INTEGERS.items()},
    "mulhi_of_python_ints": lambda j: j.lax.mulhi(7, -9),
    "stack": lambda j: j.lax.stack([X, X + 1], axis=1),
    "stack_last_axis": lambda j: j.lax.stack([X, X + 1], axis=-1),
    "stack_of_python_floats": lambda j: j.lax.stack([1.0, 2.0]),
    "unstack": lambda j: j.lax.unstack(X, axis=1),
    "unstack_negative_axis": lambda j: j.lax.unstack(X, axis=-2),
    "empty": lambda j: j.lax.empty((2, 3), np.int32),
    "broadcast_like": lambda j: j.lax.broadcast_like(X[0], np.zeros((4, 2, 3))),
    "broadcast_like_size_one": lambda j: j.lax.broadcast_like(X[:1], np.zeros((4, 2, 3))),
    "broadcast_like_python_float": lambda j: j.lax.broadcast_like(1.0, np.zeros(2)),
    **{f"ragged_dot_{'_'.join(map(str, sizes))}": (
        lambda j, sizes=sizes: j.lax.ragged_dot(LHS, RHS, np.array(sizes, np.int32)))
       for sizes in ([2, 1, 2], [4, 4, 4], [0, 6, 0], [0, 0, 0])},
    "ragged_dot_int8": lambda j: j.lax.ragged_dot(LHS.astype(np.int8), RHS.astype(np.int8),
                                                  SIZES),
    "ragged_dot_preferred_type": lambda j: j.lax.ragged_dot(
        LHS.astype(np.int8), RHS.astype(np.int8), SIZES, preferred_element_type=np.float32),
}
UNDER_JIT = ["mulhi_int32", "mulhi_uint8", "stack", "unstack", "empty", "broadcast_like",
             "ragged_dot_2_1_2"]


def _same(ours, theirs):
    ours, theirs = oj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert (np.asarray(o).dtype, np.shape(o)) == (np.asarray(t).dtype, np.shape(t))
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eagerly_as_jax(name):
    _same(CASES[name](oj), CASES[name](jax))


@pytest.mark.parametrize("name", UNDER_JIT)
def test_under_jit_as_jax(name):
    _same(oj.jit(lambda: CASES[name](oj))(), CASES[name](jax))


def test_gradients_as_jax():
    def ragged(j):
        return j.grad(lambda a, b: (j.lax.ragged_dot(a, b, SIZES) ** 2).sum(),
                      argnums=(0, 1))(LHS, RHS)

    def stacked(j):
        return j.grad(lambda a: (j.lax.stack([a, 2 * a], 1) ** 2).sum())(X)

    def unstacked(j):
        return j.grad(lambda a: (j.lax.unstack(a)[1] ** 3).sum())(X)

    for case in (ragged, stacked, unstacked):
        _same(case(oj), case(jax))


ERRORS = {
    "stack_of_two_dtypes": lambda j: j.lax.stack([np.ones(2, np.float32),
                                                  np.ones(2, np.int32)]),
    "stack_of_two_shapes": lambda j: j.lax.stack([np.ones(2), np.ones(3)]),
    "stack_of_nothing": lambda j: j.lax.stack([]),
    "stack_axis_out_of_range": lambda j: j.lax.stack([np.ones(2)], axis=3),
    "unstack_axis_out_of_range": lambda j: j.lax.unstack(np.ones(2), axis=2),
    "broadcast_like_mismatch": lambda j: j.lax.broadcast_like(np.ones(3), np.zeros((3, 2))),
    "mulhi_of_floats": lambda j: j.lax.mulhi(np.ones(2), np.ones(2)),
    "mulhi_of_two_dtypes": lambda j: j.lax.mulhi(np.ones(2, np.int32), np.ones(2, np.int16)),
    "ragged_dot_too_few_groups": lambda j: j.lax.ragged_dot(LHS, RHS[:2], SIZES),
    "ragged_dot_too_few_sizes": lambda j: j.lax.ragged_dot(LHS, RHS, SIZES[:2]),
    "ragged_dot_contraction_mismatch": lambda j: j.lax.ragged_dot(LHS[:, :2], RHS, SIZES),
    "ragged_dot_float_sizes": lambda j: j.lax.ragged_dot(LHS, RHS, SIZES.astype(np.float32)),
    "empty_of_no_dtype": lambda j: j.lax.empty((2,), "foo"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_misuse_raises_as_jax(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](jax)
    with pytest.raises(theirs.type):
        ERRORS[name](oj)
