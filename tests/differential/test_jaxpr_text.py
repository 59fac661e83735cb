"""Jaxprs print as JAX 0.10.2 prints them: the same text, character for character, for
programs whose equations are the same in both libraries. A scalar operand stays a literal
(``mul a 2.0:f32[]``), params come in JAX's order with JAX's defaults shown and hidden,
a jaxpr inside a param goes on naming where its outer one stopped (a ``jit``'s program
names its values as the equation does), and lines break where JAX's do (80 columns).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("jax") is None:
    pytest.skip("JAX (the oracle) is not installed", allow_module_level=True)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import stage4_sharding.numpy  # noqa: E402

import stage4_sharding  # noqa: E402

x3 = np.arange(3, dtype=np.float32)
x23 = np.arange(6, dtype=np.float32).reshape(2, 3)
i3 = np.arange(3, dtype=np.int32)

PROGRAMS = {
    "a scalar literal": ("lambda x: x * 2.0 + 1", (x3,)),
    "a traced scalar": ("lambda x, y: x * y", (x3, np.float32(2))),
    "one line": ("lambda x: jnp.sin(x)", (x3,)),
    "reduce_sum's out_sharding": ("lambda x: jnp.sum(x, axis=1)", (x23,)),
    "reduce_max": ("lambda x: jnp.max(x, axis=0)", (x23,)),
    "a mean": ("lambda x: jnp.mean(x)", (x3,)),
    "jit: name first, names shared": ("lambda x: jax.jit(jnp.sin)(x) * x", (x3,)),
    "maximum with a literal": ("lambda x: jnp.maximum(x, 0.0)", (x3,)),
    "broadcast_in_dim": ("lambda x: jnp.broadcast_to(x, (2, 3))", (x3,)),
    "reshape's sharding": ("lambda x: x.reshape(3, 1)", (x3,)),
    "transpose": ("lambda x: x.T", (x23,)),
    "astype": ("lambda x: x.astype(jnp.int32)", (x3,)),
    "dot_general": ("lambda x: jnp.dot(x, x)", (x3,)),
    "matmul": ("lambda x: x @ x.T", (x23,)),
    "an integer literal": ("lambda x: x + 1", (i3,)),
    "integer_pow": ("lambda x: x ** 2", (x3,)),
    "slice": ("lambda x: x[1:]", (x3,)),
    "expand_dims": ("lambda x: x[:, None]", (x3,)),
    "vmap of dot": ("jax.vmap(lambda x: jnp.dot(x, x))", (x23,)),
    # matmul's batch dims: a contraction with nothing broadcast, a transpose where needed
    "matrix @ vector": ("lambda x, v: x @ v", (x23, x3)),
    "vector @ stack": ("lambda v, s: v @ s", (x3[:2], np.ones((4, 2, 3), np.float32))),
    "matrix @ stack": ("lambda x, s: x @ s", (x23, np.ones((4, 3, 2), np.float32))),
    "stack @ unit batch": ("lambda s, u: s @ u",
                           (np.ones((4, 5, 2, 3), np.float32), np.ones((1, 3, 2), np.float32))),
    "batch @ batch": ("lambda a, b: a @ b",
                      (np.ones((4, 2, 3), np.float32), np.ones((4, 3, 2), np.float32))),
    "scan: inner names go on": ("lambda x: jax.lax.scan(lambda c, a: (c + a, c * a), 0.0, x)",
                                (x3,)),
    "cond's branches": ("lambda x: jax.lax.cond(x[0] > 0, jnp.sin, jnp.cos, x)", (x3,)),
    "while": ("lambda x: jax.lax.while_loop(lambda c: c[0] < 10.0, lambda c: c * 2.0, x)",
              (x3,)),
    "fori_loop": ("lambda x: jax.lax.fori_loop(0, 3, lambda i, c: c + i, x)", (x3,)),
    "stop_gradient": ("lambda x: jax.lax.stop_gradient(x) * x", (x3,)),
    "a mean over a dim: a scalar divisor": ("lambda x: jnp.mean(x, 0)", (x23,)),
    "vmap keeps a literal": ("jax.vmap(lambda x: x * 2.0)", (x3,)),
    "vmap of a comparison": ("jax.vmap(lambda x: (x > 1.0) & (x < 2.0))", (x3,)),
}


def text(library, jnp_module, source: str, args) -> str:
    return str(library.make_jaxpr(eval(source, {"jax": library, "jnp": jnp_module}))(*args))


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_jaxpr_prints_as_jaxs(name):
    source, args = PROGRAMS[name]
    want = text(jax, jnp, source, args)
    assert text(stage4_sharding, stage4_sharding.numpy, source, args) == want


def test_typeof_marks_a_weak_type_with_a_tilde():
    ours = stage4_sharding.typeof(stage4_sharding.numpy.asarray(2.0))
    theirs = jax.typeof(jnp.asarray(2.0))
    assert (str(ours), repr(ours)) == (str(theirs), repr(theirs)) == (
        "~float32[]", "ShapedArray(float32[], weak_type=True)")
