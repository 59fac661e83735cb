"""The differences from JAX that the library keeps on purpose, each asserted exactly as the
course page ``course/differences-from-jax.md`` states it: what JAX does, and what we do.

The page names each test here, and ``test_the_page_and_these_tests_name_each_other`` checks
both ways, so neither a difference nor its description can drift: if a difference goes away
(or changes), its test fails and the page is corrected with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import stage4_sharding.numpy as sjnp  # noqa: E402
from jax import lax  # noqa: E402

import stage4_sharding as sj  # noqa: E402
from stage4_sharding import lax as slax  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "course" / "differences-from-jax.md"


def raises(cls: type, fn, *args, match: str | None = None, **kwargs) -> None:
    with pytest.raises(cls, match=match):
        fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.float16, np.complex64])
def test_only_32_bit_and_64_bit_dtypes(dtype) -> None:
    x = np.ones(2, dtype)
    assert jnp.asarray(x).dtype == dtype
    raises(TypeError, sjnp.asarray, x, match=f"dtype {np.dtype(dtype).name} is not supported")


def test_jnp_also_exports_the_array_class() -> None:
    assert not hasattr(jnp, "Array") and jnp.ndarray is jax.Array
    assert sjnp.Array is sj.Array and sjnp.ndarray is sj.Array


# ------------------------------------------------------------------------------------------
# Numbers
# ------------------------------------------------------------------------------------------


def test_subnormal_floats_are_kept() -> None:
    """XLA's CPU flushes subnormal operands and results to zero; NumPy and Numba keep them.
    (Making the value alone computes nothing: ``bool(jnp.float32(1e-40))`` is True in both.)"""
    tiny = np.float32(1e-40)
    assert float(jnp.float32(tiny) * 1e10) == 0.0 and not bool(jnp.float32(tiny) + 0)
    assert float(jax.jit(lambda x: x * 1e10)(tiny)) == 0.0
    assert float(sjnp.float32(tiny) * 1e10) == pytest.approx(1e-30, rel=1e-4)
    assert bool(sjnp.float32(tiny) + 0)
    assert float(sj.jit(lambda x: x * 1e10)(tiny)) == pytest.approx(1e-30, rel=1e-4)


def test_the_x64_warning_continues_in_our_words() -> None:
    messages = []
    for np_ in (jnp, sjnp):
        with pytest.warns(UserWarning) as record:
            np_.zeros(2, dtype=np.float64)
        messages.append(str(record[0].message))
    theirs, ours = messages
    assert theirs.startswith("Explicitly requested dtype float64 requested in zeros")
    assert ours.startswith("Explicitly requested dtype float64 in zeros is not available")
    assert "jax_enable_x64" in ours and "github.com" not in ours


def test_the_sign_of_a_nan_may_differ() -> None:
    """NaN is NaN in both; its sign bit follows NumPy (and Numba) here, XLA's kernels there:
    ``log`` of a positive NaN is a negative NaN in JAX, a positive one here."""
    nan = np.float32(np.nan)
    theirs = np.asarray(jnp.log(nan)), np.asarray(jax.jit(jnp.log)(nan))
    ours = np.asarray(sjnp.log(nan)), np.asarray(sj.jit(sjnp.log)(nan))
    assert all(np.isnan(v) for v in (*theirs, *ours))
    assert all(np.signbit(v) for v in theirs)
    assert not any(np.signbit(v) for v in ours)
    assert np.signbit(np.log(nan)) == np.signbit(ours[0])


def test_a_list_with_nan_to_an_int_dtype_is_numpys_int_min() -> None:
    raises(ValueError, jnp.asarray, [1.0, float("nan")], dtype=np.int32,
           match="cannot convert float NaN to integer")
    with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
        got = sjnp.asarray([1.0, float("nan")], dtype=np.int32)
    assert got.dtype == np.int32 and np.asarray(got).tolist() == [1, np.iinfo(np.int32).min]


# ------------------------------------------------------------------------------------------
# Indexing and updates
# ------------------------------------------------------------------------------------------


def test_a_boolean_scalar_index_raises() -> None:
    assert jnp.arange(3.0)[True].shape == (1, 3)
    raises(TypeError, sjnp.arange(3.0).__getitem__, True, match="Boolean scalar indices")


def test_where_needs_both_branches() -> None:
    (found,) = jnp.where(jnp.array([True, False, True]))
    assert found.tolist() == [0, 2]
    raises(ValueError, sjnp.where, sjnp.array([True, False, True]), match="pass both")


def test_repeated_indices_in_a_set_share_its_gradient() -> None:
    """``x.at[i].set(u)`` with ``i`` repeated: one update is written (the last, in both);
    JAX's gradient goes to that update alone, ours to every update of the position."""
    weights = np.array([1.0, 2.0, 3.0], np.float32)

    def loss(np_, u):
        return np_.sum(np_.zeros(3).at[np_.array([0, 0])].set(u) * weights)

    u = np.array([1.0, 2.0], np.float32)
    assert np.asarray(jnp.zeros(3).at[jnp.array([0, 0])].set(u)).tolist() == [2.0, 0, 0]
    assert np.asarray(sjnp.zeros(3).at[sjnp.array([0, 0])].set(u)).tolist() == [2.0, 0, 0]
    assert np.asarray(jax.grad(lambda u: loss(jnp, u))(u)).tolist() == [0.0, 1.0]
    assert np.asarray(sj.grad(lambda u: loss(sjnp, u))(u)).tolist() == [1.0, 1.0]


