"""custom_vjp under jit: one ``custom_vjp_call`` equation that keeps the user's rule.

The rules here give gradients that differ from the true ones (scaled, clipped), so a test
fails if jit differentiated the function's own operations instead of calling ``bwd``. The
law: every combination of jit and grad gives what eager grad gives.
"""

import numpy as np
import pytest
from stage2_jit.abstract_eval import abstract_eval_rules
from stage2_jit.jaxpr import ClosedJaxpr, Jaxpr
from stage2_jit.passes import cse, dce
from stage2_jit.tracing import eval_jaxpr, typecheck_jaxpr

import stage2_jit as jax
from stage2_jit import numpy as jnp

# ------------------------------------------------------------------------------------------
# Functions with rules that are deliberately not their true derivatives
# ------------------------------------------------------------------------------------------


@jax.custom_vjp
def scaled_sin(x):
    return jnp.sin(x)


def scaled_sin_fwd(x):
    return jnp.sin(x), jnp.cos(x)  # an array residual


def scaled_sin_bwd(cos_x, ct):
    return (10.0 * cos_x * ct,)  # ten times the true gradient


scaled_sin.defvjp(scaled_sin_fwd, scaled_sin_bwd)


@jax.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, ct: (jnp.clip(ct, -1.0, 1.0),))


@jax.custom_vjp
def weighted(inputs):
    """A pytree in, a pytree out; residuals are a tuple of arrays."""
    a, b = inputs["a"], inputs["b"]
    return {"prod": a * b, "exp": jnp.exp(a)}


def weighted_fwd(inputs):
    a, b = inputs["a"], inputs["b"]
    return weighted(inputs), (a, b, jnp.exp(a))


def weighted_bwd(residuals, ct):
    a, b, exp_a = residuals
    # The true cotangents, each doubled.
    ct_a = 2.0 * (ct["prod"] * b + ct["exp"] * exp_a)
    return ({"a": ct_a, "b": 2.0 * ct["prod"] * a},)


weighted.defvjp(weighted_fwd, weighted_bwd)


def f(x):
    return 3.0 * scaled_sin(x) + 5.0 * clip_gradient(x)  # clip's ct is 5.0, clipped to 1.0


def true_grad_of_f(x):
    return 3.0 * np.cos(x) + 5.0


def custom_grad_of_f(x):
    return 30.0 * np.cos(x) + 1.0


def loss(inputs):
    out = weighted(inputs)
    return jnp.sum(out["prod"]) + jnp.sum(out["exp"])


def pytree_inputs():
    return {"a": jnp.array([0.5, -1.0, 2.0]), "b": jnp.array([1.5, 2.0, -0.5])}


X = 0.7

# ------------------------------------------------------------------------------------------
# Every order of jit and grad uses the rule
# ------------------------------------------------------------------------------------------

GRADS_OF_F = {
    "grad": jax.grad(f),
    "grad(jit)": jax.grad(jax.jit(f)),
    "jit(grad)": jax.jit(jax.grad(f)),
    "jit(grad(jit))": jax.jit(jax.grad(jax.jit(f))),
    "grad(jit(jit))": jax.grad(jax.jit(jax.jit(f))),
    "jit(jit(grad))": jax.jit(jax.jit(jax.grad(f))),
    "jit inside grad": jax.grad(lambda x: jax.jit(f)(x) - jnp.sin(x)),
}


@pytest.mark.parametrize("name", sorted(GRADS_OF_F))
def test_every_order_of_jit_and_grad_uses_the_custom_rule(name):
    got = float(GRADS_OF_F[name](X))
    shift = np.cos(X) if name == "jit inside grad" else 0.0
    np.testing.assert_allclose(got, custom_grad_of_f(X) - shift, rtol=1e-6)
    assert not np.isclose(got, true_grad_of_f(X) - shift)


@pytest.mark.parametrize("x", [-2.0, 0.3, 1.1])
def test_jit_equals_eager(x):
    np.testing.assert_allclose(jax.jit(f)(x), f(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(jax.jit(f))(x), jax.grad(f)(x), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x), jax.grad(f)(x), rtol=1e-6)


def test_value_and_grad_under_jit():
    value, slope = jax.jit(jax.value_and_grad(f))(X)
    np.testing.assert_allclose(value, f(X), rtol=1e-6)
    np.testing.assert_allclose(slope, custom_grad_of_f(X), rtol=1e-6)
    value, slope = jax.value_and_grad(jax.jit(f))(X)
    np.testing.assert_allclose(value, f(X), rtol=1e-6)
    np.testing.assert_allclose(slope, custom_grad_of_f(X), rtol=1e-6)


def test_vjp_of_jit_uses_the_custom_rule():
    x = jnp.array([0.1, 0.2, 0.3])
    y, pullback = jax.vjp(jax.jit(scaled_sin), x)
    (ct,) = pullback(jnp.ones(3))
    np.testing.assert_allclose(y, np.sin([0.1, 0.2, 0.3]), rtol=1e-6)
    np.testing.assert_allclose(ct, 10.0 * np.cos([0.1, 0.2, 0.3]), rtol=1e-6)


