"""A DDPM training step on 2-D points: a linear beta schedule with jnp.cumprod, sinusoidal
time embeddings, per-example timesteps drawn with randint and noise with fresh keys per
step, the epsilon-prediction loss and its gradient under jit, and a few ancestral
sampling steps in lax.fori_loop."""
import math

import jax
import jax.numpy as jnp
from jax import lax

T, DIM, EMB, HID = 50, 2, 8, 32
BETAS = jnp.linspace(1e-4, 0.05, T)
ALPHAS = 1.0 - BETAS
ALPHA_BARS = jnp.cumprod(ALPHAS)


def time_embedding(t):
    half = EMB // 2
    freqs = jnp.exp(-math.log(1000.0) * jnp.arange(half) / half)
    angles = t[..., None].astype(jnp.float32) * freqs
    return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=-1)


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"w1": jax.random.normal(k1, (DIM + EMB, HID)) / jnp.sqrt(DIM + EMB),
            "b1": jnp.zeros(HID),
            "w2": jax.random.normal(k2, (HID, HID)) / jnp.sqrt(HID), "b2": jnp.zeros(HID),
            "w3": jax.random.normal(k3, (HID, DIM)) * 0.01, "b3": jnp.zeros(DIM)}


def eps_model(p, x, t):
    h = jnp.concatenate([x, time_embedding(t)], axis=-1)
    h = jax.nn.silu(h @ p["w1"] + p["b1"])
    h = jax.nn.silu(h @ p["w2"] + p["b2"])
    return h @ p["w3"] + p["b3"]


def loss(params, x0, key):
    kt, ke = jax.random.split(key)
    t = jax.random.randint(kt, (x0.shape[0],), 0, T)
    eps = jax.random.normal(ke, x0.shape)
    ab = ALPHA_BARS[t][:, None]
    xt = jnp.sqrt(ab) * x0 + jnp.sqrt(1.0 - ab) * eps
    return jnp.mean(jnp.sum((eps_model(params, xt, t) - eps) ** 2, axis=-1))


@jax.jit
def train_step(params, m, x0, key):
    value, g = jax.value_and_grad(loss)(params, x0, key)
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
    params = jax.tree.map(lambda p, m: p - 0.05 * m, params, m)
    return params, m, value


@jax.jit
def sample(params, key, n):
    k0, key = jax.random.split(key)
    x = jax.random.normal(k0, (n.shape[0], DIM))

    def body(i, carry):
        x, key = carry
        t = T - 1 - i
        key, sub = jax.random.split(key)
        eps = eps_model(params, x, jnp.full((x.shape[0],), t))
        mean = (x - BETAS[t] / jnp.sqrt(1.0 - ALPHA_BARS[t]) * eps) / jnp.sqrt(ALPHAS[t])
        noise = jnp.where(t > 0, jax.random.normal(sub, x.shape), 0.0)
        return mean + jnp.sqrt(BETAS[t]) * noise, key

    x, _ = lax.fori_loop(0, T, body, (x, key))
    return x


def main():
    key = jax.random.key(2024)
    data = jnp.stack([jnp.cos(jnp.linspace(0, 6.0, 32)), jnp.sin(jnp.linspace(0, 6.0, 32))], 1)
    params = init(jax.random.key(1))
    m = jax.tree.map(jnp.zeros_like, params)
    losses = []
    for i in range(4):
        params, m, value = train_step(params, m, data, jax.random.fold_in(key, i))
        losses.append(value)
    x = sample(params, jax.random.key(3), jnp.zeros(5))
    snr = ALPHA_BARS / (1.0 - ALPHA_BARS)
    return {"losses": jnp.stack(losses), "samples": x, "alpha_bar_T": ALPHA_BARS[-1],
            "log_snr": jnp.log(snr[::10]), "emb": time_embedding(jnp.array([0, 7, 49]))}