def test_unique_indices_and_indices_are_sorted_are_ignored() -> None:
    """Both hints are accepted and change nothing here: not the result, not the jaxpr
    (``x.at[i].add`` with a repeated ``i`` still accumulates; JAX's result under a false
    hint is unspecified)."""
    x, i = np.arange(3.0, dtype=np.float32), np.array([0, 0])
    plain = sj.make_jaxpr(lambda x: x.at[i].add(1.0))(x)
    for hint in ("unique_indices", "indices_are_sorted"):
        got = sjnp.asarray(x).at[i].add(1.0, **{hint: True})
        assert np.asarray(got).tolist() == [2.0, 1.0, 2.0]
        assert str(sj.make_jaxpr(lambda x: x.at[i].add(1.0, **{hint: True}))(x)) == str(plain)
        assert np.asarray(sjnp.asarray(x).at[np.array([2, 0])].get(**{hint: True})).tolist() \
            == [2.0, 0.0]


def test_gather_and_scatter_print_without_jaxs_extra_params() -> None:
    x, i = np.zeros(3, np.float32), np.array([0, 2], np.int32)
    theirs = str(jax.make_jaxpr(lambda x: x.at[i].add(1.0))(x))
    ours = str(sj.make_jaxpr(lambda x: x.at[i].add(1.0))(x))
    extras = ("update_jaxpr", "update_consts", "indices_are_sorted", "unique_indices")
    assert "scatter-add[" in theirs and all(name in theirs for name in extras)
    assert "scatter_add[" in ours and not any(name in ours for name in extras)
    theirs = str(jax.make_jaxpr(lambda x: x[i])(x))
    ours = str(sj.make_jaxpr(lambda x: x[i])(x))
    assert "gather[" in ours and "indices_are_sorted" in theirs and "unique_indices" in theirs
    assert "indices_are_sorted" not in ours and "unique_indices" not in ours


# ------------------------------------------------------------------------------------------
# Functions
# ------------------------------------------------------------------------------------------


def test_roll_needs_a_concrete_shift() -> None:
    x = np.arange(5.0, dtype=np.float32)
    theirs = jax.jit(lambda x, s: jnp.roll(x, s))(x, 2)
    assert np.asarray(theirs).tolist() == [3.0, 4.0, 0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="shift must be a concrete integer"):
        sj.jit(lambda x, s: sjnp.roll(x, s))(x, 2)
    ours = sj.jit(lambda x: sjnp.roll(x, 2))(x)  # a concrete shift
    assert np.asarray(ours).tolist() == np.asarray(theirs).tolist()


@pytest.mark.parametrize("spec, shape, match", [
    ("ii->i", (2, 2), "repeated index"), ("...i->...", (2, 3), "ellipsis")])
def test_einsum_has_no_diagonals_and_no_ellipsis(spec: str, shape, match: str) -> None:
    x = np.ones(shape, np.float32)
    assert jnp.einsum(spec, x).shape == shape[:1]
    raises(NotImplementedError, sjnp.einsum, spec, x, match=match)


