"""Edge values as JAX gives them, eagerly: float to integer conversions of NaN, infinities and
values out of range; integer ``//``, ``%`` and ``fmod`` by zero and of the most negative value
by -1; float ``//`` where ``floor(x / y)`` rounds wrong; and the warning JAX gives when a
64-bit dtype is asked for without jax_enable_x64. Every expected value is JAX 0.10.2's.
"""

import warnings

import numpy as np
import pytest
from conftest import seeds
from hypothesis import given, settings

import stage1_autodiff as jax
from stage1_autodiff import lax
from stage1_autodiff import numpy as jnp

real = pytest.importorskip("jax")
real_jnp = real.numpy


def same_values(got, want) -> None:
    """Equal dtype and values, NaN where NaN, and the same sign of zero (a NaN's sign means
    nothing)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got) & ~np.isnan(got),
                                      np.signbit(want) & ~np.isnan(want))


def in_real_jax(fun, *args, x64: bool = False):
    """``fun`` of JAX arrays of ``args`` (NumPy data), in JAX."""
    with real.enable_x64(x64):
        return np.asarray(fun(*[real_jnp.asarray(a) for a in args]))


# ------------------------------------------------------------------------------------------
# float -> integer conversions
# ------------------------------------------------------------------------------------------

SPECIAL_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, -0.99, 2.5, -2.5,
                  255.9, 65535.5, 2.0**31 - 128, 2.0**31, -2.0**31, -2.0**31 - 256, 2.0**32,
                  2.0**32 - 256, 3e9, -3e9, 1e10, -1e10, 2.0**63, -2.0**63, 2.0**64, 1e19,
                  1e30, -1e30, 3.4e38, -3.4e38, 1e-40]


def floats(seed: int, dtype) -> np.ndarray:
    """The special values and random ones of every magnitude up to 1e20, both signs."""
    rng = np.random.default_rng(seed)
    magnitudes = 10.0 ** rng.uniform(-3, 20, 200) * rng.choice([-1, 1], 200)
    return np.concatenate([SPECIAL_FLOATS, magnitudes]).astype(dtype)


CASTS_32 = [(np.float32, np.int32), (np.float32, np.uint32), (np.float32, np.bool_)]
CASTS_64 = [(src, dst) for src in (np.float32, np.float64)
            for dst in (np.int32, np.uint32, np.int64, np.uint64, np.bool_)]


def check_casts(source, target, x64: bool, seed: int = 0) -> None:
    x = floats(seed, source)
    if target == np.bool_:
        # NB: XLA's CPU backend flushes subnormal floats to zero (so bool(1e-40) is False
        # there); we keep IEEE arithmetic, as NumPy: a difference listed on the course page.
        x = x[~((x != 0) & (np.abs(x) < np.finfo(source).tiny))]
    want = in_real_jax(lambda v: real_jnp.asarray(v).astype(target), x, x64=x64)
    same_values(jnp.asarray(x).astype(target), want)  # a concrete Array: converted at once
    same_values(lax.convert_element_type(jnp.asarray(x), target), want)  # the primitive
    # Under a transformation the primitive is bound on a tracer: its impl gives the same.
    primal_out, _ = jax.jvp(lambda v: lax.convert_element_type(v, target), (jnp.asarray(x),),
                            (jnp.ones_like(jnp.asarray(x)),))
    same_values(primal_out, want)


@pytest.mark.parametrize("source, target", CASTS_32)
def test_float_to_int_saturates_as_jax(source, target):
    check_casts(source, target, x64=False)


@pytest.mark.parametrize("source, target", CASTS_64)
def test_float_to_int_saturates_as_jax_with_x64(source, target, x64):
    check_casts(source, target, x64=True)


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_float_to_int_on_random_magnitudes(seed):
    for source, target in CASTS_32:
        check_casts(source, target, x64=False, seed=seed)


def test_float_to_int_conversions_do_not_warn():
    x = jnp.asarray(np.array(SPECIAL_FLOATS, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for target in (np.int32, np.uint32, np.bool_):
            x.astype(target)
            lax.convert_element_type(x, target)


FILL_VALUES = [np.nan, np.inf, -np.inf, 1e10, -1e10, -2.7, 16777217.0]


@pytest.mark.parametrize("fill_value", FILL_VALUES)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_full_of_a_python_float_converts_as_jax(fill_value, dtype):
    want = in_real_jax(lambda: real_jnp.full(2, fill_value, dtype=dtype))
    same_values(jnp.full(2, fill_value, dtype=dtype), want)
    like = jnp.zeros(2, dtype)
    want = in_real_jax(lambda: real_jnp.full_like(real_jnp.zeros(2, dtype), fill_value))
    same_values(jnp.full_like(like, fill_value), want)


# NumPy data goes to the requested dtype in one conversion, as in JAX (through float32 first,
# 16777217.0 would become 16777216, and a uint64 2**40 through uint32 would become 0).
HOST_DATA = [
    (np.array([16777217.0, -2.7, 2.0**31 - 1]), np.int32),
    (np.array([2**40, 2**40 + 1], np.uint64), np.float32),
    (np.array([2**40 + 1, -(2**40)], np.int64), np.float32),
    (np.array([2**40 + 5, -7], np.int64), np.int32),
    (np.array([1.0 + 2.0**-30]), np.float32),
]


@pytest.mark.parametrize("data, dtype", HOST_DATA, ids=[f"{d.dtype}-{np.dtype(t)}"
                                                        for d, t in HOST_DATA])
def test_host_data_converts_once_to_the_requested_dtype(data, dtype):
    want = in_real_jax(lambda: real_jnp.asarray(data, dtype=dtype))
    same_values(jnp.asarray(data, dtype=dtype), want)
    same_values(jnp.array(data, dtype=dtype), want)


@pytest.mark.parametrize("data, dtype", [([2**40], None), ([1, 2**31], None),
                                         ([2**31], np.int32), ([-1], np.uint32)])
def test_a_python_int_in_a_list_that_does_not_fit_raises_as_in_jax(data, dtype):
    with pytest.raises(OverflowError):
        real_jnp.array(data, dtype=dtype)
    with pytest.raises(OverflowError, match=r"too large to convert"):
        jnp.array(data, dtype=dtype)


# ------------------------------------------------------------------------------------------
# Integer division and remainder by zero, and of the most negative value by -1
# ------------------------------------------------------------------------------------------

DIVISIONS = {
    "floor_divide": lambda np_, x, y: np_.floor_divide(x, y),
    "remainder": lambda np_, x, y: np_.remainder(x, y),
    "fmod": lambda np_, x, y: np_.fmod(x, y),
    "divmod": lambda np_, x, y: np_.divmod(x, y),
    "operators": lambda np_, x, y: (x // y, x % y),
}
LAX_DIVISIONS = {"div": lambda lax_, x, y: lax_.div(x, y),
                 "rem": lambda lax_, x, y: lax_.rem(x, y)}


def edge_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values: each divided by 0 and by -1, 0 by everything."""
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 3, 7, info.max - 1, info.max]
    values = np.array([v for v in values if info.min <= v <= info.max], dtype)
    x, y = np.meshgrid(values, values)
    return x.ravel(), y.ravel()


