"""An Elman RNN over a sequence with lax.scan, teacher forcing, a hessian-vector product of
the loss by jvp of grad, and the Jacobian of the final state with jacrev."""
import jax
import jax.numpy as jnp
from jax import lax


def rnn(params, xs, h0):
    wx, wh, b = params
    def cell(h, x):
        h = jnp.tanh(x @ wx + h @ wh + b)
        return h, h
    return lax.scan(cell, h0, xs)


def loss(params, xs, ys):
    _, hs = rnn(params, xs, jnp.zeros(params[1].shape[0]))
    return jnp.mean((hs[:, 0] - ys) ** 2)


def main():
    k = jax.random.split(jax.random.key(11), 4)
    params = (jax.random.normal(k[0], (2, 5)) * 0.5, jax.random.normal(k[1], (5, 5)) * 0.3,
              jnp.zeros(5))
    xs = jax.random.normal(k[2], (7, 2))
    ys = jnp.sin(jnp.arange(7.0))
    g = jax.jit(jax.grad(loss))(params, xs, ys)
    hvp = jax.jvp(lambda p: jax.grad(loss)(p, xs, ys), (params,), (g,))[1]
    jac = jax.jacrev(lambda h0: rnn(params, xs, h0)[0])(jnp.ones(5) * 0.1)
    return g, hvp, jac
