"""custom_jvp: its rule in forward mode, its transpose in reverse mode, one equation under jit.

Values are checked against hand-derived derivatives here; against JAX itself in
tests/differential/test_transforms_against_jax.py.
"""

import functools

import numpy as np
import pytest
import stage2_jit.numpy as jnp

import stage2_jit as jax


@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * jnp.where(x > 0, 1.0 / (1.0 + jnp.exp(-x)),
                                          jnp.exp(x) / (1.0 + jnp.exp(x)))


@jax.custom_jvp
def f(x, y):
    return jnp.sin(x) * y


@f.defjvp
def f_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot


def test_the_rule_is_used_where_autodiff_of_the_body_would_give_nan():
    assert float(jax.grad(log1pexp)(100.0)) == 1.0
    assert float(jax.jvp(log1pexp, (100.0,), (2.0,))[1]) == 2.0
    assert float(jax.jit(jax.grad(log1pexp))(100.0)) == 1.0
    assert float(jax.grad(jax.jit(log1pexp))(100.0)) == 1.0


@pytest.mark.parametrize("transform", ["eager", "jit", "grad_of_jit", "jit_of_grad"])
def test_gradients_in_every_order(transform):
    g = {"eager": jax.grad(f, (0, 1)), "jit": jax.jit(jax.grad(f, (0, 1))),
         "grad_of_jit": jax.grad(jax.jit(f), (0, 1)),
         "jit_of_grad": jax.jit(jax.grad(f, (0, 1)))}[transform]
    gx, gy = g(1.0, 2.0)
    np.testing.assert_allclose([gx, gy], [np.cos(1.0) * 2.0, np.sin(1.0)], rtol=1e-6)


def test_jvp_of_jit_and_second_order():
    _, t = jax.jvp(jax.jit(f), (1.0, 2.0), (1.0, 0.0))
    np.testing.assert_allclose(t, np.cos(1.0) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(jax.grad(f))(1.0, 2.0), -np.sin(1.0) * 2.0, rtol=1e-6)
    jax.check_grads(log1pexp, (jnp.array([0.5, -1.0, 3.0]),), order=2)
    jax.check_grads(f, (jnp.array([0.5, -1.0]), jnp.array([2.0, 0.3])), order=2)


def test_defjvps_sums_one_rule_per_argument():
    @jax.custom_jvp
    def product(x, y):
        return x * y

    product.defjvps(lambda x_dot, ans, x, y: x_dot * y, lambda y_dot, ans, x, y: x * y_dot)
    assert [float(g) for g in jax.grad(product, (0, 1))(2.0, 3.0)] == [3.0, 2.0]
    assert float(jax.jvp(product, (2.0, 3.0), (1.0, 1.0))[1]) == 5.0


def test_nondiff_argnums_are_passed_first_to_the_rule():
    @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
    def apply(fn, x):
        return fn(x)

    @apply.defjvp
    def apply_jvp(fn, primals, tangents):
        return apply(fn, primals[0]), 10.0 * tangents[0]

    assert float(jax.grad(lambda x: apply(jnp.sin, x))(1.0)) == 10.0


CUSTOM_JVP_JAXPR = """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = custom_jvp_call[
      call_jaxpr={ lambda ; a:f32[] b:f32[]. let
          c:f32[] = sin a
          d:f32[] = mul c b
        in (d,) }
      jvp=f_jvp
      name=f
      symbolic_zeros=False
    ] a b
  in (c,) }"""


def test_one_equation_under_jit_that_keeps_the_rule():
    closed = jax.make_jaxpr(f)(1.0, 2.0)
    (eqn,) = closed.jaxpr.eqns
    assert eqn.primitive.name == "custom_jvp_call"
    assert eqn.params["jvp"].__name__ == "f_jvp" and eqn.params["name"] == "f"
    assert [e.primitive.name for e in eqn.params["call_jaxpr"].jaxpr.eqns] == ["sin", "mul"]
    text = str(closed)
    for line in ("custom_jvp_call[", "jvp=f_jvp", "name=f", "symbolic_zeros=False"):
        assert line in text
    assert "num_consts" not in text  # JAX shows no such param
    assert CUSTOM_JVP_JAXPR.count("custom_jvp_call") == text.count("custom_jvp_call")


def test_a_rule_that_is_not_linear_in_tangents_cannot_be_transposed():
    @jax.custom_jvp
    def square(x):
        return x * x

    square.defjvp(lambda p, t: (square(p[0]), t[0] * t[0]))
    assert float(jax.jvp(square, (2.0,), (3.0,))[1]) == 9.0  # forward mode just runs it
    with pytest.raises(TypeError, match=r"not linear in the tangents.*mul"):
        jax.grad(square)(2.0)


def test_rule_errors_name_the_function():
    @jax.custom_jvp
    def g(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function g"):
        g(1.0)
    g.defjvp(lambda p, t: p[0])
    with pytest.raises(TypeError, match="must produce a pair"):
        jax.jvp(g, (1.0,), (1.0,))
    g.defjvp(lambda p, t: (p[0], jnp.ones(3)))
    with pytest.raises(TypeError, match="corresponding shapes and dtypes"):
        jax.jvp(g, (1.0,), (1.0,))
    with pytest.raises(NotImplementedError, match="symbolic_zeros"):
        g.defjvp(lambda p, t: (p, t), symbolic_zeros=True)
