"""The differences from JAX that the library keeps on purpose, each asserted exactly as the
course's "Differences from JAX" pages (``course/differences/``) state it: what JAX does, and
what we do.

The pages name each test here, and ``test_the_page_and_these_tests_name_each_other`` checks
both ways, so neither a difference nor its description can drift: if a difference goes away
(or changes), its test fails and the page is corrected with it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import stage4_sharding.numpy as sjnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.scipy import linalg as jax_linalg  # noqa: E402

import stage4_sharding as sj  # noqa: E402
from stage4_sharding import lax as slax  # noqa: E402

PAGES = sorted((Path(__file__).resolve().parents[2] / "course" / "differences").glob("*.md"))


def raises(cls: type, fn, *args, match: str | None = None, **kwargs) -> None:
    with pytest.raises(cls, match=match):
        fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                   ml_dtypes.float6_e2m3fn])
def test_no_4_bit_integers_or_6_bit_floats(dtype) -> None:
    x = np.ones(2, dtype)
    if np.dtype(dtype).name.startswith("float6"):  # named by jnp, refused by XLA
        assert np.dtype(getattr(jnp, np.dtype(dtype).name)) == np.dtype(dtype)
        raises(Exception, jnp.asarray, x, match="F6E2M3FN")
    else:
        assert jnp.asarray(x).dtype == dtype
    raises(TypeError, sjnp.asarray, x, match=f"dtype {np.dtype(dtype).name} is not supported")


def test_8_bit_floats_sum_in_float32_without_xlas_accidents() -> None:
    results = {}
    for lib, m in ((jax, jnp), (sj, sjnp)):
        ones = m.ones(100, m.float8_e4m3fn)
        nan_first = m.asarray([np.nan, 1.0, -2.0]).astype(m.float8_e4m3fnuz)
        f4 = m.asarray([6.0, 0.0]).astype(m.float4_e2m1fn)
        results[lib] = (float(ones.sum()), float(m.mean(ones)),
                        bool(np.isnan(np.asarray(lib.nn.softmax(ones[:3]), np.float32)).all()),
                        np.isnan(np.asarray(m.sort(nan_first), np.float32)).tolist(),
                        int(m.argmax(m.asarray([1.0, np.nan, 8.0]).astype(m.float8_e8m0fnu))),
                        int(f4.astype(m.int32)[0]), bool(np.signbit(np.asarray(f4[1] / f4[1]))))
    assert results[jax] == (64.0, 0.6875, True, [True, False, False], 0, 2 ** 31 - 1, True)
    assert results[sj] == (96.0, 1.0, False, [False, False, True], 1, 6, False)
    x = np.random.default_rng(0).standard_normal(1000).astype(ml_dtypes.float8_e3m4)
    ours, theirs = (np.asarray(m.expm1(x)).view(np.uint8) for m in (sjnp, jnp))
    rounded_twice = np.expm1(x.astype(np.float32)).astype(np.float16).astype(x.dtype)
    assert np.array_equal(ours, rounded_twice.view(np.uint8))
    assert 0 < np.sum(ours != theirs) < 50


def test_jnp_also_exports_the_array_class() -> None:
    assert not hasattr(jnp, "Array") and jnp.ndarray is jax.Array
    assert sjnp.Array is sj.Array and sjnp.ndarray is sj.Array


def test_jnp_reshape_of_a_numpy_array_gives_an_array() -> None:
    a = np.arange(6.0, dtype=np.float32)
    assert type(jnp.reshape(a, (2, 3))) is np.ndarray
    assert type(sjnp.reshape(a, (2, 3))) is sj.Array
    raises(ValueError, jnp.reshape, a, (7,))
    raises(TypeError, jnp.reshape, jnp.asarray(a), (7,))
    raises(TypeError, sjnp.reshape, a, (7,), match="cannot reshape array of size 6")


def test_weak_types_follow_one_rule_for_every_primitive() -> None:
    """Weak iff every operand of the result's dtype is weak (core._result_weak_type): int32
    starts or indices make a weak int32 slice strong; a weak float operand and update keep
    ``dynamic_update_slice`` weak; ``lax.reduce`` with a computation of its own is strong."""
    found = []
    for lib, L in ((jax, lax), (sj, slax)):
        ints = L.broadcast_in_dim(1, (5,), ())
        floats = L.broadcast_in_dim(1.0, (5,), ())
        start = np.int32(1)
        found.append((ints.weak_type and floats.weak_type,
                      L.dynamic_slice(floats, (start,), (2,)).weak_type,
                      L.dynamic_slice(ints, (start,), (2,)).weak_type,
                      ints[np.array([1, 2], np.int32)].weak_type,
                      L.dynamic_update_slice(floats, L.broadcast_in_dim(2.0, (2,), ()),
                                             (start,)).weak_type,
                      L.reduce(floats, 0.0, lambda a, b: a * b + a + b, (0,)).weak_type,
                      L.reduce(floats, 0.0, L.add, (0,)).weak_type))
    theirs, ours = found
    assert theirs == (True, True, True, True, False, True, True)
    assert ours == (True, True, False, False, True, False, True)


# ------------------------------------------------------------------------------------------
# Numbers
# ------------------------------------------------------------------------------------------


def test_subnormal_floats_are_kept() -> None:
    """XLA's CPU flushes subnormal operands and results to zero; NumPy and Numba keep them.
    (Making the value alone computes nothing: ``bool(jnp.float32(1e-40))`` is True in both.)"""
    tiny = np.float32(1e-40)
    assert float(jnp.float32(tiny) * 1e10) == 0.0 and not bool(jnp.float32(tiny) + 0)
    assert float(jax.jit(lambda x: x * 1e10)(tiny)) == 0.0
    assert float(sjnp.float32(tiny) * 1e10) == pytest.approx(1e-30, rel=1e-4)
    assert bool(sjnp.float32(tiny) + 0)
    assert float(sj.jit(lambda x: x * 1e10)(tiny)) == pytest.approx(1e-30, rel=1e-4)
    # frexp of a subnormal: JAX's reads a flushed value, ours is NumPy's, exact
    theirs = [np.asarray(v).item() for v in jnp.frexp(tiny)]
    ours = [np.asarray(v).item() for v in sjnp.frexp(tiny)]
    assert theirs == [0.5, -149]
    assert ours == [v.item() for v in np.frexp(tiny)] == [np.float32(0.54444885).item(), -132]


def test_the_x64_warning_continues_in_our_words() -> None:
    messages = []
    for np_ in (jnp, sjnp):
        with pytest.warns(UserWarning) as record:
            np_.zeros(2, dtype=np.float64)
        messages.append(str(record[0].message))
    theirs, ours = messages
    assert theirs.startswith("Explicitly requested dtype float64 requested in zeros")
    assert ours.startswith("Explicitly requested dtype float64 in zeros is not available")
    assert "jax_enable_x64" in ours and "github.com" not in ours


def test_the_sign_of_a_nan_may_differ() -> None:
    """NaN is NaN in both; its sign bit follows NumPy (and Numba) here, XLA's kernels there:
    ``log`` of a positive NaN is a negative NaN in JAX, a positive one here."""
    nan = np.float32(np.nan)
    theirs = np.asarray(jnp.log(nan)), np.asarray(jax.jit(jnp.log)(nan))
    ours = np.asarray(sjnp.log(nan)), np.asarray(sj.jit(sjnp.log)(nan))
    assert all(np.isnan(v) for v in (*theirs, *ours))
    assert all(np.signbit(v) for v in theirs)
    assert not any(np.signbit(v) for v in ours)
    assert np.signbit(np.log(nan)) == np.signbit(ours[0])


def test_an_integer_power_below_0_or_above_63_differs() -> None:
    """A negative integer power is the true one truncated toward zero (JAX's is XLA's
    squaring loop's leftovers, which agree for the bases 0, 1, -1, 2 and -2), and a power
    from 64 up wraps around as NumPy's (XLA squares through its low 6 bits only)."""
    x = np.array([3, 7, -7, 1, -1, -1, 0, 2, -2], np.int32)
    y = np.array([-1, -2, -3, -5, -3, -4, -1, -1, -3], np.int32)
    truncated = np.array([0, 0, 0, 1, -1, 1, 0, 0, 0], np.int32)
    agree = np.abs(x) <= 2
    for ours in (sjnp.power(x, y), sj.jit(sjnp.power)(x, y)):
        np.testing.assert_array_equal(ours, truncated)
    theirs = np.asarray(jnp.power(x, y))
    np.testing.assert_array_equal(theirs[agree], truncated[agree])
    assert theirs[0] == 2111105451  # JAX's 3 ** -1
    big = np.array([3, 5], np.int32), np.array([64, 70], np.int32)
    for ours in (sjnp.power(*big), sj.jit(sjnp.power)(*big)):
        np.testing.assert_array_equal(ours, np.power(*big))  # the true power mod 2**32
    np.testing.assert_array_equal(jnp.power(*big), [1, 5 ** 6])  # 64 -> 0, 70 -> 6


def test_a_list_with_nan_to_an_int_dtype_is_numpys_int_min() -> None:
    raises(ValueError, jnp.asarray, [1.0, float("nan")], dtype=np.int32,
           match="cannot convert float NaN to integer")
    with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
        got = sjnp.asarray([1.0, float("nan")], dtype=np.int32)
    assert got.dtype == np.int32 and np.asarray(got).tolist() == [1, np.iinfo(np.int32).min]


# ------------------------------------------------------------------------------------------
# Indexing and updates
# ------------------------------------------------------------------------------------------


def test_a_boolean_scalar_index_raises() -> None:
    assert jnp.arange(3.0)[True].shape == (1, 3)
    raises(TypeError, sjnp.arange(3.0).__getitem__, True, match="Boolean scalar indices")


def test_unique_indices_and_indices_are_sorted_are_ignored() -> None:
    """Both hints are accepted and change nothing here: not the result, not the jaxpr
    (``x.at[i].add`` with a repeated ``i`` still accumulates; JAX's result under a false
    hint is unspecified)."""
    x, i = np.arange(3.0, dtype=np.float32), np.array([0, 0])
    plain = sj.make_jaxpr(lambda x: x.at[i].add(1.0))(x)
    for hint in ("unique_indices", "indices_are_sorted"):
        got = sjnp.asarray(x).at[i].add(1.0, **{hint: True})
        assert np.asarray(got).tolist() == [2.0, 1.0, 2.0]
        assert str(sj.make_jaxpr(lambda x: x.at[i].add(1.0, **{hint: True}))(x)) == str(plain)
        assert np.asarray(sjnp.asarray(x).at[np.array([2, 0])].get(**{hint: True})).tolist() \
            == [2.0, 0.0]


def test_the_magnitude_of_a_complex_infinity_is_infinite() -> None:
    z = np.array([complex(np.inf, np.nan), complex(np.nan, -np.inf), complex(np.nan, 1)],
                 np.complex64)
    assert str(np.asarray(jnp.abs(z)).tolist()) == "[nan, nan, nan]"
    assert str(np.asarray(jnp.hypot(np.float32(np.inf), np.float32(np.nan)))) == "inf"
    expected = np.abs(z).tolist()
    assert str(expected) == "[inf, inf, nan]"
    assert str(np.asarray(sjnp.abs(z)).tolist()) == str(expected)
    assert str(np.asarray(sj.jit(sjnp.abs)(z)).tolist()) == str(expected)


def test_apply_at_traced_indices_needs_unique_indices() -> None:
    """JAX applies the function at traced indices as a scatter's combiner; here the count of
    each element's indices decides how often, and a traced index has none to read."""
    x, k = np.arange(3.0, dtype=np.float32), np.array([1, 1])
    theirs = jax.jit(lambda x, k: x.at[k].apply(jnp.exp))(x, k)
    np.testing.assert_allclose(theirs, [0.0, np.exp(np.e), 2.0], rtol=1e-6)
    raises(sj.errors.ConcretizationTypeError, sj.jit(lambda x, k: x.at[k].apply(sjnp.exp)),
           x, k, match="unique_indices=True")
    got = sj.jit(lambda x, k: x.at[k].apply(sjnp.exp, unique_indices=True))(x, k[:1])
    np.testing.assert_allclose(got, [0.0, np.e, 2.0], rtol=1e-6)
    static = sj.jit(lambda x: x.at[np.array([1, 1])].apply(sjnp.exp))(x)  # counted: twice
    np.testing.assert_allclose(static, theirs, rtol=1e-6)


def test_gather_and_scatter_print_without_jaxs_extra_params() -> None:
    x, i = np.zeros(3, np.float32), np.array([0, 2], np.int32)
    theirs = str(jax.make_jaxpr(lambda x: x.at[i].add(1.0))(x))
    ours = str(sj.make_jaxpr(lambda x: x.at[i].add(1.0))(x))
    extras = ("update_jaxpr", "update_consts", "indices_are_sorted", "unique_indices")
    assert "scatter-add[" in theirs and all(name in theirs for name in extras)
    assert "scatter_add[" in ours and not any(name in ours for name in extras)
    assert all(f"{name}=" in ours for name in ("dimension_numbers", "mode"))
    theirs = str(jax.make_jaxpr(lambda x: x[i])(x))
    ours = str(sj.make_jaxpr(lambda x: x[i])(x))
    hints = ("indices_are_sorted=False", "unique_indices=False")
    assert "gather[" in ours and all(hint in theirs and hint in ours for hint in hints)
    ours = str(sj.make_jaxpr(lambda x: x.at[i].get(unique_indices=True))(x))
    assert all(hint in ours for hint in hints)


# ------------------------------------------------------------------------------------------
# Functions
# ------------------------------------------------------------------------------------------


def test_roll_needs_a_concrete_shift() -> None:
    """A traced ``shift`` (and traced ``repeats``, even with ``total_repeat_length``) is
    refused; concrete ones agree with JAX."""
    x = np.arange(5.0, dtype=np.float32)
    theirs = jax.jit(lambda x, s: jnp.roll(x, s))(x, 2)
    assert np.asarray(theirs).tolist() == [3.0, 4.0, 0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="shift must be a concrete integer"):
        sj.jit(lambda x, s: sjnp.roll(x, s))(x, 2)
    ours = sj.jit(lambda x: sjnp.roll(x, 2))(x)  # a concrete shift
    assert np.asarray(ours).tolist() == np.asarray(theirs).tolist()
    counts = np.array([1, 0, 2, 1, 1], np.int32)
    theirs = jax.jit(lambda x, r: jnp.repeat(x, r, total_repeat_length=5))(x, counts)
    assert np.asarray(theirs).tolist() == [0.0, 2.0, 2.0, 3.0, 4.0]
    with pytest.raises(TypeError, match="repeats must be concrete"):
        sj.jit(lambda x, r: sjnp.repeat(x, r, total_repeat_length=5))(x, counts)
    ours = sj.jit(lambda x: sjnp.repeat(x, counts, total_repeat_length=5))(x)
    assert np.asarray(ours).tolist() == np.asarray(theirs).tolist()


def test_python_lists_are_accepted_as_operands() -> None:
    calls = [lambda np_: np_.add(np_.ones(3), [1, 2, 3]), lambda np_: np_.sum([1, 2, 3]),
             lambda np_: np_.ones(3) == [0, 1, 2], lambda np_: np_.sin([1.0])]
    for call in calls:
        raises(TypeError, call, jnp, match="requires ndarray or scalar arguments|operand")
        assert np.asarray(call(sjnp)).shape in ((3,), (), (1,))
    assert np.asarray(sjnp.add(sjnp.ones(3), [1, 2, 3])).tolist() == [2.0, 3.0, 4.0]


def test_sigmoid_and_ndtr_of_integers_compute() -> None:
    ints, halves = np.arange(3), np.float16([-1, 0, 1])
    for name, x in [("ndtr", ints), ("ndtri", halves / 4 + 0.5), ("log_ndtr", halves)]:
        raises(TypeError, getattr(jax.scipy.special, name), x, match="not supported")
        out = getattr(sj.scipy.special, name)(x)
        assert out.dtype == (np.float32 if x.dtype.kind == "i" else np.float16)
    raises(TypeError, jax.nn.sigmoid, ints, match="logistic does not accept")
    np.testing.assert_allclose(sj.nn.sigmoid(ints), jax.nn.sigmoid(ints.astype(np.float32)))



def test_rfft_of_float16_computes() -> None:
    x = np.arange(8, dtype=np.float16)
    for name in ("rfft", "ihfft"):
        raises(ValueError, getattr(jnp.fft, name), x, match="must be float32 or float64")
        got = getattr(sjnp.fft, name)(x)
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, getattr(jnp.fft, name)(x.astype(np.float32)),
                                   rtol=1e-6, atol=1e-6)


