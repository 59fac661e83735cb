"""The CPU backend: generated Numba kernels equal the interpreter, fuse, keep float32 math,
and share one kernel across shapes (the cache on disk: test_kernel_cache.py).

The equality tests also run on the cuda backend (see ``backend_under_test.py``)."""

import re

import numpy as np
import pytest
from backend_under_test import BACKEND, cpu_only, generated_executable_type
from stage2_jit.codegen_cpu import generate_source

import stage2_jit as jax
from stage2_jit import numpy as jnp


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layernorm(x):
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    return centered / jnp.sqrt((centered * centered).mean(-1, keepdims=True) + 1e-5)


PROGRAMS = {
    "fused elementwise": lambda x: x * x + x * 2.0,
    "broadcast rows": lambda x: x - jnp.arange(x.shape[1], dtype=jnp.float32),
    "where and comparisons": lambda x: jnp.where(x > 0.5, jnp.exp(x), -x),
    "full sum": lambda x: jnp.sum(jnp.tanh(x)),
    "max over axis 0": lambda x: x.max(axis=0),
    "softmax": softmax,
    "layernorm": layernorm,
    "matmul of transposes": lambda x: x.T @ x + 1.0,
    "slices and reversal": lambda x: x[::2, ::-1] * 3.0,
    "integer ops": lambda x: (x * 10).astype(jnp.int32) + 3,
    "0-d input and output": lambda x: jnp.mean(x) * 2.0,
    "gradient": jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_cpu_equals_interpreter(name):
    fun = PROGRAMS[name]
    x = jnp.asarray(np.random.default_rng(0).random((6, 5), dtype=np.float32))
    expected = jax.jit(fun, backend="interpreter")(x)
    compiled = jax.jit(fun, backend=BACKEND)
    out = compiled(x)
    assert isinstance(compiled.lower(x).compile()._executable, generated_executable_type())
    assert out.dtype == expected.dtype and out.weak_type == expected.weak_type
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-6)


def _loops(source: str) -> int:
    """Outermost loops of a kernel (one per pass over memory)."""
    return len(re.findall(r"^    for \w+ in p?range\(", source, flags=re.MULTILINE))


@cpu_only
def test_elementwise_chain_is_one_loop_and_softmax_a_few_passes():
    x = jnp.ones((4, 3))
    fused, _ = generate_source(jax.make_jaxpr(PROGRAMS["fused elementwise"])(x).jaxpr)
    assert _loops(fused) == 1
    passes, _ = generate_source(jax.make_jaxpr(softmax)(x).jaxpr)
    # One loop over rows; inside it, three passes over the row: max, exp with its sum
    # (fuse_inner_loops), divide.
    assert _loops(passes) == 1
    assert len(re.findall(r"^        for \w+ in range\(", passes, flags=re.MULTILINE)) == 3
    # The exponentials live in the output's row, and the kernel allocates no full-size array:
    # the result is allocated by the runtime and passed in after the input (issue 17).
    assert len(re.findall(r"np\.empty\(\(d\d, d\d,\)", passes)) == 0
    assert re.search(r"^def program\(dims, in0, v\d+\):$", passes, flags=re.MULTILINE)


def _normalized(e):
    return e / e.sum(-1, keepdims=True)


ROW_VALUE_PROGRAMS = {  # name: (function, whether its row value can live in an output row)
    "softmax": (softmax, True),
    "layer norm": (layernorm, True),
    "two outputs read it, the second one last":
        (lambda x: (lambda e: (_normalized(e), e * 2.0))(jnp.exp(x - x.max(-1, keepdims=True))),
         True),
    "read at another element": (lambda x: (lambda e: _normalized(e)[:, ::-1] + e)(jnp.exp(x)),
                                False),
    "a reversed row": (lambda x: (lambda e: e[:, ::-1] / e.sum(-1, keepdims=True))(jnp.exp(x)),
                       False),
}


@cpu_only
@pytest.mark.parametrize("name", ROW_VALUE_PROGRAMS)
def test_a_row_value_lives_in_an_output_row_only_where_no_later_read_needs_it(name):
    fun, in_output = ROW_VALUE_PROGRAMS[name]
    x = jnp.asarray(np.random.default_rng(1).standard_normal((8, 33), dtype=np.float32))
    source, _ = generate_source(jax.make_jaxpr(fun)(x).jaxpr)
    assert ("# one row" not in source) == in_output, source
    for ours, eager in zip(jax.tree_leaves(jax.jit(fun, backend="cpu")(x)),
                           jax.tree_leaves(fun(x))):
        np.testing.assert_allclose(ours, eager, rtol=2e-6, atol=1e-7)


