"""``jax.custom_gradient`` against JAX 0.10.2: a function returning its value and its own
VJP, through ``grad`` of one or several arguments, a bare cotangent for one argument, pytree
arguments, ``jit`` outside and inside, ``vmap`` and ``jacrev``; and ``jvp`` refused as JAX
refuses it (it is a ``custom_vjp`` in both)."""

import pytest
from oracle import assert_leaves_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")


def _programs(jax):
    jnp = jax.numpy

    @jax.custom_gradient
    def scaled(x, y):
        return x * y, lambda g: (g * y * 10, g * x)

    @jax.custom_gradient
    def bare(x):
        return jnp.sin(x), lambda g: g * 100.0

    @jax.custom_gradient
    def clip(x):
        return x, lambda g: (jnp.clip(g, -1, 1),)

    @jax.custom_gradient
    def tree(p):
        return p["a"] * p["b"].sum(), lambda g: ({"a": g * 2, "b": g * jnp.ones(3)},)

    x3 = jnp.arange(3.0)
    return {
        "grad of the first argument": lambda: jax.grad(scaled)(2.0, 3.0),
        "grad of the second argument": lambda: jax.grad(scaled, 1)(2.0, 3.0),
        "jit of grad": lambda: jax.jit(jax.grad(scaled))(2.0, 3.0),
        "vmap of grad": lambda: jax.vmap(jax.grad(scaled))(jnp.ones(2), jnp.ones(2) * 3),
        "a bare cotangent": lambda: jax.grad(bare)(1.0),
        "the value": lambda: (bare(1.0), jax.jit(bare)(1.0)),
        "used twice": lambda: jax.grad(lambda x: bare(x) * bare(x))(1.0),
        "clipped cotangents": lambda: jax.grad(lambda x: (clip(x * 5) ** 2).sum())(x3),
        "a pytree argument": lambda: jax.grad(tree)({"a": 2.0, "b": x3}),
        "grad of a jit around it": lambda: jax.grad(jax.jit(lambda x: bare(x) * 2))(0.5),
        "value_and_grad": lambda: jax.value_and_grad(lambda x: jax.jit(scaled)(x, x))(1.5),
        "jacrev": lambda: jax.jacrev(clip)(x3),
    }


@pytest.mark.parametrize("name", list(_programs(ours)))
def test_custom_gradient_as_jax(name):
    assert_leaves_as_jax(_programs(ours)[name](), _programs(real)[name]())


def test_jvp_of_custom_gradient_is_refused_as_in_jax():
    for jax in (real, ours):
        f = jax.custom_gradient(lambda x: (x * 2, lambda g: (g * 2,)))
        with pytest.raises(TypeError, match="forward-mode"):
            jax.jvp(f, (1.0,), (1.0,))
