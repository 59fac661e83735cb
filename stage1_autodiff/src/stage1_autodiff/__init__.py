"""Stage 1 of JAX from NumPy: arrays on primitives, tape-based reverse mode, forward mode,
explicit-key PRNG and pytrees.

Use it as JAX:

    >>> import stage1_autodiff as jax
    >>> import stage1_autodiff.numpy as jnp
    >>> print(jax.grad(jnp.tanh)(1.0))
    0.41997433
"""

from . import (
    core,
    dtypes,
    errors,
    example_libraries,
    flatten_util,
    image,
    lax,
    nn,
    numpy,
    ops,
    profiler,
    random,
    scipy,
    tree,
    tree_util,
    typing,
)
from .autodiff import custom_gradient, custom_vjp, grad, jvp, value_and_grad, vjp
from .config import (
    check_tracer_leaks,
    checking_leaks,
    config,
    default_device,
    default_matmul_precision,
    default_prng_impl,
    enable_x64,
    threefry_partitionable,
)
from .core import Array, Device, Shard
from .custom_derivatives import custom_jvp
from .dtypes import float0
from .errors import ConcretizationTypeError, TracerArrayConversionError
from .linear_transpose import linear_transpose
from .numpy.promotion import numpy_dtype_promotion, numpy_rank_promotion
from .special_values import debug_infs, debug_nans
from .test_util import check_grads
from .tree_util import (
    block_until_ready,
    copy_to_host_async,
    device_get,
    named_call,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__version__ = "0.1.0"
