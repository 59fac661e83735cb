"""pure_callback run the same way by stage 4 and by JAX 0.10.2: values, dtypes and weak types,
the shapes each call of the callback is given under every vmap method, the printed equations,
errors, custom derivatives around a callback; and sharded equals unsharded."""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import stage4_sharding.numpy as sjnp  # noqa: E402

import stage4_sharding as sj  # noqa: E402


def _same(ours, theirs, rtol=1e-6):
    """Leaf by leaf: structure, dtype, weak type, values."""
    o_leaves, _ = sj.tree_flatten(ours)
    t_leaves, _ = jax.tree_util.tree_flatten(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=rtol, atol=1e-6)


class Recorder:
    """The callback both libraries call, recording the shapes it was given (JAX passes its
    arrays, ours NumPy's: shapes are what both promise). It returns ``x * 2 + y`` and the
    count of positive elements along the last dim (an int32 result of one rank less)."""

    def __init__(self):
        self.shapes = []

    def __call__(self, x, y):
        self.shapes.append((np.shape(x), np.shape(y)))
        out = np.asarray(x) * 2 + np.asarray(y)
        return out, np.sum(out > 0, axis=-1, dtype=np.int32) if out.ndim else np.int32(out > 0)


def call_of(jx, np_, recorder, vmap_method=None):
    def f(x, y):
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        out = (jx.ShapeDtypeStruct(shape, np.float32),
               jx.ShapeDtypeStruct(shape[:-1], np.int32))
        return jx.pure_callback(recorder, out, x, y, vmap_method=vmap_method)
    return f


def both(run):
    """``run(jax, jnp, recorder)`` with our modules and with JAX's: results and calls."""
    mine, theirs = Recorder(), Recorder()
    return (run(sj, sjnp, mine), mine.shapes), (run(jax, jnp, theirs), theirs.shapes)


X = np.arange(6, dtype=np.float32).reshape(3, 2)
Y = np.float32(0.5) + np.zeros(2, np.float32)


@pytest.mark.parametrize("wrap", ["eager", "jit"])
@pytest.mark.parametrize("y", [Y, 0.5, np.float32(0.5)], ids=["array", "python", "numpy"])
def test_values_and_calls_as_jax(wrap, y):
    def run(jx, np_, recorder):
        f = call_of(jx, np_, recorder)
        f = jx.jit(f) if wrap == "jit" else f
        return [f(X, y) for _ in range(2)]
    (ours, our_calls), (theirs, their_calls) = both(run)
    _same(ours, theirs)
    assert our_calls == their_calls


@pytest.mark.parametrize("vmap_method", ["sequential", "sequential_unrolled", "expand_dims",
                                         "broadcast_all"])
@pytest.mark.parametrize("in_axes", [(0, None), (1, 0), (None, 0), (0, 0)])
@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_vmap_methods_as_jax(vmap_method, in_axes, wrap):
    """Each method calls the callback as JAX does (a loop of single examples, or one call with
    the unbatched operands of leading size 1 or broadcast), and vmap equals a loop."""
    x = {0: X, 1: X.T, None: X[1]}[in_axes[0]]
    y = np.stack([Y, Y + 1, Y + 2]) if in_axes[1] == 0 else Y

    def run(jx, np_, recorder):
        f = jx.vmap(call_of(jx, np_, recorder, vmap_method), in_axes=in_axes)
        return (jx.jit(f) if wrap == "jit" else f)(x, y)
    (ours, our_calls), (theirs, their_calls) = both(run)
    _same(ours, theirs)
    assert our_calls == their_calls
    loop = [call_of(sj, sjnp, Recorder())(x[i] if in_axes[0] == 0 else x[:, i] if in_axes[0]
                                          else x, y[i] if in_axes[1] == 0 else y)[0]
            for i in range(3)]
    np.testing.assert_allclose(np.asarray(ours[0]), np.stack(loop))


def test_nested_vmaps_as_jax():
    xs = np.arange(12, dtype=np.float32).reshape(2, 3, 2)

    def run(jx, np_, recorder):
        f = call_of(jx, np_, recorder, "sequential")
        return jx.vmap(jx.vmap(f, in_axes=(0, None)), in_axes=(0, None))(xs, Y)
    (ours, our_calls), (theirs, their_calls) = both(run)
    _same(ours, theirs)
    assert our_calls == their_calls


