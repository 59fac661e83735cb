"""``jax.custom_batching`` against JAX 0.10.2 (an ``AttributeError`` under the import swap
before): a ``custom_vmap`` function is itself outside ``vmap`` and its rule inside, called
with the same axis size and batched flags as JAX calls it (a rule that adds 100 shows which
ran), under ``jit``, ``grad`` and ``jvp`` of the ``vmap`` and nested ``vmap``;
``sequential_vmap``; the misuses raising JAX's classes."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

X3 = np.arange(3, dtype=np.float32)
X23 = np.arange(6, dtype=np.float32).reshape(2, 3)


def _make(j):
    """``f`` and the list of its rule's calls, written with library ``j``."""
    jnp, calls = j.numpy, []

    @j.custom_batching.custom_vmap
    def f(x, y):
        return {"a": jnp.sin(x) * y, "b": x}

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, in_batched))
        return {"a": jnp.sin(x) * y + 100.0, "b": x}, {"a": True, "b": in_batched[0]}
    return f, calls


CASES = {
    "called": lambda j, f: f(1.0, 2.0),
    "called_by_keyword": lambda j, f: f(x=1.0, y=2.0),
    "vmap": lambda j, f: j.vmap(f)(X3, X3),
    "vmap_of_one_argument": lambda j, f: j.vmap(f, in_axes=(None, 0))(1.0, X3),
    "vmap_over_axis_1": lambda j, f: j.vmap(f, in_axes=(1, None), out_axes=1)(X23, 2.0),
    "jit_of_vmap": lambda j, f: j.jit(j.vmap(f))(X3, X3),
    "vmap_of_vmap": lambda j, f: j.vmap(j.vmap(f))(X23, X23),
    "grad_of_vmap": lambda j, f: j.grad(lambda v: j.vmap(f)(v, v)["a"].sum())(X3),
    "jvp_of_vmap": lambda j, f: j.jvp(lambda v: j.vmap(f)(v, v)["a"], (X3,), (X3,)),
    "jvp": lambda j, f: j.jvp(lambda v: f(v, v)["a"], (1.0,), (1.0,)),
    "sequential_vmap": lambda j, f: j.vmap(j.custom_batching.sequential_vmap(
        lambda a, b: a * b + j.numpy.sum(b)), in_axes=(0, None))(X3, X3),
    "sequential_vmap_under_jit": lambda j, f: j.jit(j.vmap(
        j.custom_batching.sequential_vmap(j.numpy.cos)))(X23),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_custom_vmap_as_jax(name):
    (f, ours_calls), (g, their_calls) = _make(oj), _make(jax)
    ours, theirs = CASES[name](oj, f), CASES[name](jax, g)
    assert ours_calls == their_calls  # the rule ran as often, with the same arguments
    leaves, expected = oj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(leaves) == len(expected)
    for o, t in zip(leaves, expected):
        assert np.shape(o) == np.shape(t)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)


def test_a_rule_is_returned_by_def_vmap_and_the_function_keeps_its_name():
    for j in (oj, jax):
        f, _ = _make(j)
        assert f.__name__ == "f" and f.vmap_rule.__name__ == "rule"


MISUSES = {
    "no_rule": lambda j: j.vmap(j.custom_batching.custom_vmap(lambda v: v))(X3),
    "out_batched_of_another_structure": lambda j: j.vmap(_with_rule(
        j, lambda n, b, x: (x, (True,))))(X3),
}


def _with_rule(j, rule):
    f = j.custom_batching.custom_vmap(lambda x: x)
    f.def_vmap(rule)
    return f


@pytest.mark.parametrize("name", sorted(MISUSES))
def test_misuse_raises_as_jax(name):
    with pytest.raises(Exception) as theirs:
        MISUSES[name](jax)
    with pytest.raises(theirs.type):
        MISUSES[name](oj)
