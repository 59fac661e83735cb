"""Collectives over a named axis (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``) inside ``vmap(f, axis_name=...)``, against their NumPy meaning on the whole
batch: on mapped and unmapped values, pytrees, two nested names (each, and both at once),
under ``jit`` on either side of the ``vmap``, and differentiated (the gradient and the
forward-mode Jacobian of a whole-batch function against a numerical one). An axis name no
``vmap`` binds is a NameError.
"""

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_jacobians import numerical_jacobian
from test_vmap_api import assert_trees_close, insert_axis

import stage3_vmap as jax
from stage3_vmap import lax
from stage3_vmap import numpy as jnp

laws = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
seeds = st.integers(0, 2**32 - 1)
shapes = st.lists(st.integers(1, 3), max_size=2).map(tuple)


@pytest.fixture
def x64() -> Iterator[None]:
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def distinct(seed: int, shape, dtype=np.float32) -> np.ndarray:
    """Values at least 0.25 apart (no ties for pmax and pmin), in random order."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return rng.permutation((np.arange(n) - n / 2) * 0.25 + 0.1).reshape(shape).astype(dtype)


def each_example(value: np.ndarray, size: int) -> np.ndarray:
    """What vmap returns for a value that is the same for every example: ``size`` copies."""
    return np.broadcast_to(value, (size, *np.shape(value)))


# ------------------------------------------------------------------------------------------
# Each collective's meaning
# ------------------------------------------------------------------------------------------


@laws
@given(data=st.data(), shape=shapes, size=st.integers(1, 4), seed=seeds)
def test_reductions_over_the_named_axis(data, shape, size, seed):
    axis = data.draw(st.integers(-(len(shape) + 1), len(shape)), label="in_axes")
    x = distinct(seed, insert_axis(shape, axis, size))

    def f(v):
        return (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"))

    got = jax.vmap(f, in_axes=axis, axis_name="i")(jnp.asarray(x))
    want = tuple(each_example(reduce(x, axis=axis), size)
                 for reduce in (np.sum, np.mean, np.max, np.min))
    assert_trees_close(got, want, rtol=1e-6, atol=1e-6)


def test_pmean_of_integers_is_a_float_mean():
    got = jax.vmap(lambda v: lax.pmean(v, "i"), axis_name="i")(jnp.arange(3))
    assert_trees_close(got, np.ones(3, np.float32))


def test_collectives_of_pytrees():
    x = distinct(0, (3, 2))
    got = jax.vmap(lambda v: lax.psum({"a": v, "b": (2.0 * v,)}, "i"), axis_name="i")(
        jnp.asarray(x))
    total = x.sum(0)
    assert_trees_close(got, {"a": each_example(total, 3), "b": (each_example(2 * total, 3),)})
    got = jax.vmap(lambda v: lax.pmax([v, -v], "i"), axis_name="i")(jnp.asarray(x))
    assert_trees_close(got, [each_example(x.max(0), 3), each_example((-x).max(0), 3)])


@laws
@given(data=st.data(), shape=shapes, size=st.integers(1, 4), seed=seeds,
       tiled=st.booleans())
def test_all_gather(data, shape, size, seed, tiled):
    """Every example gets all of them: stacked along a new ``axis``, or concatenated along
    an existing one (``tiled``)."""
    if tiled and not shape:
        shape = (2,)
    axis = data.draw(st.integers(0, len(shape) - tiled), label="axis")
    in_axis = data.draw(st.integers(0, len(shape)), label="in_axes")
    x = distinct(seed, insert_axis(shape, in_axis, size))
    got = jax.vmap(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled),
                   in_axes=in_axis, axis_name="i")(jnp.asarray(x))
    examples = [np.take(x, k, axis=in_axis) for k in range(size)]
    gathered = np.concatenate(examples, axis) if tiled else np.stack(examples, axis)
    assert_trees_close(got, each_example(gathered, size))


@pytest.mark.task3_3
@laws
@given(data=st.data(), shape=shapes, size=st.integers(1, 4), seed=seeds,
       tiled=st.booleans(), mapped=st.booleans())
def test_psum_scatter(data, shape, size, seed, tiled, mapped):
    """Example k keeps piece k of the sum over the examples: element k along
    ``scatter_dimension``, which goes, or (``tiled``) the k-th of ``size`` equal chunks. An
    unmapped operand is the same for every example: its sum is ``size`` times it."""
    dim = data.draw(st.integers(0, len(shape)), label="scatter_dimension")
    pieces = size * data.draw(st.integers(1, 2), label="chunk") if tiled else size
    example = (*shape[:dim], pieces, *shape[dim:])

    def f(v):
        return lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled)

    if mapped:
        in_axis = data.draw(st.integers(0, len(example)), label="in_axes")
        x = distinct(seed, insert_axis(example, in_axis, size))
        total = x.sum(axis=in_axis)
        mapped_f, args = jax.vmap(f, in_axes=in_axis, axis_name="i"), (jnp.asarray(x),)
    else:
        x = distinct(seed, example)
        total = size * x
        mapped_f = jax.vmap(lambda _: f(jnp.asarray(x)), axis_name="i")
        args = (jnp.zeros(size),)
    pieces_of_total = np.split(total, size, axis=dim)
    want = np.stack([piece if tiled else np.squeeze(piece, dim) for piece in pieces_of_total])
    assert_trees_close(mapped_f(*args), want, rtol=1e-6, atol=1e-6)
    names = [eqn.primitive.name for eqn in jax.make_jaxpr(mapped_f)(*args).jaxpr.eqns]
    assert "gather" not in names  # the sum's own dim is the batch: nothing moves


@pytest.mark.task3_3
def test_psum_scatter_ppermute_and_all_to_all():
    """Against their meaning on the stacked examples: example k keeps the k-th piece of the
    sum; receives what perm sends it (zeros if nothing); gets piece k of every example."""
    x = distinct(3, (4, 8, 2))
    got = jax.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(
        jnp.asarray(x))
    assert_trees_close(got, x.sum(0).reshape(4, 2, 2), rtol=1e-6)
    got = jax.vmap(lambda v: lax.psum_scatter(v[:4], "i", scatter_dimension=0),
                   axis_name="i")(jnp.asarray(x))
    assert_trees_close(got, x[:, :4].sum(0), rtol=1e-6)
    got = jax.vmap(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 0)]), axis_name="i")(
        jnp.asarray(x))
    assert_trees_close(got, np.stack([x[3], np.zeros_like(x[0]), x[0], np.zeros_like(x[0])]))
    got = jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), axis_name="i")(
        jnp.asarray(x))
    want = np.stack([np.concatenate([x[j, 2 * k:2 * k + 2] for j in range(4)], 1)
                     for k in range(4)])
    assert_trees_close(got, want)
    got = jax.vmap(lambda v: lax.all_to_all(v[:4], "i", 0, 1), axis_name="i")(jnp.asarray(x))
    assert_trees_close(got, np.stack([np.stack([x[j, k] for j in range(4)], 1)
                                      for k in range(4)]))
    with pytest.raises(ValueError, match="must equal the size 4"):
        jax.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(jnp.asarray(x))
    with pytest.raises(ValueError, match="more than once"):
        lax.ppermute(1.0, "i", [(0, 1), (0, 2)])


def test_axis_index():
    x = jnp.ones((2, 4))
    got = jax.vmap(lambda v: lax.axis_index("i"), in_axes=1, axis_name="i")(x)
    assert_trees_close(got, np.arange(4, dtype=np.int32))
    got = jax.vmap(lambda v: v * lax.axis_index("i"), in_axes=1, out_axes=1,
                   axis_name="i")(x)
    assert_trees_close(got, np.broadcast_to(np.arange(4, dtype=np.float32), (2, 4)))
    got = jax.vmap(lambda: lax.axis_index("i"), axis_name="i", axis_size=3)()
    assert_trees_close(got, np.arange(3, dtype=np.int32))


def test_collectives_of_values_that_do_not_depend_on_the_axis():
    """``psum(1.0, "i")`` is the axis size; an unmapped ``w`` sums to ``size * w``, has
    itself as mean, max and min, and gathers to ``size`` copies."""
    x, w = jnp.ones((5, 2)), distinct(1, (3,))
    got = jax.vmap(lambda v: lax.psum(1.0, "i"), axis_name="i")(x)
    assert_trees_close(got, np.full(5, 5.0, np.float32))
    got = jax.vmap(lambda v: (lax.psum(w, "i"), lax.pmean(w, "i"), lax.pmax(w, "i"),
                              lax.pmin(w, "i"), lax.all_gather(w, "i")), axis_name="i")(x)
    want = (5 * w, w, w, w, np.broadcast_to(w, (5, 3)))
    assert_trees_close(got, tuple(each_example(v, 5) for v in want), rtol=1e-6)
    got = jax.vmap(lambda: lax.psum(2.0, "i"), axis_name="i", axis_size=4)()
    assert_trees_close(got, np.full(4, 8.0, np.float32))


def test_reduced_results_may_be_returned_unmapped():
    """A collective's result is the same for every example, so out_axes may be None."""
    x = distinct(2, (4, 3))
    got = jax.vmap(lambda v: (lax.psum(v, "i"), lax.psum(1.0, "i")), axis_name="i",
                   out_axes=None)(jnp.asarray(x))
    assert_trees_close(got, (x.sum(0), np.float32(4.0)))
    got = jax.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i", out_axes=None)(
        jnp.asarray(x))
    assert_trees_close(got, x)


