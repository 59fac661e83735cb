"""Names of the ``jax`` namespace that real programs use beside the transformations, against
JAX: ``device_get``, ``named_call``, ``jacobian``, the options as context managers
(``enable_x64``, ``default_matmul_precision``) and ``lax.Precision``."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding.numpy as sjnp  # noqa: E402
from stage4_sharding.sharding import NamedSharding, PartitionSpec  # noqa: E402

import stage4_sharding as sj  # noqa: E402


def test_device_get_gives_numpy_arrays_in_the_same_tree() -> None:
    mesh = sj.make_mesh((8,), ("d",))
    split = sj.device_put(sjnp.arange(8.0), NamedSharding(mesh, PartitionSpec("d")))
    ours = sj.device_get({"w": sjnp.ones(2), "split": split, "step": 3, "none": None})
    theirs = jax.device_get({"w": jax.numpy.ones(2), "split": jax.numpy.arange(8.0),
                             "step": 3, "none": None})
    assert list(ours) == list(theirs)
    for key in ours:
        assert type(ours[key]) is type(theirs[key]), key
        np.testing.assert_array_equal(ours[key], theirs[key])
    with pytest.raises(TypeError, match="traced value"):
        sj.jit(sj.device_get)(sjnp.ones(2))


def test_named_call_and_jacobian_compute_what_jax_does() -> None:
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for lib, jnp in ((sj, sjnp), (jax, jax.numpy)):
        f = lib.named_call(lambda v: jnp.sin(v) * v, name="layer")
        assert np.allclose(lib.jacobian(f)(x), np.diag(np.cos(x) * x + np.sin(x)), atol=1e-6)
    assert sj.named_call(np.sin, name="layer").__name__ == "layer"


def test_enable_x64_is_a_context_manager_that_restores() -> None:
    assert sj.enable_x64.value is jax.enable_x64.value is False
    for lib, jnp in ((sj, sjnp), (jax, jax.numpy)):
        with lib.enable_x64(True):
            assert jnp.array(1.0).dtype == np.float64 and lib.enable_x64.value
        assert jnp.array(1.0).dtype == np.float32
        with pytest.raises(KeyError), lib.enable_x64(True):
            raise KeyError("restored even so")
        assert not lib.config.jax_enable_x64


@pytest.mark.parametrize("value", ["highest", "float32", "bfloat16", "tensorfloat32",
                                   "default", "high", None])
def test_default_matmul_precision_takes_jax_names(value) -> None:
    x = np.ones((2, 2), np.float32)
    with sj.default_matmul_precision(value), jax.default_matmul_precision(value):
        assert sj.config.jax_default_matmul_precision == jax.config.jax_default_matmul_precision
        np.testing.assert_array_equal(sjnp.dot(x, x), jax.numpy.dot(x, x))
    assert sj.config.jax_default_matmul_precision is None


def test_an_unknown_precision_is_refused_as_jax_refuses_it() -> None:
    with pytest.raises(ValueError), jax.default_matmul_precision("fast"):
        pass
    with pytest.raises(ValueError, match="not a precision"), sj.default_matmul_precision("fast"):
        pass
    assert sj.config.jax_default_matmul_precision is None


@pytest.mark.parametrize("name", ["default", "bfloat16", "fastest", "high", "bfloat16_3x",
                                  "tensorfloat32", "highest", "float32"])
def test_precision_names_mean_what_they_mean_in_jax(name: str) -> None:
    ours, theirs = sj.lax.Precision(name), jax.lax.Precision(name)
    assert (ours.name, ours.value, str(ours)) == (theirs.name, theirs.value, str(theirs))


def _meshes(axis_type: str):
    for lib, jnp, module in ((sj, sjnp, sj.sharding), (jax, jax.numpy, jax.sharding)):
        mesh = lib.make_mesh((4, 2), ("a", "b"),
                             axis_types=(getattr(module.AxisType, axis_type),) * 2)
        yield lib, jnp, module, mesh


def test_with_sharding_constraint_lays_out_as_jax() -> None:
    """On Auto axes: the result's values and layout, eagerly and under jit, and the
    gradient's values (its layout is a documented difference); a pytree takes one sharding
    for every leaf or one per leaf."""
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    results = []
    for lib, jnp, module, mesh in _meshes("Auto"):
        split = module.NamedSharding(mesh, module.PartitionSpec("a", "b"))
        rows = module.NamedSharding(mesh, module.PartitionSpec("a"))

        def f(v, split=split, jnp=jnp, lib=lib):
            return jnp.sum(lib.lax.with_sharding_constraint(v * 2, split) ** 2)
        tree = lib.lax.with_sharding_constraint({"p": x, "q": x}, {"p": split, "q": rows})
        results.append([lib.lax.with_sharding_constraint(x, split),
                        lib.jit(lambda v, s=split, lib=lib: lib.lax.with_sharding_constraint(
                            v * 2, s))(x), tree["p"], tree["q"],
                        lib.lax.with_sharding_constraint([x, x], rows)[1]])
        np.testing.assert_allclose(lib.jit(f)(x), 4 * np.sum(x ** 2))
        np.testing.assert_allclose(lib.grad(f)(x), 8 * x)
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)
        assert tuple(ours.sharding.spec) == tuple(theirs.sharding.spec), (ours, theirs)


def test_with_sharding_constraint_on_explicit_axes_is_refused() -> None:
    x = np.ones((8, 2), np.float32)
    for lib, _, module, mesh in _meshes("Explicit"):
        split = module.NamedSharding(mesh, module.PartitionSpec("a", "b"))
        whole = lib.lax.with_sharding_constraint(
            x, module.NamedSharding(mesh, module.PartitionSpec()))
        assert tuple(whole.sharding.spec) == ()
        with pytest.raises(ValueError, match="reshard"):
            lib.lax.with_sharding_constraint(x, split)
        with pytest.raises(ValueError, match="reshard"):
            lib.jit(lambda v, s=split, lib=lib: lib.lax.with_sharding_constraint(v, s))(x)


METHODS = ["x.argsort()", "x.sort(axis=0)", "x.sum(where=x > 1)", "x.prod(initial=2.0)",
           "x.max(initial=0.0, where=x > 1)", "x.mean(axis=1, where=x > 0)",
           "x.var(correction=1)", "x.std(axis=0, ddof=1)", "x.cumsum(1)", "x.cumprod()",
           "x.round(1)", "round(x[0, 0])", "round(x[0, 1], 1)", "x.take(np.array([0, 4]))",
           "x.repeat(2, axis=0)", "x.diagonal()", "x.trace()", "x.nonzero(size=7)",
           "x.ptp(axis=1)", "x.conj()", "x.conjugate()", "x.real", "x.imag", "x.mT",
           "x.itemsize", "x.nbytes", "x[0].sort().searchsorted(2.5)", "x.copy()",
           "x.argpartition(1)", "complex(x[0, 0])", "2.0 in x[0]", "7.0 in x[0]",
           "x.compress(np.array([True, False]), axis=0)", "copy.deepcopy(x)",
           "jnp.array([2, 0, 1]).choose([x[0], x[1], x[0] * 2])"]


@pytest.mark.parametrize("expr", METHODS)
def test_array_methods_are_jax_s(expr: str) -> None:
    """The methods of a JAX array that mirror jnp functions, and Python's protocols (round,
    complex, in, copy), on our arrays; under jit too where the result is an array."""
    import copy
    x = np.array([[3.0, 1.0, 2.0], [0.5, 5.0, -1.0]], np.float32)
    ours = eval(expr, {"x": sjnp.asarray(x), "np": np, "copy": copy, "jnp": sjnp})
    theirs = eval(expr, {"x": jax.numpy.asarray(x), "np": np, "copy": copy, "jnp": jax.numpy})
    for mine, want in zip(*(v if isinstance(v, tuple) else (v,) for v in (ours, theirs))):
        assert type(mine) is type(want) or hasattr(want, "dtype"), (mine, want)
        np.testing.assert_allclose(np.asarray(mine), np.asarray(want), rtol=1e-6)
        assert np.asarray(mine).dtype == np.asarray(want).dtype


def test_in_searches_a_vector_for_a_scalar() -> None:
    x = np.ones((2, 2), np.float32)
    for array in (sjnp.asarray(x), jax.numpy.asarray(x)):
        with pytest.raises(ValueError):
            1.0 in array  # noqa: B015


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 9])
def test_lax_map_in_batches_equals_jax(batch_size: int) -> None:
    x = np.arange(7.0, dtype=np.float32)
    results = []
    for lib in (sj, jax):
        def f(v, lib=lib):
            out = lib.lax.map(lambda t: {"a": t[0] * t[1] ** 2}, (v, v + 1),
                              batch_size=batch_size)
            return out["a"].sum()
        results.append((lib.jit(f)(x), lib.grad(f)(x)))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_fori_loop_unroll_as_jax() -> None:
    for lib in (sj, jax):
        body = lambda i, v: v * 1.5 + i  # noqa: E731
        assert float(lib.jit(lambda x, lib=lib: lib.lax.fori_loop(
            0, 5, body, x, unroll=2))(1.0)) == float(jax.lax.fori_loop(0, 5, body, 1.0))
        with pytest.raises(ValueError, match="unroll"):
            lib.jit(lambda n, lib=lib: lib.lax.fori_loop(0, n, body, 0.0, unroll=2))(3)


@pytest.mark.parametrize("expr", [
    "a[jnp.searchsorted(e, a)]", "jnp.bincount(jnp.clip(jnp.searchsorted(e, a), 0, 5), length=6)",
    "jnp.histogram2d(a, a, 3)[0]", "jnp.sum(a.astype(jnp.int8) * 100, promote_integers=False)"])
def test_integer_sums_in_a_kernel_keep_their_type(expr: str) -> None:
    """An int32 sum inside a kernel stayed int64 (Numba widens int32 + int32), and a select
    of it beside an int32 failed to compile; it wraps as NumPy's does."""
    a = np.array([0.5, 1.5, 2.5, -1.0, 3.0] * 60, np.float32)
    mine = sj.jit(lambda a: eval(expr, {"jnp": sjnp, "a": a, "e": sjnp.array([0.0, 1.0, 2.0])}))(a)
    theirs = eval(expr, {"jnp": jax.numpy, "a": a, "e": jax.numpy.array([0.0, 1.0, 2.0])})
    np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    assert np.asarray(mine).dtype == np.asarray(theirs).dtype


