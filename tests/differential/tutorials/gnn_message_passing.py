"""A graph neural network on a small molecule-like graph: messages along an edge list,
aggregated per node with jax.ops.segment_sum and segment_max, degree normalisation by
segment_sum of ones, a graph-level readout, and a few jitted Adam-free SGD steps."""
import jax
import jax.numpy as jnp

N_NODES, FEAT, HID = 7, 4, 8
SENDERS = jnp.array([0, 1, 1, 2, 3, 3, 4, 5, 6, 2, 0, 5])
RECEIVERS = jnp.array([1, 0, 2, 1, 4, 2, 3, 6, 5, 3, 6, 4])


def init(key):
    k = jax.random.split(key, 5)
    glorot = jax.nn.initializers.glorot_uniform()
    return {
        "embed": glorot(k[0], (FEAT, HID)),
        "msg": [glorot(k[1], (2 * HID, HID)), glorot(k[2], (2 * HID, HID))],
        "upd": [glorot(k[3], (2 * HID, HID)), jnp.zeros((2 * HID, HID))],
        "out": jax.random.normal(k[4], (2 * HID,)) * 0.1,
    }


def layer(h, w_msg, w_upd):
    pair = jnp.concatenate([h[SENDERS], h[RECEIVERS]], axis=-1)
    messages = jax.nn.gelu(pair @ w_msg)
    summed = jax.ops.segment_sum(messages, RECEIVERS, num_segments=N_NODES)
    degree = jax.ops.segment_sum(jnp.ones_like(RECEIVERS, dtype=h.dtype), RECEIVERS,
                                 num_segments=N_NODES)
    mean = summed / jnp.maximum(degree, 1.0)[:, None]
    peak = jax.ops.segment_max(messages, RECEIVERS, num_segments=N_NODES)
    peak = jnp.where(jnp.isfinite(peak), peak, 0.0)
    return h + jnp.tanh(jnp.concatenate([mean, peak], axis=-1) @ w_upd)


def predict(params, x):
    h = x @ params["embed"]
    for w_msg, w_upd in zip(params["msg"], params["upd"]):
        h = layer(h, w_msg, w_upd)
    readout = jnp.concatenate([h.mean(axis=0), h.max(axis=0)])
    return readout @ params["out"]


def loss(params, graphs, targets):
    preds = jax.vmap(predict, in_axes=(None, 0))(params, graphs)
    return jnp.mean((preds - targets) ** 2), preds


@jax.jit
def step(params, graphs, targets):
    (value, preds), g = jax.value_and_grad(loss, has_aux=True)(params, graphs, targets)
    params = jax.tree.map(lambda p, d: p - 0.02 * d, params, g)
    return params, value, preds


def main():
    params = init(jax.random.key(0))
    graphs = jax.random.normal(jax.random.key(1), (3, N_NODES, FEAT))
    targets = jnp.array([1.0, -0.5, 0.25])
    losses = []
    for _ in range(4):
        params, value, preds = step(params, graphs, targets)
        losses.append(value)
    node_counts = jax.ops.segment_sum(jnp.ones(12, jnp.int32), SENDERS, num_segments=N_NODES)
    smin = jax.ops.segment_min(SENDERS, RECEIVERS, num_segments=N_NODES)
    return jnp.stack(losses), preds, params["out"], node_counts, smin
