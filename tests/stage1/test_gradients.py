"""Gradients: ``check_grads`` (VJP and JVP against finite differences, to order 2) on every
differentiable function of the API, then the laws and semantics of grad, vjp and jvp."""

import math

import numpy as np
import pytest
from conftest import (
    away_from_zero,
    broadcast_pair,
    distinct,
    interleaved,
    seeds,
    shape_and_axis,
    shapes,
    uniform,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import stage1_autodiff as jax
from stage1_autodiff import numpy as jnp

# ------------------------------------------------------------------------------------------
# check_grads on every differentiable function. Each case draws (f, args) from hypothesis.
# ------------------------------------------------------------------------------------------

CASES = {}


def case(name):
    def register(make):
        CASES[name] = make
        return make
    return register


def unary_case(name, fn, values):
    @case(name)
    def make(draw):
        return fn, (values(draw(seeds), draw(shapes())),)


def in_range(low, high):
    return lambda seed, shape: uniform(seed, shape, low, high)


def nonzero(low, high):
    return lambda seed, shape: away_from_zero(seed, shape, low, high)


unary_case("negative", jnp.negative, in_range(-2, 2))
unary_case("exp", jnp.exp, in_range(-1, 1))
unary_case("log", jnp.log, in_range(0.5, 2))
unary_case("log1p", jnp.log1p, in_range(-0.5, 1))
unary_case("expm1", jnp.expm1, in_range(-1, 1))
unary_case("sin", jnp.sin, in_range(-3, 3))
unary_case("cos", jnp.cos, in_range(-3, 3))
unary_case("tan", jnp.tan, in_range(-1.1, 1.1))
unary_case("tanh", jnp.tanh, in_range(-2, 2))
unary_case("sqrt", jnp.sqrt, in_range(0.5, 2))
unary_case("square", jnp.square, in_range(-2, 2))
unary_case("abs", jnp.abs, nonzero(0.2, 2))
unary_case("reciprocal", jnp.reciprocal, nonzero(0.5, 2))
unary_case("power_int_3", lambda x: jnp.power(x, 3), in_range(-1.5, 1.5))
unary_case("pow_operator_2", lambda x: x ** 2, in_range(-2, 2))
unary_case("power_int_negative", lambda x: jnp.power(x, -2), nonzero(0.5, 2))
unary_case("power_int_0", lambda x: jnp.power(x, 0) * x, in_range(-2, 2))
unary_case("power_int_1", lambda x: jnp.power(x, 1), in_range(-2, 2))
unary_case("power_python_float", lambda x: jnp.power(x, 1.5), in_range(0.5, 2))
unary_case("pow_operator_float", lambda x: x ** -0.5, in_range(0.5, 2))
unary_case("rpow_operator", lambda x: 2.0 ** x, in_range(-2, 2))
unary_case("relu", jax.nn.relu, nonzero(0.1, 2))
unary_case("sigmoid", jax.nn.sigmoid, in_range(-4, 4))
unary_case("softplus", jax.nn.softplus, in_range(-4, 4))
unary_case("gelu", jax.nn.gelu, in_range(-3, 3))
unary_case("erf_inv", jax.lax.erf_inv, in_range(-0.9, 0.9))
unary_case("ravel", jnp.ravel, in_range(-1, 1))
unary_case("transpose_reverse", jnp.transpose, in_range(-1, 1))
unary_case("T", lambda x: x.T, in_range(-1, 1))
unary_case("flip_all", jnp.flip, in_range(-1, 1))


def _clip_values_avoiding_bounds(seed, shape):
    x = uniform(seed, shape, -1.2, 1.2)
    near = np.abs(np.abs(x) - 0.5) < 0.1  # keep finite differences off the kinks at +-0.5
    return np.where(near, x * 1.5, x).astype(np.float32)


unary_case("clip", lambda x: jnp.clip(x, -0.5, 0.5), _clip_values_avoiding_bounds)
unary_case("method_clip", lambda x: x.clip(max=0.5), _clip_values_avoiding_bounds)


def binary_case(name, fn, values):
    """``values(seed, x_shape, y_shape) -> (x, y)``; the shapes broadcast together."""
    @case(name)
    def make(draw):
        x_shape, y_shape = draw(broadcast_pair())
        return fn, values(draw(seeds), x_shape, y_shape)


def _plain(seed, xs, ys):
    return uniform(seed, xs, -2, 2), uniform(seed + 1, ys, -2, 2)


def _positive_base(seed, xs, ys):
    return uniform(seed, xs, 0.5, 2), uniform(seed + 1, ys, -2, 2)


def _nonzero_second(seed, xs, ys):
    return uniform(seed, xs, -2, 2), away_from_zero(seed + 1, ys, 0.5, 2)


binary_case("add", jnp.add, _plain)
binary_case("subtract", jnp.subtract, _plain)
binary_case("multiply", jnp.multiply, _plain)
binary_case("divide", jnp.divide, _nonzero_second)
binary_case("true_divide_operator", lambda x, y: x / y, _nonzero_second)
binary_case("power_array", jnp.power, _positive_base)
binary_case("pow_operator_array", lambda x, y: x ** y, _positive_base)
def _off_the_branch_cut(seed, xs, ys):
    """arctan2(x, y) jumps by 2 pi where x crosses 0 with y < 0: keep y positive."""
    return uniform(seed, xs, -2, 2), uniform(seed + 1, ys, 0.5, 2)


binary_case("arctan2", jnp.arctan2, _off_the_branch_cut)
binary_case("maximum", jnp.maximum, interleaved)
binary_case("minimum", jnp.minimum, interleaved)
binary_case("operators", lambda x, y: (x - y) * (2.0 + x) - 3 * y, _plain)


@case("where")
def _where(draw):
    x_shape, y_shape = draw(broadcast_pair(max_dims=2))
    c_shape = draw(st.sampled_from([(), x_shape, y_shape]))
    seed = draw(seeds)
    cond = np.random.default_rng(seed).random(c_shape) < 0.5
    return (lambda x, y: jnp.where(cond, x, y)), _plain(seed, x_shape, y_shape)


@case("where_safe_log")
def _where_safe_log(draw):
    x = uniform(draw(seeds), draw(shapes(min_dims=1)), -2, 2)
    # The usual trick: the untaken branch sees a safe input, so no NaN leaks into the grad.
    def f(x):
        safe = jnp.where(x > 0, x, 1.0)
        return jnp.where(x > 0, jnp.log(safe), x)
    return f, (np.where(np.abs(x) < 0.1, 0.5, x).astype(np.float32),)


def reduction_case(name, fn, values, min_side=1, allow_empty_axes=True):
    @case(name)
    def make(draw):
        shape, axis = draw(shape_and_axis(min_dims=0 if allow_empty_axes else 1, max_dims=3,
                                          max_side=3))
        if min_side > 1:
            shape = tuple(max(n, min_side) for n in shape)
        if not allow_empty_axes and axis == ():
            axis = None
        keepdims = draw(st.booleans())
        x = values(draw(seeds), shape)
        return (lambda x: fn(x, axis=axis, keepdims=keepdims)), (x,)


reduction_case("sum", jnp.sum, in_range(-2, 2))
reduction_case("mean", jnp.mean, in_range(-2, 2))
reduction_case("var", jnp.var, lambda seed, shape: distinct(seed, shape, 0.3))
reduction_case("std", jnp.std, lambda seed, shape: distinct(seed, shape, 0.3), min_side=2,
               allow_empty_axes=False)
reduction_case("max", jnp.max, lambda seed, shape: distinct(seed, shape))
reduction_case("min", jnp.min, lambda seed, shape: distinct(seed, shape))
reduction_case("prod", jnp.prod, nonzero(0.5, 1.5))
reduction_case("method_sum", lambda x, axis, keepdims: x.sum(axis, keepdims=keepdims),
               in_range(-2, 2))
reduction_case("method_mean", lambda x, axis, keepdims: x.mean(axis, keepdims=keepdims),
               in_range(-2, 2))
reduction_case("logsumexp", jax.nn.logsumexp, in_range(-3, 3))


@case("prod_with_zeros")
def _prod_with_zeros(draw):
    shape, axis = draw(shape_and_axis(min_dims=1, max_dims=2, max_side=3))
    x = away_from_zero(draw(seeds), shape, 0.5, 1.5).ravel()
    zeros = draw(st.lists(st.integers(0, x.size - 1), min_size=1, max_size=2, unique=True))
    x[zeros] = 0.0
    return (lambda x: jnp.prod(x, axis=axis)), (x.reshape(shape),)


@pytest.mark.parametrize("positions", [[1], [0, 2]], ids=["one_zero", "two_zeros"])
def test_prod_with_zeros_at_fixed_positions(positions):
    x = np.array([1.5, -2.0, 0.5, 3.0], np.float32)
    x[positions] = 0.0
    jax.check_grads(jnp.prod, (x,), order=2)
    # The gradient of a product is the product of the others, exactly, even at zeros.
    expected = [np.prod(np.delete(x, i)) for i in range(4)]
    np.testing.assert_allclose(jax.grad(jnp.prod)(x), expected, rtol=1e-6)


@case("softmax")
def _softmax(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return (lambda x: jax.nn.softmax(x, axis=axis)), (uniform(draw(seeds), shape, -3, 3),)


@case("log_softmax")
def _log_softmax(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return (lambda x: jax.nn.log_softmax(x, axis=axis)), (uniform(draw(seeds), shape, -3, 3),)


# Shapes ----------------------------------------------------------------------------------


@case("reshape")
def _reshape(draw):
    shape = draw(shapes())
    size = math.prod(shape)
    target = draw(st.sampled_from([(-1,), (size, 1), (1, -1), tuple(reversed(shape))]))
    order = draw(st.sampled_from(["C", "F"]))
    x = uniform(draw(seeds), shape)
    return (lambda x: jnp.reshape(x, target, order=order)), (x,)


@case("method_reshape")
def _method_reshape(draw):
    shape = draw(shapes(min_dims=1))
    return (lambda x: x.reshape(-1, 1)), (uniform(draw(seeds), shape),)


@case("transpose")
def _transpose(draw):
    shape = draw(shapes())
    perm = draw(st.permutations(range(len(shape))))
    return (lambda x: jnp.transpose(x, perm)), (uniform(draw(seeds), shape),)


@case("swapaxes")
def _swapaxes(draw):
    shape = draw(shapes(min_dims=1))
    ndim = len(shape)
    a, b = draw(st.integers(-ndim, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
    return (lambda x: jnp.swapaxes(x, a, b)), (uniform(draw(seeds), shape),)


@case("moveaxis")
def _moveaxis(draw):
    shape = draw(shapes(min_dims=1))
    ndim = len(shape)
    src, dst = draw(st.integers(-ndim, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
    return (lambda x: jnp.moveaxis(x, src, dst)), (uniform(draw(seeds), shape),)


@case("expand_dims")
def _expand_dims(draw):
    shape = draw(shapes())
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return (lambda x: jnp.expand_dims(x, axis)), (uniform(draw(seeds), shape),)


@case("squeeze")
def _squeeze(draw):
    shape = draw(shapes(min_dims=1))
    with_ones = tuple(n if draw(st.booleans()) else 1 for n in shape)
    axis = draw(st.sampled_from([None] + [d for d, n in enumerate(with_ones) if n == 1]))
    return (lambda x: jnp.squeeze(x, axis)), (uniform(draw(seeds), with_ones),)


@case("broadcast_to")
def _broadcast_to(draw):
    x_shape, y_shape = draw(broadcast_pair())
    target = np.broadcast_shapes(x_shape, y_shape)
    return (lambda x: jnp.broadcast_to(x, target)), (uniform(draw(seeds), x_shape),)


@case("concatenate")
def _concatenate(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    seed = draw(seeds)
    parts = []
    for i, n in enumerate(sizes):
        part_shape = list(shape)
        part_shape[axis] = n
        parts.append(uniform(seed + i, part_shape))
    return (lambda *xs: jnp.concatenate(xs, axis=axis)), tuple(parts)


@case("concatenate_axis_none")
def _concatenate_none(draw):
    seed = draw(seeds)
    x, y = uniform(seed, draw(shapes(min_dims=1))), uniform(seed + 1, draw(shapes(min_dims=1)))
    return (lambda x, y: jnp.concatenate([x, y], axis=None)), (x, y)


@case("stack")
def _stack(draw):
    shape = draw(shapes())
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    seed = draw(seeds)
    return (lambda x, y: jnp.stack([x, y], axis)), (uniform(seed, shape), uniform(seed + 1, shape))


@case("split")
def _split(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    sections = draw(st.one_of(
        st.sampled_from([d for d in range(1, n + 1) if n % d == 0]),
        st.lists(st.integers(0, n), max_size=3).map(sorted)))
    return (lambda x: jnp.split(x, sections, axis)), (uniform(draw(seeds), shape),)


@case("flip")
def _flip(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return (lambda x: jnp.flip(x, axis)), (uniform(draw(seeds), shape),)


@case("tile")
def _tile(draw):
    shape = draw(shapes(max_dims=2, max_side=3))
    reps = draw(st.one_of(st.integers(1, 3), st.lists(st.integers(1, 3), max_size=3)
                          .map(tuple)))
    return (lambda x: jnp.tile(x, reps)), (uniform(draw(seeds), shape),)


# Contractions ----------------------------------------------------------------------------


@case("dot")
def _dot(draw):
    n = draw(st.integers(1, 4))
    a_shape = draw(st.sampled_from([(), (n,), (2, n), (3, 2, n)]))
    b_shape = draw(st.sampled_from([(), (n,), (n, 3), (2, n, 3)]))
    seed = draw(seeds)
    return jnp.dot, (uniform(seed, a_shape), uniform(seed + 1, b_shape))


@case("matmul")
def _matmul(draw):
    batch_a, batch_b = draw(broadcast_pair(max_dims=2, max_side=3))
    n, m, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    a_shape = draw(st.sampled_from([(k,), batch_a + (n, k)]))
    b_shape = draw(st.sampled_from([(k,), batch_b + (k, m)]))
    seed = draw(seeds)
    return jnp.matmul, (uniform(seed, a_shape), uniform(seed + 1, b_shape))


@case("matmul_operator")
def _matmul_operator(draw):
    seed = draw(seeds)
    return (lambda a, b: a @ b), (uniform(seed, (2, 3)), uniform(seed + 1, (3, 4)))


@case("tensordot")
def _tensordot(draw):
    seed = draw(seeds)
    a, b = uniform(seed, (2, 3, 4)), uniform(seed + 1, (3, 4, 2))
    axes = draw(st.sampled_from([0, 1, 2, ((1, 2), (0, 1)), ([0], [2]), ((2, 1), (1, 0))]))
    if axes == 1:
        b = uniform(seed + 1, (4, 2))
    if axes == 0:
        b = uniform(seed + 1, (2,))
    return (lambda a, b: jnp.tensordot(a, b, axes)), (a, b)


@case("outer")
def _outer(draw):
    seed = draw(seeds)
    return jnp.outer, (uniform(seed, draw(shapes(max_dims=2))),
                       uniform(seed + 1, draw(shapes(max_dims=2))))


EINSUM_SPECS = {
    "ij,jk->ik": ((2, 3), (3, 4)),
    "bij,bjk->bik": ((2, 3, 4), (2, 4, 3)),
    "ij,ij->i": ((3, 4), (3, 4)),
    "ij,kj->": ((3, 4), (2, 4)),
    "ij,k->ik": ((3, 4), (2,)),  # j is summed away before the contraction
    "bi,bj->bij": ((2, 3), (2, 4)),
    "ijk,jl->lk": ((2, 3, 4), (3, 2)),
    "ij,jk": ((2, 3), (3, 4)),  # implicit output
}


@case("einsum")
def _einsum(draw):
    spec = draw(st.sampled_from(sorted(EINSUM_SPECS)))
    a_shape, b_shape = EINSUM_SPECS[spec]
    seed = draw(seeds)
    return (lambda a, b: jnp.einsum(spec, a, b)), (uniform(seed, a_shape),
                                                    uniform(seed + 1, b_shape))


# Indexing --------------------------------------------------------------------------------


@case("take")
def _take(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = math.prod(shape) if axis is None else shape[axis]
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    idx = rng.integers(-n, n, size=draw(shapes(max_dims=2)))
    return (lambda x: jnp.take(x, idx, axis=axis)), (uniform(seed, shape),)


@case("take_along_axis")
def _take_along_axis(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    seed = draw(seeds)
    idx_shape = list(shape)
    idx_shape[axis] = draw(st.integers(1, 4))
    idx = np.random.default_rng(seed).integers(0, shape[axis], size=idx_shape)
    return (lambda x: jnp.take_along_axis(x, idx, axis)), (uniform(seed, shape),)


INDICES = [
    np.s_[1:],
    np.s_[::-1],
    np.s_[::2, 1],
    np.s_[-1],
    np.s_[1:, ::-2],
    np.s_[..., 0],
    np.s_[None, 1, ..., None],
    np.s_[np.array([0, 2, 2])],
    np.s_[:, [3, 0, -1]],
    np.s_[np.array([[0], [1]]), np.array([1, 2, 3])],
    np.s_[[0, 2], :, [1, 0]],
    np.s_[2, :, [1, 0]],
    np.s_[1:, [0, 1], ::-1],
    np.s_[np.array([True, False, True])],
]


@case("getitem")
def _getitem(draw):
    idx = draw(st.sampled_from(INDICES))
    return (lambda x: x[idx]), (uniform(draw(seeds), (3, 4, 2)),)


AT_INDICES = [np.s_[1], np.s_[1:, ::-1], np.s_[[0, 2]], np.s_[:, [3, 0]], np.s_[..., -1]]


@case("at_set")
def _at_set(draw):
    idx = draw(st.sampled_from(AT_INDICES))
    seed = draw(seeds)
    x = uniform(seed, (3, 4))
    values = uniform(seed + 1, np.zeros((3, 4))[idx].shape)
    return (lambda x, v: x.at[idx].set(v)), (x, values)


@case("at_set_scalar")
def _at_set_scalar(draw):
    idx = draw(st.sampled_from(AT_INDICES))
    return (lambda x, v: x.at[idx].set(v * 2)), (uniform(draw(seeds), (3, 4)), np.float32(0.5))


@case("at_add_repeated")
def _at_add(draw):
    seed = draw(seeds)
    idx = np.random.default_rng(seed).integers(-3, 3, size=draw(st.integers(1, 6)))
    x, values = uniform(seed, (3, 2)), uniform(seed + 1, (len(idx), 2))
    return (lambda x, v: x.at[idx].add(v)), (x, values)


@case("at_multiply")
def _at_multiply(draw):
    idx = draw(st.sampled_from(AT_INDICES))
    seed = draw(seeds)
    x = uniform(seed, (3, 4))
    values = uniform(seed + 1, np.zeros((3, 4))[idx].shape, 0.5, 2)
    return (lambda x, v: x.at[idx].multiply(v)), (x, values)


@case("at_min_max")
def _at_min_max(draw):
    idx = draw(st.sampled_from(AT_INDICES))
    method = draw(st.sampled_from(["min", "max"]))
    x, values = interleaved(draw(seeds), (3, 4), np.zeros((3, 4))[idx].shape)
    return (lambda x, v: getattr(x.at[idx], method)(v)), (x, values)


# The cases that check one task's rules alone (course/index.md, "Assignments").
CASE_TASKS = {"sin": pytest.mark.task1_2, "cos": pytest.mark.task1_2,
              "divide": pytest.mark.task1_4, "true_divide_operator": pytest.mark.task1_4}


@pytest.mark.parametrize("name", [pytest.param(name, marks=CASE_TASKS.get(name, ()))
                                  for name in sorted(CASES)])
@given(data=st.data())
def test_check_grads(name, data):
    f, args = CASES[name](data.draw)
    jax.check_grads(f, args, order=2)


@pytest.mark.task1_1
@pytest.mark.parametrize("name", sorted(set(CASES) - {"sin", "cos"}))  # theirs are Task 1.2's
@settings(max_examples=5)
@given(data=st.data())
def test_reverse_mode_to_first_order(name, data):
    """The backward pass alone (Task 1.1): one VJP per case, no derivative of a derivative."""
    f, args = CASES[name](data.draw)
    jax.check_grads(f, args, order=1, modes=("rev",))


def test_check_grads_detects_a_wrong_rule():
    """check_grads itself must be able to fail, or every test above proves nothing."""
    @jax.custom_vjp
    def wrong_sin(x):
        return jnp.sin(x)
    wrong_sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, ct: (ct * jnp.sin(x),))
    with pytest.raises(AssertionError):
        jax.check_grads(wrong_sin, (np.array([0.3, 1.0], np.float32),), order=1,
                        modes=("rev",))


# ------------------------------------------------------------------------------------------
# Laws and semantics
# ------------------------------------------------------------------------------------------

ELEMENTWISE = {
    "exp": (jnp.exp, -1, 1), "log": (jnp.log, 0.5, 2), "sin": (jnp.sin, -3, 3),
    "tanh": (jnp.tanh, -2, 2), "sqrt": (jnp.sqrt, 0.5, 2), "sigmoid": (jax.nn.sigmoid, -3, 3),
    "softplus": (jax.nn.softplus, -3, 3), "square": (jnp.square, -2, 2),
    "cube": (lambda x: x ** 3, -2, 2), "erf_inv": (jax.lax.erf_inv, -0.9, 0.9),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@given(seed=seeds, shape=shapes())
def test_grad_of_sum_equals_jvp_with_ones(name, seed, shape):
    f, low, high = ELEMENTWISE[name]
    x = jnp.array(uniform(seed, shape, low, high))
    g = jax.grad(lambda x: jnp.sum(f(x)))(x)
    _, tangent = jax.jvp(f, (x,), (jnp.ones_like(x),))
    assert g.shape == x.shape and g.dtype == np.float32
    np.testing.assert_allclose(g, tangent, rtol=1e-6, atol=1e-6)


def test_grad_argnums_int_and_tuple():
    def f(x, y, z):
        return x * y ** 2 + jnp.sin(z)

    assert float(jax.grad(f)(2.0, 3.0, 0.0)) == pytest.approx(9.0)
    assert float(jax.grad(f, argnums=1)(2.0, 3.0, 0.0)) == pytest.approx(12.0)
    assert float(jax.grad(f, argnums=-1)(2.0, 3.0, 0.0)) == pytest.approx(1.0)
    gs = jax.grad(f, argnums=(0, 2))(2.0, 3.0, 0.0)
    assert isinstance(gs, tuple) and len(gs) == 2
    np.testing.assert_allclose([gs[0], gs[1]], [9.0, 1.0], rtol=1e-6)
    (single,) = jax.grad(f, argnums=(1,))(2.0, 3.0, 0.0)
    assert float(single) == pytest.approx(12.0)


def test_grad_has_aux():
    def loss(w):
        pred = w * 3.0
        return pred ** 2, {"pred": pred, "note": "kept"}

    g, aux = jax.grad(loss, has_aux=True)(2.0)
    assert float(g) == pytest.approx(36.0)
    assert float(aux["pred"]) == pytest.approx(6.0) and aux["note"] == "kept"
    assert isinstance(aux["pred"], jax.Array)  # aux leaves leave the transformation

    (value, aux), g = jax.value_and_grad(loss, has_aux=True)(2.0)
    assert float(value) == pytest.approx(36.0) and float(g) == pytest.approx(36.0)
    assert float(aux["pred"]) == pytest.approx(6.0)


def test_grad_of_pytree_arguments():
    params = {"w": jnp.array([1.0, 2.0]), "b": (jnp.array(0.5), [jnp.array([3.0])])}

    def f(p):
        return jnp.sum(p["w"] ** 2) * p["b"][0] + jnp.sum(p["b"][1][0] * p["w"][0])

    g = jax.grad(f)(params)
    assert jax.tree_structure(g) == jax.tree_structure(params)
    np.testing.assert_allclose(g["w"], [2 * 1.0 * 0.5 + 3.0, 2 * 2.0 * 0.5])
    np.testing.assert_allclose(g["b"][0], 5.0)
    np.testing.assert_allclose(g["b"][1][0], [1.0])


def test_vjp_with_pytree_output_and_cotangent():
    def f(x, y):
        return {"sum": x + y, "prod": (x * y, jnp.sin(x))}

    x, y = jnp.array([1.0, 2.0]), jnp.array([3.0, -1.0])
    out, f_vjp = jax.vjp(f, x, y)
    np.testing.assert_allclose(out["prod"][0], [3.0, -2.0])
    ct = {"sum": jnp.array([1.0, 0.0]), "prod": (jnp.array([0.0, 2.0]), jnp.array([1.0, 1.0]))}
    ct_x, ct_y = f_vjp(ct)
    np.testing.assert_allclose(ct_x, [1.0 + np.cos(1.0), 2.0 * -1.0 + np.cos(2.0)], rtol=1e-6)
    np.testing.assert_allclose(ct_y, [1.0, 2.0 * 2.0], rtol=1e-6)


def test_vjp_with_a_cotangent():
    x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    out, f_vjp = jax.vjp(lambda x: x @ x, x)
    np.testing.assert_allclose(out, np.array(x) @ np.array(x))
    ct = jnp.array([[1.0, 0.0], [0.0, 2.0]])
    (ct_x,) = f_vjp(ct)
    a, c = np.array(x), np.array(ct)
    np.testing.assert_allclose(ct_x, c @ a.T + a.T @ c, rtol=1e-6)


def test_vjp_rejects_a_cotangent_of_the_wrong_shape():
    _, f_vjp = jax.vjp(jnp.sin, jnp.ones(3))
    with pytest.raises(ValueError, match="hape"):
        f_vjp(jnp.ones(2))


def test_value_and_grad_returns_the_value():
    value, g = jax.value_and_grad(lambda x: jnp.sum(jnp.exp(x)))(jnp.array([0.0, 1.0]))
    assert value.shape == () and value.dtype == np.float32
    assert float(value) == pytest.approx(1.0 + math.e)
    np.testing.assert_allclose(g, [1.0, math.e], rtol=1e-6)


def test_grad_of_a_constant_is_zero_and_of_the_identity_one():
    g = jax.grad(lambda x: 3.0)(jnp.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0])
    assert float(jax.grad(lambda x: x)(2.0)) == 1.0
    assert float(jax.grad(lambda x, y: y, argnums=0)(2.0, 5.0)) == 0.0


def test_vjp_can_be_pulled_back_twice():
    _, f_vjp = jax.vjp(jnp.sin, jnp.array([0.0, 1.0]))
    (a,) = f_vjp(jnp.ones(2))
    (b,) = f_vjp(2.0 * jnp.ones(2))
    np.testing.assert_allclose(b, 2.0 * np.asarray(a))
    np.testing.assert_allclose(a, np.cos([0.0, 1.0]), rtol=1e-6)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError):
        jax.grad(lambda x: x * 2.0, has_aux=True)(1.0)


def test_arrays_built_from_tracers():
    g = jax.grad(lambda x: jnp.sum(jnp.array([x, 2.0 * x, 3.0])))(1.0)
    assert float(g) == 3.0
    g = jax.grad(lambda x: jnp.sum(jnp.stack([x, x ** 2]) * jnp.asarray(x)))(2.0)
    assert float(g) == pytest.approx(2 * 2.0 + 3 * 4.0)


def test_derivatives_at_kinks_follow_jax_conventions():
    assert float(jax.grad(jnp.abs)(0.0)) == 1.0  # JAX's abs JVP: select(x >= 0, t, -t)
    assert float(jax.grad(jnp.abs)(-2.0)) == -1.0
    assert float(jax.grad(jax.nn.relu)(0.0)) == 0.0
    assert float(jax.grad(lambda x: jnp.maximum(x, 1.0))(1.0)) == 0.5  # ties are split
    assert float(jax.grad(lambda x: jnp.minimum(x, 1.0))(1.0)) == 0.5
    g = jax.grad(jnp.max)(jnp.array([1.0, 3.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5])
    assert float(jax.grad(lambda x: x ** 2.0)(0.0)) == 0.0
    assert float(jax.grad(lambda x: x ** 0.0)(0.0)) == 0.0
    assert float(jax.grad(lambda x: jnp.power(x, 0))(0.0)) == 0.0


def test_softplus_derivatives_near_zero():
    assert float(jax.grad(jax.nn.softplus)(0.0)) == 0.5
    g = jax.nn.softplus
    for _ in range(4):
        g = jax.grad(g)
    # The third derivative of sigmoid is s(1-s)(1-6s+6s^2): -1/8 at 0 (JAX's PR #1374).
    assert float(g(1e-8)) == pytest.approx(-0.125, rel=1e-4)


def test_grad_requires_scalar_output():
    with pytest.raises(TypeError, match="scalar"):
        jax.grad(lambda x: x * 2)(jnp.ones(3))


def test_grad_of_python_scalar_is_float32():
    g = jax.grad(lambda x: x * x)(3.0)
    assert g.dtype == np.float32 and float(g) == 6.0


def _user_tanh(x):
    e = jnp.exp(-2.0 * x)
    return (1.0 - e) / (1.0 + e)


def test_higher_derivatives_of_user_written_tanh():
    t = math.tanh(1.0)
    s = 1 - t * t
    expected = [t, s, -2 * t * s, -2 * s * s + 4 * t * t * s,
                16 * t * s * s - 8 * t ** 3 * s]
    f = _user_tanh
    for order, value in enumerate(expected):
        assert float(f(1.0)) == pytest.approx(value, rel=2e-4, abs=1e-5), order
        f = jax.grad(f)


@pytest.mark.task1_4
def test_jvp_of_jvp_gives_second_derivative():
    def d2(x):
        return jax.jvp(lambda x: jax.jvp(_user_tanh, (x,), (1.0,))[1], (x,), (1.0,))[1]
    t = math.tanh(1.0)
    assert float(d2(1.0)) == pytest.approx(-2 * t * (1 - t * t), rel=1e-4)


def test_python_control_flow_under_grad():
    def f(x):
        if x > 0:  # a Python branch on the traced value's sign
            y = x
            for _ in range(3):
                y = y * x
            return y  # x ** 4
        return -x

    def power(x, n):  # recursion
        return 1.0 if n == 0 else x * power(x, n - 1)

    assert float(jax.grad(f)(2.0)) == pytest.approx(32.0)
    assert float(jax.grad(f)(-2.0)) == pytest.approx(-1.0)
    assert float(jax.grad(power)(3.0, 4)) == pytest.approx(4 * 27.0)
    assert float(jax.grad(jax.grad(power))(3.0, 4)) == pytest.approx(12 * 9.0)

    def loop_until(x):
        while x < 10.0:
            x = x * 2.0
        return x
    assert float(jax.grad(loop_until)(3.0)) == pytest.approx(4.0)


def test_non_differentiable_functions_work_on_traced_values():
    def f(x):
        mask = jnp.isfinite(x) & (x > 0) & ~jnp.isnan(x)
        y = jnp.where(mask, jnp.floor(x) * x, jnp.sign(x) * x)
        i = jnp.argmax(x)  # a traced integer, used as an index
        z = x[i] * 2 + x[jnp.argmin(x)] + jnp.take(x, jnp.array([0]))[0]
        w = x.at[i].set(0.0).sum() + jnp.clip(x, 0, 1).astype(jnp.int32).sum() * x[0]
        c = jnp.sum(x == jnp.max(x)) * x[1]
        return jnp.sum(y) + z + w + c + jnp.all(x > -10) * x[2] + jnp.any(x > 10) * x[3]

    x = jnp.array([1.5, -2.0, 3.25, 0.5])
    np.testing.assert_allclose(jax.grad(f)(x), [5.0, 2.0, 6.0, 1.0])
    value, tangent = jax.jvp(f, (x,), (jnp.ones(4),))
    assert float(value) == pytest.approx(23.5) and float(tangent) == pytest.approx(14.0)


@pytest.mark.task1_3
def test_no_perturbation_confusion():
    # The inner derivative is x; the outer differentiates x * x.
    g = jax.grad(lambda x: x * jax.grad(lambda y: x * y)(2.0))(3.0)
    assert float(g) == pytest.approx(6.0)
    # Siskind and Pearlmutter's example: d/dx [x * d/dy (x + y)] = d/dx [x] = 1.
    g = jax.grad(lambda x: x * jax.grad(lambda y: x + y)(1.0))(1.0)
    assert float(g) == pytest.approx(1.0)
    # The same in forward mode, and forward over reverse.
    _, t = jax.jvp(lambda x: x * jax.jvp(lambda y: x + y, (1.0,), (1.0,))[1], (1.0,), (1.0,))
    assert float(t) == pytest.approx(1.0)
    _, t = jax.jvp(lambda x: x * jax.grad(lambda y: x * y)(2.0), (3.0,), (1.0,))
    assert float(t) == pytest.approx(6.0)


def test_stop_gradient():
    f = lambda x: x * jax.lax.stop_gradient(x) + jax.lax.stop_gradient(x ** 3)
    assert float(jax.grad(f)(3.0)) == pytest.approx(3.0)
    _, t = jax.jvp(f, (3.0,), (1.0,))
    assert float(t) == pytest.approx(3.0)
    tree = jax.lax.stop_gradient({"a": jnp.ones(2), "n": jnp.arange(2)})
    assert tree["n"].dtype == np.int32
    assert float(jax.grad(lambda x: jnp.sum(jax.lax.stop_gradient(x)))(jnp.ones(2)).sum()) == 0


@jax.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, ct: (jnp.clip(ct, -1.0, 1.0),))


@jax.custom_vjp
def my_sin(x):
    return jnp.sin(x)


my_sin.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda cos_x, ct: (ct * cos_x,))


def test_custom_vjp_clips_the_gradient():
    assert float(clip_gradient(2.0)) == 2.0
    assert float(jax.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == 1.0
    assert float(jax.grad(lambda x: -5.0 * clip_gradient(x))(2.0)) == -1.0
    assert float(jax.grad(lambda x: 0.5 * clip_gradient(x))(2.0)) == 0.5
    g = jax.grad(lambda x: jnp.sum(jnp.array([3.0, 0.2]) * clip_gradient(x)))(jnp.ones(2))
    np.testing.assert_allclose(g, [1.0, 0.2], rtol=1e-6)


@pytest.mark.task1_3
def test_custom_vjp_inside_an_outer_grad():
    # Chain rule through the custom rule.
    g = jax.grad(lambda x: my_sin(x * x) * 2.0)(0.5)
    assert float(g) == pytest.approx(2.0 * math.cos(0.25) * 2 * 0.5, rel=1e-6)
    # grad of grad differentiates the bwd rule, whose residual cos(x) depends on x.
    assert float(jax.grad(jax.grad(my_sin))(0.5)) == pytest.approx(-math.sin(0.5), rel=1e-6)
    # An outer grad over a function that takes an inner grad through the custom rule.
    g = jax.grad(lambda y: jax.grad(lambda x: y * my_sin(x))(0.0))(3.0)
    assert float(g) == pytest.approx(1.0)


def test_custom_vjp_of_pytrees():
    @jax.custom_vjp
    def f(p):
        return {"out": p["a"] * p["b"]}

    def fwd(p):
        return f(p), p

    def bwd(p, ct):
        return ({"a": ct["out"] * p["b"] * 10.0, "b": ct["out"] * p["a"]},)
    f.defvjp(fwd, bwd)
    g = jax.grad(lambda p: f(p)["out"])({"a": 2.0, "b": 3.0})
    assert float(g["a"]) == pytest.approx(30.0) and float(g["b"]) == pytest.approx(2.0)


def test_jvp_of_custom_vjp_raises_type_error():
    with pytest.raises(TypeError):
        jax.jvp(my_sin, (0.5,), (1.0,))


def test_grad_with_integer_input():
    with pytest.raises(TypeError, match="allow_int"):
        jax.grad(lambda x: x * 2.0)(jnp.array(3))
    g = jax.grad(lambda x, y: x * y, argnums=(0, 1), allow_int=True)(jnp.array(3), 2.0)
    assert g[0].dtype == jax.dtypes.float0 and g[0].shape == ()
    assert float(g[1]) == 3.0
    g = jax.grad(lambda x: jnp.sum(x * 1.5), allow_int=True)(jnp.arange(3))
    assert g.dtype == jax.dtypes.float0 and g.shape == (3,)


def test_jvp_with_integer_inputs_and_outputs_uses_float0():
    float0 = jax.dtypes.float0
    x, t = jnp.arange(3), np.zeros(3, dtype=float0)
    y, y_dot = jax.jvp(lambda x: x * 2, (x,), (t,))
    np.testing.assert_array_equal(y, [0, 2, 4])
    assert y_dot.dtype == float0 and y_dot.shape == (3,)
    y, y_dot = jax.jvp(lambda n, w: n * w, (x, jnp.ones(3)), (t, jnp.full(3, 0.5)))
    np.testing.assert_array_equal(y_dot, [0.0, 0.5, 1.0])
    _, i_dot = jax.jvp(jnp.argmax, (jnp.array([1.0, 3.0]),), (jnp.ones(2),))
    assert i_dot.dtype == float0 and i_dot.shape == ()


def test_jvp_of_pytree_function():
    def f(p):
        return {"y": p["x"] * p["w"], "z": [jnp.sum(p["x"]), jnp.exp(p["w"])]}

    primals = ({"x": jnp.array([1.0, 2.0]), "w": jnp.array([3.0, 4.0])},)
    tangents = ({"x": jnp.array([1.0, 0.0]), "w": jnp.array([0.5, 1.0])},)
    out, out_dot = jax.jvp(f, primals, tangents)
    assert jax.tree_structure(out) == jax.tree_structure(out_dot)
    np.testing.assert_allclose(out["y"], [3.0, 8.0])
    np.testing.assert_allclose(out_dot["y"], [1 * 3.0 + 1.0 * 0.5, 0 + 2.0 * 1.0])
    np.testing.assert_allclose(out_dot["z"][0], 1.0)
    np.testing.assert_allclose(out_dot["z"][1], np.exp([3.0, 4.0]) * [0.5, 1.0], rtol=1e-6)


def test_jvp_checks_its_arguments():
    with pytest.raises(TypeError):
        jax.jvp(jnp.sin, 1.0, 1.0)
    with pytest.raises(ValueError):
        jax.jvp(jnp.sin, (jnp.ones(2),), (jnp.ones(3),))


def _rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@given(seed=seeds, n=st.integers(2, 4))
def test_forward_over_reverse_is_a_hessian_vector_product(seed, n):
    x = uniform(seed, (n,), -1.5, 1.5)
    v = uniform(seed + 1, (n,), -1, 1)
    _, hvp = jax.jvp(jax.grad(_rosenbrock), (x,), (v,))
    # The same product by central differences of the gradient, in float64 with NumPy.
    eps = 1e-4

    def np_grad(x):
        g = np.zeros_like(x)
        d = x[1:] - x[:-1] ** 2
        g[1:] += 200 * d
        g[:-1] += -400 * d * x[:-1] - 2 * (1 - x[:-1])
        return g
    x64, v64 = x.astype(np.float64), v.astype(np.float64)
    numerical = (np_grad(x64 + eps * v64) - np_grad(x64 - eps * v64)) / (2 * eps)
    # float32 rounding: the entries of the Hessian are in the thousands
    np.testing.assert_allclose(hvp, numerical, rtol=1e-4, atol=1e-5 * np.abs(numerical).max())
    # and reverse over reverse agrees with forward over reverse
    rr = jax.grad(lambda x: jnp.vdot(jax.grad(_rosenbrock)(x), v))(x)
    np.testing.assert_allclose(rr, hvp, rtol=1e-5, atol=1e-4)


def test_hessian_vector_product_in_float64(x64):
    x = jnp.array([0.3, -0.7, 1.1])
    v = jnp.array([1.0, 0.5, -2.0])
    assert x.dtype == np.float64
    _, hvp = jax.jvp(jax.grad(_rosenbrock), (x,), (v,))
    assert hvp.dtype == np.float64
    eps = 1e-6
    g = jax.grad(_rosenbrock)
    numerical = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp, numerical, rtol=1e-7, atol=1e-6)
    jax.check_grads(_rosenbrock, (x,), order=2)


def test_check_grads_in_float64_is_tighter(x64):
    x = jnp.array([0.5, 1.5, 2.5])
    assert x.dtype == np.float64
    jax.check_grads(lambda x: jnp.prod(jnp.tan(x / 3)) * jnp.exp(x), (x,), order=2)


# NaN and inf, empty and 0-d arrays ---------------------------------------------------------


@pytest.mark.filterwarnings("error")  # as in JAX, NaN and inf come without a warning
def test_nan_and_inf_propagate_as_in_numpy():
    assert float(jax.grad(jnp.log)(0.0)) == math.inf
    assert math.isnan(float(jnp.sqrt(-1.0)))
    assert math.isnan(float(jax.grad(jnp.sqrt)(-1.0)))
    assert float(jax.grad(jnp.sqrt)(0.0)) == math.inf
    assert float(jnp.log(0.0)) == -math.inf
    assert float(jax.grad(lambda x: 1.0 / x)(0.0)) == -math.inf
    g = jax.grad(lambda x: jnp.sum(jnp.log(x)))(jnp.array([1.0, 0.0, -1.0]))
    assert g[0] == 1.0 and g[1] == np.inf and g[2] == -1.0
    x = jnp.array([1.0, np.nan])
    g = jax.grad(lambda x: jnp.sum(x * 2.0))(x)
    np.testing.assert_array_equal(g, [2.0, 2.0])
    assert np.isnan(np.asarray(jax.grad(lambda x: jnp.sum(x * x))(x))[1])


def test_empty_arrays():
    empty = jnp.zeros((0, 3))
    assert float(jnp.sum(empty)) == 0.0
    assert jnp.sum(empty, axis=0).shape == (3,)
    g = jax.grad(lambda x: jnp.sum(x * x))(empty)
    assert g.shape == (0, 3) and g.dtype == np.float32
    g = jax.grad(lambda x: jnp.sum(jnp.exp(x)) + jnp.prod(x))(jnp.zeros((0,)))
    assert g.shape == (0,)
    out, out_dot = jax.jvp(jnp.sin, (jnp.zeros((2, 0)),), (jnp.zeros((2, 0)),))
    assert out.shape == out_dot.shape == (2, 0)


def test_zero_dimensional_arrays():
    x = jnp.array(0.5)
    assert x.shape == () and x.ndim == 0
    g = jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(x)
    assert g.shape == () and g.dtype == np.float32
    assert float(g) == pytest.approx(math.cos(0.5) * 0.5 + math.sin(0.5), rel=1e-6)
    g = jax.grad(lambda x: x.reshape(1)[0] ** 2)(x)
    assert float(g) == pytest.approx(1.0)
    jax.check_grads(lambda x: jnp.exp(x) * jnp.mean(x), (x,), order=2)
