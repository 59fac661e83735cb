"""``jax.device_put`` as JAX code calls it, against JAX 0.10.2 on 8 CPU devices: a pytree of
shardings or devices that is a prefix of the value, ``may_alias``/``donate``/``src``, and a
call inside ``jit``, ``grad`` and ``vmap``. Each of these raised here before (a TypeError, or
"asarray got a tracer")."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()


def _shardings(lib):
    mesh = lib.make_mesh((8,), ("x",))
    NS, P = lib.sharding.NamedSharding, lib.sharding.PartitionSpec
    return mesh, NS(mesh, P("x")), NS(mesh, P())


def _specs(tree):
    return real.tree.map(lambda a: tuple(a.sharding.spec), tree)


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
def test_a_pytree_of_shardings_lays_out_each_subtree(lib):
    _, split, whole = _shardings(lib)
    params = {"w": (np.ones((8, 2), np.float32), np.ones(16, np.float32)),
              "b": np.ones(8, np.float32)}
    placed = lib.device_put(params, {"w": split, "b": whole})
    assert _specs(placed) == {"w": (("x",), ("x",)), "b": ()}
    a = lib.device_put(np.arange(16.0, dtype=np.float32), split)
    first, second = lib.device_put([a, a], [split, whole])
    assert (tuple(first.sharding.spec), tuple(second.sharding.spec)) == (("x",), ())
    assert first is a  # laid out as asked already: the same array
    with lib.sharding.set_mesh(_shardings(lib)[0]):  # bare specs, on the mesh set
        bare = lib.device_put([np.ones(8), np.ones(8)], [lib.P("x"), lib.P()])
    assert [tuple(b.sharding.spec) for b in bare] == [("x",), ()]


def test_a_pytree_of_devices_with_none_leaves_arrays_where_they_are():
    for lib in (jax, real):
        _, split, _ = _shardings(lib)
        a = lib.device_put(np.arange(16.0, dtype=np.float32), split)
        kept, moved = lib.device_put([a, np.ones(2, np.float32)], [None, lib.devices()[1]])
        assert kept is a
        np.testing.assert_array_equal(moved, np.ones(2))


def _aliasing(lib):
    _, split, whole = _shardings(lib)
    a = lib.device_put(np.arange(16.0, dtype=np.float32), split)
    copied = lib.device_put(a, split, may_alias=False)
    donated = lib.device_put(a, whole, donate=True)
    return (lib.device_put(a, split) is a, lib.device_put(a, split, may_alias=True) is a,
            copied is a, tuple(copied.sharding.spec), np.asarray(copied).tolist(),
            donated is a, a.is_deleted(),  # JAX's CPU client keeps a donated array
            [b is a for b in lib.device_put([a, a], split, may_alias=[True, False])],
            [b is a for b in lib.device_put([a, a], split, src=[None, split])])


def test_may_alias_and_donate_as_jax():
    assert _aliasing(jax) == _aliasing(real)


def test_a_copy_lives_on_after_the_original_is_deleted():
    _, split, _ = _shardings(jax)
    a = jax.device_put(np.arange(16.0, dtype=np.float32), split)
    host = jax.numpy.arange(4.0)
    copies = jax.device_put([a, host], [split, None], may_alias=False)
    a.delete()
    host.delete()
    np.testing.assert_array_equal(copies[0], np.arange(16.0))
    np.testing.assert_array_equal(copies[1], np.arange(4.0))


def _under_transformations(lib):
    mesh, split, whole = _shardings(lib)
    x = lib.device_put(np.arange(8.0, dtype=np.float32), split)
    cpu0 = lib.devices()[0]
    return [np.asarray(lib.jit(lambda a: lib.device_put(a, cpu0) * 2)(np.ones(3))),
            np.asarray(lib.jit(lambda a: lib.device_put(a) * 2)(np.ones(3))),
            np.asarray(lib.jit(lambda a: lib.device_put(a, whole) * 2)(x)),
            float(lib.grad(lambda a: lib.device_put(a, cpu0) * 3.0)(1.0)),
            _sharded_grad(lib, mesh, whole, x),
            np.asarray(lib.vmap(lambda a: lib.device_put(a, cpu0) + 1)(np.ones((2, 3)))),
            lib.jit(lambda a: lib.device_put(a, whole))(x).sharding.is_equivalent_to(whole, 1)]


def _sharded_grad(lib, mesh, whole, x):
    with lib.sharding.set_mesh(mesh):  # JAX asks for the mesh to differentiate on it
        return np.asarray(lib.grad(lambda a: (lib.device_put(a, whole) ** 2).sum())(x))


def test_device_put_inside_jit_grad_and_vmap_as_jax():
    ours, theirs = _under_transformations(jax), _under_transformations(real)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_array_equal(mine, expected)


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
@pytest.mark.parametrize("call, match", [
    (lambda lib, s: lib.device_put({"a": np.ones(8), "b": np.ones(8)}, {"a": s}),
     "device specification must be a tree prefix"),
    (lambda lib, s: lib.device_put([np.ones(8), np.ones(8)], s, donate=[True]),
     "donate specification must be a tree prefix"),
    (lambda lib, s: lib.device_put(np.ones(8), s, donate=True, may_alias=True),
     "may_alias and donate cannot be True at the same time"),
    (lambda lib, s: lib.device_put(np.ones(8), "cpu"), "cpu"),
    (lambda lib, s: lib.device_put(np.ones(8), s, src=[None]),
     "source specification must be a tree prefix"),
])
def test_bad_arguments_raise_jax_s_value_error(lib, call, match):
    _, split, _ = _shardings(lib)
    with pytest.raises(ValueError, match=match):
        call(lib, split)