def test_round_with_decimals_divides_as_numpy() -> None:
    x = np.float32(2.567)
    assert float(jnp.round(x, 1)) == float(np.nextafter(np.float32(2.6), np.float32(3)))
    assert float(sjnp.round(x, 1)) == float(np.round(x, 1)) == float(np.float32(2.6))
    v = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 100
    np.testing.assert_array_equal(np.asarray(sjnp.round(v, 2)), np.round(v, 2))


def test_einsum_contracts_left_to_right() -> None:
    x, y, z = (np.ones(shape, np.float32) for shape in [(2, 30), (30, 40), (40, 1)])
    ours = sj.make_jaxpr(lambda *a: sjnp.einsum("ij,jk,kl", *a))(x, y, z).jaxpr.eqns
    assert [e.outvars[0].aval.shape for e in ours] == [(2, 40), (2, 1)]  # (x y) z
    theirs = jax.make_jaxpr(lambda *a: jnp.einsum("ij,jk,kl", *a))(x, y, z).jaxpr.eqns
    assert [e.outvars[0].aval.shape for e in theirs] == [(1, 30), (2, 1)]  # x (y z)
    assert jnp.einsum_path("ij,jk,kl", x, y, z)[0] == [(1, 2), (0, 1)]  # opt_einsum's
    assert sjnp.einsum_path("ij,jk,kl", x, y, z)[0] == [(0, 1), (0, 1)]  # the one taken
    w = np.ones((1, 3), np.float32)
    assert sjnp.einsum_path("ij,jk,kl,lm", x, y, z, w)[0] == [(0, 1), (0, 2), (0, 1)]
    np.testing.assert_allclose(np.einsum("ij,jk,kl,lm", x, y, z, w, optimize=[
        "einsum_path", *sjnp.einsum_path("ij,jk,kl,lm", x, y, z, w)[0]]),
        sjnp.einsum("ij,jk,kl,lm", x, y, z, w))  # (NumPy follows the path)


def test_precision_is_checked_and_changes_nothing() -> None:
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    plain = np.asarray(sjnp.dot(x, x))
    for precision in ["highest", "bfloat16", slax.Precision.HIGH, ("float32", "default")]:
        assert np.array_equal(np.asarray(sjnp.dot(x, x, precision=precision)), plain)
    assert "precision" in str(jax.make_jaxpr(lambda a: jnp.dot(a, a, precision="highest"))(x))
    assert "precision" not in str(sj.make_jaxpr(lambda a: sjnp.dot(a, a, precision="highest"))(x))
    raises(ValueError, sjnp.dot, x, x, precision="fast", match="not a precision")


def test_pad_with_negative_padding_is_a_pad_and_a_slice() -> None:
    x = np.arange(4.0, dtype=np.float32)
    config = [(-1, 2, 1)]
    assert np.asarray(slax.pad(sjnp.asarray(x), 0.0, config)).tolist() \
        == np.asarray(lax.pad(x, 0.0, config)).tolist() == [0, 1, 0, 2, 0, 3, 0, 0]
    theirs = jax.make_jaxpr(lambda x: lax.pad(x, 0.0, config))(x)
    ours = sj.make_jaxpr(lambda x: slax.pad(x, 0.0, config))(x)
    assert [e.primitive.name for e in theirs.jaxpr.eqns] == ["pad"]
    assert "(-1, 2, 1)" in str(theirs)
    assert [e.primitive.name for e in ours.jaxpr.eqns] == ["pad", "slice"]
    assert ours.jaxpr.eqns[0].params["padding_config"] == ((0, 2, 1),)


def test_approx_top_k_is_exact_with_nans_last() -> None:
    x = np.array([3.0, 1.0, np.nan, 5.0], np.float32)
    theirs = [np.asarray(v).tolist() for v in lax.approx_max_k(x, 2)]
    assert str(theirs) == "[[nan, 5.0], [2, 3]]"  # aggregated: a NaN is the largest
    theirs = [np.asarray(v).tolist() for v in lax.approx_max_k(x, 4, aggregate_to_topk=False)]
    assert str(theirs) == "[[5.0, 3.0, 1.0, nan], [3, 0, 1, 2]]"  # not aggregated: the least
    for k, aggregate in ((2, True), (4, False)):
        ours = slax.approx_max_k(x, k, aggregate_to_topk=aggregate)
        assert str([np.asarray(v).tolist() for v in ours]) \
            == str([[5.0, 3.0, 1.0, np.nan][:k], [3, 0, 1, 2][:k]])
    ours = slax.approx_min_k(x, 3)
    assert str([np.asarray(v).tolist() for v in ours]) == "[[1.0, 3.0, 5.0], [1, 0, 3]]"


def test_pow_by_an_integer_and_reduce_xor_are_compositions() -> None:
    x, n = np.float32([2.0, 3.0]), np.int32([3, -1])
    theirs = jax.make_jaxpr(lax.pow)(x, n)
    ours = sj.make_jaxpr(slax.pow)(x, n)
    assert [e.primitive.name for e in theirs.jaxpr.eqns] == ["pow"]
    assert [e.primitive.name for e in ours.jaxpr.eqns] == ["convert_element_type", "pow"]
    np.testing.assert_allclose(slax.pow(x, n), lax.pow(x, n))
    i = np.array([5, 3, 6, 9], np.int32)
    theirs = jax.make_jaxpr(lambda i: lax.reduce_xor(i, (0,)))(i)
    assert [e.primitive.name for e in theirs.jaxpr.eqns] == ["reduce_xor"]
    ours = sj.make_jaxpr(lambda i: slax.reduce_xor(i, (0,)))(i)
    assert {e.primitive.name for e in ours.jaxpr.eqns} >= {"slice", "xor"}
    assert int(slax.reduce_xor(i, (0,))) == int(lax.reduce_xor(i, (0,))) == 5 ^ 3 ^ 6 ^ 9


def test_lax_stack_empty_mulhi_and_ragged_dot_are_compositions() -> None:
    x, i = np.float32([1.0, 2.0]), np.int32([7, -9])
    sizes, column, rhs = np.int32([1, 1]), x[:, None], np.ones((2, 1, 3), np.float32)
    calls = {"stack": (lambda x, i: lax.stack([x, x]), lambda x, i: slax.stack([x, x])),
             "unstack": (lambda x, i: lax.unstack(x), lambda x, i: slax.unstack(x)),
             "empty": (lambda x, i: lax.empty((2,), np.float32),
                       lambda x, i: slax.empty((2,), np.float32)),
             "mulhi": (lambda x, i: lax.mulhi(i, i), lambda x, i: slax.mulhi(i, i)),
             "ragged_dot_general": (
                 lambda x, i: lax.ragged_dot(column, rhs, sizes),
                 lambda x, i: slax.ragged_dot(column, rhs, sizes))}
    for name, (theirs, ours) in calls.items():
        assert [e.primitive.name for e in jax.make_jaxpr(theirs)(x, i).jaxpr.eqns] == [name]
        assert name not in [e.primitive.name for e in sj.make_jaxpr(ours)(x, i).jaxpr.eqns]
        for a, b in zip(jax.tree.leaves(ours(x, i)), jax.tree.leaves(theirs(x, i))):
            np.testing.assert_array_equal(a, b)
    assert lax.empty((2,), float).dtype == np.float64
    assert slax.empty((2,), float).dtype == np.float32


def test_an_integer_linear_ramp_is_numpys() -> None:
    x = np.array([[1], [4], [0]], np.int32)
    theirs = np.asarray(jnp.pad(x, ((0, 5), (0, 0)), mode="linear_ramp", end_values=5))
    ours = np.asarray(sjnp.pad(x, ((0, 5), (0, 0)), mode="linear_ramp", end_values=5))
    assert theirs[3:, 0].tolist() == [0, 1, 3, 4, 5]  # float32 0.99999994 and 1.9999999
    assert ours[3:, 0].tolist() == np.pad(x, ((0, 5), (0, 0)), mode="linear_ramp",
                                          end_values=5)[3:, 0].tolist() == [1, 2, 3, 4, 5]


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


def test_lax_reshape_dimensions_is_a_transpose_first() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = lax.reshape(x, (3, 2), dimensions=(1, 0))
    got = slax.reshape(sjnp.asarray(x), (3, 2), dimensions=(1, 0))
    assert np.asarray(got).tolist() == np.asarray(want).tolist() == x.T.reshape(3, 2).tolist()
    theirs = str(jax.make_jaxpr(lambda v: lax.reshape(v, (3, 2), (1, 0)))(x))
    ours = str(sj.make_jaxpr(lambda v: slax.reshape(v, (3, 2), (1, 0)))(x))
    assert "transpose" not in theirs and "dimensions=(1, 0)" in theirs
    assert "transpose[permutation=(1, 0)]" in ours and "dimensions=None" in ours


def test_broadcast_in_dim_takes_increasing_dims() -> None:
    """JAX transposes for dims out of order; we refuse, eagerly and under jit (before, the
    eager impl reshaped instead: a silent wrong value). In order, the values are JAX's, and
    a size that can't stretch is JAX's TypeError."""
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert np.asarray(lax.broadcast_in_dim(x, (4, 3), (1, 0))).tolist() == x.T.tolist()
    reorder = lambda v: slax.broadcast_in_dim(v, (4, 3), (1, 0))  # noqa: E731
    raises(TypeError, reorder, sjnp.asarray(x), match="increasing")
    raises(TypeError, sj.jit(reorder), sjnp.asarray(x))
    in_order = (x, (2, 3, 5, 4), (1, 3))
    np.testing.assert_array_equal(slax.broadcast_in_dim(sjnp.asarray(x), *in_order[1:]),
                                  lax.broadcast_in_dim(*in_order))
    for operand, shape, dims in [(x[:, 0], (2, 4), (1,)), (x, (3, 4, 5), (0,))]:
        with pytest.raises(TypeError):
            lax.broadcast_in_dim(operand, shape, dims)
        raises(TypeError, slax.broadcast_in_dim, sjnp.asarray(operand), shape, dims)


def test_lax_reduce_with_a_computation_of_its_own_is_a_pairwise_composition() -> None:
    """JAX binds one ``reduce`` equation that holds the computation's jaxpr; ours halves the
    operand pairwise, with the computation's primitives in the jaxpr. An associative
    computation gives the same value; a non-associative one, whose order neither promises,
    does not."""
    x = np.arange(1.0, 6.0, dtype=np.float32)
    assoc = lambda a, b: a * b + a + b  # noqa: E731  (1 + a)(1 + b) - 1
    theirs = str(jax.make_jaxpr(lambda x: lax.reduce(x, 0.0, assoc, (0,)))(x))
    ours = str(sj.make_jaxpr(lambda x: slax.reduce(x, 0.0, assoc, (0,)))(x))
    assert " reduce[" in theirs and "reduce" not in ours and "mul" in ours
    assert float(slax.reduce(x, 0.0, assoc, (0,))) == float(lax.reduce(x, 0.0, assoc, (0,)))
    lopsided = lambda a, b: a + 2.0 * b  # noqa: E731
    x = np.arange(4.0, dtype=np.float32)
    assert float(lax.reduce(x, 0.0, lopsided, (0,))) == 12.0  # left to right
    assert float(slax.reduce(x, 0.0, lopsided, (0,))) == 36.0  # pairs, then the init
    for op, init, name in (("add", 0.0, "reduce_sum"), ("max", -np.inf, "reduce_max")):
        # a lax operation with its identity as the init is its reduce_* primitive, as in JAX
        ours = str(sj.make_jaxpr(lambda x: slax.reduce(x, np.float32(init), getattr(slax, op),
                                                       (0,)))(x))
        assert f"{name}[" in ours


def test_gcd_and_lcm_unroll_euclids_algorithm() -> None:
    """JAX's ``gcd`` is a ``while_loop``; ours is a fixed number of Euclid's steps, so its
    jaxpr is long and has no loop; the values are the same."""
    a, b = np.array([12, 0, -35, 2**31 - 1], np.int32), np.array([18, 7, 14, 1], np.int32)
    theirs = str(jax.make_jaxpr(jnp.gcd)(a, b))
    ours = sj.make_jaxpr(sjnp.gcd)(a, b)
    assert "while[" in theirs and "while" not in str(ours) and len(ours.jaxpr.eqns) > 100
    for name in ("gcd", "lcm"):
        want = getattr(jnp, name)(a, b)
        assert np.asarray(getattr(sjnp, name)(a, b)).tolist() == np.asarray(want).tolist()


def test_the_derivative_of_x_to_the_power_0_is_0_everywhere() -> None:
    """JAX's slope of ``x ** 0.0`` is ``0 * x ** -1``: NaN at 0 and at NaN, -0 below 0;
    ours is 0 everywhere (x ** 0 is 1 everywhere), as JAX's for an integer power."""
    points = np.array([0.0, -0.0, -1.0, 2.0, np.inf, -np.inf, np.nan], np.float32)
    ours = [float(sj.grad(lambda x: sjnp.power(x, 0.0))(p)) for p in points]
    theirs = [float(jax.grad(lambda x: jnp.power(x, 0.0))(p)) for p in points]
    assert ours == [0.0] * len(points) and not any(np.signbit(ours))
    assert np.isnan(theirs[0]) and np.isnan(theirs[1]) and np.isnan(theirs[-1])
    assert theirs[2] == 0.0 and np.signbit(theirs[2])
    assert float(jax.grad(lambda x: x ** 0)(np.float32(0.0))) == 0.0  # an int power: 0


# ------------------------------------------------------------------------------------------
# Special functions
# ------------------------------------------------------------------------------------------


def test_float32_special_functions_are_rounded_from_float64() -> None:
    """``erf``, ``erfc`` and ``lgamma`` in float32 are the float64 values rounded, where XLA's
    float32 approximations are a few ulps off; ``ndtri`` (``norm.ppf``) is another algorithm
    than JAX's, within 1e-6; ``norm.isf`` is ``-ndtri(q)``, accurate where JAX's
    ``ppf(1 - q)`` is not."""
    import math
    from statistics import NormalDist

    x = np.linspace(-5.0, 5.0, 20001, dtype=np.float32)
    for name, exact, grid in (("erf", math.erf, x), ("erfc", math.erfc, x),
                              ("lgamma", math.lgamma, np.abs(x) + np.float32(0.01))):
        want = np.array([exact(float(v)) for v in grid]).astype(np.float32)
        ours, theirs = np.asarray(getattr(slax, name)(grid)), np.asarray(getattr(lax, name)(grid))
        assert np.array_equal(ours, want) and not np.array_equal(theirs, want), name
    assert float(slax.lgamma(np.float32(1.0))) == 0.0 != float(lax.lgamma(np.float32(1.0)))
    p = np.linspace(1e-6, 1 - 1e-6, 20001, dtype=np.float32)
    ours, theirs = np.asarray(sj.scipy.special.ndtri(p)), np.asarray(jax.scipy.special.ndtri(p))
    assert not np.array_equal(ours, theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)
    q, true = np.float32(1e-6), NormalDist().inv_cdf(1 - 1e-6)
    assert abs(float(sj.scipy.stats.norm.isf(q)) - true) < 1e-6 * true
    assert abs(float(jax.scipy.stats.norm.isf(q)) - true) > 1e-4 * true


