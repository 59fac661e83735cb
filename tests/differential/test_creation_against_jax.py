"""Array creation against JAX 0.10.2, eagerly and under ``jit``, from a probe of 90 creation
and scalar calls. It found: ``jnp.arange`` of NumPy integer bounds took the default integer
(JAX: the bounds' type, ``arange(np.int8(5))`` is int8); and a jitted function whose output is
a ``float16`` constant (``jnp.finfo(jnp.float16).eps``) was sent to the CPU kernels, which
have no float16, and failed to compile."""

import numpy as np
import pytest
from oracle import assert_call_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")


def _cases(jax):
    jnp = jax.numpy
    return {
        "arange of an int8": (lambda: jnp.arange(np.int8(5)),),
        "arange of an int and an int16": (lambda: jnp.arange(1, np.int16(7)),),
        "arange by an int8 step": (lambda: jnp.arange(0, 10, np.int8(3)),),
        "arange from a uint8": (lambda: jnp.arange(np.uint8(3), 9),),
        "arange of a float16": (lambda: jnp.arange(np.float16(2)),),
        "arange of Python numbers": (lambda: jnp.arange(0, 1, 0.25),),
        "a float16 constant": (lambda: jnp.array(3, dtype=jnp.float16),),
        "float16's eps and int8's max": (lambda: (jnp.finfo(jnp.float16).eps,
                                                  jnp.iinfo(jnp.int8).max),),
        "a complex constant beside a float": (lambda x: (x, jnp.complex64(1j)), 1.0),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    before = ours.config.jax_from_numpy_tiered
    ours.config.update("jax_from_numpy_tiered", False)  # the kernel at the first call
    try:
        assert_call_as_jax(_cases, name, how)
    finally:
        ours.config.update("jax_from_numpy_tiered", before)  # (the suite runs without tiers)
