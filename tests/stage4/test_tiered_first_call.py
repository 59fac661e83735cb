"""A sharded program's first call: its per-device segments are admitted to tiered execution
(``stage2_jit/tiers.py``), so the first call runs them on the interpreter while their kernels
compile, with the kernels' bits."""

import numpy as np
import pytest
from stage1_autodiff.config import config
from stage4_sharding.runtime import spmd_executable
from stage4_sharding.sharding import AxisType, P, set_mesh

import stage4_sharding as jax
from stage2_jit import tiers
from stage4_sharding import numpy as jnp


@pytest.fixture
def tiered():
    config.update("jax_from_numpy_tiered", True)
    yield
    tiers.wait()
    config.update("jax_from_numpy_tiered", False)


def loss_fn(params, batch):
    """The tour's stage-4 loss: an MLP's cross-entropy (log_softmax over 4 classes)."""
    inputs, targets = batch
    x = inputs
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    log_probs = jax.nn.log_softmax(x @ w + b)
    return -jnp.mean(jnp.sum(log_probs * targets, axis=1))


def test_the_sharded_gradient_step_is_admitted_and_its_first_call_has_the_kernels_bits(tiered):
    rng = np.random.default_rng(0)
    sizes = [2, 64, 64, 4]
    params = [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
               rng.standard_normal(n).astype(np.float32) / 10)
              for m, n in zip(sizes[:-1], sizes[1:])]
    inputs = rng.standard_normal((256, 2)).astype(np.float32)
    targets = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 256)]
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with set_mesh(mesh):
        batch = jax.device_put((inputs, targets), P("data"))
        step = jax.jit(jax.grad(loss_fn))
        partitioned = step.lower(params, batch).compile().partitioned
        executable = spmd_executable(partitioned.local, partitioned.mesh, "cpu")
        segments = list(executable.scheduled(executable.local)[1].values())
        assert segments and all(isinstance(s, tiers.Tiered) for s in segments)
        first = step(params, batch)  # the interpreter, while the kernels compile
        tiers.wait()
        assert all(s.ready for s in segments)
        later = step(params, batch)  # the kernels
    for a, b in zip(jax.tree_leaves(first), jax.tree_leaves(later)):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))
