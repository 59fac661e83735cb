"""vmap of structured control flow equals a loop over the examples: ``cond`` with the
predicate batched or not, ``switch``, ``while_loop`` with a batched predicate (each member
stops on its own) or a batched carry, ``fori_loop`` and ``scan`` with batched constants,
carries and xs; under ``jit`` and ``grad`` too; and each stays one primitive."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stage3_vmap as jax
from stage3_vmap import lax
from stage3_vmap import numpy as jnp

laws = settings(max_examples=10, deadline=None, derandomize=True)


def loop_of(f, *batches):
    """What vmap(f) must equal: f on each example, stacked."""
    outs = [f(*[b[i] for b in batches]) for i in range(len(batches[0]))]
    return jax.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *outs)


def assert_vmap_is_a_loop(f, *batches, rtol=1e-5):
    want = loop_of(f, *batches)
    for mapped in (jax.vmap(f), jax.jit(jax.vmap(f))):
        got = mapped(*batches)
        for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=1e-6)


def primitives_of(f, *args):
    return [eqn.primitive.name for eqn in jax.make_jaxpr(f)(*args).jaxpr.eqns]


@laws
@given(seed=st.integers(0, 2**31 - 1))
def test_cond_with_a_batched_predicate_selects_per_member(seed):
    x = np.random.default_rng(seed).standard_normal((6, 3)).astype(np.float32)

    def f(v):
        return lax.cond(v.sum() > 0, lambda u: (jnp.sin(u), u.max()),
                        lambda u: (u * 2.0, u.min()), v)
    assert_vmap_is_a_loop(f, x)
    assert "select_n" in primitives_of(jax.vmap(f), x)


def test_cond_with_an_unbatched_predicate_stays_a_cond():
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)

    def f(v, flag):
        return lax.cond(flag, lambda u: u * 2.0, lambda u: u - 1.0, v)
    for flag in (True, False):
        got = jax.vmap(f, in_axes=(0, None))(x, flag)
        np.testing.assert_allclose(np.asarray(got), np.stack([f(r, flag) for r in x]))
    names = primitives_of(jax.vmap(f, in_axes=(0, None)), x, True)
    assert "cond" in names and "select_n" not in names


@pytest.mark.task2_11
def test_each_member_takes_its_own_branch_and_an_unbatched_result_is_broadcast():
    x = np.array([[0.5, -1.0], [-2.0, 3.0], [1.5, 0.25], [-0.5, 2.0]], np.float32)
    offset = np.float32(0.5)  # a constant of both branches

    def f(v):  # two results; the second branch ignores v for its first
        return lax.cond(v[0] > 0, lambda u: (jnp.sin(u) + offset, u * 2.0),
                        lambda u: (jnp.full(2, offset), -u), v)
    assert_vmap_is_a_loop(f, x)
    names = primitives_of(jax.vmap(f), x)
    assert "select_n" in names and "cond" not in names


@pytest.mark.task2_11
def test_switch_with_batched_index():
    index = np.array([0, 2, 1, 5, -1], np.int32)
    x = np.linspace(-1, 1, 5).astype(np.float32)
    assert_vmap_is_a_loop(lambda i, v: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], v), index, x)


def test_while_loop_members_stop_on_their_own():
    start = np.array([1.0, 3.0, 11.0, 0.5], np.float32)

    def f(x):
        return lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2.0, c[1] + 1), (x, 0))
    assert_vmap_is_a_loop(f, start)
    assert primitives_of(jax.vmap(f), start).count("while") == 1


def test_while_loop_with_an_unbatched_predicate_and_a_batched_carry():
    x = np.arange(4.0, dtype=np.float32)

    def f(v):  # the trip count does not depend on v: the predicate stays unbatched
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 0.5 + v), (0, v))
    assert_vmap_is_a_loop(f, x)


def test_scan_and_fori_loop_with_batched_consts_carries_and_xs():
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((3, 5, 2)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2)).astype(np.float32)

    def rnn(w, xs):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x), h.sum()), jnp.zeros(2), xs)
    assert_vmap_is_a_loop(rnn, w, xs)
    assert_vmap_is_a_loop(lambda w: rnn(w, xs[0]), w)  # only the constant batched
    assert_vmap_is_a_loop(lambda xs: rnn(w[0], xs), xs)  # only the xs batched
    assert_vmap_is_a_loop(lambda a: lax.fori_loop(0, 4, lambda i, v: v * a + i, 1.0),
                          np.array([0.5, 1.0, 2.0], np.float32))
    assert primitives_of(jax.vmap(rnn), w, xs).count("scan") == 1


def test_vmap_of_grad_through_scan_and_grad_of_vmap():
    xs = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)

    def loss(a, x):
        return lax.scan(lambda c, v: (c * a + v, c), 0.0, x)[0]
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0))(0.7, xs)
    want = np.array([float(jax.grad(loss)(0.7, x)) for x in xs])
    np.testing.assert_allclose(np.asarray(per_example), want, rtol=1e-5)
    total = jax.grad(lambda a: jax.vmap(lambda x: loss(a, x))(xs).sum())(0.7)
    np.testing.assert_allclose(float(total), want.sum(), rtol=1e-5)


@pytest.mark.task2_10
def test_map_under_vmap_is_a_loop_and_one_scan():
    xs = np.arange(12.0, dtype=np.float32).reshape(3, 2, 2)
    assert_vmap_is_a_loop(lambda x: lax.map(lambda v: jnp.sin(v) * 2.0 + v, x), xs)
    assert primitives_of(jax.vmap(lambda x: lax.map(jnp.sin, x)), xs).count("scan") == 1


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_ys_come_out_batched(reverse):
    xs = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    assert_vmap_is_a_loop(lambda x: lax.scan(lambda c, v: (c + v, c * v), 0.0, x,
                                             reverse=reverse), xs)
