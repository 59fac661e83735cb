"""What JAX code reads off arrays, shardings, meshes and key arrays, against JAX 0.10.2 on 8
CPU devices. Each of these attributes was missing here (an AttributeError under the import
swap); a probe listed them by comparing ``dir()`` of each object with JAX's."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()


def _split(lib):
    mesh = lib.make_mesh((4, 2), ("x", "y"))
    P, NS = lib.sharding.PartitionSpec, lib.sharding.NamedSharding
    x = lib.device_put(np.ones((8, 4), np.float32), NS(mesh, P("x")))
    return mesh, x, P, NS


def _blocks(index_map, shape):
    """A devices-indices map with each slice as (start, stop), sorted by device id."""
    return sorted((d.id, tuple(s.indices(n)[:2] for s, n in zip(index, shape)))
                  for d, index in index_map.items())


def _sharding_facts(lib):
    mesh, x, P, NS = _split(lib)
    s = x.sharding
    return (s.device_set == set(mesh.devices.flat), s.num_devices, s.memory_kind,
            s.is_fully_addressable, {d.id for d in s.addressable_devices},
            s.is_equivalent_to(NS(mesh, P("x", None)), 2),
            s.is_equivalent_to(NS(mesh, P(None, "x")), 2),
            NS(mesh, P()).is_equivalent_to(NS(mesh, P(None, None)), 2),
            _blocks(s.addressable_devices_indices_map((8, 4)), (8, 4)))


def _mesh_facts(lib):
    mesh = lib.make_mesh((4, 2), ("x", "y"),
                         axis_types=(lib.sharding.AxisType.Explicit, lib.sharding.AxisType.Auto))
    return (mesh.axis_sizes, mesh.device_ids.tolist(), mesh.is_multi_process, mesh.shape_tuple,
            mesh.explicit_axes, mesh.auto_axes, mesh.manual_axes,
            sorted(d.id for d in mesh.local_devices))


def _array_facts(lib):
    _, x, _, _ = _split(lib)
    y = lib.numpy.ones(3)
    return [(a.is_fully_replicated, a.is_fully_addressable, a.is_ready()) for a in (x, y)]


def _key_facts(lib):
    k = lib.random.key(0)
    ks = lib.random.split(k, 6).reshape(2, 3)
    moved = {"T": ks.T, "ravel": ks.ravel(), "flatten": ks.flatten(),
             "squeeze": ks[None].squeeze(), "squeeze 0": ks[None].squeeze(0),
             "swapaxes": ks.swapaxes(0, -1), "transpose": ks.transpose(1, 0),
             "transpose tuple": ks.transpose((1, 0))}
    return ({name: (m.shape, np.asarray(lib.random.key_data(m)).tolist())
             for name, m in moved.items()},
            k.itemsize, ks.nbytes, type(ks.block_until_ready()) is type(ks),
            len(ks.devices()), ks.sharding == ks.sharding, ks.committed,
            ks.on_device_size_in_bytes())


@pytest.mark.parametrize("facts", [_sharding_facts, _mesh_facts, _array_facts, _key_facts],
                         ids=["NamedSharding", "Mesh", "Array", "key array"])
def test_attributes_equal_jax_s(facts):
    assert facts(jax) == facts(real)


INDEX_MAP_CASES = [  # (spec, shape) on a (4, 2, 1) mesh of axes x, y, z
    (("x",), (8, 4)), (("z", "x"), (8, 4)), ((None, ("x", "y")), (2, 16)), ((), (3,)),
    (("y", "x"), (0, 4)), ((("x", "z"),), (8,)), (("y",), (4, 3))]


@pytest.mark.parametrize("spec, shape", INDEX_MAP_CASES, ids=str)
def test_devices_indices_map_equals_jax_s_slice_for_slice(spec, shape):
    """A dim no mesh axis splits (or only axes of size 1 split) is ``slice(None)``, the
    others their bounds, a zero-size dim's included: JAX's slices exactly, not just the same
    elements."""
    def index_map(lib):
        mesh = lib.make_mesh((4, 2, 1), ("x", "y", "z"))
        sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
        return {d.id: index for d, index in sharding.devices_indices_map(shape).items()}
    assert index_map(jax) == index_map(real)


def _buffer_facts(lib):
    """What the buffer-level methods of a split array, a replicated one and a plain one
    give. Of an array every device holds whole, ``addressable_data`` gives the whole array
    whatever the index; of a split one, an index past the blocks is an IndexError."""
    mesh, x, P, NS = _split(lib)
    y = lib.numpy.arange(6.0).reshape(3, 2)
    replicated = lib.device_put(np.arange(4.0, dtype=np.float32), NS(mesh, P()))
    facts = []
    for a in (x, y, replicated):
        first, last, far = a.addressable_data(0), a.addressable_data(-1), a.addressable_data(3)
        facts.append((a.on_device_size_in_bytes(), first.shape, np.asarray(first).tolist(),
                      np.asarray(last).tolist(), np.asarray(far).tolist(),
                      a.copy_to_host_async()))
    facts.append(np.asarray(replicated.addressable_data(20)).tolist())
    with pytest.raises(IndexError):
        x.addressable_data(8)
    return facts


def test_buffer_methods_equal_jax_s():
    assert _buffer_facts(jax) == _buffer_facts(real)


@pytest.mark.parametrize("name, error", [("flat", NotImplementedError),
                                         ("device_buffer", AttributeError),
                                         ("device_buffers", AttributeError)])
def test_removed_and_refused_attributes_raise_as_jax_s_do(name, error):
    """``x.flat`` is refused, and ``device_buffer(s)``, which JAX removed, raise an
    AttributeError that names the replacement (so ``hasattr`` is False in both)."""
    for lib in (jax, real):
        with pytest.raises(error):
            getattr(lib.numpy.ones(3), name)
    with pytest.raises(AttributeError, match="addressable"):
        jax.numpy.ones(3).device_buffer


def test_addressable_data_of_a_deleted_array_raises_as_jax_s_does():
    for lib in (jax, real):
        y = lib.numpy.ones(3)
        y.delete()
        with pytest.raises(RuntimeError, match="deleted"):
            y.addressable_data(0)


def test_to_device_moves_as_device_put_and_refuses_a_stream():
    for lib in (jax, real):
        x = lib.numpy.arange(4.0)
        moved = x.to_device(lib.devices()[0])
        traced = lib.jit(lambda a: a.to_device(lib.devices()[0]) * 2)(x)
        assert np.asarray(moved).tolist() == [0.0, 1.0, 2.0, 3.0]
        assert np.asarray(traced).tolist() == [0.0, 2.0, 4.0, 6.0]
        with pytest.raises(NotImplementedError, match="stream"):
            x.to_device(lib.devices()[0], stream=1)


def _deleted_facts(lib):
    """A split array deleted: what still answers (its type), and which uses raise JAX's
    RuntimeError; each device stops counting its block at once (memory_stats, here)."""
    _, x, _, _ = _split(lib)
    x.delete()
    x.delete()  # a second delete does nothing
    facts = [x.is_deleted(), x.shape, str(x.dtype)]
    for use in (np.asarray, lambda a: a + 1, lib.jit(lambda a: a * 2),
                lambda a: a.addressable_data(0), lambda a: a.on_device_size_in_bytes()):
        with pytest.raises(RuntimeError, match="deleted"):
            use(x)
    return facts


def test_a_deleted_split_array_raises_as_jax_s_does():
    assert _deleted_facts(jax) == _deleted_facts(real)
    device = jax.devices()[3]
    before = device.memory_stats()["bytes_in_use"]
    _, x, _, _ = _split(jax)
    assert device.memory_stats()["bytes_in_use"] > before
    x.delete()
    assert device.memory_stats()["bytes_in_use"] == before


def test_device_put_without_a_device_leaves_a_split_array_as_it_is():
    """As JAX's: no device means "wherever it is", so a split array keeps its blocks (it
    was gathered to one host array); a NumPy array goes to the default device."""
    for lib in (jax, real):
        _, x, _, _ = _split(lib)
        assert lib.device_put(x) is x
        assert lib.device_put({"w": x})["w"] is x
        assert lib.device_put(np.ones(3)).sharding.device_set == {lib.devices()[0]}


def _shard_facts(lib, spec):
    mesh = lib.make_mesh((4, 2), ("x", "y"))
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
    x = lib.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4), sharding)
    return [(type(s).__name__, s.device.id, s.index, s.replica_id, s.data.shape,
             np.asarray(s.data).tolist()) for s in x.addressable_shards]


@pytest.mark.parametrize("spec", [("x",), ("x", "y"), (None, "y"), (), (("x", "y"),)])
def test_addressable_shards_are_jax_shards(spec):
    """Each entry is a Shard with JAX's device, index, replica id and block."""
    assert _shard_facts(jax, spec) == _shard_facts(real, spec)