# ------------------------------------------------------------------------------------------
# Two names
# ------------------------------------------------------------------------------------------


def test_two_nested_names():
    """Outer vmap "i" over axis 0, inner "j" over axis 1: a collective over "j" reduces the
    inner axis, over "i" the outer, over ("i", "j") both."""
    x = distinct(3, (3, 4, 2))

    def f(v):
        return {"j": lax.psum(v, "j"), "i": lax.psum(v, "i"), "ij": lax.psum(v, ("i", "j")),
                "max_ij": lax.pmax(v, ("j", "i")), "mean_ij": lax.pmean(v, ("i", "j")),
                "index": 10 * lax.axis_index("i") + lax.axis_index("j"),
                "gather_i": lax.all_gather(v, "i"), "gather_j": lax.all_gather(v, "j")}

    got = jax.vmap(jax.vmap(f, axis_name="j"), axis_name="i")(jnp.asarray(x))
    grid = (3, 4, 2)
    want = {"j": np.broadcast_to(x.sum(1, keepdims=True), grid),
            "i": np.broadcast_to(x.sum(0, keepdims=True), grid),
            "ij": np.broadcast_to(x.sum((0, 1), keepdims=True), grid),
            "max_ij": np.broadcast_to(x.max((0, 1), keepdims=True), grid),
            "mean_ij": np.broadcast_to(x.mean((0, 1), keepdims=True), grid),
            "index": (10 * np.arange(3)[:, None] + np.arange(4)).astype(np.int32),
            # example (i, j) gets x[:, j] from "i" and x[i, :] from "j"
            "gather_i": np.broadcast_to(x.transpose(1, 0, 2)[None], (3, 4, 3, 2)),
            "gather_j": np.broadcast_to(x[:, None], (3, 4, 4, 2))}
    assert_trees_close(got, want, rtol=1e-6, atol=1e-6)


