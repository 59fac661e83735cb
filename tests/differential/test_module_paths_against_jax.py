"""Modules and signatures JAX programs import, against JAX 0.10.2, from a probe of the names
JAX exports that this library did not: ``jax.flatten_util.ravel_pytree``, ``jax.scipy.fft``
(the DCT), ``jax.scipy.integrate``, ``jax.experimental.shard_map``, ``jax.dtypes.result_type``
with its weak-type flag, ``jax.shard_map`` as a decorator and with ``in_specs`` inferred. The
same probe found ``jnp.finfo(jnp.float64)`` giving float32's limits (JAX: the dtype as named)
and ``scipy.special.spence`` of a Python float weakly typed (JAX: strong)."""

import importlib
import warnings

import numpy as np
import pytest
from oracle import assert_call_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)).astype(np.float32)
X3 = RNG.standard_normal((3, 4, 5)).astype(np.float32)


def _module(jax, name):
    return importlib.import_module(f"{jax.__name__}.{name}")


def _ravel_cases(jax):
    jnp, ravel = jax.numpy, _module(jax, "flatten_util").ravel_pytree
    tree = lambda: {"a": jnp.ones((2, 2)), "b": (jnp.arange(3), 2.0)}  # noqa: E731
    return {
        "mixed dtypes": (lambda: ravel(tree())[0],),
        "round trip": (lambda: (lambda flat, unravel: unravel(flat * 2))(*ravel(tree())),),
        "no leaves": (lambda: ravel({})[0],),
        "float16 and bfloat16": (lambda: ravel([np.float16(1), jnp.ones(2, jnp.bfloat16)])[0],),
        "Python ints": (lambda: (lambda flat, unravel: (flat, unravel(flat)))(*ravel([1, 2])),),
        "a float64 leaf": (lambda: (lambda f, u: (f, u(f)))(*ravel([np.ones(2), 3])),),
        "one dtype, another vector": (lambda: (lambda f, u: u(f.astype(jnp.float16)))(
            *ravel([jnp.ones(2), jnp.ones(3)])),),
        "grad through it": (lambda p: jax.grad(lambda p: jnp.sum(ravel(p)[0] ** 2))(p),
                            {"a": np.ones(2, np.float32), "b": 3.0}),
        "vmap of unravel": (lambda v: jax.vmap(ravel((np.ones(2, np.float32),
                                                      np.ones(1, np.float32)))[1])(v),
                            np.ones((3, 3), np.float32)),
    }


def _dct_cases(jax):
    fft = _module(jax, "scipy.fft")
    cases = {}
    for f in ("dct", "idct"):
        for name, kw in (("", {}), (" ortho", {"norm": "ortho"}), (" axis 0", {"axis": 0}),
                         (" padded", {"n": 8}), (" cut", {"n": 3})):
            cases[f + name] = (lambda x, f=f, kw=kw: getattr(fft, f)(x, **kw), X)
        cases[f + " of complex"] = (lambda x, f=f: getattr(fft, f)(x), (X + 1j * X[::-1]))
        cases[f + " of int"] = (lambda x, f=f: getattr(fft, f)(x), np.arange(7, dtype=np.int32))
    for f in ("dctn", "idctn"):
        for name, kw in (("", {}), (" ortho", {"norm": "ortho"}), (" axes", {"axes": (0, 2)}),
                         (" s", {"s": (6, 3)}), (" s and axes", {"s": (2, 7), "axes": (0, 1)})):
            cases[f + name] = (lambda x, f=f, kw=kw: getattr(fft, f)(x, **kw), X3)
    cases["grad of dct"] = (lambda x: jax.grad(lambda v: (fft.dct(v) ** 2).sum())(x), X[0])
    cases["trapezoid"] = (lambda x: _module(jax, "scipy.integrate").trapezoid(x, dx=0.5), X)
    return cases


def _dtype_cases(jax):
    jnp, dtypes = jax.numpy, _module(jax, "dtypes")
    return {
        "finfo of float64 as named": (lambda: (jnp.finfo(jnp.float64).eps,
                                               jnp.iinfo(np.int64).max),),
        "spence of a Python float": (lambda: jax.scipy.special.spence(0.7),),
        "result_type's weak flag": (lambda: [jnp.zeros((), d) for d, weak in (
            dtypes.result_type(1, 2.0, return_weak_type_flag=True),
            dtypes.result_type(np.int8, return_weak_type_flag=True))],),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_ravel_cases(ours)))
def test_ravel_pytree_as_jax(name, how):
    assert_call_as_jax(_ravel_cases, name, how)


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_dct_cases(ours)))
def test_dct_as_jax(name, how):
    assert_call_as_jax(_dct_cases, name, how, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", list(_dtype_cases(ours)))
def test_dtypes_as_jax(name):
    assert_call_as_jax(_dtype_cases, name, "eager")


@pytest.mark.parametrize("library", [ours, real], ids=["ours", "jax"])
def test_unravel_refuses_what_jax_refuses(library):
    jnp, ravel = library.numpy, _module(library, "flatten_util").ravel_pytree
    flat, unravel = ravel({"a": jnp.ones((2, 2)), "b": (jnp.arange(3), 2.0)})
    with pytest.raises(TypeError, match="dtype int32.*float32"):
        unravel(flat.astype(jnp.int32))
    with pytest.raises(ValueError):
        unravel(jnp.ones(5))


@pytest.mark.parametrize("library", [ours, real], ids=["ours", "jax"])
def test_dct_refuses_what_jax_refuses(library):
    fft = _module(library, "scipy.fft")
    with pytest.raises(NotImplementedError, match="type 2"):
        fft.dct(library.numpy.ones(4), type=3)
    with pytest.raises(ValueError, match="norm='forward' is not implemented"):
        fft.idctn(library.numpy.ones(4), norm="forward")


def _shard_maps(library):
    P, mesh = library.sharding.PartitionSpec, library.make_mesh((8,), ("x",))
    x = library.device_put(np.arange(16.0, dtype=np.float32),
                           library.sharding.NamedSharding(mesh, P("x")))

    @library.shard_map(mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    def decorated(block):
        return block + block.shape[0]

    inferred = library.shard_map(lambda b, c: b * b.shape[0] + c.sum(), mesh=mesh,
                                 out_specs=P("x"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = _module(library, "experimental.shard_map").shard_map(
            lambda b: b - 1, mesh, P("x"), P("x"))
    assert [w.category for w in caught] == [DeprecationWarning]
    return [np.asarray(f(*args)) for f, args in (
        (decorated, (x,)), (inferred, (x, np.ones(3, np.float32))), (old, (x,)))]


def test_shard_map_forms_as_jax():
    for got, expected in zip(_shard_maps(ours), _shard_maps(real)):
        np.testing.assert_array_equal(got, expected)


def test_shard_map_over_some_axes_is_refused_clearly():
    P, mesh = ours.sharding.PartitionSpec, ours.make_mesh((4, 2), ("x", "y"))
    f = ours.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                       axis_names={"x"})
    with pytest.raises(NotImplementedError, match="axis_names=\\['x'\\].*Leave axis_names out"):
        f(np.ones((4, 4), np.float32))
