"""Linear regression by gradient descent: jit of value_and_grad, a dict of parameters."""
import jax
import jax.numpy as jnp


def main():
    x = jnp.linspace(-1.0, 1.0, 64).reshape(32, 2)
    y = x @ jnp.array([2.0, -3.0]) + 0.5
    params = {"w": jnp.zeros(2), "b": jnp.array(0.0)}

    def loss(params, x, y):
        return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree_util.tree_map(lambda p, g: p - 0.3 * g, params, grads)

    losses = []
    for _ in range(40):
        value, params = step(params, x, y)
        losses.append(value)
    return params, jnp.stack(losses)
