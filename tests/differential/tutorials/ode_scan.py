"""An ODE (a damped oscillator) integrated by RK4 steps in lax.scan, and the gradient of the
final state in the damping constant."""
import jax
import jax.numpy as jnp


def rk4(f, y, dt):
    k1 = f(y)
    k2 = f(y + 0.5 * dt * k1)
    k3 = f(y + 0.5 * dt * k2)
    k4 = f(y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def trajectory(damping, y0):
    def field(y):
        return jnp.array([y[1], -y[0] - damping * y[1]])

    def step(y, _):
        y = rk4(field, y, 0.1)
        return y, y

    return jax.lax.scan(step, y0, None, length=50)


def main():
    y0 = jnp.array([1.0, 0.0])
    final, path = jax.jit(trajectory)(0.3, y0)
    slope = jax.grad(lambda c: trajectory(c, y0)[0][0])(0.3)
    return final, path, slope