def test_unique_and_nonzero_without_size_run_under_grad_as_jax() -> None:
    """Their result's size is read from the values, known under grad (they raised), and not
    under jit (a ConcretizationTypeError, as JAX's); unique's values are then constants."""
    x = np.array([3.0, 1.0, 3.0, 2.0], np.float32)
    for lib, jnp in ((sj, sjnp), (jax, jax.numpy)):  # unique's values are constants
        np.testing.assert_array_equal(
            lib.grad(lambda v, jnp=jnp: (jnp.unique(v) ** 2).sum())(x), 0)
        np.testing.assert_array_equal(
            lib.grad(lambda v, jnp=jnp: v[jnp.nonzero(v > 2)].sum())(x), [1, 0, 1, 0])
        with pytest.raises(TypeError):
            lib.jit(lambda v, jnp=jnp: jnp.unique(v))(x)


def test_a_traced_population_size_is_a_concretization_error() -> None:
    for lib in (sj, jax):
        with pytest.raises(lib.errors.ConcretizationTypeError):
            lib.jit(lambda n, lib=lib: lib.random.choice(lib.random.key(0), n))(np.int32(3))



def _jacobians_of_integer_inputs(lib):
    jnp = lib.numpy
    f = lambda x, n: x * n  # noqa: E731
    both = lib.jacrev(f, argnums=(0, 1), allow_int=True)(jnp.ones(3), jnp.arange(3))
    tree = lib.jacobian(lambda d: d["a"] * d["n"], allow_int=True)(
        {"a": jnp.ones(2), "n": jnp.arange(2)})
    jitted = lib.jit(lib.jacrev(f, argnums=1, allow_int=True))(jnp.ones(2), jnp.arange(2))
    leaves = [*both, tree["a"], tree["n"], jitted]
    return [(np.asarray(a).tolist(), a.dtype, a.shape) for a in leaves]


