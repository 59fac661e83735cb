"""Newton's method on the Rosenbrock function: hessian (jacfwd of jacrev) and a linear solve."""
import jax
import jax.numpy as jnp


def rosenbrock(p):
    return (1.0 - p[0]) ** 2 + 10.0 * (p[1] - p[0] ** 2) ** 2


def main():
    p = jnp.array([-1.2, 1.0])
    newton = jax.jit(lambda p: p - jnp.linalg.solve(jax.hessian(rosenbrock)(p),
                                                    jax.grad(rosenbrock)(p)))
    path = [p]
    for _ in range(6):
        path.append(newton(path[-1]))
    return jnp.stack(path), jax.jacrev(jax.grad(rosenbrock))(p)
