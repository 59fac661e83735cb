"""A two-layer pre-norm transformer trained a few steps: stacked layer params scanned with
lax.scan, multi-head attention by einsum, dropout keys folded in per step, Adam by tree_map."""
import functools

import jax
import jax.numpy as jnp
from jax import lax

D, H, T, V, LAYERS = 16, 4, 8, 11, 2


def init(key):
    ks = jax.random.split(key, 6)
    dense = jax.nn.initializers.glorot_normal()
    layer = {
        "qkv": jax.vmap(lambda k: dense(k, (D, 3 * D)))(jax.random.split(ks[0], LAYERS)),
        "out": jax.vmap(lambda k: dense(k, (D, D)))(jax.random.split(ks[1], LAYERS)),
        "mlp1": jax.random.normal(ks[2], (LAYERS, D, 4 * D)) * 0.1,
        "mlp2": jax.random.normal(ks[3], (LAYERS, 4 * D, D)) * 0.1,
        "scale": jnp.ones((LAYERS, D)),
    }
    return {"embed": jax.random.normal(ks[4], (V, D)) * 0.3, "layers": layer,
            "unembed": jax.random.normal(ks[5], (D, V)) * 0.3}


def layer_norm(x, scale):
    mean = x.mean(-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * scale


def block(x, p, key):
    h = layer_norm(x, p["scale"])
    q, k, v = jnp.split(h @ p["qkv"], 3, axis=-1)
    q, k, v = (a.reshape(T, H, D // H) for a in (q, k, v))
    scores = jnp.einsum("thd,shd->hts", q, k) / jnp.sqrt(D // H)
    causal = jnp.tril(jnp.ones((T, T), bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    keep = jax.random.bernoulli(key, 0.9, weights.shape)
    weights = jnp.where(keep, weights / 0.9, 0.0)
    att = jnp.einsum("hts,shd->thd", weights, v).reshape(T, D)
    x = x + att @ p["out"]
    return x + jax.nn.gelu(layer_norm(x, p["scale"]) @ p["mlp1"]) @ p["mlp2"]


def loss_fn(params, tokens, key):
    x = params["embed"][tokens[:-1]]
    keys = jax.random.split(key, LAYERS)

    def step(x, layer):
        p, k = layer
        return jax.checkpoint(block)(x, p, k), None

    x, _ = lax.scan(step, x, (params["layers"], keys))
    logits = x @ params["unembed"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, tokens[1:, None], axis=-1).mean()


@functools.partial(jax.jit, donate_argnums=(0, 1))
def train_step(params, opt, tokens, key, step):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, key)
    m, v = opt
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
    t = step + 1
    update = jax.tree_util.tree_map(
        lambda m, v: (m / (1 - 0.9 ** t)) / (jnp.sqrt(v / (1 - 0.999 ** t)) + 1e-8), m, v)
    params = jax.tree_util.tree_map(lambda p, u: p - 1e-2 * u, params, update)
    return params, (m, v), loss


def main():
    key = jax.random.key(0)
    params = init(key)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    opt = (zeros, jax.tree_util.tree_map(jnp.zeros_like, params))
    tokens = jax.random.randint(jax.random.key(1), (T + 1,), 0, V)
    losses = []
    for i in range(4):
        params, opt, loss = train_step(params, opt, tokens, jax.random.fold_in(key, i), i)
        losses.append(loss)
    return jnp.stack(losses), params
