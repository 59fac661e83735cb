"""The configuration options JAX programs set, against JAX 0.10.2: ``jax_debug_nans`` /
``jax_debug_infs`` (stop at the first operation that makes a nan or an inf),
``jax_numpy_rank_promotion`` and ``jax_numpy_dtype_promotion`` (refuse implicit broadcasting or
promotion), ``jax_platforms`` / ``jax_platform_name``, ``jax_log_compiles``, the compilation
cache's options and ``jax_default_prng_impl``. Each was an "Unrecognized config option" error,
so a script that sets one failed under the import swap."""

import contextlib
import warnings

import numpy as np
import pytest

import stage4_sharding as ours
from stage4_sharding import numpy as ojnp

real = pytest.importorskip("jax")
rjnp = real.numpy


@contextlib.contextmanager
def option(name, value):
    """``name`` set to ``value`` in both libraries for a block."""
    before = (getattr(ours.config, name), real.config.values[name])
    ours.config.update(name, value)
    real.config.update(name, value)
    try:
        yield
    finally:
        ours.config.update(name, before[0])
        real.config.update(name, before[1])


def outcome(fun, jnp, lib):
    """("ok", value) or (error class, the message's first clause)."""
    try:
        return "ok", np.asarray(fun(jnp, lib)).tolist()
    except FloatingPointError as error:
        return "FloatingPointError", str(error).split(":")[0].split("\n")[0]


# Each program runs with jax_debug_nans (and jax_debug_infs) on. Where the nan is made, both
# raise FloatingPointError naming the primitive; clean programs run as usual.
PROGRAMS = {
    "log of a negative": lambda jnp, lib: jnp.log(jnp.array(-1.0)),
    "0/0": lambda jnp, lib: jnp.array(0.0) / jnp.array(0.0),
    "inf - inf in a sum": lambda jnp, lib: jnp.sum(jnp.array([1.0, 2.0]) * jnp.inf
                                                   - jnp.array([1.0, 2.0]) * jnp.inf),
    "grad of sqrt at -1": lambda jnp, lib: lib.grad(jnp.sqrt)(-1.0),
    "jit": lambda jnp, lib: lib.jit(lambda x: jnp.sqrt(x) * 2)(jnp.array([-1.0, 1.0])),
    "vmap": lambda jnp, lib: lib.vmap(jnp.log)(jnp.array([-1.0, 2.0])),
    "grad of a jit": lambda jnp, lib: lib.grad(lib.jit(lambda x: jnp.sum(jnp.log(x))))(
        jnp.array([-1.0, 2.0])),
    "clean": lambda jnp, lib: lib.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))(jnp.ones(3)),
    "clean jit": lambda jnp, lib: lib.jit(lambda x: jnp.where(x > 0, x, 0.0))(
        jnp.array([-1.0, 2.0])),
    "integers are not checked": lambda jnp, lib: (jnp.array([3]) // jnp.array([1])) * 0,
    "inf is not a nan": lambda jnp, lib: jnp.log(jnp.array(0.0)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_debug_nans_stops_where_jax_stops(name):
    with option("jax_debug_nans", True):
        got = outcome(PROGRAMS[name], ojnp, ours)
        expected = outcome(PROGRAMS[name], rjnp, real)
    assert got == expected


def test_debug_infs_names_the_operation_as_jax():
    fun = PROGRAMS["inf is not a nan"]
    with option("jax_debug_infs", True):
        assert outcome(fun, ojnp, ours) == outcome(fun, rjnp, real) == (
            "FloatingPointError", "invalid value (inf) encountered in log")
    assert outcome(fun, ojnp, ours) == ("ok", -np.inf)  # off again


def test_a_nan_constant_output_of_jit_is_caught_in_both():
    with option("jax_debug_nans", True):
        for lib, jnp in ((ours, ojnp), (real, rjnp)):
            with pytest.raises(FloatingPointError):
                lib.jit(lambda: jnp.nan)()


def test_the_error_says_where_the_nan_came_from():
    with option("jax_debug_nans", True):
        with pytest.raises(FloatingPointError, match="this operation made it"):
            ojnp.log(ojnp.array([-1.0]))
        nan = np.array([np.nan], np.float32)  # a nan in the inputs
        with pytest.raises(FloatingPointError, match="it came in with the inputs"):
            ojnp.add(nan, 1.0)


def test_a_jit_nan_is_traced_to_the_users_line():
    """The function runs again without jit: the traceback reaches the line that made it."""
    def f(x):
        y = x * 2
        return ojnp.log(y)  # the line

    with option("jax_debug_nans", True), pytest.raises(FloatingPointError) as raised:
        ours.jit(f)(ojnp.array([-1.0]))
    assert any(entry.name == "f" for entry in raised.traceback)


def test_sharded_operations_are_checked():
    mesh = ours.make_mesh((8,), ("x",))
    x = ours.device_put(ojnp.arange(8.0) - 4, ours.NamedSharding(mesh, ours.P("x")))
    with option("jax_debug_nans", True):
        for fun in (ojnp.log, ours.jit(ojnp.log)):
            with pytest.raises(FloatingPointError, match="encountered in log"):
                fun(x)


@pytest.mark.parametrize("lib", [ours, real], ids=["ours", "jax"])
def test_debug_nans_context_manager_sets_and_restores(lib):
    with lib.debug_nans(True):
        assert lib.config.jax_debug_nans
        with pytest.raises(FloatingPointError):
            lib.numpy.log(-1.0)
    assert not lib.config.jax_debug_nans
    assert np.isnan(lib.numpy.log(-1.0))


def test_debug_nans_refuses_a_non_bool():
    with pytest.raises(TypeError, match="True or False"):
        ours.config.update("jax_debug_nans", "yes")
    assert ours.config.jax_debug_nans is False


# ------------------------------------------------------------------------------------------
# jax_numpy_rank_promotion
# ------------------------------------------------------------------------------------------

RANK_CASES = {
    "add (3,) (2, 3)": lambda jnp: jnp.ones(3) + jnp.ones((2, 3)),
    "maximum (3,) (2, 3)": lambda jnp: jnp.maximum(jnp.ones(3), jnp.ones((2, 3))),
    "multiply (1, 3) (2, 1, 3)": lambda jnp: jnp.ones((1, 3)) * jnp.ones((2, 1, 3)),
    "a scalar beside an array": lambda jnp: jnp.ones((2, 3)) + jnp.ones(()),
    "a Python number": lambda jnp: jnp.ones((2, 3)) * 2.0,
    "same ranks": lambda jnp: jnp.ones((1, 3)) - jnp.ones((2, 3)),
    "where": lambda jnp: jnp.where(jnp.ones(3) > 0, jnp.ones((2, 3)), 0.0),
    "matmul": lambda jnp: jnp.ones(3) @ jnp.ones((2, 3, 4)),
}


def _rank_outcome(fun, jnp):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fun(jnp)
    except ValueError:
        return "ValueError"
    return [w.category for w in caught if "rank promotion" in str(w.message)] or "ok"


@pytest.mark.parametrize("mode", ["allow", "warn", "raise"])
@pytest.mark.parametrize("case", RANK_CASES)
def test_rank_promotion_as_jax(case, mode):
    with option("jax_numpy_rank_promotion", mode):
        assert _rank_outcome(RANK_CASES[case], ojnp) == _rank_outcome(RANK_CASES[case], rjnp)


def test_rank_promotion_errors_and_warnings_say_what_to_do():
    with ours.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=r"add .*\(3,\) \(2, 3\).*expand_dims"):
            ojnp.ones(3) + ojnp.ones((2, 3))
    with ours.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ojnp.ones(3) * ojnp.ones((2, 3))  # the warning points at this line, not the library
    assert caught and caught[0].filename == __file__
    assert ours.config.jax_numpy_rank_promotion == "allow"


def test_rank_promotion_refuses_an_unknown_mode_as_jax():
    for lib in (ours, real):
        with pytest.raises(ValueError, match="allow"):
            lib.config.update("jax_numpy_rank_promotion", "sometimes")
        assert lib.config.jax_numpy_rank_promotion == "allow"


# ------------------------------------------------------------------------------------------
# jax_platforms, jax_platform_name
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["jax_platforms", "jax_platform_name"])
def test_choosing_the_cpu_platform_as_scripts_do(name):
    with option(name, "cpu"):
        assert ours.default_backend() == real.default_backend() == "cpu"
        assert float(ours.jit(lambda x: x + 1)(1.0)) == 2.0


