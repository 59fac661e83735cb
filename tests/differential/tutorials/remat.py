"""A deep tanh network whose layers are checkpointed: the gradient with remat (and with a
policy that saves the matrix products) equals the one without."""
import jax
import jax.numpy as jnp


def layer(w, x):
    return jnp.tanh(x @ w)


def net(ws, x, block):
    for w in ws:
        x = block(w, x)
    return jnp.sum(x ** 2)


def main():
    keys = jax.random.split(jax.random.key(5), 5)
    ws = [0.5 * jax.random.normal(k, (8, 8)) for k in keys[:4]]
    x = jax.random.normal(keys[4], (4, 8))
    plain = jax.grad(net)(ws, x, layer)
    remat = jax.jit(jax.grad(lambda ws, x: net(ws, x, jax.checkpoint(layer))))(ws, x)
    policy = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)
    saved = jax.grad(lambda ws, x: net(ws, x, policy))(ws, x)
    return plain, remat, saved
