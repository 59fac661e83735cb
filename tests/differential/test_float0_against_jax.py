"""float0 values (the tangents and gradients of integers, zeros with no values) through jit,
vmap and linearize, as JAX 0.10.2 passes them: in and out of a jitted function, mapped and
unmapped through vmap, and the compositions that make them (vmap of jvp with an integer or
boolean result, vmap of grad with allow_int, the linear function of such a result)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as sj  # noqa: E402

X = np.arange(6.0, dtype=np.float32).reshape(3, 2) - 2.5
N = np.arange(6, dtype=np.int32).reshape(3, 2)
T = np.linspace(-1, 1, 2, dtype=np.float32)


def f0(*shape: int) -> np.ndarray:
    return np.zeros(shape, jax.dtypes.float0)


CASES = {
    "vmap of jvp, a boolean result": lambda L: L.vmap(
        lambda b: L.jvp(lambda y: y > 0, (b,), (T,)))(X),
    "vmap of jvp, out_axes=1": lambda L: L.vmap(
        lambda b: L.jvp(lambda y: y > 0, (b,), (T,)), out_axes=1)(X),
    "vmap of jvp, an integer argmax": lambda L: L.vmap(
        lambda b: L.jvp(lambda y: (y * 2, L.numpy.argmax(y)), (b,), (T,)))(X),
    "vmap of grad, allow_int": lambda L: L.vmap(L.grad(
        lambda a, i: a * i, argnums=(0, 1), allow_int=True))(X[:, 0], N[:, 0]),
    "jit of vmap of grad, allow_int": lambda L: L.jit(L.vmap(L.grad(
        lambda a, i: a * i, argnums=(0, 1), allow_int=True)))(X[:, 0], N[:, 0]),
    "jit of jvp, a float0 tangent in": lambda L: L.jit(
        lambda i, ti: L.jvp(lambda k: k * 2, (i,), (ti,)))(N, f0(3, 2)),
    "vmap of jvp, a float0 tangent mapped": lambda L: L.vmap(
        lambda i, ti: L.jvp(lambda k: k * 2, (i,), (ti,)), in_axes=(1, 1))(N, f0(3, 2)),
    "vmap, a float0 argument passed through": lambda L: L.vmap(
        lambda a, ti: (a, ti))(X[:, 0], f0(3, 4)),
    "linearize, a boolean result": lambda L: L.linearize(
        lambda y: (y * 2, y > 0), X[0])[1](T),
    "jit, a float0 argument passed through": lambda L: L.jit(lambda ti: ti)(f0(3)),
    "jit, a float0 argument in a pytree": lambda L: L.jit(
        lambda d: (d["x"] * 2, d["t"]))({"x": X, "t": f0(2)}),
}


def _types(tree, tree_leaves) -> list[tuple[str, tuple[int, ...]]]:
    return [(str(np.asarray(x).dtype), tuple(np.shape(x))) for x in tree_leaves(tree)]


@pytest.mark.parametrize("name", list(CASES))
def test_float0_values_pass_through_jit_and_vmap_as_in_jax(name: str) -> None:
    ours, theirs = CASES[name](sj), CASES[name](jax)
    assert _types(ours, sj.tree_util.tree_leaves) == _types(theirs, jax.tree_util.tree_leaves)
    for o, t in zip(sj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        if np.asarray(t).dtype != jax.dtypes.float0:
            np.testing.assert_allclose(np.asarray(o), np.asarray(t))


def test_a_jitted_function_with_a_float0_argument_is_cached_by_its_shape() -> None:
    traced = []

    @sj.jit
    def f(x, t):
        traced.append(np.shape(t))
        return x + 1.0, t

    for shape in [(3,), (3,), (4,)]:
        _, t = f(X, f0(*shape))
        assert t.dtype == jax.dtypes.float0 and t.shape == shape
    assert traced == [(3,), (4,)]


def test_vmap_reports_a_float0_argument_of_the_wrong_size_by_its_type() -> None:
    with pytest.raises(ValueError, match=r"float0\[2,4\] is mapped along axis 1, of size 4"):
        sj.vmap(lambda i, t: (i, t), in_axes=(0, 1))(N, f0(2, 4))