def test_jacrev_with_allow_int_gives_zeros_of_the_inputs_dtype_as_jax() -> None:
    assert _jacobians_of_integer_inputs(sj) == _jacobians_of_integer_inputs(jax)
    for lib in (sj, jax):
        with pytest.raises(TypeError, match="allow_int|integer"):
            lib.jacrev(lambda x, n: x * n, argnums=1)(lib.numpy.ones(3), lib.numpy.arange(3))


def _returned_shapes(lib):
    jnp = lib.numpy
    jaxpr, shapes = lib.make_jaxpr(lambda x: {"a": x * 2, "b": (x > 0, 1.0)},
                                   return_shape=True)(jnp.ones(3))
    return str(jaxpr), repr(shapes)


def test_make_jaxpr_returns_the_result_shapes_as_jax() -> None:
    assert _returned_shapes(sj) == _returned_shapes(jax)


@pytest.mark.parametrize("name", ["normal", "uniform", "bits", "randint", "categorical"])
def test_random_sampling_names_out_sharding_in_its_signature_as_jax(name: str) -> None:
    import inspect
    ours = inspect.signature(getattr(sj.random, name)).parameters
    theirs = inspect.signature(getattr(jax.random, name)).parameters
    assert ours["out_sharding"].kind is theirs["out_sharding"].kind
    assert ours["out_sharding"].default is None


