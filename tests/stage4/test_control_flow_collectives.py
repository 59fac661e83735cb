"""Loops and branches whose per-device body needs a collective, and gradients through loops
over sharded values.

The laws: sharded equals unsharded, eagerly and under ``jit``, for ``fori_loop``, ``scan``
(xs split or replicated), ``cond`` and ``while_loop`` with collectives in their bodies; each
iteration runs and logs its collectives, and the static costs count them times the trip
count (unknown for ``while_loop``); the gradient of a loop over sharded values equals one
device's, laid out as its argument. Then the errors: devices that disagree on a branch or a
loop's predicate."""

from collections import Counter

import numpy as np
import pytest
from stage1_autodiff.test_util import check_grads
from stage4_sharding.runtime import Segment, schedule
from stage4_sharding.sharding import NamedSharding, P

import stage4_sharding as jax
from stage4_sharding import lax
from stage4_sharding import numpy as jnp

rng = np.random.default_rng(0)
F = rng.standard_normal((8, 16)).astype(np.float32)
S = rng.standard_normal((8, 16)).astype(np.float32)
W = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("d",))


@pytest.fixture(scope="module")
def mesh2():
    return jax.make_mesh((4, 2), ("x", "y"))


def put(value, mesh, *spec):
    return jax.device_put(value, NamedSharding(mesh, P(*spec)))


def flat(tree) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_leaves(tree)]


def assert_sharded_equals_unsharded(fun, inputs, sharded):
    """Eager and jitted on the sharded inputs, against the unsharded program; returns the
    collectives the jitted call ran."""
    expected = flat(fun(*[jnp.asarray(x) for x in inputs]))
    for run in (fun, jax.jit(fun, backend="interpreter")):
        with jax.record_collectives() as log:
            got = flat(run(*sharded))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
    return log


def _matmul_split(mesh):
    """A body contracting its carry's split dim: partial products, then a reduce-scatter
    back to the carry's layout."""
    out = NamedSharding(mesh, P(None, "d"))
    return lambda v, s: lax.fori_loop(
        0, 3, lambda i, c: jnp.tanh(jnp.matmul(c, W, out_sharding=out)), v)


def _damped_step(c, r):
    total = c.sum()  # over a split dim: an all-reduce per step
    return c * 0.5 + r / (1 + jnp.abs(total)), total


# (function of (v, s), spec of v, spec of s, the collectives it runs per call) on the 1-D mesh
PROGRAMS = {
    "fori, mean over a split dim": (
        lambda v, s: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c - c.mean(0)), v),
        ("d",), (), {"psum": 3}),
    "fori, contraction over a split dim": (None, (None, "d"), (), {"psum_scatter": 3}),
    "scan, xs split along a kept dim": (
        lambda v, s: lax.scan(lambda c, r: (c + r.sum(), c * r.max()), jnp.float32(0), v.T),
        ("d",), (), {"psum": 16, "pmax": 16}),
    "scan, xs replicated, carry split, reverse": (
        lambda v, s: lax.scan(_damped_step, v, jnp.stack([s, s * 2, -s]), reverse=True),
        ("d",), (), {"psum": 3}),
    "cond, a collective in the branch taken": (  # the predicate is replicated: no collective
        lambda v, s: lax.cond(s.sum() > -1e9, lambda u: u - u.mean(), lambda u: u * 2.0, v),
        ("d",), (), {"psum": 1}),
    "while, collectives in the predicate and the body": (
        lambda v, s: lax.while_loop(lambda c: c.sum() < 500.0,
                                    lambda c: c + jnp.abs(c).max() + 1.0, v),
        ("d",), (), {}),
    "nested: fori inside scan": (
        lambda v, s: lax.scan(lambda c, r: (lax.fori_loop(0, 2, lambda i, u: u - (
            u.sum(1) * r)[:, None] * 0.1, c), r.sum()), v, s[:, :8].T),
        (None, "d"), (), {"psum": 16}),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_loops_with_collectives_in_the_body_equal_the_unsharded_program(mesh, name):
    fun, v_spec, s_spec, per_call = PROGRAMS[name]
    fun = fun or _matmul_split(mesh)
    log = assert_sharded_equals_unsharded(fun, (F, S), (put(F, mesh, *v_spec),
                                                      put(S, mesh, *s_spec)))
    if per_call:  # the collectives of the loop, once per iteration
        counted = Counter(c.primitive for c in log)
        assert {k: counted[k] for k in per_call} == per_call


