"""Empty arrays against JAX 0.10.2, eagerly and under ``jit``, from a probe of 40 calls on
arrays with a zero-size dim. It found: reading an empty array by index arrays (``x[i]``,
``take``, ``take_along_axis``, ``diagonal``, ``trace``, ``repeat``), and so ``det``, ``inv``,
``slogdet`` and ``solve`` of a 0x0 matrix, ran eagerly but were refused under ``jit`` (a
gather's slice of an empty dim does not fit; JAX reads nothing); an update of no elements
(``x.at[empty].set``) likewise; ``unique(size=2, fill_value=...)`` of nothing returned nothing
instead of the fill value twice; and ``logsumexp`` of nothing raised where JAX gives -inf."""

import numpy as np
import pytest
from oracle import assert_call_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

E = np.zeros((0, 0), np.float32)
E3 = np.zeros((0, 3), np.float32)
NOTHING = np.zeros(0, np.float32)


def _cases(jax):
    jnp, la = jax.numpy, jax.numpy.linalg
    none = jnp.zeros(0, jnp.int32)
    return {
        "diagonal of 0x0": (jnp.diagonal, E),
        "diagonal of 0x3": (jnp.diagonal, E3),
        "trace of 0x0": (jnp.trace, E),
        "index arrays into 0x0": (lambda x: x[none, none], E),
        "an index array into an empty dim": (lambda x: x[none], E3),
        "take": (lambda x: jnp.take(x, none, axis=0), E3),
        "take_along_axis": (lambda x: jnp.take_along_axis(x, jnp.zeros((0, 3), jnp.int32),
                                                          axis=0), E3),
        "diag_indices(0)": (lambda x: x[jnp.diag_indices(0)], E),
        "repeat to nothing": (lambda x: jnp.repeat(x, 2, axis=0, total_repeat_length=0), E3),
        "at[].set of nothing": (lambda x: jnp.asarray(x).at[none].set(1.0), E3),
        "at[].add of nothing": (lambda x: jnp.asarray(x).at[none, 1].add(1.0), E3),
        "grad of an empty read": (jax.grad(lambda x: x[none].sum()), E3),
        "det of 0x0": (la.det, E),
        "slogdet of 0x0": (la.slogdet, E),
        "inv of 0x0": (la.inv, E),
        "solve of 0x0": (la.solve, E, NOTHING),
        "unique of nothing, size 2": (lambda x: jnp.unique(x, size=2, fill_value=7.0), NOTHING),
        "unique of no rows, size 2": (lambda x: jnp.unique(x, axis=0, size=2, fill_value=7.0,
                                                           return_index=True), E3),
        "unique counts of nothing": (lambda x: jnp.unique(
            x, size=2, fill_value=0.0, return_inverse=True, return_counts=True), NOTHING),
        "logsumexp of nothing": (jax.scipy.special.logsumexp, NOTHING),
        "logsumexp of no rows": (lambda x: jax.scipy.special.logsumexp(x, axis=0), E3),
        "softmax of no rows": (jax.nn.softmax, E3),
        "cumsum, sort, argsort": (lambda x: (jnp.cumsum(x), jnp.sort(x), jnp.argsort(x)), E3),
        "matmul and einsum": (lambda x: (x @ jnp.ones((3, 2)), jnp.einsum("ij,jk->ik", x,
                                                                          jnp.ones((3, 2)))),
                              E3),
        "histogram and bincount": (lambda x: (jnp.histogram(x, bins=3, range=(0, 1)),
                                              jnp.bincount(none, length=3)), NOTHING),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    assert_call_as_jax(_cases, name, how)


@pytest.mark.parametrize("shape, dtype, weak", [((0,), "float32", False), ((2, 0), "int32", False),
                                                ((0, 3), "float32", True)])
def test_repr_names_the_shape_as_jax(shape, dtype, weak):
    """An empty array's data shows nothing, so its repr names its shape, as JAX's does."""
    def make(jax):
        if weak:  # a Python scalar broadcast to nothing stays weak
            return jax.numpy.broadcast_to(1.0, shape)
        return jax.numpy.zeros(shape, dtype)
    assert repr(make(ours)) == repr(make(real))


@pytest.mark.parametrize("shape", [(4, 2), (-1, 4), (-1, -1), 5])
def test_impossible_reshape_is_a_type_error_as_jax(shape):
    """The shape is part of an array's type: JAX refuses an impossible one with a TypeError."""
    with pytest.raises(TypeError):
        real.numpy.reshape(real.numpy.arange(6), shape)
    with pytest.raises(TypeError, match="reshape"):
        ours.numpy.reshape(ours.numpy.arange(6), shape)


@pytest.mark.parametrize("value", [None, [None], [1.0, None]])
def test_none_is_a_value_error_as_jax(value):
    with pytest.raises(ValueError):
        real.numpy.array(value)
    with pytest.raises(ValueError, match="None is not an array value"):
        ours.numpy.array(value)
    with pytest.raises(TypeError):  # as an operand it is a type JAX does not take
        ours.numpy.add(ours.numpy.zeros(2), None)
