"""jit's laws, checked on every jnp function and on random programs.

1. ``jit(f) == f``: same values, dtypes and weak types, for every stage-1 jnp function at every
   dtype that applies (float32, int32, bool), Python scalars (weak) included.
2. The same on randomly generated programs, and ``jit(grad(f)) == grad(f) == grad(jit(f))``.
3. jit composes with grad, jvp, vjp, value_and_grad, itself, and pytrees.
4. One trace per distinct signature: (structure, shape, dtype, weak type, static values),
   and none reused across a change of ``jax_enable_x64``.
5. ``make_jaxpr`` gives well-typed jaxprs with one input binder per array leaf; the
   ahead-of-time ``lower(...).compile()`` executable agrees with ``jit``.
6. Errors under jit are the eager errors; unsupported dtypes are named.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from backend_under_test import BACKEND, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from stage2_jit.tracing import eval_jaxpr, typecheck_jaxpr

import stage2_jit as jax
from stage2_jit import numpy as jnp

f32, i32, u32, b1 = (np.dtype(d) for d in (np.float32, np.int32, np.uint32, np.bool_))
FLOAT, NUMBERS, ALL = (f32,), (f32, i32), (f32, i32, b1)

# Every property test in this file: few examples (each new rank, axis or dtype compiles a
# kernel: most of CI's time in this file), no deadline (the first example of a test pays for
# imports and caches). tests/differential runs the same laws on random programs.
laws = settings(max_examples=examples(10), deadline=None)

# ------------------------------------------------------------------------------------------
# Helpers: operands and the comparison
# ------------------------------------------------------------------------------------------

seeds = st.integers(0, 2**32 - 1)

# Value ranges by domain: "any" for most ops, "positive" for log, sqrt and divisors, "unit"
# for tan (floats) and for shift amounts and exponents (small non-negative ints).
FLOAT_RANGES = {"any": (-2.0, 2.0), "positive": (0.1, 2.0), "unit": (-0.9, 0.9)}
INT_RANGES = {"any": (-4, 5), "positive": (1, 5), "unit": (0, 4)}


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1,
                            max_side=max_side)


def broadcastable(num_shapes: int, min_dims: int = 0, max_dims: int = 3):
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=min_dims,
                                             max_dims=max_dims, max_side=4).map(
        lambda b: b.input_shapes)


def array(data, shape, dtype: np.dtype, domain: str = "any") -> jax.Array:
    """A strongly typed array of ``shape`` and ``dtype``, with values in ``domain``."""
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    if dtype == b1:
        return jnp.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "f":
        low, high = FLOAT_RANGES[domain]
        return jnp.asarray(rng.uniform(low, high, shape).astype(dtype))
    low, high = INT_RANGES[domain]
    return jnp.asarray(rng.integers(low, high, shape).astype(dtype))


def operand(data, shape, dtype: np.dtype, domain: str = "any") -> Any:
    """An array, or for shape () sometimes a Python scalar: weakly typed (bools are not)."""
    x = array(data, shape, dtype, domain)
    if shape == () and data.draw(st.booleans(), label="python scalar"):
        return x.item()
    return x


def indices(data, n: int, shape, negative: bool = True) -> jax.Array:
    """int32 indices into a dim of size ``n`` (negative ones count from the end)."""
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    low = -n if negative else 0
    return jnp.asarray(rng.integers(low, n, shape).astype(np.int32))


def as_array(x: Any) -> Any:
    """Ops on Python or NumPy scalars alone give Python or NumPy values eagerly, where jit
    gives Arrays: convert them as jit does (a Python scalar becomes a weak array)."""
    return jnp.asarray(x) if isinstance(x, (int, float, bool, np.ndarray, np.generic)) else x


def assert_same(got: Any, want: Any, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Same pytree structure; every leaf an Array of the same shape, dtype and weak type;
    values equal (floats to ``rtol``/``atol``, NaNs where the other has NaNs). On the cuda
    backend reductions add in a tree, not NumPy's order: the absolute error follows the
    terms' size, so ``atol`` is at least 1e-5."""
    if BACKEND == "cuda":
        atol = max(atol, 1e-5)
    got_leaves, got_tree = jax.tree_flatten(got)
    want_leaves, want_tree = jax.tree_flatten(want)
    assert got_tree == want_tree, f"structure {got_tree} != {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        if isinstance(w, np.ndarray) and w.dtype == jax.float0:  # a tangent of an int
            assert isinstance(g, np.ndarray) and (g.dtype, g.shape) == (w.dtype, w.shape)
            continue
        assert isinstance(g, jax.Array), f"leaf {i}: {type(g).__name__}, not an Array"
        if type(w) in (int, float, bool):  # eager Python code; jit returns an Array
            w = jnp.asarray(w)
        assert isinstance(w, jax.Array), f"leaf {i} of the expected value: {type(w).__name__}"
        assert g.aval == w.aval, f"leaf {i}: {g.aval} != {w.aval}"
        g_np, w_np = np.asarray(g), np.asarray(w)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g_np, w_np, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"leaf {i}")
        else:
            np.testing.assert_array_equal(g_np, w_np, err_msg=f"leaf {i}")


def count_array_leaves(args: Any) -> int:
    return len(jax.tree_leaves(args))


# ------------------------------------------------------------------------------------------
# 1. jit(f) == f for every jnp function
# ------------------------------------------------------------------------------------------

# A case builds a call: (data, dtype) -> (fn, args). Non-array parameters (axes, shapes,
# keepdims) are closed over, so they are constants of the traced program.
Case = Callable[..., tuple[Callable, list[Any]]]


def unary(fn, domain: str = "any") -> Case:
    def build(data, dtype):
        return fn, [operand(data, data.draw(shapes()), dtype, domain)]
    return build


def binary(fn, rhs_domain: str = "any", lhs_domain: str = "any") -> Case:
    """Two operands of mutually broadcastable shapes, either maybe a Python scalar."""
    def build(data, dtype):
        x_shape, y_shape = data.draw(broadcastable(2))
        return fn, [operand(data, x_shape, dtype, lhs_domain),
                    operand(data, y_shape, dtype, rhs_domain)]
    return build


def with_python_scalar(fn, scalar: Any) -> Case:
    """An array operand and a Python scalar closed over: a weakly typed constant."""
    def build(data, dtype):
        return (lambda x: fn(x, scalar)), [array(data, data.draw(shapes()), dtype)]
    return build


def where_case(data, dtype):
    c_shape, x_shape, y_shape = data.draw(broadcastable(3))
    return jnp.where, [array(data, c_shape, b1), operand(data, x_shape, dtype),
                       operand(data, y_shape, dtype)]


def clip_case(data, dtype):
    x_shape, lo_shape, hi_shape = data.draw(broadcastable(3))
    x = array(data, x_shape, dtype)
    lo = operand(data, lo_shape, dtype) if data.draw(st.booleans()) else None
    hi = operand(data, hi_shape, dtype) if data.draw(st.booleans()) or lo is None else None
    args = [a for a in (lo, hi) if a is not None]

    def fn(x, *bounds):
        bounds = iter(bounds)
        return jnp.clip(x, next(bounds) if lo is not None else None,
                        next(bounds) if hi is not None else None)

    return fn, [x, *args]