@pytest.mark.parametrize("spec", [("x", "y"), (("x", "y"),), ("y", "x")])
def test_on_a_2d_mesh_collectives_in_loops_run_over_their_groups(mesh2, spec):
    def fun(v):
        step = lambda i, c: c - c.mean(0) + c.max(1)[:, None] * 0.1  # noqa: E731
        return lax.fori_loop(0, 2, step, v)
    log = assert_sharded_equals_unsharded(fun, (F,), (put(F, mesh2, *spec),))
    assert log and all(c.group_size in (2, 4, 8) for c in log)


def test_a_loop_without_collectives_stays_one_compiled_loop(mesh):
    x = put(F, mesh, "d")
    quiet = jax.jit(lambda v: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c), v)).lower(x)
    steps = schedule(quiet.partitioned.local.jaxpr)
    assert len(steps) == 1 and isinstance(steps[0], Segment)
    chatty = jax.jit(lambda v: lax.fori_loop(0, 3, lambda i, c: c - c.sum(), v)).lower(x)
    steps = schedule(chatty.partitioned.local.jaxpr)
    assert [s.primitive.name for s in steps if not isinstance(s, Segment)] == ["scan"]


def test_static_costs_count_a_loops_collectives_times_its_trip_count(mesh):
    x = put(F, mesh, "d")
    f = jax.jit(lambda v: lax.fori_loop(0, 5, lambda i, c: c - c.mean(0), v) + v.sum())
    compiled = f.lower(x).compile()
    with jax.record_collectives() as log:
        f(x)
    assert sorted(c.count for c in compiled.collectives()) == [1, 5]
    assert len(log) == 6  # five all-reduces inside the loop, one after it
    expanded = [(c.kind, c.bytes_sent) for c in compiled.collectives() for _ in range(c.count)]
    assert Counter(expanded) == Counter((c.kind, c.bytes_sent) for c in log)
    analysis = compiled.cost_analysis()
    assert analysis["collectives"] == 6
    assert analysis["bytes sent"] == pytest.approx(sum(c.bytes_sent for c in log))
    assert analysis["communication seconds"] == pytest.approx(sum(c.seconds for c in log))
    text = compiled.communication_report()
    assert text.splitlines()[0].split()[-1] == "runs"
    assert text.splitlines()[-1].startswith("6 collectives")


def test_static_costs_of_nested_loops_and_branches(mesh):
    x = put(F, mesh, "d")

    def inner(c):
        return lax.fori_loop(0, 3, lambda j, u: u - u.sum(0), c)

    nested = jax.jit(lambda v: lax.scan(lambda c, r: (inner(c), None), v, None, length=4)[0])
    assert [c.count for c in nested.lower(x).compile().collectives()] == [12]
    # of a cond's branches, the costliest counts (its psum of a block, not nothing)
    branchy = jax.jit(lambda v: lax.cond(v[:, 0].sum() > 0, lambda u: u - u.sum(0),
                                         lambda u: u, v))
    costs = branchy.lower(x).compile().collectives()
    assert [c.operand.shape for c in costs] == [(), (16,)]


def test_a_while_loops_collectives_are_counted_per_iteration(mesh):
    x = put(F, mesh, "d")
    f = jax.jit(lambda v: lax.while_loop(lambda c: c.sum() < 500.0, lambda c: c * 2.0 + 1, v))
    compiled = f.lower(x).compile()
    assert [c.count for c in compiled.collectives()] == [None]
    analysis = compiled.cost_analysis()
    assert analysis["collectives"] == 0
    assert analysis["collectives per while_loop iteration"] == 1
    assert analysis["bytes sent per while_loop iteration"] == 2 * 7 / 8 * 4
    assert "trip count is known only when it runs" in compiled.communication_report()
    with jax.record_collectives() as log:
        out = f(x)
    expected = lax.while_loop(lambda c: c.sum() < 500.0, lambda c: c * 2.0 + 1, jnp.asarray(F))
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-6)
    assert len(log) >= 2  # the predicate's all-reduce, once per test of it


