"""Tiered execution (``stage2_jit/tiers.py``): a program admitted to it gives the same bits on
the interpreter as in its kernel, its first call runs on the interpreter while the kernel
compiles, and the calls after the compilation run the kernel."""

from __future__ import annotations

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from backend_under_test import cpu_only
from numba import njit
from stage1_autodiff.config import config
from stage1_autodiff.core import Array
from stage2_jit.runtime import CpuExecutable

import stage2_jit as jax
from stage2_jit import kernel_math, runtime, tiers

lax = jax.lax
pytestmark = cpu_only


@pytest.fixture(autouse=True)
def tiered():
    config.update("jax_from_numpy_tiered", True)
    yield
    tiers.wait()
    config.update("jax_from_numpy_tiered", False)


def _executable(f, *args):
    closed = jax.make_jaxpr(f)(*args)
    return runtime.compile_cpu(closed, fallback=runtime._interpreter_compile)


def _bits(x: Array) -> np.ndarray:
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" else x


def assert_same_bits(f, *args):
    """The kernel's results and the interpreter's (with twins) are identical, bit for bit."""
    executable = _executable(f, *args)
    assert isinstance(executable, tiers.Tiered), "not admitted to tiered execution"
    kernel = executable.compiled(*args)
    optimized = executable.compiled.optimized
    interpreted = tiers.interpret(optimized.jaxpr, optimized.consts,
                                  [Array(np.asarray(a)) for a in args])
    for k, (a, b) in enumerate(zip(kernel, interpreted)):
        assert np.asarray(a).dtype == np.asarray(b).dtype, k
        np.testing.assert_array_equal(_bits(a), _bits(b), err_msg=f"output {k}")


FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-40, -1e-40, 1e-8, 0.624, 0.626, 20.0,
          -20.0, 88.7, 89.5, -103.9, -110.0, 1e30, -1e30, 3.4e38, np.inf, -np.inf, np.nan]


def _float_operands(dtype):
    rng = np.random.default_rng(0)
    edge = np.array(FLOATS, dtype)
    x, y = np.meshgrid(edge, edge)
    noise = (rng.standard_normal((2, 2000)) * rng.choice([1e-3, 1, 30, 1e4], (2, 2000)))
    return (np.concatenate([x.ravel(), noise[0]]).astype(dtype),
            np.concatenate([y.ravel(), noise[1]]).astype(dtype))


def _float_program(x, y):
    return (x + y, x - y, x * y, x / y, lax.rem(x, y), -x, jnp.abs(x), jnp.floor(x),
            jnp.ceil(x), jnp.sqrt(x), x == y, x != y, x < y, x <= y, x > y, x >= y,
            jnp.where(x > y, x, y), jnp.maximum(x, y), jnp.minimum(x, y),
            jnp.maximum(x, 0.0), x.astype(np.int32), x.astype(np.uint32), x.astype(bool),
            lax.integer_pow(x, 1), lax.integer_pow(x, 0), lax.stop_gradient(x) * 2.0)


@pytest.fixture
def x64():
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_arithmetic_is_the_same_on_the_interpreter_and_in_the_kernel(dtype, x64):
    assert_same_bits(_float_program, *_float_operands(dtype))


def test_float32_exp_log_tanh_and_logistic_are_the_kernels_polynomials_on_the_interpreter():
    x, y = _float_operands(np.float32)
    wide = np.linspace(-120, 100, 20001, dtype=np.float32)
    bits = np.random.default_rng(2).integers(0, 2 ** 32, 20000, dtype=np.uint32)
    every_kind = bits.view(np.float32)  # denormals, NaNs with payloads, both signs
    assert_same_bits(lambda x: (jnp.exp(x), jnp.log(x), jnp.tanh(x), jax.nn.sigmoid(x)),
                     np.concatenate([x, y, wide, every_kind]))


@njit(cache=True)
def _kernel_fma(a, b, c, out):
    for i in range(a.size):
        out[i] = kernel_math.fma(a[i], b[i], c[i])


