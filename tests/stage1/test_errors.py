"""Errors teach: each error path raises JAX's exception type with a message that says what went
wrong and what to do instead. And what is *not* an error: NaN and inf propagate silently."""

import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import stage1_autodiff as jax
from stage1_autodiff import numpy as jnp
from stage1_autodiff import random as jr

UnexpectedTracerError = jax.core.UnexpectedTracerError


def shapes_pattern(*shapes) -> str:
    """A regex that finds each shape, in order, anywhere in a message."""
    return ".*".join(re.escape(str(tuple(s))) for s in shapes)


# ------------------------------------------------------------------------------------------
# grad
# ------------------------------------------------------------------------------------------


def test_grad_of_non_scalar_output_names_the_shape_and_what_to_do():
    with pytest.raises(TypeError, match=r"scalar.*\(3,\)") as info:
        jax.grad(lambda x: x * 2.0)(jnp.ones(3))
    message = str(info.value)
    assert re.search(r"sum|mean", message), message
    assert re.search(r"vjp|jacrev|jacfwd|Jacobian", message), message


def test_grad_of_tuple_output_says_to_return_a_scalar():
    with pytest.raises(TypeError, match=r"scalar.*tuple"):
        jax.grad(lambda x: (x, x))(1.0)


@pytest.mark.parametrize("arg", [jnp.array(3), np.int32(3), 3, jnp.array([True])],
                         ids=["int32_array", "np_int32", "python_int", "bool"])
def test_grad_wrt_integer_input_mentions_allow_int(arg):
    with pytest.raises(TypeError, match=r"allow_int") as info:
        jax.grad(lambda x: jnp.sum(x * 2.0))(arg)
    assert re.search(r"int32|bool", str(info.value))


def test_grad_wrt_integer_input_names_the_argument_and_path():
    with pytest.raises(TypeError, match=r"argument 1"):
        jax.grad(lambda x, n: x * n, argnums=(0, 1))(1.0, jnp.array(2))
    with pytest.raises(TypeError, match=r"argument 0\['n'\]"):
        jax.grad(lambda p: p["x"] * p["n"])({"x": 1.0, "n": jnp.array(2)})


def test_grad_with_allow_int_returns_float0():
    g = jax.grad(lambda x, n: x * n, argnums=1, allow_int=True)(2.0, jnp.array(3))
    assert g.dtype == jax.dtypes.float0


@pytest.mark.parametrize("argnums, error, message", [
    (1, TypeError, r"argument 1 \(argnums=1\).*at least 2 positional.*called with 1"),
    ((0, 3), TypeError, r"argument 3 \(argnums=\(0, 3\)\).*at least 4 positional"),
    (-2, ValueError, r"argnums contains -2.*out of range.*1 positional argument"),
])
def test_grad_argnums_out_of_range_names_argnums_and_argument_count(argnums, error, message):
    """As JAX (tests/stage2/test_arguments_and_errors.py asks it): too few positional
    arguments is a TypeError, a negative number past the start a ValueError."""
    def f(x):
        return x * 2.0

    with pytest.raises(error, match=message):
        jax.grad(f, argnums=argnums)(1.0)


def test_float0_gradient_refuses_arithmetic():
    g = jax.grad(lambda x, n: x * n, argnums=1, allow_int=True)(2.0, jnp.array(3))
    with pytest.raises(TypeError, match=r"float0"):
        g + 1


def test_grad_of_integer_output():
    with pytest.raises(TypeError, match=r"real-valued outputs.*int32"):
        jax.grad(lambda x: jnp.floor(x).astype(jnp.int32))(1.5)


def test_grad_of_boolean_output():
    with pytest.raises(TypeError, match=r"real-valued outputs.*bool"):
        jax.grad(lambda x: x > 0)(1.5)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match=r"has_aux.*pair"):
        jax.grad(lambda x: x * 2.0, has_aux=True)(1.0)


# ------------------------------------------------------------------------------------------
# Shapes that don't fit
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [
    jnp.add,
    jnp.multiply,
    jnp.maximum,
    lambda x, y: jnp.where(x > 0, x, y),
], ids=["add", "multiply", "maximum", "where"])
def test_broadcasting_mismatch_names_both_shapes(op):
    with pytest.raises(ValueError, match=shapes_pattern((3,), (4,))):
        op(jnp.ones(3), jnp.ones(4))


