"""The CUDA backend under Numba's CUDA simulator: jit(f, backend="cuda") equals eager.

Run in its own process, with numba-cuda installed:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/stage2_cuda
Without numba-cuda, or without the simulator, these tests are skipped.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
from numba import config  # noqa: E402

if not config.ENABLE_CUDASIM:
    pytest.skip("set NUMBA_ENABLE_CUDASIM=1 to run the CUDA backend tests",
                allow_module_level=True)

import stage2_jit.numpy as jnp  # noqa: E402

import stage2_jit as jax  # noqa: E402

rng = np.random.default_rng(0)
x23 = rng.standard_normal((2, 3)).astype(np.float32)
y3 = rng.standard_normal(3).astype(np.float32)
i23 = rng.integers(-20, 20, (2, 3)).astype(np.int32)
j3 = np.array([3, -4, 0], np.int32)

PROGRAMS = [
    ("fused", lambda x, y: x * x + x * 2.0, (x23, y3)),
    ("broadcast", lambda x, y: x * y - y, (x23, y3)),
    ("where", lambda x, y: jnp.where(x > y, jnp.exp(x), jnp.tanh(y)), (x23, y3)),
    ("scalar", lambda x, y: x * 3.0 + 1.0, (np.float32(2.0), y3)),
    ("transcendental", lambda x, y: jax.nn.sigmoid(x) + jnp.log1p(jnp.abs(y)), (x23, y3)),
    ("integers", lambda i, j: (i // j, i % j, i * 3 - j), (i23, j3)),
    ("maximum", lambda x, y: jnp.maximum(x, y) + jnp.minimum(x, 0.5), (x23, y3)),
    ("transpose", lambda x, y: x.T + y[:, None], (x23, y3)),
]


@pytest.mark.parametrize("name, f, args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_jit_cuda_equals_eager(name, f, args):
    expected = f(*[jnp.asarray(a) for a in args])  # eager
    got = jax.jit(f, backend="cuda")(*args)
    for e, g in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got)):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_generated_source_is_a_grid_stride_kernel():
    text = jax.jit(lambda x, y: x * y + 2.0, backend="cuda").lower(x23, y3).as_text()
    assert "@cuda.jit" in text and "cuda.gridsize(1)" in text
    assert "np.float32(2.0)" in text  # a typed constant, never a float64 one


def test_unsupported_program_runs_on_the_host_and_returns_gpu_arrays():
    f = jax.jit(lambda x: jax.lax.sort(x * 2.0, dimension=1), backend="cuda")
    out = f(x23)
    np.testing.assert_array_equal(out, np.sort(x23 * 2.0, axis=1))
    assert out.devices() == {jax.devices("gpu")[0]}
    assert re.search("Not generated: sort", f.lower(x23).as_text())


def _assert_equals_eager(f, *args, rtol=1e-5):
    expected = f(*[jnp.asarray(a) for a in args])  # eager
    got = jax.jit(f, backend="cuda")(*args)
    for e, g in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got)):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-6)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(e))  # -0.0 and NaN's sign too


# Reductions: shapes with more rows than the simulator's blocks and more reduced elements than
# its threads, so blocks take several rows and threads several elements.
x5x7 = rng.standard_normal((5, 7)).astype(np.float32)
x3x4x5 = rng.standard_normal((3, 4, 5)).astype(np.float32)
i5x7 = rng.integers(-9, 9, (5, 7)).astype(np.int32)
x_nan = x5x7.copy()
x_nan[1, 2] = x_nan[4, 0] = np.nan
REDUCTIONS = [jnp.sum, jnp.max, jnp.min, jnp.prod]
AXES = [0, -1, None, (0, 2), 1]


@pytest.mark.parametrize("reduce", REDUCTIONS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_reduction_equals_eager(reduce, axis):
    x = x3x4x5 if axis in [(0, 2), 1] else x5x7
    _assert_equals_eager(lambda x: reduce(x * 0.5 + 1.0, axis=axis), x)


@pytest.mark.parametrize("reduce", REDUCTIONS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("axis", [0, None], ids=str)
def test_integer_reduction_equals_eager(reduce, axis):
    _assert_equals_eager(lambda i: reduce(i % 3 + 1, axis=axis, keepdims=True), i5x7)


@pytest.mark.parametrize("reduce", [jnp.max, jnp.min, jnp.sum], ids=lambda r: r.__name__)
@pytest.mark.parametrize("axis", [0, -1, None], ids=str)
def test_reduction_propagates_nan(reduce, axis):
    _assert_equals_eager(lambda x: reduce(x, axis=axis), x_nan)


def test_boolean_reductions_equal_eager():
    _assert_equals_eager(lambda x: (jnp.all(x > -1.0, axis=0), jnp.any(x > 1.0, axis=1),
                                    jnp.any(x > 5.0)), x5x7)


def _layernorm(x, scale, offset):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    variance = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(variance + 1e-5) * scale + offset


def test_softmax_and_layernorm_equal_eager():
    x = rng.standard_normal((12, 33)).astype(np.float32)
    _assert_equals_eager(lambda x: jax.nn.softmax(x * 3.0), x)
    scale, offset = (rng.standard_normal(33).astype(np.float32) for _ in range(2))
    _assert_equals_eager(_layernorm, x, scale, offset, rtol=1e-4)


def test_softmax_is_one_kernel_per_row_that_stores_only_its_result():
    text = jax.jit(jax.nn.softmax, backend="cuda").lower(x5x7).as_text()
    assert "Not generated" not in text
    assert text.count("@cuda.jit") == 1 and "one block per row" in text
    assert text.count("cuda.shared.array(") == 1 and "cuda.syncthreads()" in text
    program = text[text.index("def program"):]
    assert program.count("device_array(") == 1  # the result: no max, sum or exp stored
    assert "math.exp(" in text and "def select" not in text  # no device functions


def test_a_row_group_with_several_results_and_one_read_at_another_row():
    def stats(x):  # results of every kind: row values, row scalars, both reductions
        total = jnp.sum(x, axis=1)
        return total, jnp.max(x, axis=1, keepdims=True), x / total[:, None]
    _assert_equals_eager(stats, x5x7)
    assert "one block per row" in jax.jit(stats, backend="cuda").lower(x5x7).as_text()
    shifted = lambda x: x - jnp.max(x, axis=1)[::-1, None]  # row i reads row n-1-i's max
    _assert_equals_eager(shifted, x5x7)
    assert "one block per row" not in jax.jit(shifted, backend="cuda").lower(x5x7).as_text()


@pytest.mark.parametrize("shape", [(1, 2, 3), (2, 1, 3), (1, 4, 1, 3)], ids=str)
def test_a_row_group_over_rows_with_dims_of_size_1(shape):
    """Rows indexed over dims of size 1 too: each row's result lands at its own row (the
    size-1 dims take index 0, the others the row's index along them)."""
    x = rng.standard_normal(shape).astype(np.float32)
    for reduce in (jnp.sum, jnp.max):
        _assert_equals_eager(lambda x: reduce(x, axis=-1, keepdims=True), x)
    _assert_equals_eager(lambda x: jax.nn.softmax(x), x, rtol=1e-5)
    assert "one block per row" in jax.jit(
        lambda x: jnp.sum(x, axis=-1, keepdims=True), backend="cuda").lower(x).as_text()