def test_pad_has_no_negative_padding() -> None:
    x = np.arange(4.0, dtype=np.float32)
    assert np.asarray(lax.pad(x, 0.0, [(-1, 1, 0)])).tolist() == [1.0, 2.0, 3.0, 0.0]
    raises(ValueError, slax.pad, sjnp.asarray(x), 0.0, [(-1, 1, 0)], match="negative padding")


@pytest.mark.parametrize("name", ["add", "mul"])
def test_lax_add_and_mul_take_bools(name: str) -> None:
    """``lax.add`` of bools is a logical or, ``lax.mul`` a logical and; JAX's refuse bools
    (``jnp.add`` and ``jnp.multiply`` of bools work in both)."""
    x, y = np.array([True, False, False]), np.array([True, True, False])
    raises(TypeError, getattr(lax, name), x, y, match="does not accept dtype bool")
    want = np.logical_or(x, y) if name == "add" else np.logical_and(x, y)
    got = getattr(slax, name)(sjnp.asarray(x), sjnp.asarray(y))
    assert got.dtype == np.bool_ and np.asarray(got).tolist() == want.tolist()


@pytest.mark.parametrize("name, bitwise", [("reduce_and", np.bitwise_and),
                                           ("reduce_or", np.bitwise_or)])
def test_reduce_and_and_reduce_or_are_logical(name: str, bitwise) -> None:
    x = np.array([3, 5, 6], np.int32)
    got_jax = getattr(lax, name)(x, (0,))
    assert got_jax.dtype == np.int32 and int(got_jax) == int(bitwise.reduce(x))
    ours = getattr(slax, name)(sjnp.asarray(x), (0,))
    assert ours.dtype == np.bool_
    assert bool(ours) == bool(np.logical_and.reduce(x) if name == "reduce_and" else
                              np.logical_or.reduce(x))


def test_lax_reshape_has_no_dimensions_argument() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = lax.reshape(x, (3, 2), dimensions=(1, 0))
    assert np.asarray(want).tolist() == x.T.reshape(3, 2).tolist()
    raises(TypeError, slax.reshape, sjnp.asarray(x), (3, 2), dimensions=(1, 0))


def test_gelu_is_only_the_tanh_approximation() -> None:
    assert float(jax.nn.gelu(1.0, approximate=False)) == pytest.approx(0.8413447, abs=1e-6)
    np.testing.assert_allclose(np.asarray(sj.nn.gelu(1.0)), np.asarray(jax.nn.gelu(1.0)),
                               rtol=1e-6)
    raises(NotImplementedError, sj.nn.gelu, 1.0, approximate=False, match="erf")


# ------------------------------------------------------------------------------------------
# Random numbers
# ------------------------------------------------------------------------------------------


def test_a_key_is_a_pytree_over_its_uint32_data() -> None:
    (jax_leaf,) = jax.tree_util.tree_leaves(jax.random.key(0))
    assert jax.dtypes.issubdtype(jax_leaf.dtype, jax.dtypes.prng_key)
    (leaf,) = sj.tree_util.tree_leaves(sj.random.key(0))
    assert leaf.dtype == np.uint32 and leaf.shape == (2,)
    assert np.asarray(leaf).tolist() == np.asarray(jax.random.key_data(jax.random.key(0))).tolist()


def test_permutation_is_only_of_whole_rows() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert jax.random.permutation(jax.random.key(0), x, independent=True).shape == (2, 3)
    raises(NotImplementedError, sj.random.permutation, sj.random.key(0), sjnp.asarray(x),
           independent=True, match="independent")


def test_uniform_with_bounds_is_within_an_ulp_of_jax() -> None:
    """The bits are JAX's, so [0, 1) draws are equal; scaling to other bounds rounds twice
    where XLA may fuse a multiply-add, which can move a value by one ulp of the range."""
    for minval, maxval in ((0.0, 1.0), (-3.0, 5.0), (2.0, 2.5)):
        want = np.asarray(jax.random.uniform(jax.random.key(3), (4096,), minval=minval,
                                             maxval=maxval))
        got = np.asarray(sj.random.uniform(sj.random.key(3), (4096,), minval=minval,
                                           maxval=maxval))
        ulp = np.spacing(np.float32(maxval - minval))
        assert np.abs(got - want).max() <= ulp, (minval, maxval)
        if (minval, maxval) == (0.0, 1.0):
            assert np.array_equal(got, want)


