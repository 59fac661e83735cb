"""A small CNN: two NHWC convolutions, max pooling by reduce_window, a dense head, and
the gradient of its loss."""
import jax
import jax.numpy as jnp
from jax import lax


def forward(params, images):
    dn = ("NHWC", "HWIO", "NHWC")
    x = lax.conv_general_dilated(images, params["c1"], (1, 1), "SAME", dimension_numbers=dn)
    x = jax.nn.relu(x)
    x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    x = lax.conv_general_dilated(x, params["c2"], (2, 2), "VALID", dimension_numbers=dn)
    x = jax.nn.relu(x).reshape(x.shape[0], -1)
    return x @ params["dense"]


def main():
    k1, k2, k3, k4 = jax.random.split(jax.random.key(3), 4)
    params = {"c1": 0.3 * jax.random.normal(k1, (3, 3, 1, 4)),
              "c2": 0.3 * jax.random.normal(k2, (3, 3, 4, 8)),
              "dense": 0.3 * jax.random.normal(k3, (8, 2))}
    images = jax.random.normal(k4, (2, 8, 8, 1))
    labels = jnp.array([0, 1])

    def loss(params):
        logp = jax.nn.log_softmax(forward(params, images))
        return -jnp.mean(logp[jnp.arange(2), labels])

    return forward(params, images), jax.jit(jax.value_and_grad(loss))(params)