def test_the_shard_of_an_unsplit_array_is_the_array():
    for lib in (jax, real):
        y = lib.numpy.ones(3)
        (shard,) = y.addressable_shards
        assert (shard.device, shard.index, shard.replica_id) == \
            (lib.devices()[0], (slice(None),), 0)
        assert shard.data is y
    assert "Shard(device=CpuDevice(id=0), index=(slice(None, None, None),), replica_id=0, " \
        "data=[1. 1. 1.])" == repr(jax.numpy.ones(3).addressable_shards[0]) == \
        repr(real.numpy.ones(3).addressable_shards[0])


def _from_blocks(lib, spec, make_blocks):
    mesh = lib.make_mesh((4, 2), ("x", "y"))
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
    value = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    blocks = make_blocks(lib, sharding, value)
    y = lib.make_array_from_single_device_arrays((8, 4), sharding, blocks)
    return str(lib.typeof(y)), y.weak_type, np.asarray(y).tolist()


def _put_each_block(lib, sharding, value):
    return [lib.device_put(value[index], device)
            for device, index in sharding.addressable_devices_indices_map(value.shape).items()]


def _shards_of_a_split_array(lib, sharding, value):
    return [s.data for s in lib.device_put(value, sharding).addressable_shards]


@pytest.mark.parametrize("spec", [("x",), ("x", "y"), (None, "y"), ()])
@pytest.mark.parametrize("make_blocks", [_put_each_block, _shards_of_a_split_array])
def test_make_array_from_single_device_arrays_agrees_with_jax(spec, make_blocks):
    ours = _from_blocks(jax, spec, make_blocks)
    assert ours == _from_blocks(real, spec, make_blocks)
    assert ours[2] == np.arange(32.0).reshape(8, 4).tolist()


