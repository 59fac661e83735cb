"""A bidirectional LSTM tagger over padded sequences: the forward pass by lax.scan, the
backward pass by lax.scan(reverse=True), padding masked with jnp.where so padded steps
keep the state, a masked cross-entropy, gradients clipped by their global norm as optax
does it, and jitted Adam steps over a batch via vmap."""
import jax
import jax.numpy as jnp
from jax import lax

VOCAB, EMB, HID, TAGS, LEN = 11, 6, 8, 3, 9


def lstm_params(key, n_in):
    k1, k2 = jax.random.split(key)
    return {"wx": jax.random.normal(k1, (n_in, 4 * HID)) / jnp.sqrt(n_in),
            "wh": jax.nn.initializers.orthogonal()(k2, (HID, 4 * HID)),
            "b": jnp.zeros(4 * HID).at[HID:2 * HID].set(1.0)}


def init(key):
    k = jax.random.split(key, 4)
    return {"embed": jax.random.normal(k[0], (VOCAB, EMB)) * 0.5,
            "fwd": lstm_params(k[1], EMB), "bwd": lstm_params(k[2], EMB),
            "out": jax.random.normal(k[3], (2 * HID, TAGS)) / 4.0}


def run_lstm(p, xs, mask, reverse):
    def cell(carry, inp):
        h, c = carry
        x, m = inp
        i, f, g, o = jnp.split(x @ p["wx"] + h @ p["wh"] + p["b"], 4)
        c_new = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h_new = jax.nn.sigmoid(o) * jnp.tanh(c_new)
        h, c = jnp.where(m, h_new, h), jnp.where(m, c_new, c)
        return (h, c), jnp.where(m, h, 0.0)
    init = (jnp.zeros(HID), jnp.zeros(HID))
    return lax.scan(cell, init, (xs, mask), reverse=reverse)[1]


def logits_fn(params, tokens, length):
    mask = jnp.arange(LEN) < length
    xs = params["embed"][tokens]
    hs = jnp.concatenate([run_lstm(params["fwd"], xs, mask, False),
                          run_lstm(params["bwd"], xs, mask, True)], axis=-1)
    return hs @ params["out"], mask


def loss(params, tokens, tags, lengths):
    logits, mask = jax.vmap(logits_fn, in_axes=(None, 0, 0))(params, tokens, lengths)
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), tags[..., None], axis=-1)[..., 0]
    return jnp.sum(jnp.where(mask, nll, 0.0)) / jnp.sum(mask)


def clip_by_global_norm(grads, max_norm):
    norm = jnp.sqrt(sum(jnp.vdot(g, g) for g in jax.tree.leaves(grads)))
    trigger = norm < max_norm
    return jax.tree.map(lambda g: jnp.where(trigger, g, g * (max_norm / norm)), grads), norm


@jax.jit
def step(params, opt, tokens, tags, lengths):
    value, g = jax.value_and_grad(loss)(params, tokens, tags, lengths)
    g, norm = clip_by_global_norm(g, 0.5)
    t = opt["t"] + 1
    mu = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, opt["mu"], g)
    nu = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, opt["nu"], g)
    def upd(p, m, v):
        m_hat = m / (1 - 0.9 ** t)
        v_hat = v / (1 - 0.999 ** t)
        return p - 0.05 * m_hat / (jnp.sqrt(v_hat) + 1e-8)
    params = jax.tree.map(upd, params, mu, nu)
    return params, {"mu": mu, "nu": nu, "t": t}, value, norm


def main():
    key = jax.random.key(8)
    k1, k2, k3 = jax.random.split(key, 3)
    tokens = jax.random.randint(k1, (4, LEN), 1, VOCAB)
    lengths = jnp.array([9, 5, 3, 7])
    tokens = jnp.where(jnp.arange(LEN) < lengths[:, None], tokens, 0)
    tags = tokens % TAGS
    params = init(k2)
    opt = {"mu": jax.tree.map(jnp.zeros_like, params),
           "nu": jax.tree.map(jnp.zeros_like, params), "t": 0}
    history = []
    for _ in range(5):
        params, opt, value, norm = step(params, opt, tokens, tags, lengths)
        history.append((value, norm))
    logits, mask = logits_fn(params, tokens[1], lengths[1])
    return history, jnp.argmax(logits, -1), mask, opt["t"], params["out"]
