"""Stage 3 of JAX from NumPy: ``vmap`` with batching rules for every primitive, named axes and
collectives, and Jacobians (``jacfwd``, ``jacrev``, ``hessian``). Everything of stage 2 is
re-exported.

Use it as JAX:

    >>> import stage3_vmap as jax
    >>> import stage3_vmap.numpy as jnp
    >>> jax.vmap(jnp.dot)(jnp.ones((3, 2)), jnp.ones((3, 2)))
    Array([2., 2., 2.], dtype=float32)
"""

import sys as _sys

from stage2_jit import (  # noqa: F401
    Array,
    ClosedJaxpr,
    ConcretizationTypeError,
    Device,
    Jaxpr,
    JaxprEqn,
    Literal,
    ShapeDtypeStruct,
    Shard,
    TracerArrayConversionError,
    Var,
    ad_checkpoint,
    block_until_ready,
    check_grads,
    check_tracer_leaks,
    checking_leaks,
    checkpoint,
    checkpoint_policies,
    clear_caches,
    closure_convert,
    config,
    copy_to_host_async,
    custom_derivatives,
    custom_gradient,
    custom_jvp,
    custom_vjp,
    debug_infs,
    debug_nans,
    default_backend,
    default_device,
    default_matmul_precision,
    default_prng_impl,
    device_count,
    device_get,
    device_put,
    devices,
    disable_jit,
    dtypes,
    effects_barrier,
    enable_x64,
    ensure_compile_time_eval,
    eval_shape,
    example_libraries,
    flatten_util,
    float0,
    grad,
    image,
    jit,
    jvp,
    linear_transpose,
    linearize,
    local_device_count,
    local_devices,
    log_compiles,
    make_jaxpr,
    named_call,
    named_scope,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    print_environment_info,
    process_count,
    process_index,
    process_indices,
    profiler,
    pure_callback,
    remat,
    stages,
    threefry_partitionable,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
    value_and_grad,
    vjp,
)

from . import (  # noqa: F401
    batching_rules,  # noqa: F401 -- registers the rules
    control_flow_batching,  # noqa: F401 -- and those of cond, while and scan
    custom_batching,
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
from .batching import vmap  # noqa: F401
from .jacobians import hessian, jacfwd, jacobian, jacrev  # noqa: F401

__version__ = "0.1.0"

# ``import jax.dtypes`` (and the others) as well as ``from jax import dtypes``: the modules of
# the stages before, by this package's names.
_sys.modules.update({f"{__name__}.{name}": module for name, module in (
    ("dtypes", dtypes), ("ad_checkpoint", ad_checkpoint),
    ("custom_derivatives", custom_derivatives), ("stages", stages),
    ("image", image), ("flatten_util", flatten_util), ("profiler", profiler),
    ("custom_batching", custom_batching), ("example_libraries", example_libraries),
    ("example_libraries.optimizers", example_libraries.optimizers),
    ("example_libraries.stax", example_libraries.stax))})