@st.composite
def shape_and_axis(draw, min_dims: int = 0):
    """A shape and an ``axis``: None, an int (maybe negative) or a tuple of distinct dims."""
    shape = draw(shapes(min_dims=min_dims))
    ndim = len(shape)
    if ndim == 0:
        return shape, draw(st.sampled_from([None, ()]))
    single = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).flatmap(
        lambda axes: st.tuples(*[st.sampled_from([a, a - ndim]) for a in axes]))
    return shape, draw(st.one_of(st.none(), single, several))


def reduction(fn, domain: str = "any") -> Case:
    def build(data, dtype):
        shape, axis = data.draw(shape_and_axis())
        keepdims = data.draw(st.booleans())
        return (lambda x: fn(x, axis=axis, keepdims=keepdims)), [array(data, shape, dtype,
                                                                       domain)]
    return build


def arg_reduction(fn) -> Case:
    def build(data, dtype):
        shape = data.draw(shapes(min_dims=1))
        axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
        keepdims = data.draw(st.booleans())
        return (lambda x: fn(x, axis=axis, keepdims=keepdims)), [array(data, shape, dtype)]
    return build


def nn_axis(fn) -> Case:
    """softmax-like: an ``axis`` that is an int or a tuple (no None for the arg forms)."""
    def build(data, dtype):
        shape, axis = data.draw(shape_and_axis(min_dims=1))
        axis = -1 if axis is None or axis == () else axis
        return (lambda x: fn(x, axis=axis)), [array(data, shape, dtype)]
    return build


def logsumexp_case(data, dtype):
    shape, axis = data.draw(shape_and_axis())
    keepdims = data.draw(st.booleans())
    return (lambda x: jax.nn.logsumexp(x, axis, keepdims)), [array(data, shape, dtype)]


def reshape_case(data, dtype):
    shape = data.draw(shapes())
    size = int(np.prod(shape))
    new_shape = data.draw(st.sampled_from([(size,), (-1,), shape[::-1], (1, *shape),
                                           (*shape, 1), (size, 1), (-1, 1)]))
    return (lambda x: jnp.reshape(x, new_shape)), [array(data, shape, dtype)]


def method_reshape_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    return (lambda x: x.reshape(-1, shape[-1]).T), [array(data, shape, dtype)]


def transpose_case(data, dtype):
    shape = data.draw(shapes())
    axes = data.draw(st.none() | st.permutations(range(len(shape))).map(tuple))
    return (lambda x: jnp.transpose(x, axes)), [array(data, shape, dtype)]


def swap_and_move_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    n = len(shape)
    a, b, c, d = (data.draw(st.integers(-n, n - 1)) for _ in range(4))
    return (lambda x: jnp.moveaxis(jnp.swapaxes(x, a, b), c, d)), [array(data, shape, dtype)]


def expand_squeeze_case(data, dtype):
    shape = data.draw(shapes())
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))

    def fn(x):
        y = jnp.expand_dims(x, axis)
        return y, jnp.squeeze(y), jnp.squeeze(y, axis), jnp.ravel(y), jnp.atleast_2d(x)

    return fn, [array(data, shape, dtype)]


def broadcast_to_case(data, dtype):
    shape = data.draw(shapes())
    target = data.draw(hnp.broadcastable_shapes(shape, max_side=4).map(
        lambda s: np.broadcast_shapes(s, shape)))
    return (lambda x: jnp.broadcast_to(x, target)), [operand(data, shape, dtype)]


def concatenate_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    d = axis % len(shape)
    xs = [array(data, shape[:d] + (n,) + shape[d + 1:], dtype) for n in sizes]
    return (lambda *xs: jnp.concatenate(xs, axis)), xs


def stack_case(data, dtype):
    shape = data.draw(shapes())
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    count = data.draw(st.integers(1, 3))
    xs = [array(data, shape, dtype) for _ in range(count)]
    return (lambda *xs: jnp.stack(xs, axis)), xs


def split_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    sections = data.draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0])
                         | st.lists(st.integers(0, n), max_size=3).map(sorted))
    return (lambda x: jnp.split(x, sections, axis)), [array(data, shape, dtype)]


def flip_case(data, dtype):
    shape, axis = data.draw(shape_and_axis())
    return (lambda x: jnp.flip(x, axis)), [array(data, shape, dtype)]


def tile_case(data, dtype):
    shape = data.draw(shapes(max_dims=2))
    reps = data.draw(st.integers(1, 3) | st.lists(st.integers(1, 3), min_size=1,
                                                   max_size=3).map(tuple))
    return (lambda x: jnp.tile(x, reps)), [array(data, shape, dtype)]


def dot_case(data, dtype):
    n = data.draw(st.integers(1, 4))
    m, k = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    x_shape, y_shape = data.draw(st.sampled_from([((n,), (n,)), ((m, n), (n,)),
                                                  ((n,), (n, k)), ((m, n), (n, k)),
                                                  ((), (m, n)), ((m, n), ())]))
    return jnp.dot, [operand(data, x_shape, dtype), operand(data, y_shape, dtype)]


def matmul_case(data, dtype):
    """Batch dims that broadcast, and the 1-D forms."""
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    x_batch, y_batch = data.draw(broadcastable(2, max_dims=2))
    x_shape = data.draw(st.sampled_from([(k,), (*x_batch, m, k)]))
    y_shape = data.draw(st.sampled_from([(k,), (*y_batch, k, n)]))
    return (lambda x, y: x @ y), [array(data, x_shape, dtype), array(data, y_shape, dtype)]


EINSUM_SPECS = {  # spec -> the shapes of its operands, from sizes i, j, k, b
    "ij,jk->ik": lambda i, j, k, b: [(i, j), (j, k)],
    "bij,bjk->bik": lambda i, j, k, b: [(b, i, j), (b, j, k)],
    "ij->ji": lambda i, j, k, b: [(i, j)],
    "ij->": lambda i, j, k, b: [(i, j)],
    "i,i->": lambda i, j, k, b: [(i,), (i,)],
    "i,j->ij": lambda i, j, k, b: [(i,), (j,)],
    "ij,ij->i": lambda i, j, k, b: [(i, j), (i, j)],
    "ij,jk,kb->ib": lambda i, j, k, b: [(i, j), (j, k), (k, b)],
    "bij,kj": lambda i, j, k, b: [(b, i, j), (k, j)],
}


def einsum_case(data, dtype):
    spec = data.draw(st.sampled_from(sorted(EINSUM_SPECS)))
    sizes = [data.draw(st.integers(1, 3)) for _ in range(4)]
    xs = [array(data, s, dtype) for s in EINSUM_SPECS[spec](*sizes)]
    return (lambda *xs: jnp.einsum(spec, *xs)), xs


def tensordot_case(data, dtype):
    i, j, k = (data.draw(st.integers(1, 3)) for _ in range(3))
    axes, x_shape, y_shape = data.draw(st.sampled_from([
        (1, (i, j), (j, k)), (2, (k, i, j), (i, j)), (0, (i,), (j,)),
        (((0,), (1,)), (i, j), (k, i)), (((1, 0), (0, 1)), (i, j), (j, i))]))
    return (lambda x, y: jnp.tensordot(x, y, axes)), [array(data, x_shape, dtype),
                                                      array(data, y_shape, dtype)]


def vector_products_case(data, dtype):
    n, m = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))

    def fn(x, y, z):
        return jnp.inner(x, y), jnp.outer(x, z), jnp.vdot(x, y)

    return fn, [array(data, (n,), dtype), array(data, (n,), dtype), array(data, (m,), dtype)]


