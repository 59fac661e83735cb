"""REINFORCE on a small chain MDP: a softmax policy table, episodes rolled out by lax.scan
with categorical action sampling, discounted returns by a reversed scan, a learned
baseline, the policy-gradient estimator under jit and vmap over episodes, and entropy."""
import jax
import jax.numpy as jnp
from jax import lax

N_STATES, N_ACTIONS, HORIZON, GAMMA = 5, 2, 12, 0.9


def env_step(state, action):
    nxt = jnp.clip(state + jnp.where(action == 1, 1, -1), 0, N_STATES - 1)
    reward = jnp.where(nxt == N_STATES - 1, 1.0, -0.05)
    return nxt, reward


def rollout(logits_table, key):
    def body(state, k):
        logits = logits_table[state]
        action = jax.random.categorical(k, logits)
        logp = jax.nn.log_softmax(logits)[action]
        nxt, reward = env_step(state, action)
        return nxt, (state, action, reward, logp)
    _, traj = lax.scan(body, jnp.int32(0), jax.random.split(key, HORIZON))
    return traj


def discounted_returns(rewards):
    def body(acc, r):
        acc = r + GAMMA * acc
        return acc, acc
    _, returns = lax.scan(body, jnp.zeros(()), rewards, reverse=True)
    return returns


def surrogate(params, key):
    states, actions, rewards, _ = rollout(lax.stop_gradient(params["policy"]), key)
    returns = discounted_returns(rewards)
    baseline = params["baseline"][states]
    advantage = lax.stop_gradient(returns - baseline)
    logp = jax.nn.log_softmax(params["policy"][states])
    logp = jnp.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    pg = -jnp.sum(logp * advantage)
    value_loss = 0.5 * jnp.sum((returns - baseline) ** 2)
    probs = jax.nn.softmax(params["policy"])
    entropy = -jnp.sum(probs * jnp.log(probs), axis=-1).mean()
    return pg + value_loss - 0.01 * entropy, (returns[0], entropy)


@jax.jit
def update(params, key):
    keys = jax.random.split(key, 8)
    grads, (ret0, ent) = jax.vmap(jax.grad(surrogate, has_aux=True), in_axes=(None, 0))(
        params, keys)
    grads = jax.tree.map(lambda g: g.mean(axis=0), grads)
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, ret0.mean(), ent[0]


def main():
    params = {"policy": jnp.zeros((N_STATES, N_ACTIONS)), "baseline": jnp.zeros(N_STATES)}
    key = jax.random.key(17)
    stats = []
    for _ in range(6):
        key, sub = jax.random.split(key)
        params, ret, ent = update(params, sub)
        stats.append((ret, ent))
    traj = rollout(params["policy"], jax.random.key(99))
    return {"stats": stats, "policy": jax.nn.softmax(params["policy"]),
            "baseline": params["baseline"], "actions": traj[1],
            "returns": discounted_returns(traj[2])}