def test_broadcasting_mismatch_through_an_operator():
    with pytest.raises(ValueError, match=shapes_pattern((2, 3), (2,)) + r".*equal or 1"):
        jnp.ones((2, 3)) + jnp.ones(2)


def test_matmul_mismatch_names_both_shapes():
    with pytest.raises(TypeError, match=shapes_pattern((2, 3), (4, 5))):
        jnp.matmul(jnp.ones((2, 3)), jnp.ones((4, 5)))
    with pytest.raises(TypeError, match=shapes_pattern((2, 3), (4, 5))):
        jnp.ones((2, 3)) @ jnp.ones((4, 5))


def test_batched_matmul_mismatch_names_both_operand_shapes():
    with pytest.raises(ValueError, match=shapes_pattern((2, 2, 3), (3, 3, 4))):
        jnp.matmul(jnp.ones((2, 2, 3)), jnp.ones((3, 3, 4)))


def test_dot_mismatch_names_both_shapes():
    with pytest.raises(TypeError, match=shapes_pattern((3,), (4,))):
        jnp.dot(jnp.ones(3), jnp.ones(4))


@pytest.mark.parametrize("second", [(2, 4), (3,)], ids=["other_dim", "other_rank"])
def test_concatenate_mismatch_names_the_shapes(second):
    with pytest.raises(TypeError, match=r"concatenat.*" + shapes_pattern((2, 3), second)):
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones(second)])


def test_stack_mismatch_names_the_shapes():
    with pytest.raises(ValueError, match=r"same shape.*" + shapes_pattern((2,), (3,))):
        jnp.stack([jnp.ones(2), jnp.ones(3)])


def test_broadcast_to_incompatible_shape():
    with pytest.raises(ValueError, match=shapes_pattern((3,), (2, 4))):
        jnp.broadcast_to(jnp.ones(3), (2, 4))


# ------------------------------------------------------------------------------------------
# jvp and vjp arguments
# ------------------------------------------------------------------------------------------


def test_jvp_tree_mismatch_names_both_structures():
    with pytest.raises(TypeError, match=r"same tree structure.*\(\*, \*\).*\(\*,\)"):
        jax.jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,))


def test_jvp_tree_mismatch_of_dict_keys():
    with pytest.raises(TypeError, match=r"tree structure.*'a'.*'b'"):
        jax.jvp(lambda d: d["a"], ({"a": 1.0},), ({"b": 1.0},))


def test_jvp_tangent_shape_mismatch_names_the_path_and_both_shapes():
    with pytest.raises(ValueError, match=r"primals\[1\].*" + shapes_pattern((3,), (4,))):
        jax.jvp(lambda x, y: x * y, (1.0, jnp.ones(3)), (1.0, jnp.ones(4)))


def test_jvp_tangent_dtype_mismatch_names_both_dtypes():
    with pytest.raises(TypeError, match=r"dtype.*float32.*int32"):
        jax.jvp(lambda x: x, (jnp.ones(3),), (jnp.ones(3, dtype=jnp.int32),))


@pytest.mark.parametrize("which", ["primals", "tangents"])
def test_jvp_needs_tuples(which):
    primals, tangents = (1.0,), (1.0,)
    if which == "primals":
        primals = 1.0
    else:
        tangents = jnp.ones(())
    with pytest.raises(TypeError, match=rf"{which}.*tuple or a list.*\(x,\)"):
        jax.jvp(jnp.sin, primals, tangents)


def test_vjp_cotangent_tree_mismatch_names_both_structures():
    _, f_vjp = jax.vjp(lambda x: (x, x * 2.0), 1.0)
    with pytest.raises(ValueError, match=r"same tree structure.*\(\*, \*\).*PyTreeDef\(\*\)"):
        f_vjp(1.0)
    with pytest.raises(ValueError, match=r"tree structure.*\[\*, \*\]"):
        f_vjp([1.0, 1.0])


def test_vjp_cotangent_shape_mismatch_names_both_shapes():
    _, f_vjp = jax.vjp(lambda x: x * 2.0, jnp.ones(3))
    with pytest.raises(ValueError, match=r"cotangent.*" + shapes_pattern((4,), (3,))):
        f_vjp(jnp.ones(4))


# ------------------------------------------------------------------------------------------
# Immutability
# ------------------------------------------------------------------------------------------

IMMUTABLE = r"immutable.*\.at\["


