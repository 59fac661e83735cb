"""Stage 2 of JAX from NumPy: tracing to jaxprs, ``jit`` with caching, compiler passes and fused
Numba kernels on the CPU. Everything of stage 1 is re-exported.

Use it as JAX:

    >>> import stage2_jit as jax
    >>> import stage2_jit.numpy as jnp
    >>> print(jax.jit(jax.grad(jnp.tanh))(1.0))
    0.41997433
"""

from stage1_autodiff import (
    Array,
    ConcretizationTypeError,
    TracerArrayConversionError,
    check_grads,
    config,
    custom_vjp,
    dtypes,
    float0,
    grad,
    jvp,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
    value_and_grad,
    vjp,
)

from . import debug, lax, nn, numpy, random, tree, tree_util
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from .jit import disable_jit, jit, make_jaxpr

__version__ = "0.1.0"
