"""``jax.pmap`` against JAX 0.10.2 on 8 CPU devices: values, where the result lives, the
collectives of its named axis, ``in_axes``/``out_axes``, static arguments, composition with
``jit``, ``grad``, ``vmap`` and ``jacfwd``, and its errors. It was missing (an
AttributeError), so every program written with it failed under the import swap."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()

PROGRAMS = {
    "psum": lambda lib, jnp: lib.pmap(lambda x: x * 2 + lib.lax.psum(x, "i"), axis_name="i")(
        jnp.arange(8.0)),
    "pmean of rows": lambda lib, jnp: lib.pmap(lambda x: lib.lax.pmean(x, "i"), axis_name="i")(
        jnp.arange(12.0).reshape(4, 3)),
    "all_gather": lambda lib, jnp: lib.pmap(lambda x: lib.lax.all_gather(x, "i"),
                                            axis_name="i")(jnp.arange(3.0)),
    "ppermute": lambda lib, jnp: lib.pmap(
        lambda x: lib.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]), axis_name="i")(
        jnp.arange(3.0)),
    "axis_index": lambda lib, jnp: lib.pmap(lambda x: lib.lax.axis_index("d") * x,
                                            axis_name="d")(jnp.ones(4)),
    "in_axes None": lambda lib, jnp: lib.pmap(lambda x, y: x + y, in_axes=(0, None))(
        jnp.ones((4, 3)), jnp.arange(3.0)),
    "in_axes 1": lambda lib, jnp: lib.pmap(lambda x: x * 2, in_axes=1)(
        jnp.arange(6.0).reshape(3, 2)),
    "in_axes a dict prefix": lambda lib, jnp: lib.pmap(
        lambda x, k: x * k["a"] + k["b"], in_axes=(0, {"a": None, "b": 0}))(
        jnp.arange(2.0), {"a": jnp.float32(3.0), "b": jnp.ones(2)}),
    "out_axes": lambda lib, jnp: lib.pmap(lambda x: (x, x.sum()), out_axes=(1, None))(
        jnp.ones((2, 3))),
    "keyword argument": lambda lib, jnp: lib.pmap(lambda x, *, y: x * y)(
        jnp.arange(2.0), y=jnp.arange(2.0)),
    "static argument": lambda lib, jnp: lib.pmap(lambda x, n: x * n,
                                                 static_broadcasted_argnums=1)(jnp.ones(2), 3),
    "a reduction per device": lambda lib, jnp: lib.pmap(jnp.sum)(jnp.ones((2, 5))),
    "jit of pmap": lambda lib, jnp: lib.jit(lib.pmap(lambda x: x + 1))(jnp.ones((2, 3))),
    "pmap of grad": lambda lib, jnp: lib.pmap(lib.grad(lambda x: jnp.sum(x ** 2)))(
        jnp.arange(6.0).reshape(2, 3)),
    "grad of pmap": lambda lib, jnp: lib.grad(lambda x: jnp.sum(lib.pmap(jnp.sin)(x)))(
        jnp.arange(4.0)),
    "grad through psum": lambda lib, jnp: lib.grad(lambda x: jnp.sum(lib.pmap(
        lambda v: v * lib.lax.psum(v, "i"), axis_name="i")(x)))(jnp.arange(1.0, 5.0)),
    "vmap of pmap": lambda lib, jnp: lib.vmap(lib.pmap(jnp.sin))(jnp.ones((3, 2))),
    "jacfwd of pmap": lambda lib, jnp: lib.jacfwd(lib.pmap(jnp.sin))(jnp.ones(2)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_pmap_computes_what_jax_computes(name):
    ours = PROGRAMS[name](jax, jax.numpy)
    theirs = PROGRAMS[name](real, real.numpy)
    ours_leaves, theirs_leaves = jax.tree.leaves(ours), real.tree.leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for a, b in zip(ours_leaves, theirs_leaves):
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
def test_the_result_is_split_over_the_devices_it_ran_on(lib):
    out = lib.pmap(lambda x: x * 2, axis_name="i")(lib.numpy.ones((4, 3)))
    assert tuple(out.sharding.spec) == ("i",) and out.sharding.mesh.axis_names == ("i",)
    assert [d.id for d in out.sharding.mesh.devices] == [0, 1, 2, 3]
    unnamed = lib.pmap(lambda x: x, devices=lib.devices()[2:4])(lib.numpy.ones(2))
    assert [d.id for d in unnamed.sharding.mesh.devices] == [2, 3]
    assert unnamed.sharding.mesh.axis_names == ("_internal_pmap_axis_name",)


def test_each_device_sees_its_own_slice():
    seen = []
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    jax.pmap(lambda v: jax.debug.callback(lambda b: seen.append(np.asarray(b)), v) or v)(x)
    assert sorted(tuple(s) for s in seen) == sorted(tuple(row) for row in x)


def test_a_program_is_traced_once_per_kind_of_call():
    traced = []

    def f(x):
        traced.append(x.shape)
        return x + 1

    mapped = jax.pmap(f)
    for _ in range(3):
        mapped(np.ones((2, 3), np.float32))
    mapped(np.ones((4, 3), np.float32))
    assert traced == [(3,), (3,)]


ERRORS = {
    "more slices than devices": lambda lib, jnp: lib.pmap(lambda x: x)(jnp.ones((9, 2))),
    "sizes that differ": lambda lib, jnp: lib.pmap(lambda x, y: x + y)(
        jnp.ones((2, 2)), jnp.ones((3, 2))),
    "in_axes of the wrong length": lambda lib, jnp: lib.pmap(lambda x, y: x + y, in_axes=(0,))(
        jnp.ones((2, 2)), jnp.ones((2, 2))),
    "nothing mapped": lambda lib, jnp: lib.pmap(lambda x: x, in_axes=None)(jnp.ones((2, 2))),
}


@pytest.mark.parametrize("name", ERRORS)
def test_bad_calls_raise_value_errors_as_in_jax(name):
    for lib in (jax, real):
        with pytest.raises(ValueError):
            ERRORS[name](lib, lib.numpy)


def test_error_messages_say_what_to_do():
    with pytest.raises(ValueError, match="8 devices. Reshape"):
        ERRORS["more slices than devices"](jax, jax.numpy)
    with pytest.raises(ValueError, match=r"inconsistent sizes.*\[2, 3\]"):
        ERRORS["sizes that differ"](jax, jax.numpy)
    with pytest.raises(ValueError, match="out of range"):
        jax.pmap(lambda x: x, in_axes=2)(np.ones((2, 2)))
    with pytest.raises(TypeError, match="ints or None"):
        jax.pmap(lambda x: x, in_axes="0")(np.ones((2, 2)))
    with pytest.raises(ValueError, match="CPU devices"):
        jax.pmap(lambda x: x, backend="gpu")
