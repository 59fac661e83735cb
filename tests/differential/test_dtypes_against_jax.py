"""The dtypes against JAX's: the whole promotion table (strong, weak and Python types), with
and without x64; array creation and astype of the narrow and complex types; arithmetic on
them eagerly and under jit."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

import stage2_jit.numpy as jnp  # noqa: E402

import stage2_jit  # noqa: E402

NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
NARROW = ["int8", "int16", "uint8", "uint16", "float16", "bfloat16"]
PYTHON_TYPES = [int, float, complex]


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """Both libraries with jax_enable_x64 set as the param says."""
    ours, theirs = stage2_jit.config.jax_enable_x64, jax.config.jax_enable_x64
    stage2_jit.config.update("jax_enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    yield request.param
    stage2_jit.config.update("jax_enable_x64", ours)
    jax.config.update("jax_enable_x64", theirs)


def test_promote_types_table(x64):
    kinds = NAMES + PYTHON_TYPES
    for a, b in itertools.product(kinds, repeat=2):
        ours = jnp.promote_types(*(getattr(jnp, k) if isinstance(k, str) else k for k in (a, b)))
        theirs = jjnp.promote_types(*(getattr(jjnp, k) if isinstance(k, str) else k
                                      for k in (a, b)))
        assert ours == theirs, (a, b, ours, theirs)


def _operands(lib):
    """One value of each kind: a strong array of every dtype, and the weak Python scalars."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 64-bit dtypes without x64
        arrays = [lib.zeros(2, getattr(lib, name)) for name in NAMES]
    return arrays + [True, 3, 2.5, 1j]


def test_result_type_and_weak_types_of_arithmetic(x64):
    """multiply of every pair: dtype and weak type, as JAX (this covers the fast paths of
    an array beside a Python scalar too)."""
    ours, theirs = _operands(jnp), _operands(jjnp)
    for (a, b), (ja, jb) in zip(itertools.product(ours, repeat=2),
                                itertools.product(theirs, repeat=2)):
        assert jnp.result_type(a, b) == jjnp.result_type(ja, jb), (ja, jb)
        if isinstance(a, bool) and isinstance(b, bool):
            continue  # Python's own True * True
        mine, expected = jnp.multiply(a, b), jjnp.multiply(ja, jb)
        assert mine.dtype == expected.dtype, (ja, jb)
        assert mine.weak_type == expected.weak_type, (ja, jb)