def _ulps(a, b) -> np.ndarray:
    """How many float32 values lie between ``a`` and ``b`` (both of one sign)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32))


def test_jitted_float32_transcendentals_may_differ_from_eager_by_a_few_ulps() -> None:
    """JAX's jitted and eager ``exp``, ``log``, ``tanh`` and ``sigmoid`` give the same bits;
    ours differ on some values (eager: NumPy; jit: the kernels' polynomials), by at most 3
    ulps, and the jitted ones are within 4 ulps of JAX's."""
    grid = np.linspace(-80.0, 80.0, 20001, dtype=np.float32)
    positive = np.random.default_rng(0).uniform(0.01, 50.0, 20000).astype(np.float32)
    for name, theirs, ours, x in (("exp", jnp.exp, sjnp.exp, grid),
                                  ("log", jnp.log, sjnp.log, positive),
                                  ("tanh", jnp.tanh, sjnp.tanh, grid / 8),
                                  ("sigmoid", jax.nn.sigmoid, sj.nn.sigmoid, grid / 2)):
        assert np.array_equal(jax.jit(theirs)(x), theirs(x)), name
        jitted, eager = sj.jit(ours, backend="cpu")(x), ours(x)
        differ = _ulps(jitted, eager)
        assert 0 < differ.max() <= 3, name
        assert _ulps(jitted, jax.jit(theirs)(x)).max() <= 4, name


def test_polygamma_at_infinity_and_its_derivative_in_m() -> None:
    """``polygamma(m, inf)`` is 0 for m >= 1 here (the limit), NaN in JAX; a derivative in
    ``m`` raises in both, by ``grad`` and by ``jvp`` (whose tangent in m was once a silent
    zero here)."""
    inf, m, x = np.float32(np.inf), np.float32(1.0), np.float32(2.0)
    assert np.isnan(np.asarray(jax.scipy.special.polygamma(np.array([1, 2]), inf))).all()
    assert np.asarray(sj.scipy.special.polygamma(np.array([1, 2]), inf)).tolist() == [0.0, 0.0]
    for lib, L in ((jax, lax), (sj, slax)):
        raises(ValueError, lib.jvp, lambda m: L.polygamma(m, x), (m,), (m,),
               match="with respect to m")
        raises(ValueError, lib.grad(lambda m: L.polygamma(m, x)), m, match="with respect to m")


def test_xlogy_and_xlog1py_have_no_rule_of_their_own() -> None:
    """At x = 0 where log(y) is -inf, JAX's rule gives the gradient in x as log(y) = -inf;
    ours differentiates the composition ``where(x == 0, 0, x * log(y))``, giving 0."""
    zero = np.float32(0.0)
    for name, y in (("xlogy", zero), ("xlog1py", np.float32(-1.0))):
        theirs = jax.grad(getattr(jax.scipy.special, name))(zero, y)
        ours = sj.grad(getattr(sj.scipy.special, name))(zero, y)
        assert float(theirs) == -np.inf and float(ours) == 0.0, name
    one, two = np.float32(1.0), np.float32(2.0)  # away from 0 the two agree
    assert float(sj.grad(sj.scipy.special.xlogy)(one, two)) == pytest.approx(np.log(2.0))


def test_some_derivatives_are_exact_where_jaxs_lose_digits() -> None:
    """Slopes that JAX's float32 formulas get wrong by cancellation or overflow: ours are the
    derivative. (test_gradients_at_special_points_against_jax.py checks them among others.)"""
    def both(f, x):
        x = np.float32(x)
        return (float(sj.grad(lambda v: f(sj, v))(x)),
                float(jax.grad(lambda v: f(jax, v))(x)))

    cases = [  # f, x, the derivative, JAX's slope
        (lambda j, v: j.numpy.sinc(v), 1e-30, -np.pi ** 2 * 1e-30 / 3, -np.inf),
        (lambda j, v: j.numpy.hypot(v, 0.0), 1e-30, 1.0, np.nan),
        (lambda j, v: j.numpy.logaddexp(v, v), np.inf, 1.0, 2.0),
        (lambda j, v: j.numpy.logaddexp(v, v), 1e30, 1.0, 2.0),
        (lambda j, v: j.numpy.arccosh(v), 1e30, 1e-30, 0.0),
        (lambda j, v: j.numpy.arccosh(v), -1.0, np.nan, np.inf),
        (lambda j, v: j.scipy.special.digamma(v), np.inf, 0.0, np.nan),
        (lambda j, v: j.scipy.special.i0(v), 0.0, 0.0,  # I1(0); JAX's: abs's slope, 1, rounded
         float(np.nextafter(np.float32(1), np.float32(2)))),
        (lambda j, v: j.scipy.special.i0(v), 1e-30, 5e-31, 0.0),
        (lambda j, v: j.grad(j.numpy.arctanh)(v), 1.0, np.inf, np.nan),  # 2x / (1 - x^2)^2
        (lambda j, v: j.scipy.special.ndtri(v), 0.0, np.inf, 0.0),  # 1 / phi(-inf)
        (lambda j, v: j.scipy.special.spence(v), 1.0, -1.0, 0.0),  # log(x) / (1 - x)
    ]
    for f, x, derivative, jaxs in cases:
        ours, theirs = both(f, x)
        assert ours == pytest.approx(derivative, rel=1e-6, nan_ok=True)
        assert theirs == jaxs or np.isnan(theirs) and np.isnan(jaxs)


# ------------------------------------------------------------------------------------------
# Linear algebra
# ------------------------------------------------------------------------------------------


TALL = np.random.RandomState(0).randn(4, 3).astype(np.float32)


def test_complex_matrices_are_not_given_to_qr_svd_or_eig() -> None:
    """Complex matrices given to qr, svd and eig (and what uses them), and integer ones given
    to ``lax.linalg``, raise a TypeError that says what to do; JAX computes both. The
    solves, cholesky, lu, eigh and expm take complex matrices in both."""
    c = (np.eye(2) * (2 + 1j)).astype(np.complex64)
    np.testing.assert_allclose(sjnp.linalg.inv(c), jnp.linalg.inv(c), rtol=1e-6)
    for name in ("qr", "svd", "eigvals", "pinv"):
        assert getattr(jnp.linalg, name)(c) is not None
        raises(TypeError, getattr(sjnp.linalg, name), c, match="complex matrices are")
    assert jnp.roots(c[0]).dtype == np.complex64
    raises(TypeError, sjnp.roots, np.complex64([1, 2j, 3]), match="floating-point")
    ints = np.eye(3, dtype=np.int32)
    assert lax.linalg.cholesky(ints).dtype == np.float32
    raises(TypeError, slax.linalg.cholesky, ints, match="Convert it first")
    assert sjnp.linalg.cholesky(ints).dtype == jnp.linalg.cholesky(ints).dtype == np.float32


def test_qr_eigh_and_svd_take_fewer_params() -> None:
    sym = TALL.T @ TALL
    for fn, x, extras, ours_text in (
            (lambda L: L.linalg.qr, TALL, ("pivoting=False", "use_magma=None"),
             "qr[full_matrices=True]"),
            (lambda L: L.linalg.eigh, sym, ("algorithm=None", "subset_by_index=None"),
             "eigh[lower=True sort_eigenvalues=True]"),
            (lambda L: L.linalg.svd, TALL, ("algorithm=None", "subset_by_index=None"),
             "svd[compute_uv=True full_matrices=True]")):
        theirs = str(jax.make_jaxpr(fn(lax))(x))
        ours = str(sj.make_jaxpr(fn(slax))(x))
        assert all(extra in theirs for extra in extras) and ours_text in ours
    assert lax.linalg.qr(TALL, pivoting=True)[2].tolist() == [0, 2, 1]
    raises(NotImplementedError, slax.linalg.qr, TALL, pivoting=True, match="pivoting")
    assert jnp.linalg.qr(TALL, mode="raw")[1].shape == (3,)
    raises(ValueError, sjnp.linalg.qr, TALL, mode="raw", match="'raw' is not implemented")
    assert float(jnp.linalg.slogdet(sym, method="qr")[0]) == 1.0
    raises(ValueError, sjnp.linalg.slogdet, sym, method="qr", match="only 'lu'")
    for L in (lax, slax):  # a part of the spectrum: refused by both on CPU
        raises(NotImplementedError, L.linalg.eigh, sym, subset_by_index=(0, 2))


def test_the_qr_derivative_needs_reduced_mode_for_a_tall_matrix() -> None:
    loss = lambda L: lambda a: L.linalg.qr(a, full_matrices=True)[0].sum()  # noqa: E731
    assert np.isfinite(np.asarray(jax.grad(loss(lax))(TALL))).all()
    raises(NotImplementedError, sj.grad(loss(slax)), TALL, match="full_matrices=False")
    reduced = lambda np_: lambda a: np_.linalg.qr(a)[0].sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(sj.grad(reduced(sjnp))(TALL)),
                               np.asarray(jax.grad(reduced(jnp))(TALL)), rtol=1e-4, atol=1e-5)


def test_det_is_differentiated_through_its_decomposition() -> None:
    """At a singular matrix of size 4 or more, JAX's rule gives finite gradients (zeros for
    ``det`` of a rank-1 matrix); ours goes through ``lu`` and gives NaN. A 2x2 or 3x3 ``det``
    is the explicit formula in both. ``pinv`` has JAX's rule: its gradients agree, at the
    identity (NaN here once, through the SVD's repeated singular values) and at ones."""
    ones = np.ones((4, 4), np.float32)
    assert not np.asarray(jax.grad(jnp.linalg.det)(ones)).any()
    assert not np.isfinite(np.asarray(sj.grad(sjnp.linalg.det)(ones))).any()
    for a in (ones, np.eye(3, dtype=np.float32), np.eye(2, 3, dtype=np.float32)):
        loss = lambda np_: lambda a: (np_.linalg.pinv(a) * np_.arange(a.size).reshape(  # noqa: E731
            a.shape[::-1])).sum()
        np.testing.assert_allclose(np.asarray(sj.grad(loss(sjnp))(a)),
                                   np.asarray(jax.grad(loss(jnp))(a)), rtol=1e-4, atol=1e-4)
    ones = np.ones((3, 3), np.float32)
    assert np.asarray(sj.grad(sjnp.linalg.det)(ones)).tolist() == \
        np.asarray(jax.grad(jnp.linalg.det)(ones)).tolist()


def test_hermitian_is_accepted_and_ignored() -> None:
    """``hermitian=True`` reads one triangle in JAX (eigh); here the general SVD runs, which
    agrees on a symmetric matrix and differs on one that is not."""
    sym, lopsided = TALL.T @ TALL, np.array([[2.0, 1.0], [0.0, 3.0]], np.float32)
    for a, agree in ((sym, True), (lopsided, False)):
        theirs = np.asarray(jnp.linalg.svd(a, hermitian=True, compute_uv=False))
        ours = np.asarray(sjnp.linalg.svd(a, hermitian=True, compute_uv=False))
        general = np.asarray(sjnp.linalg.svd(a, compute_uv=False))
        assert np.array_equal(ours, general)
        assert np.allclose(ours, theirs, rtol=1e-5) == agree


# ------------------------------------------------------------------------------------------
# Convolutions and pooling
# ------------------------------------------------------------------------------------------


def _pool(L, op: str, x, window, strides, padding, **dilations):
    """Max or min pooling by ``lax.reduce_window`` from the identity."""
    init = -np.inf if op == "max" else np.inf
    return L.reduce_window(x, init, getattr(L, op), window, strides, padding, **dilations)


def test_a_pooling_jvp_on_ties_reads_the_tap_its_vjp_writes() -> None:
    """The first 2x2 window of [[0, 1, 0], [1, 0, 0]] (stride 2, 'SAME') holds two 1s. Both
    VJPs send its cotangent to the first in window order, (0, 1); our JVP reads the tangent
    there too, JAX's reads it at (1, 0)."""
    x = np.array([[0, 1, 0], [1, 0, 0]], np.float32)
    tangent = np.arange(6, dtype=np.float32).reshape(2, 3)
    found = []
    for lib, L in ((jax, lax), (sj, slax)):
        first = lambda x: _pool(L, "max", x, (2, 2), (2, 2), "SAME")[0, 0]  # noqa: B023, E731
        cotangent = np.asarray(lib.grad(first)(x))
        found.append((np.argwhere(cotangent).tolist(),
                      float(lib.jvp(first, (x,), (tangent,))[1])))
    theirs, ours = found
    assert theirs == ([[0, 1]], 3.0)
    assert ours == ([[0, 1]], 1.0)


def _dilated_pool(op: str):
    return lambda L: lambda x: _pool(L, op, x, (2,), (1,), "VALID", window_dilation=(2,))


def _pool_from(computation: str, init: float):
    return lambda L: lambda x: L.reduce_window(x, init, getattr(L, computation), (2,), (1,),
                                               "VALID")


def test_pooling_has_more_gradients_than_jax() -> None:
    """With ``window_dilation`` JAX's max and min pooling have no VJP (NotImplementedError),
    and with an init value other than the identity ``reduce_window`` has none (ValueError);
    both have a JVP. Here both have a VJP, and our reverse mode equals JAX's forward mode."""
    x = np.array([3.0, 1.0, 4.0, 0.0, 5.0, 9.0, 2.0, 6.0], np.float32)
    cases = [(_dilated_pool("max"), NotImplementedError),
             (_dilated_pool("min"), NotImplementedError),
             (_pool_from("max", 4.0), ValueError), (_pool_from("min", 2.0), ValueError),
             (_pool_from("add", 1.0), ValueError)]
    for f, refused in cases:
        raises(refused, jax.grad(lambda x: f(lax)(x).sum()), x)  # noqa: B023
        columns = [jax.jvp(f(lax), (x,), (e,))[1] for e in np.eye(8, dtype=np.float32)]
        theirs = np.stack([np.asarray(c) for c in columns], axis=1)
        ours = np.asarray(sj.jacrev(f(slax))(x))
        assert ours.tolist() == theirs.tolist()
    raises(NotImplementedError, jax.grad(lambda x: _dilated_pool("max")(lax)(x).sum()), x,
           match="window dilation")


def test_reduce_window_takes_three_computations() -> None:
    """``lax.add``, ``lax.max``, ``lax.min`` and jnp's ``add``, ``maximum``, ``minimum`` are
    pooling here as in JAX; any other computation, and so a pytree operand (which needs one
    of its own), raises NotImplementedError here and runs in JAX."""
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0], np.float32)
    for name, init in (("add", 0.0), ("maximum", -np.inf), ("minimum", np.inf)):
        theirs = lax.reduce_window(x, init, getattr(jnp, name), (2,), (1,), "VALID")
        ours = slax.reduce_window(x, init, getattr(sjnp, name), (2,), (1,), "VALID")
        assert np.asarray(ours).tolist() == np.asarray(theirs).tolist(), name

    def pair(a, b):
        return a[0] + b[0], a[1] * b[1]

    others = [(x, 1.0, lax.mul, slax.mul),
              (x, 0.0, lambda a, b: a + 2 * b, lambda a, b: a + 2 * b),
              ((x, x), (0.0, 1.0), pair, pair)]
    for operand, init, theirs, ours in others:
        lax.reduce_window(operand, init, theirs, (2,), (1,), "VALID")
        raises(NotImplementedError, slax.reduce_window, operand, init, ours, (2,), (1,),
               "VALID", match="Only lax.add, lax.max and lax.min")


CONV_LHS = np.random.RandomState(1).randn(2, 2, 6, 6).astype(np.float32)
CONV_RHS = np.random.RandomState(2).randn(3, 2, 3, 3).astype(np.float32)


def test_conv_precision_is_kept_as_given_and_ignored() -> None:
    """JAX makes ``precision`` a pair of ``lax.Precision``; here it is kept as it was given,
    and every precision gives the same bits (as JAX's CPU backend does for float32)."""
    def precision_param(lib, L, precision) -> str:
        text = str(lib.make_jaxpr(lambda x, k: L.conv_general_dilated(
            x, k, (1, 1), "SAME", precision=precision))(CONV_LHS, CONV_RHS))
        (line,) = [line.strip() for line in text.splitlines() if "precision=" in line]
        return line

    assert precision_param(jax, lax, "highest") == \
        "precision=(Precision.HIGHEST, Precision.HIGHEST)"
    assert precision_param(sj, slax, "highest") == "precision=highest"
    for L in (lax, slax):
        bits = [np.asarray(L.conv_general_dilated(CONV_LHS, CONV_RHS, (1, 1), "SAME",
                                                  precision=p)).view(np.uint32).tolist()
                for p in (None, "bfloat16", "highest")]
        assert bits[0] == bits[1] == bits[2]


def test_conv_out_sharding_must_be_none() -> None:
    spec = ("d",)
    mesh = jax.make_mesh((8,), ("d",))
    with jax.set_mesh(mesh):
        out = lax.conv_general_dilated(CONV_LHS.repeat(4, 0), CONV_RHS, (1, 1), "SAME",
                                       out_sharding=jax.sharding.PartitionSpec(*spec))
    assert tuple(out.sharding.spec)[:1] == spec
    mesh = sj.make_mesh((8,), ("d",))
    with sj.set_mesh(mesh):
        raises(NotImplementedError, slax.conv_general_dilated, CONV_LHS.repeat(4, 0),
               CONV_RHS, (1, 1), "SAME", out_sharding=sj.sharding.PartitionSpec(*spec),
               match="out_sharding is not supported")


def test_a_pooling_window_whose_max_is_nan_gives_no_cotangent() -> None:
    """Windows of 2 over [1, nan, 2, 3]: the first two are NaN. JAX sends each one's
    cotangent to an element (the NaN in the first, the 2 in the second), and its JVP reads
    them there; here neither window sends or reads anything."""
    x = np.array([1.0, np.nan, 2.0, 3.0], np.float32)
    tangent = np.array([1.0, 10.0, 100.0, 1000.0], np.float32)
    found = []
    for lib, L in ((jax, lax), (sj, slax)):
        pool = lambda x: _pool(L, "max", x, (2,), (1,), "VALID")  # noqa: B023, E731
        found.append((np.asarray(lib.grad(lambda x: pool(x).sum())(x)).tolist(),
                      np.asarray(lib.jvp(pool, (x,), (tangent,))[1]).tolist()))
    theirs, ours = found
    assert theirs == ([0.0, 1.0, 1.0, 1.0], [10.0, 100.0, 1000.0])
    assert ours == ([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1000.0])


