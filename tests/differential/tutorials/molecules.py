"""Lennard-Jones energy of a small cluster: pair terms over jnp.triu_indices, forces by grad,
the Hessian's eigenvalues by eigh, and gradient descent with lax.scan."""
import jax
import jax.numpy as jnp
from jax import lax

N = 5


def energy(positions):
    i, j = jnp.triu_indices(N, k=1)
    r2 = jnp.sum((positions[i] - positions[j]) ** 2, axis=-1)
    inv6 = (1.0 / r2) ** 3
    return jnp.sum(4.0 * (inv6 ** 2 - inv6))


def relax(positions):
    def step(x, _):
        g = jax.grad(energy)(x)
        g = g / jnp.maximum(1.0, jnp.linalg.norm(g, axis=-1, keepdims=True))
        x = x - 0.01 * g
        return x, energy(x)
    return lax.scan(step, positions, None, length=40)


def main():
    base = jnp.array([[0.0, 0, 0], [1.1, 0, 0], [0, 1.1, 0], [0, 0, 1.1], [1.1, 1.1, 0.0]])
    noise = 0.05 * jax.random.normal(jax.random.key(4), base.shape)
    x, energies = jax.jit(relax)(base + noise)
    hess = jax.hessian(energy)(base + noise).reshape(3 * N, 3 * N)
    eigvals = jnp.linalg.eigvalsh(hess)
    return energies, x, -jax.grad(energy)(base + noise), eigvals[-4:]