def test_inner_name_shadows_the_outer():
    x = distinct(4, (2, 3))
    got = jax.vmap(jax.vmap(lambda v: lax.psum(v, "i"), axis_name="i"), axis_name="i")(
        jnp.asarray(x))
    assert_trees_close(got, np.broadcast_to(x.sum(1, keepdims=True), (2, 3)))


def test_collective_over_the_outer_name_with_unnamed_inner_vmap():
    x = distinct(5, (2, 3))
    got = jax.vmap(jax.vmap(lambda v: v / lax.psum(v, "i")), axis_name="i")(jnp.asarray(x))
    assert_trees_close(got, x / x.sum(0, keepdims=True), rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Under jit
# ------------------------------------------------------------------------------------------


def normalize(v):
    return v / lax.psum(v, "i") + lax.pmax(v, "i") * lax.pmin(v, "i")


def normalized(x: np.ndarray, axis: int = 0) -> np.ndarray:
    return x / x.sum(axis, keepdims=True) + (x.max(axis, keepdims=True)
                                             * x.min(axis, keepdims=True))


def test_jit_inside_vmap():
    x = distinct(6, (4, 3)) + 3.0  # positive sums
    got = jax.vmap(jax.jit(normalize), axis_name="i")(jnp.asarray(x))
    assert_trees_close(got, normalized(x), rtol=1e-5, atol=1e-6)
    got = jax.vmap(jax.jit(lambda v: lax.all_gather(v, "i", axis=1)), axis_name="i")(
        jnp.asarray(x))
    assert_trees_close(got, each_example(x.T, 4))
    got = jax.vmap(jax.jit(lambda v: v - lax.pmean(v, "i")), axis_name="i")(jnp.asarray(x))
    assert_trees_close(got, x - x.mean(0), rtol=1e-5, atol=1e-6)


def test_operandless_collectives_under_jit_inside_vmap():
    """``axis_index`` and collectives of constants have no traced operand, yet the jit
    tracing inside the vmap must stage them (not the vmap compute them around it)."""
    x, w = jnp.ones((4, 3)), distinct(16, (2,))
    got = jax.vmap(jax.jit(lambda v: v * lax.axis_index("i")), axis_name="i")(x)
    assert_trees_close(got, np.broadcast_to(np.arange(4, dtype=np.float32)[:, None], (4, 3)))
    got = jax.vmap(jax.jit(lambda v: v * lax.psum(1.0, "i") + jnp.sum(lax.pmax(w, "i"))),
                   axis_name="i")(x)
    assert_trees_close(got, np.full((4, 3), 4.0 + w.sum(), np.float32))


def test_vmap_inside_jit():
    x = distinct(7, (4, 3)) + 3.0
    got = jax.jit(jax.vmap(normalize, axis_name="i"))(jnp.asarray(x))
    assert_trees_close(got, normalized(x), rtol=1e-5, atol=1e-6)
    got = jax.jit(jax.vmap(lambda v: v * lax.axis_index("i"), in_axes=1, out_axes=1,
                           axis_name="i"))(jnp.asarray(x))
    assert_trees_close(got, x * np.arange(3, dtype=np.float32), rtol=1e-6)
    got = jax.jit(jax.vmap(lambda v: v - lax.pmean(v, "i"), in_axes=1, out_axes=1,
                           axis_name="i"))(jnp.asarray(x))
    assert_trees_close(got, x - x.mean(1, keepdims=True), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# Derivatives of whole-batch functions
# ------------------------------------------------------------------------------------------

C = distinct(8, (4, 3), np.float64)  # weights, so that no gradient is trivially zero
W = distinct(9, (4, 4, 3), np.float64)


def batch_function(per_example: Callable, **vmap_args) -> Callable:
    """The scalar ``sum(C * vmap(per_example)(x))``: a function of the whole batch."""
    def total(x):
        return jnp.sum(jnp.asarray(C) * jax.vmap(per_example, axis_name="i", **vmap_args)(x))
    return total


BATCH_FUNCTIONS = {
    "psum": lambda v: v / lax.psum(v, "i"),
    "psum of a square": lambda v: lax.psum(v * v, "i") * v,
    "pmean": lambda v: (v - lax.pmean(v, "i")) ** 2,
    "pmax": lambda v: jnp.sin(v) * lax.pmax(v, "i"),
    "pmin": lambda v: v - lax.pmin(jnp.exp(v), "i"),
    "all_gather": lambda v: jnp.sum(jnp.asarray(W) * lax.all_gather(v, "i")) * v,
    "all_gather tiled": lambda v: jnp.sum(jnp.asarray(W[0].ravel())
                                          * lax.all_gather(v, "i", tiled=True)) * v,
    "all_gather axis 1": lambda v: jnp.sum(jnp.asarray(W[0].T)
                                           * lax.all_gather(v, "i", axis=1)) * jnp.tanh(v),
    "axis_index": lambda v: v * v * lax.axis_index("i"),
    "ppermute": lambda v: lax.ppermute(v * v, "i", [(0, 1), (1, 2), (2, 0)]) * v,
    "psum_scatter": lambda v: lax.psum_scatter(jnp.concatenate([v * v, v[:1]]), "i") * v,
    "psum_scatter tiled": lambda v: lax.psum_scatter(
        jnp.concatenate([v, v * v, jnp.sin(v), v]), "i", tiled=True) * v,
    "all_to_all": lambda v: jnp.sum(lax.all_to_all(
        jnp.asarray(W[0].ravel()[:4, None]) * v, "i", 0, 0) ** 2, 0),
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.task3_3) if name.startswith("psum_scatter") else name
    for name in sorted(BATCH_FUNCTIONS)])
