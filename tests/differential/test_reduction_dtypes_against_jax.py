"""Reductions asked for a ``dtype`` against JAX 0.10.2, eagerly and under ``jit``, from a probe
of 130 reductions and conversions of narrow types (float16 sums, int8 and uint8 wrap-around,
booleans, float-to-int casts): all agreed but these. ``mean`` and ``nanmean`` with an integer
``dtype`` returned float32 (JAX averages in floats and rounds toward zero into the integer
type); ``sum`` and ``prod`` with ``dtype=bool`` were refused under ``jit`` (JAX reduces with or
and and)."""

import numpy as np
import pytest
from oracle import assert_call_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

HALVES = (np.arange(40) % 7 / 3).astype(np.float16)
INTS = np.arange(10, dtype=np.int32)


def _cases(jax):
    jnp = jax.numpy
    return {
        "mean of float16 as int32": (lambda x: jnp.mean(x, dtype=jnp.int32), HALVES),
        "mean of int32 as int8": (lambda x: jnp.mean(x, dtype=jnp.int8), INTS),
        "mean where, as int32": (lambda x: jnp.mean(x, dtype=jnp.int32, where=x > 1), HALVES),
        "mean along an axis, as uint8": (lambda x: jnp.mean(x.reshape(2, 5), axis=1,
                                                            dtype=jnp.uint8), INTS),
        "nanmean as int32": (lambda x: jnp.nanmean(x, dtype=jnp.int32), HALVES),
        "mean as float16": (lambda x: jnp.mean(x, dtype=jnp.float16), INTS),
        "sum as bool": (lambda x: jnp.sum(x, dtype=bool), INTS),
        "sum of zeros as bool": (lambda x: jnp.sum(x * 0, dtype=bool), INTS),
        "sum as bool along an axis, where": (lambda x: jnp.sum(
            x.reshape(2, 5), axis=1, dtype=bool, where=x.reshape(2, 5) > 6), INTS),
        "prod as bool": (lambda x: jnp.prod(x, dtype=bool), INTS),
        "prod as bool, no zero": (lambda x: jnp.prod(x + 1, dtype=bool), INTS),
        "nansum as bool": (lambda x: jnp.nansum(x, dtype=bool), INTS),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    assert_call_as_jax(_cases, name, how, rtol=1e-3)


@pytest.mark.parametrize("name, error", [("mean", TypeError), ("std", ValueError)])
def test_refused_as_jax(name, error):
    """A mean in bool and a standard deviation in integers: JAX's error classes."""
    dtype = bool if name == "mean" else np.int32
    for jax in (real, ours):
        with pytest.raises(error):
            getattr(jax.numpy, name)(INTS, dtype=dtype)