def check_divisions(dtype, x64: bool) -> None:
    x, y = edge_pairs(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's divide-by-zero warnings must not leak
        for name, fun in DIVISIONS.items():
            want = in_real_jax(lambda a, b, f=fun: f(real_jnp, a, b), x, y, x64=x64)
            got = fun(jnp, jnp.asarray(x), jnp.asarray(y))
            same_values(np.stack(got) if isinstance(got, tuple) else got, want)
        for name, fun in LAX_DIVISIONS.items():
            want = in_real_jax(lambda a, b, f=fun: f(real.lax, a, b), x, y, x64=x64)
            same_values(fun(lax, jnp.asarray(x), jnp.asarray(y)), want)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_integer_division_edges_as_jax(dtype):
    check_divisions(dtype, x64=False)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64_bit_integer_division_edges_as_jax(dtype, x64):
    check_divisions(dtype, x64=True)


def test_python_int_zero_divisor_as_jax():
    x = np.array([7, -7, 0], np.int32)
    for fun in (lambda v: v // 0, lambda v: v % 0, lambda v: 0 // v, lambda v: 0 % v):
        same_values(fun(jnp.asarray(x)), in_real_jax(lambda a: fun(real_jnp.asarray(a)), x))


# ------------------------------------------------------------------------------------------
# Float floor division and remainder (CPython's algorithm, as JAX)
# ------------------------------------------------------------------------------------------

SPECIAL_PAIRS = [(1.0, 0.1), (-1.0, 0.1), (0.3, 0.1), (7.0, 0.7), (1.0, 0.0), (-1.0, 0.0),
                 (0.0, 0.0), (-0.0, 1.0), (0.0, -1.0), (-0.0, -1.0), (np.inf, 2.0),
                 (-np.inf, 2.0), (3.0, np.inf), (-3.0, np.inf), (np.nan, 1.0), (1.0, np.nan),
                 (1e30, 3.0), (-1e30, 7.0), (5.0, -0.0), (1e-30, 1e30), (-1e-30, 1e30)]


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_float_floor_divide_and_remainder_as_jax(seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([[a for a, _ in SPECIAL_PAIRS], rng.uniform(-50, 50, 300)])
    y = np.concatenate([[b for _, b in SPECIAL_PAIRS], rng.uniform(-3, 3, 300)])
    x, y = x.astype(np.float32), y.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, fun in DIVISIONS.items():
            want = in_real_jax(lambda a, b, f=fun: f(real_jnp, a, b), x, y)
            got = fun(jnp, jnp.asarray(x), jnp.asarray(y))
            same_values(np.stack(got) if isinstance(got, tuple) else got, want)


# ------------------------------------------------------------------------------------------
# 64-bit dtypes without jax_enable_x64: JAX warns where a dtype is asked for by name
# ------------------------------------------------------------------------------------------

# Each case is written once, for either library (``api``: JAX or ours).
REQUESTS = {
    "array(float64 scalar)": lambda api: api.numpy.array(np.float64(1.0)),
    "asarray(float64 data)": lambda api: api.numpy.asarray(np.ones(3)),
    "array(list of floats)": lambda api: api.numpy.array([1.0, 2.0]),
    "asarray(int64 data)": lambda api: api.numpy.asarray(np.arange(3)),
    "array(dtype=float64)": lambda api: api.numpy.array([1.0], dtype=np.float64),
    "asarray(dtype='float64')": lambda api: api.numpy.asarray(np.ones(2), dtype="float64"),
    "asarray(dtype=float32)": lambda api: api.numpy.asarray(np.ones(2), dtype=np.float32),
    "zeros(dtype=float64)": lambda api: api.numpy.zeros(3, dtype=api.numpy.float64),
    "ones(dtype=int64)": lambda api: api.numpy.ones(3, dtype=np.int64),
    "zeros(dtype=uint64)": lambda api: api.numpy.zeros(3, dtype=np.dtype("uint64")),
    "zeros(dtype=float)": lambda api: api.numpy.zeros(3, dtype=float),
    "zeros(dtype=int)": lambda api: api.numpy.zeros(3, dtype=int),
    "full(dtype=float64)": lambda api: api.numpy.full(3, 1.0, dtype=np.float64),
    "full_like(dtype=float64)": lambda api: api.numpy.full_like(api.numpy.ones(2), 1, np.float64),
    "zeros_like(dtype=int64)": lambda api: api.numpy.zeros_like(api.numpy.ones(2), dtype=np.int64),
    "ones_like(float64 data)": lambda api: api.numpy.ones_like(np.ones(2)),
    "astype(float64)": lambda api: api.numpy.ones(3).astype(np.float64),
    "astype(float)": lambda api: api.numpy.ones(3).astype(float),
    "jnp.astype(int64)": lambda api: api.numpy.astype(api.numpy.ones(3), np.int64),
    "arange(dtype=float64)": lambda api: api.numpy.arange(3, dtype=np.float64),
    "arange(float data)": lambda api: api.numpy.arange(0, 1, 0.25),
    "linspace(dtype=float64)": lambda api: api.numpy.linspace(0, 1, 5, dtype=np.float64),
    "eye(dtype=float64)": lambda api: api.numpy.eye(2, dtype=np.float64),
    "jnp.float64(1.0)": lambda api: api.numpy.float64(1.0),
    "sum(dtype=float64)": lambda api: api.numpy.sum(api.numpy.ones(3), dtype=np.float64),
    "mean(dtype=float64)": lambda api: api.numpy.mean(api.numpy.ones(3), dtype=np.float64),
    "convert_element_type(float64)": lambda api: api.lax.convert_element_type(
        api.numpy.ones(3), np.float64),
    "lax.full(float64)": lambda api: api.lax.full((3,), 1.0, np.float64),
    "normal(dtype=float64)": lambda api: api.random.normal(api.random.key(0), (2,),
                                                           dtype=np.float64),
    "randint(dtype=int64)": lambda api: api.random.randint(api.random.key(0), (2,), 0, 3, np.int64),
    "operand of float64 data": lambda api: api.numpy.ones(3) + np.ones(3),
}


def requested_warnings(fun) -> tuple[np.dtype, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fun()
    return out.dtype, [w for w in caught if "requested dtype" in str(w.message)]


@pytest.mark.parametrize("name", list(REQUESTS))
def test_64_bit_requests_warn_where_jax_warns(name):
    want_dtype, want = requested_warnings(lambda: REQUESTS[name](real))
    got_dtype, got = requested_warnings(lambda: REQUESTS[name](jax))
    assert got_dtype == want_dtype
    assert len(got) == (1 if want else 0), [str(w.message) for w in got]
    for caught in got:
        message = str(caught.message)
        assert caught.category is UserWarning
        assert message.startswith("Explicitly requested dtype")  # JAX's filters match it
        assert f"dtype {np.dtype(want_dtype).name.replace('32', '64')}" in message
        assert f"the result is {np.dtype(want_dtype).name}" in message
        assert "jax_enable_x64" in message
        assert caught.filename == __file__  # the user's line, not the library's


@pytest.mark.parametrize("name", list(REQUESTS))
def test_64_bit_requests_do_not_warn_with_x64(name, x64):
    with real.enable_x64(True):
        want_dtype, _ = requested_warnings(lambda: REQUESTS[name](real))
    got_dtype, got = requested_warnings(lambda: REQUESTS[name](jax))
    assert got_dtype == want_dtype and not got


def test_the_warning_names_the_function_that_was_asked():
    with pytest.warns(UserWarning, match=r"dtype int64 in zeros_like .* result is int32"):
        jnp.zeros_like(jnp.ones(2), dtype=np.int64)
    with pytest.warns(UserWarning, match=r"dtype float64 in normal .* result is float32"):
        jax.random.normal(jax.random.key(0), (2,), dtype=np.float64)