def test_collectives_in_loops_inside_shard_map(mesh):
    def body(block):
        return lax.fori_loop(0, 3, lambda i, c: c + lax.psum(c.sum(), "d"), block)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    x = np.arange(16, dtype=np.float32)
    blocks = x.reshape(8, 2)
    for _ in range(3):  # the same loop by hand, on every device's block
        blocks = blocks + blocks.sum()
    with jax.record_collectives() as log:
        np.testing.assert_allclose(np.asarray(f(x)), blocks.reshape(16))
    assert [c.primitive for c in log] == ["psum"] * 3


def test_a_loop_on_the_cpu_backend_runs_its_body_segments(mesh):
    x = put(F, mesh, "d")
    f = lambda v: lax.fori_loop(0, 2, lambda i, c: jnp.tanh(c - c.mean(0)), v)  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.asarray(f(jnp.asarray(F))),
                               rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# The devices must agree on a branch and on when a loop stops
# ------------------------------------------------------------------------------------------


def test_a_while_predicate_that_differs_between_devices_is_an_error(mesh):
    def body(block):
        return lax.while_loop(lambda c: c[0] < lax.axis_index("d"),
                              lambda c: (c[0] + 1, c[1] + lax.psum(c[1], "d")), (0, block))[1]

    f = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    with pytest.raises(ValueError, match=r"while_loop's predicate differs between devices "
                                         r"\(False on devices \[0\]; True on devices "
                                         r"\[1, 2, 3, 4, 5, 6, 7\]\)\. Its loop body or "
                                         r"branches run axis_index, psum") as error:
        f(np.ones(16, np.float32))
    assert "combine it over the mesh axes first (jax.lax.pmax" in str(error.value)


def test_a_cond_whose_devices_take_different_branches_is_an_error(mesh):
    def body(block):
        return lax.cond(lax.axis_index("d") > 3, lambda u: lax.psum(u, "d"), lambda u: u,
                        block)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    with pytest.raises(ValueError, match=r"cond's choice of branch differs between devices "
                                         r"\(branch 0 on devices \[0, 1, 2, 3\]; branch 1 on "
                                         r"devices \[4, 5, 6, 7\]\)\. Its loop body or "
                                         r"branches run psum"):
        f(np.ones(16, np.float32))


def test_devices_may_differ_in_a_loop_without_collectives(mesh):
    """Without a collective inside, each device runs its own compiled loop."""
    def body(block):
        n = lax.axis_index("d")
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                              (0, block))[1]

    f = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    np.testing.assert_allclose(np.asarray(f(np.ones(16, np.float32))),
                               np.repeat(2.0 ** np.arange(8), 2))


# ------------------------------------------------------------------------------------------
# Reverse mode through loops over sharded values
# ------------------------------------------------------------------------------------------

# Functions of (v, w, s): v sharded, w and s replicated. Each gradient is one device's, and
# each is laid out as its argument.
LOSSES = {
    "fori": lambda v, w, s: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) * 1.5, v).sum(),
    "fori, a matmul by a replicated weight": lambda v, w, s: (
        lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ w), v) ** 2).sum(),
    "fori, an elementwise replicated constant": lambda v, w, s: lax.fori_loop(
        0, 3, lambda i, c: jnp.sin(c * s), v).sum(),
    "fori, a collective in the body": lambda v, w, s: (
        lax.fori_loop(0, 3, lambda i, c: c - c.mean() * 0.5, v) ** 2).sum(),
    "scan, xs replicated": lambda v, w, s: (
        lax.scan(lambda c, r: (jnp.tanh(c * r), c.sum()), v, jnp.stack([s, s * 2]))[0] ** 2
    ).sum(),
    "scan, xs split along a kept dim, ys summed": lambda v, w, s: lax.scan(
        lambda c, r: (jnp.tanh(c + r), (c * r).sum()), v[:, 0] * 0, v.T)[1].sum(),
    "cond": lambda v, w, s: lax.cond(v.sum() > 0, lambda u: u * s, jnp.sin, v).sum(),
    # a replicated carry whose cotangent arrives split (the output times a sharded value)
    "fori over a replicated carry": lambda v, w, s: (
        lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) * 1.5 + c.mean(), s) * v).sum(),
    "scan over a replicated carry, ys times a sharded value": lambda v, w, s: (
        lax.scan(lambda c, r: (c * r, jnp.sin(c)), s, jnp.stack([s, s]))[1] * v).sum(),
}


