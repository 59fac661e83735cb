"""shard_map bodies with each collective, through each transformation, against JAX 0.10.2 on
a mesh of 4 of the 8 devices: values, shapes and dtypes agree, or both refuse. The law
"every transformation composes with every other" for the SPMD primitive: jacfwd and hessian
(vmap of the JVP) once failed here, because the batched shard_map returned every result
batched, a result that does not depend on the batch included."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import stage4_sharding.numpy as sjnp  # noqa: E402

import stage4_sharding as sj  # noqa: E402

RING = [(k, (k + 1) % 4) for k in range(4)]

BODIES = {
    "psum": lambda L, np_: lambda x: L.lax.psum(np_.sin(x), "i") * x,
    "pmean": lambda L, np_: lambda x: L.lax.pmean(x * x, "i") + x,
    "all_gather": lambda L, np_: lambda x: np_.sum(L.lax.all_gather(x, "i") ** 2, axis=0) * x,
    "all_gather_tiled": lambda L, np_: lambda x: (
        L.lax.all_gather(np_.tanh(x), "i", tiled=True)[:x.shape[0]] * x),
    "ppermute": lambda L, np_: lambda x: L.lax.ppermute(x * 2.0, "i", RING) * x,
    "psum_scatter": lambda L, np_: lambda x: L.lax.psum_scatter(
        np_.concatenate([x, x * 2]), "i", scatter_dimension=0, tiled=True) * x.sum(),
    "axis_index": lambda L, np_: lambda x: (
        x * L.lax.axis_index("i").astype(np_.float32) + np_.exp(x)),
    "all_to_all": lambda L, np_: lambda x: L.lax.all_to_all(
        x.reshape(4, -1), "i", 0, 0, tiled=True).reshape(x.shape) * x,
    "pshuffle": lambda L, np_: lambda x: L.lax.pshuffle(np_.sin(x), "i", [2, 0, 3, 1]) * x,
    "pswapaxes": lambda L, np_: lambda x: L.lax.pswapaxes(
        x.reshape(4, -1), "i", 0).reshape(x.shape) * x,
    # JAX 0.10.2's pbroadcast has no CPU lowering ("Differences from JAX"): on its side, the
    # masked psum its documentation gives as the meaning
    "pbroadcast": lambda L, np_: lambda x: x * (L.lax.pbroadcast(x * x, "i", 1) if L is sj else
                                                L.lax.psum(np_.where(L.lax.axis_index("i") == 1,
                                                                     x * x, 0.0), "i")),
    "psum_in_scan": lambda L, np_: lambda x: L.lax.scan(
        lambda c, v: (c + L.lax.psum(v, "i"), c * v), np_.zeros((), np_.float32), x)[1],
}

X = (np.arange(16, dtype=np.float32) * 0.37 - 2.0) / 3
DIRECTION = np.cos(np.arange(16)).astype(np.float32)
TWO = np.stack([X, X * 0.5 + 1])


def _sum_sq(L, f):
    return lambda x: (f(x) ** 2).sum()


TRANSFORMS = {
    "eager": lambda L, f, x, d, two: f(x),
    "jit": lambda L, f, x, d, two: L.jit(f)(x),
    "grad": lambda L, f, x, d, two: L.grad(_sum_sq(L, f))(x),
    "jit_of_grad": lambda L, f, x, d, two: L.jit(L.grad(lambda x: L.numpy.sin(f(x)).sum()))(x),
    "jvp": lambda L, f, x, d, two: L.jvp(f, (x,), (d,)),
    "vmap": lambda L, f, x, d, two: L.vmap(f)(two),
    "jacfwd": lambda L, f, x, d, two: L.jacfwd(f)(x),
    "jacrev": lambda L, f, x, d, two: L.jacrev(f)(x),
    "grad_of_grad": lambda L, f, x, d, two: L.grad(
        lambda x: (L.grad(_sum_sq(L, f))(x) ** 2).sum())(x),
    "vmap_of_grad": lambda L, f, x, d, two: L.vmap(L.grad(_sum_sq(L, f)))(two),
    "hessian": lambda L, f, x, d, two: L.hessian(lambda x: (f(x) ** 3).sum())(x),
    "grad_of_checkpoint": lambda L, f, x, d, two: L.grad(_sum_sq(L, L.checkpoint(f)))(x),
}


def _run(L, np_, body: str, transform: str):
    mesh = L.make_mesh((4,), ("i",), axis_types=(L.sharding.AxisType.Auto,))
    spec = L.sharding.PartitionSpec("i")
    f = L.shard_map(BODIES[body](L, np_), mesh=mesh, in_specs=spec, out_specs=spec)
    try:
        # JAX's eager mode compiles each primitive apart; one jit of the whole is faster
        # and gives the same values
        run = lambda *args: TRANSFORMS[transform](L, f, *args)  # noqa: E731
        out = (jax.jit(run) if L is jax else run)(X, DIRECTION, TWO)
    except Exception as error:  # noqa: BLE001 -- a refusal is a result to compare
        return error
    leaves = jax.tree_util.tree_leaves(out) if L is jax else sj.tree_util.tree_leaves(out)
    return [np.asarray(leaf) for leaf in leaves]


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("body", list(BODIES))
def test_shard_map_through_a_transformation_equals_jax(body: str, transform: str) -> None:
    theirs, ours = _run(jax, jnp, body, transform), _run(sj, sjnp, body, transform)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"JAX raised {theirs!r}; we did not"
        return
    assert not isinstance(ours, Exception), f"we raised {ours!r}; JAX did not"
    assert [(o.shape, o.dtype) for o in ours] == [(t.shape, t.dtype) for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=2e-4, atol=1e-4)


def test_a_vmapped_shard_map_leaves_a_result_that_ignores_the_batch_unbatched() -> None:
    mesh = sj.make_mesh((4,), ("i",), axis_types=(sj.sharding.AxisType.Auto,))
    spec = sj.sharding.PartitionSpec("i")
    f = sj.shard_map(lambda x, t: (x * 2, t * x), mesh=mesh, in_specs=spec,
                     out_specs=(spec, spec))
    doubled, scaled = sj.vmap(f, in_axes=(None, 0), out_axes=(None, 0))(X, TWO)
    np.testing.assert_allclose(np.asarray(doubled), X * 2)
    np.testing.assert_allclose(np.asarray(scaled), TWO * X)


CLOSED_OVER = {  # a function of c, whose shard_map body closes over c
    "jit": lambda L, f, c: L.jit(f)(c),
    "grad": lambda L, f, c: L.grad(lambda c: (f(c) ** 2).sum())(c),
    "jvp": lambda L, f, c: L.jvp(f, (c,), (np.ones_like(c),)),
    "vmap": lambda L, f, c: L.vmap(f)(np.stack([c, 2 * c])),
    "jit_of_grad": lambda L, f, c: L.jit(L.grad(lambda c: L.numpy.sin(f(c)).sum()))(c),
}


@pytest.mark.parametrize("transform", list(CLOSED_OVER))
def test_a_body_closing_over_a_traced_value_equals_jax(transform: str) -> None:
    """The closed-over value is a tracer of the transformation around the shard_map: it once
    stayed in the body and escaped its trace (UnexpectedTracerError under jit)."""
    def run(L):
        mesh = L.make_mesh((4, 2), ("x", "y"), axis_types=(L.sharding.AxisType.Auto,) * 2)
        spec = L.sharding.PartitionSpec("x", "y")
        x = np.arange(32, dtype=np.float32).reshape(8, 4) / 8

        def f(c):
            return L.shard_map(lambda b: L.lax.psum(b * c, "x") + b, mesh=mesh,
                               in_specs=spec, out_specs=spec)(x)
        leaves = (jax if L is jax else sj).tree_util.tree_leaves(
            CLOSED_OVER[transform](L, f, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))
        return [np.asarray(leaf) for leaf in leaves]

    for o, t in zip(run(sj), run(jax), strict=True):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-5)


def test_axis_index_of_several_axes_and_too_long_out_specs_as_jax() -> None:
    def run(L):
        mesh = L.make_mesh((4, 2), ("x", "y"), axis_types=(L.sharding.AxisType.Auto,) * 2)
        P = L.sharding.PartitionSpec
        index = L.shard_map(lambda b: b + L.lax.axis_index(("x", "y")), mesh=mesh,
                            in_specs=P("x", "y"), out_specs=P("x", "y"))
        too_long = L.shard_map(lambda b: b.sum(), mesh=mesh, in_specs=P("x", "y"),
                               out_specs=P(None, "y"), check_vma=False)
        x = np.zeros((8, 4), np.float32)
        with pytest.raises(ValueError, match="out_specs"):
            too_long(x)
        return np.asarray(index(x))

    np.testing.assert_array_equal(run(sj), run(jax))
