"""``lax.pshuffle``, ``lax.pswapaxes`` and ``lax.pbroadcast`` under ``vmap`` with an axis name,
against JAX 0.10.2 (``test_shard_map_against_jax.py`` has them inside ``shard_map``, through
every transformation). JAX's ``pbroadcast`` does not run under ``vmap``: ours is compared
with the masked ``psum`` its documentation gives as its meaning ("Differences from JAX")."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

X = np.arange(12.0, dtype=np.float32).reshape(4, 3) / 7


def _cases(jax):
    lax, jnp = jax.lax, jax.numpy
    return {
        "pshuffle": lambda v: lax.pshuffle(jnp.sin(v), "i", [2, 0, 3, 1]),
        "pshuffle of a pytree": lambda v: lax.pshuffle((v, v > 0.5), "i", [3, 2, 1, 0]),
        "pswapaxes": lambda v: lax.pswapaxes(jnp.stack([v, v * 2, v * 3, v * 4]), "i", 0),
        "pswapaxes of a middle dim": lambda v: lax.pswapaxes(
            jnp.stack([v, -v, v * v, v + 1], axis=1), "i", 1),
        "pbroadcast": (lambda v: lax.pbroadcast(v * v, "i", 2)) if jax is ours else (
            lambda v: lax.psum(jnp.where(lax.axis_index("i") == 2, v * v, 0.0), "i")),
        "pbroadcast of booleans": (lambda v: lax.pbroadcast(v > 0.5, "i", 3)) if jax is ours
        else (lambda v: lax.psum(jnp.where(lax.axis_index("i") == 3, v > 0.5, False)
                                 .astype(jnp.int32), "i") > 0),
    }


@pytest.mark.parametrize("how", ["vmap", "jit", "grad"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    def run(jax):
        f = jax.vmap(_cases(jax)[name], axis_name="i")
        if how == "jit":
            return jax.jit(f)(X)
        if how == "grad":
            if name.endswith(("booleans", "pytree")):
                pytest.skip("a boolean result has no gradient")
            return jax.grad(lambda x: (f(x) * np.cos(np.arange(f(x).size)).reshape(
                f(x).shape).astype(np.float32)).sum())(X)
        return f(X)
    theirs, mine = run(real), run(ours)
    for t, o in zip(real.tree_util.tree_leaves(theirs), real.tree_util.tree_leaves(mine)):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)


def test_a_perm_that_is_not_a_permutation_is_refused_as_jax():
    for lib in (real, ours):
        with pytest.raises(ValueError, match="perm"):
            lib.vmap(lambda v: lib.lax.pshuffle(v, "i", [0, 0, 1, 2]), axis_name="i")(X)


def test_pswapaxes_needs_the_dim_to_have_the_axis_size():
    for lib in (real, ours):
        with pytest.raises((TypeError, ValueError)):
            lib.vmap(lambda v: lib.lax.pswapaxes(v, "i", 0), axis_name="i")(X)