# ------------------------------------------------------------------------------------------
# Complex numbers and the FFT
# ------------------------------------------------------------------------------------------


def test_the_fft_is_numpys_pocketfft() -> None:
    """Each kind of transform gives NumPy's bits, within float32 rounding of JAX's (XLA's
    FFT). The sum of 1e8 and 1023 ones is 100001023: its nearest float32 here, 8 below in
    JAX."""
    x = np.random.RandomState(3).randn(4, 64).astype(np.float32)
    z = (x + 1j * x[::-1]).astype(np.complex64)
    for name, operand in (("fft", z), ("ifft", z), ("rfft", x), ("irfft", z)):
        ours = np.asarray(getattr(sjnp.fft, name)(operand))
        theirs = np.asarray(getattr(jnp.fft, name)(operand))
        assert ours.dtype == theirs.dtype
        assert ours.tobytes() == getattr(np.fft, name)(operand).tobytes(), name
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-6 * np.abs(ours).max())
    spike = np.ones(1024, np.complex64)
    spike[0] = 1e8
    assert np.asarray(sjnp.fft.fft(spike))[0] == np.float32(100001023)
    assert np.asarray(jnp.fft.fft(spike))[0] == np.float32(100001023) - 8


def test_the_fft_primitive_transforms_any_number_of_dims() -> None:
    z = np.arange(16.0, dtype=np.float32).reshape(2, 2, 2, 2).astype(np.complex64)
    raises(Exception, lax.fft, z, lax.FftType.FFT, (2, 2, 2, 2),
           match="rank must be between 1 and 3")
    np.testing.assert_allclose(np.asarray(slax.fft(z, "fft", (2, 2, 2, 2))), np.fft.fftn(z),
                               rtol=1e-6)


def test_an_fft_jaxpr_has_no_inner_jit_and_one_multiply_for_norm() -> None:
    y = np.arange(8.0, dtype=np.float32)
    ortho = lambda np_: lambda y: np_.fft.fft(y, norm="ortho")  # noqa: E731
    theirs = str(jax.make_jaxpr(ortho(jnp))(y))
    ours = str(sj.make_jaxpr(ortho(sjnp))(y))
    assert "name=fft" in theirs and "reduce_prod" in theirs and "sqrt" in theirs
    assert [line.split(" = ")[1].split("[")[0].split(" ")[0] for line in ours.splitlines()
            if " = " in line] == ["convert_element_type", "fft", "mul"]
    assert "mul c (0.3535533845424652+0j):c64[]" in ours


def test_matmul_of_two_unit_batch_dims_keeps_one_as_a_free_dim() -> None:
    """Both operands with a size-1 batch dim at the same place: JAX squeezes both and
    broadcasts the result back; ours keeps one as a free dim. The results agree."""
    a = np.arange(12, dtype=np.float32).reshape(1, 1, 2, 6)
    b = np.arange(12, dtype=np.float32).reshape(1, 6, 2)
    names = [[e.primitive.name for e in lib.make_jaxpr(m.matmul)(a, b).jaxpr.eqns]
             for lib, m in ((jax, jnp), (sj, sjnp))]
    assert names == [["squeeze", "squeeze", "dot_general", "broadcast_in_dim"],
                     ["squeeze", "dot_general", "transpose"]]
    theirs, ours = jnp.matmul(a, b), sjnp.matmul(a, b)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_real_and_imag_of_a_real_operand_are_accepted_eagerly() -> None:
    """``lax.real(x)`` is x and ``lax.imag(x)`` zeros for a real x, eagerly; JAX raises a
    TypeError. Under ``jit`` both raise one."""
    x = np.array([1.0, -2.0], np.float32)
    for name, want in (("real", [1.0, -2.0]), ("imag", [0.0, 0.0])):
        raises(TypeError, getattr(lax, name), x, match="does not accept dtype float32")
        raises(TypeError, jax.jit(getattr(lax, name)), x)
        got = getattr(slax, name)(x)
        assert got.dtype == np.float32 and np.asarray(got).tolist() == want
        raises(TypeError, sj.jit(getattr(slax, name)), x, match="requires complex arguments")


def test_astype_from_complex_to_real_keeps_the_real_part_silently() -> None:
    import warnings

    z = np.array([1 + 2j, 3 - 4j], np.complex64)
    with pytest.warns(DeprecationWarning, match="Casting from complex to real"):
        assert np.asarray(jnp.asarray(z).astype(np.float32)).tolist() == [1.0, 3.0]
    with pytest.warns(np.exceptions.ComplexWarning):
        lax.convert_element_type(z, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.asarray(sjnp.asarray(z).astype(np.float32)).tolist() == [1.0, 3.0]
        assert np.asarray(sjnp.astype(z, np.float32)).tolist() == [1.0, 3.0]
        assert np.asarray(slax.convert_element_type(z, np.float32)).tolist() == [1.0, 3.0]


# ------------------------------------------------------------------------------------------
# Random numbers
# ------------------------------------------------------------------------------------------


def test_a_key_is_a_pytree_over_its_uint32_data() -> None:
    (jax_leaf,) = jax.tree_util.tree_leaves(jax.random.key(0))
    assert jax.dtypes.issubdtype(jax_leaf.dtype, jax.dtypes.prng_key)
    (leaf,) = sj.tree_util.tree_leaves(sj.random.key(0))
    assert leaf.dtype == np.uint32 and leaf.shape == (2,)
    assert np.asarray(leaf).tolist() == np.asarray(jax.random.key_data(jax.random.key(0))).tolist()


def test_some_sampling_options_are_missing() -> None:
    """key_dtype of another PRNG implementation raises NotImplementedError."""
    assert str(jax.random.key_dtype("rbg")) == "key<rbg>"
    raises(NotImplementedError, sj.random.key_dtype, "rbg", match="threefry2x32")


FLOAT_SAMPLERS = {"normal": {}, "exponential": {}, "gamma": {"a": 2.0},
                  "beta": {"a": 2.0, "b": 3.0}, "cauchy": {}, "laplace": {}, "logistic": {},
                  "gumbel": {}, "t": {"df": 3.0},
                  "lognormal": {}, "pareto": {"b": 2.0}, "loggamma": {"a": 2.0},
                  "truncated_normal": {"lower": -1.0, "upper": 1.0}}
INTEGER_SAMPLERS = {"poisson": {"lam": 3.0}, "bernoulli": {"p": 0.3}, "rademacher": {},
                    "geometric": {"p": 0.3}, "randint": {"minval": 0, "maxval": 10}}


def test_float_samplers_are_within_a_few_ulps_and_integer_samplers_are_exact() -> None:
    """The bits are JAX's; the float arithmetic after them (log, exp, pow) is NumPy's, which
    rounds the last bit of some values otherwise than XLA's: within 8 ulps of max(|x|, 1).
    The samplers of integers and booleans give JAX's draws exactly."""
    eps, rounded_otherwise = np.finfo(np.float32).eps, []
    for name, params in FLOAT_SAMPLERS.items():
        theirs = np.asarray(getattr(jax.random, name)(jax.random.key(1), shape=(4096,), **params))
        ours = np.asarray(getattr(sj.random, name)(sj.random.key(1), shape=(4096,), **params))
        if not np.array_equal(ours, theirs):  # (which ones depends on the CPU's NumPy loops)
            rounded_otherwise.append(name)
        assert (np.abs(ours - theirs) <= 8 * eps * np.maximum(np.abs(theirs), 1)).all(), name
    assert len(rounded_otherwise) >= len(FLOAT_SAMPLERS) // 2, rounded_otherwise
    for name, params in INTEGER_SAMPLERS.items():
        theirs = np.asarray(getattr(jax.random, name)(jax.random.key(1), shape=(4096,), **params))
        ours = np.asarray(getattr(sj.random, name)(sj.random.key(1), shape=(4096,), **params))
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), name


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


def test_gamma_draws_with_a_split_shape_parameter() -> None:
    """Our ``random_gamma`` takes a key per element, so it is elementwise and runs split like
    ``a``; JAX's vmaps over ``a`` and refuses it split. The values are JAX's unsplit draws."""
    a = np.linspace(0.5, 4.0, 16, dtype=np.float32)
    draw = lambda lib: lambda k, a: lib.random.gamma(k, a, (16,))  # noqa: E731
    want = np.asarray(jax.jit(draw(jax))(jax.random.key(0), a))
    for lib in (jax, sj):
        mesh = lib.make_mesh((8,), ("d",))
        with lib.set_mesh(mesh):
            split = _split(lib, mesh, a, "d")
            if lib is jax:
                raises(ValueError, lib.jit(draw(lib)), lib.random.key(0), split,
                       match="sharded the same")
            else:
                got = lib.jit(draw(lib))(lib.random.key(0), split)
                assert tuple(got.sharding.spec) == ("d",)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Transformations
# ------------------------------------------------------------------------------------------


def test_scatter_mul_is_differentiated_without_unique_indices() -> None:
    """JAX refuses to differentiate ``.at[].mul`` unless told the indices are unique; ours
    differentiates it exactly, repeated indices and zeros included."""
    def f(np_, x, y):
        return np_.sum(x.at[np_.array([0, 2])].mul(y))

    x, y = np.array([2.0, 3.0, 4.0], np.float32), np.array([5.0, 7.0], np.float32)
    raises(NotImplementedError, jax.grad(lambda x, y: f(jnp, x, y), (0, 1)), x, y,
           match="unique_indices")
    gx, gy = sj.grad(lambda x, y: f(sjnp, x, y), (0, 1))(x, y)
    assert np.asarray(gx).tolist() == [5.0, 1.0, 7.0] and np.asarray(gy).tolist() == [2.0, 4.0]
    # repeated indices and a zero: x[0] * y[0] * y[1] * y[2], each factor's derivative the
    # product of the others, as JAX gives for the product written out
    y = np.array([5.0, 0.0, 7.0], np.float32)
    g = sj.grad(lambda y: sjnp.sum(sjnp.asarray(x).at[sjnp.array([0, 0, 0])].mul(y)))(y)
    want = jax.grad(lambda y: x[0] * y[0] * y[1] * y[2])(y)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(want))
    ids = np.array([0, 0, 1])  # jax.ops.segment_prod is the same scatter
    raises(NotImplementedError, jax.grad(lambda y: jax.ops.segment_prod(y, ids, 2).sum()), y,
           match="unique_indices")
    g = sj.grad(lambda y: sj.ops.segment_prod(y, ids, 2).sum())(y)
    assert np.asarray(g).tolist() == [0.0, 5.0, 1.0]


def _custom_sin(lib, np_, rule):
    @lib.custom_jvp
    def f(x):
        return np_.sin(x)

    f.defjvp(rule)
    return f


def _square_with_a_rule_of_its_own(lib):
    @lib.custom_jvp
    def sq(x):
        return x * x
    sq.defjvp(lambda p, t: (sq(p[0]), 3.0 * p[0] * t[0]))  # not sq's derivative, 2 * x * t
    steps = np.float32([0.8, -0.5, 1.3])
    return sq, lambda x: lib.lax.scan(lambda c, w: (sq(c) + w, None), x, steps)[0]


def test_a_custom_jvp_rule_is_used_at_every_order() -> None:
    x = np.float32(0.7)
    orders = {"grad(grad)": lambda lib, f: lib.grad(lib.grad(f))(x),
              "jvp(grad)": lambda lib, f: lib.jvp(lib.grad(f), (x,), (1.0,))[1],
              "grad(jvp)": lambda lib, f: lib.grad(lambda v: lib.jvp(f, (v,), (1.0,))[1])(x)}
    for lib in (jax, sj):  # outside a loop: the rule at every order, in both
        sq, _ = _square_with_a_rule_of_its_own(lib)
        for order in orders.values():
            np.testing.assert_allclose(float(order(lib, lambda v: sq(sq(v)))), 36 * x * x,
                                       rtol=1e-6)
    c1 = x * x + 0.8
    c2 = c1 * c1 - 0.5
    rule_everywhere = 27 * (c1 * c2 + x * 3 * x * c2 + x * c1 * 3 * c1 * 3 * x)
    function_inside = 27 * (c1 * c2 + x * 2 * x * c2 + x * c1 * 2 * c1 * 2 * x)
    theirs = {k: float(f(jax, _square_with_a_rule_of_its_own(jax)[1])) for k, f in orders.items()}
    ours = {k: float(f(sj, _square_with_a_rule_of_its_own(sj)[1])) for k, f in orders.items()}
    np.testing.assert_allclose([theirs["grad(grad)"], theirs["jvp(grad)"]],
                               [function_inside] * 2, rtol=1e-5)
    np.testing.assert_allclose(theirs["grad(jvp)"], rule_everywhere, rtol=1e-5)
    np.testing.assert_allclose(list(ours.values()), [rule_everywhere] * 3, rtol=1e-5)


def test_a_nonlinear_custom_jvp_rule_is_refused_under_grad() -> None:
    """A rule whose tangent is not linear in the input tangents: ``jvp`` computes it in both;
    ``grad`` is JAX's internal AssertionError and our TypeError naming the primitive."""
    def rule_of(np_):
        def rule(primals, tangents):
            (x,), (t,) = primals, tangents
            return np_.sin(x), np_.cos(x) * t * t
        return rule

    x = np.float32(2.0)
    f, g = _custom_sin(jax, jnp, rule_of(jnp)), _custom_sin(sj, sjnp, rule_of(sjnp))
    np.testing.assert_allclose(sj.jvp(g, (x,), (x,))[1], jax.jvp(f, (x,), (x,))[1], rtol=1e-6)
    raises(AssertionError, jax.grad(f), x)
    raises(TypeError, sj.grad(g), x, match="not linear in the tangents: it applies mul")


def test_custom_jvp_has_no_symbolic_zeros() -> None:
    rule = lambda primals, tangents: (primals[0], tangents[0])  # noqa: E731
    jax.custom_jvp(jnp.sin).defjvp(rule, symbolic_zeros=True)  # accepted
    raises(NotImplementedError, sj.custom_jvp(sjnp.sin).defjvp, rule, symbolic_zeros=True,
           match="symbolic_zeros")


def test_a_custom_jvp_closing_over_a_differentiated_value() -> None:
    """The function and its rule close over ``y``, which is differentiated. Eagerly JAX leaks a
    tracer (UnexpectedTracerError) and ours differentiates ``y`` through the rule's use of it;
    under ``jit`` both refuse with a TypeError, ours saying to pass ``y`` as an argument."""
    def outer_of(lib, np_):
        def outer(y):
            @lib.custom_jvp
            def g(x):
                return np_.sin(x) * y

            @g.defjvp
            def g_jvp(primals, tangents):
                return np_.sin(primals[0]) * y, np_.cos(primals[0]) * y * tangents[0]
            return g(np.float32(2.0))
        return outer

    y = np.float32(3.0)
    raises(jax.errors.UnexpectedTracerError, jax.grad(outer_of(jax, jnp)), y)
    assert float(sj.grad(outer_of(sj, sjnp))(y)) == pytest.approx(np.sin(2.0), rel=1e-6)
    raises(TypeError, jax.grad(jax.jit(outer_of(jax, jnp))), y)
    raises(TypeError, sj.grad(sj.jit(outer_of(sj, sjnp))), y, match="closes over")


def test_linearize_returns_a_plain_function() -> None:
    """JAX's linear function is a ``Partial``, a pytree that ``jit`` takes as an argument;
    ours is a plain function: the same values, but not an argument of ``jit``."""
    x = np.float32(2.0)
    (_, theirs), (_, ours) = jax.linearize(jnp.sin, x), sj.linearize(sjnp.sin, x)
    assert isinstance(theirs, jax.tree_util.Partial)
    assert not isinstance(ours, jax.tree_util.Partial)
    assert float(ours(x)) == pytest.approx(float(theirs(x)), rel=1e-6)
    apply = lambda f, t: f(t)  # noqa: E731
    assert float(jax.jit(apply)(theirs, x)) == float(theirs(x))
    raises(TypeError, sj.jit(apply), ours, x)


def test_pmax_and_pmin_are_differentiated() -> None:
    """JAX has no derivative rule for pmax or pmin; ours sends the cotangent to the device
    holding the extremum (split evenly among ties), as jnp.max does across an axis."""
    x = np.array([3.0, -1.0, 2.0, 5.0, 0.0, 4.0, 1.0, 5.0], np.float32)
    for lib in (jax, sj):
        mesh = lib.make_mesh((4,), ("i",), axis_types=(lib.sharding.AxisType.Auto,))
        for name in ("pmax", "pmin"):
            f = lib.shard_map(lambda b, name=name: getattr(lib.lax, name)(b, "i"), mesh=mesh,
                              in_specs=lib.sharding.PartitionSpec("i"),
                              out_specs=lib.sharding.PartitionSpec())
            loss = lambda x, f=f: (f(x) * np.array([1.0, 2.0], np.float32)).sum()  # noqa: E731
            if lib is jax:
                raises(NotImplementedError, lib.grad(loss), x)
                continue
            reduce = np.max if name == "pmax" else np.min
            expected = sj.grad(lambda x, r=getattr(sjnp, reduce.__name__): (
                r(x.reshape(4, 2), axis=0) * np.array([1.0, 2.0], np.float32)).sum())(x)
            np.testing.assert_allclose(np.asarray(lib.grad(loss)(x)), np.asarray(expected))