def test_a_reduction_joins_the_loop_before_it_only_where_that_loop_wrote():
    from stage2_jit.codegen_cpu import fuse_inner_loops
    exp = ["# g = exp f", "for i1 in range(d1):", "    v2[i0, i1] = exp_f32(in0[i0, i1])"]
    total = ["# h = reduce_sum g", "v3_acc = np.float32(0)", "for i1 in range(d1):",
             "    v3_acc = add_reassoc(v3_acc, v2[i0, i1])", "v3[i0] = v3_acc"]
    assert fuse_inner_loops(exp, total) == [
        "# g = exp f", "# h = reduce_sum g", "v3_acc = np.float32(0)", "for i1 in range(d1):",
        "    v2[i0, i1] = exp_f32(in0[i0, i1])",
        "    v3_acc = add_reassoc(v3_acc, v2[i0, i1])", "v3[i0] = v3_acc"]
    reversed_read = [*total[:3], "    v3_acc = add_reassoc(v3_acc, v2[i0, d1 - 1 - i1])",
                     total[-1]]
    assert fuse_inner_loops(exp, reversed_read) is None  # it would read what is not written
    other_range = [*total[:2], "for i1 in range(d2):", *total[3:]]
    assert fuse_inner_loops(exp, other_range) is None


@cpu_only
def test_float32_programs_use_typed_constants():
    source, _ = generate_source(jax.make_jaxpr(layernorm)(jnp.ones((4, 3))).jaxpr)
    code = "\n".join(line.split("#")[0] for line in source.splitlines())
    bare_floats = re.findall(r"(?<![\w.(])\d+\.\d+", code)
    assert "np.float32(" in code and not bare_floats
    assert "float64" not in code


def powers(x):
    return (jax.nn.sigmoid(x), x ** 3, x ** -2, x ** 0, x ** 1, x ** -1)


def _rule_lines(source: str) -> list[str]:
    """The kernel lines that compute logistic and integer_pow: each follows the comment that
    shows its equation."""
    lines = [line.strip() for line in source.splitlines()]
    return [lines[i + 1] for i, line in enumerate(lines)
            if line.startswith("#") and ("= logistic" in line or "= integer_pow" in line)]


@pytest.mark.task2_5
@cpu_only
def test_logistic_and_integer_pow_are_expressions_of_typed_constants():
    source, _ = generate_source(jax.make_jaxpr(powers)(jnp.ones(3)).jaxpr)
    ours = _rule_lines(source)
    assert len(ours) == 6 and "logistic_f32(" in ours[0]
    # No number outside np.float32(...): a bare 1 would make Numba compute in int64 or float64.
    untyped = [re.sub(r"np\.float32\([^()]*\)", "", line) for line in ours]
    assert [re.findall(r"(?<!\w)\d", line) for line in untyped] == [[]] * 6


@pytest.mark.task2_5
@cpu_only
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logistic_and_integer_pow_equal_eager(dtype):
    jax.config.update("jax_enable_x64", dtype == "float64")
    try:
        x = jnp.asarray(np.array([0.5, 1.5, -2.0, 3.0]), dtype)
        compiled = jax.jit(powers, backend="cpu")
        for got, want in zip(compiled(x), powers(x)):
            assert got.dtype == want.dtype == x.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)
        if dtype == "float64":  # the formula with np.exp: no float32 helper for float64
            source = compiled.lower(x).as_text().split("# generated source")[1]
            assert "np.exp(" in _rule_lines(source)[0]
    finally:
        jax.config.update("jax_enable_x64", False)


@cpu_only
def test_one_kernel_serves_every_shape_of_a_rank():
    def source(shape):
        return generate_source(jax.make_jaxpr(softmax)(jnp.ones(shape)).jaxpr)[0]
    assert source((3, 40)) == source((50, 70)) == source((2, 17))
    # rows of at most 16 elements add in order (codegen_cpu.reduces_in_order): another kernel
    short = source((3, 4))
    assert short == source((50, 16)) != source((3, 40))
    assert "add_reassoc(" not in short and "max_reassoc(" not in short


def test_unsupported_primitive_falls_back_to_the_interpreter(capsys):
    def noisy(x):
        jax.debug.print("x = {}", x)  # an effect: the CPU backend generates no code for it
        return x * 2.0

    fun = jax.jit(noisy, backend=BACKEND)
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(fun(x), x * 2.0)
    assert "x = [0. 1. 2.]" in capsys.readouterr().out  # the effect still happens
    assert "Not generated" in fun.lower(x).as_text()


@cpu_only
def test_lowered_text_shows_jaxpr_and_generated_source():
    text = jax.jit(lambda x: x * 2.0, backend="cpu").lower(jnp.ones(3)).as_text()
    assert "{ lambda ; a:f32[3]." in text and "@njit(parallel=False" in text
    large = jax.jit(lambda x: x * 2.0, backend="cpu").lower(jnp.ones(100_000)).as_text()
    assert "@njit(parallel=True" in large and "prange(" in large