def test_item_assignment_says_arrays_are_immutable_and_points_to_at():
    x = jnp.zeros(3)
    with pytest.raises(TypeError, match=IMMUTABLE):
        x[0] = 5
    np.testing.assert_array_equal(x, np.zeros(3))  # unchanged
    np.testing.assert_array_equal(x.at[0].set(5.0), [5.0, 0.0, 0.0])


@pytest.mark.parametrize("array, values", [
    (jnp.zeros(3, jnp.int32), 1.5),  # a float into integers: rounded
    (jnp.zeros(3, jnp.float16), np.float32(2.0)),  # float32 into float16
])
def test_a_lossy_at_update_warns_as_jax_does_and_still_converts(array, values):
    with pytest.warns(FutureWarning, match=r"incompatible types.*\.astype"):
        out = array.at[0].set(values)
    assert out.dtype == array.dtype and out[0] == np.asarray(values).astype(array.dtype)


@pytest.mark.parametrize("array, values", [
    (jnp.zeros(3), 2), (jnp.zeros(3), np.float16(1.0)), (jnp.zeros(3, jnp.int8), 3),
    (jnp.zeros(3, jnp.int32), True)])
def test_a_safe_at_update_does_not_warn(array, values):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        array.at[1].add(values)


def test_item_assignment_on_a_tracer_too():
    def f(x):
        x[0] = 5.0
        return x.sum()

    with pytest.raises(TypeError, match=IMMUTABLE):
        jax.grad(f)(jnp.ones(3))


# ------------------------------------------------------------------------------------------
# Dtypes we don't support
# ------------------------------------------------------------------------------------------

# The narrow and complex types are supported (issue 18); these are not, nor in JAX's numpy.
UNSUPPORTED = [np.longdouble, np.clongdouble, ml_dtypes.int4, ml_dtypes.float6_e2m3fn]
SUPPORTED = r"bool.*int32.*uint32.*float32"


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("make", [
    lambda d: jnp.asarray(np.ones(2, d)),
    lambda d: jnp.array(np.array([1], d)),
    lambda d: jnp.zeros(3, dtype=d),
    lambda d: jnp.ones((2,), dtype=np.dtype(d).name),
    lambda d: jnp.full(2, 1, dtype=d),
    lambda d: jnp.arange(3, dtype=d),
    lambda d: jnp.ones(3).astype(d),
    lambda d: jnp.ones(3) + np.ones(3, d),
], ids=["asarray", "array", "zeros", "ones_by_name", "full", "arange", "astype", "operand"])
def test_unsupported_dtype_names_the_dtype_and_the_supported_ones(make, dtype):
    with pytest.raises(TypeError, match=rf"{np.dtype(dtype).name}.*not supported.*{SUPPORTED}"):
        make(dtype)


def test_python_complex_is_a_weak_complex64():
    z = jnp.asarray(1 + 2j)
    assert z.dtype == np.complex64 and z.weak_type


def test_unsupported_dtype_message_mentions_x64_for_64_bit_types():
    with pytest.raises(TypeError, match=r"float64.*jax_enable_x64"):
        jnp.zeros(2, dtype=np.longdouble)


def test_x64_types_canonicalize_without_x64_and_exist_with_it(x64):
    assert jnp.zeros(2, dtype=np.float64).dtype == np.float64
    assert jnp.asarray(np.ones(2, np.int64)).dtype == np.int64
    with pytest.raises(TypeError, match=r"float128.*not supported"):
        jnp.zeros(2, dtype=np.longdouble)


def test_64_bit_types_become_32_bit_without_x64():
    with pytest.warns(UserWarning, match=r"dtype float64 in zeros"):  # asked for by name
        assert jnp.zeros(2, dtype=np.float64).dtype == np.float32
    assert jnp.asarray(np.ones(2, np.uint64)).dtype == np.uint32  # data: silently, as JAX


# ------------------------------------------------------------------------------------------
# Indexing
# ------------------------------------------------------------------------------------------

X23 = jnp.arange(6.0).reshape(2, 3)


def test_too_many_indices():
    with pytest.raises(IndexError, match=r"(?i)too many indices.*3.*dimension 2"):
        X23[0, 0, 0]


def test_static_index_into_an_empty_dim_names_axis_and_size():
    with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 0"):
        jnp.zeros((0, 3))[0]