def test_remat_is_checkpoint_and_an_offloaded_value_stays_on_the_host() -> None:
    from jax import ad_checkpoint as theirs

    from stage4_sharding import ad_checkpoint as ours
    assert jax.remat is not jax.checkpoint and sj.remat is sj.checkpoint
    assert _public(sj.checkpoint_policies) == _public(jax.checkpoint_policies)
    assert _public(ours) == _public(theirs) - {"print_saved_residuals"}
    # an offloading policy: the same values, and the offloaded value is saved, as a residual
    results = []
    for lib, np_, module in ((jax, jnp, theirs), (sj, sjnp, ours)):
        def f(x, np_=np_, name=module.checkpoint_name):
            return np_.sin(name(np_.sin(x), "a")) * np_.cos(name(np_.cos(x), "b"))
        policy = lib.checkpoint_policies.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"], names_which_can_be_offloaded=["b"],
            offload_src="device", offload_dst="pinned_host")
        results.append(lib.grad(lib.checkpoint(f, policy=policy))(0.5))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    # a second derivative: ours is the one without the policy; JAX's raises
    second = sj.grad(sj.grad(sj.checkpoint(f, policy=policy)))(0.5)
    np.testing.assert_allclose(second, jax.grad(jax.grad(
        lambda x: jnp.sin(theirs.checkpoint_name(jnp.sin(x), "a"))
        * jnp.cos(theirs.checkpoint_name(jnp.cos(x), "b"))))(0.5), rtol=1e-5)
    their_policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["a"], names_which_can_be_offloaded=["b"],
        offload_src="device", offload_dst="pinned_host")
    with pytest.raises(ValueError, match="Expected cotangent type"):
        jax.grad(jax.grad(jax.checkpoint(lambda x: jnp.sin(theirs.checkpoint_name(
            jnp.sin(x), "a")) * jnp.cos(theirs.checkpoint_name(jnp.cos(x), "b")),
            policy=their_policy)))(0.5)
    closed = sj.make_jaxpr(sj.grad(sj.checkpoint(f, policy=policy)))(0.5)
    forward = next(e for e in closed.jaxpr.eqns if e.primitive.name == "remat2")
    assert len(forward.outvars) == 3  # the value, and the residuals a and b
    # names: strings only; our arrays out; the name transposes
    str(jax.make_jaxpr(lambda x: theirs.checkpoint_name(x, None))(1.0))
    with pytest.raises(AttributeError):
        str(jax.make_jaxpr(lambda x: theirs.checkpoint_name(x, 3))(1.0))
    raises(TypeError, ours.checkpoint_name, 1.0, None, match="must be a string")
    assert type(theirs.checkpoint_name(1.0, "a")).__name__ == "TypedFloat"
    assert type(theirs.checkpoint_name(np.ones(2), "a")).__name__ == "TypedNdArray"
    assert type(ours.checkpoint_name(1.0, "a")) is type(ours.checkpoint_name(np.ones(2), "a"))
    assert isinstance(ours.checkpoint_name(np.ones(2), "a"), sj.Array)
    with pytest.raises(NotImplementedError, match="'name' not implemented"):
        jax.linear_transpose(lambda x: theirs.checkpoint_name(2.0 * x, "a"), 1.0)(1.0)
    (ct,) = sj.linear_transpose(lambda x: ours.checkpoint_name(2.0 * x, "a"), 1.0)(1.0)
    assert float(ct) == 2.0


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


# ------------------------------------------------------------------------------------------
# Errors and tracers
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["stop_gradient", "sign", "floor", "comparison"])
def test_a_value_without_a_derivative_is_still_traced(op: str) -> None:
    """``float()`` and ``.tolist()`` of ``stop_gradient(x)``, ``sign(x)``, ``floor(x)`` or
    ``x > 0`` under ``grad`` or ``jvp``: JAX's zero tangent leaves a plain array, ours is
    still on the tape, so the conversion is refused."""
    def loss_of(lib, np_, convert):
        def loss(x):
            y = {"stop_gradient": lambda: lib.lax.stop_gradient(x), "sign": lambda: np_.sign(x),
                 "floor": lambda: np_.floor(x), "comparison": lambda: x > 0}[op]()
            convert(y)
            return x * 2.0
        return loss

    x = np.float32(1.5)
    for convert in (float, lambda y: y.tolist()):
        theirs = loss_of(jax, jnp, convert)
        assert float(jax.grad(theirs)(jnp.asarray(x))) == 2.0
        jax.jvp(theirs, (jnp.asarray(x),), (jnp.asarray(np.float32(1.0)),))
        ours = loss_of(sj, sjnp, convert)
        raises(sj.errors.ConcretizationTypeError, sj.grad(ours), sjnp.asarray(x))
        raises(sj.errors.ConcretizationTypeError, sj.jvp, ours, (sjnp.asarray(x),),
               (sjnp.asarray(np.float32(1.0)),))


def test_mesh_axis_names_print_with_repr() -> None:
    """``str(mesh)`` quotes each axis name with ``repr``; JAX puts it between single quotes,
    so the two differ only for a name with a quote in it."""
    for name, theirs, ours in (("d", "'d'", "'d'"), ("it's", "'it's'", '"it\'s"')):
        assert str(jax.make_mesh((8,), (name,))) == f"Mesh({theirs}: 8, axis_types=(Explicit,))"
        assert str(sj.make_mesh((8,), (name,))) == f"Mesh({ours}: 8, axis_types=(Explicit,))"


def test_error_classes_take_a_finished_message() -> None:
    """Ours are plain exceptions of a finished message; JAX's build theirs from a tracer and
    append a link to the documentation."""
    assert str(sj.errors.ConcretizationTypeError("a message")) == "a message"
    assert str(sj.errors.JAXTypeError("a message")) == "a message"
    assert str(jax.errors.JAXTypeError("a message")) == (
        "a message\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.JAXTypeError")
    raises(AttributeError, jax.errors.ConcretizationTypeError, "a message")


def test_jax_errors_lacks_three_classes() -> None:
    missing = {"InconclusiveDimensionOperation", "JaxRuntimeError", "KeyReuseError"}
    theirs = {n for n in dir(jax.errors) if not n.startswith("_")}
    ours = {n for n in dir(sj.errors) if not n.startswith("_")}
    assert theirs - ours == missing and ours - theirs == set()


def test_two_error_classes_are_also_at_the_top_level() -> None:
    for name in ("ConcretizationTypeError", "TracerArrayConversionError"):
        assert not hasattr(jax, name)
        assert getattr(sj, name) is getattr(sj.errors, name)


def test_error_messages_are_in_our_own_words() -> None:
    """The class and the moment are JAX's, the words after the first few are ours."""
    for fn, cls in ((float, "ConcretizationTypeError"),
                    (np.asarray, "TracerArrayConversionError")):
        with pytest.raises(getattr(jax.errors, cls)) as theirs:
            jax.jit(fn)(1.0)
        with pytest.raises(getattr(sj.errors, cls)) as ours:
            sj.jit(fn)(1.0)
        assert str(theirs.value).splitlines()[0] != str(ours.value).splitlines()[0]
        assert "docs.jax.dev" in str(theirs.value) and "docs.jax.dev" not in str(ours.value)


def _error_of(fn, *args, **kwargs) -> BaseException:
    with pytest.raises(Exception) as caught:
        fn(*args, **kwargs)
    return caught.value


def test_a_few_errors_are_of_another_class() -> None:
    odd = np.ones(3, np.float32)
    assert type(_error_of(jax.nn.glu, odd)) is AssertionError
    assert type(_error_of(sj.nn.glu, odd)) is ValueError
    assert type(_error_of(jnp.linalg.solve, odd, odd)) is ValueError
    assert type(_error_of(sjnp.linalg.solve, odd, odd)) is TypeError
    bounds = np.zeros(2, np.float32)
    assert type(_error_of(jax.random.uniform, jax.random.key(0), (3,), minval=bounds)) \
        is TypeError
    assert type(_error_of(sj.random.uniform, sj.random.key(0), (3,), minval=bounds)) \
        is ValueError
    from jax.example_libraries import optimizers as jax_optimizers
    from stage4_sharding.example_libraries import optimizers
    assert type(_error_of(jax_optimizers.pack_optimizer_state, [1.0])) is AssertionError
    assert type(_error_of(optimizers.pack_optimizer_state, [1.0])) is TypeError
    x = np.arange(4.0, dtype=np.float32)
    for lib, cls in ((jax, AssertionError), (sj, ValueError)):
        short = lib.vmap(lambda v: lib.lax.pshuffle(v, "i", [1, 0]), axis_name="i")
        outside = lib.vmap(lambda v: lib.lax.pbroadcast(v, "i", 7), axis_name="i")
        assert type(_error_of(short, x)) is cls and type(_error_of(outside, x)) is cls


def test_pbroadcast_is_a_masked_psum() -> None:
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    theirs = jax.vmap(lambda v: lax.pbroadcast(v, "i", 1), axis_name="i")
    raises(TypeError, theirs, jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(theirs(x)), np.broadcast_to(x[1], x.shape))
    mesh = jax.make_mesh((4,), ("i",))
    spec = jax.sharding.PartitionSpec("i")
    on_cpu = jax.shard_map(lambda v: lax.pbroadcast(v, "i", 1), mesh=mesh, in_specs=spec,
                           out_specs=spec)
    raises(NotImplementedError, on_cpu, jax.device_put(x, jax.NamedSharding(mesh, spec)))
    masked = jax.vmap(lambda v: lax.psum(jnp.where(lax.axis_index("i") == 1, v, 0.0), "i"),
                      axis_name="i")(x)
    ours = sj.vmap(lambda v: slax.pbroadcast(v, "i", 1), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(masked))
    assert (np.asarray(ours) == x[1]).all()


# ------------------------------------------------------------------------------------------
# Devices and sharding
# ------------------------------------------------------------------------------------------


def test_there_are_always_8_simulated_devices() -> None:
    """Ours: 8 simulated CPU devices, whatever the machine; JAX: the platform's devices
    (this suite asks XLA for 8 CPU devices, oracle.prepare_jax, so that both have the meshes)."""
    assert len(sj.devices()) == 8 and sj.device_count() == 8
    assert {d.platform for d in jax.devices()} == {"cpu"}


def test_a_scatter_jax_finds_ambiguous_takes_its_operands_layout() -> None:
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4) / 8

    def loss(np_, x):
        rows = np_.stack([x[:, 2], x[:, 2]], axis=0).at[np_.array([-2, 1])].set(0.5)
        return np_.sum(np_.sin(rows))

    expected = np.asarray(sj.grad(lambda v: loss(sjnp, v))(x))
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
            split = lib.device_put(x, lib.sharding.PartitionSpec("x", None))
            if lib is jax:
                with pytest.raises(Exception, match="could not be resolved unambiguously"):
                    lib.grad(lambda v: loss(np_, v))(split)
            else:
                g = lib.grad(lambda v: loss(np_, v))(split)
                assert str(lib.typeof(g)) == "float32[4@x,4]"
                np.testing.assert_allclose(np.asarray(g), expected)


def test_the_jvp_of_prod_over_a_split_array_is_computed() -> None:
    x = np.random.default_rng(1).standard_normal((8, 8, 8)).astype(np.float32)
    expected = np.asarray(sj.jvp(lambda a: sjnp.prod(a, axis=1), (x,), (x,))[1])
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        with lib.set_mesh(lib.make_mesh((8,), ("d",))):
            split = lib.device_put(x, lib.sharding.PartitionSpec("d"))  # a kept dim split
            run = lambda: lib.jvp(lambda a: np_.prod(a, axis=1), (split,), (split,))[1]  # noqa: E731
            if lib is jax:
                with pytest.raises(Exception, match="slicing on sharded dims"):
                    run()
            else:
                np.testing.assert_allclose(np.asarray(run()), expected, rtol=1e-5)


@pytest.mark.parametrize("derivative", ["grad", "jacfwd", "jacrev", "hessian"])
def test_the_derivative_of_prod_over_its_split_dim_is_computed(derivative: str) -> None:
    """The entry's second case: the product over the dim that is split, in reverse mode too
    (JAX's grad is built on the same rule)."""
    x = np.arange(1.0, 9.0, dtype=np.float32) / 4
    expected = np.asarray(getattr(sj, derivative)(sjnp.prod)(x))
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        with lib.set_mesh(lib.make_mesh((8,), ("d",))):
            split = lib.device_put(x, lib.sharding.PartitionSpec("d"))
            run = lambda: getattr(lib, derivative)(np_.prod)(split)  # noqa: E731
            if lib is jax:
                with pytest.raises(Exception, match="slicing on sharded dims"):
                    run()
            else:
                np.testing.assert_allclose(np.asarray(run()), expected, rtol=1e-5)
                if derivative == "grad":
                    others = np.prod(x) / x  # every element's product of the others
                    np.testing.assert_allclose(np.asarray(run()), others, rtol=1e-5)


def test_an_array_that_is_not_split_lives_on_device_0() -> None:
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        with lib.set_mesh(lib.make_mesh((8,), ("d",))):
            x = np_.ones((8, 4))
        placed = lib.device_put(np_.ones(3), lib.devices()[3])
        made = np_.zeros(3, device=lib.devices()[3])
        assert str(lib.typeof(x)) == "float32[8,4]"
        # committed: as JAX's for arrays made without a device and for split ones ...
        split = lib.device_put(np.ones(8, np.float32), lib.sharding.NamedSharding(
            lib.make_mesh((8,), ("d",)), lib.sharding.PartitionSpec("d")))
        plain = np_.ones(3)
        assert not plain.committed and not lib.device_put(np.ones(3)).committed
        assert not lib.jit(lambda a: a * 2)(plain).committed
        assert split.committed and (split + 1).committed
        assert lib.jit(lambda a: a * 2)(split).committed
        # ... not for one placed on a single device or made under set_mesh, nor for what is
        # computed from it
        unsplit = (x, placed, made, placed + 1, lib.jit(lambda a: a * 2)(placed))
        if lib is jax:
            assert isinstance(x.sharding, jax.sharding.NamedSharding)
            assert placed.sharding.device_set == made.sharding.device_set == {jax.devices()[3]}
            assert all(a.committed for a in unsplit)
        else:
            assert x.sharding == sj.sharding.SingleDeviceSharding(sj.devices()[0])
            assert placed.sharding.device_set == made.sharding.device_set == {sj.devices()[0]}
            assert not any(a.committed for a in unsplit)


def test_device_put_copies_numpy_data() -> None:
    buffer = np.zeros(4096 + 16, np.float32)
    start = (-buffer.ctypes.data // 4) % 16  # 64-byte aligned, as JAX's CPU client keeps
    for lib in (jax, sj):
        a = buffer[start:start + 4096]
        a[:] = 1.0
        placed = lib.device_put(a)
        a[0] = 5.0
        assert float(np.asarray(placed)[0]) == (5.0 if lib is jax else 1.0)


def test_device_put_of_a_deleted_array_raises() -> None:
    """JAX returns a deleted array from ``device_put`` without a device, and raises at its
    first use; ours raises at once. With a device, both raise."""
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        x = np_.ones(3)
        x.delete()
        with pytest.raises(RuntimeError, match="deleted"):
            lib.device_put(x, lib.devices()[0])
        if lib is jax:
            with pytest.raises(RuntimeError, match="deleted"):
                np.asarray(lib.device_put(x))
        else:
            with pytest.raises(RuntimeError, match="deleted"):
                lib.device_put(x)


def test_device_put_inside_jit_adds_no_equation() -> None:
    for lib in (jax, sj):
        f = lambda a, lib=lib: lib.device_put(a, lib.devices()[0]) * 2.0  # noqa: E731
        x = np.ones(3, np.float32)
        prims = [e.primitive.name for e in lib.make_jaxpr(f)(x).jaxpr.eqns]
        assert prims == (["device_put", "mul"] if lib is jax else ["mul"])
        np.testing.assert_array_equal(lib.jit(f)(x), 2 * x)
        mesh = lib.make_mesh((8,), ("x",))
        split = lib.device_put(np.arange(8.0, dtype=np.float32),
                               lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x")))
        moved = lib.jit(lambda a, lib=lib: lib.device_put(a, lib.devices()[3]))(split)
        assert moved.sharding.device_set == set(mesh.devices.flat)  # it stays split
        np.testing.assert_array_equal(moved, np.arange(8.0))


def test_shard_map_lays_out_an_input_its_in_specs_do_not_describe() -> None:
    x = np.arange(8.0, dtype=np.float32)
    for lib in (jax, sj):
        P = lib.sharding.PartitionSpec
        explicit = lib.make_mesh((8,), ("x",))
        auto = lib.make_mesh((8,), ("x",), axis_types=(lib.sharding.AxisType.Auto,))
        doubled = {name: lib.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"),
                                       out_specs=P("x"))
                   for name, mesh in (("explicit", explicit), ("auto", auto))}
        np.testing.assert_array_equal(doubled["auto"](x), 2 * x)
        if lib is jax:
            raises(ValueError, doubled["explicit"], x, match="does not match the specs")
        else:
            np.testing.assert_array_equal(doubled["explicit"](x), 2 * x)


def test_shard_map_takes_every_mesh_axis_by_hand() -> None:
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    for lib in (jax, sj):
        P, mesh = lib.sharding.PartitionSpec, lib.make_mesh((4, 2), ("x", "y"))
        f = lib.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                          axis_names={"x"})
        if lib is jax:
            np.testing.assert_array_equal(f(x), 2 * x)
        else:
            raises(NotImplementedError, f, x, match="a part of the mesh's axes")
        whole = lib.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x", "y"),
                              out_specs=P("x", "y"), axis_names={"x", "y"})
        np.testing.assert_array_equal(whole(lib.device_put(
            x, lib.sharding.NamedSharding(mesh, P("x", "y")))), 2 * x)