x_special = np.array([[-2.5, -0.5, -0.0, 0.0, 0.5, 2.5, 1e9], [np.nan, np.inf, -np.inf,
                      3.0, -3.0, 8388607.5, -1.5]], np.float32)


@pytest.mark.task2_6
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32], ids=lambda d: d.__name__)
def test_max_min_and_sign_equal_eager(dtype):
    if dtype == np.float32:  # NaN either side, zeros of both signs, infinities
        a = np.array([[np.nan, 1.0, -0.0, 0.0, -np.inf], [2.0, np.nan, 0.0, -3.5, 7.0]], dtype)
    else:
        a = np.array([[0, 1, 7, 3, 9], [2, 0, 5, 5, 1]], dtype)
    b = a[::-1].copy()
    _assert_equals_eager(lambda a, b: (jnp.maximum(a, b), jnp.minimum(a, b), jnp.sign(a),
                                       jnp.maximum(a, 1)), a, b)


@pytest.mark.task2_6
def test_rounding_sign_and_abs_equal_eager():
    _assert_equals_eager(lambda x: (jnp.floor(x), jnp.ceil(x), jnp.sign(x), jnp.abs(x)),
                         x_special)
    _assert_equals_eager(lambda x: (jnp.floor(x), jnp.ceil(x)), x_special.astype(np.float64))
    _assert_equals_eager(lambda i: (jnp.sign(i), jnp.abs(i)), i23)