def test_float_index():
    with pytest.raises(TypeError, match=r"(?i)index.*float"):
        X23[1.5]


def test_float_array_index():
    with pytest.raises(TypeError, match=r"integer or boolean.*float32"):
        X23[jnp.array([1.0])]


@pytest.mark.parametrize("idx", [True, np.bool_(False)])
def test_boolean_scalar_index(idx):
    with pytest.raises(TypeError, match=r"(?i)boolean scalar.*where"):
        X23[idx]


def test_two_ellipses():
    with pytest.raises(IndexError, match=r"single ellipsis"):
        X23[..., 0, ...]


# ------------------------------------------------------------------------------------------
# Shape functions and reductions
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4,), (4, -1), (4, 2)])
def test_reshape_to_incompatible_size(shape):
    with pytest.raises(TypeError, match=rf"size 6.*{re.escape(str(shape))}"):
        jnp.reshape(jnp.ones(6), shape)


def test_reshape_with_two_unknown_dims():
    with pytest.raises(TypeError, match=r"one unknown dimension"):
        jnp.reshape(jnp.ones(6), (-1, -1))


def test_split_into_unequal_sections():
    with pytest.raises(ValueError, match=r"equal division.*7.*3 sections"):
        jnp.split(jnp.ones(7), 3)


def test_squeeze_of_an_axis_that_is_not_one():
    with pytest.raises(ValueError, match=r"size not equal to one.*axis 0.*\(2, 1\)"):
        jnp.squeeze(jnp.ones((2, 1)), 0)