def _weak_operands(convert, lib, x64):
    """A weakly typed scalar array of every dtype (as a weak value meets a conversion inside
    a library function), and the strong ones; without x64, no 64-bit ints or floats."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 64-bit dtypes without x64
        return [convert(np.ones((), name), np.dtype(getattr(lib, name)), weak)
                for name in NAMES for weak in (False, True)
                if x64 or name not in ("int64", "uint64", "float64", "complex128")]


def test_weakly_typed_arrays_of_every_dtype_promote_as_jax(x64):
    """Weak operands of one dtype keep it (a weak float16 squared is a weak float16, not the
    default float), a lone operand keeps its type, and a weak bool is a strong one."""
    from jax._src.lax.lax import _convert_element_type
    from stage1_autodiff.prims import convert_element_type

    ours = _weak_operands(convert_element_type, jnp, x64)
    theirs = _weak_operands(lambda x, d, w: _convert_element_type(x, d, w), jjnp, x64)
    for a, ja in zip(ours, theirs):
        for unary, j_unary in ((jnp.exp, jjnp.exp), (jnp.negative, jjnp.negative)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if ja.dtype == jjnp.bool_ and unary is jnp.negative:
                    continue  # JAX refuses negative of a bool, as we do (tested elsewhere)
                got, want = unary(a), j_unary(ja)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (ja, unary)
        for b, jb in zip(ours, theirs):
            got, want = jnp.add(a, b), jjnp.add(ja, jb)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (ja, jb)


@pytest.mark.parametrize("name", NARROW + ["complex64"])
def test_creation_and_astype(name):
    data = [[1.5, -2.25, 3], [100, 0, -7]] if "int" not in name else [[1, 2, 3], [100, 0, 7]]
    ours, theirs = jnp.array(data, getattr(jnp, name)), jjnp.array(data, getattr(jjnp, name))
    assert ours.dtype == theirs.dtype and not ours.weak_type
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert getattr(jnp, name)(2).dtype == getattr(jjnp, name)(2).dtype
    for other in ["int8", "uint8", "float16", "bfloat16", "float32", "complex64"]:
        mine, expected = ours.astype(getattr(jnp, other)), theirs.astype(getattr(jjnp, other))
        assert mine.dtype == expected.dtype, other
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(expected), err_msg=other)


def test_python_int_wraps_into_narrow_ints_and_must_fit_int32():
    for name, value in [("int8", 300), ("uint8", -1), ("int16", -40000), ("uint32", -1)]:
        ours = jnp.ones(2, getattr(jnp, name)) + value
        theirs = jjnp.ones(2, getattr(jjnp, name)) + value
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        assert ours.dtype == theirs.dtype
    with pytest.raises(OverflowError, match="int32"):
        jnp.ones(2, jnp.uint8) + 2**31
    with pytest.raises(OverflowError):
        jnp.int8(300)


def _arith(lib, x, y):
    return [x + y, x - y, x * y, x * 3, -x, lib.maximum(x, y), x < y, lib.abs(x)]


def _float_arith(lib, x, y):
    return [x / y, lib.exp(x / 50), lib.tanh(x), lib.sqrt(lib.abs(y)), lib.sum(x), x ** 2]


@pytest.mark.parametrize("name", NARROW)
def test_narrow_arithmetic_eager_and_jit(name):
    ints = [[1, -7, 100, 127], [3, 5, 9, 60]] if name.startswith("i") else [
        [1, 7, 100, 127], [3, 5, 9, 60]]
    x, y = (jnp.array(v, getattr(jnp, name)) for v in ints)
    jx, jy = (jjnp.array(v, getattr(jjnp, name)) for v in ints)
    funs = [_arith] if "int" in name else [_arith, _float_arith]
    for fun in funs:
        expected = fun(jjnp, jx, jy)
        for mine in (fun(jnp, x, y), stage2_jit.jit(lambda a, b: fun(jnp, a, b))(x, y)):
            for m, e in zip(mine, expected):
                assert m.dtype == e.dtype and m.weak_type == e.weak_type, (fun, m, e)
                # JAX (XLA) computes some float16 ops in float32 and rounds once; NumPy
                # rounds each: allow the last bit.
                np.testing.assert_allclose(np.asarray(m, np.float64), np.asarray(e, np.float64),
                                           rtol=1e-2 if "float" in name else 0)


def test_narrow_float_kernels_fall_back_clearly():
    """Numba has no bfloat16 or float16 arithmetic: a program of them runs on the interpreter
    backend, and its source says why."""
    f = stage2_jit.jit(lambda x: x * 2)
    x = jnp.ones(3, jnp.bfloat16)
    assert "bfloat16" in f.lower(x).compile().as_text()


def test_dtype_queries():
    for name in NARROW + ["complex64"]:
        ours, theirs = getattr(jnp, name), getattr(jjnp, name)
        for kind in ["floating", "inexact", "integer", "number", "complexfloating",
                     "signedinteger" if hasattr(jnp, "signedinteger") else "integer"]:
            assert (jnp.issubdtype(ours, getattr(jnp, kind))
                    == jjnp.issubdtype(theirs, getattr(jjnp, kind))), (name, kind)
        assert jnp.dtype(ours) == jjnp.dtype(theirs)
        if "int" in name:
            assert jnp.iinfo(ours).max == jjnp.iinfo(theirs).max
        elif "complex" not in name:
            assert float(jnp.finfo(ours).eps) == float(jjnp.finfo(theirs).eps)
    assert jnp.ones(2, jnp.bfloat16).aval.str_short() == "bf16[2]"
    assert str(stage2_jit.make_jaxpr(lambda x: x * 2)(jnp.ones(2, jnp.int8))).count("i8[2]") == 2


ACCUMULATING = ["sum", "prod", "nansum", "trace", "mean", "var", "cumsum", "cumprod",
                "nancumsum", "nancumprod"]


@pytest.mark.parametrize("name", ["bool_", "int8", "int16", "int32", "uint8", "uint16",
                                  "uint32", "float16", "float32"])
def test_reductions_and_running_sums_accumulate_as_jax(name, x64):
    """Sums widen small integers to the default integer (uint32 without x64, never a 64-bit
    type then); running sums keep the integer's type and widen only booleans."""
    value = np.array([[1, 0, 1]]).astype(np.dtype(getattr(jjnp, name)))
    ours, theirs = jnp.asarray(value), jjnp.asarray(value)
    for function in ACCUMULATING:
        assert getattr(jnp, function)(ours).dtype == getattr(jjnp, function)(theirs).dtype, (
            function)
    for function in ["sum", "prod", "cumsum", "cumprod"]:
        for dtype in ["int16", "float32", "bool_"]:
            got = getattr(jnp, function)(ours, dtype=getattr(jnp, dtype)).dtype
            assert got == getattr(jjnp, function)(theirs, dtype=getattr(jjnp, dtype)).dtype, (
                function, dtype)


