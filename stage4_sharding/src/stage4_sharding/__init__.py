"""Stage 4 of JAX from NumPy: simulated devices, meshes, ``PartitionSpec``, sharded arrays,
sharding in types, the SPMD partitioner and its runtime, ``shard_map``, and a communication
cost model. Everything of stage 3 is re-exported.

Use it as JAX:

    >>> import stage4_sharding as jax
    >>> len(jax.devices())
    8
"""

import sys as _sys

from stage3_vmap import (  # noqa: F401
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
    custom_batching,
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
    device_get,
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
    hessian,
    image,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    log_compiles,
    make_jaxpr,
    named_call,
    named_scope,
    numpy_dtype_promotion,
    numpy_rank_promotion,
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
    vmap,
)

from . import (  # noqa: F401
    control_flow_sharding,  # the rules of cond, while and scan
    debug,
    distributed,  # several processes, one program: jax.distributed.initialize()
    errors,
    experimental,
    lax,
    nn,
    numpy,
    ops,
    random,
    scipy,
    sharded_types,  # puts shardings into traced types
    sharding,
    test_util,
    tree,
    tree_util,
    typing,
)
from .arrays import (  # noqa: F401
    device_put,
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
    typeof,
    visualize_array_sharding,
)
from .cost_model import record_collectives  # noqa: F401
from .distributed import (  # noqa: F401
    print_environment_info,
    process_count,
    process_index,
    process_indices,
)
from .jit import jit  # noqa: F401
from .mesh import (  # noqa: F401
    AxisType,
    Mesh,
    device_count,
    devices,
    local_device_count,
    local_devices,
    make_mesh,
    set_mesh,
)
from .named_sharding import NamedSharding, P  # noqa: F401
from .pmap import pmap  # noqa: F401
from .reshard import reshard  # noqa: F401
from .shard_map import shard_map  # noqa: F401

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
