"""``vmap``'s API: what ``in_axes``, ``out_axes``, ``axis_size`` and keyword arguments mean,
checked against the meaning of ``vmap`` written out as a Python loop (``loop`` below), and
the classic uses: pairwise distances, batched matvec as one matmul, per-example gradients,
keys, ``custom_vjp`` and ``jit``. Then the errors a wrong call gets, with JAX's messages.
"""

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stage3_vmap as jax
from stage3_vmap import lax, random
from stage3_vmap import numpy as jnp

laws = settings(max_examples=15, deadline=None)
seeds = st.integers(0, 2**32 - 1)


# ------------------------------------------------------------------------------------------
# The reference: vmap as a loop
# ------------------------------------------------------------------------------------------


def flat_axes(spec: Any, tree: Any) -> list:
    """One axis (or None) per leaf of ``tree``: the pytree prefix ``spec`` broadcast over it.
    Written out again here (dicts by sorted key), so the reference does not share vmap's code."""
    if spec is None or type(spec) is int:
        return [spec] * len(jax.tree_leaves(tree))
    if isinstance(spec, dict):
        assert sorted(spec) == sorted(tree)
        return [a for k in sorted(tree) for a in flat_axes(spec[k], tree[k])]
    assert type(spec) is type(tree) and len(spec) == len(tree), (spec, tree)
    return [a for s, t in zip(spec, tree) for a in flat_axes(s, t)]


def loop(fun, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None):
    """What ``vmap(fun, in_axes, out_axes, axis_size=axis_size)`` means: slice every mapped
    leaf, call ``fun`` once per example, stack each result leaf along its ``out_axes`` entry
    (an unmapped result, ``None``, is the first example's). Keyword arguments map on axis 0."""
    def looped(*args, **kwargs):
        spec = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        leaves, tree = jax.tree_flatten((args, kwargs))
        axes = flat_axes(spec, args) + [0] * len(jax.tree_leaves(kwargs))
        sizes = {np.shape(x)[a] for x, a in zip(leaves, axes) if a is not None}
        assert len(sizes) <= 1
        size = sizes.pop() if sizes else axis_size
        outs = []
        for i in range(size):
            sliced = [x if a is None else jnp.asarray(np.take(np.asarray(x), i, axis=a))
                      for x, a in zip(leaves, axes)]
            a, k = jax.tree_unflatten(tree, sliced)
            outs.append(fun(*a, **k))
        columns = zip(*[jax.tree_leaves(o) for o in outs])
        wanted = flat_axes(out_axes, outs[0])
        as_np = lambda c: np.asarray(jnp.asarray(c))  # a Python 7.0 becomes float32, as in vmap
        stacked = [as_np(col[0]) if a is None else np.stack([as_np(c) for c in col], axis=a)
                   for a, col in zip(wanted, columns)]
        return jax.tree_unflatten(jax.tree_structure(outs[0]), stacked)
    return looped


