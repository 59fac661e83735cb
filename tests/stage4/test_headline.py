"""The issue's program, verbatim with the import swapped, and what it promises: gradients
equal one device's and carry their primals' shardings, sharded types inside traced
programs, eager operations on sharded arrays through the same partitioner, and every
transformation over sharded arrays."""

import numpy as np
import pytest
from stage4_sharding.sharding import NamedSharding, P
from stage4_sharding.sharding_rules import ShardingTypeError

import stage4_sharding as jax
from stage4_sharding import numpy as jnp


def loss_fn(params, batch):
    inputs, targets = batch
    hidden = jnp.tanh(inputs @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] + params["b2"] - targets) ** 2)


rng = np.random.default_rng(0)
PARAMS = {"w1": rng.standard_normal((16, 32)).astype(np.float32) / 4,
          "b1": rng.standard_normal(32).astype(np.float32),
          "w2": rng.standard_normal((32, 8)).astype(np.float32) / 6,
          "b2": rng.standard_normal(8).astype(np.float32)}
INPUTS = rng.standard_normal((64, 16)).astype(np.float32)
TARGETS = rng.standard_normal((64, 8)).astype(np.float32)


@pytest.fixture
def no_mesh_after():
    yield
    jax.set_mesh(None)


def assert_trees_close(got, expected):
    for g, e in zip(jax.tree_leaves(got), jax.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-6)


def test_the_issue_program_runs_verbatim(no_mesh_after):
    params, inputs, targets = PARAMS, INPUTS, TARGETS
    expected = jax.grad(loss_fn)(params, (inputs, targets))

    from stage4_sharding.sharding import AxisType, set_mesh
    from stage4_sharding.sharding import PartitionSpec as P  # noqa: N817 -- as in the issue
    mesh = jax.make_mesh((8,), ('data',), axis_types=(AxisType.Explicit,))
    set_mesh(mesh)
    inputs, targets = jax.device_put((inputs, targets), P('data'))
    grad_fn = jax.jit(jax.grad(loss_fn))
    grads = grad_fn(params, (inputs, targets))

    assert str(jax.typeof(inputs)) == "float32[64@data,16]"
    assert_trees_close(grads, expected)
    for name, g in grads.items():  # replicated, as their parameters
        assert str(jax.typeof(g)) == str(jax.typeof(jnp.asarray(params[name])))
        assert g.sharding == NamedSharding(mesh, P())
    # each device holds its own copy of each gradient, and its block of the inputs
    assert {d.id for d in grads["w1"].devices()} == set(range(8))
    assert [s.data.shape for s in inputs.addressable_shards] == [(8, 16)] * 8


def test_traced_types_carry_shardings():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(INPUTS, NamedSharding(mesh, P("x", "y")))
    seen = []

    def f(v):
        seen.append(str(jax.typeof(v)))
        return jnp.sin(v).sum(1)

    text = str(jax.make_jaxpr(f)(x))
    assert "a:f32[64@x,16@y]" in text and "f32[64@x]" in text
    jax.jit(f)(x)
    assert seen[-1] == "float32[64@x,16@y]"


def test_gradients_carry_the_primal_sharding():
    mesh = jax.make_mesh((8,), ("d",))
    w = jax.device_put(PARAMS["w1"], NamedSharding(mesh, P("d")))
    x = jax.device_put(INPUTS, NamedSharding(mesh, P("d")))

    def f(w, x):
        return (x @ jax.reshard(w, NamedSharding(mesh, P())) ** 2).sum()

    for g in (jax.grad(f)(w, x), jax.jit(jax.grad(f))(w, x)):
        assert g.sharding == w.sharding
        expected = jax.grad(f)(PARAMS["w1"], INPUTS)
        np.testing.assert_allclose(np.asarray(g), np.asarray(expected), rtol=1e-4)


def test_eager_gradient_needs_parameters_on_the_mesh():
    """Eagerly, a plain parameter has no sharding for its gradient to take; placed on the
    mesh (replicated) it does. Under jit, plain arguments are typed replicated."""
    mesh = jax.make_mesh((8,), ("d",))
    batch = jax.device_put((INPUTS, TARGETS), NamedSharding(mesh, P("d")))
    with pytest.raises(ShardingTypeError, match="ambiguous.*out_sharding"):
        jax.grad(loss_fn)(PARAMS, batch)
    params = jax.device_put(PARAMS, NamedSharding(mesh, P()))
    assert_trees_close(jax.grad(loss_fn)(params, batch),
                       jax.grad(loss_fn)(PARAMS, (INPUTS, TARGETS)))