@pytest.mark.parametrize("name", LOSSES)
def test_gradients_through_loops_over_sharded_values_equal_one_devices(mesh, name):
    loss = LOSSES[name]
    x = put(F, mesh, "d")
    expected = jax.grad(loss, argnums=(0, 1, 2))(F, W, S)
    for grad in (jax.grad(loss, argnums=(0, 1, 2)),
                 jax.jit(jax.grad(loss, argnums=(0, 1, 2)), backend="interpreter")):
        got = grad(x, W, S)
        for g, e, arg in zip(got, expected, (x, W, S)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-5)
            assert str(jax.typeof(g)) == str(jax.typeof(arg))


def test_gradients_through_a_sharded_loop_agree_with_finite_differences(mesh):
    x = put(F * 0.5, mesh, "d")

    def loss(v):
        return (lax.fori_loop(0, 2, lambda i, c: jnp.tanh(c - c.mean(0) * 0.5), v) ** 2).sum()

    check_grads(jax.jit(loss, backend="interpreter"), (x,), order=1, modes=["rev"])


def test_a_reductions_cotangent_is_laid_out_as_its_operand(mesh):
    """The transpose of a sum broadcasts the cotangent back with the operand's sharding
    (broadcast_in_dim's out_sharding), so the backward loop's carry keeps its layout."""
    x = put(F, mesh, "d")
    text = str(jax.make_jaxpr(jax.grad(lambda v: v.sum()))(x))
    assert "sharding=NamedSharding" in text and "f32[8@d,16] = broadcast_in_dim" in text
    eager = lax.broadcast_in_dim(np.float32(1.0), (8, 16), (),
                                 out_sharding=NamedSharding(mesh, P("d")))
    assert str(jax.typeof(eager)) == "float32[8@d,16]"


# ------------------------------------------------------------------------------------------
# vmap of loops over sharded values
# ------------------------------------------------------------------------------------------

VMAPPED_LOOPS = [
    ("fori", lambda v, w: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ w) + v, v)),
    ("scan", lambda v, w: lax.scan(lambda c, x: (c * 0.5 + x, jnp.sum(c * x)), v, w)),
    ("cond", lambda v, w: lax.cond(w[0, 0] > 0, lambda u: u @ w, lambda u: u - 1.0, v)),
    ("while", lambda v, w: lax.while_loop(lambda c: c[1] < 3,
                                          lambda c: (c[0] * 0.5 + v, c[1] + 1), (v, 0))[0]),
]


@pytest.mark.parametrize("name, loop", VMAPPED_LOOPS, ids=[n for n, _ in VMAPPED_LOOPS])
@pytest.mark.parametrize("spec", [("d", None), (None, "d")], ids=["batch_split", "dim_split"])
def test_vmap_of_loops_over_sharded_values_equals_unsharded(mesh, name, loop, spec):
    """The batched body keeps its operands' layouts (a carry split over the mesh stays
    split), so the carry's type does not change between steps."""
    x = rng.standard_normal((8, 8, 16)).astype(np.float32)
    batched = jax.vmap(loop, in_axes=(0, None))
    assert_sharded_equals_unsharded(batched, [x, W],
                                    [put(x, mesh, *spec), put(W, mesh)])