def assert_trees_close(got: Any, want: Any, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Same structure; each leaf an Array of the expected shape and dtype, values close."""
    got_leaves, got_tree = jax.tree_flatten(got)
    want_leaves, want_tree = jax.tree_flatten(want)
    assert got_tree == want_tree, f"structure {got_tree} != {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        assert isinstance(g, jax.Array), f"leaf {i} is a {type(g).__name__}, not an Array"
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype), f"leaf {i}: {g.shape, g.dtype} != " \
                                                         f"{w.shape, w.dtype}"
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"leaf {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"leaf {i}")


def normal(seed: int, shape) -> jax.Array:
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


def insert_axis(shape: tuple, axis: int | None, size: int) -> tuple:
    """``shape`` with a batch axis of ``size`` at ``axis`` (counted in the batched rank)."""
    if axis is None:
        return shape
    shape = list(shape)
    shape.insert(axis % (len(shape) + 1), size)
    return tuple(shape)


# ------------------------------------------------------------------------------------------
# in_axes and out_axes as pytree prefixes
# ------------------------------------------------------------------------------------------

# The arguments' structure: an array, a dict holding an array and a tuple, a list.
RANKS = (0, {"a": 0, "b": (0, 0)}, [0])


def pytree_fun(x, d, lst):
    """Uses every leaf, mixes them (so mapped meets unmapped), returns a pytree."""
    z, w = d["b"]
    return {"p": jnp.sin(x) + jnp.sum(d["a"]),
            "q": (z * 2.0 - jnp.max(x), jnp.sum(w) * lst[0])}


def out_ranks(ranks: Any) -> dict:
    """The ranks of ``pytree_fun``'s results, for arguments of ``ranks``."""
    x, d, lst = ranks
    return {"p": x, "q": (d["b"][0], lst[0])}


def draw_spec(data, ranks: Any, allow_none: bool = True) -> Any:
    """A pytree prefix of ``ranks`` (a tree of leaf ranks): at each node either one entry for
    the whole subtree or one per child; an entry is None or an axis valid for every leaf under
    it once it is batched, negative ones included."""
    leaves = jax.tree_leaves(ranks)
    whole = not isinstance(ranks, (dict, tuple, list)) or data.draw(st.booleans())
    if whole:
        low = min(leaves) + 1
        axis = st.integers(-low, low - 1)
        return data.draw(st.none() | axis if allow_none else axis)
    if isinstance(ranks, dict):
        return {k: draw_spec(data, v, allow_none) for k, v in ranks.items()}
    return type(ranks)(draw_spec(data, v, allow_none) for v in ranks)


@laws
@given(data=st.data(), size=st.integers(1, 3), seed=seeds)
def test_in_axes_and_out_axes_are_pytree_prefixes(data, size, seed):
    ranks = jax.tree_map(lambda _: data.draw(st.integers(0, 2)), RANKS)
    in_axes = draw_spec(data, ranks)
    if isinstance(in_axes, tuple) and data.draw(st.booleans()):
        in_axes = list(in_axes)  # a list at the top is a tuple
    spec = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * 3
    rank_leaves, tree = jax.tree_flatten(ranks)
    axes = flat_axes(spec, ranks)
    leaves = [normal(seed + i, insert_axis((2,) * r, a, size))
              for i, (r, a) in enumerate(zip(rank_leaves, axes))]
    args = jax.tree_unflatten(tree, leaves)
    out_axes = draw_spec(data, out_ranks(ranks), allow_none=False)
    axis_size = size if all(a is None for a in axes) else None

    got = jax.vmap(pytree_fun, in_axes, out_axes, axis_size=axis_size)(*args)
    want = loop(pytree_fun, in_axes, out_axes, axis_size=size)(*args)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)


def test_in_axes_as_list_equals_tuple():
    x, y = normal(0, (3, 2)), normal(1, (2, 3))
    f = lambda x, y: jnp.dot(x, y)
    want = loop(f, (0, 1))(x, y)
    assert_trees_close(jax.vmap(f, in_axes=[0, 1])(x, y), want, rtol=1e-5)
    assert_trees_close(jax.vmap(f, in_axes=(0, 1))(x, y), want, rtol=1e-5)


