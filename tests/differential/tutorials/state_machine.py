"""A traffic-light controller as a batched state machine: lax.switch over modes with dict
operands, lax.cond returning tuples, lax.select and jnp.piecewise for the timers, run for
many steps by lax.scan inside jit and vmapped over intersections (so the branches become
selects), with a differentiable soft cost and its gradient in the thresholds."""
import jax
import jax.numpy as jnp
from jax import lax

GREEN, YELLOW, RED = 0, 1, 2


def green(s, p):
    switch = (s["timer"] >= p["green_min"]) & (s["queue"] < p["queue_hi"])
    return {"mode": jnp.where(switch, YELLOW, GREEN),
            "timer": jnp.where(switch, 0.0, s["timer"] + 1),
            "queue": jnp.maximum(s["queue"] - 2.0, 0.0)}


def yellow(s, p):
    done = s["timer"] >= 2.0
    return {"mode": jnp.where(done, RED, YELLOW), "timer": jnp.where(done, 0.0, s["timer"] + 1),
            "queue": jnp.maximum(s["queue"] - 0.5, 0.0)}


def red(s, p):
    done = lax.select(s["queue"] > p["queue_hi"], s["timer"] >= 1.0, s["timer"] >= p["red_max"])
    return {"mode": jnp.where(done, GREEN, RED), "timer": jnp.where(done, 0.0, s["timer"] + 1),
            "queue": s["queue"]}


def transition(s, p, arrivals):
    s = dict(s, queue=s["queue"] + arrivals)
    s = lax.switch(s["mode"], [green, yellow, red], s, p)
    overflow, penalty = lax.cond(s["queue"] > 10.0,
                                 lambda q: (True, (q - 10.0) ** 2),
                                 lambda q: (False, jnp.zeros_like(q)), s["queue"])
    wait_cost = jnp.piecewise(s["queue"], [s["queue"] < 3.0, s["queue"] >= 3.0],
                              [lambda q: 0.1 * q, lambda q: 0.3 + 0.5 * (q - 3.0)])
    return s, (s["mode"], overflow, wait_cost + penalty)


def run_intersection(p, arrivals):
    s0 = {"mode": jnp.int32(GREEN), "timer": jnp.float32(0.0), "queue": jnp.float32(0.0)}
    final, (modes, overflow, cost) = lax.scan(lambda s, a: transition(s, p, a), s0, arrivals)
    return final, modes, overflow, cost


def soft_cost(p, arrivals):
    """A differentiable surrogate: a leaky queue whose service rate is a sigmoid of the
    thresholds."""
    def body(q, a):
        rate = 2.0 * jax.nn.sigmoid(p["queue_hi"] - q) * jax.nn.sigmoid(p["red_max"] - 2.0)
        q = jax.nn.softplus(q + a - rate)
        return q, q
    _, qs = lax.scan(body, 0.0, arrivals)
    return jnp.mean(qs ** 2) + 0.01 * (p["green_min"] ** 2)


def main():
    params = {"green_min": 3.0, "queue_hi": 4.0, "red_max": 4.0}
    arrivals = jax.random.poisson(jax.random.key(12), jnp.array([[0.5], [1.0], [1.5]]),
                                  (3, 20)).astype(jnp.float32)
    run = jax.jit(jax.vmap(run_intersection, in_axes=(None, 0)))
    final, modes, overflow, cost = run(params, arrivals)
    single = run_intersection(params, arrivals[1])
    g = jax.jit(jax.grad(soft_cost))(params, arrivals[2])
    per_row = jax.vmap(jax.grad(soft_cost), in_axes=(None, 0))(params, arrivals)
    return {"final": final, "modes": modes, "overflow": overflow, "cost": cost.sum(axis=1),
            "single_modes": single[1], "grad": g, "per_row": per_row,
            "mode_counts": jax.vmap(lambda m: jnp.bincount(m, length=3))(modes)}
