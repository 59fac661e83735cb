"""The ``jax.numpy`` API against NumPy: values, shapes and the dtypes JAX gives, type
promotion, the Array type's methods and operators, and ``jax.nn``."""

import math
import warnings

import numpy as np
import pytest
from conftest import broadcast_pair, distinct, seeds, shape_and_axis, shapes, uniform
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import stage1_autodiff as jax
from stage1_autodiff import numpy as jnp

F32, I32, U32, BOOL = np.dtype("float32"), np.dtype("int32"), np.dtype("uint32"), np.dtype(bool)


def check(actual, expected, dtype, rtol=1e-5, atol=1e-6):
    """``actual`` is an Array with the given dtype, and NumPy's ``expected`` values."""
    assert isinstance(actual, jax.Array), type(actual)
    expected = np.asarray(expected)
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if np.dtype(dtype).kind in "biu":
        np.testing.assert_array_equal(np.asarray(actual), expected)
    else:
        np.testing.assert_allclose(np.asarray(actual), expected, rtol=rtol, atol=atol)


def ints(seed, shape, low=-5, high=5, dtype=np.int32):
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


def bools(seed, shape):
    return np.random.default_rng(seed).random(shape) < 0.5


# ------------------------------------------------------------------------------------------
# Creation
# ------------------------------------------------------------------------------------------

ARRAY_INPUTS = [
    ([1, 2, 3], I32),
    ([1.0, 2.5], F32),
    ([True, False], BOOL),
    ([1, 2.5], F32),
    ([True, 2], I32),
    ([[1, 2], [3, 4]], I32),
    (np.arange(6, dtype=np.int64).reshape(2, 3), I32),
    (np.linspace(0, 1, 4), F32),  # float64 data is float32 without x64
    (np.array([1, 2], np.uint32), U32),
    (np.array([1, 2], np.uint64), U32),
    (np.array([1.5, 2.0], np.float32), F32),
    (np.array(7, np.int32), I32),
    ((1.0, 2.0), F32),
]


@pytest.mark.parametrize("data,dtype", ARRAY_INPUTS, ids=[str(i) for i in range(len(ARRAY_INPUTS))])
def test_array_and_asarray_from_data(data, dtype):
    expected = np.asarray(data)
    check(jnp.array(data), expected, dtype)
    check(jnp.asarray(data), expected, dtype)
    assert not jnp.array(data).weak_type


@pytest.mark.parametrize("dtype", [F32, I32, U32, BOOL])
def test_array_with_dtype(dtype):
    data = [[0, 1, 2], [3, 0, 1]]
    check(jnp.array(data, dtype=dtype), np.array(data, dtype=dtype), dtype)
    check(jnp.asarray(np.array(data, np.float64), dtype=dtype), np.array(data, dtype), dtype)
    check(jnp.array(jnp.array(data), dtype=dtype), np.array(data, dtype), dtype)
    with pytest.warns(UserWarning, match=r"dtype float64 in array"):  # no x64: narrowed
        check(jnp.array(data, dtype=np.float64), np.array(data, np.float32), F32)


@pytest.mark.parametrize("value,dtype", [(1.0, F32), (3, I32), (True, BOOL)])
def test_array_of_python_scalar_is_weakly_typed(value, dtype):
    x = jnp.array(value)
    check(x, np.array(value), dtype)
    assert x.weak_type == (dtype != BOOL)  # Python bools are not weak in JAX
    assert not jnp.array(value, dtype=dtype).weak_type


def test_array_of_numpy_scalar_is_not_weakly_typed():
    # NumPy scalars have a dtype of their own; only Python scalars are weak (JAX's rule).
    for value in [np.float32(1.5), np.float64(1.5), np.int32(2), np.int64(2)]:
        assert not jnp.array(value).weak_type, type(value)
        assert not jnp.asarray(value).weak_type, type(value)
    x = jnp.arange(3) * np.float64(2.0)
    check(x, [0.0, 2.0, 4.0], F32)
    assert not x.weak_type


@given(shape=shapes(), dtype=st.sampled_from([None, F32, I32, U32, BOOL]))
def test_zeros_ones_full(shape, dtype):
    default = F32 if dtype is None else dtype
    check(jnp.zeros(shape, dtype), np.zeros(shape, default), default)
    check(jnp.ones(shape, dtype), np.ones(shape, default), default)
    check(jnp.full(shape, 3, dtype), np.full(shape, 3, I32 if dtype is None else dtype),
          I32 if dtype is None else dtype)
    check(jnp.full(shape, 2.5), np.full(shape, 2.5, F32), F32)
    check(jnp.full(shape, np.int32(5), dtype), np.full(shape, 5, I32 if dtype is None else dtype),
          I32 if dtype is None else dtype)


def test_zeros_and_ones_take_an_int_shape():
    check(jnp.zeros(3), np.zeros(3), F32)
    check(jnp.ones(0), np.ones(0), F32)
    check(jnp.full((2, 3), jnp.array([1.0, 2.0, 3.0])), np.tile([1.0, 2.0, 3.0], (2, 1)), F32)


@given(shape=shapes(), seed=seeds, dtype=st.sampled_from([None, F32, I32, BOOL]),
       source=st.sampled_from([F32, I32, U32, BOOL]))
def test_like_functions(shape, seed, dtype, source):
    a = jnp.array(ints(seed, shape, 0, 3).astype(source))
    out_dtype = source if dtype is None else dtype
    check(jnp.zeros_like(a, dtype), np.zeros(shape, out_dtype), out_dtype)
    check(jnp.ones_like(a, dtype), np.ones(shape, out_dtype), out_dtype)
    check(jnp.full_like(a, 1, dtype), np.full(shape, 1, out_dtype), out_dtype)
    check(jnp.zeros_like(a, shape=(2, 1)), np.zeros((2, 1), source), source)
    check(jnp.ones_like(np.asarray(a)), np.ones(shape, source), source)


def test_like_functions_of_a_weak_array():
    x = jnp.array(2.0)
    assert jnp.zeros_like(x).dtype == F32
    check(jnp.full_like(jnp.arange(3), 2.7), [2, 2, 2], I32)


ARANGE_ARGS = [
    ((5,), {}), ((1, 7, 2), {}), ((0.0, 1.0, 0.25), {}), ((5,), {"dtype": F32}),
    ((2.5,), {}), ((-3,), {}), ((10, 0, -3), {}), ((np.int64(4),), {}), ((0, 1, 0.1), {}),
    ((3,), {"dtype": float}), ((0, 5), {"dtype": U32}),
]


@pytest.mark.parametrize("args,kwargs", ARANGE_ARGS, ids=[str(a) for a, _ in ARANGE_ARGS])
def test_arange(args, kwargs):
    expected = np.arange(*args, **kwargs)
    dtype = {np.dtype("int64"): I32, np.dtype("float64"): F32}.get(expected.dtype, expected.dtype)
    check(jnp.arange(*args, **kwargs), expected.astype(dtype), dtype)


@given(start=st.integers(-5, 5), stop=st.floats(-5, 5, width=32),
       num=st.integers(0, 7), endpoint=st.booleans())
def test_linspace(start, stop, num, endpoint):
    expected = np.linspace(start, stop, num, endpoint=endpoint)
    check(jnp.linspace(start, stop, num, endpoint=endpoint), expected, F32, atol=1e-5)


def test_linspace_dtypes():
    check(jnp.linspace(0, 10, 5, dtype=jnp.int32), np.linspace(0, 10, 5).astype(np.int32), I32)
    check(jnp.linspace(0.0, 1.0), np.linspace(0.0, 1.0), F32)
    assert jnp.linspace(0.0, 1.0).shape == (50,)


@given(n=st.integers(0, 4), m=st.one_of(st.none(), st.integers(0, 4)), k=st.integers(-3, 3),
       dtype=st.sampled_from([None, F32, I32, BOOL]))
def test_eye_and_identity(n, m, k, dtype):
    default = F32 if dtype is None else dtype
    check(jnp.eye(n, m, k, dtype=dtype), np.eye(n, m, k, dtype=default), default)
    check(jnp.identity(n, dtype), np.identity(n, default), default)


# ------------------------------------------------------------------------------------------
# Elementwise functions
# ------------------------------------------------------------------------------------------

# name: (jnp function, NumPy function, low, high)
UNARY_FLOAT = {
    "negative": (jnp.negative, np.negative, -3, 3),
    "exp": (jnp.exp, np.exp, -5, 5),
    "log": (jnp.log, np.log, 0.01, 10),
    "log1p": (jnp.log1p, np.log1p, -0.9, 5),
    "expm1": (jnp.expm1, np.expm1, -3, 3),
    "sin": (jnp.sin, np.sin, -6, 6),
    "cos": (jnp.cos, np.cos, -6, 6),
    "tan": (jnp.tan, np.tan, -1.4, 1.4),
    "tanh": (jnp.tanh, np.tanh, -5, 5),
    "sqrt": (jnp.sqrt, np.sqrt, 0, 10),
    "abs": (jnp.abs, np.abs, -3, 3),
    "absolute": (jnp.absolute, np.absolute, -3, 3),
    "sign": (jnp.sign, np.sign, -3, 3),
    "floor": (jnp.floor, np.floor, -3, 3),
    "ceil": (jnp.ceil, np.ceil, -3, 3),
    "square": (jnp.square, np.square, -3, 3),
    "reciprocal": (jnp.reciprocal, np.reciprocal, 0.1, 3),
}


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
@given(shape=shapes(), seed=seeds)
def test_unary_on_float32(name, shape, seed):
    fn, np_fn, low, high = UNARY_FLOAT[name]
    x = uniform(seed, shape, low, high)
    check(fn(x), np_fn(x), F32)
    check(fn(jnp.array(x)), np_fn(x), F32)