def test_none_leaves_are_not_mapped():
    """A None in ``in_axes`` passes the argument whole to every example."""
    w, xs = normal(0, (4, 3)), normal(1, (5, 3))
    got = jax.vmap(lambda w, x: w @ x, in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(xs) @ np.asarray(w).T, rtol=1e-5)
    params = {"w": w, "b": normal(2, (4,))}
    got = jax.vmap(lambda p, x: p["w"] @ x + p["b"], in_axes=({"w": None, "b": None}, 0))(
        params, xs)
    want = np.asarray(xs) @ np.asarray(w).T + np.asarray(params["b"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


@laws
@given(data=st.data(), seed=seeds)
def test_negative_in_axes_and_out_axes(data, seed):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    ndim = len(shape)
    in_axis = data.draw(st.integers(-ndim, -1))
    out_axis = data.draw(st.integers(-ndim, -1))
    x = normal(seed, shape)
    f = lambda v: jnp.cos(v) * jnp.sum(v)
    got = jax.vmap(f, in_axes=in_axis, out_axes=out_axis)(x)
    assert_trees_close(got, loop(f, in_axis, out_axis)(x), rtol=1e-5, atol=1e-6)
    # The same as the positive axes they stand for.
    same = jax.vmap(f, in_axes=in_axis % ndim, out_axes=out_axis % ndim)(x)
    assert_trees_close(got, same)


@laws
@given(data=st.data(), seed=seeds)
def test_out_axes_moves_the_batch_axis(data, seed):
    """Any out_axes from -(rank + 1) to rank: the loop's results stacked there."""
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    out_axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = normal(seed, shape)
    f = lambda v: (jnp.exp(v), jnp.sum(v))
    got = jax.vmap(f, out_axes=(out_axis, 0))(x)
    assert_trees_close(got, loop(f, 0, (out_axis, 0))(x), rtol=1e-5, atol=1e-6)


def test_keyword_arguments_are_mapped_on_axis_0():
    xs, ys = normal(0, (4, 3)), normal(1, (4, 3))
    f = lambda x, y: x * jnp.sum(y)
    assert_trees_close(jax.vmap(f)(xs, y=ys), loop(f)(xs, y=ys), rtol=1e-5)
    assert_trees_close(jax.vmap(f)(x=xs, y=ys), loop(f)(x=xs, y=ys), rtol=1e-5)
    # in_axes covers the positional arguments only; keywords are mapped on axis 0 whatever
    # it says (JAX's rule).
    w = normal(2, (3,))
    got = jax.vmap(f, in_axes=(None,))(w, y=ys)
    assert_trees_close(got, loop(f, (None,))(w, y=ys), rtol=1e-5)
    got = jax.vmap(lambda x, p: x + p["a"] * p["b"], in_axes=1)(normal(3, (3, 4)),
                                                                 p={"a": xs, "b": ys})
    want = np.asarray(normal(3, (3, 4))).T + np.asarray(xs) * np.asarray(ys)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_unmapped_results_are_broadcast():
    """A result that does not depend on the mapped axis is broadcast along it (out_axes an
    int), or returned as it is (out_axes None)."""
    xs, w = normal(0, (4, 3)), normal(1, (2,))
    f = lambda x: (jnp.sin(x), w * 2.0, 7.0)
    got = jax.vmap(f)(xs)
    assert_trees_close(got, loop(f)(xs), rtol=1e-6)
    assert got[1].shape == (4, 2) and got[2].shape == (4,)
    got = jax.vmap(f, out_axes=(0, 1, 0))(xs)
    np.testing.assert_array_equal(np.asarray(got[1]),
                                  np.broadcast_to(np.asarray(w)[:, None] * 2, (2, 4)))
    got = jax.vmap(f, out_axes=(0, None, None))(xs)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(w) * 2.0)
    assert np.shape(got[1]) == (2,) and np.shape(got[2]) == ()
    # An unmapped argument passed straight through.
    got = jax.vmap(lambda x, y: (x, y), in_axes=(0, None))(xs, w)
    np.testing.assert_array_equal(np.asarray(got[1]), np.broadcast_to(np.asarray(w), (4, 2)))


def test_unmapped_arguments_are_passed_as_they_are():
    """An argument with in_axes None is not traced (JAX passes it through), so a Python int
    can be a shape, a reshape's tuple, a condition, or an inner jit's static argument."""
    xs = normal(0, (5,))
    got = jax.vmap(lambda x, n: x * jnp.ones(n), (0, None))(xs, 3)
    np.testing.assert_allclose(np.asarray(got), np.repeat(np.asarray(xs)[:, None], 3, 1))
    got = jax.vmap(lambda x, s: jnp.reshape(x, s), (0, None))(normal(1, (5, 6)), (2, 3))
    assert got.shape == (5, 2, 3)
    got = jax.vmap(lambda x, n: x * 2.0 if n > 1 else x, (0, None))(xs, 3)
    np.testing.assert_allclose(np.asarray(got), 2.0 * np.asarray(xs))
    scale = jax.jit(lambda x, n: x * n, static_argnums=1)
    np.testing.assert_allclose(np.asarray(jax.vmap(scale, (0, None))(xs, 3)),
                               3.0 * np.asarray(xs), rtol=1e-6)


def test_nested_vmap_three_deep():
    f = lambda x, y, z: jnp.dot(x, y) * z + jnp.sum(jnp.sin(x))
    x, y, z = normal(0, (2, 5, 4)), normal(1, (5, 4, 3)), normal(2, (5,))
    inner = (0, None, None)
    middle = (None, 1, None)
    outer = (1, 0, 0)
    got = jax.vmap(jax.vmap(jax.vmap(f, inner), middle, out_axes=1), outer)(x, y, z)
    want = loop(loop(loop(f, inner), middle, out_axes=1), outer)(x, y, z)
    assert got.shape == (5, 2, 3)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-5)


