"""``jax.sharding``: meshes, partition specs, named shardings and ``reshard``, as one
namespace. The types live in ``named_sharding.py`` and ``mesh.py``, ``reshard`` in
``reshard.py``; this module only gathers the names a program imports.
"""

from .mesh import AxisType, Mesh, get_mesh, set_mesh
from .named_sharding import NamedSharding, P, PartitionSpec
from .reshard import reshard

__all__ = ["AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec", "get_mesh", "reshard",
           "set_mesh"]
