"""``jax.tree``: the short names for the pytree functions of ``tree_util``.

Example:
    >>> import stage1_autodiff as jax
    >>> jax.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
"""

from .tree_util import tree_flatten as flatten
from .tree_util import tree_leaves as leaves
from .tree_util import tree_map as map
from .tree_util import tree_structure as structure
from .tree_util import tree_unflatten as unflatten

__all__ = ["flatten", "leaves", "map", "structure", "unflatten"]
