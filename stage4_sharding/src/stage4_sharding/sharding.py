"""``jax.sharding``: meshes, partition specs, named shardings, ``reshard`` and the axis-type
switches, as one namespace. The types live in ``named_sharding.py`` and ``mesh.py``,
``reshard`` in ``reshard.py``, ``auto_axes`` and the abstract mesh in ``axis_types.py``,
``SingleDeviceSharding`` (every unsplit array's) in stage 1's ``core.py``; this module only
gathers the names a program imports.
"""

import abc

from stage1_autodiff.core import SingleDeviceSharding

from .axis_types import (
    AbstractMesh,
    auto_axes,
    explicit_axes,
    get_abstract_mesh,
    use_abstract_mesh,
)
from .mesh import AxisType, Mesh, get_mesh, set_mesh
from .named_sharding import NamedSharding, P, PartitionSpec
from .reshard import reshard


class Sharding(abc.ABC):  # noqa: B024 -- a type to check against, with nothing to override
    """The type of every sharding, for ``isinstance`` checks and annotations: a
    ``NamedSharding`` and a ``SingleDeviceSharding`` are ``Sharding`` instances.

    Example:
        >>> import stage4_sharding as jax
        >>> isinstance(jax.numpy.ones(2).sharding, jax.sharding.Sharding)
        True
    """


Sharding.register(NamedSharding)
Sharding.register(SingleDeviceSharding)

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec",
           "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
           "get_abstract_mesh", "get_mesh", "reshard", "set_mesh", "use_abstract_mesh"]