def _fma_operands(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random products and addends of every scale, then products one rounding step wide
    (``(1 + k 2**-12)**2`` needs 25 bits) nudged by a tiny addend: exactly the sums that a
    float64 sum rounded again to float32 gets wrong."""
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    c = (rng.standard_normal(n) * np.exp2(rng.integers(-40, 10, n))).astype(np.float32)
    half = n // 2
    a[:half] = b[:half] = 1 + rng.integers(1, 4096, half) * np.float32(2.0 ** -12)
    c[:half] = rng.choice([-1.0, 1.0, 0.0], half) * np.float32(2.0 ** -70)
    edge = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, 1e-45], np.float32)
    grid = [g.ravel() for g in np.meshgrid(edge, edge, edge)]  # every triple of them
    return tuple(np.concatenate([v, g]) for v, g in zip((a, b, c), grid))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf * 0 and the like
def test_exact_fma_gives_the_kernels_fused_multiply_add_where_a_float64_sum_would_not():
    a, b, c = _fma_operands(400_000)
    kernel = np.empty_like(a)
    _kernel_fma(a, b, c, kernel)
    exact = tiers.exact_fma(a, b, c)
    nan = np.isnan(kernel)  # which NaN (sign, payload) comes out depends on the instruction
    np.testing.assert_array_equal(np.isnan(exact), nan)
    np.testing.assert_array_equal(_bits(exact[~nan]), _bits(kernel[~nan]))
    rounded_twice = (a.astype(np.float64) * b + c).astype(np.float32)
    assert (_bits(rounded_twice) != _bits(kernel)).sum() > 1000  # the cases are hard ones


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32])
def test_iota_is_admitted_and_the_same_on_both_tiers(dtype):
    program = lambda x: (lax.iota(dtype, 7), lax.broadcasted_iota(dtype, (3, 5), 1),  # noqa: E731
                         jax.nn.one_hot(x, 4))
    assert_same_bits(program, np.array([0, 3, 1, 9], np.int32))


def test_a_float_iota_too_long_to_count_exactly_is_compiled_first():
    closed = jax.make_jaxpr(lambda: lax.iota(np.float32, 2 ** 24 + 1))()
    assert not tiers.reproducible(closed.jaxpr)


def test_the_course_tanh_is_the_same_on_both_tiers():
    def tanh(x):
        y = jnp.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)
    assert_same_bits(tanh, np.linspace(-30, 30, 10001, dtype=np.float32))


INTS = [0, 1, -1, 2, -2, 7, -7, 31, 32, 33, 64, 100, -100]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_integer_arithmetic_and_reductions_are_the_same_on_both_tiers(dtype, x64):
    info = np.iinfo(dtype)
    edge = np.array([v for v in INTS if info.min <= v <= info.max] + [info.min, info.max],
                    dtype)
    x, y = (a.ravel() for a in np.meshgrid(edge, edge))

    def program(x, y):
        m = x.reshape(len(edge), len(edge))
        return (x + y, x - y, x * y, lax.div(x, y), lax.rem(x, y), -x, jnp.abs(x), x == y,
                x < y, x >= y, x & y, x | y, x ^ y, ~x, lax.shift_left(x, y),
                lax.shift_right_logical(x, y), lax.shift_right_arithmetic(x, y),
                jnp.maximum(x, y), jnp.minimum(x, y), x.astype(np.float32),
                lax.integer_pow(x, 3), m.sum(axis=0), m.prod(axis=1), m.max(axis=0),
                m.min(axis=1), m.T[::-1], jnp.concatenate([x, y])[3:40])
    assert_same_bits(program, x, y)


def _signed_zeros_and_specials(shape, dtype):
    """Random values with rows and columns of zeros of both signs, NaN and infinities."""
    x = (np.random.default_rng(1).standard_normal(shape) * 10).astype(dtype)
    x[0] = -0.0  # all -0: a sum is +0 (the identity comes first), a maximum -0
    x[1] = 0.0
    x[1, ::2] = -0.0  # mixed zeros: a maximum +0, a minimum -0
    x[2, 1], x[3, 0], x[4, 2] = np.nan, np.inf, -np.inf
    x[5] = np.array([1e30, -1e30, 1.0] * shape[1])[:shape[1]]  # the order shows in the sum
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_reductions_the_kernel_does_in_order_are_the_same_on_both_tiers(dtype, x64):
    """``codegen_cpu.reduces_in_order``: columns of any length, rows of at most 16, and full
    reductions of at most 4096 elements; the interpreter folds them in the same order."""
    x = _signed_zeros_and_specials((40, 12), dtype)
    cube = x.reshape(4, 10, 12)

    def program(x, cube):
        return (x.sum(axis=1), x.max(axis=1), x.min(axis=1), x.prod(axis=1), x.sum(axis=0),
                x.max(axis=0), x.min(axis=0), x.prod(axis=0), cube.sum(axis=(0, 1)),
                cube.max(axis=(0, 1)), cube[:, :2, :4].sum(axis=(1, 2)), cube.sum(axis=1),
                x[:3, :4].sum(), x[:4, :4].max(), x[:2, :3].min(), x[:1, :1].sum(),
                x.sum(), x.max(), jnp.mean(x[:, 0]), x.T.prod(), cube.sum(),
                jnp.abs(x - x.max(axis=1, keepdims=True)).sum(axis=1))
    assert_same_bits(program, x, cube)
    empty = np.zeros((5, 0), dtype)  # nothing to add: the identity, or no result at all
    assert_same_bits(lambda e: (e.sum(axis=1), e.max(axis=0), e.sum(axis=0), e.T.sum(axis=0)),
                     empty)


BLAS_SHAPES = [(5, 7, 3), (64, 64, 64), (300, 200, 150), (1, 9, 8), (8, 9, 1), (1, 9, 1),
               (6, 0, 4)]


@pytest.mark.parametrize("m,k,n", BLAS_SHAPES)
def test_matrix_products_call_the_kernels_blas_on_the_interpreter(m, k, n):
    """The kernel's ``np.dot`` is SciPy's BLAS; the twin calls the same routine (``gemm``,
    ``gemv`` or ``dot``) with the same transposition flags, for each operand layout."""
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    dims = lambda lc, rc: ((lc, rc), ((), ()))  # noqa: E731
    assert_same_bits(lambda a, b, at, bt: (
        a @ b, lax.dot_general(at, b, dims((0,), (0,))), lax.dot_general(a, bt, dims((1,), (1,))),
        lax.dot_general(at, bt, dims((0,), (1,)))), a, b, a.T.copy(), b.T.copy())


def test_products_of_vectors_and_stacked_rows_are_the_same_on_both_tiers(x64):
    rng = np.random.default_rng(3)
    x3 = rng.standard_normal((3, 4, 5))
    w = rng.standard_normal((5, 6))
    v = rng.standard_normal(5)
    assert_same_bits(lambda x3, w, v: (x3 @ w, v @ w, jnp.abs(x3) @ w.T.T), x3, w, v)


def test_products_of_slices_transposes_and_computed_operands_are_the_same_on_both_tiers():
    """The kernel materializes such operands (C layout) before its BLAS call, or passes a
    transposed view; the twin follows either."""
    rng = np.random.default_rng(4)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((70, 50), (50, 60), (70, 40)))
    dn = lambda lc, rc: ((lc, rc), ((), ()))  # noqa: E731
    assert_same_bits(lambda a, b, c: (
        jnp.transpose(a.T) @ b, a[:, :5] @ b[:5], a[::2] @ b[:, ::3], jnp.tanh(a) @ (b + 1.0),
        (a @ b).T @ a, jnp.einsum("ij,kj->ik", a, b.T), lax.dot_general(a[::2, 1:], c[::2],
                                                                        dn((0,), (0,))),
        lax.dot_general(c, a[:, 3:43], dn((1,), (1,)))), a, b, c)


def test_long_float_reductions_vector_products_and_libm_functions_are_not_admitted():
    x = np.ones((80, 64), np.float32)  # 5120 elements: a full reduction reassociates
    vector = lambda x: lax.dot_general(x, x[0], (((1,), (0,)), ((), ())))  # noqa: E731
    for f in (lambda x: x.sum(axis=1), vector, lambda x: jnp.log1p(x) + 1.0,
              lambda x: x.max(), lambda x: lax.integer_pow(x, 3), lambda x: jnp.sin(x)):
        executable = _executable(f, x)
        assert isinstance(executable, CpuExecutable) and not isinstance(executable, tiers.Tiered)
    assert isinstance(_executable(lambda x: (x.sum(axis=1) > 1) | (x.T > 0), x.astype(np.int32)),
                      tiers.Tiered)


def _tiered_executables() -> list[tiers.Tiered]:
    return [e for table in list(runtime._compiled.values()) for e in table.values()
            if isinstance(e, tiers.Tiered)]


def test_the_first_call_of_a_jitted_function_starts_the_compilation_and_returns():
    f = jax.jit(lambda x: jnp.tanh(x) * 3.0 + x)
    x = np.linspace(-5, 5, 1001, dtype=np.float32)
    known = set(map(id, _tiered_executables()))
    first = f(x)
    (executable,) = [e for e in _tiered_executables() if id(e) not in known]
    assert executable.thread is not None
    tiers.wait()
    assert executable.ready
    np.testing.assert_array_equal(_bits(first), _bits(f(x)))


def test_a_tiered_executable_switches_to_its_kernel_once_compiled():
    executable = _executable(lambda x: x * x + x * 2.0, np.ones(8, np.float32))
    assert isinstance(executable, tiers.Tiered) and not executable.ready
    calls = []
    kernel_run = executable.compiled.run_donating
    executable.compiled.run_donating = lambda *a: calls.append(1) or kernel_run(*a)
    x = np.arange(8, dtype=np.float32)
    first = executable(x)  # the interpreter; the compilation starts
    assert calls == []
    tiers.wait()
    assert executable.ready
    second = executable(x)
    assert calls == [1]
    np.testing.assert_array_equal(np.asarray(first[0]), np.asarray(second[0]))
    assert executable.source == executable.compiled.source  # the rest is the kernel's
    assert executable.kernel is executable.compiled.kernel  # the Numba function


def test_tiered_execution_can_be_turned_off():
    config.update("jax_from_numpy_tiered", False)
    assert not isinstance(_executable(lambda x: x + 1.0, np.ones(3, np.float32)), tiers.Tiered)


def test_a_donating_first_call_waits_for_the_kernel_which_writes_in_place():
    """Only the kernel writes into a donated buffer, so a call that donates does not run on
    the interpreter tier (course/stage2/buffers.md, "Donation", shows the same)."""
    step = jax.jit(lambda w, g: w - 0.5 * g, donate_argnums=0)
    w = jax.jit(lambda w: w + 0.0)(jnp.ones((256, 256), np.float32))  # a pooled buffer
    g = jnp.ones((256, 256), np.float32)
    where = np.asarray(w).ctypes.data
    new = step(w, g)
    assert w.is_deleted()
    assert np.asarray(new).ctypes.data == where
    np.testing.assert_array_equal(np.asarray(new), 0.5)


def test_an_elementwise_first_call_runs_a_block_at_a_time_into_pooled_memory(monkeypatch):
    """``tiers.interpret_into_pool``: blocks of ``BLOCK`` elements (the last one shorter),
    the same bits as the kernel, and results lent by the runtime's pool."""
    from stage2_jit.buffers import POOL_MIN, lent

    monkeypatch.setattr(tiers, "BLOCK", 1000)
    x = np.linspace(-50, 50, 3 * 8321, dtype=np.float32).reshape(3, 8321)
    y = np.cos(x)

    def program(x, y):
        return jnp.exp(x) * y + 1.0, x > y, jnp.tanh(x).astype(np.int32), x

    executable = _executable(program, x, y)
    assert tiers._blockwise_size(executable.compiled.optimized.jaxpr) == x.size
    calls = []
    interpret = tiers.interpret
    monkeypatch.setattr(tiers, "interpret", lambda *a: calls.append(1) or interpret(*a))
    first = executable(x, y)
    assert len(calls) == 25 and executable.thread is not None  # ceil(24963 / 1000)
    assert all(lent(np.asarray(o)) for o in first if np.asarray(o).nbytes >= POOL_MIN)
    for a, b in zip(first, executable.compiled(x, y)):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    assert tiers._blockwise_size(jax.make_jaxpr(lambda x: x + x.sum())(x).jaxpr) == 0
