"""``jax.nn.initializers`` against JAX: our ``jax.random`` gives JAX's bits, so each
initializer, given the same key, shape and dtype, must give JAX's weights (to float32
rounding: the draws are scaled in a different order of operations), with JAX's dtype and
weak type, and refuse what JAX refuses."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as ours  # noqa: E402

SHAPES = [(4, 3), (3, 3, 2, 5), (7, 2)]

# name -> (a factory call written for either library's ``init``, its shapes)
CASES = {
    "zeros": ("init.zeros", SHAPES),
    "ones": ("init.ones", SHAPES),
    "constant": ("init.constant(-1.5)", SHAPES),
    "constant_int_dtype": ("init.constant(3, dtype=jnp.int32)", SHAPES[:1]),
    "uniform": ("init.uniform()", SHAPES),
    "uniform_scale": ("init.uniform(scale=4.0)", SHAPES),
    "normal": ("init.normal()", SHAPES),
    "normal_stddev": ("init.normal(0.5, dtype=jnp.float16)", SHAPES),
    "truncated_normal": ("init.truncated_normal()", SHAPES),
    "truncated_normal_bounds": ("init.truncated_normal(2.0, lower=-1.0, upper=0.5)", SHAPES),
    "glorot_uniform": ("init.glorot_uniform()", SHAPES),
    "glorot_normal": ("init.glorot_normal()", SHAPES),
    "xavier_uniform": ("init.xavier_uniform(in_axis=0, out_axis=1)", SHAPES),
    "xavier_normal": ("init.xavier_normal(batch_axis=0)", SHAPES[1:2]),
    "lecun_uniform": ("init.lecun_uniform()", SHAPES),
    "lecun_normal": ("init.lecun_normal(in_axis=(0, 1), out_axis=-1)", SHAPES[1:2]),
    "he_uniform": ("init.he_uniform()", SHAPES),
    "he_normal": ("init.he_normal()", SHAPES),
    "kaiming_uniform": ("init.kaiming_uniform(dtype=jnp.bfloat16)", SHAPES),
    "kaiming_normal": ("init.kaiming_normal()", SHAPES),
    "fan_out": ("init.variance_scaling(0.3, 'fan_out', 'normal')", SHAPES),
    "fan_geo_avg": ("init.variance_scaling(2.0, 'fan_geo_avg', 'uniform')", SHAPES),
    "complex_uniform": ("init.variance_scaling(1.0, 'fan_in', 'uniform', "
                        "dtype=jnp.complex64)", SHAPES),
    "complex_truncated": ("init.variance_scaling(1.0, 'fan_avg', 'truncated_normal', "
                          "dtype=jnp.complex64)", SHAPES),
    "one_dim_in_axis": ("init.variance_scaling(1.0, 'fan_in', 'normal', in_axis=0, "
                        "out_axis=0)", [(6,)]),
    "orthogonal": ("init.orthogonal()", SHAPES),
    "orthogonal_axis": ("init.orthogonal(scale=2.0, column_axis=0)", SHAPES),
    "orthogonal_empty": ("init.orthogonal()", [(0, 3)]),
    "delta_orthogonal": ("init.delta_orthogonal()", [(3, 2, 4), (3, 4, 3, 3), (2, 3, 3, 2, 5)]),
}


def _init(code: str, library) -> object:
    return eval(code, {"init": library.nn.initializers, "jnp": library.numpy})


def _same(got, want) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert getattr(got, "weak_type", False) == getattr(want, "weak_type", False)
    tol = 1e-2 if got.dtype.itemsize <= 2 else 2e-6
    np.testing.assert_allclose(np.asarray(got, np.complex128), np.asarray(want, np.complex128),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_initializer_equals_jax(name):
    code, shapes = CASES[name]
    for seed, shape in enumerate(shapes):
        got = _init(code, ours)(ours.random.key(seed), shape)
        want = _init(code, jax)(jax.random.key(seed), shape)
        _same(got, want)


@pytest.mark.parametrize("name", ["normal", "glorot_uniform", "he_normal", "orthogonal",
                                  "complex_uniform"])
def test_initializer_equals_jax_with_x64_and_a_dtype_at_the_call(name):
    """With x64 the default float is float64; a dtype given to ``init`` wins over the
    factory's."""
    code, shapes = CASES[name]
    previous = (ours.config.jax_enable_x64, jax.config.jax_enable_x64)
    ours.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        _same(_init(code, ours)(ours.random.key(3), shapes[0]),
              _init(code, jax)(jax.random.key(3), shapes[0]))
        dtype = np.complex64 if name.startswith("complex") else np.float32
        _same(_init(code, ours)(ours.random.key(4), shapes[0], dtype),
              _init(code, jax)(jax.random.key(4), shapes[0], dtype))
    finally:
        ours.config.update("jax_enable_x64", previous[0])
        jax.config.update("jax_enable_x64", previous[1])