def test_gradients_through_collectives(x64, name):
    """``grad`` (VJP rules) and ``jacfwd`` (JVP rules) of the whole-batch function equal
    its numerical gradient."""
    f = batch_function(BATCH_FUNCTIONS[name])
    x = jnp.asarray(distinct(10, (4, 3), np.float64) + 2.0)  # positive, distinct
    want = numerical_jacobian(f, (x,))
    assert_trees_close(jax.grad(f)(x), want, rtol=1e-6, atol=1e-7)
    assert_trees_close(jax.jacfwd(f)(x), want, rtol=1e-6, atol=1e-7)


def test_gradient_of_sum_x_over_psum_x():
    """d/dx_k of sum_j c_j x_j / S, S = sum_j x_j: c_k / S - sum_j c_j x_j / S^2, written
    out in NumPy, also in float32."""
    c = distinct(11, (5,))
    x = distinct(12, (5,)) + 2.0

    def f(x):
        return jnp.sum(jnp.asarray(c) * jax.vmap(lambda v: v / lax.psum(v, "i"),
                                                 axis_name="i")(x))

    s = x.sum()
    want = c / s - (c * x).sum() / s ** 2
    assert_trees_close(jax.grad(f)(jnp.asarray(x)), want.astype(np.float32), rtol=1e-5,
                       atol=1e-6)


