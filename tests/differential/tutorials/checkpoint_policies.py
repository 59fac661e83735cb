"""Rematerialisation as a large-model training script tunes it: a pre-norm residual block
whose intermediates are tagged with checkpoint_name, stacked layers run by lax.scan over a
jax.checkpoint'ed body (prevent_cse=False, as inside scan, and a static_argnums flag), the
gradient taken under the common policies (nothing_saveable, dots_with_no_batch_dims_saveable,
save_only_these_names, save_any_names_but_these, save_from_both_policies), one under jit
with the policy and the flag static, jax.remat as the older name in a vjp, and a
Hessian-vector product under dots_saveable; every policy gives the same numbers."""
from functools import partial

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

policies = jax.checkpoint_policies
D, H, LAYERS = 8, 16, 4


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"w1": jax.random.normal(k1, (LAYERS, D, H)) / jnp.sqrt(D),
            "w2": jax.random.normal(k2, (LAYERS, H, D)) / jnp.sqrt(H),
            "mix": jax.random.normal(k3, (LAYERS, D, D)) / jnp.sqrt(D),
            "scale": jnp.ones((LAYERS, D))}


def block(layer, x, use_gelu):
    normed = x * jax.lax.rsqrt(jnp.mean(x ** 2, -1, keepdims=True) + 1e-5) * layer["scale"]
    mixed = checkpoint_name(jnp.einsum("btd,de->bte", normed, layer["mix"]), "mix")
    hidden = checkpoint_name(mixed @ layer["w1"], "hidden")
    act = jax.nn.gelu(hidden) if use_gelu else jnp.tanh(hidden)
    act = checkpoint_name(act, "act")
    return x + act @ layer["w2"]


def model(params, x, policy, use_gelu=True):
    body = jax.checkpoint(block, policy=policy, prevent_cse=False, static_argnums=(2,))

    def step(x, layer):
        return body(layer, x, use_gelu), None

    x, _ = jax.lax.scan(step, x, params)
    return x


def loss(params, x, policy, use_gelu=True):
    return jnp.mean(jnp.sin(model(params, x, policy, use_gelu)) ** 2)


def main():
    params = init(jax.random.key(31))
    x = jax.random.normal(jax.random.key(32), (2, 3, D))
    chosen = {
        "none": None,
        "nothing": policies.nothing_saveable,
        "dots_no_batch": policies.dots_with_no_batch_dims_saveable,
        "only_hidden": policies.save_only_these_names("hidden", "act"),
        "all_but_mix": policies.save_any_names_but_these("mix"),
        "both": policies.save_from_both_policies(policies.nothing_saveable,
                                                 policies.save_only_these_names("act")),
    }
    grads = {name: jax.grad(loss)(params, x, policy) for name, policy in chosen.items()}
    plain = jax.grad(lambda p: jnp.mean(jnp.sin(_unrolled(p, x)) ** 2))(params)

    tanh_grad = jax.jit(jax.grad(loss), static_argnums=(2, 3))(
        params, x, policies.nothing_saveable, False)

    old_name = jax.remat(lambda p, x: jnp.sum(model(p, x, None) ** 2))
    value, pullback = jax.vjp(old_name, params, x)
    p_bar, x_bar = pullback(jnp.ones_like(value))

    direction = jax.tree.map(jnp.ones_like, params)
    grad_fn = partial(jax.grad(loss), x=x, policy=policies.dots_saveable)
    _, hvp = jax.jvp(grad_fn, (params,), (direction,))
    spread = {name: jax.tree.reduce(jnp.maximum, jax.tree.map(
        lambda a, b: jnp.max(jnp.abs(a - b)), g, plain)) for name, g in grads.items()}
    return (grads["none"], grads["only_hidden"], plain, spread, tanh_grad,
            value, p_bar["w1"], x_bar, hvp["mix"], loss(params, x, None))


def _unrolled(params, x):
    for i in range(LAYERS):
        x = block(jax.tree.map(lambda a: a[i], params), x, True)
    return x