def test_old_style_keys_give_the_same_weights():
    got = ours.nn.initializers.he_uniform()(ours.random.PRNGKey(5), (3, 4))
    want = jax.nn.initializers.he_uniform()(jax.random.PRNGKey(5), (3, 4))
    _same(got, want)


def test_initializers_under_jit_equal_eager():
    init = ours.nn.initializers.lecun_normal()
    key = ours.random.key(2)
    jitted = ours.jit(init, static_argnums=1)(key, (5, 4))
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(init(key, (5, 4))))


ERRORS = [
    ("init.glorot_uniform()", (5,)),
    ("init.variance_scaling(1.0, 'fan_mean', 'normal')", (2, 2)),
    ("init.variance_scaling(1.0, 'fan_in', 'cauchy')", (2, 2)),
    ("init.orthogonal()", (4,)),
    ("init.delta_orthogonal()", (3, 3)),
    ("init.delta_orthogonal()", (3, 4, 2)),
]


@pytest.mark.parametrize("code, shape", ERRORS)
def test_initializer_raises_as_jax(code, shape):
    with pytest.raises(Exception) as theirs:
        _init(code, jax)(jax.random.key(0), shape)
    with pytest.raises(type(theirs.value)) as got:
        _init(code, ours)(ours.random.key(0), shape)
    assert str(got.value) == str(theirs.value)


def test_the_module_has_jax_s_names_and_imports_as_a_module():
    import stage4_sharding.nn.initializers as module

    names = {n for n in dir(jax.nn.initializers) if not n.startswith("_")}
    assert names <= set(dir(module))
    assert module is ours.nn.initializers


@pytest.mark.parametrize("code", ["init.zeros", "init.constant(2.0)", "init.uniform()",
                                  "init.normal(2.0)", "init.truncated_normal()",
                                  "init.he_uniform()", "init.xavier_normal()",
                                  "init.variance_scaling(1.0, 'fan_out', 'normal')"])
def test_out_sharding_lays_the_weights_out_as_jax(code):
    """Stage 4's initializers take out_sharding: JAX's values, laid out as JAX's."""
    shape, spec = (8, 4), ("x", "y")
    results = []
    for library in (ours, jax):
        mesh = library.make_mesh((4, 2), ("x", "y"))
        sharding = library.sharding.NamedSharding(mesh, library.sharding.PartitionSpec(*spec))
        with library.set_mesh(mesh):  # (JAX's eager multiply by the scale needs it)
            results.append(_init(code, library)(library.random.key(7), shape,
                                                out_sharding=sharding))
    got, want = results
    _same(got, want)
    assert tuple(got.sharding.spec) == tuple(want.sharding.spec) == spec


@pytest.mark.parametrize("code", ["init.orthogonal()", "init.delta_orthogonal()"])
def test_out_sharding_is_refused_where_jax_refuses_it(code):
    for library in (ours, jax):
        mesh = library.make_mesh((8,), ("d",))
        sharding = library.sharding.NamedSharding(mesh, library.sharding.PartitionSpec("d"))
        with pytest.raises(NotImplementedError):
            _init(code, library)(library.random.key(0), (8, 8, 8), out_sharding=sharding)


def test_out_sharding_as_a_spec_on_the_mesh_set():
    results = []
    for library in (ours, jax):
        with library.set_mesh(library.make_mesh((8,), ("d",))):
            init = library.nn.initializers.lecun_uniform()
            results.append(init(library.random.key(1), (4, 16),
                                out_sharding=library.sharding.PartitionSpec(None, "d")))
    _same(*results)
    assert tuple(results[0].sharding.spec) == tuple(results[1].sharding.spec) == (None, "d")
