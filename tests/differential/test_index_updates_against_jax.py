"""``x.at[idx]`` updates and boolean contractions against JAX 0.10.2, eagerly and under
``jit``. From a probe of 190 ``jnp`` calls run by both libraries: ``at[].power`` and
``at[].apply`` were missing, and ``jnp.dot`` of two boolean arrays ran eagerly but was refused
under ``jit`` (JAX computes a logical or of ands)."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

X = np.arange(5, dtype=np.float32)
RNG = np.random.default_rng(0)
A, B = RNG.random((5, 7)) > 0.7, RNG.random((7, 3)) > 0.7
C = RNG.random((4, 5, 7)) > 0.5


def _cases(jax):
    jnp = jax.numpy
    return {
        "apply at a repeated index": (lambda x: x.at[np.array([1, 1, 3])].apply(
            lambda t: t + 10), X),
        "apply drops an out-of-range index": (lambda x: x.at[np.array([1, 9])].apply(jnp.sin),
                                              X),
        "apply clips": (lambda x: x.at[np.array([1, 9])].apply(jnp.sin, mode="clip"), X),
        "apply to integers": (lambda x: x.astype(np.int32).at[::2].apply(lambda t: t * 3), X),
        "apply of a slice": (lambda x: x.at[1:].apply(jnp.exp), X),
        "apply at a traced unique index": (lambda x, k: x.at[k].apply(
            jnp.exp, unique_indices=True), X, np.int32(2)),
        "apply under vmap": (jax.vmap(lambda x: x.at[1].apply(jnp.exp)), X[None]),
        "power at a repeated index": (lambda x: x.at[np.array([1, 1])].power(2.), X),
        "power of a slice": (lambda x: x.at[2:].power(3), X),
        "power of integers": (lambda x: x.astype(np.int32).at[1].power(2), X),
        "grad of power": (jax.grad(lambda x: x.at[1:].power(3.).sum()), X),
        "dot of booleans": (jnp.dot, A, B),
        "matmul of booleans": (lambda a, b: a @ b, A, B),
        "einsum of booleans": (lambda a, b: jnp.einsum("ij,jk->ik", a, b), A, B),
        "vector dot of booleans": (lambda a: jnp.dot(a[0], a[1]), A),
        "tensordot of booleans": (lambda a: jnp.tensordot(a, a, axes=((1,), (1,))), A),
        "vmap of a boolean dot": (jax.vmap(jnp.dot), C, C[:, 0]),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    def run(jax):
        fun, *args = _cases(jax)[name]
        args = [jax.numpy.asarray(a) for a in args]  # .at needs an Array, eagerly too
        out = (jax.jit(fun) if how == "jit" else fun)(*args)
        return [(str(np.asarray(leaf).dtype), np.asarray(leaf).tolist())
                for leaf in real.tree.leaves(out)]

    got, expected = run(ours), run(real)
    assert [g[0] for g in got] == [e[0] for e in expected]
    for (_, g), (_, e) in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(e, float), rtol=1e-6)


def test_apply_at_traced_indices_asks_for_unique_indices():
    f = ours.jit(lambda x, k: x.at[k].apply(ours.numpy.exp))
    with pytest.raises(ours.errors.ConcretizationTypeError, match="unique_indices=True"):
        f(ours.numpy.arange(3.0), 1)
