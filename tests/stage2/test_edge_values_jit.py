"""Edge values under ``jit`` as JAX's ``jit`` gives them, on the backend under test (see
``backend_under_test.py``: cpu, or cuda under the simulator) and on the interpreter: float to
integer conversions of NaN, infinities and values out of range, which the generated kernels
must spell as saturating casts (Numba's own cast is undefined there), and integer ``//``,
``%`` and ``fmod`` by zero and of the most negative value by -1. Expected values are JAX's.
"""

import contextlib
import warnings

import numpy as np
import pytest
from backend_under_test import BACKEND, cpu_only, generated_executable_type
from numba import config as numba_config

import stage2_jit as jax
from stage2_jit import lax
from stage2_jit import numpy as jnp

real = pytest.importorskip("jax")

BACKENDS = sorted({BACKEND, "interpreter"})

SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, -0.99, 2.5, -2.5, 2.0**31 - 128,
                  2.0**31, -2.0**31, -2.0**31 - 256, 2.0**32 - 256, 2.0**32, 3e9, -3e9, 1e10,
                  -1e10, 2.0**63, -2.0**63, 2.0**64, 1e19, 1e30, -3.4e38]


def floats(dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    magnitudes = 10.0 ** rng.uniform(-3, 20, 40) * rng.choice([-1, 1], 40)
    return np.concatenate([SPECIAL_FLOATS, magnitudes]).astype(dtype)


@contextlib.contextmanager
def no_warnings():
    """Warnings are errors: NumPy's about casts and division by zero must not reach the user.
    NB: the CUDA simulator runs kernels on NumPy scalars, which warn wherever arithmetic
    wraps, overflows or makes a NaN (a compiled kernel does not); those are let through."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if numba_config.ENABLE_CUDASIM:
            warnings.filterwarnings("ignore", "(?s).*encountered in scalar", RuntimeWarning)
        yield


def run_ours(fun, args, backend):
    """``jit(fun)`` on ``backend``: on a code-generating backend, a generated kernel."""
    compiled = jax.jit(fun, backend=backend)
    if backend != "interpreter":
        executable = compiled.lower(*args).compile()._executable
        assert isinstance(executable, generated_executable_type())
    with no_warnings():
        return [np.asarray(out) for out in jax.tree_util.tree_leaves(compiled(*args))]


def run_jax(fun_of, args, x64=False):
    with real.enable_x64(x64):
        out = real.jit(fun_of(real.numpy, real.lax))(*args)
        return [np.asarray(o) for o in real.tree_util.tree_leaves(out)]


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w)


def casts(np_, lax_, target):
    """The conversion inside a fused expression (the input is scaled first, so nothing is
    converted before the kernel runs), and one on its own."""
    return lambda x: ((x * 1.0).astype(target), lax_.convert_element_type(x, target))


CASTS_32 = [(np.float32, np.int32), (np.float32, np.uint32), (np.float32, np.bool_)]
CASTS_64 = [(np.float64, np.int64), (np.float64, np.uint64), (np.float64, np.int32),
            (np.float64, np.uint32), (np.float32, np.int64), (np.float32, np.uint64)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source, target", CASTS_32)
def test_float_to_int_conversions_as_jax(backend, source, target):
    x = floats(source)
    if target == np.bool_:  # NB: XLA's CPU flushes subnormals to zero; we keep IEEE values
        x = x[~((x != 0) & (np.abs(x) < np.finfo(source).tiny))]
    want = run_jax(lambda np_, lax_: casts(np_, lax_, target), (x,))
    assert_same(run_ours(casts(jnp, lax, target), (jnp.asarray(x),), backend), want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source, target", CASTS_64)
def test_64_bit_float_to_int_conversions_as_jax(backend, source, target):
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        x = floats(source)
        want = run_jax(lambda np_, lax_: casts(np_, lax_, target), (x,), x64=True)
        assert_same(run_ours(casts(jnp, lax, target), (jnp.asarray(x),), backend), want)
    finally:
        jax.config.update("jax_enable_x64", previous)


@cpu_only
def test_the_cpu_kernel_spells_the_saturating_cast():
    text = jax.jit(lambda x: (x * 2.0).astype(jnp.int32), backend="cpu").lower(
        jnp.ones(3)).as_text()
    assert "float_to_int(" in text.split("# generated source")[1]


def divisions(np_, lax_):
    return lambda x, y: (x // y, x % y, np_.fmod(x, y), np_.divmod(x, y), lax_.div(x, y),
                         lax_.rem(x, y), x // 0, x % 0)


def edge_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -7, -1, 0, 1, 2, 7, info.max]
    values = np.array([v for v in values if info.min <= v <= info.max], dtype)
    x, y = np.meshgrid(values, values)
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_integer_division_edges_as_jax(backend, dtype):
    x, y = edge_pairs(dtype)
    want = run_jax(divisions, (x, y))
    assert_same(run_ours(divisions(jnp, lax), (jnp.asarray(x), jnp.asarray(y)), backend), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_floor_divide_and_remainder_as_jax(backend):
    rng = np.random.default_rng(1)
    x = np.concatenate([[1.0, -1.0, 0.3, 1.0, 0.0, -0.0, np.inf, 1e30],
                        rng.uniform(-50, 50, 60)]).astype(np.float32)
    y = np.concatenate([[0.1, 0.1, 0.1, 0.0, 0.0, 1.0, 2.0, 3.0],
                        rng.uniform(-3, 3, 60)]).astype(np.float32)
    fun = lambda np_, lax_: lambda a, b: (a // b, a % b, np_.divmod(a, b))  # noqa: E731
    want = run_jax(fun, (x, y))
    got = run_ours(fun(jnp, lax), (jnp.asarray(x), jnp.asarray(y)), backend)
    assert_same(got, want)
    for g, w in zip(got, want, strict=True):  # the sign of zero too (a NaN's means nothing)
        np.testing.assert_array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(w) & ~np.isnan(w))