def test_a_loop_carry_may_become_varying_in_a_shard_map_body() -> None:
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    results = {}
    for lib, mark in ((jax, False), (jax, True), (sj, False), (sj, True)):
        P = lib.sharding.PartitionSpec
        mesh = lib.make_mesh((4, 2), ("x", "y"), axis_types=(lib.sharding.AxisType.Auto,) * 2)

        def body(block, lib=lib, mark=mark):
            init = lib.numpy.zeros(2)
            if mark:
                init = lib.lax.pcast(init, ("y",), to="varying")
            return lib.lax.scan(lambda c, r: (c + lib.lax.psum(r, "x"), c), init, block)[1]

        f = lib.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
        if lib is jax and not mark:
            raises(TypeError, f, x, match="carry input and carry output must have equal types")
        else:
            results[lib.__name__, mark] = np.asarray(f(x))
    for got in results.values():
        np.testing.assert_array_equal(got, results["jax", True])
    raises(NotImplementedError, sj.lax.pcast, np.ones(2), "x", to="reduced", match="reduced")


def test_debug_callback_is_a_debug_print_equation() -> None:
    def names(lib):
        def f(x):
            lib.debug.print("{}", x)
            lib.debug.callback(print, x)
        return [e.primitive.name for e in lib.make_jaxpr(f)(1.0).jaxpr.eqns]
    assert names(jax) == ["debug_print", "debug_callback"]
    assert names(sj) == ["debug_print", "debug_print"]
    for lib in (jax, sj):
        seen = []
        lib.debug.callback(seen.append, 2.0)
        assert seen[0].weak_type is (lib is jax)


def test_debug_log_is_a_callback_that_logs_to_its_own_logger(caplog) -> None:
    logged = {}
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            lib.debug.log("x is {} and {y}", np_.ones(2), y=3.0)
            lib.jit(lambda x, lib=lib: lib.debug.log("in jit {}", x) or x)(np.arange(2.0))
            lib.vmap(lambda x, lib=lib: lib.debug.log("in vmap {}", x) or x)(np.arange(2.0))
        logged[lib.__name__] = [(r.name, r.levelname, r.getMessage()) for r in caplog.records
                                if "debug" in r.name]
    theirs, ours = logged["jax"], logged["stage4_sharding"]
    assert [r[1:] for r in ours] == [r[1:] for r in theirs] and len(ours) == 4
    assert {r[0] for r in theirs} == {"jax._src.debugging"}
    assert {r[0] for r in ours} == {"stage2_jit.debug"}
    assert [e.primitive.name for e in sj.make_jaxpr(
        lambda x: sj.debug.log("{}", x))(1.0).jaxpr.eqns] == ["debug_print"]


def test_device_splits_what_array_asarray_and_linspace_make() -> None:
    makers = {"array": lambda np_, s: np_.array(np.arange(8.0), device=s),
              "asarray": lambda np_, s: np_.asarray(np.arange(8.0), device=s),
              "linspace": lambda np_, s: np_.linspace(0.0, 1.0, 8, device=s)}
    for name, make in makers.items():
        for lib, np_ in ((jax, jnp), (sj, sjnp)):
            split = lib.sharding.NamedSharding(lib.make_mesh((4,), ("x",)),
                                               lib.sharding.PartitionSpec("x"))
            if lib is jax:
                raises(ValueError, make, np_, split, match="Auto axes")
            else:
                assert str(lib.typeof(make(np_, split))) == "float32[8@x]", name


def _split(lib, mesh, value, *spec):
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
    return lib.device_put(value, sharding)


def _sharding_error(fn, *args) -> BaseException:
    with pytest.raises(Exception) as caught:
        fn(*args)
    return caught.value


def test_visualize_array_sharding_is_also_at_the_top_level_and_returns_its_text(capsys) -> None:
    assert not hasattr(jax, "visualize_array_sharding")
    assert sj.visualize_array_sharding is sj.debug.visualize_array_sharding
    mesh = sj.make_mesh((8,), ("d",))
    text = sj.visualize_array_sharding(_split(sj, mesh, np.ones(8, np.float32), "d"))
    assert "CPU 7" in text and capsys.readouterr().out.strip() == text.strip()


def test_a_donated_sharded_array_is_kept() -> None:
    """JAX deletes a donated sharded array whose buffers hold a result; ours keeps it and
    computes the same result in fresh memory."""
    found = []
    for lib in (jax, sj):
        mesh = lib.make_mesh((8,), ("d",))
        x = _split(lib, mesh, np.ones((8, 4), np.float32), "d")
        y = lib.jit(lambda a: a * 2.0, donate_argnums=0)(x)
        found.append((x.is_deleted(), np.asarray(y).tolist()))
    (theirs_deleted, theirs), (ours_deleted, ours) = found
    assert theirs_deleted and not ours_deleted and theirs == ours


def test_cpu_memory_stats_are_counted_where_jax_has_none() -> None:
    assert jax.devices()[0].memory_stats() is None
    stats = sj.devices()[0].memory_stats()
    assert {"bytes_in_use", "peak_bytes_in_use", "pool_bytes", "bytes_limit"} <= set(stats)


def test_sharding_type_error_is_a_type_error() -> None:
    """JAX's ShardingTypeError derives from Exception alone; ours from TypeError. For a reshape
    of a split operand that no rule places, both ask for ``out_sharding=``."""
    value = np.arange(16.0, dtype=np.float32).reshape(2, 8)
    errors = []
    for lib in (jax, sj):
        mesh = lib.make_mesh((8,), ("d",))
        with lib.set_mesh(mesh):
            y = _split(lib, mesh, value, None, "d")
            errors.append(_sharding_error(lib.jit(lambda y: y.reshape(4, 4)), y))
    theirs, ours = errors
    assert type(theirs).__name__ == type(ours).__name__ == "ShardingTypeError"
    assert type(theirs).__bases__ == (Exception,) and isinstance(ours, TypeError)
    assert "out_sharding" in str(theirs) and "out_sharding=" in str(ours)


def test_a_constant_takes_the_operands_layout() -> None:
    """``jnp.zeros(16)`` has no sharding in our types, so it is laid out as the split operand
    it is concatenated with, eagerly and under jit; JAX types it replicated and refuses."""
    value = np.arange(16.0, dtype=np.float32)
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        mesh = lib.make_mesh((8,), ("d",))
        with lib.set_mesh(mesh):
            x = _split(lib, mesh, value, "d")
            join = lambda x: np_.concatenate([x, np_.zeros(16)])  # noqa: E731
            for run in (join, lib.jit(join)):
                if lib is jax:
                    assert type(_sharding_error(run, x)).__name__ == "ShardingTypeError"
                else:
                    got = run(x)
                    assert tuple(got.sharding.spec) == ("d",)
                    assert np.asarray(got).tolist() == value.tolist() + [0.0] * 16


def test_an_update_split_unlike_its_target_is_resharded() -> None:
    """``x.at[0].add(u)`` with ``u`` split and ``x`` replicated: JAX refuses the broadcast of
    ``u``; ours reshards it, giving what JAX gives for ``u`` resharded replicated first."""
    value, update = np.zeros((4, 8), np.float32), np.arange(8.0, dtype=np.float32)
    add = lambda x, u: x.at[0].add(u)  # noqa: E731
    mesh = jax.make_mesh((8,), ("d",))
    with jax.set_mesh(mesh):
        x, u = _split(jax, mesh, value), _split(jax, mesh, update, "d")
        with pytest.raises(ValueError, match="Incompatible types for broadcasting"):
            jax.jit(add)(x, u)
        want = jax.jit(add)(x, jax.sharding.reshard(u, jax.sharding.PartitionSpec()))
    mesh = sj.make_mesh((8,), ("d",))
    with sj.set_mesh(mesh):
        got = sj.jit(add)(_split(sj, mesh, value), _split(sj, mesh, update, "d"))
    assert np.asarray(got).tolist() == np.asarray(want).tolist()
    assert tuple(e for e in got.sharding.spec if e) == tuple(e for e in want.sharding.spec if e)


def test_a_slice_across_devices_gathers_the_dim_whole() -> None:
    """``x[2:18]`` of 32 elements split 8 ways: the values and the spec are JAX's; XLA moves
    the few elements each block needs by collective permutes, we all-gather the dim (7 blocks
    of 4 float32 per device), which the cost model counts."""
    value = np.arange(32.0, dtype=np.float32)
    cut = lambda x: x[2:18]  # noqa: E731
    mesh = jax.make_mesh((8,), ("d",))
    with jax.set_mesh(mesh):
        x = _split(jax, mesh, value, "d")
        want = jax.jit(cut)(x)
        hlo = jax.jit(cut).lower(x).compile().as_text()
    assert "collective-permute" in hlo and "all-gather" not in hlo
    mesh = sj.make_mesh((8,), ("d",))
    with sj.set_mesh(mesh):
        x = _split(sj, mesh, value, "d")
        with sj.record_collectives() as log:
            got = sj.jit(cut)(x)
    assert np.asarray(got).tolist() == np.asarray(want).tolist() == value[2:18].tolist()
    assert tuple(got.sharding.spec) == tuple(want.sharding.spec) == ("d",)
    assert [(c.kind, c.bytes_sent) for c in log] == [("all-gather", 7 * 4 * 4)]
    window = lambda x, i: sj.lax.dynamic_slice(x, (i,), (8,))  # noqa: E731
    with sj.set_mesh(mesh):
        x = _split(sj, mesh, value, "d")
        with sj.record_collectives() as log:
            got = sj.jit(window)(x, np.int32(5))
    assert np.asarray(got).tolist() == value[5:13].tolist()
    assert [c.kind for c in log] == ["all-gather"] and tuple(got.sharding.spec) == ("d",)


def test_a_spatially_split_convolution_gathers_its_input_whole() -> None:
    """A 3x3 'SAME' convolution of an input split 8 ways along its height: the values and
    the type are JAX's; XLA exchanges the one-row halos by collective permutes, we all-gather
    the input (7 blocks of 2x2x1x6 float32 per device), which the cost model counts."""
    conv = lambda L: lambda x: L.conv_general_dilated(x, CONV_RHS, (1, 1), "SAME")  # noqa: E731
    value = np.random.RandomState(4).randn(2, 2, 8, 6).astype(np.float32)
    mesh = jax.make_mesh((8,), ("d",))
    with jax.set_mesh(mesh):
        x = _split(jax, mesh, value, None, None, "d")
        want = jax.jit(conv(lax))(x)
        hlo = jax.jit(conv(lax)).lower(x).compile().as_text()
    assert "collective-permute" in hlo and "all-gather" not in hlo
    mesh = sj.make_mesh((8,), ("d",))
    with sj.set_mesh(mesh):
        x = _split(sj, mesh, value, None, None, "d")
        with sj.record_collectives() as log:
            got = sj.jit(conv(slax))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    assert str(sj.typeof(got)) == str(jax.typeof(want)) == "float32[2,3,8@d,6]"
    assert [(c.kind, c.bytes_sent) for c in log] == [("all-gather", 7 * 2 * 2 * 1 * 6 * 4)]


def test_default_device_moves_no_array_that_exists_already() -> None:
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        with lib.default_device(lib.devices()[3]):
            made = np_.ones(2)
        assert [d.id for d in made.devices()] == ([3] if lib is jax else [0])
    pytest.importorskip("numba.cuda")  # the rest asks stage 2's GPU, in Numba's simulator
    script = ("import numpy as np\nimport stage2_jit as jax, stage2_jit.numpy as jnp\n"
              "x = jnp.ones(2)\nwith jax.default_device('gpu'):\n"
              "    print(type(x + 1.0).__name__, type(jnp.ones(2) + 1.0).__name__)\n")
    environment = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=environment)
    assert done.stdout.split() == ["Array", "GpuArray"], done.stderr[-2000:]


# ------------------------------------------------------------------------------------------
# Several processes
# ------------------------------------------------------------------------------------------


