"""A classifier built with ``stax`` and trained with ``optimizers.adam`` on a decaying step
size, with clipped gradients, as JAX's older tutorials write it."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.example_libraries import optimizers, stax


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int32)
    init_fun, apply_fun = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(16), stax.Tanh,
                                      stax.Dense(2), stax.LogSoftmax)
    _, params = init_fun(jax.random.key(0), (-1, 2))
    opt_init, opt_update, get_params = optimizers.adam(
        optimizers.exponential_decay(0.05, 50, 0.5))

    def loss(params, batch):
        inputs, targets = batch
        log_probs = apply_fun(params, inputs)
        return -jnp.mean(jnp.sum(log_probs * jax.nn.one_hot(targets, 2), axis=1))

    @jax.jit
    def step(i, state, batch):
        value, grads = jax.value_and_grad(loss)(get_params(state), batch)
        return value, opt_update(i, optimizers.clip_grads(grads, 1.0), state)

    state = opt_init(params)
    losses = []
    for i in range(30):
        value, state = step(i, state, (x, labels))
        losses.append(value)
    accuracy = jnp.mean(jnp.argmax(apply_fun(get_params(state), x), axis=1) == labels)
    return losses, get_params(state), accuracy