def test_axis_size_when_nothing_is_mapped():
    x = normal(0, (2,))
    got = jax.vmap(lambda v: v * 2.0, in_axes=None, axis_size=4)(x)
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(np.asarray(x) * 2.0, (4, 2)))
    got = jax.vmap(lambda: jnp.ones(3), axis_size=2)()
    np.testing.assert_array_equal(np.asarray(got), np.ones((2, 3), np.float32))
    got = jax.vmap(lambda v: v + 1.0, in_axes=None, out_axes=None, axis_size=3)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) + 1.0)
    # axis_size agreeing with the mapped arguments is allowed.
    got = jax.vmap(jnp.sin, axis_size=2)(x)
    np.testing.assert_allclose(np.asarray(got), np.sin(np.asarray(x)), rtol=1e-6)


# ------------------------------------------------------------------------------------------
# The classic uses
# ------------------------------------------------------------------------------------------


def l1_distance(x, y):
    return jnp.sum(jnp.abs(x - y))


def test_pairwise_l1_distances():
    points = random.normal(random.key(0), (100, 3))
    distances = jax.vmap(jax.vmap(l1_distance, (0, None)), (None, 0))(points, points)
    p = np.asarray(points)
    want = np.abs(p[None, :, :] - p[:, None, :]).sum(-1)  # [j, i]: the outer vmap's index
    assert distances.shape == (100, 100) and distances.dtype == np.float32
    np.testing.assert_allclose(np.asarray(distances), want, rtol=1e-5, atol=1e-5)


def test_pairwise_l1_distances_equal_jax():
    real = pytest.importorskip("jax")
    points = real.random.normal(real.random.key(0), (100, 3))
    want = real.vmap(real.vmap(lambda x, y: real.numpy.sum(real.numpy.abs(x - y)), (0, None)),
                     (None, 0))(points, points)
    ours = random.normal(random.key(0), (100, 3))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(points), rtol=1e-5, atol=1e-6)
    got = jax.vmap(jax.vmap(l1_distance, (0, None)), (None, 0))(ours, ours)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def primitives_of(closed) -> list[str]:
    return [eqn.primitive.name for eqn in closed.jaxpr.eqns]


@pytest.mark.task3_1
def test_batched_matvec_is_one_matmul():
    w, vs = normal(0, (4, 3)), normal(1, (6, 3))
    matvec = jax.vmap(lambda v: jnp.dot(w, v))
    closed = jax.make_jaxpr(matvec)(vs)
    names = primitives_of(closed)
    assert names.count("dot_general") == 1, closed
    assert set(names) <= {"dot_general", "transpose"}, closed  # no loop, no per-example op
    (dot,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert sorted(dot.outvars[0].aval.shape) == [4, 6], closed  # a matrix: matmul
    np.testing.assert_allclose(np.asarray(matvec(vs)), np.asarray(vs) @ np.asarray(w).T,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.task3_1
@pytest.mark.parametrize("batched", ["vector", "matrix"])
def test_batched_matmul_operator_adds_no_equations(batched):
    """``w @ v`` under vmap: the unbatched program's equations, each once (one dot_general
    over the whole batch), and at most a transpose more to put the batch axis first."""
    w, v = normal(0, (4, 3)), normal(1, (3,))
    if batched == "vector":
        f, xs = (lambda v: w @ v), normal(2, (6, 3))
        want = np.asarray(xs) @ np.asarray(w).T
    else:
        f, xs = (lambda m: m @ v), normal(2, (6, 4, 3))
        want = np.asarray(xs) @ np.asarray(v)
    one = primitives_of(jax.make_jaxpr(f)(xs[0]))
    closed = jax.make_jaxpr(jax.vmap(f))(xs)
    names = primitives_of(closed)
    extra = list(names)
    for name in one:
        extra.remove(name)
    assert set(extra) <= {"transpose"} and len(extra) <= 1, closed
    assert names.count("dot_general") == 1, closed
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(xs)), want, rtol=1e-5, atol=1e-6)


