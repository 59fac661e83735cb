"""Three ways to train an MLP on many devices, each a few lines of sharding, and the
communication each needs at best (the cost model's analytic optimum, bytes per device):

- **data parallelism**: the batch is split, the parameters replicated. Each device computes
  the gradient of its share of the batch; one all-reduce of the gradients (2 (N-1)/N of their
  bytes per device) gives every device the full gradient.
- **FSDP** (fully sharded data parallelism, ZeRO-3): the batch is split and so is each
  parameter, along its first dim. A parameter is all-gathered where it is used, and its
  gradient reduce-scattered back to its owner: (N-1)/N of the parameters' bytes each way,
  the same total as data parallelism with 1/N of the parameter memory.
- **tensor parallelism** (Megatron-LM's MLP): the hidden layer is split over the devices;
  the first matrix by columns, the second by rows. Each device computes its slice of the
  hidden activations without communication; the second product's partial sums meet in one
  all-reduce of the block's output per block in the forward pass.

Example:
    >>> import stage4_sharding as jax
    >>> from stage4_sharding import examples
    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> step, args = examples.data_parallel(mesh, examples.SMALL)
    >>> cost = step.lower(*args).compile().cost_analysis()
    >>> cost["bytes sent"] == examples.data_parallel_optimum(mesh, examples.SMALL)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from stage1_autodiff.autodiff import grad

from . import numpy as jnp
from .arrays import device_put
from .jit import jit
from .mesh import Mesh
from .named_sharding import NamedSharding, P
from .reshard import reshard


@dataclass(frozen=True)
class MlpSizes:
    batch: int
    inputs: int
    hidden: int
    outputs: int
    blocks: int = 1  # tensor parallelism: hidden blocks, each with its own all-reduce


SMALL = MlpSizes(batch=64, inputs=32, hidden=64, outputs=16)


def init_params(sizes: MlpSizes, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def normal(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    return {"w1": normal(sizes.inputs, sizes.hidden), "b1": np.zeros(sizes.hidden, np.float32),
            "w2": normal(sizes.hidden, sizes.outputs),
            "b2": np.zeros(sizes.outputs, np.float32)}


def init_batch(sizes: MlpSizes, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((sizes.batch, sizes.inputs)).astype(np.float32),
            rng.standard_normal((sizes.batch, sizes.outputs)).astype(np.float32))


# --8<-- [start:mlp_loss]
def mlp_loss(params: dict[str, Any], batch: tuple[Any, Any]) -> Any:
    inputs, targets = batch
    hidden = jnp.tanh(inputs @ params["w1"] + params["b1"])
    predictions = hidden @ params["w2"] + params["b2"]
    return jnp.mean((predictions - targets) ** 2)
# --8<-- [end:mlp_loss]


def param_bytes(sizes: MlpSizes) -> int:
    return sum(v.nbytes for v in init_params(sizes).values())


# --8<-- [start:data_parallel]
def data_parallel(mesh: Mesh, sizes: MlpSizes) -> tuple[Any, tuple]:
    """The gradient step and its arguments: the batch split over the mesh's first axis."""
    axis = mesh.axis_names[0]
    batch = device_put(init_batch(sizes), NamedSharding(mesh, P(axis)))
    return jit(grad(mlp_loss)), (init_params(sizes), batch)


def data_parallel_optimum(mesh: Mesh, sizes: MlpSizes) -> float:
    n = mesh.shape[mesh.axis_names[0]]
    return 2 * (n - 1) / n * param_bytes(sizes)  # one all-reduce of every gradient
# --8<-- [end:data_parallel]


# --8<-- [start:fsdp]
def fsdp_loss(params: dict[str, Any], batch: tuple[Any, Any]) -> Any:
    """The same loss, each parameter gathered whole where it is used."""
    whole = {name: reshard(value, NamedSharding(value.aval.sharding.mesh, P()))
             for name, value in params.items()}
    return mlp_loss(whole, batch)


def fsdp(mesh: Mesh, sizes: MlpSizes) -> tuple[Any, tuple]:
    """Batch and parameters split over the mesh's first axis (parameters along dim 0)."""
    split = NamedSharding(mesh, P(mesh.axis_names[0]))
    params = device_put(init_params(sizes), split)
    return jit(grad(fsdp_loss)), (params, device_put(init_batch(sizes), split))


def fsdp_optimum(mesh: Mesh, sizes: MlpSizes) -> tuple[float, float]:
    """(all-gather bytes, reduce-scatter bytes) per device."""
    n = mesh.shape[mesh.axis_names[0]]
    share = (n - 1) / n * param_bytes(sizes)
    return share, share
# --8<-- [end:fsdp]


# --8<-- [start:tensor_parallel]
def tensor_parallel_forward(params: list[dict[str, Any]], x: Any) -> Any:
    """Blocks of ``x + W2 tanh(W1 x + b1) + b2``; W1 split by columns, W2 by rows: the
    hidden activations are split, and the second product's partial sums are all-reduced
    (``out_sharding=P()``)."""
    for block in params:
        hidden = jnp.tanh(x @ block["w1"] + block["b1"])
        x = x + jnp.matmul(hidden, block["w2"], out_sharding=P()) + block["b2"]
    return x


def tensor_parallel(mesh: Mesh, sizes: MlpSizes) -> tuple[Any, tuple]:
    """The forward pass and its arguments: the hidden dim split over the mesh's last axis,
    the input replicated (``sizes.outputs`` is unused: blocks keep the width)."""
    axis = mesh.axis_names[-1]
    blocks = []
    for k in range(sizes.blocks):
        p = init_params(MlpSizes(sizes.batch, sizes.inputs, sizes.hidden, sizes.inputs),
                        seed=k)
        blocks.append({
            "w1": device_put(p["w1"], NamedSharding(mesh, P(None, axis))),
            "b1": device_put(p["b1"], NamedSharding(mesh, P(axis))),
            "w2": device_put(p["w2"], NamedSharding(mesh, P(axis, None))),
            "b2": device_put(p["b2"], NamedSharding(mesh, P()))})
    x = device_put(init_batch(sizes)[0], NamedSharding(mesh, P()))
    return jit(tensor_parallel_forward), (blocks, x)


def tensor_parallel_optimum(mesh: Mesh, sizes: MlpSizes) -> float:
    """One all-reduce of the block's output (batch x width floats) per block."""
    n = mesh.shape[mesh.axis_names[-1]]
    return sizes.blocks * 2 * (n - 1) / n * sizes.batch * sizes.inputs * 4
# --8<-- [end:tensor_parallel]