@pytest.mark.parametrize("call", ["jnp.cumsum(x)", "jnp.cumprod(x)", "jnp.nextafter(x, y)",
                                  "jax.nn.silu(x)", "jax.lax.rsqrt(jnp.abs(x) + 1)",
                                  "jax.scipy.special.erf(x)"])
def test_bfloat16_is_a_float_everywhere(call):
    """NumPy calls bfloat16 a void type (kind 'V'): every dtype check asks dtypes.kind."""
    x = np.array([0.5, -1.25, 2.0], np.float32).astype(jjnp.bfloat16)
    y = np.array([1.0, 1.0, -3.0], np.float32).astype(jjnp.bfloat16)
    got = eval(call, {"jnp": jnp, "jax": stage2_jit, "x": jnp.asarray(x), "y": jnp.asarray(y)})
    want = eval(call, {"jnp": jjnp, "jax": jax, "x": jjnp.asarray(x), "y": jjnp.asarray(y)})
    assert got.dtype == want.dtype == jjnp.bfloat16
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               rtol=2 ** -7)


NARROW_SUMS = ["jnp.sum(x)", "jnp.mean(x)", "jnp.var(x)", "jnp.std(x, axis=1)",
               "jnp.prod(x[0, :20] * 0.25 + 1)", "jnp.sum(x, axis=0)", "jnp.nansum(x)",
               "jnp.linalg.norm(x)",
               "jnp.mean(x, axis=0, where=x > 0)", "jnp.average(x)", "jax.nn.softmax(x)",
               "jax.nn.standardize(x)"]


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
@pytest.mark.parametrize("call", NARROW_SUMS)
def test_narrow_floats_sum_in_float32_as_jax(call, name):
    """A sum of 4096 float16 or bfloat16 values accumulates in float32 and is rounded once,
    as JAX's (they summed in their own type: a bfloat16 variance was off by half, a count of
    bfloat16 ones stopped at 256). Within two units in the last place of JAX's (the sums'
    orders differ, and standardize rounds its mean before squaring)."""
    x = (np.random.default_rng(0).standard_normal((64, 64)) * 3).astype(getattr(jnp, name))
    mine = eval(call, {"jnp": jnp, "jax": stage2_jit, "x": x})
    theirs = eval(call, {"jnp": jax.numpy, "jax": jax, "x": x})
    assert mine.dtype == theirs.dtype
    ulp = np.spacing(np.abs(np.asarray(theirs, np.float32)).astype(theirs.dtype))
    assert np.all(np.abs(np.asarray(mine, np.float64) - np.asarray(theirs, np.float64))
                  <= 2 * np.asarray(ulp, np.float64)), call


def test_a_narrow_sum_is_traced_as_jax_traces_it():
    x = np.ones(3, jnp.bfloat16)
    for fun in ("sum", "mean", "prod"):
        assert str(stage2_jit.make_jaxpr(getattr(jnp, fun))(x)) == str(
            jax.make_jaxpr(getattr(jax.numpy, fun))(x))


def test_issubdtype_answers_under_jit_as_jax() -> None:
    """It compared with jnp's ``any`` and ``all``, which a trace stages: under ``jit`` the
    answer was a tracer, and ``if`` on it raised."""
    x = np.ones(2, np.float32)
    for lib, np_module in ((stage2_jit, jnp), (jax, jjnp)):
        floats = lib.jit(lambda v: v * np_module.issubdtype(v.dtype, np_module.floating))(x)
        keys = lib.jit(lambda k: np_module.issubdtype(k.dtype, lib.dtypes.prng_key) * x)(
            lib.random.key(0))
        np.testing.assert_array_equal(floats, x)
        np.testing.assert_array_equal(keys, x)