# JAX computes transcendental functions of integers in the default float; integer-preserving
# functions keep int32.
UNARY_INT_DTYPES = {
    "negative": I32, "exp": F32, "log": F32, "log1p": F32, "expm1": F32, "sin": F32,
    "cos": F32, "tan": F32, "tanh": F32, "sqrt": F32, "abs": I32, "absolute": I32,
    "sign": I32, "floor": I32, "ceil": I32, "square": I32, "reciprocal": F32,
}


@pytest.mark.parametrize("name", sorted(UNARY_INT_DTYPES))
@given(shape=shapes(), seed=seeds)
def test_unary_on_int32(name, shape, seed):
    fn, np_fn, low, high = UNARY_FLOAT[name]
    x = ints(seed, shape, max(int(math.ceil(low)), -3), max(int(high), 1) + 1)
    if name in ("log", "reciprocal"):
        x = np.maximum(x, 1)
    expected = np_fn(x.astype(np.float32)) if UNARY_INT_DTYPES[name] == F32 else np_fn(x)
    check(fn(jnp.array(x)), expected, UNARY_INT_DTYPES[name])


def test_unary_on_python_scalars():
    check(jnp.exp(1), np.exp(np.float32(1)), F32)
    check(jnp.sin(0.5), np.sin(np.float32(0.5)), F32)
    assert jnp.sin(0.5).weak_type
    check(jnp.negative(2), -2, I32)


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0], np.float32)
    with np.errstate(all="ignore"):
        for fn, np_fn in [(jnp.exp, np.exp), (jnp.log, np.log), (jnp.sqrt, np.sqrt),
                          (jnp.tanh, np.tanh), (jnp.sign, np.sign), (jnp.reciprocal,
                                                                    np.reciprocal)]:
            check(fn(x), np_fn(x), F32)
    check(jnp.isnan(x), np.isnan(x), BOOL)
    check(jnp.isinf(x), np.isinf(x), BOOL)
    check(jnp.isfinite(x), np.isfinite(x), BOOL)
    check(jnp.isnan(jnp.arange(3)), [False] * 3, BOOL)
    check(jnp.isfinite(jnp.arange(3)), [True] * 3, BOOL)
    check(jnp.isinf(jnp.arange(3)), [False] * 3, BOOL)


# name: (jnp function, NumPy function, constraint on the second operand)
BINARY = {
    "add": (jnp.add, np.add, None),
    "subtract": (jnp.subtract, np.subtract, None),
    "multiply": (jnp.multiply, np.multiply, None),
    "maximum": (jnp.maximum, np.maximum, None),
    "minimum": (jnp.minimum, np.minimum, None),
    "divide": (jnp.divide, np.true_divide, "nonzero"),
    "true_divide": (jnp.true_divide, np.true_divide, "nonzero"),
    "floor_divide": (jnp.floor_divide, np.floor_divide, "nonzero"),
    "remainder": (jnp.remainder, np.remainder, "nonzero"),
    "mod": (jnp.mod, np.mod, "nonzero"),
    "power": (jnp.power, np.power, "power"),
    "arctan2": (jnp.arctan2, np.arctan2, None),
}
FLOAT_RESULT = {"divide", "true_divide", "arctan2"}


def _binary_operands(name, seed, x_shape, y_shape, dtype):
    if dtype == F32:
        x, y = uniform(seed, x_shape, -4, 4), uniform(seed + 1, y_shape, -4, 4)
    else:
        x, y = ints(seed, x_shape, -6, 7), ints(seed + 1, y_shape, -6, 7)
    constraint = BINARY[name][2]
    if constraint == "nonzero":
        y = np.where(np.abs(y) < 0.5, 1, y).astype(y.dtype)
    if constraint == "power":
        x = np.abs(x) + (0.5 if dtype == F32 else 0)
        y = (np.abs(y) % 4).astype(y.dtype) if dtype == I32 else y
    return x, y


@pytest.mark.parametrize("dtype", [F32, I32], ids=["float32", "int32"])
@pytest.mark.parametrize("name", sorted(BINARY))
@given(pair=broadcast_pair(), seed=seeds)
def test_binary_with_broadcasting(name, dtype, pair, seed):
    fn, np_fn, _ = BINARY[name]
    x, y = _binary_operands(name, seed, *pair, dtype)
    out_dtype = F32 if name in FLOAT_RESULT else dtype
    if out_dtype == F32:
        expected = np_fn(x.astype(np.float32), y.astype(np.float32))
    else:
        expected = np_fn(x, y)
    check(fn(x, y), expected, out_dtype, rtol=2e-5)
    check(fn(jnp.array(x), jnp.array(y)), expected, out_dtype, rtol=2e-5)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_mixed_int_and_float(name):
    fn, np_fn, _ = BINARY[name]
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    y = np.array([1.5, 2.0, 0.5], np.float32)
    check(fn(x, y), np_fn(x.astype(np.float32), y), F32, rtol=2e-5)
    check(fn(y, x), np_fn(y, x.astype(np.float32)), F32, rtol=2e-5)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_python_scalar(name):
    fn, np_fn, _ = BINARY[name]
    x = np.array([1.0, 2.0, 3.5], np.float32)
    check(fn(x, 2), np_fn(x, np.float32(2)), F32, rtol=2e-5)
    check(fn(2.0, x), np_fn(np.float32(2), x), F32, rtol=2e-5)
    i = np.array([1, 2, 3], np.int32)
    check(fn(i, 2), np_fn(i.astype(np.float32) if name in FLOAT_RESULT else i, 2),
          F32 if name in FLOAT_RESULT else I32, rtol=2e-5)


