"""A numerically safe log(1 + exp(x)) with custom_jvp: its gradient stays finite at large x
where the plain formula's would be nan, under jit, grad and vmap; and a rule given per
argument with defjvps."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * jax.nn.sigmoid(x)


@jax.custom_jvp
def scaled_sin(x, y):
    return jnp.sin(x) * y


scaled_sin.defjvps(lambda x_dot, out, x, y: jnp.cos(x) * x_dot * y,
                   lambda y_dot, out, x, y: jnp.sin(x) * y_dot)


def main():
    xs = jnp.array([-3.0, 0.0, 5.0, 80.0])
    grads = jax.jit(jax.vmap(jax.grad(log1pexp)))(xs)
    second = jax.vmap(jax.grad(jax.grad(log1pexp)))(xs[:3])
    both = jax.jit(jax.grad(lambda x, y: jnp.sum(scaled_sin(x, y)), argnums=(0, 1)))(xs, 2 * xs)
    return log1pexp(xs), grads, second, both
