"""``jax.ops``' segment reductions against JAX's: values, dtypes and weak types (empty segments
keep the identity, ids out of range are dropped, negative ones too), gradients, ``jit`` with a
static ``num_segments``, ``vmap``, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

NAMES = ["segment_sum", "segment_max", "segment_min", "segment_prod"]
DATA = np.arange(12.0, dtype=np.float32).reshape(6, 2) - 5
IDS = np.array([0, 2, 0, 5, -1, 2])  # 1 and 3 empty below 6; -1 dropped; 5 dropped below 5


def same(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert bool(getattr(got, "weak_type", False)) == bool(getattr(want, "weak_type", False))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("num_segments", [None, 4, 7])
def test_values_match_jax(name, num_segments):
    for data in (DATA, DATA[:, 0], DATA.astype(np.int32), np.ones((6, 2, 3), np.float32)):
        same(getattr(oj.ops, name)(data, IDS, num_segments),
             getattr(jax.ops, name)(data, IDS, num_segments))


@pytest.mark.parametrize("name", ["segment_sum", "segment_max", "segment_min"])
def test_gradients_match_jax_ties_included(name):
    data = DATA.copy()
    data[2] = data[0]  # a tie in segment 0: max and min split the cotangent
    weights = np.arange(8.0, dtype=np.float32).reshape(4, 2)

    def loss(lib):
        return lambda x: (getattr(lib.ops, name)(x, IDS, 4) * weights).sum()
    want = np.asarray(jax.grad(loss(jax))(data))
    np.testing.assert_array_equal(np.asarray(oj.grad(loss(oj))(data)), want)
    np.testing.assert_array_equal(np.asarray(oj.jit(oj.grad(loss(oj)))(data)), want)


def test_segment_prod_gradient_is_the_product_of_the_others():
    """JAX refuses it (scatter_mul wants unique_indices); here it is exact."""
    data = np.array([2.0, 3.0, 0.0, 5.0], np.float32)
    g = oj.grad(lambda x: oj.ops.segment_prod(x, np.array([0, 0, 1, 1]), 2).sum())(data)
    assert np.asarray(g).tolist() == [3.0, 2.0, 5.0, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_jit_and_vmap_match_jax(name):
    ours, theirs = getattr(oj.ops, name), getattr(jax.ops, name)
    same(oj.jit(ours, static_argnums=2)(DATA, IDS, 4), theirs(DATA, IDS, 4))
    batch = np.stack([DATA, 2 * DATA])
    same(oj.vmap(lambda x: ours(x, IDS, 4))(batch), jax.vmap(lambda x: theirs(x, IDS, 4))(batch))


@pytest.mark.parametrize("call, error, words", [
    (lambda ops: oj.jit(ops.segment_sum)(DATA, IDS), oj.errors.ConcretizationTypeError,
     "Pass num_segments"),
    (lambda ops: ops.segment_sum(DATA, IDS.astype(np.float32), 3), TypeError, "integers"),
    (lambda ops: ops.segment_sum(DATA, IDS[:4], 3), ValueError, "one entry per segment id"),
    (lambda ops: ops.segment_sum(DATA[:0], IDS[:0]), ValueError, "pass num_segments"),
])
def test_errors(call, error, words):
    with pytest.raises(error, match=words):
        call(oj.ops)