def test_integer_division_and_remainder_follow_python_signs():
    x = np.array([7, -7, 7, -7, 0, 6], np.int32)
    y = np.array([2, 2, -2, -2, 3, -4], np.int32)
    check(jnp.floor_divide(x, y), np.floor_divide(x, y), I32)
    check(jnp.remainder(x, y), np.remainder(x, y), I32)
    check(jnp.array(x) // jnp.array(y), x // y, I32)
    check(jnp.array(x) % jnp.array(y), x % y, I32)
    xf, yf = x.astype(np.float32) + 0.5, y.astype(np.float32)
    check(jnp.floor_divide(xf, yf), np.floor_divide(xf, yf), F32)
    check(jnp.remainder(xf, yf), np.remainder(xf, yf), F32)


def test_power_with_int_exponents():
    x = np.array([-2.0, 0.5, 3.0], np.float32)
    for k in [0, 1, 2, 3, -1, -2]:
        check(jnp.power(x, k), np.power(x, np.float32(k)), F32)
    i = np.array([-2, 3, 1], np.int32)
    check(jnp.power(i, 3), i ** 3, I32)
    check(jnp.array(i) ** 2, i ** 2, I32)
    with np.errstate(invalid="ignore"):
        check(jnp.power(x, 0.5), np.power(x, np.float32(0.5)), F32)


COMPARISONS = {
    "equal": (jnp.equal, np.equal), "not_equal": (jnp.not_equal, np.not_equal),
    "less": (jnp.less, np.less), "less_equal": (jnp.less_equal, np.less_equal),
    "greater": (jnp.greater, np.greater), "greater_equal": (jnp.greater_equal, np.greater_equal),
}


@pytest.mark.parametrize("name", sorted(COMPARISONS))
@given(pair=broadcast_pair(), seed=seeds, kinds=st.sampled_from(["ff", "ii", "if", "uu"]))
def test_comparisons(name, pair, seed, kinds):
    fn, np_fn = COMPARISONS[name]
    make = {"f": lambda s, sh: ints(s, sh, -3, 3).astype(np.float32) / 2,
            "i": lambda s, sh: ints(s, sh, -3, 3),
            "u": lambda s, sh: ints(s, sh, 0, 4, np.uint32)}
    x, y = make[kinds[0]](seed, pair[0]), make[kinds[1]](seed + 1, pair[1])
    check(fn(x, y), np_fn(x, y), BOOL)
    check(fn(jnp.array(x), 1), np_fn(x, 1), BOOL)


LOGICAL = {
    "logical_and": (jnp.logical_and, np.logical_and),
    "logical_or": (jnp.logical_or, np.logical_or),
    "logical_xor": (jnp.logical_xor, np.logical_xor),
}


@pytest.mark.parametrize("name", sorted(LOGICAL))
@given(pair=broadcast_pair(), seed=seeds, numeric=st.booleans())
def test_logical(name, pair, seed, numeric):
    fn, np_fn = LOGICAL[name]
    x, y = bools(seed, pair[0]), bools(seed + 1, pair[1])
    if numeric:  # logical ops take truth values of numbers
        x, y = x * uniform(seed, pair[0], 1, 2), y.astype(np.int32) * 3
    check(fn(x, y), np_fn(x, y), BOOL)
    check(jnp.logical_not(x), np.logical_not(x), BOOL)


BITWISE = {
    "bitwise_and": (jnp.bitwise_and, np.bitwise_and),
    "bitwise_or": (jnp.bitwise_or, np.bitwise_or),
    "bitwise_xor": (jnp.bitwise_xor, np.bitwise_xor),
}


@pytest.mark.parametrize("name", sorted(BITWISE))
@given(pair=broadcast_pair(), seed=seeds, dtype=st.sampled_from([I32, U32, BOOL]))
def test_bitwise(name, pair, seed, dtype):
    fn, np_fn = BITWISE[name]
    if dtype == BOOL:
        x, y = bools(seed, pair[0]), bools(seed + 1, pair[1])
    else:
        low = 0 if dtype == U32 else -100
        x, y = ints(seed, pair[0], low, 100, dtype), ints(seed + 1, pair[1], low, 100, dtype)
    check(fn(x, y), np_fn(x, y), dtype)
    check(jnp.invert(x), np.invert(x), dtype)
    check(jnp.bitwise_not(x), np.bitwise_not(x), dtype)


def test_bitwise_rejects_floats():
    with pytest.raises(TypeError):
        jnp.bitwise_and(jnp.ones(2), jnp.ones(2))


@given(seed=seeds, shape=shapes(), dtype=st.sampled_from([I32, U32]))
def test_shifts(seed, shape, dtype):
    low = 0 if dtype == U32 else -1000
    x = ints(seed, shape, low, 1000, dtype)
    s = ints(seed + 1, shape, 0, 32, dtype)
    check(jnp.left_shift(x, s), np.left_shift(x, s), dtype)
    check(jnp.right_shift(x, s), np.right_shift(x, s), dtype)
    check(jnp.array(x) >> 1, x >> 1, dtype)
    check(jnp.array(x) << 2, x << 2, dtype)


@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       seed=seeds)
def test_where(shapes_, seed):
    c_shape, x_shape, y_shape = shapes_.input_shapes
    cond = bools(seed, c_shape)
    x, y = uniform(seed, x_shape), ints(seed + 1, y_shape)
    check(jnp.where(cond, x, y), np.where(cond, x, y.astype(np.float32)), F32)
    check(jnp.where(cond, ints(seed, x_shape), y), np.where(cond, ints(seed, x_shape), y), I32)
    check(jnp.where(cond.astype(np.int32) * 2, 1.0, x), np.where(cond, 1.0, x), F32)
    # each operand is broadcast to the result's shape (none may have it): the gradient by x
    # counts, for each of x's elements, the places of the result it was chosen for
    shape = np.broadcast_shapes(c_shape, x_shape, y_shape)
    chosen = np.broadcast_to(cond, shape).astype(np.float32)
    extra = len(shape) - len(x_shape)
    summed = tuple(range(extra)) + tuple(extra + d for d, n in enumerate(x_shape) if n == 1
                                        and shape[extra + d] != 1)
    want = chosen.sum(axis=summed, keepdims=True).reshape(x_shape) if summed else chosen
    got = jax.grad(lambda x: jnp.sum(jnp.where(cond, x, y)))(x)
    np.testing.assert_array_equal(np.asarray(got), want.reshape(x_shape))


def test_where_with_one_argument_is_nonzero():
    (found,) = jnp.where(jnp.array([True, False, True]))
    assert found.tolist() == [0, 2]
    with pytest.raises(ValueError, match="one-argument form"):
        jnp.where(jnp.array([True]), 1.0, 0.0, size=1)


@given(shape=shapes(), seed=seeds)
def test_clip(shape, seed):
    x = uniform(seed, shape, -3, 3)
    check(jnp.clip(x, -1, 2), np.clip(x, -1, 2), F32)
    check(jnp.clip(x, max=0.5), np.clip(x, None, 0.5), F32)
    check(jnp.clip(x, min=0.5), np.clip(x, 0.5, None), F32)
    lo = uniform(seed + 1, shape, -2, 0)
    check(jnp.clip(x, lo, 1.0), np.clip(x, lo, 1.0), F32)
    i = ints(seed, shape)
    check(jnp.clip(i, -1, 2), np.clip(i, -1, 2), I32)


# ------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------

# name: (jnp function, NumPy function, result dtype for float32 / int32 / bool input)
REDUCTIONS = {
    "sum": (jnp.sum, np.sum, (F32, I32, I32)),
    "mean": (jnp.mean, np.mean, (F32, F32, F32)),
    "var": (jnp.var, np.var, (F32, F32, F32)),
    "std": (jnp.std, np.std, (F32, F32, F32)),
    "max": (jnp.max, np.max, (F32, I32, BOOL)),
    "min": (jnp.min, np.min, (F32, I32, BOOL)),
    "amax": (jnp.amax, np.max, (F32, I32, BOOL)),
    "prod": (jnp.prod, np.prod, (F32, I32, I32)),
    "all": (jnp.all, np.all, (BOOL, BOOL, BOOL)),
    "any": (jnp.any, np.any, (BOOL, BOOL, BOOL)),
}