def test_integer_division_edge_cases():
    i = np.array([7, -7, 7, -7, 5, -5, 0], np.int32)
    j = np.array([2, 2, -2, -2, 0, -1, 0], np.int32)
    _assert_equals_eager(lambda i, j: (i // j, i % j, jax.lax.div(i, j), jax.lax.rem(i, j)),
                         i, j)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_shifts_equal_eager(dtype):
    x = np.array([1, -1, 5, -8, 12345, -2**31, 7, 3], np.int64).astype(dtype)
    amount = np.array([0, 1, 31, 2, 32, 33, -1, 4], np.int64).astype(dtype)
    lax = jax.lax
    _assert_equals_eager(lambda x, y: (lax.shift_left(x, y), lax.shift_right_logical(x, y),
                                       lax.shift_right_arithmetic(x, y)), x, amount)


# ------------------------------------------------------------------------------------------
# The tiled matmul: shapes spanning several tiles (4 x 4 under the simulator), both layouts
# ------------------------------------------------------------------------------------------

x9x7 = rng.standard_normal((9, 7)).astype(np.float32)
x7x5 = rng.standard_normal((7, 5)).astype(np.float32)


@pytest.mark.parametrize("name, f, args", [
    ("plain", lambda a, b: a @ b, (x9x7, x7x5)),
    ("x transposed", lambda a, b: a.T @ b, (x9x7.T.copy(), x7x5)),
    ("y transposed", lambda a, b: a @ b.T, (x9x7, x7x5.T.copy())),
    ("batched", lambda a, b: jnp.matmul(a, b), (np.stack([x9x7, -x9x7]), np.stack([x7x5] * 2))),
    ("empty contraction", lambda a, b: a @ b, (x9x7[:, :0].copy(), x7x5[:0].copy())),
], ids=lambda v: v if isinstance(v, str) else "")
def test_tiled_matmul_equals_numpy(name, f, args):
    compiled = jax.jit(f, backend="cuda")
    assert "x_tile = cuda.shared.array" in compiled.lower(*args).as_text()
    np.testing.assert_allclose(compiled(*args), f(*args), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Arrays on the GPU
# ------------------------------------------------------------------------------------------


def test_device_put_and_jit_results_stay_on_the_gpu():
    gpu = jax.devices("gpu")[0]
    assert jax.devices("cuda") == [gpu] and repr(gpu) == "CudaDevice(id=0)"
    x = jax.device_put(x23, gpu)
    assert x.devices() == {gpu} and x.device == gpu and x.shape == (2, 3)
    f = jax.jit(lambda v: v * v + 1.0)  # no backend given: it follows the data
    y = f(f(x))
    assert y.devices() == {gpu}
    assert x._host is None and y._host is None  # nothing was copied to the host
    assert y.block_until_ready() is y
    np.testing.assert_allclose(np.asarray(y), (x23 * x23 + 1) ** 2 + 1, rtol=1e-6)
    back = jax.device_put(y, jax.devices("cpu")[0])
    assert back.devices() == {jax.devices("cpu")[0]} and type(back) is jax.Array
    # committed: placed on the GPU, and what is computed from it (as in JAX); the host copy,
    # an array on one CPU device, is not (a documented difference)
    assert x.committed and y.committed and not back.committed
    assert jax.device_put(y) is y  # no device: it stays where it is, as in JAX


def test_a_deleted_gpu_array_raises_jax_s_error_on_every_use():
    x = jax.device_put(x23, jax.devices("gpu")[0])
    x.delete()
    x.delete()  # a second delete does nothing
    assert x.is_deleted() and x.shape == (2, 3)
    for use in (np.asarray, lambda a: a + 1, jax.jit(lambda a: a * 2),
                lambda a: jax.device_put(a, jax.devices("cpu")[0])):
        with pytest.raises(RuntimeError, match="deleted"):
            use(x)


def test_jit_on_host_inputs_with_the_cuda_backend_returns_gpu_arrays():
    out = jax.jit(lambda v: v + 1.0, backend="gpu")(x23)  # "gpu" is JAX's name for it
    assert out.devices() == {jax.devices("gpu")[0]}
    assert out.committed  # JAX leaves it uncommitted: see "Differences from JAX"
    np.testing.assert_allclose(out, x23 + 1.0)


def test_eager_ops_on_gpu_arrays_run_on_the_gpu():
    x = jax.device_put(x23, jax.devices("gpu")[0])
    y = jnp.tanh(x) * 2.0 + jnp.sum(x, axis=0)  # each op: a one-equation CUDA program
    assert y.devices() == {jax.devices("gpu")[0]} and x._host is None
    np.testing.assert_allclose(y, np.tanh(x23) * 2.0 + x23.sum(0), rtol=1e-6)
    g = jax.grad(lambda v: jnp.sum(jnp.sin(v) * v))(x)
    assert g.devices() == {jax.devices("gpu")[0]}
    np.testing.assert_allclose(g, np.cos(x23) * x23 + np.sin(x23), rtol=1e-5)
    assert repr(jnp.ones(2) + x[0, :2]).startswith("Array([")  # mixed: the GPU wins


def test_device_errors_are_clear():
    with pytest.raises(ValueError, match="expects a device such as jax.devices"):
        jax.device_put(x23, "gpu")  # a ValueError, as JAX's
    with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
        jax.devices("tpu")
    with pytest.raises(ValueError, match="Unknown backend 'tpu' for jit"):
        jax.jit(lambda v: v, backend="tpu")


def test_default_backend_from_configuration():
    x = jnp.asarray(x23)
    previous = jax.config.jax_default_backend
    try:
        jax.config.update("jax_default_backend", "cuda")
        assert jax.default_backend() == "gpu" and jax.devices() == jax.devices("gpu")
        assert jax.jit(lambda v: v * 2.0)(x).devices() == {jax.devices("gpu")[0]}
        assert jax.device_put(x).devices() == {jax.devices("gpu")[0]}
    finally:
        jax.config.update("jax_default_backend", previous)
    assert jax.default_backend() == "cpu"


def test_cuda_without_a_gpu_or_the_simulator_says_how_to_enable_it():
    script = ("import stage2_jit as jax\n"
              "try:\n    jax.devices('gpu')\nexcept RuntimeError as e:\n    print(e)\n"
              "try:\n    jax.jit(lambda x: x, backend='cuda')(1.0)\n"
              "except RuntimeError as e:\n    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if "CudaDevice" in done.stdout or not done.stdout:
        pytest.skip("this machine has a GPU")
    assert "NUMBA_ENABLE_CUDASIM=1" in done.stdout
    assert "Use backend='cpu' instead" in done.stdout


def test_regressions_found_by_the_laws_on_the_cuda_backend():
    # A full reduction over axes given out of order once unravelled the wrong dims.
    _assert_equals_eager(lambda x: jnp.min(x, axis=(1, 0)), x5x7)
    # The same operand twice (x @ x.T, x @ x) once made a kernel with a repeated parameter.
    _assert_equals_eager(lambda x: x @ x.T, x5x7)
    square = rng.standard_normal((4, 4)).astype(np.float32)
    _assert_equals_eager(lambda x: x @ x, square)
    # Integer scatter min/max, whose CPU form calls a kernel_math helper.
    _assert_equals_eager(lambda i: i.at[jnp.array([0, 0, 2])].max(jnp.int32(3)), i5x7)


# ------------------------------------------------------------------------------------------
# Loops and branches
# ------------------------------------------------------------------------------------------

lax = jax.lax
x6x3 = rng.standard_normal((6, 3)).astype(np.float32)

LOOPS = [
    ("scan_rnn", lambda xs, h: lax.scan(lambda c, x: (jnp.tanh(c * 0.5 + x), c.sum()), h, xs),
     (x6x3, y3)),
    ("scan_reverse_scalar_xs", lambda xs, h: lax.scan(
        lambda c, x: (c + x, c * x), 0.0, xs[:, 0], reverse=True), (x6x3, y3)),
    ("scan_no_xs", lambda xs, h: lax.scan(lambda c, _: (c * 0.9, c), h, None, length=4),
     (x6x3, y3)),
    ("fori_pytree_carry", lambda xs, h: lax.fori_loop(
        1, 5, lambda i, c: (c[0] + xs[i], c[1] * 1.5 + i), (h, 1.0)), (x6x3, y3)),
    ("while", lambda xs, h: lax.while_loop(lambda c: jnp.sum(jnp.abs(c)) < 50.0,
                                           lambda c: c * 2.0 + 0.5, h), (x6x3, y3)),
    ("switch", lambda xs, h: [lax.switch(i, [lambda v: v + 1.0, jnp.sin, lambda v: v * v], h)
                              for i in (0, 1, 2, 7)], (x6x3, y3)),
    ("cond_on_data", lambda xs, h: lax.cond(h.sum() > 0, lambda v: v - xs.sum(0),
                                            lambda v: v * 2.0, h), (x6x3, y3)),
    ("nested", lambda xs, h: lax.scan(
        lambda c, x: (lax.fori_loop(0, 2, lambda i, v: v * 0.5 + x, c), c.max()), h, xs),
     (x6x3, y3)),
]


@pytest.mark.parametrize("name, f, args", LOOPS, ids=[p[0] for p in LOOPS])
def test_loops_run_as_generated_cuda_code_and_equal_eager(name, f, args):
    jitted = jax.jit(f, backend="cuda")
    assert "def program(" in jitted.lower(*args).as_text()  # generated, not the host fallback
    _assert_equals_eager(f, *args)
    out = jax.tree_util.tree_leaves(jitted(*args))
    assert all(o.devices() == {jax.devices("gpu")[0]} for o in out)


def test_a_long_scan_is_one_host_loop_over_its_body_kernels():
    def source(n):
        f = lambda x: lax.fori_loop(0, n, lambda i, v: jnp.tanh(v) * 0.5 + x, x)
        return jax.jit(f, backend="cuda").lower(y3).as_text()
    short, long = source(10), source(10_000)
    assert long.replace("10000", "10") == short  # the trip count is the only difference
    assert len(re.findall(r"^def scan_body_\d+\(", long, re.M)) == 1
    assert re.search(r"^    for t\d+_i in range\(10000\):", long, re.M)
    assert "@cuda.jit" in long.split("def scan_body_")[0]  # the body's kernels


def test_default_device_gpu_places_new_arrays_device_put_and_jit_calls():
    host = np.arange(3, dtype=np.float32)
    with jax.default_device("gpu"):
        made, put = jnp.ones(3), jax.device_put(host)
        called = jax.jit(lambda x: x * 2.0)(host)
        eager = jnp.asarray(np.ones(3, np.float32)) + 1.0  # made on the GPU: stays there
        kept = jnp.ones(3, device=jax.devices("cpu")[0])  # a device given wins
    for x in (made, put, called, eager):
        assert x.devices() == {jax.devices("gpu")[0]}, x
    assert kept.devices() == {jax.devices("cpu")[0]}
    np.testing.assert_array_equal(np.asarray(called), host * 2.0)
    with jax.default_device(jax.devices("cpu")[0]):
        assert jax.jit(lambda x: x * 2.0)(host).devices() == {jax.devices("cpu")[0]}