def _keywords_of_everyday_calls(lib):
    jnp = lib.numpy
    x = jnp.arange(6.0).reshape(2, 3)
    found = {
        "ravel F": jnp.ravel(x, order="F"), "x.ravel F": x.ravel("F"),
        "x.flatten F": x.flatten("F"), "reshape copy": jnp.reshape(x, (2, 3), copy=True),
        "astype copy": jnp.astype(x, jnp.float32, copy=True),
        "astype device": jnp.astype(x, jnp.int32, device=lib.devices()[0]),
        "x.astype copy": x.astype(jnp.int32, copy=False),
        "key impl": lib.random.key_data(lib.random.key(3, impl="threefry2x32")),
        "PRNGKey impl": lib.random.PRNGKey(3, impl="threefry2x32"),
    }
    found = {k: (np.asarray(v).tolist(), str(v.dtype), v.shape) for k, v in found.items()}
    found["counts"] = (lib.device_count("cpu"), lib.process_count("cpu"),
                       lib.process_index("cpu"))
    found["reshape copy is new"] = jnp.reshape(x, (2, 3), copy=True) is not x
    found["astype copy is new"] = jnp.astype(x, jnp.float32, copy=True) is not x
    return found


def test_everyday_keyword_arguments_work_as_in_jax() -> None:
    assert _keywords_of_everyday_calls(sj) == _keywords_of_everyday_calls(jax)
    for lib in (sj, jax):
        with pytest.raises(NotImplementedError):
            lib.numpy.ravel(lib.numpy.ones((2, 2)), order="A")


def test_a_prng_implementation_other_than_threefry_is_a_clear_error() -> None:
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        sj.random.key(0, impl="rbg")


class _Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _registered_with_keys(lib):
    tu = lib.tree_util
    tu.register_pytree_node(
        _Point, lambda p: ((p.x, p.y), None), lambda _, c: _Point(*c),
        flatten_with_keys_func=lambda p: (((tu.GetAttrKey("x"), p.x),
                                           (tu.GetAttrKey("y"), p.y)), None))
    pairs, _ = tu.tree_flatten_with_path([_Point(1, 2)])
    leaves = tu.tree_leaves(tu.tree_map(lambda v: v * 10, _Point(3, 4)))
    return [tu.keystr(path) for path, _ in pairs], [leaf for _, leaf in pairs], leaves


def test_register_pytree_node_takes_key_paths_as_jax() -> None:
    ours = _registered_with_keys(sj)
    theirs = _registered_with_keys(jax)
    assert ours == theirs == (["[0].x", "[0].y"], [1, 2], [30, 40])