@pytest.mark.parametrize("source", [F32, I32, BOOL], ids=["float32", "int32", "bool"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(shape_axis=shape_and_axis(max_side=3), keepdims=st.booleans(), seed=seeds)
def test_reductions(name, source, shape_axis, keepdims, seed):
    fn, np_fn, out_dtypes = REDUCTIONS[name]
    shape, axis = shape_axis
    if source == F32:
        x = uniform(seed, shape, -2, 2)
    elif source == I32:
        x = ints(seed, shape, -3, 4)
    else:
        x = bools(seed, shape)
    out_dtype = out_dtypes[[F32, I32, BOOL].index(source)]
    with np.errstate(all="ignore"):
        expected = np_fn(x.astype(np.float64) if out_dtype == F32 else x, axis=axis,
                         keepdims=keepdims)
    check(fn(x, axis=axis, keepdims=keepdims), expected, out_dtype, rtol=1e-5, atol=1e-5)
    check(fn(jnp.array(x), axis, keepdims=keepdims), expected, out_dtype, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # NumPy's, at n <= ddof
@given(shape_axis=shape_and_axis(min_dims=1, max_side=3), ddof=st.integers(0, 1), seed=seeds)
def test_var_std_ddof(shape_axis, ddof, seed):
    shape, axis = shape_axis
    x = uniform(seed, shape).astype(np.float64)
    with np.errstate(all="ignore"):
        check(jnp.var(x, axis, ddof=ddof), np.var(x, axis, ddof=ddof), F32, atol=1e-5)
        check(jnp.std(x, axis, ddof=ddof), np.std(x, axis, ddof=ddof), F32, atol=1e-5)


ARG_REDUCTIONS = {"argmax": (jnp.argmax, np.argmax), "argmin": (jnp.argmin, np.argmin)}


@pytest.mark.parametrize("name", sorted(ARG_REDUCTIONS))
@given(shape=shapes(min_dims=1), data=st.data(), keepdims=st.booleans(), seed=seeds)
def test_argmax_argmin(name, shape, data, keepdims, seed):
    fn, np_fn = ARG_REDUCTIONS[name]
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = ints(seed, shape, -2, 3)  # with ties: the first occurrence wins
    check(fn(x, axis=axis, keepdims=keepdims), np_fn(x, axis=axis, keepdims=keepdims), I32)
    xf = distinct(seed, shape)
    check(getattr(jnp.array(xf), name)(axis), np_fn(xf, axis=axis), I32)


def test_reductions_of_empty_arrays():
    x = np.zeros((0, 3), np.float32)
    check(jnp.sum(x), 0.0, F32)
    check(jnp.sum(x, axis=0), np.zeros(3), F32)
    check(jnp.prod(x, axis=0), np.ones(3), F32)
    check(jnp.all(x), True, BOOL)
    check(jnp.any(x), False, BOOL)
    check(jnp.max(x, axis=1), np.zeros(0), F32)
    with pytest.raises(ValueError):
        jnp.max(x)
    with pytest.raises(ValueError):
        jnp.argmax(x)
    with np.errstate(all="ignore"):
        assert np.isnan(float(jnp.mean(x)))


def test_reductions_reject_bad_axes():
    x = jnp.ones((2, 3))
    for fn in (jnp.sum, jnp.mean, jnp.max, jnp.prod, jnp.var):
        with pytest.raises(ValueError):
            fn(x, axis=2)
        with pytest.raises(ValueError):
            fn(x, axis=-3)
        with pytest.raises(ValueError):
            fn(x, axis=(0, 0))
        with pytest.raises(ValueError):  # a 0-d array has no axis 0, as in NumPy
            fn(jnp.array(1.0), axis=0)


def test_reductions_of_nan():
    x = np.array([1.0, np.nan, 3.0], np.float32)
    assert np.isnan(float(jnp.max(x))) and np.isnan(float(jnp.min(x)))
    assert np.isnan(float(jnp.sum(x)))
    check(jnp.maximum(x, 2.0), np.maximum(x, 2.0), F32)


# ------------------------------------------------------------------------------------------
# Shape functions
# ------------------------------------------------------------------------------------------


@given(shape=shapes(), seed=seeds, order=st.sampled_from(["C", "F"]), data=st.data())
def test_reshape_and_ravel(shape, seed, order, data):
    x = ints(seed, shape)
    size = x.size
    target = data.draw(st.sampled_from([(size,), (-1,), (1, size), (size, -1, 1),
                                        tuple(reversed(shape))]))
    check(jnp.reshape(x, target, order=order), np.reshape(x, target, order=order), I32)
    check(jnp.ravel(x), np.ravel(x), I32)
    check(jnp.array(x).reshape(target), x.reshape(target), I32)
    check(jnp.array(x).reshape(*target) if target else jnp.array(x).reshape(()),
          x.reshape(target), I32)
    check(jnp.array(x).ravel(), x.ravel(), I32)
    check(jnp.array(x).flatten(), x.flatten(), I32)


def test_reshape_errors():
    with pytest.raises(TypeError):
        jnp.reshape(jnp.ones(6), (4, -1))
    with pytest.raises(TypeError):
        jnp.reshape(jnp.ones(6), (5,))
    with pytest.raises(TypeError):
        jnp.reshape(jnp.ones(6), (-1, -1))


@given(shape=shapes(), seed=seeds, data=st.data())
def test_transpose_swapaxes_moveaxis(shape, seed, data):
    x = uniform(seed, shape)
    ndim = len(shape)
    perm = data.draw(st.permutations(range(ndim)))
    check(jnp.transpose(x), np.transpose(x), F32)
    check(jnp.transpose(x, perm), np.transpose(x, perm), F32)
    check(jnp.array(x).T, x.T, F32)
    check(jnp.array(x).transpose(perm), x.transpose(perm), F32)
    check(jnp.array(x).transpose(), x.transpose(), F32)
    if ndim:
        axes = st.integers(-ndim, ndim - 1)
        a, b = data.draw(axes), data.draw(axes)
        check(jnp.swapaxes(x, a, b), np.swapaxes(x, a, b), F32)
        check(jnp.array(x).swapaxes(a, b), x.swapaxes(a, b), F32)
        check(jnp.moveaxis(x, a, b), np.moveaxis(x, a, b), F32)
        k = data.draw(st.integers(0, ndim))
        src = data.draw(st.lists(axes, min_size=k, max_size=k, unique_by=lambda v: v % ndim))
        dst = data.draw(st.lists(axes, min_size=k, max_size=k, unique_by=lambda v: v % ndim))
        check(jnp.moveaxis(x, src, dst), np.moveaxis(x, src, dst), F32)


@given(shape=shapes(), seed=seeds, data=st.data())
def test_expand_dims_and_squeeze(shape, seed, data):
    x = uniform(seed, shape)
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim - 1, ndim))
    check(jnp.expand_dims(x, axis), np.expand_dims(x, axis), F32)
    k = data.draw(st.integers(1, 2))
    axes = data.draw(st.lists(st.integers(0, ndim + k - 1), min_size=k, max_size=k, unique=True))
    check(jnp.expand_dims(x, tuple(axes)), np.expand_dims(x, tuple(axes)), F32)
    with_ones = tuple(n if data.draw(st.booleans()) else 1 for n in shape)
    y = x.reshape(with_ones) if math.prod(with_ones) == x.size else np.ones(with_ones, np.float32)
    check(jnp.squeeze(y), np.squeeze(y), F32)
    check(jnp.array(y).squeeze(), y.squeeze(), F32)
    ones = [d for d, n in enumerate(with_ones) if n == 1]
    if ones:
        d = data.draw(st.sampled_from(ones))
        check(jnp.squeeze(y, d), np.squeeze(y, d), F32)
        check(jnp.squeeze(y, d - len(with_ones)), np.squeeze(y, d - len(with_ones)), F32)
        check(jnp.squeeze(y, tuple(ones)), np.squeeze(y, tuple(ones)), F32)


def test_squeeze_of_a_dim_that_is_not_one_raises():
    with pytest.raises(ValueError):
        jnp.squeeze(jnp.ones((2, 1)), 0)


@given(pair=broadcast_pair(), seed=seeds)
def test_broadcast_to_and_broadcast_arrays(pair, seed):
    x, y = uniform(seed, pair[0]), ints(seed, pair[1])
    target = np.broadcast_shapes(*pair)
    check(jnp.broadcast_to(x, target), np.broadcast_to(x, target), F32)
    for a, e, dtype in zip(jnp.broadcast_arrays(x, y), np.broadcast_arrays(x, y), [F32, I32]):
        check(a, e, dtype)


def test_broadcast_errors():
    with pytest.raises(ValueError):
        jnp.broadcast_to(jnp.ones(3), (2, 4))
    with pytest.raises(ValueError):
        jnp.broadcast_to(jnp.ones((2, 3)), (3,))
    with pytest.raises(ValueError):
        jnp.add(jnp.ones(3), jnp.ones(4))


@given(shape=shapes(min_dims=1), seed=seeds, data=st.data())
def test_concatenate_and_stack(shape, seed, data):
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    parts = []
    for i in range(data.draw(st.integers(1, 3))):
        part_shape = list(shape)
        part_shape[axis] = data.draw(st.integers(0, 3))
        parts.append(uniform(seed + i, part_shape))
    check(jnp.concatenate(parts, axis), np.concatenate(parts, axis), F32)
    check(jnp.concatenate(parts, axis=None), np.concatenate(parts, axis=None), F32)
    mixed = [parts[0], ints(seed, parts[0].shape)]
    check(jnp.concatenate(mixed, axis), np.concatenate(mixed, axis), F32)
    same = [uniform(seed + i, shape) for i in range(3)]
    stack_axis = data.draw(st.integers(-ndim - 1, ndim))
    check(jnp.stack(same, stack_axis), np.stack(same, stack_axis), F32)
    check(jnp.stack([ints(seed, shape)] * 2), np.stack([ints(seed, shape)] * 2), I32)


def test_concatenate_and_stack_errors():
    with pytest.raises(TypeError):  # as JAX's
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones((3, 2))])
    with pytest.raises(ValueError):
        jnp.stack([jnp.ones(2), jnp.ones(3)])
    with pytest.raises(ValueError):
        jnp.concatenate([jnp.array(1.0), jnp.array(2.0)])


@given(shape=shapes(min_dims=1), seed=seeds, data=st.data())
def test_split(shape, seed, data):
    x = ints(seed, shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    sections = data.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    for a, e in zip(jnp.split(x, sections, axis), np.split(x, sections, axis), strict=True):
        check(a, e, I32)
    # unsorted, negative (from the end) and past-the-end indices, as NumPy allows
    indices = data.draw(st.lists(st.integers(-n, n + 2), max_size=3))
    for a, e in zip(jnp.split(x, indices, axis), np.split(x, indices, axis), strict=True):
        check(a, e, I32)


def test_split_into_unequal_sections_raises():
    with pytest.raises(ValueError):
        jnp.split(jnp.arange(5), 2)


@given(shape=shapes(), seed=seeds, data=st.data())
def test_flip_and_tile(shape, seed, data):
    x = ints(seed, shape)
    ndim = len(shape)
    check(jnp.flip(x), np.flip(x), I32)
    if ndim:
        axis = data.draw(st.one_of(st.integers(-ndim, ndim - 1),
                                   st.lists(st.integers(0, ndim - 1), unique=True).map(tuple)))
        check(jnp.flip(x, axis), np.flip(x, axis), I32)
    reps = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=4)
                               .map(tuple)))
    check(jnp.tile(x, reps), np.tile(x, reps), I32)


@given(shape=shapes(max_dims=3), seed=seeds)
def test_atleast_and_shape_queries(shape, seed):
    x = uniform(seed, shape)
    check(jnp.atleast_1d(x), np.atleast_1d(x), F32)
    check(jnp.atleast_2d(x), np.atleast_2d(x), F32)
    assert jnp.shape(x) == np.shape(x) and jnp.ndim(x) == np.ndim(x)
    assert jnp.size(x) == np.size(x)
    assert jnp.shape(jnp.array(x)) == shape


# ------------------------------------------------------------------------------------------
# Contractions
# ------------------------------------------------------------------------------------------


@given(seed=seeds, data=st.data(), dtype=st.sampled_from([F32, I32]))
def test_dot(seed, data, dtype):
    n = data.draw(st.integers(1, 4))
    a_shape = data.draw(st.sampled_from([(), (n,), (2, n), (3, 2, n)]))
    b_shape = data.draw(st.sampled_from([(), (n,), (n, 3), (2, n, 3)]))
    a, b = ints(seed, a_shape).astype(dtype), ints(seed + 1, b_shape).astype(dtype)
    check(jnp.dot(a, b), np.dot(a, b), dtype)
    check(jnp.array(a).dot(b), np.dot(a, b), dtype)