def basic_index_case(data, dtype):
    """Python ints (negative too), slices with steps, None and Ellipsis."""
    shape = data.draw(shapes(min_dims=1))
    entries = []
    for n in shape:
        entries.append(data.draw(st.one_of(
            st.integers(-n, n - 1),
            st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n),
                      st.none() | st.sampled_from([1, 2, -1, -2])))))
    position = data.draw(st.integers(0, len(entries)))
    entries.insert(position, data.draw(st.sampled_from([None, Ellipsis])))
    idx = tuple(entries)
    return (lambda x: x[idx]), [array(data, shape, dtype)]


def int_array_index_case(data, dtype):
    """Integer-array indices, passed as arguments: one array, two that broadcast, one
    between slices (the batch dims stay in place) or apart (they go first)."""
    shape = data.draw(shapes(min_dims=2))
    kind = data.draw(st.sampled_from(["first", "middle", "pair", "apart"]))
    i_shape, j_shape = data.draw(broadcastable(2, max_dims=2))
    x = array(data, shape, dtype)
    i = indices(data, shape[0 if kind != "middle" else 1], i_shape)
    j = indices(data, shape[1 if kind == "pair" else -1], j_shape)
    fns = {
        "first": lambda x, i, j: x[i],
        "middle": lambda x, i, j: x[:, i],
        "pair": lambda x, i, j: x[i, j],
        "apart": lambda x, i, j: x[i, ..., j] if x.ndim > 2 else x[i, j],
    }
    return fns[kind], [x, i, j]


UPDATE_METHODS = ["set", "add", "multiply", "min", "max", "get"]


def at_case(data, dtype):
    """``x.at[idx].op(values)`` with int-array indices (repeated ones too, passed as an
    argument), a slice or an int; values of the indexed shape or a scalar (maybe weak)."""
    shape = data.draw(shapes(min_dims=1))
    method = data.draw(st.sampled_from(UPDATE_METHODS))
    kind = data.draw(st.sampled_from(["array", "array2d", "slice", "int"]))
    start = data.draw(st.integers(-shape[0], shape[0] - 1))
    i = indices(data, shape[0], (2, 2) if kind == "array2d" else (data.draw(st.integers(1, 5)),))
    static_index = {"slice": slice(start, None, 2), "int": start}

    def index(i):
        return static_index.get(kind, i)

    indexed_shape = np.zeros(shape)[index(np.asarray(i))].shape
    values = operand(data, data.draw(st.sampled_from([(), indexed_shape])), dtype)

    def fn(x, i, v):
        ref = x.at[index(i)]
        return ref.get() if method == "get" else getattr(ref, method)(v)

    return fn, [array(data, shape, dtype), i, values]


def take_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    idx = indices(data, n, data.draw(shapes(max_dims=2)))
    return (lambda x, i: jnp.take(x, i, axis)), [array(data, shape, dtype), idx]


def take_along_axis_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    idx_shape = list(shape)
    idx_shape[axis] = data.draw(st.integers(1, 4))
    idx_shape = [n if d == axis % len(shape) or data.draw(st.booleans()) else 1
                 for d, n in enumerate(idx_shape)]  # other dims broadcast
    idx = indices(data, shape[axis], tuple(idx_shape))
    return (lambda x, i: jnp.take_along_axis(x, i, axis)), [array(data, shape, dtype), idx]


def one_hot_case(data, dtype):
    shape = data.draw(shapes(max_dims=2))
    classes = data.draw(st.integers(1, 4))
    out_dtype = data.draw(st.sampled_from([f32, i32, b1]))
    labels = indices(data, classes + 1, shape, negative=False)  # one class out of range
    return (lambda x: jax.nn.one_hot(x, classes, dtype=out_dtype)), [labels]


def like_case(data, dtype):
    shape = data.draw(shapes())
    fill = data.draw(st.sampled_from([2, 2.5, True]))

    def fn(x):
        return (jnp.zeros_like(x), jnp.ones_like(x), jnp.full_like(x, fill),
                jnp.zeros_like(x, dtype=jnp.float32), x + jnp.arange(x.size).reshape(x.shape),
                jnp.astype(x, jnp.int32), x.astype(jnp.float32), jnp.astype(x, jnp.bool_))

    return fn, [array(data, shape, dtype)]


def array_from_list_case(data, dtype):
    """``jnp.array([x, y, ...])`` of arrays or Python scalars: a list is strongly typed
    (JAX's jnp.array is weak only for a weak scalar or array, never for a list)."""
    shape = data.draw(st.just(()) | shapes(max_dims=2))  # () often: Python scalars
    xs = [operand(data, shape, dtype) for _ in range(data.draw(st.integers(1, 3)))]
    return (lambda *xs: (jnp.array(list(xs)), jnp.asarray(xs))), xs


def divmod_case(data, dtype):
    x_shape, y_shape = data.draw(broadcastable(2))
    return jnp.divmod, [operand(data, x_shape, dtype), operand(data, y_shape, dtype,
                                                               "positive")]


def shift_case(fn) -> Case:
    def build(data, dtype):
        x_shape, y_shape = data.draw(broadcastable(2))
        return fn, [operand(data, x_shape, dtype), operand(data, y_shape, dtype, "unit")]
    return build


# Keys: a typed key (random.key, a pytree over uint32 data) or a raw uint32 key (PRNGKey).
def key(data) -> Any:
    seed = data.draw(st.integers(0, 2**31 - 1), label="key seed")
    return jax.random.key(seed) if data.draw(st.booleans()) else jax.random.PRNGKey(seed)


def random_case(sampler) -> Case:
    def build(data, dtype):
        return sampler(data), [key(data)]
    return build


def uniform_sampler(data):
    shape = data.draw(shapes())
    low = data.draw(st.sampled_from([0.0, -1.0, 2]))
    return lambda k: jax.random.uniform(k, shape, minval=low, maxval=low + 3.0)


def normal_sampler(data):
    shape = data.draw(shapes())
    return lambda k: jax.random.normal(k, shape)


def split_sampler(data):
    num = data.draw(st.integers(1, 4) | shapes(min_dims=1, max_dims=2))
    return lambda k: jax.random.split(k, num)


def other_samplers(data):
    shape = data.draw(shapes())

    def fn(k):
        k1, k2, k3 = jax.random.split(k, 3)
        return (jax.random.bits(k1, shape), jax.random.randint(k2, shape, -3, 5),
                jax.random.bernoulli(k3, 0.3, shape), jax.random.fold_in(k, 7),
                jax.random.gumbel(k1, shape))

    return fn


def random_with_traced_bounds_case(data, dtype):
    """Bounds and fold-in data passed as arguments (traced), not closed over."""
    shape = data.draw(shapes())

    def fn(k, low, high, n):
        return (jax.random.uniform(jax.random.fold_in(k, n), shape, minval=low, maxval=high),
                jax.random.permutation(k, 5), jax.random.categorical(k, high * jnp.ones(3)))

    return fn, [key(data), operand(data, (), f32), operand(data, (), f32, "positive") + 2,
                data.draw(st.integers(0, 100))]


