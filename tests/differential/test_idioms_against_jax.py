"""Control flow and transformation idioms against JAX 0.10.2, eagerly and under ``jit``: the
edges of ``switch``, ``fori_loop``, ``scan`` and ``cond``, derivatives through loops, sorts,
clips and ties, and the common calls of ``grad``/``vmap``/``jvp``. From a probe of 34 idioms;
it found that an eager ``cond``/``switch`` returned a branch's Python numbers where JAX
returns weakly typed arrays."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

X = np.arange(5, dtype=np.float32)


def _cases(jax):
    jnp, lax = jax.numpy, jax.lax
    return {
        "switch clamps its index": (lambda i: [lax.switch(k, [lambda: 1., lambda: 2., lambda: 3.])
                                               for k in (i - 5, i, i + 7)], np.int32(1)),
        "cond of Python numbers": (lambda p: lax.cond(p, lambda: 1., lambda: 2.), True),
        "fori_loop over an empty range": (lambda x: lax.fori_loop(5, 2, lambda i, c: c + i,
                                                                 x[0]), X),
        "fori_loop unrolled": (lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2 + i, x[1],
                                                       unroll=2), X),
        "scan reversed and unrolled": (lambda x: lax.scan(lambda c, v: (c + v, c * v), 0., x,
                                                          reverse=True, unroll=3), X),
        "scan without xs": (lambda: lax.scan(lambda c, _: (c + 1, c), 0, None, length=4),),
        "map in batches": (lambda x: lax.map(lambda v: v * 2, x, batch_size=2), X),
        "associative_scan": (lambda x: lax.associative_scan(jnp.maximum, x[::-1],
                                                            reverse=True), X),
        "while_loop of a tuple": (lambda x: lax.while_loop(
            lambda c: c[0] < 10, lambda c: (c[0] + c[1], c[1] * 2), (x[0], x[1])), X),
        "select_n of three cases": (lambda x: lax.select_n(jnp.array([0, 2, 1, 0, 2]), x, -x,
                                                           x * 10), X),
        "grad of a reversed cumsum": (jax.grad(lambda x: jnp.sum(lax.cumsum(x, reverse=True)
                                                                 ** 2)), X),
        "grad through fori_loop": (jax.grad(lambda v: lax.fori_loop(0, 3, lambda i, c: c * v,
                                                                    1.0)), np.float32(1.5)),
        "jacrev of cond": (jax.jacrev(lambda v: lax.cond(v[0] > 1, jnp.sin, jnp.cos, v)), X),
        "hessian": (jax.hessian(lambda v: jnp.sum(v ** 3)), X[:3]),
        "grad of checkpoint": (jax.grad(jax.checkpoint(lambda v: jnp.sum(jnp.sin(v) ** 2))), X),
        "grad of an out-of-range index": (jax.grad(lambda v, i: v[i] * 3), X, np.int32(7)),
        "grad of top_k": (jax.grad(lambda v: lax.top_k(v, 2)[0].sum()), X),
        "grad of clip at its bounds": (jax.grad(lambda v: jnp.clip(v, 1.0, 3.0).sum()), X),
        "grad of abs at 0": (jax.grad(lambda v: jnp.abs(v).sum()), X - 2),
        "grad of max with ties": (jax.grad(jnp.max), np.array([1., 3., 3.], np.float32)),
        "grad of a where around sqrt": (jax.grad(lambda v: jnp.where(v > 0, jnp.sqrt(v),
                                                                     0.).sum()), X - 1),
        "grad of norm at 0": (jax.grad(jnp.linalg.norm), np.zeros(3, np.float32)),
        "value_and_grad with aux": (jax.value_and_grad(lambda v: (jnp.sum(v ** 2), v.mean()),
                                                       has_aux=True), X),
        "vmap with out_axes 1": (jax.vmap(lambda a, b: a * b, in_axes=(0, None), out_axes=1),
                                 np.ones((5, 2), np.float32) * X[:, None], X[:2]),
        "vmap with a named axis": (jax.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i"),
                                   X + 1),
        "linearize": (lambda x: jax.linearize(jnp.exp, x)[1](jnp.ones_like(x)), X),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_idiom_as_jax(name, how):
    def run(jax):
        fun, *args = _cases(jax)[name]
        out = (jax.jit(fun) if how == "jit" else fun)(*args)
        return [(str(np.asarray(leaf).dtype), np.asarray(leaf).tolist())
                for leaf in real.tree.leaves(out)]

    got, expected = run(ours), run(real)
    assert [g[0] for g in got] == [e[0] for e in expected]
    for (_, g), (_, e) in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(e, float), rtol=1e-5,
                                   atol=1e-6)
