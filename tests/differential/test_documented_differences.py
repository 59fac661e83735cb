"""The differences from JAX that the library keeps on purpose, each asserted exactly as the
course page ``course/differences-from-jax.md`` states it: what JAX does, and what we do.

The page names each test here, and ``test_the_page_and_these_tests_name_each_other`` checks
both ways, so neither a difference nor its description can drift: if a difference goes away
(or changes), its test fails and the page is corrected with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import stage4_sharding.numpy as sjnp  # noqa: E402
from jax import lax  # noqa: E402

import stage4_sharding as sj  # noqa: E402
from stage4_sharding import lax as slax  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "course" / "differences-from-jax.md"


def raises(cls: type, fn, *args, match: str | None = None, **kwargs) -> None:
    with pytest.raises(cls, match=match):
        fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.float16, np.complex64])
def test_only_32_bit_and_64_bit_dtypes(dtype) -> None:
    x = np.ones(2, dtype)
    assert jnp.asarray(x).dtype == dtype
    raises(TypeError, sjnp.asarray, x, match=f"dtype {np.dtype(dtype).name} is not supported")


def test_jnp_also_exports_the_array_class() -> None:
    assert not hasattr(jnp, "Array") and jnp.ndarray is jax.Array
    assert sjnp.Array is sj.Array and sjnp.ndarray is sj.Array


# ------------------------------------------------------------------------------------------
# Indexing and updates
# ------------------------------------------------------------------------------------------


def test_a_boolean_scalar_index_raises() -> None:
    assert jnp.arange(3.0)[True].shape == (1, 3)
    raises(TypeError, sjnp.arange(3.0).__getitem__, True, match="Boolean scalar indices")


def test_where_needs_both_branches() -> None:
    (found,) = jnp.where(jnp.array([True, False, True]))
    assert found.tolist() == [0, 2]
    raises(ValueError, sjnp.where, sjnp.array([True, False, True]), match="pass both")


def test_repeated_indices_in_a_set_share_its_gradient() -> None:
    """``x.at[i].set(u)`` with ``i`` repeated: one update is written (the last, in both);
    JAX's gradient goes to that update alone, ours to every update of the position."""
    weights = np.array([1.0, 2.0, 3.0], np.float32)

    def loss(np_, u):
        return np_.sum(np_.zeros(3).at[np_.array([0, 0])].set(u) * weights)

    u = np.array([1.0, 2.0], np.float32)
    assert np.asarray(jnp.zeros(3).at[jnp.array([0, 0])].set(u)).tolist() == [2.0, 0, 0]
    assert np.asarray(sjnp.zeros(3).at[sjnp.array([0, 0])].set(u)).tolist() == [2.0, 0, 0]
    assert np.asarray(jax.grad(lambda u: loss(jnp, u))(u)).tolist() == [0.0, 1.0]
    assert np.asarray(sj.grad(lambda u: loss(sjnp, u))(u)).tolist() == [1.0, 1.0]


# ------------------------------------------------------------------------------------------
# Functions
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, shape, match", [
    ("ii->i", (2, 2), "repeated index"), ("...i->...", (2, 3), "ellipsis")])
def test_einsum_has_no_diagonals_and_no_ellipsis(spec: str, shape, match: str) -> None:
    x = np.ones(shape, np.float32)
    assert jnp.einsum(spec, x).shape == shape[:1]
    raises(NotImplementedError, sjnp.einsum, spec, x, match=match)


def test_pad_has_no_negative_padding() -> None:
    x = np.arange(4.0, dtype=np.float32)
    assert np.asarray(lax.pad(x, 0.0, [(-1, 1, 0)])).tolist() == [1.0, 2.0, 3.0, 0.0]
    raises(ValueError, slax.pad, sjnp.asarray(x), 0.0, [(-1, 1, 0)], match="negative padding")


@pytest.mark.parametrize("name", ["add", "mul"])
def test_lax_add_and_mul_take_bools(name: str) -> None:
    """``lax.add`` of bools is a logical or, ``lax.mul`` a logical and; JAX's refuse bools
    (``jnp.add`` and ``jnp.multiply`` of bools work in both)."""
    x, y = np.array([True, False, False]), np.array([True, True, False])
    raises(TypeError, getattr(lax, name), x, y, match="does not accept dtype bool")
    want = np.logical_or(x, y) if name == "add" else np.logical_and(x, y)
    got = getattr(slax, name)(sjnp.asarray(x), sjnp.asarray(y))
    assert got.dtype == np.bool_ and np.asarray(got).tolist() == want.tolist()


@pytest.mark.parametrize("name, bitwise", [("reduce_and", np.bitwise_and),
                                           ("reduce_or", np.bitwise_or)])
def test_reduce_and_and_reduce_or_are_logical(name: str, bitwise) -> None:
    x = np.array([3, 5, 6], np.int32)
    got_jax = getattr(lax, name)(x, (0,))
    assert got_jax.dtype == np.int32 and int(got_jax) == int(bitwise.reduce(x))
    ours = getattr(slax, name)(sjnp.asarray(x), (0,))
    assert ours.dtype == np.bool_
    assert bool(ours) == bool(np.logical_and.reduce(x) if name == "reduce_and" else
                              np.logical_or.reduce(x))