def test_vmap_without_a_method_is_refused_as_in_jax():
    errors = []
    for jx, np_ in ((sj, sjnp), (jax, jnp)):
        with pytest.raises(NotImplementedError) as info:
            jx.vmap(call_of(jx, np_, Recorder()))(X, np.stack([Y] * 3))
        errors.append(str(info.value))
    assert errors[0] == errors[1]


# ------------------------------------------------------------------------------------------
# The printed program
# ------------------------------------------------------------------------------------------


def host_sin(x):
    return np.sin(x)


def single(jx, vmap_method=None):
    return lambda x: jx.pure_callback(host_sin, jx.ShapeDtypeStruct(x.shape, x.dtype), x,
                                      vmap_method=vmap_method)


PROGRAMS = {
    "eager": lambda jx: single(jx),
    "jit": lambda jx: jx.jit(single(jx)),
    "two operands and a literal": lambda jx: lambda x: call_of(jx, np, host_pair)(x, 2.0),
    "keyword arguments": lambda jx: lambda x: jx.pure_callback(
        lambda x, k: x, jx.ShapeDtypeStruct((), np.float32), x, k=x),
    "vmap sequential": lambda jx: jx.vmap(single(jx, "sequential")),
    "vmap sequential_unrolled": lambda jx: jx.vmap(single(jx, "sequential_unrolled")),
    "vmap expand_dims": lambda jx: jx.vmap(lambda x: call_of(jx, np, host_pair, "expand_dims")(
        x, np.ones(2, np.float32))),
    "vmap broadcast_all": lambda jx: jx.vmap(lambda x: call_of(jx, np, host_pair,
                                                                "broadcast_all")(x, 1.0)),
}


def host_pair(x, y):
    return x + y, np.int32(0)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jaxprs_print_as_jax_prints_them(name):
    """Character for character: the function's address masked, the types in JAX's form,
    a sequential vmap as a scan whose program takes the unbatched operands as constants."""
    ours = str(sj.make_jaxpr(PROGRAMS[name](sj))(X))
    theirs = str(jax.make_jaxpr(PROGRAMS[name](jax))(X))
    assert ours == theirs


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", ["eager", "jit"])
@pytest.mark.parametrize("result", [np.zeros(4, np.float32), np.zeros(3, np.int32),
                                    (np.zeros(3, np.float32),) * 2])
def test_wrong_results_raise_jax_runtime_errors_messages(wrap, result):
    """JAX raises a JaxRuntimeError (a RuntimeError) whose last line is ours' first."""
    messages = []
    for jx in (sj, jax):
        f = lambda x: jx.pure_callback(lambda x: result, jx.ShapeDtypeStruct((3,), np.float32),
                                       x)  # noqa: E731
        with pytest.raises(RuntimeError) as info:
            (jx.jit(f) if wrap == "jit" else f)(np.ones(3, np.float32))
        messages.append(str(info.value))
    theirs = messages[1].strip().splitlines()[-1].removeprefix("RuntimeError: ")
    if wrap == "jit":  # JAX's eager message is cut short after "return"
        assert messages[0].startswith(theirs)
    else:
        assert messages[0].startswith(theirs.split(" value")[0])


@pytest.mark.parametrize("transform", ["grad", "jvp", "jit of grad"])
def test_differentiation_is_refused_as_in_jax(transform):
    messages = []
    for jx in (sj, jax):
        f = single(jx)
        run = {"grad": lambda: jx.grad(f)(1.0),
               "jvp": lambda: jx.jvp(f, (1.0,), (1.0,)),
               "jit of grad": lambda: jx.jit(jx.grad(f))(1.0)}[transform]
        with pytest.raises(ValueError) as info:
            run()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("bad", [{"vmap_method": "vectorized"},
                                 {"result": np.float64}])
def test_argument_errors_as_jax(bad):
    messages = []
    for jx in (sj, jax):
        out = jx.ShapeDtypeStruct((), bad.get("result", np.float32))
        with pytest.raises(ValueError) as info:
            jx.pure_callback(host_sin, out, 1.0, vmap_method=bad.get("vmap_method"))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