# ------------------------------------------------------------------------------------------
# Transformations
# ------------------------------------------------------------------------------------------


def test_custom_vjp_has_no_nondiff_argnums() -> None:
    def scale(k, x):
        return k * x

    jax.custom_vjp(scale, nondiff_argnums=(0,))  # accepted
    raises(NotImplementedError, sj.custom_vjp, scale, nondiff_argnums=(0,),
           match="nondiff_argnums")


def test_scatter_mul_is_differentiated_without_unique_indices() -> None:
    """JAX refuses to differentiate ``.at[].mul`` unless told the indices are unique; ours
    differentiates it exactly, repeated indices and zeros included."""
    def f(np_, x, y):
        return np_.sum(x.at[np_.array([0, 2])].mul(y))

    x, y = np.array([2.0, 3.0, 4.0], np.float32), np.array([5.0, 7.0], np.float32)
    raises(NotImplementedError, jax.grad(lambda x, y: f(jnp, x, y), (0, 1)), x, y,
           match="unique_indices")
    gx, gy = sj.grad(lambda x, y: f(sjnp, x, y), (0, 1))(x, y)
    assert np.asarray(gx).tolist() == [5.0, 1.0, 7.0] and np.asarray(gy).tolist() == [2.0, 4.0]
    # repeated indices and a zero: x[0] * y[0] * y[1] * y[2], each factor's derivative the
    # product of the others, as JAX gives for the product written out
    y = np.array([5.0, 0.0, 7.0], np.float32)
    g = sj.grad(lambda y: sjnp.sum(sjnp.asarray(x).at[sjnp.array([0, 0, 0])].mul(y)))(y)
    want = jax.grad(lambda y: x[0] * y[0] * y[1] * y[2])(y)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(want))


# ------------------------------------------------------------------------------------------
# Errors and tracers
# ------------------------------------------------------------------------------------------


def test_a_while_loop_from_a_value_without_a_derivative_is_refused_under_grad() -> None:
    """A while_loop's carry from ``jnp.ceil(x)``: JAX's tangent there is a symbolic zero, so
    its grad is zeros; ours is on the tape, and reverse mode through a while_loop refuses."""
    def loss_of(lib, np_):
        def loss(x):
            carry = (0, np_.ceil(x - 0.25))
            return np_.sum(lib.lax.while_loop(lambda c: c[0] < 3,
                                              lambda c: (c[0] + 1, np_.sin(c[1])), carry)[1])
        return loss
    x = np.array([-1.75, 0.75], np.float32)
    assert np.asarray(jax.grad(loss_of(jax, jnp))(x)).tolist() == [0.0, 0.0]
    raises(ValueError, sj.grad(loss_of(sj, sjnp)), x)
    forward = sj.jvp(loss_of(sj, sjnp), (x,), (np.ones(2, np.float32),))[1]  # forward: fine
    assert float(forward) == 0.0


@pytest.mark.parametrize("op", ["stop_gradient", "sign", "floor", "comparison"])
def test_a_value_without_a_derivative_is_still_traced(op: str) -> None:
    """``float()`` and ``.tolist()`` of ``stop_gradient(x)``, ``sign(x)``, ``floor(x)`` or
    ``x > 0`` under ``grad`` or ``jvp``: JAX's zero tangent leaves a plain array, ours is
    still on the tape, so the conversion is refused."""
    def loss_of(lib, np_, convert):
        def loss(x):
            y = {"stop_gradient": lambda: lib.lax.stop_gradient(x), "sign": lambda: np_.sign(x),
                 "floor": lambda: np_.floor(x), "comparison": lambda: x > 0}[op]()
            convert(y)
            return x * 2.0
        return loss

    x = np.float32(1.5)
    for convert in (float, lambda y: y.tolist()):
        theirs = loss_of(jax, jnp, convert)
        assert float(jax.grad(theirs)(jnp.asarray(x))) == 2.0
        jax.jvp(theirs, (jnp.asarray(x),), (jnp.asarray(np.float32(1.0)),))
        ours = loss_of(sj, sjnp, convert)
        raises(sj.errors.ConcretizationTypeError, sj.grad(ours), sjnp.asarray(x))
        raises(sj.errors.ConcretizationTypeError, sj.jvp, ours, (sjnp.asarray(x),),
               (sjnp.asarray(np.float32(1.0)),))


