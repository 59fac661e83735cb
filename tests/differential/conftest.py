"""The differential suite's set-up: JAX on 8 CPU devices (stage 4's meshes of 8 and 4x2
devices need them in JAX too), XLA compiling without its slow LLVM optimizations
(``oracle.prepare_jax``). Both must be chosen before JAX starts its CPU backend, so pytest
does it here, while collecting, before any test (of any folder) runs. Without JAX each test
module skips itself.
"""

import pytest
from oracle import prepare_jax

prepare_jax()


@pytest.fixture
def x64_both():
    """jax_enable_x64 on in both libraries for one test, then back as it was."""
    import jax

    import stage4_sharding as ours

    previous = (ours.config.jax_enable_x64, jax.config.jax_enable_x64)
    ours.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    yield
    ours.config.update("jax_enable_x64", previous[0])
    jax.config.update("jax_enable_x64", previous[1])