def test_option_context_managers_set_and_restore_as_jax() -> None:
    """``checking_leaks``, ``check_tracer_leaks``, ``threefry_partitionable`` and
    ``default_prng_impl`` as blocks (they were missing names), and ``effects_barrier``."""
    for lib in (sj, jax):
        with lib.checking_leaks():
            assert lib.config.jax_check_tracer_leaks is True
        assert lib.config.jax_check_tracer_leaks is False
        with lib.check_tracer_leaks(True):
            assert lib.config.jax_check_tracer_leaks is True
        with lib.default_prng_impl("threefry2x32"):
            assert lib.config.jax_default_prng_impl == "threefry2x32"
        lib.effects_barrier()
    bits = []
    for lib in (sj, jax):
        with lib.threefry_partitionable(False):
            bits.append(np.asarray(lib.random.bits(lib.random.key(0), (4,))).tolist())
        assert lib.config.jax_threefry_partitionable is True
    assert bits[0] == bits[1]


def test_process_indices_and_copy_to_host_async_as_jax() -> None:
    assert sj.process_indices() == jax.process_indices() == [0]
    mesh = sj.make_mesh((8,), ("d",))
    split = sj.device_put(sjnp.arange(8.0), NamedSharding(mesh, PartitionSpec("d")))
    tree = {"w": sjnp.ones(2), "split": split, "step": 3}
    assert sj.copy_to_host_async(tree) is tree
    theirs = {"w": jax.numpy.ones(2), "step": 3}
    assert jax.copy_to_host_async(theirs) is theirs


def test_default_device_is_a_context_manager_as_in_jax() -> None:
    for lib, jnp in ((sj, sjnp), (jax, jax.numpy)):
        assert lib.config.jax_default_device is None and lib.default_device.value is None
        for device in ("cpu", lib.devices("cpu")[0]):
            with lib.default_device(device):
                assert lib.config.jax_default_device == device
                assert [d.id for d in jnp.ones(2).devices()] == [0]
                assert [d.id for d in lib.device_put(np.ones(2)).devices()] == [0]
                assert [d.id for d in lib.jit(lambda x: x + 1)(np.ones(2)).devices()] == [0]
            assert lib.config.jax_default_device is None
        with pytest.raises(ValueError, match="platform name"), lib.default_device(3):
            jnp.ones(2)
        with pytest.raises(RuntimeError, match="tpu"), lib.default_device("tpu"):
            jnp.ones(2)  # JAX refuses it here; ours when the block begins
        assert lib.config.jax_default_device is None


def test_control_flow_and_collective_primitives_are_in_lax_as_in_jax() -> None:
    """A program that walks a jaxpr asks ``eqn.primitive is lax.cond_p``."""
    names = ["cond_p", "while_p", "scan_p", "psum_p", "all_gather_p", "all_to_all_p",
             "axis_index_p", "ppermute_p"]
    assert [getattr(sj.lax, n).name for n in names] == [getattr(jax.lax, n).name for n in names]
    for lib, jnp in ((sj, sjnp), (jax, jax.numpy)):
        def f(x, lib=lib, jnp=jnp):
            y = lib.lax.cond(x > 0, jnp.sin, jnp.cos, x)
            y = lib.lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, y + 1.0)
            return lib.lax.scan(lambda c, _: (c + 1.0, c), y, None, length=2)[0]
        eqns = lib.make_jaxpr(f)(1.0).jaxpr.eqns
        found = [e.primitive for e in eqns if e.primitive.name in ("cond", "while", "scan")]
        assert found == [lib.lax.cond_p, lib.lax.while_p, lib.lax.scan_p]


def test_print_environment_info_reports_what_jax_reports(capsys) -> None:
    """The same facts in the same order (this library and Numba where JAX names jax and
    jaxlib, and SciPy's version too); returned rather than printed when asked."""
    def facts(lib):
        assert lib.print_environment_info() is None
        printed = capsys.readouterr().out
        text = lib.print_environment_info(return_string=True)
        assert capsys.readouterr().out == "" and printed == text + "\n"
        lines = text.splitlines()
        keys = [line.split(":")[0] for line in lines if ":" in line and "=" not in line]
        device = next(line for line in lines if line.startswith("device info:"))
        return keys[:2], [k for k in keys[2:] if k != "scipy"], device.rstrip('"')
    ours, theirs = facts(sj), facts(jax)
    assert ours[0] == ["stage4_sharding", "numba"] and theirs[0] == ["jax", "jaxlib"]
    assert ours[1:] == theirs[1:]  # numpy, python, device info (cpu-8), process_count...
