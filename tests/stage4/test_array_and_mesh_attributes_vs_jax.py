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
    """A devices-indices map with each slice as (start, stop): JAX writes an unsplit dim as
    ``slice(None)``, we write its bounds; the elements are the same."""
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
            len(ks.devices()), ks.sharding == ks.sharding)


@pytest.mark.parametrize("facts", [_sharding_facts, _mesh_facts, _array_facts, _key_facts],
                         ids=["NamedSharding", "Mesh", "Array", "key array"])
def test_attributes_equal_jax_s(facts):
    assert facts(jax) == facts(real)