def _initialize_alone(lib: str, script: str) -> list[str]:
    """The lines ``script`` prints, with ``jax`` bound to ``lib``, in a fresh process that no
    launcher started: ``jax.distributed.initialize`` must come before any device is used,
    and this process has used them."""
    launchers = ("PMI", "OMPI_", "PMIX_", "SLURM_")  # MPI's launchers and Slurm set these
    environment = {k: v for k, v in os.environ.items() if not k.startswith(launchers)}
    environment["JAX_PLATFORMS"] = "cpu"
    result = subprocess.run([sys.executable, "-c", f"import {lib} as jax\n{script}"],
                            capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_initialize_accepts_the_coordinator_address_and_ignores_it() -> None:
    """JAX's process 0 starts its coordination service at the address, so the port is taken;
    ours leaves it free (mpiexec connected the processes)."""
    pytest.importorskip("mpi4py")
    script = """
import socket
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=1,
                           process_id=0)
try:
    socket.socket().bind(("127.0.0.1", port))
    print("port free")
except OSError:
    print("port taken")
print("processes:", jax.process_count())
jax.distributed.shutdown()
"""
    assert _initialize_alone("jax", script) == ["port taken", "processes: 1"]
    assert _initialize_alone("stage4_sharding", script) == ["port free", "processes: 1"]


def test_outside_mpiexec_initialize_needs_num_processes_1() -> None:
    """Without a launcher, JAX needs a coordinator's address even for one process; ours asks
    for mpiexec, or makes a job of one process with ``num_processes=1``."""
    pytest.importorskip("mpi4py")
    script = """
for kwargs in ({}, {"num_processes": 1, "process_id": 0}):
    try:
        jax.distributed.initialize(**kwargs)
        print("a job of", jax.process_count(), "process")
    except ValueError as error:
        print("ValueError:", error)
"""
    theirs = _initialize_alone("jax", script)
    ours = _initialize_alone("stage4_sharding", script)
    assert theirs == ["ValueError: coordinator_address should be defined."] * 2
    assert ours[0].startswith("ValueError: jax.distributed.initialize(): this process was not "
                              "started by mpiexec")
    assert "mpiexec -n 2 python your_script.py" in ours[0]
    assert ours[1] == "a job of 1 process"


def test_local_device_ids_give_the_number_of_local_devices() -> None:
    """Ours takes how many ids there are as the number of local devices, numbered from 0
    (JAX keeps the devices with those ids visible; not run here, as JAX needs its own
    cluster set-up for it)."""
    pytest.importorskip("mpi4py")
    script = """
jax.distributed.initialize(num_processes=1, local_device_ids=[5, 6])
print([d.id for d in jax.local_devices()])
"""
    assert _initialize_alone("stage4_sharding", script) == ["[0, 1]"]


def test_device_ids_run_on_across_processes() -> None:
    """Ours: process 1's devices continue process 0's ids (JAX's CPU backend gives each
    process a range of its own; seen under mpiexec, not run here: JAX needs its own
    cluster set-up there)."""
    pytest.importorskip("mpi4py")
    mpiexec = shutil.which("mpiexec", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                           f"{os.environ.get('PATH', '')}")
    if mpiexec is None:
        pytest.skip("needs mpiexec: pip install -e './stage4_sharding[mpi]'")
    script = ("import numpy as np, stage4_sharding as jax; jax.distributed.initialize(); "
              "from stage4_sharding.experimental.multihost_utils import process_allgather; "
              "ids = process_allgather(np.array([d.id for d in jax.local_devices()])); "
              "print(ids.tolist()) if jax.process_index() == 0 else None")
    result = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", script], text=True,
                            capture_output=True, timeout=120,
                            env=dict(os.environ, JAX_NUM_CPU_DEVICES="2"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[[0, 1], [2, 3]]"  # process 0's ids, then process 1's


def test_make_array_from_single_device_arrays_takes_the_blocks_in_order() -> None:
    """JAX puts each block on the device it is on; ours takes them in the order of the
    sharding's addressable devices, so that order agrees and the reverse does not. A
    shard's data is on its device in JAX, on device 0 here."""
    value = np.arange(16.0, dtype=np.float32)
    results = {}
    for lib in (jax, sj):
        sharding = lib.sharding.NamedSharding(lib.make_mesh((8,), ("d",)),
                                              lib.sharding.PartitionSpec("d"))
        blocks = [lib.device_put(value[index], device) for device, index in
                  sharding.addressable_devices_indices_map(value.shape).items()]
        results[lib] = [np.asarray(lib.make_array_from_single_device_arrays(
            value.shape, sharding, order)).tolist() for order in (blocks, blocks[::-1])]
        shard = lib.device_put(value, sharding).addressable_shards[5]
        assert shard.device == lib.devices()[5]
        assert shard.data.devices() == {lib.devices()[5 if lib is jax else 0]}
    assert results[jax] == [value.tolist()] * 2
    assert results[sj] == [value.tolist(), value.reshape(8, 2)[::-1].ravel().tolist()]


def test_host_local_array_helpers_run_outside_jit() -> None:
    from jax.experimental import multihost_utils as theirs
    from stage4_sharding.experimental import multihost_utils as ours
    local = np.arange(8.0, dtype=np.float32)
    for lib, module in ((jax, theirs), (sj, ours)):
        mesh = lib.make_mesh((8,), ("d",))
        spec = lib.sharding.PartitionSpec("d")
        eager = module.host_local_array_to_global_array(local, mesh, spec)
        assert str(lib.typeof(eager)) == "float32[8@d]"
        back = module.global_array_to_host_local_array(eager, mesh, spec)
        np.testing.assert_array_equal(np.asarray(back), local)
    their_mesh, their_spec = jax.make_mesh((8,), ("d",)), jax.sharding.PartitionSpec("d")
    jitted = jax.jit(lambda v: theirs.host_local_array_to_global_array(v, their_mesh,
                                                                         their_spec))
    np.testing.assert_array_equal(np.asarray(jitted(local)), local)
    mesh = sj.make_mesh((8,), ("d",))
    for fun in (ours.host_local_array_to_global_array, ours.global_array_to_host_local_array):
        raises(TypeError, sj.jit(lambda v, fun=fun: fun(v, mesh, sj.sharding.PartitionSpec("d"))),
               local, match="call it outside jit")


# ------------------------------------------------------------------------------------------
# Compiled kernels
# ------------------------------------------------------------------------------------------


def test_an_unusable_kernel_cache_folder_falls_back_to_a_temporary_one(tmp_path,
                                                                       monkeypatch) -> None:
    """JAX caches nothing on disk unless asked (``jax_compilation_cache_dir`` is unset); ours
    always caches, and where its folder cannot be used it warns and uses a temporary one."""
    from stage2_jit import kernel_cache

    assert jax.config.jax_compilation_cache_dir is None
    blocked = tmp_path / "a file"
    blocked.write_text("in the way")
    monkeypatch.setenv("JAX_FROM_NUMPY_CACHE_DIR", str(blocked / "kernels"))
    with pytest.warns(UserWarning, match="cannot be used"):
        folder = kernel_cache.usable_cache_dir()
    assert folder != blocked / "kernels" and folder.is_dir()
    assert folder.name.startswith("jax_from_numpy_kernels-")


def test_a_first_call_on_the_interpreter_tier_equals_jax_bit_for_bit() -> None:
    """A first call that runs on the interpreter while the kernel compiles gives the bits the
    kernel gives after it; compared with JAX's, both are the same float32 values (JAX's
    ``tanh`` polynomial is not ours, so within a few ulps)."""
    from stage2_jit import tiers

    def program(x):
        return jnp.maximum(x * x - 2.0 * x, 0.0) / (1.0 + jnp.abs(x))

    x = np.linspace(-4, 4, 4097, dtype=np.float32)
    sj.config.update("jax_from_numpy_tiered", True)
    try:
        f = sj.jit(lambda x: sjnp.maximum(x * x - 2.0 * x, 0.0) / (1.0 + sjnp.abs(x)))
        first = np.asarray(f(x))
        tiers.wait()
        later = np.asarray(f(x))
    finally:
        sj.config.update("jax_from_numpy_tiered", False)
    theirs = np.asarray(jax.jit(program)(x))
    assert first.view(np.uint32).tolist() == later.view(np.uint32).tolist()
    assert first.dtype == theirs.dtype
    np.testing.assert_array_equal(first, theirs)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64"])
def test_narrow_float_and_complex_programs_run_on_the_interpreter(dtype: str) -> None:
    x = np.arange(4).astype(getattr(jnp, dtype))
    program = lambda x: x * 2 + 1  # noqa: E731
    text = sj.jit(program).lower(sjnp.asarray(x)).as_text()
    assert f"# Not generated: a value of dtype {dtype}" in text
    assert "@njit" not in text and "@njit" in sj.jit(program).lower(np.float32(1)).as_text()
    ours, theirs = np.asarray(sj.jit(program)(sjnp.asarray(x))), np.asarray(jax.jit(program)(x))
    assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist()


def test_lower_as_text_shows_the_jaxprs_plan_and_source_where_jax_shows_stablehlo() -> None:
    x = np.ones((8, 4), np.float32)
    theirs = jax.jit(jax.nn.softmax).lower(x).as_text()
    ours = sj.jit(sj.nn.softmax).lower(x).as_text()
    assert theirs.lstrip().startswith("module @jit_softmax") and "stablehlo." in theirs
    headings = [line.split(" (")[0] for line in ours.splitlines()
                if line in ("# jaxpr", "# optimized jaxpr")
                or line.startswith(("# kernel plan", "# generated source"))]
    assert headings == ["# jaxpr", "# optimized jaxpr", "# kernel plan", "# generated source"]
    assert "stablehlo" not in ours


def test_each_distinct_closure_compiles_a_kernel_of_its_own() -> None:
    """Constants are written into the generated source, so closures over different floats are
    different kernels; Numba keeps each one's machine code for the life of the process."""
    x = np.float32(1.0)

    def source(c: float) -> str:
        text = sj.jit(lambda x: x * c + 1.0).lower(x).as_text()
        return text[text.index("# generated source"):]

    first, second = source(2.5), source(3.5)
    assert first != second and "np.float32(2.5)" in first and "np.float32(3.5)" in second


# ------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------


def test_the_page_and_these_tests_name_each_other() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", text))
    here = {name for name in globals() if name.startswith("test_")}
    here.discard("test_the_page_and_these_tests_name_each_other")
    assert named - here == set(), f"the page names tests that do not exist: {named - here}"
    assert here - named == set(), f"tests the page does not name: {here - named}"


def test_jit_accepts_keep_unused_inline_and_compiler_options() -> None:
    x = np.arange(3.0, dtype=np.float32)
    for lib in (sj, jax):
        f = lib.jit(lambda a, unused: a * 2, keep_unused=True, inline=True,
                    compiler_options={})
        assert np.asarray(f(x, x)).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(NotImplementedError, match="device_put"):
        sj.jit(lambda a: a, device=sj.devices()[0])


def test_with_sharding_constraint_is_a_reshard() -> None:
    x = np.ones((8, 2), np.float32)
    grads = []
    for lib, numpy, module in ((sj, sjnp, sj.sharding), (jax, jnp, jax.sharding)):
        mesh = lib.make_mesh((8,), ("d",), axis_types=(module.AxisType.Auto,))
        split = module.NamedSharding(mesh, module.PartitionSpec("d"))

        def f(v, numpy=numpy, lib=lib, split=split):
            return numpy.sum(lib.lax.with_sharding_constraint(v * 2, split) ** 2)
        grads.append(lib.grad(f)(x))
        text = str(lib.make_jaxpr(f)(x))
        assert ("reshard[" in text) is (lib is sj) and ("sharding_constraint[" in text) is (
            lib is jax)
    np.testing.assert_array_equal(*grads)
    assert not any(grads[0].sharding.spec) and tuple(grads[1].sharding.spec) == ("d",)


def test_a_namedtuples_children_are_keyed_by_their_own_fields() -> None:
    import collections
    point = collections.namedtuple("Point", "x y")
    for lib, expected in ((sj, [".x", ".y"]), (jax, [".x", ".x"])):
        keyed = lib.tree_util.flatten_one_level_with_keys(point(1, 2))[0]
        assert [str(key) for key, _ in keyed] == expected
        assert [lib.tree_util.keystr(path) for path, _ in
                lib.tree_util.tree_flatten_with_path(point(1, 2))[0]] == [".x", ".y"]


def test_auto_axes_may_close_over_arrays_typed_outside_it() -> None:
    rows = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    results = []
    for lib in (sj, jax):
        module, P = lib.sharding, lib.sharding.PartitionSpec  # noqa: N806
        mesh = lib.make_mesh((4, 2), ("X", "Y"))
        with module.set_mesh(mesh):
            x = lib.device_put(rows, module.NamedSharding(mesh, P("X", None)))
            y = lib.device_put(rows, module.NamedSharding(mesh, P(None, "X")))
            f = module.auto_axes(lambda a: a * y, out_sharding=P("X"))
            try:
                results.append(np.asarray(f(x)))
            except ValueError as error:
                results.append(str(error))
    np.testing.assert_array_equal(results[0], rows * rows)
    assert "should match the aval mesh" in results[1]
    raises(ValueError, sj.sharding.AbstractMesh, (4, 2), ("a",), match="one size per name")
    jax.sharding.AbstractMesh((4, 2), ("a",))  # JAX's raises only when used


def test_values_stay_on_meshes_of_one_shape_under_jit() -> None:
    x8 = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    for lib in (sj, jax):
        module, P = lib.sharding, lib.sharding.PartitionSpec  # noqa: N806
        mesh = lib.make_mesh((4, 2), ("X", "Y"))
        with module.set_mesh(mesh):
            x = lib.device_put(x8, P("X", "Y"))
            eager = lib.device_put(x, module.NamedSharding(lib.make_mesh((8,), ("A",)),
                                                           P("A", None)))
            assert str(lib.typeof(eager)) == "float32[8@A,4]"

            def regrouped(v, module=module, P=P):  # noqa: N803
                line = module.AbstractMesh((8,), ("A",), (module.AxisType.Explicit,))
                with module.use_abstract_mesh(line):
                    return module.reshard(v, P("A", None)) * 2
            if lib is jax:
                assert str(lib.typeof(lib.jit(regrouped)(x))) == "float32[8@A,4]"
            else:
                raises(ValueError, lib.jit(regrouped), x, match="outside jit")


def test_narrow_running_sums_and_nanmean_accumulate_in_float32() -> None:
    x = (np.random.default_rng(0).standard_normal(4096) * 3).astype(ml_dtypes.bfloat16)
    exact = np.cumsum(x.astype(np.float64))
    ours, theirs = np.asarray(sjnp.cumsum(x), np.float64), np.asarray(jnp.cumsum(x), np.float64)
    assert np.abs(ours - exact).max() < 1 < np.abs(theirs - exact).max()
    square, mean = x.reshape(64, 64), float(np.mean(x.astype(np.float64)))
    assert abs(float(sjnp.nanmean(square)) - mean) < 1e-3 < abs(float(jnp.nanmean(square)) - mean)


@pytest.mark.parametrize("name", ["elu", "selu", "hard_swish", "softmax", "silu"])
def test_float16_results_differ_from_jax_in_the_last_bits(name: str) -> None:
    x = np.random.default_rng(0).standard_normal(4096) * 3
    half, brain = x.astype(np.float16), x.astype(ml_dtypes.bfloat16)
    ours, theirs = (np.asarray(f(half)).view(np.int16).astype(int)
                    for f in (getattr(sj.nn, name), getattr(jax.nn, name)))
    assert np.abs(ours - theirs).max() <= 3
    np.testing.assert_array_equal(getattr(sj.nn, name)(brain), getattr(jax.nn, name)(brain))


def test_special_functions_have_fewer_derivatives() -> None:
    special, theirs = sj.scipy.special, jax.scipy.special
    for name, args, argnum in (("hyp1f1", (3.0, 1.0, 0.5), 0), ("hyp2f1", (1.0, 2.0, 3.0, 0.2), 1),
                               ("zeta", (3.0, 2.0), 0)):
        jax.grad(getattr(theirs, name), argnums=argnum)(*args)
        raises(ValueError, sj.grad(getattr(special, name), argnums=argnum), *args,
               match="not supported")
        # forward mode too: it took the parameter's tangent as zero, a silently wrong jvp
        raises(ValueError, sj.jacfwd(getattr(special, name), argnums=argnum), *args,
               match="not supported")
    for f, param in ((lambda a: special.betainc(a, 2.0, 0.5), 2.0),
                     (lambda n: special.expn(n, 0.5), 2.0)):
        raises(ValueError, sj.jvp, f, (param,), (1.0,), match="not supported")
    np.testing.assert_allclose(sj.grad(special.zeta, argnums=1)(3.0, 2.0),
                               jax.grad(theirs.zeta, argnums=1)(3.0, 2.0), rtol=1e-6)
    exact = 0.0014073978  # SciPy's hyp1f1(3, 1, -10)
    assert abs(float(special.hyp1f1(3.0, 1.0, -10.0)) - exact) < 1e-7
    assert abs(float(theirs.hyp1f1(3.0, 1.0, -10.0)) - exact) > 1e-2



def test_vectorize_apply_along_axis_and_piecewise_loop_in_python() -> None:
    x = np.arange(15, dtype=np.float32).reshape(5, 3) - 7

    def sizes(lib, numpy):
        row = lambda v: v.sum() * 2  # noqa: E731
        programs = (lambda a: numpy.vectorize(row, signature="(n)->()")(a),
                    lambda a: numpy.apply_along_axis(row, 1, a),
                    lambda a: numpy.piecewise(a, [a > 0, a < 0], [lambda v: v * 2, lambda v: -v]))
        return [len(lib.make_jaxpr(p)(x).jaxpr.eqns) for p in programs], \
            [np.asarray(p(x)) for p in programs]

    (ours, our_values), (theirs, their_values) = sizes(sj, sjnp), sizes(jax, jnp)
    assert all(o >= 5 * t for o, t in zip(ours, theirs)), (ours, theirs)
    for o, t in zip(our_values, their_values):
        np.testing.assert_array_equal(o, t)


def test_betaln_in_float64_is_scipys(x64_both) -> None:
    from scipy import special
    a, b = np.float64([2.0, 0.5, 3.0]), np.float64([8.0, 10.0, 60.0])
    exact = special.betaln(a, b)
    ours, theirs = np.asarray(sj.scipy.special.betaln(a, b)), np.asarray(
        jax.scipy.special.betaln(a, b))
    np.testing.assert_allclose(ours, exact, rtol=1e-13)
    assert np.abs(theirs / exact - 1).max() > 1e-8


def test_gumbel_distributions_have_gradients_where_jax_raises() -> None:
    p = np.float32([0.1, 0.5, 0.9])
    with pytest.raises(TypeError):
        jax.grad(lambda p: jnp.sum(jax.scipy.stats.gumbel_r.ppf(p)))(p)
    got = sj.grad(lambda p: sjnp.sum(sj.scipy.stats.gumbel_r.ppf(p)))(p)
    np.testing.assert_allclose(got, -1 / (p * np.log(p)), rtol=1e-6)


def test_i0_is_a_series_within_a_float32_rounding_of_jax() -> None:
    x = np.linspace(-12, 12, 97, dtype=np.float32)
    ours, theirs = np.asarray(sjnp.i0(x)), np.asarray(jnp.i0(x))
    from scipy import special
    exact = special.i0(x.astype(np.float64))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6)
    assert np.abs(ours / exact - 1).max() < 2e-6


def test_polar_decomposes_what_qdwh_refuses() -> None:
    wide = np.arange(15, dtype=np.float32).reshape(3, 5) % 4 + np.eye(3, 5, dtype=np.float32)
    raises(NotImplementedError, jax_linalg.polar, wide, side="right")
    u, p = sj.scipy.linalg.polar(wide, side="right")
    np.testing.assert_allclose(u @ p, wide, atol=1e-5)
    for ours, theirs in zip((u, p), jax_linalg.polar(wide, side="right", method="svd")):
        np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-4)