def test_mesh_axis_names_print_with_repr() -> None:
    """``str(mesh)`` quotes each axis name with ``repr``; JAX puts it between single quotes,
    so the two differ only for a name with a quote in it."""
    for name, theirs, ours in (("d", "'d'", "'d'"), ("it's", "'it's'", '"it\'s"')):
        assert str(jax.make_mesh((8,), (name,))) == f"Mesh({theirs}: 8, axis_types=(Explicit,))"
        assert str(sj.make_mesh((8,), (name,))) == f"Mesh({ours}: 8, axis_types=(Explicit,))"


def test_error_classes_take_a_finished_message() -> None:
    """Ours are plain exceptions of a finished message; JAX's build theirs from a tracer and
    append a link to the documentation."""
    assert str(sj.errors.ConcretizationTypeError("a message")) == "a message"
    assert str(sj.errors.JAXTypeError("a message")) == "a message"
    assert str(jax.errors.JAXTypeError("a message")) == (
        "a message\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.JAXTypeError")
    raises(AttributeError, jax.errors.ConcretizationTypeError, "a message")


def test_jax_errors_lacks_three_classes() -> None:
    missing = {"InconclusiveDimensionOperation", "JaxRuntimeError", "KeyReuseError"}
    theirs = {n for n in dir(jax.errors) if not n.startswith("_")}
    ours = {n for n in dir(sj.errors) if not n.startswith("_")}
    assert theirs - ours == missing and ours - theirs == set()


def test_two_error_classes_are_also_at_the_top_level() -> None:
    for name in ("ConcretizationTypeError", "TracerArrayConversionError"):
        assert not hasattr(jax, name)
        assert getattr(sj, name) is getattr(sj.errors, name)


def test_error_messages_are_in_our_own_words() -> None:
    """The class and the moment are JAX's, the words after the first few are ours."""
    for fn, cls in ((float, "ConcretizationTypeError"),
                    (np.asarray, "TracerArrayConversionError")):
        with pytest.raises(getattr(jax.errors, cls)) as theirs:
            jax.jit(fn)(1.0)
        with pytest.raises(getattr(sj.errors, cls)) as ours:
            sj.jit(fn)(1.0)
        assert str(theirs.value).splitlines()[0] != str(ours.value).splitlines()[0]
        assert "docs.jax.dev" in str(theirs.value) and "docs.jax.dev" not in str(ours.value)


# ------------------------------------------------------------------------------------------
# Devices and sharding
# ------------------------------------------------------------------------------------------


def test_there_are_always_8_simulated_devices() -> None:
    """Ours: 8 simulated CPU devices, whatever the machine; JAX: the platform's devices
    (this suite asks XLA for 8 CPU devices, oracle.prepare_jax, so that both have the meshes)."""
    assert len(sj.devices()) == 8 and sj.device_count() == 8
    assert {d.platform for d in jax.devices()} == {"cpu"}


def _split(lib, mesh, value, *spec):
    sharding = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*spec))
    return lib.device_put(value, sharding)


def _sharding_error(fn, *args) -> BaseException:
    with pytest.raises(Exception) as caught:
        fn(*args)
    return caught.value


def test_a_donated_sharded_array_is_kept() -> None:
    """JAX deletes a donated sharded array whose buffers hold a result; ours keeps it and
    computes the same result in fresh memory."""
    found = []
    for lib in (jax, sj):
        mesh = lib.make_mesh((8,), ("d",))
        x = _split(lib, mesh, np.ones((8, 4), np.float32), "d")
        y = lib.jit(lambda a: a * 2.0, donate_argnums=0)(x)
        found.append((x.is_deleted(), np.asarray(y).tolist()))
    (theirs_deleted, theirs), (ours_deleted, ours) = found
    assert theirs_deleted and not ours_deleted and theirs == ours


def test_cpu_memory_stats_are_counted_where_jax_has_none() -> None:
    assert jax.devices()[0].memory_stats() is None
    stats = sj.devices()[0].memory_stats()
    assert {"bytes_in_use", "peak_bytes_in_use", "pool_bytes", "bytes_limit"} <= set(stats)