def test_second_order_differentiates_the_bwd_rule_as_eager_does():
    want = jax.grad(jax.grad(scaled_sin))(X)  # the derivative of 10 cos x
    np.testing.assert_allclose(want, -10.0 * np.sin(X), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(jax.grad(jax.jit(scaled_sin)))(X), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(jax.grad(scaled_sin)))(X), want, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Pytrees and residuals
# ------------------------------------------------------------------------------------------


def test_pytree_inputs_outputs_and_array_residuals():
    inputs = pytree_inputs()
    a, b = np.asarray(inputs["a"]), np.asarray(inputs["b"])
    want = {"a": 2.0 * (b + np.exp(a)), "b": 2.0 * a}
    for grad_fn in (jax.grad(loss), jax.grad(jax.jit(loss)), jax.jit(jax.grad(loss))):
        got = grad_fn(inputs)
        assert sorted(got) == ["a", "b"]
        for key in want:
            np.testing.assert_allclose(got[key], want[key], rtol=1e-6)


def test_jitted_call_returns_the_pytree_of_the_eager_call():
    inputs = pytree_inputs()
    got, want = jax.jit(weighted)(inputs), weighted(inputs)
    assert jax.tree_structure(got) == jax.tree_structure(want)
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_a_closed_over_array_is_an_operand_and_the_rule_still_applies():
    table = jnp.array([1.0, 2.0, 3.0])  # not a scalar, so a constant of the program

    def g(x):
        @jax.custom_vjp
        def scale(x):
            return x * table

        scale.defvjp(lambda x: (x * table, None), lambda _, ct: (-ct,))
        return jnp.sum(scale(x))

    (eqn,) = [e for e in jax.make_jaxpr(g)(jnp.ones(3)).jaxpr.eqns
              if e.primitive.name == "custom_vjp_call"]
    assert eqn.params["num_consts"] == 1 and len(eqn.invars) == 2
    np.testing.assert_allclose(jax.jit(g)(jnp.ones(3)), 6.0)
    np.testing.assert_allclose(jax.grad(jax.jit(g))(jnp.ones(3)), [-1.0, -1.0, -1.0])


def test_differentiating_a_closed_over_value_through_jit_says_what_to_do():
    def outer(y):
        @jax.custom_vjp
        def times_y(x):
            return x * y

        times_y.defvjp(lambda x: (x * y, None), lambda _, ct: (ct * y,))
        return jax.jit(times_y)(jnp.array([1.0, 2.0]))

    with pytest.raises(TypeError, match=r"times_y.*closes over.*as an argument"):
        jax.grad(lambda y: jnp.sum(outer(y)))(jnp.array([3.0, 4.0]))


def test_jits_backward_program_computes_only_the_cotangents_asked_for():
    """jit's VJP skips inputs that are not differentiated, so a custom_vjp function closing
    over a jit-level constant is not "differentiated with respect to" it."""
    def g(x, y):
        return jnp.sin(x) * y

    closed = jax.make_jaxpr(jax.grad(jax.jit(g)))(1.0, 2.0)
    backward = closed.jaxpr.eqns[-1]
    assert backward.params["name"] == "vjp(g)" and len(backward.outvars) == 1
    both = jax.grad(jax.jit(g), argnums=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose(both, (2.0 * np.cos(1.0), np.sin(1.0)), rtol=1e-6)


def test_integer_arguments_get_no_cotangent():
    @jax.custom_vjp
    def power(x, n):
        return x ** n

    power.defvjp(lambda x, n: (x ** n, (x, n)), lambda res, ct: (ct * 7.0, 0))
    np.testing.assert_allclose(jax.grad(jax.jit(power))(2.0, 3), 7.0)
    np.testing.assert_allclose(jax.jit(jax.grad(power))(2.0, 3), 7.0)


# ------------------------------------------------------------------------------------------
# The equation
# ------------------------------------------------------------------------------------------

SCALED_SIN_JAXPR = """\
{ lambda ; a:f32[]. let
    b:f32[] = custom_vjp_call[
      name=scaled_sin
      bwd=scaled_sin_bwd
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }
      fwd=scaled_sin_fwd
      symbolic_zeros=False
    ] a
    e:f32[] = mul 2.0:f32[] b
  in (e,) }"""  # as JAX 0.10.2 prints it


def test_the_printed_equation():
    text = str(jax.make_jaxpr(lambda x: 2.0 * scaled_sin(x))(1.0))
    assert text == SCALED_SIN_JAXPR


def test_make_jaxpr_shows_one_equation_that_keeps_the_rules():
    closed = jax.make_jaxpr(scaled_sin)(jnp.ones(3))
    (eqn,) = closed.jaxpr.eqns
    assert eqn.primitive.name == "custom_vjp_call"
    assert isinstance(eqn.params["call_jaxpr"], ClosedJaxpr)
    assert [e.primitive.name for e in eqn.params["call_jaxpr"].jaxpr.eqns] == ["sin"]
    assert eqn.params["fwd"].__name__ == "scaled_sin_fwd"
    assert eqn.params["bwd"].__name__ == "scaled_sin_bwd"
    assert [v.aval.str_short() for v in eqn.outvars] == ["f32[3]"]


@pytest.mark.task2_2
def test_the_jaxpr_typechecks_and_evaluates():
    closed = jax.make_jaxpr(f)(X)
    typecheck_jaxpr(closed.jaxpr)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, [jnp.float32(X)])
    np.testing.assert_allclose(out, f(X), rtol=1e-6)


