"""``jnp.add`` and JAX's thirteen other ufunc objects (stage1_autodiff/numpy/jax_ufuncs.py):
their methods' values, dtypes and identities against JAX's, under jit and grad too."""

import numpy as np
import pytest

pytest.importorskip("jax")
import jax  # noqa: E402
import jax.numpy as jjnp  # noqa: E402
import stage4_sharding.numpy as ojnp  # noqa: E402

import stage4_sharding as oj  # noqa: E402

NAMES = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
         "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
         "negative", "subtract"]
X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
B = np.array([True, False, True])
I = np.array([7, 3, 5], np.int32)  # noqa: E741
CASES = [
    "m.add.reduce(x)", "m.add.reduce(x, axis=1)", "m.add.reduce(x, axis=None, keepdims=True)",
    "m.add.reduce(x, dtype=m.int32)", "m.multiply.reduce(x + 3, axis=1)",
    "m.maximum.reduce(x, axis=1)", "m.minimum.reduce(x)", "m.subtract.reduce(x, axis=1)",
    "m.logaddexp.reduce(x, axis=1)", "m.logical_and.reduce(b)", "m.logical_or.reduce(b)",
    "m.logical_or.reduce(b, initial=True)", "m.logical_xor.reduce(b)",
    "m.bitwise_and.reduce(i)", "m.bitwise_or.reduce(i)", "m.add.accumulate(x, axis=1)",
    "m.multiply.accumulate(x + 3)", "m.add.at(x, (m.array([0, 0]), m.array([1, 1])), 5.0, "
    "inplace=False)", "m.maximum.at(x, 0, 4.0, inplace=False)", "m.minimum.at(x, 1, -9.0, "
    "inplace=False)", "m.multiply.at(x, m.array([1, 1]), 2.0, inplace=False)",
    "m.multiply.outer(x[0], x[1])", "m.subtract.outer(x[0], x[1])", "m.add(x, 1)",
    "m.negative(x)", "m.add.reduceat(x, m.array([0, 2]), axis=1)",
]


@pytest.mark.parametrize("code", CASES)
def test_a_method_equals_jax(code):
    ours = eval(code, {"m": ojnp, "x": X, "b": B, "i": I})
    theirs = eval(code, {"m": jjnp, "x": X, "b": B, "i": I})
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_each_is_a_ufunc_with_jax_s_arity_and_identity(name):
    ours, theirs = getattr(ojnp, name), getattr(jjnp, name)
    assert isinstance(ours, ojnp.ufunc)
    assert (ours.nin, ours.nout, ours.identity) == (theirs.nin, theirs.nout, theirs.identity)
    assert ours.__name__ == theirs.__name__ == name


def test_methods_compose_with_jit_and_grad():
    f = lambda x: ojnp.multiply.reduce(x, axis=1).sum() + ojnp.add.at(  # noqa: E731
        x, 0, 1.0, inplace=False).sum()
    g = lambda x: jjnp.multiply.reduce(x, axis=1).sum() + jjnp.add.at(  # noqa: E731
        x, 0, 1.0, inplace=False).sum()
    np.testing.assert_allclose(oj.jit(f)(X + 3), jax.jit(g)(X + 3), rtol=1e-6)
    np.testing.assert_allclose(oj.grad(f)(X + 3), jax.grad(g)(X + 3), rtol=1e-6)


def test_in_place_at_is_refused_as_in_jax():
    with pytest.raises(NotImplementedError, match="inplace=False"):
        ojnp.add.at(X, 0, 1.0)
