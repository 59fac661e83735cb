"""``jax.sharding``: meshes, partition specs, named shardings and ``reshard``, as one
namespace. The types live in ``named_sharding.py`` and ``mesh.py``, ``reshard`` in
``reshard.py``, ``SingleDeviceSharding`` (every unsplit array's) in stage 1's ``core.py``; this
module only gathers the names a program imports.
"""

from stage1_autodiff.core import SingleDeviceSharding

from .mesh import AxisType, Mesh, get_mesh, set_mesh
from .named_sharding import NamedSharding, P, PartitionSpec
from .reshard import reshard

__all__ = ["AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec", "SingleDeviceSharding",
           "get_mesh", "reshard", "set_mesh"]