def test_pascal_and_inverse_hilbert_matrices_are_exact() -> None:
    ours, theirs = sj.scipy.linalg, jax.scipy.linalg
    assert float(ours.pascal(4)[3, 3]) == 20.0 and float(ours.pascal(4)[0, 0]) == 1.0
    assert float(theirs.pascal(4)[0, 0]) != 1.0  # JAX's is computed in floating point
    np.testing.assert_array_equal(np.asarray(ours.invpascal(5)) @ np.asarray(ours.pascal(5)),
                                  np.eye(5))
    np.testing.assert_allclose(np.asarray(ours.invhilbert(4)), np.asarray(theirs.invhilbert(4)),
                               rtol=1e-5)
    assert np.asarray(ours.invhilbert(4))[3, 3] == 2800.0


def test_debug_nans_checks_operations_not_the_creation_of_an_array() -> None:
    nan = float("nan")
    jax.config.update("jax_debug_nans", True)
    sj.config.update("jax_debug_nans", True)
    # JAX's check of a new array is in its dispatch path, so it is asked in a process of its
    # own, where no earlier test has left the path warm
    script = ("import jax, jax.numpy as jnp\njax.config.update('jax_debug_nans', True)\n"
              "try:\n    jnp.array(float('nan'))\nexcept FloatingPointError:\n"
              "    print('raised')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.stdout.strip() == "raised", done.stderr[-2000:]
    try:
        made = sjnp.array(nan)  # no operation yet: no error
        raises(FloatingPointError, sjnp.add, made, 1.0, match="came in with the inputs")
        raises(FloatingPointError, sjnp.log, sjnp.array(-1.0), match="encountered in log")
        raises(FloatingPointError, jnp.log, jnp.array(-1.0), match="encountered in log")
    finally:
        jax.config.update("jax_debug_nans", False)
        sj.config.update("jax_debug_nans", False)


def test_three_options_choose_nothing_here() -> None:
    """``jax_check_tracer_leaks``, ``jax_traceback_filtering`` and
    ``jax_use_shardy_partitioner`` take JAX's values (and refuse others) and change nothing:
    a leaked tracer is reported when it is used, with the check on or off."""
    for name, value, bad in (("jax_check_tracer_leaks", True, "yes"),
                             ("jax_traceback_filtering", "off", "none"),
                             ("jax_use_shardy_partitioner", False, 1)):
        assert getattr(sj.config, name) == getattr(jax.config, name)  # the same defaults
        before = getattr(sj.config, name)
        with pytest.raises((TypeError, ValueError)):
            sj.config.update(name, bad)
        sj.config.update(name, value)
        try:
            leaked: list = []
            sj.jit(lambda x: (leaked.append(x), x * 3)[1])(1.0)  # JAX, checking: Exception
            raises(sj.errors.UnexpectedTracerError, lambda: leaked[0] * 2)
        finally:
            sj.config.update(name, before)
    leaked = []
    with jax.checking_leaks():
        raises(Exception, jax.jit(lambda x: (leaked.append(x), x * 3)[1]), 1.0,
               match="Leaked trace")


def test_a_platform_that_cannot_run_is_refused_when_named() -> None:
    before = jax.config.values["jax_platforms"]
    jax.config.update("jax_platforms", "tpu")  # JAX's backends are up: ignored
    try:
        assert float(jnp.add(1.0, 1.0)) == 2.0 and jax.default_backend() == "cpu"
    finally:
        jax.config.update("jax_platforms", before)
    for name in ("jax_platforms", "jax_platform_name"):
        raises(RuntimeError, sj.config.update, name, "tpu",
               match="Unable to initialize backend 'tpu'.*cpu")
    assert sj.config.jax_platforms is None and sj.config.jax_platform_name == ""


def test_pmap_shows_its_axis_in_its_type() -> None:
    theirs = jax.pmap(lambda v: v * 2, axis_name="i")(jnp.ones(4))
    ours = sj.pmap(lambda v: v * 2, axis_name="i")(sjnp.ones(4))
    assert str(jax.typeof(theirs)) == "float32[4]" and str(sj.typeof(ours)) == "float32[4@i]"
    assert tuple(theirs.sharding.spec) == tuple(ours.sharding.spec) == ("i",)
    raises(IndexError, jax.pmap(lambda v: v, in_axes=2), jnp.ones((2, 2)))
    raises(ValueError, sj.pmap(lambda v: v, in_axes=2), sjnp.ones((2, 2)), match="out of range")
    from jax._src.sharding import IndivisibleError
    raises(IndivisibleError, jax.pmap(lambda x, y: x + y), jnp.ones((2, 2)), jnp.ones((3, 2)))
    raises(ValueError, sj.pmap(lambda x, y: x + y), sjnp.ones((2, 2)), sjnp.ones((3, 2)),
           match="inconsistent sizes")


def test_all_gathers_result_counts_as_replicated() -> None:
    x = np.arange(8.0, dtype=np.float32)
    for lib in (jax, sj):
        P = lib.sharding.PartitionSpec
        mesh = lib.make_mesh((8,), ("i",))
        split = lib.device_put(x, lib.sharding.NamedSharding(mesh, P("i")))

        def gathered(check, lib=lib, P=P, mesh=mesh):
            return lib.shard_map(lambda b: lib.lax.all_gather(b, "i", tiled=True), mesh=mesh,
                                 in_specs=P("i"), out_specs=P(), check_vma=check)

        np.testing.assert_array_equal(gathered(False)(split), x)
        if lib is jax:
            raises(ValueError, gathered(True), split, match="statically inferred")
        else:
            np.testing.assert_array_equal(gathered(True)(split), x)


def test_linear_transpose_refuses_every_nonlinear_function_the_same_way() -> None:
    raises(NotImplementedError, jax.linear_transpose(jnp.sin, 1.0), 1.0)
    raises(AssertionError, jax.linear_transpose(lambda x: x * x, 1.0), 1.0)
    raises(AssertionError, jax.linear_transpose(lambda x: jnp.where(x > 0, x, 0.0), 1.0), 1.0)
    for f in (sjnp.sin, lambda x: x * x, lambda x: sjnp.where(x > 0, x, 0.0)):
        raises(NotImplementedError, sj.linear_transpose, f, 1.0, match="not linear")
    assert int(jax.linear_transpose(lambda x: x * 2, 1)(1)[0]) == 2
    raises(TypeError, sj.linear_transpose, lambda x: x * 2, 1)


def test_the_compilation_cache_thresholds_keep_every_kernel(tmp_path) -> None:
    from stage2_jit import kernel_cache

    assert jax.config.jax_persistent_cache_min_compile_time_secs == 1.0
    tiered = sj.config.jax_from_numpy_tiered
    sj.config.update("jax_from_numpy_tiered", False)
    sj.config.update("jax_persistent_cache_min_compile_time_secs", 1000.0)
    sj.config.update("jax_compilation_cache_dir", str(tmp_path))
    try:
        assert kernel_cache.cache_dir() == tmp_path
        sj.jit(lambda x: x * 5.0 - 0.5, backend="cpu")(sjnp.ones(3)).block_until_ready()
        assert list(tmp_path.glob("kernel_*.py"))  # kept, though it compiled in under 1000 s
    finally:
        sj.config.update("jax_compilation_cache_dir", None)
        sj.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        sj.config.update("jax_from_numpy_tiered", tiered)


def test_one_random_generator() -> None:
    jax.config.update("jax_default_prng_impl", "rbg")
    try:
        assert jax.random.key(0).dtype.name == "key<rbg>"
    finally:
        jax.config.update("jax_default_prng_impl", "threefry2x32")
    raises(NotImplementedError, sj.config.update, "jax_default_prng_impl", "rbg",
           match="threefry2x32")


def test_bitcast_convert_type_between_widths_is_several_equations() -> None:
    x = np.ones(2, np.float32)
    theirs = jax.make_jaxpr(lambda a: lax.bitcast_convert_type(a, np.uint8))(x).jaxpr.eqns
    ours = sj.make_jaxpr(lambda a: slax.bitcast_convert_type(a, np.uint8))(x).jaxpr.eqns
    assert [e.primitive.name for e in theirs] == ["bitcast_convert_type"]
    assert len(ours) > 1 and ours[0].primitive.name == "bitcast_convert_type"
    np.testing.assert_array_equal(np.asarray(slax.bitcast_convert_type(x, np.uint8)),
                                  np.asarray(lax.bitcast_convert_type(x, np.uint8)))
    same = sj.make_jaxpr(lambda a: slax.bitcast_convert_type(a, np.int32))(x).jaxpr.eqns
    assert [e.primitive.name for e in same] == ["bitcast_convert_type"]


def test_an_array_made_inside_jit_from_python_values_is_a_constant() -> None:
    calls = {"int": lambda np_: np_.ones(int(np_.array(3))),
             "nonzero": lambda np_: np_.nonzero(np_.array([0, 1, 2]))[0],
             "unique": lambda np_: np_.unique(np_.array([2, 2, 1])),
             "repeat": lambda np_: np_.repeat(np_.arange(2), np_.array([1, 2]))}
    for name, call in calls.items():
        raises(jax.errors.ConcretizationTypeError, jax.jit(lambda: call(jnp)))
        np.testing.assert_array_equal(np.asarray(sj.jit(lambda: call(sjnp))()),
                                      np.asarray(call(jnp)), err_msg=name)
    raises(sj.errors.TracerBoolConversionError, sj.jit(lambda: 1 if sjnp.array(2) > 1 else 0))


def test_a_variance_in_an_integer_dtype_is_refused() -> None:
    x = np.arange(40, dtype=np.float32) % 7 / 3
    assert float(jnp.var(x, dtype=jnp.int32)) == 0.0  # truncated, then a weak float
    assert jnp.nanvar(np.arange(10), dtype=jnp.int32).dtype == np.int32
    for name in ("var", "nanvar", "std", "nanstd"):
        raises(ValueError, getattr(sjnp, name), x, dtype=np.int32, match="must be inexact")
    assert int(sjnp.mean(np.arange(10), dtype=np.int8)) == int(jnp.mean(np.arange(10),
                                                                        dtype=jnp.int8)) == 4


def test_cond_and_switch_with_a_concrete_predicate_run_one_branch() -> None:
    raises(TypeError, lax.cond, True, lambda: 1.0, lambda: jnp.ones(2))
    out = slax.cond(True, lambda: 1.0, lambda: sjnp.ones(2))
    assert isinstance(out, sj.Array) and out.weak_type and float(out) == 1.0
    ran = []
    slax.switch(1, [lambda: ran.append(0) or 0.0, lambda: ran.append(1) or 1.0])
    assert ran == [1]
    raises(TypeError, sj.jit(lambda p: slax.cond(p, lambda: 1.0, lambda: sjnp.ones(2))), True)
    x = np.ones(2, np.float32)
    assert not lax.cond(True, lambda: 1.0, lambda: jnp.asarray(x).sum()).weak_type
    assert slax.cond(True, lambda: 1.0, lambda: sjnp.asarray(x).sum()).weak_type
    steps = []  # a loop's body is traced once, eagerly as in JAX
    slax.fori_loop(0, 3, lambda i, c: steps.append(i) or c + i, 0)
    assert len(steps) == 1


def test_the_profiler_writes_a_host_trace_for_perfetto(tmp_path) -> None:
    for library, where in ((jax, tmp_path / "jax"), (sj, tmp_path / "ours")):
        with library.profiler.trace(where, create_perfetto_trace=True):
            sjnp.ones(3) * 2
    theirs = {p.name for p in (tmp_path / "jax").glob("plugins/profile/*/*")}
    ours = {p.name for p in (tmp_path / "ours").glob("plugins/profile/*/*")}
    assert ours == {name for name in theirs if not name.endswith(".xplane.pb")} != theirs
    for name in ("device_memory_profile", "start_server", "stop_server"):
        assert callable(getattr(jax.profiler, name))
    raises(NotImplementedError, sj.profiler.device_memory_profile, match="memory_stats")
    raises(NotImplementedError, sj.profiler.start_server, 9999, match="trace")


def test_a_custom_vmap_rule_applies_where_vmap_is_innermost() -> None:
    def make(library):
        f = library.custom_batching.custom_vmap(lambda x: library.numpy.sin(x))
        f.def_vmap(lambda size, batched, x: (library.numpy.sin(x) + 100.0, batched[0]))
        return f

    x = np.arange(3, dtype=np.float32)
    for library in (jax, sj):  # both: the rule under vmap and jit(vmap)
        assert float(library.vmap(make(library))(x)[0]) == 100.0
        assert float(library.jit(library.vmap(make(library)))(x)[0]) == 100.0
    assert float(jax.vmap(jax.jit(make(jax)))(x)[0]) == 100.0
    assert float(sj.vmap(sj.jit(make(sj)))(x)[0]) == 0.0  # f's operations, batched
    with pytest.raises(ValueError, match="Linearization failed"):
        jax.grad(make(jax))(1.0)
    np.testing.assert_allclose(sj.grad(make(sj))(1.0), np.cos(1.0), rtol=1e-6)
    bad = sj.custom_batching.custom_vmap(lambda x: x)
    bad.def_vmap(lambda size, batched, x: (x[0], True))
    raises(ValueError, sj.vmap(bad), x, match="leading axis")


def test_minimize_checks_x0_and_differentiates_eagerly() -> None:
    from jax.scipy import optimize as their_optimize

    def square(x):
        return (x ** 2).sum()

    for method, theirs in (("BFGS", TypeError), ("l-bfgs-experimental-do-not-rely-on-this",
                                                  ValueError)):
        with pytest.raises(theirs):
            their_optimize.minimize(square, np.ones((2, 2), np.float32), method=method)
        raises(ValueError, sj.scipy.optimize.minimize, square, np.ones((2, 2), np.float32),
               method=method, match="ravel")

    def solved(a, optimize):
        return optimize.minimize(lambda x: ((x - a) ** 2).sum(), np.zeros(2, np.float32),
                                 method="BFGS").x.sum()

    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda a: solved(a, their_optimize))(np.float32(1.5))
    np.testing.assert_allclose(sj.grad(lambda a: solved(a, sj.scipy.optimize))(
        np.float32(1.5)), 2.0, rtol=1e-5)


def test_odeint_takes_the_same_steps_only_up_to_rounding() -> None:
    from jax.experimental.ode import odeint as their_odeint
    from stage4_sharding.experimental.ode import odeint

    def decay(y, t):
        return -y

    t = np.linspace(0.0, 2.0, 5).astype(np.float32)
    np.testing.assert_allclose(odeint(decay, 1.0, t), their_odeint(decay, 1.0, t), rtol=1e-5)
    # one step per requested time, from a first step of about 0.01: extrapolations
    ours, theirs = (np.asarray(f(decay, 1.0, t, mxstep=1)) for f in (odeint, their_odeint))
    assert np.abs(ours - theirs).max() > 0.1


def test_odeint_converts_the_derivative_to_the_state_dtype() -> None:
    from jax.experimental.ode import odeint as their_odeint
    from stage4_sharding.experimental.ode import odeint

    def constant(y, t):
        return np.ones(2, np.int32)

    t = np.linspace(0.0, 1.0, 3).astype(np.float32)
    assert np.isnan(np.asarray(their_odeint(constant, np.ones(2, np.float32), t))[1:]).all()
    np.testing.assert_allclose(odeint(constant, np.ones(2, np.float32), t),
                               1.0 + t[:, None] * np.ones(2), rtol=1e-5)



def test_grad_in_a_body_stops_at_a_loop_that_holds_a_reduction() -> None:
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2) / 10
    w = np.array([0.5, -1.0], np.float32)
    results = {}
    for lib in (jax, sj):
        P, lax = lib.sharding.PartitionSpec, lib.lax
        mesh = lib.make_mesh((4,), ("a",), axis_types=(lib.sharding.AxisType.Auto,))

        def loss(w, x, lax=lax, lib=lib):
            return lax.fori_loop(0, 2, lambda i, c: c + lax.psum(
                lib.numpy.sum(x @ w), "a"), lib.numpy.float32(0.0))
        for check in (True, False):
            f = lib.jit(lib.shard_map(lambda w, x, loss=loss, lib=lib: lib.grad(loss)(w, x)[None],
                                      mesh=mesh, in_specs=(P(), P("a")), out_specs=P("a"),
                                      check_vma=check))
            if lib is sj and check:
                raises(NotImplementedError, f, w, x, match="Take the gradient of the whole")
                continue
            results[lib, check] = np.asarray(f(w, x))
    np.testing.assert_allclose(results[jax, True][0], 2 * x.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(results[sj, False], results[jax, False], rtol=1e-5)
