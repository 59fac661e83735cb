"""A gravitational N-body simulation: softened pairwise potential energy, forces as
-jax.grad of the energy, velocity-Verlet steps in lax.fori_loop, an adaptive step count
found with lax.while_loop, energy and momentum drift, and vmap over several systems."""
import jax
import jax.numpy as jnp
from jax import lax

N, SOFT, G = 5, 0.3, 1.0


def potential(pos, mass):
    diff = pos[:, None, :] - pos[None, :, :]
    r = jnp.sqrt(jnp.sum(diff ** 2, axis=-1) + SOFT ** 2)
    pair = -G * mass[:, None] * mass[None, :] / r
    return 0.5 * jnp.sum(jnp.where(jnp.eye(N, dtype=bool), 0.0, pair))


def kinetic(vel, mass):
    return 0.5 * jnp.sum(mass[:, None] * vel ** 2)


def verlet(state, mass, dt, steps):
    force = jax.grad(lambda p: -potential(p, mass))

    def body(_, s):
        pos, vel = s
        acc = force(pos) / mass[:, None]
        vel_half = vel + 0.5 * dt * acc
        pos = pos + dt * vel_half
        vel = vel_half + 0.5 * dt * force(pos) / mass[:, None]
        return pos, vel

    return lax.fori_loop(0, steps, body, state)


def closest_approach_steps(pos, vel, dt):
    """Halve dt until the fastest body moves less than 0.01 per step."""
    speed = jnp.max(jnp.linalg.norm(vel, axis=-1))
    def cond(c):
        return (c[0] * speed > 0.01) & (c[1] < 20)
    def body(c):
        return c[0] / 2, c[1] + 1
    return lax.while_loop(cond, body, (dt, 0))


def simulate(pos, vel, mass):
    dt, halvings = closest_approach_steps(pos, vel, 0.2)
    e0 = potential(pos, mass) + kinetic(vel, mass)
    pos1, vel1 = verlet((pos, vel), mass, dt, 40)
    e1 = potential(pos1, mass) + kinetic(vel1, mass)
    momentum = jnp.sum(mass[:, None] * vel1, axis=0)
    return {"pos": pos1, "energy_drift": (e1 - e0) / jnp.abs(e0), "momentum": momentum,
            "dt": dt, "halvings": halvings}


def main():
    k1, k2, k3 = jax.random.split(jax.random.key(4), 3)
    pos = jax.random.normal(k1, (3, N, 2))
    vel = 0.3 * jax.random.normal(k2, (3, N, 2))
    vel = vel - vel.mean(axis=1, keepdims=True)
    mass = jax.random.uniform(k3, (3, N), minval=0.5, maxval=1.5)
    vel = vel - (jnp.sum(mass[..., None] * vel, axis=1, keepdims=True)
                 / jnp.sum(mass, axis=1)[:, None, None])
    out = jax.jit(jax.vmap(simulate))(pos, vel, mass)
    forces = jax.grad(potential)(pos[0], mass[0])
    sensitivity = jax.grad(lambda m: verlet((pos[0], vel[0]), m, 0.01, 10)[0][0, 0])(mass[0])
    return out, forces, jnp.sum(forces, axis=0), sensitivity
