"""Optimizers written from scratch on pytrees, as one does before reaching for optax:
AdamW with decoupled weight decay masked to matrices, RMSProp with momentum, Nesterov SGD,
a warmup-then-cosine learning-rate schedule by jnp.where and one by lax.cond, global-norm
clipping, jax.tree.map / leaves / structure, all under jit on a small regression problem."""
import jax
import jax.numpy as jnp
from jax import lax


def schedule_where(step, peak=0.05, warmup=3, total=12):
    step = jnp.asarray(step, jnp.float32)
    warm = peak * (step + 1) / warmup
    progress = jnp.clip((step - warmup) / (total - warmup), 0.0, 1.0)
    cosine = 0.5 * peak * (1 + jnp.cos(jnp.pi * progress))
    return jnp.where(step < warmup, warm, cosine)


def schedule_cond(step, peak=0.05, warmup=3, total=12):
    return lax.cond(step < warmup,
                    lambda s: peak * (s + 1.0) / warmup,
                    lambda s: 0.5 * peak * (1 + jnp.cos(jnp.pi * jnp.minimum(
                        (s - warmup) / (total - warmup), 1.0))),
                    step.astype(jnp.float32))


def global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree)))


def clip(tree, max_norm):
    n = global_norm(tree)
    return jax.tree.map(lambda g: g * jnp.minimum(1.0, max_norm / (n + 1e-6)), tree)


def adamw(params, grads, state, lr, b1=0.9, b2=0.99, eps=1e-8, wd=0.05):
    t = state["t"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    decay_mask = jax.tree.map(lambda p: p.ndim > 1, params)
    def update(p, m, v, decay):
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        return p - lr * (m_hat / (jnp.sqrt(v_hat) + eps) + jnp.where(decay, wd * p, 0.0))
    return jax.tree.map(update, params, m, v, decay_mask), {"m": m, "v": v, "t": t}


def rmsprop(params, grads, state, lr, decay=0.9, momentum=0.8, eps=1e-6):
    ms = jax.tree.map(lambda s, g: decay * s + (1 - decay) * g ** 2, state["ms"], grads)
    mom = jax.tree.map(lambda b, g, s: momentum * b + g * lax.rsqrt(s + eps),
                       state["mom"], grads, ms)
    return jax.tree.map(lambda p, b: p - lr * b, params, mom), {"ms": ms, "mom": mom}


def nesterov(params, grads, state, lr, mu=0.9):
    vel = jax.tree.map(lambda v, g: mu * v + g, state, grads)
    return jax.tree.map(lambda p, v, g: p - lr * (g + mu * v), params, vel, grads), vel


def model(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return (h @ params["w2"] + params["b2"])[:, 0]


def loss(params, x, y):
    return jnp.mean((model(params, x) - y) ** 2)


def train(opt, opt_state, params, x, y, schedule):
    @jax.jit
    def step(params, opt_state, i):
        value, g = jax.value_and_grad(loss)(params, x, y)
        g = clip(g, 1.0)
        params, opt_state = opt(params, g, opt_state, schedule(i))
        return params, opt_state, value
    losses = []
    for i in range(8):
        params, opt_state, value = step(params, opt_state, jnp.int32(i))
        losses.append(value)
    return params, jnp.stack(losses)


def main():
    k1, k2, k3 = jax.random.split(jax.random.key(77), 3)
    x = jax.random.normal(k1, (32, 3))
    y = jnp.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    params = {"w1": jax.random.normal(k2, (3, 16)) * 0.5, "b1": jnp.zeros(16),
              "w2": jax.random.normal(k3, (16, 1)) * 0.25, "b2": jnp.zeros(1)}
    zeros = jax.tree.map(jnp.zeros_like, params)
    p_adamw, l_adamw = train(adamw, {"m": zeros, "v": zeros, "t": jnp.int32(0)}, params, x, y,
                             schedule_where)
    p_rms, l_rms = train(rmsprop, {"ms": zeros, "mom": zeros}, params, x, y, schedule_cond)
    p_nes, l_nes = train(nesterov, zeros, params, x, y, lambda i: 0.02)
    lrs = jax.vmap(schedule_where)(jnp.arange(14))
    lrs_cond = jax.vmap(schedule_cond)(jnp.arange(14))
    return {"losses": (l_adamw, l_rms, l_nes), "lrs": lrs, "lrs_cond": lrs_cond,
            "w2_adamw": p_adamw["w2"][:4, 0], "b1_rms": p_rms["b1"][:4],
            "norms": jnp.stack([global_norm(p) for p in (p_adamw, p_rms, p_nes)]),
            "n_leaves": len(jax.tree.leaves(params)),
            "structure": str(jax.tree.structure(params))}
