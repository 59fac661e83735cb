"""The differential suite's set-up: JAX on 8 CPU devices (stage 4's meshes of 8 and 4x2
devices need them in JAX too), XLA compiling without its slow LLVM optimizations
(``oracle.prepare_jax``). Both must be chosen before JAX starts its CPU backend, so pytest
does it here, while collecting, before any test (of any folder) runs. Without JAX each test
module skips itself.
"""

from oracle import prepare_jax

prepare_jax()
