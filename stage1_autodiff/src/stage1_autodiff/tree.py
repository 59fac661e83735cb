"""``jax.tree``: the short names for the pytree functions of ``tree_util``.

Example:
    >>> import stage1_autodiff as jax
    >>> jax.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
"""

import dataclasses

from .tree_util import tree_all as all
from .tree_util import tree_broadcast as broadcast
from .tree_util import tree_flatten as flatten
from .tree_util import tree_flatten_with_path as flatten_with_path
from .tree_util import tree_leaves as leaves
from .tree_util import tree_leaves_with_path as leaves_with_path
from .tree_util import tree_map as map
from .tree_util import tree_map_with_path as map_with_path
from .tree_util import tree_reduce as reduce
from .tree_util import tree_reduce_associative as reduce_associative
from .tree_util import tree_structure as structure
from .tree_util import tree_transpose as transpose
from .tree_util import tree_unflatten as unflatten


def static(**field_kwargs):
    """``dataclasses.field(**field_kwargs)`` marked static: a field that
    ``tree_util.register_dataclass`` puts into the treedef rather than among the leaves."""
    metadata = {**field_kwargs.pop("metadata", {}), "static": True}
    return dataclasses.field(metadata=metadata, **field_kwargs)


__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]