@given(seed=seeds, data=st.data(), dtype=st.sampled_from([F32, I32]))
def test_matmul(seed, data, dtype):
    batch_a, batch_b = data.draw(broadcast_pair(max_dims=3, max_side=3))
    n, m, k = (data.draw(st.integers(1, 4)) for _ in range(3))
    a_shape = data.draw(st.sampled_from([(k,), batch_a + (n, k)]))
    b_shape = data.draw(st.sampled_from([(k,), batch_b + (k, m)]))
    a, b = uniform(seed, a_shape).astype(dtype), uniform(seed + 1, b_shape).astype(dtype)
    if dtype == I32:
        a, b = ints(seed, a_shape), ints(seed + 1, b_shape)
    check(jnp.matmul(a, b), np.matmul(a, b), dtype)
    check(jnp.array(a) @ jnp.array(b), a @ b, dtype)
    check(a @ jnp.array(b), a @ b, dtype)
    check(jnp.array(a) @ b, a @ b, dtype)


def test_matmul_of_an_empty_batch_and_its_gradient():
    a, b = np.zeros((0, 3, 4), np.float32), np.zeros((0, 4, 5), np.float32)
    assert (jnp.asarray(a) @ b).shape == (0, 3, 5)
    grad = jax.grad(lambda a: (a @ b).sum())(a)
    assert grad.shape == a.shape and grad.dtype == np.float32


def test_matmul_errors():
    with pytest.raises((ValueError, TypeError)):
        jnp.matmul(jnp.ones(3), 2.0)
    with pytest.raises((ValueError, TypeError)):
        jnp.matmul(jnp.ones((2, 3)), jnp.ones((2, 3)))


TENSORDOT_CASES = [
    ((2, 3, 4), (3, 4, 5), 2),
    ((2, 3, 4), (4, 5), 1),
    ((2, 3), (4,), 0),
    ((2, 3, 4), (4, 3, 2), ((1, 2), (1, 0))),
    ((2, 3, 4), (5, 2), ([0], [1])),
    ((2, 3, 4), (4, 2), (-1, 0)),
    ((3,), (3,), 1),
]


@pytest.mark.parametrize("a_shape,b_shape,axes", TENSORDOT_CASES,
                         ids=[str(c[2]) for c in TENSORDOT_CASES])
def test_tensordot(a_shape, b_shape, axes):
    a, b = uniform(0, a_shape), uniform(1, b_shape)
    check(jnp.tensordot(a, b, axes), np.tensordot(a, b, axes), F32)


@given(seed=seeds, a_shape=shapes(max_dims=2), b_shape=shapes(max_dims=2))
def test_outer(seed, a_shape, b_shape):
    a, b = uniform(seed, a_shape), ints(seed, b_shape)
    check(jnp.outer(a, b), np.outer(a, b), F32)


@given(seed=seeds, n=st.integers(1, 4), a_lead=shapes(max_dims=2), b_lead=shapes(max_dims=2))
def test_inner_and_vdot(seed, n, a_lead, b_lead):
    a, b = uniform(seed, a_lead + (n,)), uniform(seed + 1, b_lead + (n,))
    check(jnp.inner(a, b), np.inner(a, b), F32)
    c = uniform(seed + 2, a_lead + (n,))
    check(jnp.vdot(a, c), np.vdot(a, c), F32)
    check(jnp.inner(a, 2.0), np.inner(a, np.float32(2.0)), F32)  # a scalar multiplies
    check(jnp.inner(3, b), np.inner(3, b), F32)


EINSUM_CASES = {
    "ij,jk->ik": [(2, 3), (3, 4)],
    "bij,bjk->bik": [(2, 3, 4), (2, 4, 3)],
    "ij,ij->i": [(3, 4), (3, 4)],
    "ij,kj->": [(3, 4), (2, 4)],
    "ij,k->ik": [(3, 4), (2,)],
    "bi,bj->bij": [(2, 3), (2, 4)],
    "ijk,jl->lk": [(2, 3, 4), (3, 2)],
    "ij,jk": [(2, 3), (3, 4)],
    "ij->ji": [(2, 3)],
    "ij->": [(2, 3)],
    "i,i": [(3,), (3,)],
    "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)],
    "a,b,c->abc": [(2,), (3,), (2,)],
    " ij , jk -> ki ": [(2, 3), (3, 4)],
}


@pytest.mark.parametrize("spec", sorted(EINSUM_CASES))
def test_einsum(spec):
    operands = [uniform(i, s) for i, s in enumerate(EINSUM_CASES[spec])]
    check(jnp.einsum(spec, *operands), np.einsum(spec.replace(" ", ""), *operands), F32)
    ints_ = [ints(i, s) for i, s in enumerate(EINSUM_CASES[spec])]
    check(jnp.einsum(spec, *ints_), np.einsum(spec.replace(" ", ""), *ints_), I32)


# ------------------------------------------------------------------------------------------
# take, take_along_axis and indexing
# ------------------------------------------------------------------------------------------


@given(shape=shapes(min_dims=1), idx_shape=shapes(max_dims=2), seed=seeds, data=st.data())
def test_take(shape, idx_shape, seed, data):
    x = ints(seed, shape, -50, 50)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = x.size if axis is None else shape[axis]
    idx = np.random.default_rng(seed).integers(-n, n, size=idx_shape)
    check(jnp.take(x, idx, axis=axis), np.take(x, idx, axis=axis), I32)
    check(jnp.take(x, int(idx.ravel()[0]) if idx.size else 0, axis=axis),
          np.take(x, int(idx.ravel()[0]) if idx.size else 0, axis=axis), I32)


