"""Modules JAX programs import by name, and the mesh they build by hand, against JAX 0.10.2:
``import jax.lax.linalg``, ``jax.dtypes``, ``jax.custom_derivatives``, ``jax.stages`` and
``jax.experimental.mesh_utils``, ``jax.example_libraries.optimizers`` and ``stax`` (an
``ImportError`` under the import swap before), and
``jax.sharding.Mesh(devices, names)``, whose axes are ``Auto`` unless told (they were
``Explicit`` here, which puts shardings into types where JAX's program has none)."""

import importlib

import numpy as np
import pytest

import stage4_sharding as ours

jax = pytest.importorskip("jax")  # with 8 CPU devices (conftest.py)

MODULES = {
    "lax.linalg": ["cholesky", "qr", "svd", "eigh", "triangular_solve"],
    "dtypes": ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
               "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
               "scalar_type_of"],
    "custom_derivatives": ["custom_jvp", "custom_vjp", "custom_gradient", "closure_convert"],
    "stages": ["Traced", "Lowered", "Compiled", "Wrapped"],
    "experimental.mesh_utils": ["create_device_mesh"],
    "experimental.ode": ["odeint"],
    "image": ["resize", "scale_and_translate", "ResizeMethod"],
    "profiler": ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation",
                 "annotate_function", "device_memory_profile", "save_device_memory_profile",
                 "start_server", "start_trace", "stop_server", "stop_trace", "trace"],
    "scipy.sparse.linalg": ["cg", "bicgstab", "gmres"],
    "scipy.sparse": ["linalg"],
    "custom_batching": ["custom_vmap", "sequential_vmap"],
    "scipy.signal": ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve",
                     "stft", "istft", "welch", "csd", "detrend"],
    "scipy.ndimage": ["map_coordinates"],
    "scipy.interpolate": ["RegularGridInterpolator"],
    "scipy.optimize": ["minimize", "OptimizeResults"],
    "example_libraries.optimizers": [
        "JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "clip_grads",
        "constant", "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule",
        "momentum", "nesterov", "optimizer", "pack_optimizer_state", "piecewise_constant",
        "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
        "unpack_optimizer_state"],
    "example_libraries.stax": [
        "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
        "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
        "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu",
        "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "elu",
        "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax",
        "normal", "ones", "parallel", "randn", "relu", "selu", "serial", "shape_dependent",
        "sigmoid", "softmax", "softplus", "standardize", "zeros"],
}


@pytest.mark.parametrize("name", list(MODULES))
def test_module_imports_by_name_as_in_jax(name):
    theirs = importlib.import_module(f"jax.{name}")
    mine = importlib.import_module(f"stage4_sharding.{name}")
    for attribute in MODULES[name]:
        assert hasattr(theirs, attribute) and hasattr(mine, attribute), attribute


def test_a_mesh_built_by_hand_has_auto_axes_and_make_mesh_explicit_ones():
    from jax.experimental import mesh_utils as their_utils
    from stage4_sharding.experimental import mesh_utils
    for lib, utils in ((jax, their_utils), (ours, mesh_utils)):
        grid = utils.create_device_mesh((4, 2))
        assert grid.shape == (4, 2)
        assert [d.id for d in grid.flat] == list(range(8))
        assert str(lib.sharding.Mesh(grid, ("a", "b"))) == \
            "Mesh('a': 4, 'b': 2, axis_types=(Auto, Auto))"
        assert str(lib.make_mesh((4, 2), ("a", "b"))) == \
            "Mesh('a': 4, 'b': 2, axis_types=(Explicit, Explicit))"
        with pytest.raises(ValueError, match="must equal the product"):
            utils.create_device_mesh((3, 2))
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    outs = []
    for lib, utils in ((jax, their_utils), (ours, mesh_utils)):
        mesh = lib.sharding.Mesh(utils.create_device_mesh((8,)), ("d",))
        split = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("d"))
        y = lib.jit(lambda v: (v * 2).sum(axis=0), in_shardings=split)(x)
        outs.append((str(lib.typeof(y)), np.asarray(y).tolist()))
    assert outs[0] == outs[1]


def test_dtypes_names_answer_as_jax():
    def answers(lib):
        jnp, dtypes = lib.numpy, lib.dtypes
        key = lib.random.key(0)
        return [jnp.issubdtype(key.dtype, dtypes.prng_key),
                jnp.issubdtype(key.dtype, dtypes.extended),
                jnp.issubdtype(key.dtype, jnp.floating),
                jnp.issubdtype(jnp.float32, dtypes.prng_key),
                jnp.issubdtype(dtypes.prng_key, dtypes.extended),
                dtypes.issubdtype(np.int8, np.integer),
                str(dtypes.result_type(np.int8, 1.0)), str(jnp.result_type(np.int8, np.float16)),
                str(jnp.result_type(np.dtype("int16"), 1)),
                dtypes.scalar_type_of(1.0), dtypes.scalar_type_of(jnp.ones(2, "int8")),
                dtypes.itemsize_bits("float32"), dtypes.itemsize_bits(bool),
                float(dtypes.finfo(np.float32).eps), int(dtypes.iinfo(np.int8).max)]
    assert answers(ours) == answers(jax)
