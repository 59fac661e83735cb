"""checkpoint / remat: values unchanged, the forward pass recomputed in the backward pass
(counted in the jaxpr of grad), and policies that save some values instead."""

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from stage2_jit.ad_checkpoint import checkpoint_name

import stage2_jit as jax
from stage2_jit import ad_checkpoint


def sin_sin(x):
    return jnp.sin(jnp.sin(x))


def _names(closed_jaxpr) -> list[str]:
    return [e.primitive.name for e in closed_jaxpr.jaxpr.eqns]


def _count(jaxpr, name: str) -> int:
    """Equations named ``name``, inside nested programs too."""
    n = 0
    for eqn in jaxpr.eqns:
        n += eqn.primitive.name == name
        inner = eqn.params.get("jaxpr")
        if inner is not None and hasattr(inner, "jaxpr"):
            n += _count(inner.jaxpr, name)
    return n


def test_checkpoint_and_remat_are_one_function_with_values_unchanged():
    assert jax.remat is jax.checkpoint
    g = jax.checkpoint(sin_sin)
    x = jnp.array([0.3, 1.0, 2.0])
    np.testing.assert_allclose(g(x), sin_sin(x))
    grad_plain = jax.grad(lambda x: sin_sin(x).sum())(x)
    for grad in (jax.grad(lambda x: g(x).sum()), jax.jit(jax.grad(lambda x: g(x).sum()))):
        np.testing.assert_allclose(grad(x), grad_plain, rtol=1e-6)
    np.testing.assert_allclose(jax.jvp(g, (x,), (jnp.ones(3),))[1],
                               jax.jvp(sin_sin, (x,), (jnp.ones(3),))[1], rtol=1e-6)
    jax.check_grads(g, (x,), order=2)


def test_the_jaxpr_shows_remat2_as_jax_does():
    text = str(jax.make_jaxpr(jax.checkpoint(sin_sin))(1.0))
    assert text == """\
{ lambda ; a:f32[]. let
    b:f32[] = remat2[
      differentiated=False
      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c; e:f32[] = sin d in (e,) }
      policy=None
      prevent_cse=True
    ] a
  in (b,) }"""  # JAX 0.10.2's text, character for character


def test_the_backward_pass_recomputes_the_forward_pass():
    """Without checkpoint, grad's program computes sin twice (forward); with it, the
    differentiated remat2 computes ``sin x`` again (the VJP of the outer sin needs it; the
    outer sin itself is not needed, and is not recomputed), as JAX's program does."""
    plain = jax.make_jaxpr(jax.grad(sin_sin))(1.0)
    remat = jax.make_jaxpr(jax.grad(jax.checkpoint(sin_sin)))(1.0)
    assert _count(plain.jaxpr, "sin") == 2
    assert _names(remat) == ["remat2", "remat2"]
    forward, backward = remat.jaxpr.eqns
    assert forward.params["differentiated"] is False
    assert backward.params["differentiated"] is True
    assert _count(backward.params["jaxpr"].jaxpr, "sin") == 1  # recomputed
    assert _count(backward.params["jaxpr"].jaxpr, "cos") == 2  # the VJP


def test_eager_grad_runs_the_forward_equations_again(monkeypatch):
    from stage1_autodiff import core
    from stage1_autodiff import prims as lax
    calls = []
    original = core.impl_rules[lax.sin_p]
    monkeypatch.setitem(core.impl_rules, lax.sin_p, lambda x: calls.append(1) or original(x))
    jax.grad(sin_sin)(1.0)
    plain = len(calls)
    calls.clear()
    jax.grad(jax.checkpoint(sin_sin))(1.0)
    assert (plain, len(calls)) == (2, 3)  # sin(x) once more, in the backward pass


W = jnp.full((3, 3), 0.5)


def mlp(x):
    return jnp.tanh(W @ jnp.tanh(W @ x)).sum()


@pytest.mark.parametrize("policy, recomputed_dots", [
    (None, 2), (jax.checkpoint_policies.nothing_saveable, 2),
    (jax.checkpoint_policies.dots_saveable, 0),
    (jax.checkpoint_policies.dots_with_no_batch_dims_saveable, 0),
    (jax.checkpoint_policies.everything_saveable, 0)])
def test_policies_choose_what_is_saved(policy, recomputed_dots):
    g = jax.checkpoint(mlp, policy=policy)
    x = jnp.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(jax.grad(g)(x), jax.grad(mlp)(x), rtol=1e-6)
    closed = jax.make_jaxpr(jax.grad(g))(x)
    backward = [e for e in closed.jaxpr.eqns if e.primitive.name == "remat2"][-1]
    # the VJP has two products (one per dot); a recomputed forward adds its own
    assert _count(backward.params["jaxpr"].jaxpr, "dot_general") == 2 + recomputed_dots


def test_dots_saveable_prints_as_jax_prints_it():
    text = str(jax.make_jaxpr(jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable))(
        jnp.ones(3)))
    assert "policy=DotsSaveable(only_if_no_batch_dims=False)" in text


