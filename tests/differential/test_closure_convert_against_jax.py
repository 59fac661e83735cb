"""``jax.closure_convert`` against JAX 0.10.2: a concrete closed-over value stays inside (no
constants), a traced one becomes an explicit constant (under ``grad`` and ``jit``), and the use
it exists for: a ``custom_vjp`` that differentiates what its function closed over, through
``grad``, ``jit`` and ``vmap``."""

import functools

import pytest
from oracle import assert_leaves_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")


def _programs(jax):
    jnp = jax.numpy

    def f(x, y):
        converted, consts = jax.closure_convert(lambda z: jnp.sin(z) * y + 2.0, x)
        return converted(x, *consts), len(consts)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def apply(g, x, *consts):
        return g(x, *consts)

    def apply_fwd(g, x, *consts):
        return g(x, *consts), (x, consts)

    def apply_bwd(g, residuals, ct):
        x, consts = residuals
        return jax.vjp(g, x, *consts)[1](ct)

    apply.defvjp(apply_fwd, apply_bwd)

    def h(x, w):
        converted, consts = jax.closure_convert(lambda z: jnp.tanh(z * w).sum(), x)
        return apply(converted, x, *consts)

    x = jnp.arange(3.0)
    return {
        "a concrete closure": lambda: f(1.0, 3.0),
        "a traced closure under grad": lambda: jax.grad(lambda y: f(1.0, y)[0])(3.0),
        "under jit": lambda: jax.jit(lambda x, y: f(x, y)[0])(1.0, 3.0),
        "custom_vjp of a closure": lambda: jax.grad(h, (0, 1))(x, 0.5),
        "custom_vjp under jit": lambda: jax.jit(jax.grad(h, 1))(x, 0.5),
        "custom_vjp under vmap": lambda: jax.vmap(lambda w: h(x, w))(x),
    }


@pytest.mark.parametrize("name", list(_programs(ours)))
def test_closure_convert_as_jax(name):
    assert_leaves_as_jax(_programs(ours)[name](), _programs(real)[name]())