# name -> (the dtypes to run it at, the case). The dtypes are those the function accepts.
UNARY_FLOAT = {
    "exp": "any", "log": "positive", "log1p": "positive", "expm1": "any", "sin": "any",
    "cos": "any", "tan": "unit", "tanh": "any", "sqrt": "positive", "floor": "any",
    "ceil": "any", "reciprocal": "positive",
}
UNARY_NUMBERS = ["abs", "absolute", "negative", "sign", "square", "isfinite", "isinf", "isnan"]
BINARY = {  # name -> (dtypes, domain of the second operand)
    "add": (ALL, "any"), "subtract": (NUMBERS, "any"), "multiply": (ALL, "any"),
    "divide": (NUMBERS, "positive"), "true_divide": (NUMBERS, "positive"),
    "floor_divide": (NUMBERS, "positive"), "remainder": (NUMBERS, "positive"),
    "mod": (NUMBERS, "positive"), "maximum": (ALL, "any"), "minimum": (ALL, "any"),
    "arctan2": (FLOAT, "any"), "equal": (ALL, "any"), "not_equal": (ALL, "any"),
    "less": (NUMBERS, "any"), "less_equal": (NUMBERS, "any"), "greater": (NUMBERS, "any"),
    "greater_equal": (NUMBERS, "any"), "logical_and": (ALL, "any"),
    "logical_or": (ALL, "any"), "logical_xor": (ALL, "any"),
    "bitwise_and": ((i32, b1), "any"), "bitwise_or": ((i32, b1), "any"),
    "bitwise_xor": ((i32, b1), "any"),
}

CASES: dict[str, tuple[tuple[np.dtype, ...], Case]] = {
    **{name: (FLOAT, unary(getattr(jnp, name), domain)) for name, domain in UNARY_FLOAT.items()},
    **{name: (NUMBERS, unary(getattr(jnp, name))) for name in UNARY_NUMBERS},
    "logical_not": (ALL, unary(jnp.logical_not)),
    "invert": ((i32, b1), unary(jnp.invert)),
    "bitwise_not": ((i32, b1), unary(jnp.bitwise_not)),
    **{name: (dtypes, binary(getattr(jnp, name), domain))
       for name, (dtypes, domain) in BINARY.items()},
    "power": (FLOAT, binary(jnp.power, lhs_domain="positive")),
    "power_int": ((i32,), binary(jnp.power, rhs_domain="unit")),
    "integer_power": (NUMBERS, with_python_scalar(lambda x, n: x ** n, 3)),
    "scalar_times_array": (NUMBERS, with_python_scalar(lambda x, c: c * x - x / c, 2.5)),
    "array_plus_int": (ALL, with_python_scalar(lambda x, c: x + c, 3)),
    "left_shift": ((i32,), shift_case(jnp.left_shift)),
    "right_shift": ((i32,), shift_case(jnp.right_shift)),
    "divmod": (NUMBERS, divmod_case),
    "where": (ALL, where_case),
    "clip": (NUMBERS, clip_case),
    "sum": (ALL, reduction(jnp.sum)),
    "prod": (NUMBERS, reduction(jnp.prod)),
    "max": (ALL, reduction(jnp.max)),
    "min": (ALL, reduction(jnp.min)),
    "amax": (NUMBERS, reduction(jnp.amax)),
    "amin": (NUMBERS, reduction(jnp.amin)),
    "mean": (ALL, reduction(jnp.mean)),
    "var": (NUMBERS, reduction(jnp.var)),
    "std": (NUMBERS, reduction(jnp.std)),
    "all": (ALL, reduction(jnp.all)),
    "any": (ALL, reduction(jnp.any)),
    "argmax": (NUMBERS, arg_reduction(jnp.argmax)),
    "argmin": (NUMBERS, arg_reduction(jnp.argmin)),
    "reshape": (ALL, reshape_case),
    "method_reshape_T": (NUMBERS, method_reshape_case),
    "transpose": (ALL, transpose_case),
    "swapaxes_moveaxis": (NUMBERS, swap_and_move_case),
    "expand_dims_squeeze": (ALL, expand_squeeze_case),
    "broadcast_to": (ALL, broadcast_to_case),
    "concatenate": (ALL, concatenate_case),
    "stack": (ALL, stack_case),
    "split": (NUMBERS, split_case),
    "flip": (ALL, flip_case),
    "tile": (ALL, tile_case),
    "dot": (NUMBERS, dot_case),
    "matmul": (NUMBERS, matmul_case),
    "einsum": (NUMBERS, einsum_case),
    "tensordot": (NUMBERS, tensordot_case),
    "inner_outer_vdot": (NUMBERS, vector_products_case),
    "basic_indexing": (ALL, basic_index_case),
    "int_array_indexing": (ALL, int_array_index_case),
    "at": (NUMBERS, at_case),
    "take": (ALL, take_case),
    "take_along_axis": (ALL, take_along_axis_case),
    "like_and_astype": (ALL, like_case),
    "array_from_list": (ALL, array_from_list_case),
    "relu": (FLOAT, unary(jax.nn.relu)),
    "sigmoid": (FLOAT, unary(jax.nn.sigmoid)),
    "softplus": (FLOAT, unary(jax.nn.softplus)),
    "gelu": (FLOAT, unary(jax.nn.gelu)),
    "logsumexp": (FLOAT, logsumexp_case),
    "softmax": (FLOAT, nn_axis(jax.nn.softmax)),
    "log_softmax": (FLOAT, nn_axis(jax.nn.log_softmax)),
    "one_hot": ((i32,), one_hot_case),
    # The random cases take a key; their dtype slot names the key's data (uint32).
    "random.uniform": ((u32,), random_case(uniform_sampler)),
    "random.normal": ((u32,), random_case(normal_sampler)),
    "random.split": ((u32,), random_case(split_sampler)),
    "random.others": ((u32,), random_case(other_samplers)),
    "random.traced_bounds": ((u32,), random_with_traced_bounds_case),
}

CASE_IDS = [(name, dtype) for name, (dtypes, _) in CASES.items() for dtype in dtypes]


# 212 cases: at 10 examples each, this one test was a fifth of the whole suite's time
# (measured: 944 s of 5,082 s of worker time); 6 examples a case keep every case and dtype.
@pytest.mark.parametrize("name, dtype", CASE_IDS, ids=[f"{n}-{d}" for n, d in CASE_IDS])
@settings(laws, max_examples=examples(6))
@given(data=st.data())
def test_jit_equals_eager(name, dtype, data):
    _, build = CASES[name]
    fn, args = build(data, dtype)
    assert_same(jax.jit(fn)(*args), fn(*args), atol=_summing_tolerance(name, args))


def _summing_tolerance(name: str, args: list) -> float:
    """A sum's kernel adds in another order than NumPy's pairwise sum, so the two may differ
    by the rounding bound of a float sum, (n - 1) * eps * sum(|x|) (for the mean, over n).
    Seen: a float32 sum of 36 values near -0.012 differed by 1.9e-6."""
    x = np.asarray(args[0])
    if name not in ("sum", "mean") or x.dtype.kind != "f" or x.size < 2:
        return 1e-6
    bound = (x.size - 1) * np.finfo(x.dtype).eps * float(np.abs(x).sum())
    return max(1e-6, bound / x.size if name == "mean" else bound)


@laws
@given(data=st.data(), case=st.sampled_from(CASE_IDS))
def test_compiled_executable_equals_jit(data, case):
    """The ahead-of-time path, ``jit(f).lower(*args).compile()(*args)``, runs the same
    program on the same (canonicalized) arguments."""
    name, dtype = case
    fn, args = CASES[name][1](data, dtype)
    compiled = jax.jit(fn).lower(*args).compile()
    assert_same(compiled(*args), jax.jit(fn)(*args))


@pytest.mark.parametrize("args", [(1.5, 2), (np.ones(3), 2.5), (np.float64(1.5), True),
                                  (jnp.ones(3), jnp.int32(2)), (np.arange(3), 2)],
                         ids=["python scalars", "float64 array", "numpy scalar", "arrays",
                              "int64 array"])