def test_vmap_over_split_keys_equals_a_loop():
    keys = random.split(random.key(0), 5)
    got = jax.vmap(lambda k: random.normal(k, (3,)))(keys)
    want = np.stack([np.asarray(random.normal(k, (3,))) for k in keys])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7)
    bits = jax.vmap(lambda k: random.bits(k, (2,)))(keys)
    np.testing.assert_array_equal(np.asarray(bits),
                                  np.stack([np.asarray(random.bits(k, (2,))) for k in keys]))
    # Raw uint32 keys, split under vmap, and fold_in with a mapped integer.
    raw = random.split(random.PRNGKey(1), 4)
    split = jax.vmap(random.split)(raw)
    np.testing.assert_array_equal(np.asarray(split),
                                  np.stack([np.asarray(random.split(k)) for k in raw]))
    key = random.key(2)
    folded = jax.vmap(lambda i: random.uniform(random.fold_in(key, i)))(jnp.arange(4))
    want = [float(random.uniform(random.fold_in(key, i))) for i in range(4)]
    np.testing.assert_array_equal(np.asarray(folded), np.asarray(want, np.float32))


def test_negative_in_axes_count_the_keys_of_a_key_array():
    """A typed key array of shape (5,) holds uint32 data of shape (5, 2): in_axes=-1 is its
    last axis of keys, not the words of each key."""
    keys = random.split(random.key(3), 5)
    last = jax.vmap(lambda k: random.normal(k), in_axes=-1)(keys)
    np.testing.assert_array_equal(np.asarray(last),
                                  np.asarray(jax.vmap(lambda k: random.normal(k))(keys)))
    with pytest.raises(ValueError, match="rank should be at least 2"):
        jax.vmap(lambda k: random.normal(k), in_axes=1)(keys)


def mlp_loss(params, x, y):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] - y) ** 2)


def test_per_example_gradients():
    params = {"w1": normal(0, (3, 4)), "b1": normal(1, (4,)), "w2": normal(2, (4, 2))}
    xs, ys = normal(3, (6, 3)), normal(4, (6, 2))
    got = jax.vmap(jax.grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    want = [jax.grad(mlp_loss)(params, x, y) for x, y in zip(xs, ys)]
    want = jax.tree_map(lambda *g: np.stack([np.asarray(x) for x in g]), *want)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)
    assert got["w1"].shape == (6, 3, 4)


@jax.custom_vjp
def scaled_sin(x, w):
    return jnp.sin(x) * w


def _scaled_sin_fwd(x, w):
    return jnp.sin(x) * w, (x, w)


def _scaled_sin_bwd(residuals, ct):
    """Deliberately not the true derivative: 10x for x, 100x for w, so a test can tell the
    custom rule from differentiating the function."""
    x, w = residuals
    return 10.0 * ct * jnp.cos(x) * w, 100.0 * jnp.sum(ct * jnp.sin(x))  # w is a scalar


scaled_sin.defvjp(_scaled_sin_fwd, _scaled_sin_bwd)


