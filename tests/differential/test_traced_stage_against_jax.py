"""``jax.jit(f).trace(...)``, the first ahead-of-time stage, against JAX 0.10.2: the jaxpr,
the results' ShapeDtypeStructs, the function's name, ShapeDtypeStructs for arguments, static
arguments, and ``.lower().compile()`` giving JAX's values."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")


def _traced(jax):
    jnp = jax.numpy

    def pair(x, y):
        return x * y, {"a": x.sum()}

    return {
        "arrays": (jax.jit(pair).trace(jnp.ones(3), 2.0), (jnp.ones(3), 2.0)),
        "a ShapeDtypeStruct": (jax.jit(lambda x: x * 2).trace(
            jax.ShapeDtypeStruct((2,), np.float32)), (jnp.ones(2),)),
        "a static argument": (jax.jit(lambda x, n: x * n, static_argnums=1).trace(
            jnp.ones(2), 3), (jnp.ones(2),)),
    }


@pytest.mark.parametrize("name", list(_traced(ours)))
def test_traced_as_jax(name):
    (got, args), (expected, jax_args) = _traced(ours)[name], _traced(real)[name]
    assert str(got.jaxpr) == str(expected.jaxpr)
    assert str(got.out_info) == str(expected.out_info)
    assert got.fun_name == expected.fun_name
    for g, e in zip(real.tree.leaves(got.lower().compile()(*args)),
                    real.tree.leaves(expected.lower().compile()(*jax_args))):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e))