@given(shape=shapes(min_dims=1), seed=seeds, data=st.data())
def test_take_along_axis(shape, seed, data):
    x = uniform(seed, shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    idx_shape = list(shape)
    idx_shape[axis] = data.draw(st.integers(0, 4))
    # indices of size 1 broadcast against the other dims, as in NumPy
    for d in range(len(shape)):
        if d != axis % len(shape) and data.draw(st.booleans()):
            idx_shape[d] = 1
    idx = np.random.default_rng(seed).integers(-shape[axis], shape[axis], size=idx_shape)
    check(jnp.take_along_axis(x, idx, axis), np.take_along_axis(x, idx, axis), F32)
    order = np.argsort(x, axis=axis)
    check(jnp.take_along_axis(x, order, axis), np.sort(x, axis=axis), F32)
    check(jnp.take_along_axis(x, idx, None) if len(shape) == 1 else
          jnp.take_along_axis(x.ravel(), idx.ravel(), None),
          np.take_along_axis(x.ravel(), idx.ravel(), None), F32)


X = np.arange(60, dtype=np.int32).reshape(3, 4, 5)

INDICES = {
    "int": np.s_[1],
    "negative_int": np.s_[-1],
    "ints": np.s_[1, -2, 3],
    "slice": np.s_[1:],
    "slice_step": np.s_[::2, 1:4:2],
    "negative_step": np.s_[::-1],
    "negative_step_bounds": np.s_[2:0:-1, ::-2, -1:-6:-3],
    "empty_slice": np.s_[2:1],
    "out_of_range_slice": np.s_[-10:10],
    "ellipsis": np.s_[..., 0],
    "ellipsis_middle": np.s_[0, ..., 1],
    "none": np.s_[None],
    "none_everywhere": np.s_[None, 1, None, ..., None],
    "int_array": np.s_[np.array([0, 2, 2, -1])],
    "list": np.s_[[0, 1]],
    "int_array_2d": np.s_[np.array([[0, 1], [2, 0]])],
    "int_array_second": np.s_[:, [3, 0, -1]],
    "adjacent_advanced": np.s_[:, [0, 1, 3], [4, 0, 2]],
    "adjacent_broadcast": np.s_[:, np.array([[0], [1]]), np.array([1, 2, 3])],
    "separated_advanced": np.s_[[0, 2], :, [1, 4]],
    "int_and_array_separated": np.s_[1, :, [0, 2]],
    "int_and_array_adjacent": np.s_[:, 1, [0, 2]],
    "array_then_slice": np.s_[[2, 0], 1:3],
    "array_with_step": np.s_[[1, 2], ::-2, :],
    "array_and_none": np.s_[None, [0, 1], :, None],
    "array_and_ellipsis": np.s_[..., [1, 0]],
    "boolean_mask": np.s_[np.array([True, False, True])],
    "boolean_mask_second": np.s_[:, np.array([True, False, False, True])],
    "full_advanced": np.s_[[0, 1], [1, 2], [2, 3]],
    "scalar_array": np.s_[np.array(1)],
}


@pytest.mark.parametrize("name", sorted(INDICES))
def test_getitem(name):
    idx = INDICES[name]
    check(jnp.array(X)[idx], X[idx], I32)
    jidx = tuple(jnp.array(i) if isinstance(i, np.ndarray) else i for i in
                 (idx if isinstance(idx, tuple) else (idx,)))
    check(jnp.array(X)[jidx], X[idx], I32)


@given(shape=shapes(max_dims=4), data=st.data())
def test_getitem_basic_indices(shape, data):
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    idx = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    check(jnp.array(x)[idx], x[idx], F32)


@given(shape=shapes(min_dims=1, max_dims=3), data=st.data())
def test_getitem_integer_array_indices(shape, data):
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    idx = data.draw(hnp.integer_array_indices(shape, result_shape=shapes(max_dims=2)))
    check(jnp.array(x)[idx], x[idx], F32)
    check(jnp.array(x)[tuple(jnp.array(i) for i in idx)], x[idx], F32)


def test_getitem_errors():
    x = jnp.ones((2, 3))
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[..., ...]
    with pytest.raises(TypeError):
        x[jnp.array([0.5])]
    with pytest.raises(TypeError):
        x[0] = 1.0


AT_INDICES = {
    "int": np.s_[1],
    "slice": np.s_[1:, ::-2],
    "int_array": np.s_[[0, 2]],
    "second_axis": np.s_[:, [3, 0]],
    "ellipsis": np.s_[..., -1],
    "mixed": np.s_[[0, 2], 1:3],
    "none": np.s_[None, 0],
    "mask": np.s_[np.array([True, False, True])],
}


@pytest.mark.parametrize("name", sorted(AT_INDICES))
@given(seed=seeds)
def test_at_updates(name, seed):
    idx = AT_INDICES[name]
    x = uniform(seed, (3, 4), -2, 2)
    values = uniform(seed + 1, x[idx].shape, 0.5, 2)
    j = jnp.array(x)

    def np_update(op):
        out = x.copy()
        op(out, idx, values)
        return out

    def np_set(out, idx, values):
        out[idx] = values

    check(j.at[idx].set(values), np_update(np_set), F32)
    check(j.at[idx].add(values), np_update(lambda o, i, v: np.add.at(o, i, v)), F32)
    check(j.at[idx].multiply(values), np_update(lambda o, i, v: np.multiply.at(o, i, v)), F32)
    check(j.at[idx].divide(values), np_update(lambda o, i, v: np.divide.at(o, i, v)), F32)
    check(j.at[idx].min(values), np_update(lambda o, i, v: np.minimum.at(o, i, v)), F32)
    check(j.at[idx].max(values), np_update(lambda o, i, v: np.maximum.at(o, i, v)), F32)
    check(j.at[idx].get(), x[idx], F32)
    check(j.at[idx].set(7.0), np_update(lambda o, i, v: np_set(o, i, 7.0)), F32)
    np.testing.assert_array_equal(j, x)  # the original is unchanged


@given(seed=seeds, n=st.integers(1, 8))
def test_at_add_accumulates_repeated_indices(seed, n):
    x = ints(seed, (4, 2))
    idx = np.random.default_rng(seed).integers(-4, 4, size=n)
    values = ints(seed + 1, (n, 2))
    expected = x.copy()
    np.add.at(expected, idx, values)
    check(jnp.array(x).at[idx].add(values), expected, I32)
    expected = x.copy()
    np.multiply.at(expected, idx, values)
    check(jnp.array(x).at[idx].multiply(values), expected, I32)
    expected = x.copy()
    np.minimum.at(expected, idx, values)
    check(jnp.array(x).at[idx].min(values), expected, I32)
    expected = x.copy()
    np.maximum.at(expected, idx, values)
    check(jnp.array(x).at[idx].max(values), expected, I32)


def test_at_keeps_the_dtype_and_broadcasts():
    x = jnp.arange(6).reshape(2, 3)
    check(x.at[0].set(jnp.array([7, 8, 9])), [[7, 8, 9], [3, 4, 5]], I32)
    check(x.at[:, 1].add(10), [[0, 11, 2], [3, 14, 5]], I32)
    check(jnp.zeros(3).at[1].add(1), [0, 1, 0], F32)
    with pytest.raises(ValueError):
        x.at[0].set(jnp.ones(2, jnp.int32))


# ------------------------------------------------------------------------------------------
# Type promotion
# ------------------------------------------------------------------------------------------


def _a(values, dtype):
    return jnp.array(np.array(values, dtype=dtype))


PROMOTION = [
    # (left, right, dtype, weak_type)
    ("i32 + 2.5", lambda: _a([1, 2], I32) + 2.5, F32, True),
    ("f32 * 2", lambda: _a([1, 2], F32) * 2, F32, False),
    ("f32 * 2.0", lambda: _a([1, 2], F32) * 2.0, F32, False),
    ("i32 + u32", lambda: _a([1, 2], I32) + _a([1, 2], U32), I32, False),
    ("bool + bool", lambda: jnp.add(_a([True, False], BOOL), _a([True, True], BOOL)), BOOL,
     False),
    ("u32 + 1", lambda: _a([1, 2], U32) + 1, U32, False),
    ("u32 + 2.5", lambda: _a([1, 2], U32) + 2.5, F32, True),
    ("u32 + f32", lambda: _a([1, 2], U32) + _a([1, 2], F32), F32, False),
    ("i32 + f32", lambda: _a([1, 2], I32) + _a([1, 2], F32), F32, False),
    ("bool + i32", lambda: _a([True, False], BOOL) + _a([1, 2], I32), I32, False),
    ("bool + 1", lambda: _a([True, False], BOOL) + 1, I32, True),
    ("bool + 1.0", lambda: _a([True, False], BOOL) + 1.0, F32, True),
    ("weak 1.0 * 2", lambda: jnp.array(1.0) * 2, F32, True),
    ("weak 1 * 2", lambda: jnp.array(1) * 2, I32, True),
    ("weak 1 * 2.0", lambda: jnp.array(1) * 2.0, F32, True),
    ("weak 1.0 + f32", lambda: jnp.array(1.0) + _a([1, 2], F32), F32, False),
    ("weak 1.0 + i32", lambda: jnp.array(1.0) + _a([1, 2], I32), F32, True),
    ("weak 1 + u32", lambda: jnp.array(1) + _a([1, 2], U32), U32, False),
    ("f64 numpy + f32", lambda: np.array([1.0, 2.0]) + _a([1, 2], F32), F32, False),
    ("i64 numpy * i32", lambda: np.array([1, 2]) * _a([1, 2], I32), I32, False),
    ("i32 / i32", lambda: _a([1, 2], I32) / _a([2, 2], I32), F32, False),
    ("i32 ** 0.5", lambda: _a([1, 4], I32) ** 0.5, F32, True),
    ("f32 < 1", lambda: _a([1, 2], F32) < 1, BOOL, False),
    ("where weak", lambda: jnp.where(True, 1.0, 2.0), F32, True),
    ("where mixed", lambda: jnp.where(True, _a(1, F32), 2.0), F32, False),
    ("exp of int", lambda: jnp.exp(_a([1], I32)), F32, False),
    ("mean of int", lambda: jnp.mean(_a([1, 2], I32)), F32, False),
    ("astype", lambda: jnp.array(1.0).astype(F32), F32, False),
    ("concatenate", lambda: jnp.concatenate([_a([1], I32), _a([1.0], F32)]), F32, False),
]


@pytest.mark.parametrize("expr,fn,dtype,weak", PROMOTION, ids=[p[0] for p in PROMOTION])
def test_type_promotion(expr, fn, dtype, weak):
    out = fn()
    assert isinstance(out, jax.Array)
    assert out.dtype == dtype, f"{expr}: {out.dtype}"
    assert out.weak_type == weak, f"{expr}: weak_type {out.weak_type}"


def test_promotion_is_symmetric_and_values_match():
    i, u, f = _a([1, 2], I32), _a([3, 4], U32), _a([0.5, 1.5], F32)
    for a, b in [(i, u), (i, f), (u, f), (i, 2.5), (u, 1), (f, 2)]:
        ab, ba = a + b, b + a
        assert ab.dtype == ba.dtype and ab.weak_type == ba.weak_type
        np.testing.assert_allclose(ab, ba)
    check(i + u, [4, 6], I32)
    check(i + 2.5, [3.5, 4.5], F32)


def test_float64_input_is_float32_without_x64():
    assert not jax.config.jax_enable_x64
    check(jnp.array(np.array([1.5, 2.5])), [1.5, 2.5], F32)
    check(jnp.array(np.array([1, 2], np.int64)), [1, 2], I32)
    with pytest.warns(UserWarning, match=r"dtype float64 in zeros"):
        check(jnp.zeros(2, np.float64), [0, 0], F32)
    check(jnp.arange(3.0), [0, 1, 2], F32)
    with pytest.warns(UserWarning, match=r"dtype float64 in astype"):
        check(jnp.array([1.0]).astype(np.float64), [1.0], F32)


F64, I64, U64 = np.dtype("float64"), np.dtype("int64"), np.dtype("uint64")


def test_x64_preserves_64_bit_types(x64):
    assert jax.config.jax_enable_x64
    check(jnp.array(np.array([1.5, 2.5])), [1.5, 2.5], F64)
    check(jnp.array([1.5, 2.5]), [1.5, 2.5], F64)
    check(jnp.array(np.array([1, 2], np.int64)), [1, 2], I64)
    check(jnp.array(np.array([1, 2], np.uint64)), [1, 2], U64)
    check(jnp.zeros(2), [0, 0], F64)
    check(jnp.arange(3), [0, 1, 2], I64)
    check(jnp.linspace(0, 1, 3), [0, 0.5, 1], F64)
    x = jnp.array(1.0)
    assert x.dtype == F64 and x.weak_type
    value = np.float64(1) + np.float64(2.0 ** -40)
    assert float(jnp.array(value)) == value  # no rounding to float32


def test_x64_promotion(x64):
    f32 = _a([1, 2], F32)
    assert (f32 * 2.0).dtype == F32  # a weak scalar never widens an array
    assert (f32 + _a([1, 2], np.float64)).dtype == F64
    assert (_a([1], I32) + _a([1], U32)).dtype == I64
    assert (_a([1], I32) + 2.5).dtype == F64
    # Integers become floats by width, as JAX's to_inexact_dtype: up to 32 bits float32.
    assert jnp.exp(_a([1], I32)).dtype == F32
    assert jnp.mean(_a([1, 2], I32)).dtype == F32
    assert jnp.exp(_a([1], I64)).dtype == F64
    assert jnp.mean(_a([1, 2], I64)).dtype == F64
    assert jnp.exp(1).dtype == F64  # a Python int is the default int


def test_x64_numpy_scalars_are_not_weak(x64):
    assert (_a([1, 2], F32) * np.float64(2.0)).dtype == F64
    assert (_a([1, 2], F32) * np.float32(2.0)).dtype == F32


def test_x64_sums_of_small_integers_widen(x64):
    # Sums and products of small integers use the default integer, as in NumPy and JAX.
    check(jnp.sum(_a([1, 2], I32)), 3, I64)
    check(jnp.prod(_a([3, 2], I32)), 6, I64)
    check(jnp.sum(_a([1, 2], U32)), 3, U64)
    check(jnp.sum(_a([True, True], BOOL)), 2, I64)


def test_x64_fixture_restored_the_default():
    assert not jax.config.jax_enable_x64
    assert jnp.zeros(1).dtype == F32


# ------------------------------------------------------------------------------------------
# The Array type
# ------------------------------------------------------------------------------------------


def test_array_attributes():
    x = jnp.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert x.shape == (2, 3, 4) and x.dtype == F32 and x.ndim == 3 and x.size == 24
    assert x.T.shape == (4, 3, 2)
    np.testing.assert_array_equal(x.T, np.arange(24).reshape(2, 3, 4).T)
    assert jnp.array(3.0).ndim == 0 and jnp.array(3.0).size == 1
    assert isinstance(x, jnp.ndarray)
    assert len(x) == 2
    with pytest.raises(TypeError):
        len(jnp.array(1.0))


OPERATORS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b, "pow": lambda a, b: a ** b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
@given(pair=broadcast_pair(max_dims=2), seed=seeds)
def test_operators_and_reflected_forms(op, pair, seed):
    fn = OPERATORS[op]
    x = uniform(seed, pair[0], 0.5, 3)
    y = uniform(seed + 1, pair[1], 0.5, 3)
    comparison = op in ("eq", "ne", "lt", "le", "gt", "ge")
    out_dtype = BOOL if comparison else F32
    y = np.round(y * 2) / 2  # some ties for the comparisons
    x = np.round(x * 2) / 2
    jx, jy = jnp.array(x), jnp.array(y)
    expected = fn(x, y)
    check(fn(jx, jy), expected, out_dtype, rtol=2e-5)
    check(fn(jx, y), expected, out_dtype, rtol=2e-5)  # NumPy array on the right
    check(fn(x, jy), expected, out_dtype, rtol=2e-5)  # NumPy array on the left
    check(fn(jx, 2), fn(x, np.float32(2)), out_dtype, rtol=2e-5)  # Python scalars
    check(fn(2, jy), fn(np.float32(2), y), out_dtype, rtol=2e-5)
    check(fn(jx, 1.5), fn(x, np.float32(1.5)), out_dtype, rtol=2e-5)
    check(fn(1.5, jy), fn(np.float32(1.5), y), out_dtype, rtol=2e-5)
    check(fn(np.float32(1.5), jy), fn(np.float32(1.5), y), out_dtype, rtol=2e-5)


def test_integer_and_bitwise_operators():
    x = jnp.array([5, -3, 8])
    n = np.array([5, -3, 8], np.int32)
    check(-x, -n, I32)
    check(+x, n, I32)
    check(abs(x), np.abs(n), I32)
    check(~x, ~n, I32)
    check(x & 6, n & 6, I32)
    check(6 & x, 6 & n, I32)
    check(x | 1, n | 1, I32)
    check(1 | x, 1 | n, I32)
    check(x ^ 3, n ^ 3, I32)
    check(3 ^ x, 3 ^ n, I32)
    check(x << 2, n << 2, I32)
    check(1 << jnp.array([0, 3]), [1, 8], I32)
    check(x >> 1, n >> 1, I32)
    check(64 >> jnp.array([1, 3]), [32, 8], I32)
    check(7 // x, 7 // n, I32)
    check(7 % x, 7 % n, I32)
    check(2 ** jnp.array([0, 3]), [1, 8], I32)
    b = jnp.array([True, False])
    check(~b, [False, True], BOOL)
    check(b & True, [True, False], BOOL)
    check(True | b, [True, True], BOOL)
    check(b ^ jnp.array([True, True]), [False, True], BOOL)


def test_divmod_operator():
    x, n = jnp.array([7, -7, 6]), np.array([7, -7, 6], np.int32)
    for actual, expected in zip(divmod(x, 3), divmod(n, 3), strict=True):
        check(actual, expected, I32)
    for actual, expected in zip(divmod(20, x), divmod(20, n), strict=True):
        check(actual, expected, I32)


def test_matmul_operator_with_numpy_on_the_left():
    a, b = np.ones((2, 3), np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)
    check(a @ jnp.array(b), a @ b, F32)
    check(jnp.array(a) @ b, a @ b, F32)


@given(shape=shapes(min_dims=1), seed=seeds)
def test_methods(shape, seed):
    x = uniform(seed, shape, -2, 2)
    j = jnp.array(x)
    check(j.sum(), x.sum(dtype=np.float64), F32, atol=1e-5)
    check(j.sum(0), x.sum(0), F32, atol=1e-5)
    check(j.sum(axis=-1, keepdims=True), x.sum(axis=-1, keepdims=True), F32, atol=1e-5)
    check(j.mean(), x.mean(dtype=np.float64), F32, atol=1e-5)
    check(j.mean(axis=0, keepdims=True), x.mean(axis=0, keepdims=True), F32, atol=1e-5)
    check(j.max(), x.max(), F32)
    check(j.min(axis=-1), x.min(axis=-1), F32)
    check(j.prod(), x.prod(), F32, atol=1e-5)
    check(j.var(), x.var(dtype=np.float64), F32, atol=1e-5)
    check(j.std(0), x.std(0), F32, atol=1e-5)
    check(j.all(), x.all(), BOOL)
    check(j.any(axis=0), x.any(axis=0), BOOL)
    check(j.reshape(-1), x.reshape(-1), F32)
    check(j.reshape((1, -1)), x.reshape((1, -1)), F32)
    check(j.transpose(), x.transpose(), F32)
    check(j.astype(jnp.int32), x.astype(np.int32), I32)
    with pytest.warns(UserWarning, match=r"dtype float64 in astype"):  # no x64: narrowed
        check(j.astype(np.float64), x, F32)
    check(j.astype(bool), x.astype(bool), BOOL)
    check(j.clip(-1, 1), x.clip(-1, 1), F32)
    assert j.tolist() == x.tolist()
    assert j[(0,) * len(shape)].item() == x[(0,) * len(shape)].item()
    assert isinstance(j.tolist(), list)


def test_item_and_conversions():
    assert jnp.array(2.5).item() == 2.5 and isinstance(jnp.array(2.5).item(), float)
    assert jnp.array(3).item() == 3 and isinstance(jnp.array(3).item(), int)
    assert jnp.array(True).item() is True
    assert float(jnp.array(2.5)) == 2.5
    assert int(jnp.array(3.7)) == 3 and int(jnp.array(-3)) == -3
    assert bool(jnp.array(0.0)) is False and bool(jnp.array(2)) is True
    with pytest.raises(ValueError):
        bool(jnp.array([1.0, 2.0]))
    assert jnp.array([[1, 2]]).tolist() == [[1, 2]]
    assert range(10)[jnp.array(3)] == 3  # __index__
    with pytest.raises(TypeError):
        range(10)[jnp.array(3.0)]


def test_array_protocol():
    x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(x)
    assert isinstance(a, np.ndarray) and a.dtype == F32
    np.testing.assert_array_equal(a, [[1, 2], [3, 4]])
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.array(jnp.arange(3)).dtype == I32


def test_numpy_functions_accept_arrays():
    # NumPy's reductions call the array's own method with out= (and dtype=) keywords.
    x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    assert float(np.sum(x)) == 10.0
    np.testing.assert_allclose(np.mean(x, axis=0), [2.0, 3.0])
    assert float(np.max(x)) == 4.0 and float(np.min(x)) == 1.0
    np.testing.assert_allclose(np.exp(x), np.exp(np.asarray(x)))


def test_block_until_ready():
    x = jnp.arange(3.0)
    y = x.block_until_ready()
    assert isinstance(y, jax.Array)
    np.testing.assert_array_equal(y, x)


REPRS = [
    (lambda: jnp.array([1.0, 2.0]), "Array([1., 2.], dtype=float32)"),
    (lambda: jnp.array([1, 2]), "Array([1, 2], dtype=int32)"),
    (lambda: jnp.array([True, False]), "Array([ True, False], dtype=bool)"),
    (lambda: jnp.array([[1.0, 2.0], [3.0, 4.0]]),
     "Array([[1., 2.],\n       [3., 4.]], dtype=float32)"),
    (lambda: jnp.array(np.float32(1.5)), "Array(1.5, dtype=float32)"),
    (lambda: jnp.array(1.0), "Array(1., dtype=float32, weak_type=True)"),
    (lambda: jnp.array(2), "Array(2, dtype=int32, weak_type=True)"),
    (lambda: jnp.zeros((0,)), "Array([], shape=(0,), dtype=float32)"),
    (lambda: jnp.array([1, 2], dtype=jnp.uint32), "Array([1, 2], dtype=uint32)"),
    (lambda: jnp.array([0.5, 1e-3]), "Array([0.5  , 0.001], dtype=float32)"),
]


@pytest.mark.parametrize("make,expected", REPRS, ids=[r[1].split("\n")[0] for r in REPRS])
def test_repr(make, expected):
    assert repr(make()) == expected


@given(shape=shapes(max_dims=3), seed=seeds, dtype=st.sampled_from([F32, I32, BOOL]))
def test_str_is_numpys(shape, seed, dtype):
    x = uniform(seed, shape, -10, 10).astype(dtype)
    assert str(jnp.array(x)) == str(x)
    assert f"{jnp.array(x)}" == str(x)


def test_format_of_scalars():
    assert f"{jnp.array(2.5):.2f}" == "2.50"
    assert f"{jnp.array(3):03d}" == "003"


def test_iteration_and_len():
    x = jnp.array(np.arange(6, dtype=np.float32).reshape(3, 2))
    rows = list(x)
    assert len(rows) == 3 and len(x) == 3
    for row, expected in zip(rows, np.arange(6).reshape(3, 2)):
        check(row, expected, F32)
    assert [float(v) for v in jnp.arange(3.0)] == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError):
        iter(jnp.array(1.0))
    assert list(jnp.zeros((0, 2))) == []


def test_arrays_are_unhashable_and_immutable():
    with pytest.raises(TypeError):
        hash(jnp.array([1.0]))
    x = jnp.array([1.0, 2.0])
    with pytest.raises(TypeError):
        x[0] = 3.0


def test_scalar_type_constructors():
    # In JAX, jnp.float32(x) etc. make 0-d arrays, and they are also dtypes.
    x = jnp.float32(1.5)
    check(x, np.float32(1.5), F32)
    assert not x.weak_type
    check(jnp.int32(7), np.int32(7), I32)
    check(jnp.float32([1, 2]), np.array([1.0, 2.0]), F32)
    assert jnp.zeros(2, dtype=jnp.float32).dtype == F32
    assert jnp.arange(3).dtype == jnp.int32


# ------------------------------------------------------------------------------------------
# jax.nn
# ------------------------------------------------------------------------------------------


def np_sigmoid(x):
    x = x.astype(np.float64)
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x))
                    / (1 + np.exp(-np.abs(x))))