def test_an_unknown_or_missing_platform_is_refused_when_set():
    """JAX refuses one when it starts its backends (and ignores it after); here, at once."""
    with pytest.raises(RuntimeError, match="Unable to initialize backend 'tpu'.*cpu"):
        ours.config.update("jax_platforms", "tpu")
    assert ours.config.jax_platforms is None
    with pytest.raises(TypeError, match="string"):
        ours.config.update("jax_platform_name", 3)


# ------------------------------------------------------------------------------------------
# jax_numpy_dtype_promotion
# ------------------------------------------------------------------------------------------

DTYPE_CASES = {
    "same dtypes": lambda lib, jnp: jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.float32),
    "a Python float": lambda lib, jnp: jnp.ones(2, jnp.float32) + 1.0,
    "a Python int beside floats": lambda lib, jnp: jnp.ones(2, jnp.float32) + 1,
    "a Python float beside ints": lambda lib, jnp: jnp.ones(2, jnp.int32) + 1.0,
    "float32 and float16": lambda lib, jnp: jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.float16),
    "int32 and float32": lambda lib, jnp: jnp.ones(2, jnp.int32) + jnp.ones(2, jnp.float32),
    "int8 and int32": lambda lib, jnp: jnp.ones(2, jnp.int8) * jnp.ones(2, jnp.int32),
    "a weak array": lambda lib, jnp: jnp.ones(2, jnp.float32) + jnp.asarray(1.0),
    "bfloat16 and a Python float": lambda lib, jnp: jnp.ones(2, jnp.bfloat16) + 1.0,
    "where": lambda lib, jnp: jnp.where(True, jnp.ones(2, jnp.float32), jnp.ones(2, jnp.int32)),
    "concatenate": lambda lib, jnp: jnp.concatenate([jnp.ones(2, jnp.float32),
                                                     jnp.ones(2, jnp.int32)]),
    "mean of ints": lambda lib, jnp: jnp.mean(jnp.ones(2, jnp.int32)),
    "true_divide of ints": lambda lib, jnp: jnp.ones(2, jnp.int32) / jnp.ones(2, jnp.int32),
    "bool and int32": lambda lib, jnp: jnp.ones(2, bool) + jnp.ones(2, jnp.int32),
    "complex64 and float32": lambda lib, jnp: jnp.ones(2, jnp.complex64) * jnp.ones(2),
    "dot of float32 and float16": lambda lib, jnp: jnp.dot(jnp.ones(2), jnp.ones(2, jnp.float16)),
    "softmax, grad and random": lambda lib, jnp: lib.grad(lambda x: jnp.sum(
        lib.nn.softmax(x) * lib.random.normal(lib.random.key(0), (3,))))(jnp.ones(3)),
    "two Python numbers": lambda lib, jnp: jnp.add(1, 2.5),
}


