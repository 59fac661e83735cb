"""A small VAE: reparameterised sampling, a KL term, per-example losses with vmap, gradient
clipping by global norm, and SGD with momentum, all jitted."""
import jax
import jax.numpy as jnp

IN, HID, Z = 12, 10, 3


def init(key):
    k = jax.random.split(key, 4)
    def dense(k, a, b):
        return {"w": jax.random.normal(k, (a, b)) / jnp.sqrt(a), "b": jnp.zeros(b)}
    return {"enc": dense(k[0], IN, HID), "mu": dense(k[1], HID, Z),
            "logvar": dense(k[2], HID, Z), "dec": dense(k[3], Z, IN)}


def apply(p, x):
    return x @ p["w"] + p["b"]


def example_loss(params, x, key):
    h = jax.nn.softplus(apply(params["enc"], x))
    mu, logvar = apply(params["mu"], h), apply(params["logvar"], h)
    z = mu + jnp.exp(0.5 * logvar) * jax.random.normal(key, mu.shape)
    recon = jax.nn.sigmoid(apply(params["dec"], z))
    bce = -jnp.sum(x * jnp.log(recon + 1e-7) + (1 - x) * jnp.log1p(-recon + 1e-7))
    kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar))
    return bce + kl


def clip_by_global_norm(tree, max_norm):
    norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in jax.tree_util.tree_leaves(tree)))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return jax.tree_util.tree_map(lambda g: g * scale, tree), norm


@jax.jit
def step(params, velocity, batch, key):
    keys = jax.random.split(key, batch.shape[0])
    def batch_loss(p):
        return jnp.mean(jax.vmap(example_loss, in_axes=(None, 0, 0))(p, batch, keys))
    loss, grads = jax.value_and_grad(batch_loss)(params)
    grads, norm = clip_by_global_norm(grads, 1.0)
    velocity = jax.tree_util.tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
    params = jax.tree_util.tree_map(lambda p, v: p - 0.05 * v, params, velocity)
    return params, velocity, loss, norm


def main():
    key = jax.random.key(42)
    params = init(key)
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    data = (jax.random.uniform(jax.random.key(7), (16, IN)) > 0.5).astype(jnp.float32)
    out = []
    for i in range(3):
        key, sub = jax.random.split(key)
        params, velocity, loss, norm = step(params, velocity, data, sub)
        out.append((loss, norm))
    return out, params