# ------------------------------------------------------------------------------------------
# custom_jvp and custom_vjp around a callback
# ------------------------------------------------------------------------------------------


def custom_pair(jx):
    out = functools.partial(jx.ShapeDtypeStruct, (), np.float32)

    @jx.custom_jvp
    def sin(x):
        return jx.pure_callback(np.sin, out(), x)

    @sin.defjvp
    def sin_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return sin(x), jx.pure_callback(np.cos, out(), x) * x_dot

    @jx.custom_vjp
    def exp(x):
        return jx.pure_callback(np.exp, out(), x)

    exp.defvjp(lambda x: (exp(x), exp(x)), lambda e, ct: (e * ct,))
    return lambda x: sin(x) * exp(x)


@pytest.mark.parametrize("transform", ["grad", "jit of grad", "vmap of grad"])
def test_custom_derivatives_around_callbacks_as_jax(transform):
    def run(jx):
        f = custom_pair(jx)
        xs = np.linspace(-1, 1, 3).astype(np.float32)
        return {"grad": lambda: jx.grad(f)(0.3),
                "jit of grad": lambda: jx.jit(jx.grad(f))(0.3),
                "vmap of grad": lambda: [jx.grad(f)(x) for x in xs]}[transform]()
    _same(run(sj), run(jax), rtol=1e-5)


# ------------------------------------------------------------------------------------------
# Sharding: the callback sees global values; sharded equals unsharded
# ------------------------------------------------------------------------------------------


def test_sharded_operands_equal_unsharded_and_the_callback_sees_global_values():
    mesh = sj.make_mesh((8,), ("data",))
    x = np.linspace(-3, 3, 16).astype(np.float32)
    xs = sj.device_put(x, sj.NamedSharding(mesh, sj.P("data")))
    recorder = Recorder()
    f = sj.jit(lambda x: call_of(sj, sjnp, recorder)(x, 1.0)[0] + x)
    sharded, unsharded = f(xs), f(x)
    np.testing.assert_array_equal(np.asarray(sharded), np.asarray(unsharded))
    np.testing.assert_allclose(np.asarray(unsharded), x * 3 + 1, rtol=1e-6, atol=1e-6)
    assert set(recorder.shapes) == {((16,), ())}  # never a block
    assert sharded.sharding.spec == sj.P("data")  # the add keeps x's split


def test_a_callback_result_is_replicated():
    mesh = sj.make_mesh((8,), ("data",))
    xs = sj.device_put(np.arange(16, dtype=np.float32), sj.NamedSharding(mesh, sj.P("data")))
    out = sj.jit(single(sj))(xs)
    np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(16)), rtol=1e-6)
    assert out.sharding.is_fully_replicated


def test_inside_shard_map_the_callback_sees_each_block_as_in_jax():
    x = np.arange(16, dtype=np.float32)
    shapes = []
    for jx in (sj, jax):
        mesh = jx.make_mesh((8,), ("data",))
        recorder = Recorder()
        f = jx.shard_map(lambda v: call_of(jx, np, recorder)(v, 1.0)[0],
                         mesh=mesh, in_specs=jx.P("data"), out_specs=jx.P("data"))
        xs = jx.device_put(x, jx.NamedSharding(mesh, jx.P("data")))
        np.testing.assert_array_equal(np.asarray(jx.jit(f)(xs)), x * 2 + 1)
        shapes.append(sorted(recorder.shapes))
    assert shapes[0] == shapes[1] == [((2,), ())] * 8


def test_a_sharding_over_several_devices_is_refused_as_in_jax():
    names = []
    for jx in (sj, jax):
        mesh = jx.make_mesh((8,), ("data",))
        sharding = jx.NamedSharding(mesh, jx.P("data"))
        f = jx.jit(lambda x: jx.pure_callback(host_sin, jx.ShapeDtypeStruct(x.shape, x.dtype),
                                              x, sharding=sharding))
        with pytest.raises(NotImplementedError) as info:
            f(jx.device_put(np.ones(16, np.float32), sharding))
        names.append(str(info.value).split(",")[0].split(" but")[0])
    assert names[0] == names[1]
