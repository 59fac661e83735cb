"""``lax.ragged_dot``: a matrix product whose left rows come in groups, each group multiplied
by a matrix of its own, composed of the primitives every stage runs."""

from __future__ import annotations

from . import dtypes
from . import prims as lax
from .core import get_aval
from .numpy.promotion import as_value

__all__ = ["ragged_dot"]


# --8<-- [start:ragged_dot]
def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """``lhs`` (m, k) times one of the matrices ``rhs`` (g, k, n) per row: the first
    ``group_sizes[0]`` rows by ``rhs[0]``, the next ``group_sizes[1]`` by ``rhs[1]``, and
    so on; rows past the groups give zeros. (A mixture of experts sends each token's row to
    its expert's weights so, its rows sorted by expert.)

    Here it is one batched ``dot_general`` over the groups, each group's product taken with
    the rows of the other groups masked to zero, summed over the groups: g times the
    arithmetic of the ragged product, and plain primitives that every stage already runs.
    NB: JAX's is a primitive, ``ragged_dot_general`` in jax/_src/lax/lax.py, that XLA runs
    over the rows of each group only.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> rhs = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
        >>> jax.lax.ragged_dot(jnp.ones((3, 2)), rhs, jnp.array([1, 2]))
        Array([[1., 1.],
               [2., 2.],
               [2., 2.]], dtype=float32)
    """
    if group_offset is not None:
        raise NotImplementedError("ragged_dot's group_offset is not implemented here (nor "
                                  "does JAX 0.10.2 take one): pass the groups as a whole.")
    lhs, rhs, group_sizes = as_value(lhs), as_value(rhs), as_value(group_sizes)
    _check_ragged(get_aval(lhs), get_aval(rhs), get_aval(group_sizes))
    rows, groups = get_aval(lhs).shape[0], get_aval(rhs).shape[0]
    ends = lax.cumsum(group_sizes, 0)
    starts = lax.sub(ends, group_sizes)
    row = lax.iota(group_sizes.dtype, (groups, rows), 1)
    in_group = lax.bitwise_and(lax.ge(row, lax.broadcast_in_dim(starts, (groups, rows), (0,))),
                               lax.lt(row, lax.broadcast_in_dim(ends, (groups, rows), (0,))))
    masked_shape = (groups, *get_aval(lhs).shape)
    masked = lax.select_n(lax.broadcast_in_dim(in_group, masked_shape, (0, 1)),
                          lax.zeros_like(lax.broadcast_in_dim(lhs, masked_shape, (1, 2))),
                          lax.broadcast_in_dim(lhs, masked_shape, (1, 2)))
    per_group = lax.dot_general(masked, rhs, (((2,), (1,)), ((0,), (0,))), precision,
                            preferred_element_type, out_sharding)
    return lax.reduce_sum(per_group, (0,))


def _check_ragged(lhs, rhs, group_sizes) -> None:
    """JAX's TypeErrors for operands that do not fit (m, k), (g, k, n) and (g,) integers."""
    if lhs.ndim != 2 or rhs.ndim != 3:
        raise TypeError(f"ragged_dot takes lhs of shape (m, k) and rhs of shape (g, k, n), got "
                        f"{lhs.shape} and {rhs.shape}. For other layouts, use dot_general.")
    if dtypes.kind(group_sizes.dtype) not in "iu":
        raise TypeError(f"ragged_dot_general requires that group_sizes.dtype is subtype of "
                        f"np.integer, got {group_sizes.dtype.name}.")
    if group_sizes.shape != (rhs.shape[0],):
        raise TypeError(f"ragged_dot: rhs {rhs.shape} has {rhs.shape[0]} groups, but "
                        f"group_sizes has shape {group_sizes.shape}: pass one size per "
                        f"group, group_sizes of shape ({rhs.shape[0]},).")
    if lhs.shape[1] != rhs.shape[1]:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got ({lhs.shape[1]},) and ({rhs.shape[1]},).")
# --8<-- [end:ragged_dot]