def test_custom_vjp_under_vmap_keeps_its_rule():
    xs, w = normal(0, (5,)), jnp.asarray(0.5)
    x_np = np.asarray(xs)
    np.testing.assert_allclose(np.asarray(jax.vmap(scaled_sin, (0, None))(xs, w)),
                               np.sin(x_np) * 0.5, rtol=1e-6)
    # vmap of grad: the custom rule for each example.
    g = jax.vmap(jax.grad(scaled_sin), (0, None))(xs, w)
    np.testing.assert_allclose(np.asarray(g), 10.0 * np.cos(x_np) * 0.5, rtol=1e-5)
    # grad of vmap: the custom rule batched; the unmapped w gets its cotangents summed.
    def total(xs, w):
        return jnp.sum(jax.vmap(scaled_sin, (0, None))(xs, w))
    gx, gw = jax.grad(total, argnums=(0, 1))(xs, w)
    np.testing.assert_allclose(np.asarray(gx), 10.0 * np.cos(x_np) * 0.5, rtol=1e-5)
    np.testing.assert_allclose(float(gw), 100.0 * np.sin(x_np).sum(), rtol=1e-5)
    # Both mapped.
    ws = normal(1, (5,))
    gx, gw = jax.grad(lambda a, b: jnp.sum(jax.vmap(scaled_sin)(a, b)), (0, 1))(xs, ws)
    np.testing.assert_allclose(np.asarray(gw), 100.0 * np.sin(x_np), rtol=1e-5)
    # Mapped on axis 1: each example's x is a column; the cotangents come back there.
    m = normal(2, (2, 5))
    gm, gw = jax.grad(lambda m, w: jnp.sum(jax.vmap(scaled_sin, (1, None))(m, w)), (0, 1))(m, w)
    m_np = np.asarray(m)
    np.testing.assert_allclose(np.asarray(gm), 10.0 * np.cos(m_np) * 0.5, rtol=1e-5)
    np.testing.assert_allclose(float(gw), 100.0 * np.sin(m_np).sum(), rtol=1e-5)


def test_vmap_of_jit_is_one_batched_program():
    def f(x, y):
        return jnp.tanh(x) @ y + jnp.sum(x)

    x, y = normal(0, (5, 3)), normal(1, (3, 2))
    want = loop(f, (0, None))(x, y)
    g = jax.vmap(jax.jit(f), (0, None))
    assert_trees_close(g(x, y), want, rtol=1e-5, atol=1e-6)
    closed = jax.make_jaxpr(g)(x, y)
    jit_eqns = [e for e in closed.jaxpr.eqns if e.primitive.name == "jit"]
    assert len(jit_eqns) == 1, closed  # one call for the batch, not one per example
    inner = jit_eqns[0].params["jaxpr"]
    assert (5, 3) in [a.shape for a in inner.in_avals], inner  # its program sees the batch
    assert [a.shape for a in inner.out_avals] in ([(5, 2)], [(2, 5)]), inner


