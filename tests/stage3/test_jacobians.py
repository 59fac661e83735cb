"""``jacfwd``, ``jacrev`` and ``hessian`` against numerical Jacobians (central differences in
float64), on random smooth programs from the stage-2 generator and on hand-made pytree
functions: ``argnums`` (an int, negative, a tuple), ``has_aux``, pytrees in and out (a block
of shape ``out + in`` per pair of leaves, the outputs' structure of the inputs' structure),
``jacfwd == jacrev``, and the errors.
"""

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stage2_programs import draw_program, f32
from stage3_vmap.jacobians import jacfwd_chunked
from test_vmap_api import assert_trees_close, loop

import stage3_vmap as jax
from stage3_vmap import numpy as jnp

# The x64 fixture is the same for every example, so a function-scoped fixture is fine.
laws = settings(max_examples=10, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def x64() -> Iterator[None]:
    """float64 on for one test (create its inputs inside it), restored after."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


# ------------------------------------------------------------------------------------------
# The reference: central differences, one input element at a time
# ------------------------------------------------------------------------------------------


def numerical_jacobian(fun: Callable, args: tuple, argnums: Any = 0,
                       eps: float = 1e-6) -> Any:
    """The Jacobian of ``fun`` in ``args[argnums]`` by central differences in float64,
    arranged as JAX's: the result's pytree of the differentiated arguments' pytree (a tuple of
    them for a tuple ``argnums``), each block of shape ``out.shape + in.shape``."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    dyn = args[nums[0]] if single else tuple(args[n] for n in nums)
    in_leaves, in_tree = jax.tree_flatten(dyn)
    in_leaves = [np.asarray(x, np.float64) for x in in_leaves]

    def call(leaves: list) -> tuple[list, Any]:
        values = jax.tree_unflatten(in_tree, [jnp.asarray(x) for x in leaves])
        full = list(args)
        for n, value in zip(nums, (values,) if single else values):
            full[n] = value
        out = fun(*full)
        return [np.asarray(o, np.float64) for o in jax.tree_leaves(out)], jax.tree_structure(out)

    outs, out_tree = call(in_leaves)
    blocks = [[np.zeros(np.shape(o) + x.shape) for x in in_leaves] for o in outs]
    for i, x in enumerate(in_leaves):
        for index in np.ndindex(x.shape):
            plus = [leaf.copy() for leaf in in_leaves]
            minus = [leaf.copy() for leaf in in_leaves]
            plus[i][index] += eps
            minus[i][index] -= eps
            f_plus, f_minus = call(plus)[0], call(minus)[0]
            for o in range(len(outs)):
                blocks[o][i][(Ellipsis, *index)] = (f_plus[o] - f_minus[o]) / (2 * eps)
    return jax.tree_unflatten(out_tree, [jax.tree_unflatten(in_tree, row) for row in blocks])


def float64_program(data) -> tuple[Any, list]:
    """A smooth program from the stage-2 generator, its inputs as float64 Arrays."""
    program, inputs = draw_program(data, f32, smooth=True)
    return program, [jnp.asarray(x, jnp.float64) for x in inputs]


def some_argnums(data, n: int) -> Any:
    """An int (maybe negative) or a tuple of distinct argument numbers, in any order."""
    single = st.integers(-n, n - 1)
    several = st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True).map(tuple)
    return data.draw(single | several, label="argnums")


# ------------------------------------------------------------------------------------------
# Random smooth programs
# ------------------------------------------------------------------------------------------


@laws
@given(data=st.data())
def test_jacfwd_and_jacrev_equal_numerical_jacobians(x64, data):
    program, inputs = float64_program(data)
    argnums = some_argnums(data, len(inputs))
    want = numerical_jacobian(program, tuple(inputs), argnums)
    assert_trees_close(jax.jacfwd(program, argnums)(*inputs), want, rtol=1e-5, atol=1e-6)
    assert_trees_close(jax.jacrev(program, argnums)(*inputs), want, rtol=1e-5, atol=1e-6)


@laws
@given(data=st.data())
def test_jacfwd_equals_jacrev_in_float32(data):
    program, inputs = draw_program(data, f32, smooth=True)
    inputs = [jnp.asarray(x, jnp.float32) for x in inputs]
    argnums = some_argnums(data, len(inputs))
    assert_trees_close(jax.jacfwd(program, argnums)(*inputs),
                       jax.jacrev(program, argnums)(*inputs), rtol=1e-4, atol=1e-4)