def test_eager_operations_run_on_the_devices_with_collectives():
    mesh = jax.make_mesh((8,), ("d",))
    x = jax.device_put(INPUTS, NamedSharding(mesh, P("d")))
    with jax.record_collectives() as log:
        total = x.sum()
        rows = jnp.tanh(x).sum(1)
    assert [c.kind for c in log] == ["all-reduce"]
    np.testing.assert_allclose(float(total), INPUTS.sum(), rtol=1e-4)
    assert str(jax.typeof(rows)) == "float32[64@d]"


def test_vmap_and_jvp_over_sharded_arrays():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(INPUTS, NamedSharding(mesh, P("x")))
    w = PARAMS["w1"]

    def per_example(v):
        return jnp.tanh(v @ w).sum()

    expected = np.array([float(per_example(row)) for row in INPUTS])
    for f in (jax.vmap(per_example), jax.jit(jax.vmap(per_example))):
        out = f(x)
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-4)
        assert str(jax.typeof(out)) == "float32[64@x]"
    t = np.ones_like(INPUTS)
    primal, tangent = jax.jvp(lambda v: jnp.sin(v).sum(0), (x,), (t,))
    np.testing.assert_allclose(np.asarray(tangent), np.cos(INPUTS).sum(0), rtol=1e-4)


def test_devices_count_the_bytes_of_their_blocks():
    import gc
    gc.collect()  # earlier tests' arrays, released now rather than during this test
    device = jax.devices()[3]
    before = device.memory_stats()["bytes_in_use"]
    mesh = jax.make_mesh((8,), ("d",))
    x = jax.device_put(np.ones((64, 16), np.float32), NamedSharding(mesh, P("d")))
    assert device.memory_stats()["bytes_in_use"] - before == 8 * 16 * 4
    del x
    gc.collect()
    assert device.memory_stats()["bytes_in_use"] == before


def test_arrays_on_different_meshes_are_an_error():
    a = jax.device_put(INPUTS, NamedSharding(jax.make_mesh((8,), ("d",)), P("d")))
    b = jax.device_put(INPUTS, NamedSharding(jax.make_mesh((8,), ("e",)), P("e")))
    with pytest.raises(ValueError, match="different meshes"):
        jax.jit(lambda u, v: u + v)(a, b)


def test_lowered_text_shows_both_programs_and_the_collectives():
    mesh = jax.make_mesh((8,), ("d",))
    x = jax.device_put(INPUTS, NamedSharding(mesh, P("d")))
    text = jax.jit(lambda v: v.sum(0)).lower(x).as_text()
    assert "f32[64@d,16]" in text  # the global program's types
    assert "psum[axis_name=d]" in text  # the per-device program's collective
    assert "all-reduce" in text  # the report


def test_creation_and_random_are_replicated_unless_given_out_sharding():
    mesh = jax.make_mesh((8,), ("d",))
    split = NamedSharding(mesh, P("d"))
    a = jnp.arange(16.0, out_sharding=split)
    assert str(jax.typeof(a)) == "float32[16@d]"
    np.testing.assert_array_equal(np.asarray(a), np.arange(16.0))
    key = jax.random.key(0)
    sampled = jax.random.normal(key, (16,), out_sharding=split)
    assert str(jax.typeof(sampled)) == "float32[16@d]"
    np.testing.assert_array_equal(np.asarray(sampled), np.asarray(jax.random.normal(key, (16,))))
    x = jax.device_put(np.ones(16, np.float32), split)
    traced = jax.make_jaxpr(lambda v: v + jnp.zeros(16) + jax.random.uniform(key, (16,)))(x)
    assert "f32[16]" in str(traced) and "f32[16@d]" in str(traced)
    sharded = jax.jit(lambda v: jnp.zeros(16, out_sharding=split) + v)(x)
    assert str(jax.typeof(sharded)) == "float32[16@d]"


def test_auto_axes_choose_where_explicit_axes_ask():
    from stage4_sharding.sharding import AxisType
    x = INPUTS.T.copy()  # (16, 64): contracting over the split dim on both sides below
    for types, raises in [((AxisType.Explicit,), True), ((AxisType.Auto,), False)]:
        mesh = jax.make_mesh((8,), ("d",), axis_types=types)
        a = jax.device_put(x, NamedSharding(mesh, P(None, "d")))
        b = jax.device_put(INPUTS, NamedSharding(mesh, P("d")))
        if raises:
            with pytest.raises(ShardingTypeError, match="ambiguous"):
                a @ b
            continue
        for f in (lambda u, v: u @ v, jax.jit(lambda u, v: u @ v)):
            out = f(a, b)
            np.testing.assert_allclose(np.asarray(out), x @ INPUTS, rtol=1e-4, atol=1e-4)
            assert str(jax.typeof(out)) == "float32[16,16]"
