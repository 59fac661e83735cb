"""pure_callback: a Python function called on the host, eagerly and on every call of a jitted
program, its results checked against the declared types; refused by differentiation unless
custom_jvp or custom_vjp gives the derivative.

Laws here (jit equals eager, once per call); JAX's values, text, vmap methods and errors in
tests/differential/test_pure_callback_against_jax.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from stage2_jit.callback import pure_callback_p
from stage2_jit.coverage import CPU_FALLBACK, CUDA_MISSING
from stage2_jit.passes import optimize

import stage2_jit as jax

S = jax.ShapeDtypeStruct


def host_sinc(x):
    assert type(x) is np.ndarray  # the callback gets NumPy arrays, never tracers
    return np.sinc(x)


def sinc(x):
    return jax.pure_callback(host_sinc, S(jnp.shape(x), jnp.result_type(x)), x)


class Counting:
    """A callback that counts its calls and the shapes it was given."""

    def __init__(self, fun):
        self.fun, self.shapes = fun, []

    def __call__(self, *args):
        self.shapes.append(tuple(np.shape(a) for a in args))
        return self.fun(*args)


# ------------------------------------------------------------------------------------------
# Laws: jit equals eager, and the callback runs on every call
# ------------------------------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-4, 4, width=32), min_size=0, max_size=6))
def test_jit_equals_eager_equals_numpy(values):
    x = jnp.asarray(np.array(values, np.float32))
    expected = np.sinc(np.asarray(x))
    for f in (sinc, jax.jit(sinc), jax.jit(lambda x: sinc(x) * 1.0)):
        out = f(x)
        assert out.dtype == np.float32 and not out.weak_type
        np.testing.assert_array_equal(np.asarray(out), expected)


def test_a_jitted_callback_runs_on_every_call_even_on_constants():
    counting = Counting(lambda x: np.asarray(x) + 1)
    f = jax.jit(lambda x: jax.pure_callback(counting, S((), np.float32), 2.0) * x)
    for _ in range(3):
        assert float(f(1.0)) == 3.0
    assert counting.shapes == [((),)] * 3  # never folded into the program at compile time


def test_an_unused_callback_is_dropped_as_dead_code():
    counting = Counting(np.sin)
    f = jax.jit(lambda x: (jax.pure_callback(counting, S((), np.float32), x), x * 2)[1])
    assert float(f(1.0)) == 2.0 and counting.shapes == []
    assert "pure_callback" in str(jax.make_jaxpr(f)(1.0))  # traced, then removed


def test_pytrees_in_and_out_and_keyword_arguments():
    def host(xs, *, scale):
        return {"sum": xs[0] + xs[1] * scale, "n": np.int32(len(xs))}
    out_type = {"sum": S((2,), np.float32), "n": S((), np.int32)}
    run = jax.jit(lambda a, b: jax.pure_callback(host, out_type, (a, b), scale=np.float32(3)))
    out = run(jnp.ones(2), jnp.arange(2.0))
    np.testing.assert_array_equal(np.asarray(out["sum"]), [1.0, 4.0])
    assert int(out["n"]) == 2 and out["n"].dtype == np.int32


def test_arrays_declare_results_as_shape_dtype_structs_do():
    out = jax.pure_callback(lambda x: x * 2, jnp.zeros(3), jnp.ones(3))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])


def test_no_results_and_no_operands():
    assert jax.pure_callback(lambda: None, None) is None
    assert jax.pure_callback(lambda x: (), (), jnp.ones(2)) == ()
    out = jax.jit(lambda: jax.pure_callback(lambda: np.float32(7), S((), np.float32)))()
    assert float(out) == 7.0


def test_python_numbers_and_float64_results_are_taken_at_the_default_width():
    out = jax.pure_callback(lambda x: 1.5, S((), np.float32), 0.0)
    assert out.dtype == np.float32 and float(out) == 1.5
    out = jax.jit(lambda x: jax.pure_callback(lambda x: np.zeros(3), S((3,), np.float32), x))(
        jnp.ones(3))
    assert out.dtype == np.float32


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("result, message", [
    (np.zeros(4, np.float32), r"Incorrect output shape for return value #0: Expected: "
                              r"\(3,\), Actual: \(4,\)"),
    (np.zeros(3, np.int32), "Incorrect output dtype for return value #0: Expected: float32, "
                            "Actual: int32"),
    ((np.zeros(3, np.float32),) * 2, "Mismatched number of outputs from callback. "
                                     "Expected: 1, Actual: 2"),
])
def test_results_that_are_not_as_declared_are_errors(jit, result, message):
    def f(x):
        return jax.pure_callback(lambda x: result, S((3,), np.float32), x)
    with pytest.raises(RuntimeError, match=message):
        (jax.jit(f) if jit else f)(jnp.ones(3))


def test_a_64_bit_result_type_without_x64_is_refused():
    with pytest.raises(ValueError, match="cannot specify 64-bit types"):
        jax.pure_callback(np.sin, S((), np.float64), 1.0)


def test_an_unknown_vmap_method_is_refused():
    with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
        jax.pure_callback(np.sin, S((), np.float32), 1.0, vmap_method="vectorized")


@pytest.mark.parametrize("transform", [
    lambda f: jax.grad(f)(1.0),
    lambda f: jax.jvp(f, (1.0,), (1.0,)),
    lambda f: jax.grad(jax.jit(f))(1.0),
    lambda f: jax.jit(jax.grad(f))(1.0),
])
def test_differentiating_a_callback_is_refused(transform):
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP.*custom_jvp"):
        transform(sinc)


# ------------------------------------------------------------------------------------------
# custom_jvp and custom_vjp give it a derivative
# ------------------------------------------------------------------------------------------


@jax.custom_jvp
def host_sin(x):
    return jax.pure_callback(np.sin, S(jnp.shape(x), jnp.result_type(x)), x)


@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    cos = jax.pure_callback(np.cos, S(jnp.shape(x), jnp.result_type(x)), x)
    return host_sin(x), cos * x_dot


@jax.custom_vjp
def host_exp(x):
    return jax.pure_callback(np.exp, S(jnp.shape(x), jnp.result_type(x)), x)


host_exp.defvjp(lambda x: (host_exp(x), host_exp(x)), lambda e, ct: (e * ct,))


@pytest.mark.parametrize("jit", [False, True])
def test_custom_derivatives_around_a_callback(jit):
    wrap = jax.jit if jit else (lambda f: f)
    np.testing.assert_allclose(float(wrap(jax.grad(host_sin))(0.5)), np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(float(wrap(jax.grad(host_exp))(0.5)), np.exp(0.5), rtol=1e-6)
    _, t = jax.jvp(host_sin, (0.5,), (2.0,))
    np.testing.assert_allclose(float(t), 2 * np.cos(0.5), rtol=1e-6)


# ------------------------------------------------------------------------------------------
# The program
# ------------------------------------------------------------------------------------------


def test_one_equation_printed_with_jax_params():
    text = str(jax.make_jaxpr(sinc)(jnp.ones(3)))
    assert "b:f32[3] = pure_callback[" in text
    for line in ("callback=_FlatCallback(callback_func=<function host_sinc at 0xXXXXXXXXXXXX>, "
                 "in_tree=PyTreeDef(((*,), {})))",
                 "result_avals=(ShapedArray(float32[3]),)", "sharding=None",
                 "vmap_method=None"):
        assert line in text


def test_the_program_runs_on_the_interpreter_and_is_not_folded():
    assert pure_callback_p in CPU_FALLBACK and pure_callback_p in CUDA_MISSING
    closed = jax.make_jaxpr(lambda: jax.pure_callback(np.sin, S((), np.float32), 1.0))()
    assert [e.primitive for e in optimize(closed).jaxpr.eqns] == [pure_callback_p]


def test_equal_calls_have_equal_params():
    """The same function on arguments of the same structure: equal params, so a jitted
    function that calls it is traced once per type."""
    first = jax.make_jaxpr(sinc)(1.0).jaxpr.eqns[0].params
    second = jax.make_jaxpr(sinc)(2.0).jaxpr.eqns[0].params
    assert first == second and hash(tuple(first.items())) == hash(tuple(second.items()))