@settings(laws, max_examples=6)
@given(data=st.data())
def test_hessian_equals_numerical_jacobian_of_the_gradient(x64, data):
    program, inputs = float64_program(data)
    argnums = some_argnums(data, len(inputs))
    want = numerical_jacobian(jax.grad(program.loss, argnums), tuple(inputs), argnums)
    assert_trees_close(jax.hessian(program.loss, argnums)(*inputs), want,
                       rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# argnums, has_aux, pytrees, shapes
# ------------------------------------------------------------------------------------------


def three_args(x, y, z):
    """(3,) x (2, 3) x () -> {"a": (2,), "b": ()}"""
    return {"a": jnp.sin(y @ x) * z, "b": jnp.sum(jnp.exp(x)) * z ** 2}


def three_inputs():
    rng = np.random.default_rng(0)
    return (jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=(2, 3))),
            jnp.asarray(0.7))


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
@pytest.mark.parametrize("argnums", [0, 1, 2, -1, (0,), (0, 2), (2, 0), (0, 1, 2)])
def test_argnums(x64, jacobian, argnums):
    args = three_inputs()
    got = jacobian(three_args, argnums)(*args)
    assert_trees_close(got, numerical_jacobian(three_args, args, argnums), rtol=1e-6,
                       atol=1e-7)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    blocks = (got["a"],) if isinstance(argnums, int) else got["a"]
    assert [b.shape for b in blocks] == [(2, *args[n].shape) for n in nums]


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
def test_pytree_inputs_and_outputs(x64, jacobian):
    """One block per (output leaf, input leaf), of shape out + in, the outputs' structure
    holding the inputs' structure."""
    def f(p):
        a, (b, s) = p["a"], p["b"]
        return {"u": a * s, "v": [jnp.sum(b * b), jnp.tanh(b.T) * a[0]]}

    rng = np.random.default_rng(1)
    p = {"a": jnp.asarray(rng.normal(size=2)),
         "b": (jnp.asarray(rng.normal(size=(3, 2))), jnp.asarray(1.5))}
    got = jacobian(f)(p)
    assert jax.tree_structure(got["u"]) == jax.tree_structure(p)
    assert got["u"]["a"].shape == (2, 2) and got["u"]["b"][0].shape == (2, 3, 2)
    assert got["v"][0]["b"][0].shape == (3, 2) and got["v"][0]["b"][1].shape == ()
    assert got["v"][1]["b"][0].shape == (2, 3, 3, 2)
    assert_trees_close(got, numerical_jacobian(f, (p,)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev, jax.hessian],
                         ids=["jacfwd", "jacrev", "hessian"])
def test_has_aux_returns_the_aux_unbatched(x64, jacobian):
    def f(x):
        return jnp.sum(x ** 3), {"double": 2.0 * x, "n": jnp.asarray(3)}

    x = jnp.asarray([0.5, -1.0, 2.0])
    jac, aux = jacobian(f, has_aux=True)(x)
    assert_trees_close(aux, f(x)[1])
    want = np.diag(6.0 * np.asarray(x)) if jacobian is jax.hessian else 3.0 * np.asarray(x) ** 2
    np.testing.assert_allclose(np.asarray(jac), want, rtol=1e-12)


def test_has_aux_with_argnums_and_a_vector_output(x64):
    def f(x, y):
        return jnp.sin(x) * y, x + y

    x, y = jnp.asarray([0.1, 0.2]), jnp.asarray(3.0)
    for jacobian in (jax.jacfwd, jax.jacrev):
        (jx, jy), aux = jacobian(f, argnums=(0, 1), has_aux=True)(x, y)
        np.testing.assert_allclose(np.asarray(jx), np.diag(np.cos([0.1, 0.2]) * 3.0))
        np.testing.assert_allclose(np.asarray(jy), np.sin([0.1, 0.2]))
        np.testing.assert_allclose(np.asarray(aux), [3.1, 3.2])


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
def test_scalar_and_vector_shapes(jacobian):
    v = jnp.asarray([1.0, 2.0, 3.0])
    assert jacobian(jnp.sin)(1.0).shape == ()
    assert jacobian(jnp.sum)(v).shape == (3,)
    np.testing.assert_allclose(np.asarray(jacobian(lambda s: s * v)(2.0)), [1.0, 2.0, 3.0])
    assert jacobian(lambda m: m @ v)(jnp.ones((2, 3))).shape == (2, 2, 3)


# ------------------------------------------------------------------------------------------
# jacfwd_chunked: the basis pushed through a chunk at a time (Task 3.4)
# ------------------------------------------------------------------------------------------


@pytest.mark.task3_4
@laws
@given(data=st.data(), chunk_size=st.integers(1, 5))
def test_jacfwd_chunked_equals_jacfwd(data, chunk_size):
    program, inputs = draw_program(data, f32, smooth=True)
    inputs = [jnp.asarray(x, jnp.float32) for x in inputs]
    argnums = some_argnums(data, len(inputs))
    assert_trees_close(jacfwd_chunked(program, chunk_size, argnums)(*inputs),
                       jax.jacfwd(program, argnums)(*inputs), rtol=1e-5, atol=1e-5)


def two_sums(v):
    return jnp.stack([jnp.sum(jnp.sin(v)), jnp.sum(v ** 2)])


def largest(closed) -> int:
    """The size of the largest value a program computes."""
    return max(var.aval.size for eqn in closed.jaxpr.eqns for var in eqn.outvars)