def _dtype_outcome(fun, lib):
    try:
        return str(fun(lib, lib.numpy).dtype)
    except ValueError as error:
        return type(error).__name__


@pytest.mark.parametrize("name", DTYPE_CASES)
def test_strict_dtype_promotion_as_jax(name):
    with option("jax_numpy_dtype_promotion", "strict"):
        got = _dtype_outcome(DTYPE_CASES[name], ours)
        assert got == _dtype_outcome(DTYPE_CASES[name], real)
    if got == "TypePromotionError":  # standard promotion allows it
        assert _dtype_outcome(DTYPE_CASES[name], ours) != got


def test_strict_promotion_says_what_to_do_and_retraces_jit():
    add = ours.jit(lambda x, y: x + y)
    x, y = ojnp.ones(2, ojnp.int32), ojnp.ones(2, ojnp.float32)
    assert add(x, y).dtype == np.float32  # traced and cached under 'standard'
    with ours.numpy_dtype_promotion("strict"):
        with pytest.raises(ours.dtypes.TypePromotionError, match="int32.*astype"):
            add(x, y)  # the option changes tracing: traced again, and refused
    with pytest.raises(ValueError, match="standard"):
        ours.config.update("jax_numpy_dtype_promotion", "loose")
    assert issubclass(ours.dtypes.TypePromotionError, ValueError)
    assert issubclass(real.dtypes.TypePromotionError, ValueError)


# ------------------------------------------------------------------------------------------
# jax_log_compiles, the compilation cache options, jax_default_prng_impl
# ------------------------------------------------------------------------------------------


def test_log_compiles_logs_each_new_signature(caplog):
    f = ours.jit(lambda x: x * 2)
    with caplog.at_level("WARNING"), ours.log_compiles():  # a True/False option: on
        assert ours.config.jax_log_compiles
        f(ojnp.ones(3))
        f(ojnp.ones(3))  # the same signature: nothing compiles
        f(ojnp.ones(4))
    assert not ours.config.jax_log_compiles
    logged = [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]
    assert len(logged) == 2 and "f32[3]" in logged[0] and "f32[4]" in logged[1]
    with real.log_compiles():  # JAX's context manager takes no value either
        assert real.config.jax_log_compiles


def test_compilation_cache_dir_is_where_kernels_go(tmp_path):
    from stage2_jit import kernel_cache

    tiered = ours.config.jax_from_numpy_tiered
    ours.config.update("jax_from_numpy_tiered", False)  # compile now, not in the background
    try:
        with option("jax_persistent_cache_min_compile_time_secs", 0.0), \
                option("jax_compilation_cache_dir", str(tmp_path)):
            assert kernel_cache.cache_dir() == tmp_path
            ours.jit(lambda x: x * 3.0 + 0.25, backend="cpu")(ojnp.ones(5)).block_until_ready()
            assert list(tmp_path.glob("kernel_*.py"))
    finally:
        ours.config.update("jax_from_numpy_tiered", tiered)
    assert kernel_cache.cache_dir() != tmp_path


def test_only_the_threefry_generator_is_there():
    assert ours.config.jax_default_prng_impl == real.config.jax_default_prng_impl
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        ours.config.update("jax_default_prng_impl", "rbg")
    assert ours.config.jax_default_prng_impl == "threefry2x32"


def test_a_state_without_a_value_needs_a_true_false_option():
    with ours.debug_infs():
        assert ours.config.jax_debug_infs
    assert not ours.config.jax_debug_infs
    with ours.default_matmul_precision(None):  # None is a value, not a missing one
        pass
    for lib in (ours, real):
        with pytest.raises(TypeError), lib.numpy_rank_promotion():
            pass