def np_logsumexp(x, axis=None, keepdims=False):
    x = x.astype(np.float64)
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


NN_UNARY = {
    "relu": (jax.nn.relu, lambda x: np.maximum(x, 0)),
    "sigmoid": (jax.nn.sigmoid, np_sigmoid),
    "softplus": (jax.nn.softplus, lambda x: np.logaddexp(x.astype(np.float64), 0)),
    "gelu": (jax.nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x.astype(np.float64) ** 3)))),
}


@pytest.mark.parametrize("name", sorted(NN_UNARY))
@given(shape=shapes(), seed=seeds, scale=st.sampled_from([1.0, 10.0, 1000.0]))
def test_nn_elementwise(name, shape, seed, scale):
    fn, np_fn = NN_UNARY[name]
    x = uniform(seed, shape, -scale, scale)
    check(fn(x), np_fn(x), F32, atol=1e-6)
    check(fn(jnp.array(x)), np_fn(x), F32, atol=1e-6)


@pytest.mark.parametrize("name", sorted(NN_UNARY))
def test_nn_elementwise_extremes(name):
    fn, np_fn = NN_UNARY[name]
    x = np.array([-1e30, -100.0, -20.0, 0.0, 20.0, 100.0, 1e30, np.inf, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        expected = np_fn(x)
    if name == "gelu":  # x * 0.5 * (1 + tanh(huge)) -> NaN at -inf * 0; skip the infinities
        x, expected = x[2:-3], expected[2:-3]
    check(fn(x), expected, F32, atol=1e-6)


def test_relu_of_ints_stays_int():
    check(jax.nn.relu(jnp.array([-2, 0, 3])), [0, 0, 3], I32)


@given(shape=shapes(min_dims=1), seed=seeds, data=st.data(),
       scale=st.sampled_from([1.0, 100.0, 1e4]))
def test_softmax_log_softmax_logsumexp(shape, seed, data, scale):
    x = uniform(seed, shape, -scale, scale)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    lse = np_logsumexp(x, axis=axis, keepdims=True)
    check(jax.nn.logsumexp(x, axis), np.squeeze(lse, axis), F32, atol=1e-5)
    check(jax.nn.logsumexp(x, axis, keepdims=True), lse, F32, atol=1e-5)
    check(jax.nn.logsumexp(x), np_logsumexp(x), F32, atol=1e-5)
    check(jax.nn.softmax(x, axis), np.exp(x - lse), F32, atol=1e-6)
    check(jax.nn.log_softmax(x, axis), x - lse, F32, atol=1e-5 * scale)
    np.testing.assert_allclose(np.sum(np.asarray(jax.nn.softmax(x, axis)), axis), 1.0,
                               rtol=1e-5)


def test_softmax_family_on_large_and_infinite_inputs():
    x = np.array([1000.0, 1000.0, -np.inf], np.float32)
    check(jax.nn.softmax(x), [0.5, 0.5, 0.0], F32)
    check(jax.nn.log_softmax(np.array([1000.0, 0.0], np.float32)), [0.0, -1000.0], F32)
    check(jax.nn.logsumexp(x), 1000 + np.log(2), F32)
    check(jax.nn.logsumexp(np.array([-np.inf, -np.inf], np.float32)), -np.inf, F32)
    check(jax.nn.logsumexp(np.array([-1e4, -1e4], np.float32)), -1e4 + np.log(2), F32)
    check(jax.nn.softmax(np.array([[1.0, 2.0], [3.0, 5.0]], np.float32), axis=0),
          np.exp([[1 - np.logaddexp(1, 3), 2 - np.logaddexp(2, 5)],
                  [3 - np.logaddexp(1, 3), 5 - np.logaddexp(2, 5)]]), F32)


@given(shape=shapes(max_dims=2), seed=seeds, num_classes=st.integers(1, 5), data=st.data())
def test_one_hot(shape, seed, num_classes, data):
    labels = ints(seed, shape, -1, num_classes + 1)  # out-of-range labels give zero rows
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    dtype = data.draw(st.sampled_from([None, F32, I32, BOOL]))
    expected = (labels[..., None] == np.arange(num_classes))
    expected = np.moveaxis(expected, -1, axis)
    kwargs = {} if dtype is None else {"dtype": dtype}
    check(jax.nn.one_hot(labels, num_classes, axis=axis, **kwargs),
          expected.astype(F32 if dtype is None else dtype), F32 if dtype is None else dtype)


# ------------------------------------------------------------------------------------------
# lax.erf_inv (the inverse CDF behind random.normal)
# ------------------------------------------------------------------------------------------

ERF_POINTS = np.linspace(-2.5, 2.5, 41)


def test_erf_inv_inverts_erf():
    y = np.array([math.erf(v) for v in ERF_POINTS], np.float32)
    np.testing.assert_allclose(jax.lax.erf_inv(y), ERF_POINTS, rtol=1e-5, atol=2e-5)
    check(jax.lax.erf_inv(np.array([1.0, -1.0, 0.0], np.float32)), [np.inf, -np.inf, 0.0], F32)


def test_erf_inv_is_accurate_in_float64(x64):
    y = np.array([math.erf(v) for v in ERF_POINTS])
    out = jax.lax.erf_inv(jnp.array(y))
    assert out.dtype == F64
    np.testing.assert_allclose(out, ERF_POINTS, rtol=1e-11, atol=1e-11)
    out = jax.lax.erf_inv(jnp.array(y.reshape(1, 41, 1)))
    np.testing.assert_allclose(out, ERF_POINTS.reshape(1, 41, 1), rtol=1e-11, atol=1e-11)
    check(jax.lax.erf_inv(jnp.array(math.erf(0.5))), 0.5, F64, rtol=1e-12)  # 0-d
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # infinities at +-1 come without a warning
        check(jax.lax.erf_inv(jnp.array([1.0, -1.0, 0.0])), [np.inf, -np.inf, 0.0], F64)


def test_lax_sort_of_one_array_returns_an_array_and_of_several_a_tuple():
    """JAX's signature: ``lax.sort(x)`` sorts x (a regression: its rows were once taken as
    separate operands); ``lax.sort([keys, values])`` sorts both by the keys, as a tuple."""
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]], np.float32)
    out = jax.lax.sort(jnp.asarray(x), dimension=1)
    np.testing.assert_array_equal(np.asarray(out), np.sort(x, axis=1))
    keys, values = jax.lax.sort([jnp.asarray(x[0]), jnp.arange(3)], num_keys=1)
    np.testing.assert_array_equal(np.asarray(values), [1, 2, 0])
    assert isinstance(jax.lax.sort((jnp.asarray(x[0]),)), tuple)