def test_jit_of_vmap():
    def f(x, y):
        return jnp.tanh(x) @ y + jnp.sum(x)

    x, y = normal(0, (5, 3)), normal(1, (5, 3, 2))
    want = loop(f)(x, y)
    assert_trees_close(jax.jit(jax.vmap(f))(x, y), want, rtol=1e-5, atol=1e-6)
    assert_trees_close(jax.jit(jax.vmap(f, out_axes=1))(x, y), loop(f, 0, 1)(x, y),
                       rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# Bad input: JAX's errors, naming what went wrong and where
# ------------------------------------------------------------------------------------------


def test_inconsistent_sizes_name_each_argument():
    x, y = jnp.ones((3, 2)), {"w": jnp.ones((2, 4))}
    with pytest.raises(ValueError, match="inconsistent sizes") as info:
        jax.vmap(lambda a, b: a, in_axes=(0, 1))(x, y)
    message = str(info.value)
    assert "args[0]" in message and "args[1]['w']" in message, message
    assert "axis 0" in message and "axis 1" in message, message
    assert "size 3" in message and "size 4" in message, message
    with pytest.raises(ValueError, match="inconsistent sizes") as info:
        jax.vmap(lambda a, b: a)(x, b=jnp.ones(5))
    assert "kwargs['b']" in str(info.value) and "size 5" in str(info.value)


def test_axis_size_disagreeing_with_the_arguments():
    with pytest.raises(ValueError, match="inconsistent sizes") as info:
        jax.vmap(jnp.sin, axis_size=5)(jnp.ones(3))
    assert "axis_size" in str(info.value) and "5" in str(info.value)


@pytest.mark.parametrize("axis, shape", [(2, (3, 2)), (-3, (3, 2)), (0, ())])
def test_axis_beyond_the_rank(axis, shape):
    with pytest.raises(ValueError, match="rank") as info:
        jax.vmap(jnp.sin, in_axes=(axis,))(jnp.ones(shape))
    message = str(info.value)
    assert f"axis {axis}" in message and "args[0]" in message, message
    assert f"only {len(shape)}" in message, message


def test_keyword_argument_of_rank_0():
    """Keyword arguments are mapped on axis 0, so a scalar one cannot be: its path says so."""
    with pytest.raises(ValueError, match="at least 1, but is only 0") as info:
        jax.vmap(lambda x, b: x * b)(jnp.ones(3), b=1.0)
    assert "kwargs['b']" in str(info.value)


def test_nothing_mapped_and_no_axis_size():
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        jax.vmap(jnp.sin, in_axes=None)(jnp.ones(3))
    with pytest.raises(ValueError, match="axis_size"):
        jax.vmap(lambda: 1.0)()


def test_in_axes_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"len\(in_axes\)=3, len\(args\)=2"):
        jax.vmap(jnp.add, in_axes=(0, 0, 0))(jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        jax.vmap(jnp.add, in_axes=[0])(jnp.ones(2), jnp.ones(2))


@pytest.mark.parametrize("in_axes, arg", [
    (({"a": 0},), {"b": np.ones(2, np.float32)}),
    (((0, 0),), np.ones(2, np.float32)),
    (([0, 0],), (np.ones(2, np.float32), np.ones(2, np.float32))),
    (((0, 0, 0),), (np.ones(2, np.float32), np.ones(2, np.float32))),
])
def test_in_axes_of_the_wrong_structure(in_axes, arg):
    with pytest.raises(ValueError, match="tree prefix") as info:
        jax.vmap(lambda t: jax.tree_leaves(t)[0], in_axes=in_axes)(arg)
    assert "args[0]" in str(info.value)


def test_in_axes_that_is_neither_an_int_none_nor_a_tuple():
    """A dict (or other container) at the top of in_axes is refused when vmap is called, as
    in JAX: the top level stands for the positional arguments, so it must be a tuple."""
    with pytest.raises(TypeError, match="must be an int, None, or a tuple"):
        jax.vmap(lambda d: d["a"], in_axes={"a": 0})


def test_out_axes_none_on_a_mapped_result():
    with pytest.raises(ValueError, match="out_axes is None"):
        jax.vmap(jnp.sin, out_axes=None)(jnp.ones(3))
    with pytest.raises(ValueError, match="out_axes is None"):
        jax.vmap(lambda x: (x, 1.0), out_axes=(None, None))(jnp.ones(3))


def test_out_axes_of_the_wrong_structure_or_rank():
    with pytest.raises(ValueError, match="tree prefix"):
        jax.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(jnp.ones(3))
    with pytest.raises(ValueError, match="out of range"):
        jax.vmap(jnp.sin, out_axes=2)(jnp.ones(3))


@pytest.mark.parametrize("spec", [1.0, "0", (0, 1.5), {"a": np.float32(0)}])
def test_axes_with_a_leaf_that_is_not_an_int(spec):
    with pytest.raises(TypeError, match="must be an int, None"):
        jax.vmap(jnp.sin, in_axes=spec)
    with pytest.raises(TypeError, match="must be an int, None"):
        jax.vmap(jnp.sin, out_axes=spec)


def test_unbound_axis_name():
    with pytest.raises(NameError, match="unbound axis name: j"):
        jax.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(jnp.ones(3))
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(jnp.ones(3), "i")