def test_static_argnums_and_prevent_cse():
    def power(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return x

    g = jax.checkpoint(power, static_argnums=(1,), prevent_cse=False)
    np.testing.assert_allclose(jax.grad(g)(1.0, 3), jax.grad(power)(1.0, 3), rtol=1e-6)
    (eqn,) = jax.make_jaxpr(lambda x: g(x, 3))(1.0).jaxpr.eqns
    assert eqn.params["prevent_cse"] is False
    assert _count(eqn.params["jaxpr"].jaxpr, "sin") == 3


def test_linearize_of_checkpoint_recomputes_in_the_linear_function():
    y, f_jvp = jax.linearize(jax.checkpoint(sin_sin), 1.0)
    np.testing.assert_allclose(y, np.sin(np.sin(1.0)), rtol=1e-6)
    np.testing.assert_allclose(f_jvp(1.0), np.cos(np.sin(1.0)) * np.cos(1.0), rtol=1e-6)
    assert "remat2[" in str(jax.make_jaxpr(f_jvp)(1.0))


# ------------------------------------------------------------------------------------------
# Names: checkpoint_name and the policies that choose by name
# ------------------------------------------------------------------------------------------

P = jax.checkpoint_policies


def named(x):
    return jnp.sin(checkpoint_name(jnp.sin(x), "a")) * jnp.cos(checkpoint_name(jnp.cos(x), "b"))


def _residuals(policy) -> int:
    """How many values the forward pass of grad(checkpoint(named)) keeps besides its result."""
    closed = jax.make_jaxpr(jax.grad(jax.checkpoint(named, policy=policy)))(0.5)
    forward = next(e for e in closed.jaxpr.eqns if e.primitive.name == "remat2")
    return len(forward.outvars) - 1


NAME_POLICIES = {  # (the ids name them: a set's repr varies from process to process)
    "none": (None, 0),
    "only_a": (P.save_only_these_names("a"), 1),
    "only_a_b": (P.save_only_these_names("a", "b"), 2),
    "only_c": (P.save_only_these_names("c"), 0),
    "any_but_a": (P.save_any_names_but_these("a"), 1),
    "any": (P.save_any_names_but_these(), 2),
    "both": (P.save_from_both_policies(P.save_only_these_names("a"),
                                       P.save_only_these_names("b")), 2),
    "offload_b": (P.save_and_offload_only_these_names(
        names_which_can_be_saved=["a"], names_which_can_be_offloaded=["b"],
        offload_src="device", offload_dst="pinned_host"), 2),
    "anything_except_a": (P.save_anything_except_these_names("a"), 7),  # all, as in JAX 0.10.2
    "saveable_names": (lambda prim, *_, **params: ad_checkpoint.Saveable
                       if prim.name == "name" else ad_checkpoint.Recompute, 2),
}


@pytest.mark.parametrize("case", NAME_POLICIES)
def test_name_policies_save_the_named_values(case):
    policy, saved = NAME_POLICIES[case]
    assert _residuals(policy) == saved
    g = jax.checkpoint(named, policy=policy)
    for x in (0.5, -1.0, 2.0):
        want = jax.grad(named)(x)
        np.testing.assert_allclose(jax.grad(g)(x), want, rtol=1e-6)
        np.testing.assert_allclose(jax.jit(jax.grad(g))(x), want, rtol=1e-6)
        np.testing.assert_allclose(jax.grad(jax.grad(g))(x), jax.grad(jax.grad(named))(x),
                                   rtol=1e-5)


def test_checkpoint_name_is_the_identity_on_a_pytree():
    tree = {"w": jnp.ones((2, 3)), "step": 3, "scale": 0.5}
    out = checkpoint_name(tree, "params")
    assert out["step"].dtype == np.int32 and out["step"].weak_type and out["w"].shape == (2, 3)
    np.testing.assert_array_equal(jax.jit(lambda t: checkpoint_name(t, "p"))(tree)["w"], 1.0)
    text = str(jax.make_jaxpr(lambda x: checkpoint_name(x * 2.0, "h"))(1.0))
    assert "name[name=h]" in text
    # its tangent is not named: only forward values are a policy's to save
    text = str(jax.make_jaxpr(lambda x: jax.jvp(lambda y: checkpoint_name(y, "h"), (x,), (x,)))(
        1.0))
    assert text.count("name[") == 1


def test_name_policies_refuse_what_they_cannot_mean():
    with pytest.raises(TypeError, match="must be a string"):
        checkpoint_name(jnp.ones(2), 3)
    with pytest.raises(ValueError, match="saved or offloaded, not both"):
        P.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"], names_which_can_be_offloaded=["a", "b"],
            offload_src="device", offload_dst="pinned_host")
    with pytest.raises(TypeError, match="returned None"):
        jax.grad(jax.checkpoint(named, policy=lambda *_, **__: None))(0.5)
    both = P.save_from_both_policies(lambda *_, **__: ad_checkpoint.Saveable, P.dots_saveable)
    with pytest.raises(ValueError, match="True or False"):
        jax.grad(jax.checkpoint(named, policy=both))(0.5)
