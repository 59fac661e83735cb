"""``jax.experimental.mesh_utils``: an array of devices in a mesh's shape, for ``Mesh``.

XLA's version orders a TPU's or GPU's devices so that the mesh's axes follow the physical
links between chips; simulated devices have no links, so here the order is the devices'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..mesh import devices as all_devices


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """``devices`` (all of them by default), in order, as an array of shape ``mesh_shape``.

    Example:
        >>> import stage4_sharding as jax
        >>> from stage4_sharding.experimental import mesh_utils
        >>> jax.sharding.Mesh(mesh_utils.create_device_mesh((4, 2)), ("data", "model"))
        Mesh(axis_sizes=(4, 2), axis_names=('data', 'model'), axis_types=(Auto, Auto))
    """
    devices = list(all_devices() if devices is None else devices)
    if len(devices) != math.prod(mesh_shape):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {tuple(mesh_shape)}")
    mesh = np.empty(len(devices), dtype=object)
    mesh[:] = devices
    return mesh.reshape(tuple(mesh_shape))