@pytest.mark.task3_4
@pytest.mark.parametrize("chunk_size, calls", [(1, 40), (7, 6), (40, 1), (100, 1)])
def test_jacfwd_chunked_calls_fun_once_per_chunk_and_stays_chunk_wide(chunk_size, calls):
    seen = []

    def counted(v):
        seen.append(1)
        return two_sums(v)

    v = jnp.linspace(0.0, 1.0, 40)
    got = jacfwd_chunked(counted, chunk_size)(v)
    assert len(seen) == calls
    assert_trees_close(got, jax.jacfwd(two_sums)(v), rtol=1e-6, atol=1e-6)
    # Nothing larger than the tangents pushed through at once (chunk_size of them, each as
    # wide as v), except the Jacobian itself, (2, 40).
    widest = largest(jax.make_jaxpr(jacfwd_chunked(two_sums, chunk_size))(v))
    assert widest <= max(min(chunk_size, 40) * 40, 2 * 40)


@pytest.mark.task3_4
def test_jacfwd_chunked_of_pytrees_and_several_arguments(x64):
    args = three_inputs()
    for argnums in (1, (0, 2)):
        assert_trees_close(jacfwd_chunked(three_args, 2, argnums)(*args),
                           jax.jacfwd(three_args, argnums)(*args), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="chunk_size"):
        jacfwd_chunked(three_args, 0)


def test_hessian_of_a_quadratic_form_is_exact():
    a = np.random.default_rng(2).normal(size=(3, 3)).astype(np.float32)
    x = jnp.asarray([0.3, -0.2, 1.0])
    got = jax.hessian(lambda x: x @ jnp.asarray(a) @ x)(x)
    np.testing.assert_allclose(np.asarray(got), a + a.T, rtol=1e-6, atol=1e-6)


def test_hessian_with_two_arguments_is_blocks(x64):
    def f(x, y):
        return jnp.sum(jnp.sin(x) * y ** 2)

    x, y = jnp.asarray([0.3, 0.9]), jnp.asarray([1.5, -0.5])
    (hxx, hxy), (hyx, hyy) = jax.hessian(f, argnums=(0, 1))(x, y)
    xs, ys = np.asarray(x), np.asarray(y)
    np.testing.assert_allclose(np.asarray(hxx), np.diag(-np.sin(xs) * ys ** 2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hxy), np.diag(2 * np.cos(xs) * ys), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hyx), np.asarray(hxy).T, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hyy), np.diag(2 * np.sin(xs)), rtol=1e-12)


def test_jacobians_compose_with_jit_and_vmap():
    """``jit(jacfwd(f))`` equals ``jacfwd(f)``; ``vmap(jacrev(f))`` is a Jacobian per example."""
    def f(x):
        return jnp.tanh(x) * jnp.sum(x ** 2)

    xs = jnp.asarray(np.random.default_rng(3).normal(size=(4, 3)).astype(np.float32))
    assert_trees_close(jax.jit(jax.jacfwd(f))(xs[0]), jax.jacfwd(f)(xs[0]), rtol=1e-5,
                       atol=1e-6)
    assert_trees_close(jax.vmap(jax.jacrev(f))(xs), loop(jax.jacrev(f))(xs), rtol=1e-5,
                       atol=1e-6)


def test_jacobian_of_jacobian_equals_hessian():
    def f(x):
        return jnp.sum(jnp.sin(x) * x[0])

    x = jnp.asarray([0.4, 1.1, -0.3])
    want = jax.hessian(f)(x)
    for outer in (jax.jacfwd, jax.jacrev):
        for inner in (jax.jacfwd, jax.jacrev):
            assert_trees_close(outer(inner(f))(x), want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev, jax.hessian],
                         ids=["jacfwd", "jacrev", "hessian"])
def test_integer_inputs_are_refused(jacobian):
    """As JAX's: jacfwd wants real inputs, jacrev real or complex ones (as grad)."""
    with pytest.raises(TypeError, match="real.*-valued inputs.*int32"):
        jacobian(lambda x: x * 2)(jnp.arange(3))


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
def test_argnums_out_of_range(jacobian):
    with pytest.raises(ValueError, match="argnums contains 2, which is out of range"):
        jacobian(lambda x, y: x * y, argnums=2)(1.0, 2.0)


def test_jacrev_refuses_integer_outputs():
    """JAX's jacrev needs real-valued outputs (a cotangent of an int is float0): use vjp."""
    with pytest.raises(TypeError, match="real-valued outputs.*int32"):
        jax.jacrev(lambda x: (x > 0).astype(jnp.int32))(jnp.ones(3))


def test_jacfwd_of_an_integer_output_is_integer_zeros():
    """As JAX's: an integer result has no tangent (float0), so its Jacobian block is zeros of
    its own dtype, beside the float result's."""
    out_float, out_int = jax.jacfwd(lambda x: (jnp.sin(x), (x > 0).astype(jnp.int32)))(
        jnp.asarray(np.array([0.5, -1.0], np.float32)))
    np.testing.assert_allclose(np.asarray(out_float), np.diag(np.cos([0.5, -1.0])), rtol=1e-6)
    assert out_int.dtype == np.int32 and out_int.shape == (2, 2)
    np.testing.assert_array_equal(np.asarray(out_int), np.zeros((2, 2), np.int32))