def test_compiled_executable_canonicalizes_its_arguments_as_jit_does(args):
    def f(x, y):
        return jnp.sin(x * y) + x

    assert_same(jax.jit(f).lower(*args).compile()(*args), jax.jit(f)(*args))


# ------------------------------------------------------------------------------------------
# 5. make_jaxpr: the jaxpr of every case type-checks and takes one binder per array leaf
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, dtype", CASE_IDS, ids=[f"{n}-{d}" for n, d in CASE_IDS])
@settings(laws, max_examples=5)
@given(data=st.data())
def test_make_jaxpr_typechecks(name, dtype, data):
    _, build = CASES[name]
    fn, args = build(data, dtype)
    closed = jax.make_jaxpr(fn)(*args)
    typecheck_jaxpr(closed.jaxpr)
    assert len(closed.jaxpr.invars) == count_array_leaves(args)
    assert len(closed.jaxpr.constvars) == len(closed.consts)
    eager = jax.tree_leaves(fn(*args))
    assert closed.out_avals == [x.aval for x in eager]  # shapes, dtypes and weak types


# ------------------------------------------------------------------------------------------
# 2. Random programs
# ------------------------------------------------------------------------------------------

# Ops of the generated programs. "smooth" ones have derivatives everywhere on any input, so
# the gradient laws hold without caring about the domain; the others join the value laws.
SMOOTH_UNARY = {
    "sin": jnp.sin, "cos": jnp.cos, "tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid,
    "softplus": jax.nn.softplus, "neg": jnp.negative, "square": jnp.square,
    "log1p_sq": lambda x: jnp.log1p(x * x), "sqrt_1p_sq": lambda x: jnp.sqrt(1.0 + x * x),
    "exp_neg_sq": lambda x: jnp.exp(-x * x),
}
ROUGH_UNARY = {"abs": jnp.abs, "relu": jax.nn.relu, "floor": jnp.floor, "sign": jnp.sign}
INT_UNARY = {"neg": jnp.negative, "abs": jnp.abs, "square": jnp.square, "sign": jnp.sign}
SMOOTH_BINARY = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply,
    "safe_div": lambda x, y: x / (1.0 + y * y),
}
ROUGH_BINARY = {
    "maximum": jnp.maximum, "minimum": jnp.minimum,
    "where_gt": lambda x, y: jnp.where(x > y, x, y),
}
INT_BINARY = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, **ROUGH_BINARY,
              "floor_div": lambda x, y: x // (1 + y * y)}


@dataclass
class Step:
    """``vals.append(fn(*[vals[i] for i in operands]))``, for printing as well as running."""

    name: str
    fn: Callable
    operands: tuple[int, ...]

    def __repr__(self) -> str:
        return f"{self.name}{self.operands}"


@dataclass
class Program:
    """A straight-line program over its inputs; returns some of its values as a pytree."""

    num_inputs: int
    steps: list[Step] = field(default_factory=list)
    outputs: tuple[int, ...] = ()
    as_dict: bool = False

    def __call__(self, *inputs: Any) -> Any:
        vals = list(inputs)
        for step in self.steps:
            vals.append(as_array(step.fn(*[vals[i] for i in step.operands])))
        outs = [vals[i] for i in self.outputs]
        return {f"v{i}": v for i, v in zip(self.outputs, outs)} if self.as_dict else outs

    def loss(self, *inputs: Any) -> Any:
        """A scalar to differentiate: the sum of every output's sum."""
        total = 0.0
        for leaf in jax.tree_leaves(self(*inputs)):
            total = total + jnp.sum(leaf)
        return total


def _shape_of(x: Any) -> tuple[int, ...]:
    return np.shape(x) if not isinstance(x, jax.Array) else x.shape


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _draw_step(data, vals: list[Any], dtype: np.dtype, smooth: bool) -> Step:
    """One op on existing values: drawn from the ops whose shape conditions hold."""
    is_float = dtype == f32
    unary_ops = (SMOOTH_UNARY | ({} if smooth else ROUGH_UNARY)) if is_float else INT_UNARY
    binary_ops = (SMOOTH_BINARY | ({} if smooth else ROUGH_BINARY)) if is_float else INT_BINARY
    kinds = ["unary", "binary", "binary", "scalar", "reduce", "reshape", "transpose",
             "matmul", "take"]
    kind = data.draw(st.sampled_from(kinds), label="kind")
    i = data.draw(st.integers(0, len(vals) - 1), label="operand")
    shape = _shape_of(vals[i])
    ndim = len(shape)

    if kind == "binary":
        partners = [j for j, v in enumerate(vals) if _broadcasts(shape, _shape_of(v))]
        j = data.draw(st.sampled_from(partners), label="partner")
        name = data.draw(st.sampled_from(sorted(binary_ops)))
        return Step(name, binary_ops[name], (i, j))
    if kind == "scalar":
        return _scalar_step(data, shape, dtype, i)
    if kind == "reduce" and ndim:
        axes = tuple(data.draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1)))
        keepdims = data.draw(st.booleans())
        names = ["sum", "mean"] + ([] if smooth else ["max", "min"])
        name = data.draw(st.sampled_from(names))
        fn = getattr(jnp, name)
        return Step(f"{name}{axes}{'k' if keepdims else ''}",
                    lambda x: fn(x, axis=axes, keepdims=keepdims), (i,))
    if kind == "reshape":
        size = int(np.prod(shape))
        new_shape = data.draw(st.sampled_from([(size,), shape[::-1], (1, *shape), (-1, 1)]))
        return Step(f"reshape{new_shape}", lambda x: jnp.reshape(x, new_shape), (i,))
    if kind == "transpose" and ndim >= 2:
        perm = tuple(data.draw(st.permutations(range(ndim))))
        return Step(f"transpose{perm}", lambda x: jnp.transpose(x, perm), (i,))
    if kind == "matmul" and 1 <= ndim <= 2:
        partners = [j for j, v in enumerate(vals)
                    if 1 <= len(_shape_of(v)) <= 2 and _shape_of(v)[-1] == shape[-1]]
        j = data.draw(st.sampled_from(partners), label="partner")
        return Step("matmul_T", lambda x, y: x @ y.T, (i, j))
    if kind == "take" and ndim:
        axis = data.draw(st.integers(-ndim, ndim - 1))
        idx = np.asarray(data.draw(st.lists(st.integers(-shape[axis], shape[axis] - 1),
                                            min_size=1, max_size=4)), np.int32)
        return Step(f"take{idx.tolist()}@{axis}", lambda x: jnp.take(x, idx, axis), (i,))
    name = data.draw(st.sampled_from(sorted(unary_ops)))
    return Step(name, unary_ops[name], (i,))


def _scalar_step(data, shape, dtype: np.dtype, i: int) -> Step:
    """An op with a constant: a Python scalar (weak), a NumPy scalar (strong) or a NumPy
    array closed over (a constant input of the jaxpr)."""
    kind = data.draw(st.sampled_from(["python", "numpy scalar", "numpy array"]))
    c = data.draw(st.sampled_from([-1.5, -0.5, 0.25, 2.0, 3.0]))
    if dtype == i32:
        c = int(c)
    if kind == "numpy scalar":
        c = np.asarray(c, dtype)[()]
    elif kind == "numpy array":
        c = np.full(shape, c, dtype)
    op = data.draw(st.sampled_from(["add", "mul", "rsub"]))
    fns = {"add": lambda x: x + c, "mul": lambda x: x * c, "rsub": lambda x: c - x}
    return Step(f"{op}({kind} {np.asarray(c).ravel()[:1]})", fns[op], (i,))