def test_lax_reshape_has_no_dimensions_argument() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = lax.reshape(x, (3, 2), dimensions=(1, 0))
    assert np.asarray(want).tolist() == x.T.reshape(3, 2).tolist()
    raises(TypeError, slax.reshape, sjnp.asarray(x), (3, 2), dimensions=(1, 0))


def test_gelu_is_only_the_tanh_approximation() -> None:
    assert float(jax.nn.gelu(1.0, approximate=False)) == pytest.approx(0.8413447, abs=1e-6)
    np.testing.assert_allclose(np.asarray(sj.nn.gelu(1.0)), np.asarray(jax.nn.gelu(1.0)),
                               rtol=1e-6)
    raises(NotImplementedError, sj.nn.gelu, 1.0, approximate=False, match="erf")


# ------------------------------------------------------------------------------------------
# Random numbers
# ------------------------------------------------------------------------------------------


def test_a_key_is_a_pytree_over_its_uint32_data() -> None:
    (jax_leaf,) = jax.tree_util.tree_leaves(jax.random.key(0))
    assert jax.dtypes.issubdtype(jax_leaf.dtype, jax.dtypes.prng_key)
    (leaf,) = sj.tree_util.tree_leaves(sj.random.key(0))
    assert leaf.dtype == np.uint32 and leaf.shape == (2,)
    assert np.asarray(leaf).tolist() == np.asarray(jax.random.key_data(jax.random.key(0))).tolist()


def test_permutation_is_only_of_whole_rows() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert jax.random.permutation(jax.random.key(0), x, independent=True).shape == (2, 3)
    raises(NotImplementedError, sj.random.permutation, sj.random.key(0), sjnp.asarray(x),
           independent=True, match="independent")


def test_uniform_with_bounds_is_within_an_ulp_of_jax() -> None:
    """The bits are JAX's, so [0, 1) draws are equal; scaling to other bounds rounds twice
    where XLA may fuse a multiply-add, which can move a value by one ulp of the range."""
    for minval, maxval in ((0.0, 1.0), (-3.0, 5.0), (2.0, 2.5)):
        want = np.asarray(jax.random.uniform(jax.random.key(3), (4096,), minval=minval,
                                             maxval=maxval))
        got = np.asarray(sj.random.uniform(sj.random.key(3), (4096,), minval=minval,
                                           maxval=maxval))
        ulp = np.spacing(np.float32(maxval - minval))
        assert np.abs(got - want).max() <= ulp, (minval, maxval)
        if (minval, maxval) == (0.0, 1.0):
            assert np.array_equal(got, want)


# ------------------------------------------------------------------------------------------
# Transformations
# ------------------------------------------------------------------------------------------


def test_custom_vjp_has_no_nondiff_argnums() -> None:
    def scale(k, x):
        return k * x

    jax.custom_vjp(scale, nondiff_argnums=(0,))  # accepted
    raises(NotImplementedError, sj.custom_vjp, scale, nondiff_argnums=(0,),
           match="nondiff_argnums")


def test_scatter_mul_is_differentiated_without_unique_indices() -> None:
    """JAX refuses to differentiate ``.at[].mul`` unless told the indices are unique; ours
    differentiates it, exactly where they are (with repeats, see the page)."""
    def f(np_, x, y):
        return np_.sum(x.at[np_.array([0, 2])].mul(y))

    x, y = np.array([2.0, 3.0, 4.0], np.float32), np.array([5.0, 7.0], np.float32)
    raises(NotImplementedError, jax.grad(lambda x, y: f(jnp, x, y), (0, 1)), x, y,
           match="unique_indices")
    gx, gy = sj.grad(lambda x, y: f(sjnp, x, y), (0, 1))(x, y)
    assert np.asarray(gx).tolist() == [5.0, 1.0, 7.0] and np.asarray(gy).tolist() == [2.0, 4.0]


# ------------------------------------------------------------------------------------------
# Devices and sharding
# ------------------------------------------------------------------------------------------


def test_there_are_always_8_simulated_devices() -> None:
    """Ours: 8 simulated CPU devices, whatever the machine; JAX: the platform's devices
    (this suite asks XLA for 8 CPU devices, oracle.prepare_jax, so that both have the meshes)."""
    assert len(sj.devices()) == 8 and sj.device_count() == 8
    assert {d.platform for d in jax.devices()} == {"cpu"}


# ------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------


def test_the_page_and_these_tests_name_each_other() -> None:
    text = PAGE.read_text(encoding="utf-8")
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", text))
    here = {name for name in globals() if name.startswith("test_")}
    here.discard("test_the_page_and_these_tests_name_each_other")
    assert named - here == set(), f"the page names tests that do not exist: {named - here}"
    assert here - named == set(), f"tests the page does not name: {here - named}"
