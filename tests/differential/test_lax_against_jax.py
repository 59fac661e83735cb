"""``jax.lax``'s functions of ``lax_composed.py`` against JAX (values, dtypes, weak types,
errors, gradients, under jit and vmap), and the ``<name>_p`` primitives we export under
JAX's names."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jjnp  # noqa: E402
from stage1_autodiff.core import Primitive  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage1_autodiff as s1  # noqa: E402
import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(2)
F = RNG.standard_normal((3, 4)).astype(np.float32)
TIES = np.array([-2.5, -1.5, -0.5, -0.3, -0.0, 0.0, 0.49999997, 0.5, 1.5, 2.5, 3.7, 1e8 + 1,
                 np.inf, -np.inf, np.nan], np.float32)
EDGES = np.array([0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 3.4e38, -1e-45], np.float32)


def _ints(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    picks = [0, 1, 2, 3, 7, 8, 255, info.max, info.min, info.max // 3]
    if info.min < 0:
        picks += [-1, -2, -128]
    return np.array([p for p in picks if info.min <= p <= info.max], dtype=dtype)


def _same(got, want, tol=1e-6, signed_zeros=True):
    got, want = oj.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert getattr(g, "weak_type", False) == getattr(w, "weak_type", False), "weak type"
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
        if signed_zeros and g.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(np.asarray(g)), np.signbit(np.asarray(w)))


CASES = {
    "reciprocal": lambda lax: lax.reciprocal(F),
    "reciprocal_python": lambda lax: lax.reciprocal(2.0),
    "square": lambda lax: lax.square(F),
    "square_int": lambda lax: lax.square(_ints(np.int8)),
    "square_python": lambda lax: lax.square(3),
    "square_complex": lambda lax: lax.square(F[0] + 1j * F[1]),
    "round": lambda lax: lax.round(TIES),
    "round_even": lambda lax: lax.round(TIES, lax.RoundingMethod.TO_NEAREST_EVEN),
    "round_even_int_method": lambda lax: lax.round(TIES * 3, 1),
    "round_python": lambda lax: lax.round(-2.5),
    "round_float16": lambda lax: lax.round(TIES.astype(np.float16), 1),
    "round_bfloat16": lambda lax: lax.round(TIES.astype(jjnp.bfloat16)),
    "is_finite": lambda lax: lax.is_finite(EDGES),
    "is_finite_python": lambda lax: lax.is_finite(2.5),
    "is_finite_float16": lambda lax: lax.is_finite(EDGES.astype(np.float16)),
    "dot_vv": lambda lax: lax.dot(F[0], F[1]),
    "dot_mv": lambda lax: lax.dot(F, F[0]),
    "dot_mm": lambda lax: lax.dot(F, F.T),
    "dot_int": lambda lax: lax.dot(_ints(np.int32)[:4], _ints(np.int32)[4:8]),
    "dot_preferred": lambda lax: lax.dot(_ints(np.int8)[:4] * 40, _ints(np.int8)[4:8] * 40,
                                         precision=lax.Precision.HIGHEST,
                                         preferred_element_type=np.int32),
    "dot_dimension_numbers": lambda lax: lax.dot(
        F.reshape(3, 2, 2), F.reshape(3, 2, 2), dimension_numbers=(((2,), (1,)), ((0,), (0,)))),
    "broadcast": lambda lax: lax.broadcast(F, (2, 1)),
    "broadcast_python": lambda lax: lax.broadcast(2.0, (3,)),
    "broadcast_none": lambda lax: lax.broadcast(2.0, ()),
    "broadcasted_iota": lambda lax: lax.broadcasted_iota(np.float32, (2, 3), 1),
    "broadcasted_iota_int": lambda lax: lax.broadcasted_iota(np.int32, (4, 2, 3), 0),
    "slice_in_dim": lambda lax: lax.slice_in_dim(F, 1, None, axis=1),
    "slice_in_dim_negative": lambda lax: lax.slice_in_dim(F, -3, -1),
    "slice_in_dim_stride": lambda lax: lax.slice_in_dim(F, None, None, 2, -1),
    "index_in_dim": lambda lax: lax.index_in_dim(F, 2),
    "index_in_dim_squeezed": lambda lax: lax.index_in_dim(F, -1, axis=1, keepdims=False),
    "index_in_dim_negative_axis": lambda lax: lax.index_in_dim(F, 0, axis=-1, keepdims=False),
    "sort_key_val": lambda lax: lax.sort_key_val(np.array([3, 1, 2, 1]), F[0]),
    "sort_key_val_dimension": lambda lax: lax.sort_key_val(F, F * 2, dimension=0),
    "collapse": lambda lax: lax.collapse(F.reshape(3, 2, 2), 1),
    "collapse_range": lambda lax: lax.collapse(F.reshape(1, 3, 2, 2), 0, -1),
    "collapse_empty_range": lambda lax: lax.collapse(F, 1, 1),
    "population_count_python": lambda lax: lax.population_count(7),
    "clz_python": lambda lax: lax.clz(7),
    **{f"population_count_{np.dtype(t).name}": (lambda t: lambda lax: lax.population_count(
        _ints(t)))(t) for t in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)},
    **{f"clz_{np.dtype(t).name}": (lambda t: lambda lax: lax.clz(_ints(t)))(t)
       for t in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lax_function_equals_jax(name):
    with np.errstate(all="ignore"):
        _same(CASES[name](oj.lax), CASES[name](jax.lax))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_bit_counts_of_64_bit_integers_equal_jax(dtype, x64_both):
    _same(oj.lax.population_count(_ints(dtype)), jax.lax.population_count(_ints(dtype)))
    _same(oj.lax.clz(_ints(dtype)), jax.lax.clz(_ints(dtype)))


@pytest.mark.parametrize("name", ["reciprocal_python", "round_python", "square_python",
                                  "broadcast_python", "is_finite", "dot_mm"])
def test_lax_function_equals_jax_with_x64(name, x64_both):
    _same(CASES[name](oj.lax), CASES[name](jax.lax))


ERRORS = {
    "reciprocal_int": lambda lax: lax.reciprocal(np.int32(3)),
    "square_bool": lambda lax: lax.square(np.array([True])),
    "round_int": lambda lax: lax.round(np.int32(3)),
    "round_complex": lambda lax: lax.round(np.complex64(1)),
    "round_method": lambda lax: lax.round(F, 2),
    "is_finite_int": lambda lax: lax.is_finite(np.arange(3)),
    "is_finite_complex": lambda lax: lax.is_finite(np.complex64(1)),
    "population_count_float": lambda lax: lax.population_count(F),
    "population_count_bool": lambda lax: lax.population_count(np.array([True])),
    "clz_bool": lambda lax: lax.clz(np.array([True])),
    "dot_batched": lambda lax: lax.dot(F.reshape(3, 2, 2), F[0]),
    "dot_mismatch": lambda lax: lax.dot(F, F),
    "index_in_dim": lambda lax: lax.index_in_dim(F, 3),
    "index_in_dim_negative": lambda lax: lax.index_in_dim(F, -5, axis=1),
    "collapse": lambda lax: lax.collapse(F.reshape(3, 2, 2), 2, 1),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_lax_function_raises_as_jax(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](jax.lax)
    with pytest.raises(theirs.type) as ours:
        ERRORS[name](oj.lax)
    if theirs.type in (TypeError, IndexError):
        assert str(ours.value) == str(theirs.value)


GRAD_CASES = {
    "reciprocal": lambda x: s1.lax.reciprocal(x + 3.0),
    "square": lambda x: s1.lax.square(x),
    "dot": lambda x: s1.lax.dot(x, x.T),
    "broadcast": lambda x: s1.lax.broadcast(x, (2,)) * x,
    "slice_in_dim": lambda x: s1.lax.slice_in_dim(x, 1, 3, axis=1) ** 2,
    "index_in_dim": lambda x: s1.lax.index_in_dim(x, 1, keepdims=False) ** 3,
    "sort_key_val": lambda x: s1.lax.sort_key_val(x[0], x[1])[1] ** 2,
    "collapse": lambda x: s1.lax.collapse(x, 0) ** 2,
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_to_order_2(name):
    x = np.random.default_rng(4).standard_normal((2, 4))
    s1.config.update("jax_enable_x64", True)
    try:
        check_grads(GRAD_CASES[name], (x,), order=2)
    finally:
        s1.config.update("jax_enable_x64", False)


def test_round_gradient_is_zero_as_jax():
    def f(lax):
        return lambda x: (lax.round(x) * x + lax.round(x, 1)).sum()
    # (JAX adds no term for round's zero derivative; ours adds a 0, which can unsign a -0.0)
    _same(oj.grad(f(oj.lax))(TIES[:-3]), jax.grad(f(jax.lax))(TIES[:-3]), signed_zeros=False)


def test_under_jit_and_vmap_equal_jax():
    def f(lax):
        return lambda x: (lax.round(x * 4.0, 1), lax.is_finite(1.0 / x), lax.square(x),
                          lax.dot(x, x), lax.index_in_dim(x, 1, keepdims=False),
                          lax.population_count(lax.convert_element_type(x * 100, np.int32)))
    _same(oj.jit(oj.vmap(f(oj.lax)))(F), jax.vmap(f(jax.lax))(F))


def test_primitives_have_jax_s_names_and_are_the_ones_bound():
    """``jax.lax.<name>_p`` is the object a jaxpr's equations hold, named as JAX's."""
    ours = sorted(n for n in dir(oj.lax) if n.endswith("_p"))
    assert len(ours) > 100
    for name in ours:
        assert isinstance(getattr(oj.lax, name), Primitive)
        # (JAX names the scatters with a hyphen, scatter-add; ours keep the Python name)
        theirs = getattr(jax.lax, name).name.replace("-", "_")
        assert getattr(oj.lax, name).name == theirs, name
    jaxpr = oj.make_jaxpr(lambda x: oj.lax.mul(oj.lax.add(x, x), x))(1.0)
    assert [eqn.primitive for eqn in jaxpr.jaxpr.eqns] == [oj.lax.add_p, oj.lax.mul_p]