def test_sharding_type_error_is_a_type_error() -> None:
    """JAX's ShardingTypeError derives from Exception alone; ours from TypeError. For a reshape
    of a split operand that no rule places, JAX asks for ``out_sharding=`` (our reshape has
    none), we ask to reshard first."""
    value = np.arange(16.0, dtype=np.float32).reshape(2, 8)
    errors = []
    for lib in (jax, sj):
        mesh = lib.make_mesh((8,), ("d",))
        with lib.set_mesh(mesh):
            y = _split(lib, mesh, value, None, "d")
            errors.append(_sharding_error(lib.jit(lambda y: y.reshape(4, 4)), y))
    theirs, ours = errors
    assert type(theirs).__name__ == type(ours).__name__ == "ShardingTypeError"
    assert type(theirs).__bases__ == (Exception,) and isinstance(ours, TypeError)
    assert "out_sharding" in str(theirs)
    assert "out_sharding" not in str(ours) and "Reshard the operand first" in str(ours)


def test_a_constant_in_a_jitted_concatenate_takes_the_operands_layout() -> None:
    """Under jit, ``jnp.zeros(16)`` has no sharding in our types, so it is laid out as the
    split operand it is concatenated with; JAX types it replicated and refuses. Eagerly both
    refuse (the constant is an array, replicated)."""
    value = np.arange(16.0, dtype=np.float32)
    for lib, np_ in ((jax, jnp), (sj, sjnp)):
        mesh = lib.make_mesh((8,), ("d",))
        with lib.set_mesh(mesh):
            x = _split(lib, mesh, value, "d")
            join = lambda x: np_.concatenate([x, np_.zeros(16)])  # noqa: E731
            eager = _sharding_error(join, x)
            assert type(eager).__name__ == "ShardingTypeError"
            if lib is jax:
                assert type(_sharding_error(lib.jit(join), x)).__name__ == \
                    "ShardingTypeError"
            else:
                got = lib.jit(join)(x)
                assert tuple(got.sharding.spec) == ("d",)
                assert np.asarray(got).tolist() == value.tolist() + [0.0] * 16


def test_an_update_split_unlike_its_target_is_resharded() -> None:
    """``x.at[0].add(u)`` with ``u`` split and ``x`` replicated: JAX refuses the broadcast of
    ``u``; ours reshards it, giving what JAX gives for ``u`` resharded replicated first."""
    value, update = np.zeros((4, 8), np.float32), np.arange(8.0, dtype=np.float32)
    add = lambda x, u: x.at[0].add(u)  # noqa: E731
    mesh = jax.make_mesh((8,), ("d",))
    with jax.set_mesh(mesh):
        x, u = _split(jax, mesh, value), _split(jax, mesh, update, "d")
        with pytest.raises(ValueError, match="Incompatible types for broadcasting"):
            jax.jit(add)(x, u)
        want = jax.jit(add)(x, jax.sharding.reshard(u, jax.sharding.PartitionSpec()))
    mesh = sj.make_mesh((8,), ("d",))
    with sj.set_mesh(mesh):
        got = sj.jit(add)(_split(sj, mesh, value), _split(sj, mesh, update, "d"))
    assert np.asarray(got).tolist() == np.asarray(want).tolist()
    assert tuple(e for e in got.sharding.spec if e) == tuple(e for e in want.sharding.spec if e)


def test_a_slice_across_devices_gathers_the_dim_whole() -> None:
    """``x[2:18]`` of 32 elements split 8 ways: the values and the spec are JAX's; XLA moves
    the few elements each block needs by collective permutes, we all-gather the dim (7 blocks
    of 4 float32 per device), which the cost model counts."""
    value = np.arange(32.0, dtype=np.float32)
    cut = lambda x: x[2:18]  # noqa: E731
    mesh = jax.make_mesh((8,), ("d",))
    with jax.set_mesh(mesh):
        x = _split(jax, mesh, value, "d")
        want = jax.jit(cut)(x)
        hlo = jax.jit(cut).lower(x).compile().as_text()
    assert "collective-permute" in hlo and "all-gather" not in hlo
    mesh = sj.make_mesh((8,), ("d",))
    with sj.set_mesh(mesh):
        x = _split(sj, mesh, value, "d")
        with sj.record_collectives() as log:
            got = sj.jit(cut)(x)
    assert np.asarray(got).tolist() == np.asarray(want).tolist() == value[2:18].tolist()
    assert tuple(got.sharding.spec) == tuple(want.sharding.spec) == ("d",)
    assert [(c.kind, c.bytes_sent) for c in log] == [("all-gather", 7 * 4 * 4)]