def test_gradient_through_two_names(x64):
    x = jnp.asarray(distinct(13, (3, 4), np.float64) + 2.0)
    c = jnp.asarray(distinct(14, (3, 4), np.float64))

    def f(x):
        inner = jax.vmap(lambda v: v * lax.psum(v, ("i", "j")) + lax.pmax(v, "j"),
                         axis_name="j")
        return jnp.sum(c * jax.vmap(inner, axis_name="i")(x))

    assert_trees_close(jax.grad(f)(x), numerical_jacobian(f, (x,)), rtol=1e-6, atol=1e-7)


def test_gradient_through_collectives_under_jit(x64):
    f = batch_function(lambda v: jax.jit(lambda u: u / lax.psum(u, "i"))(v))
    x = jnp.asarray(distinct(15, (4, 3), np.float64) + 2.0)
    want = numerical_jacobian(f, (x,))
    assert_trees_close(jax.grad(f)(x), want, rtol=1e-6, atol=1e-7)
    assert_trees_close(jax.jit(jax.grad(f))(x), want, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------------------
# Unbound names
# ------------------------------------------------------------------------------------------

COLLECTIVES = {
    "psum": lambda v, name: lax.psum(v, name),
    "pmean": lambda v, name: lax.pmean(v, name),
    "pmax": lambda v, name: lax.pmax(v, name),
    "pmin": lambda v, name: lax.pmin(v, name),
    "all_gather": lambda v, name: lax.all_gather(v, name),
    "axis_index": lambda v, name: lax.axis_index(name),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_unbound_axis_name_is_a_name_error(name):
    collective = COLLECTIVES[name]
    x = jnp.ones(3)
    with pytest.raises(NameError, match="unbound axis name: i"):
        collective(x, "i")  # outside any vmap
    with pytest.raises(NameError, match="unbound axis name: j"):
        jax.vmap(lambda v: collective(v, "j"), axis_name="i")(x)  # another name
    with pytest.raises(NameError, match="unbound axis name: i"):
        jax.vmap(lambda v: collective(v, "i"))(x)  # an unnamed vmap
    with pytest.raises(NameError, match="unbound axis name: i"):
        jax.jit(lambda v: collective(v, "i"))(x)  # jit binds no name
    if name in ("psum", "pmean", "pmax", "pmin"):  # one of several names unbound
        with pytest.raises(NameError, match="unbound axis name: j"):
            jax.vmap(lambda v: collective(v, ("i", "j")), axis_name="i")(x)
