"""``shard_map`` with every collective, against a NumPy reference of what each device holds;
``shard_map`` under ``jit``, ``grad``, ``jvp`` and ``vmap``; and its errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stage4_sharding.shard_map import varying_axes
from stage4_sharding.sharding import NamedSharding, P

import stage4_sharding as jax
from stage4_sharding import lax
from stage4_sharding import numpy as jnp

rng = np.random.default_rng(0)
X = rng.standard_normal((16, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("i",))


@pytest.fixture(scope="module")
def mesh2():
    return jax.make_mesh((4, 2), ("x", "y"))


def blocks(x, n, axis=0):
    return np.split(x, n, axis)


def run(f, mesh, in_specs, out_specs, *args):
    """The shard_map eagerly and under jit: both must agree."""
    mapped = jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    eager, jitted = mapped(*args), jax.jit(mapped)(*args)
    np.testing.assert_allclose(np.asarray(eager), np.asarray(jitted), rtol=1e-6)
    return np.asarray(eager)


def test_psum_pmean_pmax_pmin(mesh):
    b = blocks(X, 8)
    for collective, reduce in [(lax.psum, np.sum), (lax.pmax, np.max), (lax.pmin, np.min),
                               (lax.pmean, np.mean)]:
        out = run(lambda v, c=collective: c(v, "i"), mesh, P("i"), P(), X)
        np.testing.assert_allclose(out, reduce(np.stack(b), 0), rtol=1e-5, atol=1e-6)


def test_all_gather_stacked_and_tiled(mesh):
    out = run(lambda v: lax.all_gather(v, "i", tiled=True), mesh, P("i"), P(), X)
    np.testing.assert_array_equal(out, X)
    out = run(lambda v: lax.all_gather(v, "i", axis=1), mesh, P("i"), P(), X)
    np.testing.assert_array_equal(out, np.stack(blocks(X, 8), 1))


def test_psum_scatter_is_a_reduce_scatter(mesh):
    out = run(lambda v: lax.psum_scatter(v, "i", scatter_dimension=0, tiled=True), mesh,
              P(), P("i"), X)
    np.testing.assert_allclose(out, 8 * X, rtol=1e-6)
    y = rng.standard_normal((64, 8)).astype(np.float32)  # 8 blocks of (8, 8), each summed
    out = run(lambda v: lax.psum_scatter(v, "i"), mesh, P("i"), P("i"), y)
    np.testing.assert_allclose(out, np.sum(np.stack(blocks(y, 8)), 0).reshape(64), rtol=1e-5)


def test_ppermute_shifts_blocks_and_zeros_the_unsent(mesh):
    shift = [(k, (k + 1) % 8) for k in range(8)]
    out = run(lambda v: lax.ppermute(v, "i", shift), mesh, P("i"), P("i"), X)
    np.testing.assert_array_equal(out, np.roll(X, 2, axis=0))
    out = run(lambda v: lax.ppermute(v, "i", [(0, 7)]), mesh, P("i"), P("i"), X)
    expected = np.zeros_like(X)
    expected[14:] = X[:2]
    np.testing.assert_array_equal(out, expected)


def test_all_to_all_moves_the_split_to_another_dim(mesh):
    y = rng.standard_normal((16, 16)).astype(np.float32)
    out = run(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), mesh, P("i"), P(None, "i"),
              y)
    np.testing.assert_array_equal(out, y)


def test_axis_index_on_a_2d_mesh(mesh2):
    f = jax.shard_map(lambda v: v * 0 + lax.axis_index("x") * 10 + lax.axis_index("y"),
                      mesh=mesh2, in_specs=P("x", "y"), out_specs=P("x", "y"))
    out = np.asarray(f(np.zeros((4, 2), np.float32)))
    np.testing.assert_array_equal(out, np.array([[0, 1], [10, 11], [20, 21], [30, 31]]))


def test_collectives_over_one_axis_of_a_2d_mesh(mesh2):
    z = rng.standard_normal((8, 4)).astype(np.float32)
    out = run(lambda v: lax.psum(v, "y"), mesh2, P("x", "y"), P("x"), z)
    expected = np.concatenate([b.reshape(2, 2, 2).sum(1) for b in blocks(z, 4)], 0)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.task4_4
def test_varying_axes_follows_collectives_and_nested_programs():
    grid = jax.make_mesh((4, 2), ("data", "model"))

    @jax.jit
    def doubled_row_sums(block):
        return lax.psum(block, "model") * 2

    def body(block):
        rows = doubled_row_sums(block)  # a psum inside a jit counts
        everything = lax.psum(rows, "data")
        column = lax.axis_index("model") + 0 * everything
        swapped = lax.ppermute(everything, "data", [(0, 1), (1, 0), (2, 3), (3, 2)])
        both = lax.psum(block, ("data", "model"))  # a tuple of names
        return rows, everything, column, swapped, both, 2.0

    specs = (P("data"), P(), P(None, "model"), P("data"), P(), P())
    mapped = jax.shard_map(body, mesh=grid, in_specs=P("data", "model"), out_specs=specs)
    program = jax.make_jaxpr(mapped)(np.ones((8, 4), np.float32)).jaxpr.eqns[0].params["body"]
    found = [sorted(axes) for axes in varying_axes(program.jaxpr, [{"data", "model"}])]
    assert found == [["data"], [], ["model"], ["data"], [], []]
    found = [sorted(axes) for axes in varying_axes(program.jaxpr, [set()])]
    assert found == [[], [], ["model"], ["data"], [], []]


@pytest.mark.task4_4
def test_out_specs_that_claim_replication_of_a_varying_value_are_an_error(mesh):
    with pytest.raises(ValueError, match=r"out_specs\[0\] = P\(\) says output 0 "
                                         r"\(f32\[\] per device\) is the same on every device "
                                         r"along mesh axis 'i', but it varies along it"):
        jax.shard_map(lambda v: v.sum(), mesh=mesh, in_specs=P("i"), out_specs=P())(X)
    # axis_index varies; psum makes it the same again
    with pytest.raises(ValueError, match="varies along it"):
        jax.shard_map(lambda v: v + lax.axis_index("i"), mesh=mesh, in_specs=P(),
                      out_specs=P())(X)
    jax.shard_map(lambda v: v.sum(), mesh=mesh, in_specs=P("i"), out_specs=P(),
                  check_vma=False)(X)


def test_specs_errors(mesh):
    with pytest.raises(ValueError, match="in_specs has 1 entries but there are 2 arguments"):
        jax.shard_map(lambda a, b: a, mesh=mesh, in_specs=(P("i"),), out_specs=P("i"))(X, X)
    with pytest.raises(ValueError, match="not divisible"):
        jax.shard_map(lambda a: a, mesh=mesh, in_specs=P(None, "i"), out_specs=P())(X[:, :6])
    with pytest.raises(ValueError, match="needs a mesh"):
        jax.shard_map(lambda a: a, in_specs=P(), out_specs=P())(X)


def numerical_grad(f, x, eps=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    for index in np.ndindex(*x.shape):
        up, down = x.astype(np.float64).copy(), x.astype(np.float64).copy()
        up[index] += eps
        down[index] -= eps
        g[index] = (float(f(up.astype(np.float32))) - float(f(down.astype(np.float32)))) / (2 * eps)
    return g


@pytest.mark.task4_4
@pytest.mark.parametrize("name", ["psum", "all_gather", "ppermute", "all_to_all",
                                  "psum_scatter", "replicated input"])
def test_grad_of_shard_map_matches_numerical(mesh, name):
    y = rng.standard_normal((16, 16)).astype(np.float32) * 0.5
    bodies = {
        "psum": (lambda v: lax.psum(jnp.sin(v).sum(), "i"), P("i"), P()),
        "all_gather": (lambda v: (lax.all_gather(v, "i", tiled=True) ** 2).sum() / 8,
                       P("i"), P()),
        "ppermute": (lambda v: lax.ppermute(v * v, "i", [(k, (k + 3) % 8) for k in range(8)])
                     * jnp.arange(16.0), P("i"), P("i")),
        "all_to_all": (lambda v: jnp.tanh(lax.all_to_all(v, "i", 1, 0, tiled=True)),
                       P("i"), P(None, "i")),
        "psum_scatter": (lambda v: lax.psum_scatter(v * v, "i", scatter_dimension=1,
                                                    tiled=True), P(), P(None, "i")),
        "replicated input": (lambda v: v * lax.axis_index("i"), P(), P("i")),
    }
    body, in_spec, out_spec = bodies[name]
    mapped = jax.shard_map(body, mesh=mesh, in_specs=in_spec, out_specs=out_spec)
    weights = rng.standard_normal(np.shape(np.asarray(mapped(y)))).astype(np.float32)

    def loss(v):
        return (mapped(v) * weights).sum()

    expected = numerical_grad(loss, y)
    for g in (jax.grad(loss)(y), jax.jit(jax.grad(loss))(y)):
        np.testing.assert_allclose(np.asarray(g), expected, rtol=2e-2, atol=2e-2)


def test_the_transpose_of_all_gather_is_a_reduce_scatter(mesh):
    f = jax.shard_map(lambda v: (lax.all_gather(v, "i", tiled=True) ** 2).sum(), mesh=mesh,
                      in_specs=P("i"), out_specs=P())
    step = jax.jit(jax.grad(f)).lower(X).compile()
    kinds = [c.kind for c in step.collectives()]
    assert "reduce-scatter" in kinds and "all-reduce" not in kinds


def test_jvp_and_vmap_of_shard_map(mesh):
    f = jax.shard_map(lambda v: lax.psum(jnp.sin(v), "i"), mesh=mesh, in_specs=P("i"),
                      out_specs=P())
    t = rng.standard_normal(X.shape).astype(np.float32)
    out, out_dot = jax.jvp(f, (X,), (t,))
    np.testing.assert_allclose(np.asarray(out), np.sin(X).reshape(8, 2, 8).sum(0), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out_dot),
                               (np.cos(X) * t).reshape(8, 2, 8).sum(0), rtol=1e-4, atol=1e-5)
    batch = np.stack([X, 2 * X, -X])
    got = np.asarray(jax.vmap(f)(batch))
    np.testing.assert_allclose(got, np.stack([np.asarray(f(b)) for b in batch]), rtol=1e-5)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(n=st.sampled_from([1, 2, 4, 8]), rows=st.sampled_from([8, 16]))
def test_shard_map_of_a_local_function_equals_the_function(n, rows):
    """Elementwise work needs no communication: any split gives the same result."""
    mesh = jax.make_mesh((n,), ("k",), devices=jax.devices()[:n])
    z = rng.standard_normal((rows, 3)).astype(np.float32)
    f = jax.shard_map(lambda v: jnp.tanh(v) * 2, mesh=mesh, in_specs=P("k"), out_specs=P("k"))
    np.testing.assert_allclose(np.asarray(f(z)), np.tanh(z) * 2, rtol=1e-6)
    assert str(jax.typeof(f(z))) == (f"float32[{rows}@k,3]")
    assert isinstance(f(z).sharding, NamedSharding)