@pytest.mark.parametrize("reduce", [jnp.sum, jnp.mean, jnp.max, jnp.prod, jnp.argmax, jnp.any])
@pytest.mark.parametrize("axis", [2, -3])
def test_reduction_over_an_out_of_range_axis(reduce, axis):
    with pytest.raises(ValueError, match=rf"axis {axis} is out of bounds.*dimension 2"):
        reduce(jnp.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("fn, name", [
    (lambda x: jnp.swapaxes(x, 0, 4), "swapaxes"),
    (lambda x: jnp.moveaxis(x, 0, 4), "moveaxis"),
    (lambda x: jnp.expand_dims(x, 5), "expand_dims"),
    (lambda x: jnp.squeeze(x, 3), "squeeze"),
], ids=["swapaxes", "moveaxis", "expand_dims", "squeeze"])
def test_out_of_range_axis_names_the_function(fn, name):
    with pytest.raises(ValueError, match=rf"^{name}: axis \d is out of bounds"):
        fn(jnp.ones((2, 3)))


def test_repeated_axis():
    with pytest.raises(ValueError, match=r"repeated axis"):
        jnp.sum(jnp.ones((2, 3)), axis=(0, 0))


@pytest.mark.parametrize("reduce", [jnp.max, jnp.min, jnp.argmax, jnp.argmin])
def test_max_of_an_empty_array(reduce):
    with pytest.raises(ValueError, match=r"zero-size array.*no identity"):
        reduce(jnp.ones((0,)))
    with pytest.raises(ValueError, match=r"zero-size array"):
        reduce(jnp.ones((2, 0)), axis=1)


def test_max_over_a_non_empty_axis_of_an_array_with_an_empty_dim():
    assert jnp.max(jnp.ones((0, 2)), axis=1).shape == (0,)


# ------------------------------------------------------------------------------------------
# random
# ------------------------------------------------------------------------------------------

WHAT_A_KEY_IS = r"PRNG key.*random\.key\(seed\).*uint32"


@pytest.mark.parametrize("not_a_key", [jnp.ones(2), 0, jnp.array([0, 1]),
                                       jnp.zeros(3, jnp.uint32)],
                         ids=["float32", "int_seed", "int32_pair", "uint32_of_3"])
@pytest.mark.parametrize("fn", [
    jr.split,
    lambda k: jr.uniform(k, (3,)),
    lambda k: jr.fold_in(k, 1),
], ids=["split", "uniform", "fold_in"])
def test_random_given_a_non_key_explains_what_a_key_is(fn, not_a_key):
    with pytest.raises(TypeError, match=WHAT_A_KEY_IS):
        fn(not_a_key)


@pytest.mark.parametrize("make", [jr.key, jr.PRNGKey], ids=["typed", "raw"])
@pytest.mark.parametrize("fn", [jr.split, lambda k: jr.uniform(k, (2,)),
                                lambda k: jr.normal(k), lambda k: jr.fold_in(k, 3)],
                         ids=["split", "uniform", "normal", "fold_in"])
def test_random_given_a_batch_of_keys_mentions_vmap(fn, make):
    keys = jr.split(make(0), 3)
    with pytest.raises(TypeError, match=r"single key.*\(3,\).*vmap"):
        fn(keys)


@pytest.mark.parametrize("fn", [
    lambda k: jr.uniform(k, (-1, 2)),
    lambda k: jr.normal(k, (2, -3)),
    lambda k: jr.bits(k, (-1,)),
    lambda k: jr.split(k, -1),
    lambda k: jr.randint(k, (-2,), 0, 5),
], ids=["uniform", "normal", "bits", "split", "randint"])
def test_random_shape_with_a_negative_dim(fn):
    with pytest.raises(TypeError, match=r"shape.*non-negative.*-\d"):
        fn(jr.key(0))


def test_random_float_sampler_rejects_an_integer_dtype():
    with pytest.raises(TypeError, match=r"uniform.*float dtype.*int32"):
        jr.uniform(jr.key(0), (2,), jnp.int32)


def test_key_from_a_float_seed():
    with pytest.raises(TypeError, match=r"seed.*integer"):
        jr.key(1.5)


# ------------------------------------------------------------------------------------------
# Tracers that escape their transformation
# ------------------------------------------------------------------------------------------


def _leak_from_grad():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    jax.grad(f)(1.0)
    return leaked[0]


def _leak_from_jvp():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    jax.jvp(f, (1.0,), (1.0,))
    return leaked[0]


@pytest.mark.parametrize("leak", [_leak_from_grad, _leak_from_jvp], ids=["grad", "jvp"])
@pytest.mark.parametrize("use", [
    lambda t: t + 1.0,
    lambda t: jnp.sin(t),
    lambda t: t * jnp.ones(3),
], ids=["add", "sin", "mul_array"])
def test_escaped_tracer_used_outside_any_transformation(leak, use):
    tracer = leak()
    with pytest.raises(UnexpectedTracerError, match=r"escaped.*Return it"):
        use(tracer)


@pytest.mark.task1_3
@pytest.mark.parametrize("leak", [_leak_from_grad, _leak_from_jvp], ids=["grad", "jvp"])
def test_escaped_tracer_used_inside_a_later_grad(leak):
    tracer = leak()
    with pytest.raises(UnexpectedTracerError, match=r"escaped"):
        jax.grad(lambda y: y * tracer)(2.0)


@pytest.mark.task1_3
def test_escaped_tracer_used_inside_a_later_jvp():
    tracer = _leak_from_grad()
    with pytest.raises(UnexpectedTracerError, match=r"escaped"):
        jax.jvp(lambda y: y * tracer, (2.0,), (1.0,))


# ------------------------------------------------------------------------------------------
# custom_vjp
# ------------------------------------------------------------------------------------------


def _custom_mul(bwd):
    @jax.custom_vjp
    def mul(x, y):
        return x * y

    mul.defvjp(lambda x, y: (x * y, (x, y)), bwd)
    return mul


@pytest.mark.parametrize("bwd", [
    lambda res, ct: (ct,),
    lambda res, ct: (ct, ct, ct),
    lambda res, ct: ((ct, ct),),
], ids=["too_few", "too_many", "nested"])
def test_custom_vjp_bwd_with_the_wrong_structure(bwd):
    mul = _custom_mul(bwd)
    with pytest.raises(TypeError, match=r"bwd rule of mul.*same container \(pytree\) structure"
                                        r".*expected PyTreeDef\(\(\*, \*\)\)"):
        jax.grad(mul)(1.0, 2.0)


@pytest.mark.parametrize("bwd", [lambda res, ct: ct * res[1], lambda res, ct: [ct, ct]],
                         ids=["array", "list"])
def test_custom_vjp_bwd_must_return_a_tuple(bwd):
    mul = _custom_mul(bwd)
    with pytest.raises(TypeError, match=r"bwd rule of mul must return a tuple"):
        jax.grad(mul)(1.0, 2.0)


def test_custom_vjp_bwd_with_the_wrong_cotangent_shape():
    @jax.custom_vjp
    def double(x):
        return x * 2.0

    double.defvjp(lambda x: (x * 2.0, None), lambda _, ct: (jnp.ones(5),))
    with pytest.raises((TypeError, ValueError), match=r"shape.*\(3,\).*\(5,\)|\(5,\).*\(3,\)"):
        jax.grad(lambda x: double(x).sum())(jnp.ones(3))


def test_custom_vjp_without_defvjp():
    @jax.custom_vjp
    def identity(x):
        return x

    with pytest.raises(AttributeError, match=r"No VJP defined.*identity.*defvjp"):
        identity(1.0)
    with pytest.raises(AttributeError, match=r"defvjp"):
        jax.grad(identity)(1.0)


def test_custom_vjp_under_jvp_says_to_use_reverse_mode():
    mul = _custom_mul(lambda res, ct: (ct * res[1], ct * res[0]))
    with pytest.raises(TypeError, match=r"jvp.*custom_vjp.*grad or vjp"):
        jax.jvp(mul, (1.0, 2.0), (1.0, 0.0))


def test_a_traced_nondiff_argument_of_custom_vjp_says_what_to_do():
    scale = jax.custom_vjp(lambda k, x: k * x, nondiff_argnums=(0,))
    scale.defvjp(lambda k, x: (k * x, None), lambda k, _, ct: (k * ct,))
    with pytest.raises(jax.errors.UnexpectedTracerError,
                       match=r"nondiff_argnums marks as not differentiated.*pass an array as "
                             r"an ordinary argument"):
        jax.grad(lambda k: scale(k, 2.0))(3.0)


# ------------------------------------------------------------------------------------------
# Not errors: NaN and inf propagate silently
# ------------------------------------------------------------------------------------------

INF, NAN = np.inf, np.nan

SILENT_CASES = {
    "log(0)": (lambda: jnp.log(0.0), -INF),
    "sqrt(-1)": (lambda: jnp.sqrt(-1.0), NAN),
    "1/0": (lambda: jnp.array(1.0) / 0, INF),
    "0/0": (lambda: jnp.array(0.0) / 0.0, NAN),
    "1/0 reflected": (lambda: 1 / jnp.array(0.0), INF),
    "log(-1)": (lambda: jnp.log(jnp.array(-1.0)), NAN),
    "log1p(-1)": (lambda: jnp.log1p(-1.0), -INF),
    "exp(1000)": (lambda: jnp.exp(1000.0), INF),
    "power(0, -1)": (lambda: jnp.power(0.0, -1.0), INF),
    "x ** -1 at 0": (lambda: jnp.array(0.0) ** -1, INF),
    "inf - inf": (lambda: jnp.array(INF) - INF, NAN),
    "inf * 0": (lambda: jnp.array(INF) * 0.0, NAN),
    "overflow in multiply": (lambda: jnp.array(3e38) * 10.0, INF),
    "overflow in add": (lambda: jnp.array(3e38) + jnp.array(3e38), INF),
    "sin(inf)": (lambda: jnp.sin(jnp.array(INF)), NAN),
    "cos(inf)": (lambda: jnp.cos(jnp.array(INF)), NAN),
    "sum([inf, -inf])": (lambda: jnp.sum(jnp.array([INF, -INF])), NAN),
    "prod overflow": (lambda: jnp.prod(jnp.array([1e30, 1e30])), INF),
    "dot([inf], [0])": (lambda: jnp.dot(jnp.array([INF]), jnp.array([0.0])), NAN),
    "fmod(1, 0)": (lambda: jnp.remainder(jnp.array(1.0), 0.0), NAN),
    "grad sqrt at 0": (lambda: jax.grad(jnp.sqrt)(0.0), INF),
    "grad log at 0": (lambda: jax.grad(jnp.log)(0.0), INF),
}


@pytest.mark.parametrize("name", list(SILENT_CASES))
def test_nan_and_inf_propagate_without_warnings(name):
    fn, expected = SILENT_CASES[name]
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        out = fn()
    assert np.geterr() == before  # NumPy's global error state is left alone
    value = np.asarray(out)
    assert value.dtype == np.float32
    if np.isnan(expected):
        assert np.isnan(value), value
    else:
        assert value == expected, value


def test_nan_propagates_through_an_array_without_warnings():
    x = jnp.array([0.0, -1.0, 1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = np.asarray(jnp.log(x) / (x - x))
    assert caught == []
    assert out[0] == -INF and np.isnan(out[1]) and np.isnan(out[2])