def _single_device_errors(lib):
    mesh = lib.make_mesh((4, 2), ("x", "y"))
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x"))
    value = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    good = _put_each_block(lib, sharding, value)
    make = lib.make_array_from_single_device_arrays
    cases = {"too few": lambda: make((8, 4), sharding, good[:3]),
             "wrong shape": lambda: make((8, 4), sharding, [b[:1] for b in good]),
             "two dtypes": lambda: make((8, 4), sharding, [good[0].astype(np.int32), *good[1:]]),
             "dtype= differs": lambda: make((8, 4), sharding, good, dtype=np.int32),
             "numpy blocks": lambda: make((8, 4), sharding, [np.asarray(b) for b in good]),
             "split blocks": lambda: make((8, 4), sharding,
                                          [lib.device_put(value, sharding)] * 8),
             "under jit": lambda: lib.jit(lambda *b: make((8, 4), sharding, b))(*good)}
    errors = {}
    for name, call in cases.items():
        with pytest.raises((ValueError, TypeError)) as caught:
            call()
        errors[name] = caught.type
    return errors, caught


def test_make_array_from_single_device_arrays_refuses_what_jax_refuses():
    ours, caught = _single_device_errors(jax)
    assert ours == _single_device_errors(real)[0]
    assert "outside jit" in str(caught.value)
