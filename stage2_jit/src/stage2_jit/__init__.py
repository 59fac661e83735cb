"""Stage 2 of JAX from NumPy: tracing to jaxprs, ``jit`` with caching, compiler passes and fused
Numba kernels on the CPU. Everything of stage 1 is re-exported.

Use it as JAX:

    >>> import stage2_jit as jax
    >>> import stage2_jit.numpy as jnp
    >>> print(jax.jit(jax.grad(jnp.tanh))(1.0))
    0.41997433
"""

import os
import sys as _sys

# Generated kernels mix Numba's OpenMP loops with BLAS calls (np.dot). By default OpenMP's
# threads keep spinning after each loop and take the cores from BLAS's threads: on 2 cores an
# MLP step ran 4x slower. Passive waiting must be set before OpenMP starts; a user's own
# setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from stage1_autodiff import (  # noqa: E402 -- after the environment is set
    Array,
    ConcretizationTypeError,
    Device,
    Shard,
    TracerArrayConversionError,
    block_until_ready,
    check_grads,
    check_tracer_leaks,
    checking_leaks,
    config,
    copy_to_host_async,
    custom_gradient,
    custom_jvp,
    custom_vjp,
    debug_infs,
    debug_nans,
    default_device,
    default_matmul_precision,
    default_prng_impl,
    device_get,
    dtypes,
    enable_x64,
    example_libraries,
    flatten_util,
    float0,
    grad,
    image,
    jvp,
    linear_transpose,
    named_call,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    profiler,
    threefry_partitionable,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
    value_and_grad,
    vjp,
)

from . import (  # noqa: E402
    ad_checkpoint,
    custom_derivatives,
    debug,
    errors,
    experimental,
    lax,
    nn,
    numpy,
    ops,
    random,
    scipy,
    test_util,
    tree,
    tree_util,
    typing,
)
from .callback import pure_callback  # noqa: E402
from .devices import default_backend, device_put, devices  # noqa: E402
from .everyday import (  # noqa: E402
    ShapeDtypeStruct,
    clear_caches,
    closure_convert,
    device_count,
    effects_barrier,
    ensure_compile_time_eval,
    eval_shape,
    linearize,
    local_device_count,
    local_devices,
    named_scope,
    print_environment_info,
    process_count,
    process_index,
    process_indices,
)
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var  # noqa: E402
from .jit import disable_jit, jit, log_compiles, make_jaxpr  # noqa: E402
from .remat import checkpoint, checkpoint_policies, remat  # noqa: E402

__version__ = "0.1.0"

# ``import jax.dtypes`` (and the others) as well as ``from jax import dtypes``: stage 1's
# modules, by this package's names.
_sys.modules.update({f"{__name__}.{name}": module for name, module in (
    ("dtypes", dtypes), ("image", image), ("flatten_util", flatten_util), ("profiler", profiler),
    ("example_libraries", example_libraries),
    ("example_libraries.optimizers", example_libraries.optimizers),
    ("example_libraries.stax", example_libraries.stax))})