def draw_program(data, dtype: np.dtype, smooth: bool) -> tuple[Program, list[Any]]:
    """A program of 5-30 ops over 1-3 inputs whose shapes broadcast together."""
    base = data.draw(shapes(max_dims=3), label="base shape")
    num_inputs = data.draw(st.integers(1, 3), label="inputs")
    inputs = []
    for _ in range(num_inputs):
        shape = data.draw(hnp.broadcastable_shapes(base, max_dims=len(base), max_side=4))
        inputs.append(operand(data, shape, dtype))
    program = Program(num_inputs)
    vals = list(inputs)
    for _ in range(data.draw(st.integers(5, 30), label="length")):
        step = _draw_step(data, vals, dtype, smooth)
        vals.append(as_array(step.fn(*[vals[i] for i in step.operands])))
        program.steps.append(step)
    extra = data.draw(st.lists(st.integers(0, len(vals) - 2), max_size=2), label="outputs")
    program.outputs = (len(vals) - 1, *extra)
    program.as_dict = data.draw(st.booleans())
    return program, inputs


@laws
@given(data=st.data(), dtype=st.sampled_from([f32, i32]), smooth=st.booleans())
def test_jit_equals_eager_on_random_programs(data, dtype, smooth):
    program, inputs = draw_program(data, dtype, smooth)
    assert_same(jax.jit(program)(*inputs), program(*inputs), rtol=1e-5, atol=1e-5)
    closed = jax.make_jaxpr(program)(*inputs)
    typecheck_jaxpr(closed.jaxpr)
    assert len(closed.jaxpr.invars) == len(inputs)