@pytest.mark.task2_2
def test_grad_of_eval_jaxpr_uses_the_rule():
    closed = jax.make_jaxpr(f)(X)
    slope = jax.grad(lambda x: eval_jaxpr(closed.jaxpr, closed.consts, [x])[0])(X)
    np.testing.assert_allclose(slope, custom_grad_of_f(X), rtol=1e-6)


def test_an_ill_typed_operand_is_caught():
    (eqn,) = jax.make_jaxpr(scaled_sin)(jnp.ones(3)).jaxpr.eqns
    shape = eqn.params["call_jaxpr"].in_avals[0]._replace(shape=(4,))
    with pytest.raises(TypeError, match=r"custom_vjp_call\[scaled_sin\].*f32\[4\].*f32\[3\]"):
        abstract_eval_rules[eqn.primitive](shape, **eqn.params)


# ------------------------------------------------------------------------------------------
# Passes: the call is pure, and two calls with different rules stay apart
# ------------------------------------------------------------------------------------------


@pytest.mark.task2_4
def test_dce_drops_an_unused_call_and_keeps_a_used_one():
    def g(x):
        scaled_sin(x)  # its result is never used
        return clip_gradient(x) * 2.0

    kept = dce(jax.make_jaxpr(g)(X).jaxpr)
    names = [(e.primitive.name, e.params.get("name")) for e in kept.eqns]
    assert names == [("custom_vjp_call", "clip_gradient"), ("mul", None)]


def _repeat_first_equation(jaxpr: Jaxpr, **new_params) -> Jaxpr:
    """The program with its first equation done twice (the copy with ``new_params``), and
    both results returned."""
    eqn = jaxpr.eqns[0]
    copy = eqn._replace(params=dict(eqn.params, **new_params),
                        outvars=[type(v)(v.aval) for v in eqn.outvars])
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [*eqn.outvars, *copy.outvars], [eqn, copy])


def test_cse_merges_the_same_call_twice():
    twice = _repeat_first_equation(jax.make_jaxpr(scaled_sin)(X).jaxpr)
    merged = cse(twice)
    assert len(merged.eqns) == 1
    assert merged.outvars[0] is merged.outvars[1]


def test_cse_keeps_calls_with_different_rules_apart():
    jaxpr = jax.make_jaxpr(scaled_sin)(X).jaxpr
    other_bwd = _repeat_first_equation(jaxpr, bwd=lambda res, ct: (ct,))
    other_fwd = _repeat_first_equation(jaxpr, fwd=lambda x: (jnp.sin(x), None))
    assert len(cse(other_bwd).eqns) == 2
    assert len(cse(other_fwd).eqns) == 2


def test_two_calls_of_the_same_function_keep_their_own_rules_through_jit():
    @jax.custom_vjp
    def ident(x):
        return x

    ident.defvjp(lambda x: (x, None), lambda _, ct: (3.0 * ct,))

    def g(x):
        return scaled_sin(x) + ident(jnp.sin(x))

    want = 10.0 * np.cos(X) + 3.0 * np.cos(X)
    np.testing.assert_allclose(jax.grad(jax.jit(g))(X), want, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Forward mode is still refused
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["jvp(jit)", "jit(jvp)"])
def test_jvp_under_jit_still_says_to_use_reverse_mode(order):
    def jvp_of(fun):
        return lambda x: jax.jvp(fun, (x,), (1.0,))

    fun = jvp_of(jax.jit(f)) if order == "jvp(jit)" else jax.jit(jvp_of(f))
    with pytest.raises(TypeError, match=r"jvp.*custom_vjp.*grad or vjp"):
        fun(X)


def test_cpu_backend_inlines_the_forward_program_and_keeps_the_rule():
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x) * 2.0

    f.defvjp(lambda x: (f(x), x), lambda r, ct: (ct * 10.0,))
    g = jax.jit(lambda x: f(x) + 1.0, backend="cpu")
    x = jnp.arange(4.0)
    np.testing.assert_allclose(g(x), np.sin(np.arange(4.0)) * 2.0 + 1.0, rtol=1e-6)
    assert "Not generated" not in g.lower(x).as_text()
    grad = jax.grad(lambda x: jnp.sum(jax.jit(f, backend="cpu")(x)))(x)
    np.testing.assert_allclose(grad, np.full(4, 10.0))