# ------------------------------------------------------------------------------------------
# Compiled kernels
# ------------------------------------------------------------------------------------------


def test_an_unusable_kernel_cache_folder_falls_back_to_a_temporary_one(tmp_path,
                                                                       monkeypatch) -> None:
    """JAX caches nothing on disk unless asked (``jax_compilation_cache_dir`` is unset); ours
    always caches, and where its folder cannot be used it warns and uses a temporary one."""
    from stage2_jit import kernel_cache

    assert jax.config.jax_compilation_cache_dir is None
    blocked = tmp_path / "a file"
    blocked.write_text("in the way")
    monkeypatch.setenv("JAX_FROM_NUMPY_CACHE_DIR", str(blocked / "kernels"))
    with pytest.warns(UserWarning, match="cannot be used"):
        folder = kernel_cache.usable_cache_dir()
    assert folder != blocked / "kernels" and folder.is_dir()
    assert folder.name.startswith("jax_from_numpy_kernels-")


def test_a_first_call_on_the_interpreter_tier_equals_jax_bit_for_bit() -> None:
    """A first call that runs on the interpreter while the kernel compiles gives the bits the
    kernel gives after it; compared with JAX's, both are the same float32 values (JAX's
    ``tanh`` polynomial is not ours, so within a few ulps)."""
    from stage2_jit import tiers

    def program(x):
        return jnp.maximum(x * x - 2.0 * x, 0.0) / (1.0 + jnp.abs(x))

    x = np.linspace(-4, 4, 4097, dtype=np.float32)
    sj.config.update("jax_from_numpy_tiered", True)
    try:
        f = sj.jit(lambda x: sjnp.maximum(x * x - 2.0 * x, 0.0) / (1.0 + sjnp.abs(x)))
        first = np.asarray(f(x))
        tiers.wait()
        later = np.asarray(f(x))
    finally:
        sj.config.update("jax_from_numpy_tiered", False)
    theirs = np.asarray(jax.jit(program)(x))
    assert first.view(np.uint32).tolist() == later.view(np.uint32).tolist()
    assert first.dtype == theirs.dtype
    np.testing.assert_array_equal(first, theirs)


def test_lower_as_text_shows_the_jaxprs_plan_and_source_where_jax_shows_stablehlo() -> None:
    x = np.ones((8, 4), np.float32)
    theirs = jax.jit(jax.nn.softmax).lower(x).as_text()
    ours = sj.jit(sj.nn.softmax).lower(x).as_text()
    assert theirs.lstrip().startswith("module @jit_softmax") and "stablehlo." in theirs
    headings = [line.split(" (")[0] for line in ours.splitlines()
                if line in ("# jaxpr", "# optimized jaxpr")
                or line.startswith(("# kernel plan", "# generated source"))]
    assert headings == ["# jaxpr", "# optimized jaxpr", "# kernel plan", "# generated source"]
    assert "stablehlo" not in ours


def test_each_distinct_closure_compiles_a_kernel_of_its_own() -> None:
    """Constants are written into the generated source, so closures over different floats are
    different kernels; Numba keeps each one's machine code for the life of the process."""
    x = np.float32(1.0)

    def source(c: float) -> str:
        text = sj.jit(lambda x: x * c + 1.0).lower(x).as_text()
        return text[text.index("# generated source"):]

    first, second = source(2.5), source(3.5)
    assert first != second and "np.float32(2.5)" in first and "np.float32(3.5)" in second


# ------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------


def test_the_page_and_these_tests_name_each_other() -> None:
    text = PAGE.read_text(encoding="utf-8")
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", text))
    here = {name for name in globals() if name.startswith("test_")}
    here.discard("test_the_page_and_these_tests_name_each_other")
    assert named - here == set(), f"the page names tests that do not exist: {named - here}"
    assert here - named == set(), f"tests the page does not name: {here - named}"
