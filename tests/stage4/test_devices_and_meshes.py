"""Stage 4's first layer: simulated devices, meshes, partition specs, named shardings, sharded
arrays placed with ``device_put``, their types (``typeof``) and their pictures."""

import numpy as np
import pytest
from stage4_sharding.arrays import ShardedArray
from stage4_sharding.sharding import AxisType, NamedSharding, P, set_mesh

import stage4_sharding as jax
from stage4_sharding import numpy as jnp

x8x4 = np.arange(32, dtype=np.float32).reshape(8, 4)


@pytest.fixture(autouse=True)
def no_mesh():
    with set_mesh(None):
        yield


def test_eight_simulated_devices_by_default():
    devices = jax.devices()
    assert len(devices) == jax.device_count() == 8
    assert [d.id for d in devices] == list(range(8)) and repr(devices[3]) == "CpuDevice(id=3)"
    assert jnp.ones(2).devices() == {devices[0]}  # plain arrays live on the first


def test_the_device_count_is_fixed_at_first_use():
    jax.devices()
    previous = jax.config.jax_num_cpu_devices
    try:
        jax.config.update("jax_num_cpu_devices", 4)
        with pytest.raises(RuntimeError, match="after the 8 devices were created"):
            jax.devices()
    finally:
        jax.config.update("jax_num_cpu_devices", previous)


def test_make_mesh_and_its_errors():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    assert mesh.shape == {"x": 4, "y": 2} and mesh.size == 8
    assert mesh.axis_types == (AxisType.Explicit, AxisType.Explicit)
    assert mesh.devices[1, 0] == jax.devices()[2]  # row-major over the devices
    first_six = jax.make_mesh((3, 2), ("x", "y"))  # the first devices, as JAX's
    assert list(first_six.devices.flat) == jax.devices()[:6]
    with pytest.raises(ValueError, match="needs 16 devices, but 8 are available"):
        jax.make_mesh((4, 4), ("x", "y"))
    with pytest.raises(ValueError, match="distinct"):
        jax.make_mesh((4, 2), ("x", "x"))
    small = jax.make_mesh((2,), ("d",), devices=jax.devices()[:2])
    assert small.size == 2


def test_set_mesh_as_a_setter_and_as_a_context_manager():
    a, b = jax.make_mesh((8,), ("data",)), jax.make_mesh((4, 2), ("x", "y"))
    set_mesh(a)
    assert jax.sharding.get_mesh() == a
    with set_mesh(b):
        assert jax.sharding.get_mesh() == b
    assert jax.sharding.get_mesh() == a


def test_partition_specs_and_named_shardings_check_their_axes():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    with pytest.raises(ValueError, match="names the axis 'z'"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(ValueError, match="more than once"):
        NamedSharding(mesh, P("x", "x"))
    with pytest.raises(TypeError, match="PartitionSpec entry"):
        P(3)
    assert NamedSharding(mesh, P("x", None)) == NamedSharding(mesh, P(("x",)))
    sharding = NamedSharding(mesh, P(("x", "y"), None))
    assert sharding.shard_shape((16, 3)) == (2, 3)
    blocks = sharding.devices_indices_map((16, 3))
    assert blocks[mesh.devices[1, 1]][0] == slice(6, 8)  # block 1 * 2 + 1 of 8


def test_device_put_splits_pytrees_into_blocks():
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    set_mesh(mesh)
    inputs, targets = jax.device_put((x8x4, x8x4[:, 0].copy()), P("data"))
    assert isinstance(inputs, ShardedArray) and inputs.sharding == NamedSharding(mesh, P("data"))
    assert all(s.data.shape == (1, 4) for s in inputs.addressable_shards)
    np.testing.assert_array_equal(np.asarray(inputs), x8x4)
    np.testing.assert_array_equal(np.asarray(targets), x8x4[:, 0])
    assert inputs.devices() == set(jax.devices())


def test_replicated_dims_repeat_a_block():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(x8x4, NamedSharding(mesh, P("x")))
    blocks = {s.device: s.data for s in x.addressable_shards}
    np.testing.assert_array_equal(blocks[mesh.devices[1, 0]], blocks[mesh.devices[1, 1]])
    np.testing.assert_array_equal(blocks[mesh.devices[1, 0]], x8x4[2:4])


def test_uneven_division_names_the_dim_and_the_mesh_axis():
    mesh = jax.make_mesh((8,), ("data",))
    with pytest.raises(ValueError, match=r"dim 0 of shape \(6, 4\) has size 6, sharded over "
                                         r"\('data',\) of size 8"):
        jax.device_put(np.zeros((6, 4), np.float32), NamedSharding(mesh, P("data")))
    with pytest.raises(ValueError, match="has 3 entries, but"):
        jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("data", None, None)))
    with pytest.raises(ValueError, match="no mesh is set"):
        jax.device_put(x8x4, P("data"))


def test_typeof_writes_the_sharding_into_the_type():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    assert str(jax.typeof(jax.device_put(x8x4, NamedSharding(mesh, P("x"))))) == "float32[8@x,4]"
    both = jax.device_put(np.zeros((128, 64), np.float32), NamedSharding(mesh, P(("x", "y"))))
    assert str(jax.typeof(both)) == "float32[128@(x,y),64]"
    two = jax.device_put(x8x4, NamedSharding(mesh, P("x", "y")))
    assert str(jax.typeof(two)) == "float32[8@x,4@y]"
    assert str(jax.typeof(jnp.ones((2, 3), jnp.int32))) == "int32[2,3]"


def test_visualize_array_sharding_draws_the_blocks(capsys):
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    jax.visualize_array_sharding(jax.device_put(x8x4, NamedSharding(mesh, P(None, "y"))))
    drawn = capsys.readouterr().out
    assert "CPU 0,2,4,6" in drawn and "CPU 1,3,5,7" in drawn and drawn.count("|") == 3


def test_eager_ops_on_sharded_arrays_equal_numpy():
    mesh = jax.make_mesh((8,), ("data",))
    x = jax.device_put(x8x4, NamedSharding(mesh, P("data")))
    np.testing.assert_allclose(np.asarray(jnp.tanh(x) * 2.0 + x.sum(0)),
                               np.tanh(x8x4) * 2.0 + x8x4.sum(0), rtol=1e-6)


def test_each_device_counts_the_bytes_of_its_blocks():
    import gc
    device = jax.devices()[5]
    gc.collect()  # blocks earlier tests left in reference cycles, freed before counting
    before = device.memory_stats()["bytes_in_use"]
    mesh = jax.make_mesh((8,), ("data",))
    x = jax.device_put(np.zeros((8, 1024), np.float32), NamedSharding(mesh, P("data")))
    stats = device.memory_stats()
    assert stats["bytes_in_use"] == before + 1024 * 4  # its one row of the eight
    assert stats["peak_bytes_in_use"] >= stats["bytes_in_use"]
    del x
    gc.collect()
    assert device.memory_stats()["bytes_in_use"] == before


def test_reshard_moves_blocks_to_a_new_sharding():
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(x8x4, NamedSharding(mesh, P("x")))
    y = jax.sharding.reshard(x, NamedSharding(mesh, P(None, "y")))
    assert str(jax.typeof(y)) == "float32[8,4@y]"
    np.testing.assert_array_equal(np.asarray(y), x8x4)
    assert {s.device: s.data for s in y.addressable_shards}[mesh.devices[0, 1]].shape == (8, 2)