@pytest.mark.task2_2
@laws
@given(data=st.data(), dtype=st.sampled_from([f32, i32]))
def test_eval_jaxpr_equals_eager_on_random_programs(data, dtype):
    """A program's jaxpr, run one equation at a time, computes what the program does."""
    program, inputs = draw_program(data, dtype, smooth=False)
    closed = jax.make_jaxpr(program)(*inputs)
    want = program(*inputs)
    got = eval_jaxpr(closed.jaxpr, closed.consts, [jnp.asarray(x) for x in inputs])
    assert_same(jax.tree_unflatten(jax.tree_structure(want), got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.task2_2
def test_eval_jaxpr_returns_several_results_inputs_and_literals():
    x = jnp.array([1.0, 2.0, 3.0])
    closed = jax.make_jaxpr(lambda x: jax.lax.sort([x, -x]))(x)  # one equation, two results
    assert [np.asarray(v).tolist() for v in eval_jaxpr(closed.jaxpr, [], [x])] == [
        [1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]]
    closed = jax.make_jaxpr(lambda x, y: (y, x * 2.0, 1.0))(x, 3.0)  # an input, a literal
    assert closed.jaxpr.outvars[0] is closed.jaxpr.invars[1]
    y, doubled, one = eval_jaxpr(closed.jaxpr, closed.consts, [x, jnp.asarray(3.0)])
    assert float(y) == 3.0 and np.asarray(doubled).tolist() == [2.0, 4.0, 6.0]
    assert float(one) == 1.0


@laws
@given(data=st.data())
def test_jit_of_grad_and_grad_of_jit_on_random_programs(data):
    program, inputs = draw_program(data, f32, smooth=True)
    inputs = [jnp.asarray(x, jnp.float32) for x in inputs]  # grad needs float inputs
    argnums = tuple(range(len(inputs)))
    want = jax.grad(program.loss, argnums)(*inputs)
    assert_same(jax.jit(jax.grad(program.loss, argnums))(*inputs), want, rtol=1e-5, atol=1e-5)
    assert_same(jax.grad(jax.jit(program.loss), argnums)(*inputs), want, rtol=1e-5, atol=1e-5)
    typecheck_jaxpr(jax.make_jaxpr(jax.grad(program.loss, argnums))(*inputs).jaxpr)


# ------------------------------------------------------------------------------------------
# 3. Composition with the autodiff transformations, with itself, and pytrees
# ------------------------------------------------------------------------------------------


def smooth(x):
    """A scalar function of an array, smooth everywhere."""
    return jnp.sum(jnp.sin(x) * jnp.tanh(x) + 0.5 * x * x)


def elementwise(x):
    return jnp.tanh(x) * jnp.cos(2.0 * x) + x


def like(data, x: Any) -> Any:
    """A float32 value of ``x``'s shape and weak type: a tangent or cotangent for ``x``.
    NB: a strong tangent for a weak primal is left out: jvp(jit(f)) then gives a weak
    tangent (the derived program is traced at the primal's types) where eager jvp gives a
    strong one, a corner whose right answer JAX itself does not pin down."""
    value = array(data, np.shape(x), f32)
    return value.item() if isinstance(x, float) else value


def float_operand(data, min_dims: int = 0):
    """A float32 array, or a Python float (weak) when the shape is ()."""
    return operand(data, data.draw(shapes(min_dims=min_dims)), f32)


@laws
@given(data=st.data())
def test_jit_of_grad_and_grad_of_jit(data):
    x = float_operand(data)
    want = jax.grad(smooth)(x)
    assert_same(jax.jit(jax.grad(smooth))(x), want)
    assert_same(jax.grad(jax.jit(smooth))(x), want)
    assert_same(jax.jit(jax.grad(jax.jit(smooth)))(x), want)


def test_grad_of_jit_with_integer_outputs_sends_them_no_cotangent():
    """A jitted function's integer outputs (here from ``//`` and ``%``, whose VJP rules need
    floats) carry no derivative: its VJP program gets no cotangent for them, as JAX's float0.
    Found by the differential run (program 300085): this raised a TypeError in floor."""
    def program(x):
        n = (x * 3e9).astype(jnp.int32) // 1000000000
        return n % 3, jnp.flip(x, 0)

    loss = lambda f: lambda x: jnp.sum(jnp.sin(f(x)[1]))
    x = np.array([[-0.17], [0.4]], np.float32)
    assert_same(jax.grad(loss(jax.jit(program)))(x), jax.grad(loss(program))(x))
    assert_same(jax.jit(jax.grad(loss(jax.jit(program))))(x), jax.grad(loss(program))(x))


@laws
@given(x=st.floats(-3, 3, width=32))
def test_second_derivatives_under_jit(x):
    """Every placement of jit around and inside grad(grad(f)), on a Python float (weak)."""
    f = lambda x: jnp.sin(x) * x + jnp.tanh(x) ** 2
    want = jax.grad(jax.grad(f))(x)
    for got in (jax.jit(jax.grad(jax.grad(f)))(x),
                jax.grad(jax.jit(jax.grad(f)))(x),
                jax.grad(jax.grad(jax.jit(f)))(x),
                jax.jit(jax.grad(jax.jit(jax.grad(jax.jit(f)))))(x)):
        assert_same(got, want, rtol=1e-5, atol=1e-6)


@laws
@given(data=st.data())
def test_jvp_of_jit_and_jit_of_jvp(data):
    x = float_operand(data)
    t = like(data, x)
    want = jax.jvp(elementwise, (x,), (t,))
    assert_same(jax.jvp(jax.jit(elementwise), (x,), (t,)), want)
    assert_same(jax.jit(lambda x, t: jax.jvp(elementwise, (x,), (t,)))(x, t), want)


@laws
@given(data=st.data())
def test_jvp_of_jit_with_pytree_and_integer_inputs(data):
    """Tangents of a dict of floats; an int argument rides along without a tangent."""
    x, y = float_operand(data), float_operand(data)

    def f(params, n):
        return {"a": params["x"] * n + jnp.sin(params["y"]).sum(), "n": n * 2}

    primals = ({"x": x, "y": y}, jnp.int32(3))
    tangents = ({"x": like(data, x), "y": like(data, y)},
                np.zeros((), jax.float0))
    want = jax.jvp(f, primals, tangents)
    assert_same(jax.jvp(jax.jit(f), primals, tangents), want)


@laws
@given(data=st.data())
def test_vjp_under_jit_and_of_jit(data):
    x = float_operand(data)
    ct = like(data, x)
    y_want, pullback = jax.vjp(elementwise, x)
    want = pullback(ct)

    def y_and_pullback(x, ct):
        y, f_vjp = jax.vjp(elementwise, x)
        return y, f_vjp(ct)

    assert_same(jax.jit(y_and_pullback)(x, ct), (y_want, want))
    y, jit_pullback = jax.vjp(jax.jit(elementwise), x)
    assert_same(y, y_want)
    assert_same(jit_pullback(ct), want)


@laws
@given(data=st.data())
def test_nested_jit(data):
    x = float_operand(data)
    inner = jax.jit(elementwise)
    middle = jax.jit(lambda x: inner(x) * 2.0 + inner(-x))
    outer = jax.jit(lambda x: jnp.sum(middle(inner(x))) + jax.jit(jnp.sum)(x))

    def eager(x):
        return jnp.sum(elementwise(elementwise(x)) * 2.0 + elementwise(-elementwise(x))) + \
            jnp.sum(x)

    assert_same(outer(x), eager(x), rtol=1e-5, atol=1e-5)
    assert_same(jax.grad(outer)(x), jax.grad(eager)(x), rtol=1e-5, atol=1e-5)
    assert_same(jax.jit(jax.grad(outer))(x), jax.grad(eager)(x), rtol=1e-5, atol=1e-5)


@laws
@given(data=st.data())
def test_jit_inside_a_function_differentiated_by_grad(data):
    x = float_operand(data)
    w = array(data, np.shape(x), f32)
    scaled = jax.jit(lambda x, w: jnp.tanh(x) * w)

    def loss(x):
        return jnp.sum(scaled(x, w) * x + scaled(w, x))  # w: a constant of the tape

    def eager_loss(x):
        return jnp.sum(jnp.tanh(x) * w * x + jnp.tanh(w) * x)

    assert_same(jax.grad(loss)(x), jax.grad(eager_loss)(x), rtol=1e-5, atol=1e-6)
    assert_same(jax.jit(jax.grad(loss))(x), jax.grad(eager_loss)(x), rtol=1e-5, atol=1e-6)


def mlp_loss(params, batch):
    """Returns (loss, aux) with a pytree aux, for value_and_grad(has_aux=True)."""
    hidden = jnp.tanh(batch["x"] @ params["w"] + params["b"])
    pred = hidden @ params["v"]
    err = pred - batch["y"]
    return jnp.mean(err * err), {"pred": pred, "norms": [jnp.sum(hidden * hidden), 2.0]}


@laws
@given(data=st.data())
def test_value_and_grad_with_aux_under_jit(data):
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    params = {"w": array(data, (k, n), f32), "b": array(data, (n,), f32),
              "v": array(data, (n,), f32)}
    batch = {"x": array(data, (m, k), f32), "y": array(data, (m,), f32)}
    # Gradient entries are sums of products of size ~4 that may cancel to ~0.03: their
    # rounding error follows the terms, not the result, hence an absolute tolerance of 1e-5.
    want = jax.value_and_grad(mlp_loss, has_aux=True)(params, batch)
    got = jax.jit(jax.value_and_grad(mlp_loss, has_aux=True))(params, batch)
    assert_same(got, want, rtol=1e-5, atol=1e-5)
    both = jax.value_and_grad(mlp_loss, argnums=(0, 1), has_aux=True)
    assert_same(jax.jit(both)(params, batch), both(params, batch), rtol=1e-5, atol=1e-5)
    assert_same(jax.value_and_grad(jax.jit(mlp_loss), has_aux=True)(params, batch), want,
                rtol=1e-5, atol=1e-5)


@laws
@given(data=st.data())
def test_pytrees_in_and_out(data):
    """Nested tuples, lists, dicts and None in; a different nesting out, leaves preserved."""
    a, b, c = float_operand(data), float_operand(data), array(data, data.draw(shapes()), i32)

    def f(tree, scale):
        (x, [y, none]), d = tree
        assert none is None
        return {"sum": x + scale, "pair": (y * scale, [d["c"], None]), "k": (d["c"] * 2,)}

    tree = ((a, [b, None]), {"c": c})
    assert_same(jax.jit(f)(tree, 2.0), f(tree, 2.0))


@laws
@given(data=st.data())
def test_jit_of_transformations_with_integer_outputs_and_float0_tangents(data):
    """jvp of a function with an int output gives a float0 tangent, and grad with
    allow_int=True a float0 gradient for an int input; under jit they come out the same."""
    x = array(data, data.draw(shapes(min_dims=1)), f32)
    n = operand(data, (), i32)

    def with_int_output(x):
        return x * 2.0, jnp.argmax(x)

    def jvp_of_it(x):
        return jax.jvp(with_int_output, (x,), (jnp.ones_like(x),))

    assert_same(jax.jit(jvp_of_it)(x), jvp_of_it(x))
    grad_both = jax.grad(lambda x, n: jnp.sum(x * n), argnums=(0, 1), allow_int=True)
    assert_same(jax.jit(grad_both)(x, n), grad_both(x, n))


@laws
@given(x=st.floats(-3, 3, width=32))
def test_no_perturbation_confusion_through_jit(x):
    """d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x, with jit at every level."""
    inner = lambda x: jax.jit(jax.grad(lambda y: x * y))(1.0)
    want = jnp.asarray(2.0 * x)  # weak, as x is a Python float
    assert_same(jax.grad(lambda x: x * inner(x))(x), want)
    assert_same(jax.jit(jax.grad(lambda x: x * inner(x)))(x), want)
    assert_same(jax.jvp(lambda x: x * inner(x), (x,), (1.0,))[1], want)


def test_grad_through_jit_with_an_integer_argument():
    f = jax.jit(lambda x, n: jnp.sin(x) * n)
    assert_same(jax.grad(f)(1.0, 3), jax.grad(lambda x, n: jnp.sin(x) * n)(1.0, 3))
    assert_same(jax.grad(f)(jnp.float32(1.0), jnp.int32(3)),
                jax.grad(lambda x, n: jnp.sin(x) * n)(jnp.float32(1.0), jnp.int32(3)))


# ------------------------------------------------------------------------------------------
# 4. Caching: one trace per distinct signature
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """A hashable static argument compared by value: equal options hit the cache."""

    scale: float
    name: str


STRUCTURES = ["array", "tuple", "dict"]
STATIC_VALUES = [(2, 3), (3, 2), "sum", 1.5, Options(2.0, "a"), Options(3.0, "a")]


def fresh_copy(value: Any) -> Any:
    """An equal value that is a distinct object (so the cache must compare by value)."""
    if isinstance(value, tuple):
        return tuple(list(value))
    if isinstance(value, str):
        return "".join(list(value))
    if isinstance(value, Options):
        return Options(value.scale, "".join(list(value.name)))
    return float(str(value))


def argument(kind: str, shape: tuple[int, ...], dtype: np.dtype, weak: bool) -> Any:
    """A fresh argument of the given signature. Weak: a Python scalar (shape () only)."""
    if weak:
        return {f32: 1.5, i32: 3}[dtype]
    x = jnp.asarray(np.ones(shape, dtype))
    if kind == "tuple":
        return (x, x)
    if kind == "dict":
        return {"a": x}
    return x


signatures = st.tuples(st.sampled_from(STRUCTURES), st.sampled_from([(), (2,), (2, 3)]),
                       st.sampled_from([f32, i32, b1]), st.booleans(),
                       st.sampled_from(range(len(STATIC_VALUES))))


def canonical(signature):
    """A Python scalar is a weak array of shape (); bools are never weak."""
    kind, shape, dtype, weak, static = signature
    weak = weak and shape == () and dtype != b1 and kind == "array"
    return kind, shape, dtype, weak, static


@laws
@given(calls=st.lists(signatures.map(canonical), min_size=1, max_size=10))
def test_one_trace_per_distinct_signature(calls):
    traces = []

    def f(x, static):
        traces.append(static)
        return jax.tree_map(lambda leaf: leaf + 1, x)

    jitted = jax.jit(f, static_argnums=1)
    for kind, shape, dtype, weak, static in calls:
        jitted(argument(kind, shape, dtype, weak), fresh_copy(STATIC_VALUES[static]))
    assert len(traces) == len(set(calls))
    assert jitted._cache_size() == len(set(calls))


@laws
@given(calls=st.lists(st.sampled_from(["python float", "jnp float32", "np float32",
                                       "np float64", "python int", "jnp int32"]),
                      min_size=1, max_size=8))
def test_weak_and_strong_scalars_are_traced_apart(calls):
    """A Python float is a weak f32[]; jnp.float32, np.float32 and (canonicalized)
    np.float64 are one strong f32[]; a Python int is a weak i32[]."""
    makers = {"python float": lambda: 1.5, "jnp float32": lambda: jnp.float32(1.5),
              "np float32": lambda: np.float32(1.5), "np float64": lambda: np.float64(1.5),
              "python int": lambda: 2, "jnp int32": lambda: jnp.int32(2)}
    signature = {"python float": "weak f32", "jnp float32": "f32", "np float32": "f32",
                 "np float64": "f32", "python int": "weak i32", "jnp int32": "i32"}
    traces = []

    def f(x):
        traces.append(x.aval)
        return x * 2

    jitted = jax.jit(f)
    for call in calls:
        out = jitted(makers[call]())
        assert out.weak_type == call.startswith("python")
    assert len(traces) == len({signature[c] for c in calls})


def test_python_float_and_float32_array_are_two_cache_entries():
    traces = []
    f = jax.jit(lambda x: traces.append(x.aval) or x + 1.0)
    assert f(1.0).weak_type
    assert not f(jnp.float32(1.0)).weak_type
    f(2.0)
    f(jnp.asarray(np.float32(3.0)))
    assert len(traces) == 2 and traces[0].weak_type and not traces[1].weak_type


def test_equal_static_arguments_that_are_distinct_objects_hit_the_cache():
    traces = []

    def f(x, shape, options):
        traces.append(shape)
        return x.reshape(shape) * options.scale

    g = jax.jit(f, static_argnums=(1, 2))
    g(jnp.ones(6), (2, 3), Options(2.0, "a"))
    g(jnp.zeros(6), tuple([2, 3]), Options(2.0, "".join(["a"])))
    assert len(traces) == 1
    g(jnp.ones(6), (3, 2), Options(2.0, "a"))
    assert len(traces) == 2
    h = jax.jit(f, static_argnames=("shape", "options"))
    h(jnp.ones(6), shape=(2, 3), options=Options(1.0, "b"))
    h(jnp.ones(6), shape=tuple([2, 3]), options=Options(1.0, "".join(["b"])))
    assert len(traces) == 3


def test_static_arguments_are_static_by_position_or_by_name():
    """As in JAX, static_argnums and static_argnames each imply the other through the
    signature, so a static argument may be passed either way."""
    traces = []

    def f(x, n):
        traces.append(n)
        return jnp.ones(n) * x

    by_num = jax.jit(f, static_argnums=1)
    assert_same(by_num(2.0, n=3), f(2.0, 3))
    by_name = jax.jit(f, static_argnames="n")
    assert_same(by_name(2.0, 3), f(2.0, 3))
    traces.clear()
    by_num(2.0, n=3)
    by_name(2.0, 3)
    assert traces == []  # both were cached


def test_cache_is_keyed_on_jax_enable_x64():
    """A program traced without x64 is not reused with it: constants such as
    jnp.arange(3.0) are float64 there, and so is the result, as it is eagerly."""
    def f(x):
        return x + jnp.sum(jnp.arange(3.0))

    jitted = jax.jit(f)
    x = jnp.ones(2, jnp.float32)
    assert_same(jitted(x), f(x))
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        assert_same(jitted(x), f(x))
    finally:
        jax.config.update("jax_enable_x64", previous)
    assert_same(jitted(x), f(x))


# ------------------------------------------------------------------------------------------
# 6. Errors
# ------------------------------------------------------------------------------------------

SHAPE_ERRORS = {
    "add": (lambda x, y: x + y, [(3,), (4,)]),
    "multiply_2d": (lambda x, y: x * y, [(2, 3), (3, 2)]),
    "where": (lambda x, y: jnp.where(x > 0, x, y), [(3,), (4,)]),
    "matmul": (lambda x, y: x @ y, [(2, 3), (4, 5)]),
    "concatenate": (lambda x, y: jnp.concatenate([x, y]), [(2, 3), (2, 4)]),
    "reshape": (lambda x, y: x.reshape(4, 2) + y, [(3,), (4,)]),
    "grad_add": (lambda x, y: jax.grad(lambda x: jnp.sum(x + y))(x), [(3,), (4,)]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_shape_error_under_jit_is_the_eager_error(name):
    fn, arg_shapes = SHAPE_ERRORS[name]
    args = [jnp.ones(s) for s in arg_shapes]
    with pytest.raises(Exception) as eager:
        fn(*args)
    with pytest.raises(type(eager.value)) as jitted:
        jax.jit(fn)(*args)
    assert str(eager.value) in str(jitted.value)


@pytest.mark.parametrize("value", [np.ones(3, np.float16), np.float16(1.0),
                                   np.ones((2, 2), np.int8), np.ones(2, np.complex64)],
                         ids=["float16 array", "float16 scalar", "int8", "complex64"])
def test_a_narrow_or_complex_dtype_is_jitted_and_kept(value):
    out = jax.jit(lambda x: x * 2)(value)
    assert np.asarray(out).dtype == value.dtype
    np.testing.assert_array_equal(np.asarray(out), value * 2)


@pytest.mark.parametrize("value", [np.ones(3, np.longdouble),
                                   np.ones(2, ml_dtypes.int4)],
                         ids=["longdouble", "int4"])
def test_unsupported_dtype_is_a_type_error_naming_it(value):
    f = jax.jit(lambda x: x * 2)
    with pytest.raises(TypeError, match=str(value.dtype)):
        f(value)
    with pytest.raises(TypeError, match=str(value.dtype)):
        f({"nested": [value]})
    with pytest.raises(TypeError, match=str(value.dtype)):
        jax.make_jaxpr(lambda x: x * 2)(value)
