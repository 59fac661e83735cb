"""``jax.flatten_util.ravel_pytree``: a pytree of arrays as one flat vector, and back.

Optimizers, line searches and ODE solvers want one vector where a model has a tree of
parameters. ``ravel_pytree`` flattens every leaf and joins them, in the dtype all the leaves
promote to; the function it returns cuts a vector of that length back into the tree, each
leaf in its own shape and dtype. Both are made of ``jnp`` operations, so they differentiate,
batch and trace like any other code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import numpy as jnp
from . import prims as lax
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Returns the leaves of ``pytree`` raveled and joined into one 1-D array, and the
    function that turns such an array back into the tree.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.flatten_util import ravel_pytree
        >>> flat, unravel = ravel_pytree({"w": jnp.ones((2, 2)), "b": jnp.zeros(1)})
        >>> print(flat)
        [0. 1. 1. 1. 1.]
        >>> unravel(flat)["w"].shape
        (2, 2)
    """
    leaves, treedef = tree_flatten(pytree)
    flat, unravel_list = _ravel_list(leaves)

    def unravel_pytree(flat: Any) -> Any:
        return tree_unflatten(treedef, unravel_list(flat))

    return flat, unravel_pytree


def _ravel_list(leaves: list[Any]) -> tuple[Any, Callable[[Any], list[Any]]]:
    if not leaves:
        return jnp.zeros(0, jnp.float32), lambda flat: []
    from_dtypes = [jnp.result_type(leaf) for leaf in leaves]  # a Python 2.0 is float32
    to_dtype = jnp.result_type(*from_dtypes)
    shapes = [np.shape(leaf) for leaf in leaves]
    sizes = [math.prod(shape) for shape in shapes]
    # lax, not jnp: no promotion, so a weak leaf's gradient comes back strong, as in JAX
    flat = lax.concatenate([lax.reshape(lax.convert_element_type(leaf, to_dtype)
                                        if dtype != to_dtype else leaf, (size,))
                            for leaf, dtype, size in zip(leaves, from_dtypes, sizes)], 0)

    mixed = any(dtype != to_dtype for dtype in from_dtypes)

    def unravel_list(flat: Any) -> list[Any]:
        # With one dtype throughout, any dtype goes, as in JAX: the leaves take the vector's
        _check_flat(flat, sum(sizes), to_dtype if mixed else None)
        pieces, start = [], 0
        for shape, size, dtype in zip(shapes, sizes, from_dtypes):
            piece = lax.reshape(lax.slice(flat, (start,), (start + size,)), shape)
            pieces.append(piece if dtype == to_dtype else lax.convert_element_type(piece, dtype))
            start += size
        return pieces

    return flat, unravel_list


def _check_flat(flat: Any, size: int, dtype: np.dtype | None) -> None:
    shape, flat_dtype = np.shape(flat), jnp.result_type(flat)
    if shape != (size,):
        raise ValueError(f"The unravel function of ravel_pytree expects a 1-D array of the "
                         f"raveled tree's length, shape ({size},), but got shape {shape}.")
    if dtype is not None and flat_dtype != dtype:
        raise TypeError(f"The unravel function of ravel_pytree was given an array of dtype "
                        f"{flat_dtype}, but expected dtype {dtype}, the dtype it raveled "
                        f"the leaves to. Convert it with .astype(jnp.{dtype}) first.")
