"""Collectives over a named axis: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``psum_scatter``, ``ppermute``, ``all_to_all`` and ``axis_index``, usable inside
``vmap(f, axis_name="i")``.

Inside ``vmap`` each example is computed as if on its own, and a collective lets the examples
talk: ``psum(x, "i")`` is the sum of ``x`` over all examples, the same value for each. To the
batching interpreter of axis ``"i"`` that is a reduction over the batch dim (and the result no
longer depends on the example). Stage 4 gives the same primitives sharding rules, where the
examples become devices and the reduction an all-reduce.

A collective is bound with an axis name, not a trace: ``CollectivePrimitive.bind`` finds the
``vmap`` of that name on the interpreter stack and raises the operands to it, so the rule runs
even for a value that does not depend on the examples (``psum(1.0, "i")`` is the axis size).

NB: in JAX these are jax/_src/lax/parallel.py (``psum_p``, ``all_gather_p``, ``axis_index_p``),
found through the axis environment rather than the trace stack.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stage1_autodiff.core import (
    Primitive,
    ShapedArray,
    find_top_trace,
    full_raise,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
)
from stage1_autodiff.tree_util import tree_map
from stage2_jit.abstract_eval import abstract_eval_rules

from stage1_autodiff import numpy as jnp
from stage1_autodiff import prims as lax

from .batching import (
    AxisData,
    always_batched,
    axis_frame,
    batching_rules,
    bdim_at,
    not_mapped,
)


# --8<-- [start:collective_primitive]
class CollectivePrimitive(Primitive):
    """A primitive over a named axis: bound on the interpreter that maps that axis (or one
    above it, such as a jit tracing inside the vmap, which stages it), whatever its operands
    are (``axis_index`` has none)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        always_batched.add(self)  # the rule runs even when no operand is batched

    def bind(self, *args: Any, axis_name: Any, **params: Any) -> Any:
        frame = axis_frame(axis_name)  # NameError for an unbound name
        trace = find_top_trace(args)
        if trace.main.level < frame.level:
            trace = frame.trace
        tracers = [full_raise(trace, x) for x in args]
        return trace.process_primitive(self, tracers, dict(params, axis_name=axis_name))[0]
# --8<-- [end:collective_primitive]


def _unbound(*args: Any, axis_name: Any, **params: Any) -> Any:
    raise NameError(f"unbound axis name: {axis_name}. Collectives run inside a vmap (or, in "
                    f"stage 4, shard_map) that names the axis.")


def _same_aval(x: ShapedArray, **params: Any) -> ShapedArray:
    return x


def _names(axis_name: Any) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _over_names(prim: CollectivePrimitive, x: Any, axis_name: Any, **params: Any) -> Any:
    """``prim`` over each of several names in turn (``psum(x, ("i", "j"))``), on every leaf."""
    def one(leaf):
        for name in _names(axis_name):
            leaf = prim.bind(leaf, axis_name=name, **params)
        return leaf
    return tree_map(one, x)


def _other_axis(prim: Primitive, vals: list, dims: list, params: dict) -> tuple[list, list]:
    """A collective over another vmap's axis: elementwise for this batch, which stays put."""
    return [prim.bind(*vals, **params)], [dims[0]]


# --8<-- [start:psum]
psum_p = CollectivePrimitive("psum")
impl_rules[psum_p] = _unbound
abstract_eval_rules[psum_p] = _same_aval


def psum(x: Any, axis_name: Any) -> Any:
    """The sum of ``x`` over every example of the named axis (each leaf of a pytree).

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(lambda v: v / jax.lax.psum(v, "i"), axis_name="i")(jnp.arange(4.0))
        Array([0.        , 0.16666667, 0.33333334, 0.5       ], dtype=float32)
    """
    return _over_names(psum_p, x, axis_name)


def psum_batching_rule(axis_data: AxisData, vals, dims, *, axis_name):
    if axis_name != axis_data.name:
        return _other_axis(psum_p, vals, dims, dict(axis_name=axis_name))
    (x,), (bdim,) = vals, dims
    if bdim is not_mapped:  # the same value for every example
        return [lax.mul(x, lax.full_like(x, axis_data.size))], [not_mapped]
    return [lax.reduce_sum(x, (bdim,))], [not_mapped]
batching_rules[psum_p] = psum_batching_rule
jvp_rules[psum_p] = lambda primals, tangents, *, axis_name: (
    psum_p.bind(primals[0], axis_name=axis_name), psum_p.bind(tangents[0], axis_name=axis_name))
vjp_rules[psum_p] = lambda ct, x, *, out, axis_name: [psum_p.bind(ct, axis_name=axis_name)]
# --8<-- [end:psum]


# --8<-- [start:pmean]
def pmean(x: Any, axis_name: Any) -> Any:
    """The mean of ``x`` over the examples of the named axis: ``psum`` divided by the size,
    which the axis's binder knows (so no second collective counts the examples)."""
    size = axis_size(axis_name)
    return tree_map(lambda leaf: psum(leaf, axis_name) / size, x)
# --8<-- [end:pmean]


def axis_size(axis_name: Any) -> int:
    """How many examples the named axis has (the product, for a tuple of names): a Python
    int, which the axis's binder knows (a ``vmap``, or stage 4's ``shard_map`` mesh axis)."""
    size = 1
    for name in _names(axis_name):
        size *= axis_frame(name).global_data.size
    return size


# --8<-- [start:extremum_collective]
def _extremum_collective(name: str, reduce: Any) -> CollectivePrimitive:
    prim = CollectivePrimitive(name)
    impl_rules[prim] = _unbound
    abstract_eval_rules[prim] = _same_aval

    def batching_rule(axis_data: AxisData, vals, dims, *, axis_name):
        if axis_name != axis_data.name:
            return _other_axis(prim, vals, dims, dict(axis_name=axis_name))
        (x,), (bdim,) = vals, dims
        if bdim is not_mapped:
            return [x], [not_mapped]
        return [reduce(x, (bdim,))], [not_mapped]
    batching_rules[prim] = batching_rule

    def jvp_rule(primals, tangents, *, axis_name):
        # The tangent of the winning example(s), averaged over ties.
        (x,), (x_dot,) = primals, tangents
        out = prim.bind(x, axis_name=axis_name)
        wins = lax.convert_element_type(lax.eq(x, out), x_dot.dtype)
        picked = psum_p.bind(lax.mul(x_dot, wins), axis_name=axis_name)
        return out, lax.div(picked, psum_p.bind(wins, axis_name=axis_name))
    jvp_rules[prim] = jvp_rule

    def vjp_rule(ct, x, *, out, axis_name):
        wins = lax.convert_element_type(lax.eq(x, out), ct.dtype)
        share = lax.div(wins, psum_p.bind(wins, axis_name=axis_name))
        return [lax.mul(psum_p.bind(ct, axis_name=axis_name), share)]
    vjp_rules[prim] = vjp_rule
    return prim
# --8<-- [end:extremum_collective]


pmax_p = _extremum_collective("pmax", lax.reduce_max)
pmin_p = _extremum_collective("pmin", lax.reduce_min)


def pmax(x: Any, axis_name: Any) -> Any:
    """The largest ``x`` over the examples of the named axis."""
    return _over_names(pmax_p, x, axis_name)


def pmin(x: Any, axis_name: Any) -> Any:
    """The smallest ``x`` over the examples of the named axis."""
    return _over_names(pmin_p, x, axis_name)


# --8<-- [start:all_gather]
all_gather_p = CollectivePrimitive("all_gather")
impl_rules[all_gather_p] = _unbound


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every example's ``x``, stacked along a new ``axis`` (or, ``tiled``, concatenated along
    an existing one): the same array for each example.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(lambda v: jax.lax.all_gather(v, "i"), axis_name="i")(jnp.arange(2.0))
        Array([[0., 1.],
               [0., 1.]], dtype=float32)
    """
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError("all_gather over several axis names at once")
    return tree_map(lambda leaf: all_gather_p.bind(leaf, axis_name=names[0], axis=axis,
                                                   tiled=tiled), x)


def all_gather_abstract_eval(x: ShapedArray, *, axis_name, axis, tiled) -> ShapedArray:
    # NB: the gathered size is the axis's, which only the vmap knows; inside jit tracing it
    # is read from the innermost vmap of that name.
    size = axis_frame(axis_name).global_data.size
    shape = list(x.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)
abstract_eval_rules[all_gather_p] = all_gather_abstract_eval


def all_gather_batching_rule(axis_data: AxisData, vals, dims, *, axis_name, axis, tiled):
    params = dict(axis_name=axis_name, axis=axis, tiled=tiled)
    (x,), (bdim,) = vals, dims
    if axis_name != axis_data.name:
        if bdim is not_mapped:
            return [all_gather_p.bind(x, **params)], [not_mapped]
        x = bdim_at(x, bdim, 0, axis_data)  # the gathered axis counts without it
        return [all_gather_p.bind(x, **dict(params, axis=axis + 1))], [0]
    stacked = bdim_at(x, bdim, axis, axis_data)  # the examples along ``axis``
    if tiled:  # merge the examples' axis into the next one
        shape = list(get_aval(stacked).shape)
        merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
        stacked = lax.reshape(stacked, tuple(merged))
    return [stacked], [not_mapped]
batching_rules[all_gather_p] = all_gather_batching_rule
jvp_rules[all_gather_p] = lambda primals, tangents, **params: (
    all_gather_p.bind(primals[0], **params), all_gather_p.bind(tangents[0], **params))


def all_gather_vjp(ct, x, *, out, axis_name, axis, tiled):
    """The transpose of an all-gather is a reduce-scatter: each example gets its own slice
    of the summed cotangent."""
    return [psum_scatter_p.bind(ct, axis_name=axis_name, scatter_dimension=axis, tiled=tiled)]
vjp_rules[all_gather_p] = all_gather_vjp
# --8<-- [end:all_gather]


# --8<-- [start:axis_index]
axis_index_p = CollectivePrimitive("axis_index")  # no operands: found by its axis's name
impl_rules[axis_index_p] = _unbound
abstract_eval_rules[axis_index_p] = lambda *, axis_name: ShapedArray((), np.dtype(np.int32))


def axis_index(axis_name: Any) -> Any:
    """Which example this is along the named axis: 0, 1, ..., size - 1.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(lambda v: v * jax.lax.axis_index("i"), axis_name="i")(jnp.ones(3))
        Array([0., 1., 2.], dtype=float32)

    Over several axes, ``("x", "y")``, the position in their product, the last axis
    fastest: ``index("x") * size("y") + index("y")``.
    """
    names = list(axis_name) if isinstance(axis_name, (tuple, list)) else [axis_name]
    if not names:
        raise ValueError("axis_index needs at least one axis name, got ().")
    index = axis_index_p.bind(axis_name=names[0])
    for name in names[1:]:
        index = index * psum(1, name) + axis_index_p.bind(axis_name=name)
    return index


def axis_index_batching_rule(axis_data: AxisData, vals, dims, *, axis_name):
    if axis_name != axis_data.name:  # another vmap's index: the same for all of this batch
        return [axis_index_p.bind(axis_name=axis_name)], [not_mapped]
    return [lax.iota(np.dtype(np.int32), (axis_data.size,))], [0]
batching_rules[axis_index_p] = axis_index_batching_rule
jvp_rules[axis_index_p] = lambda primals, tangents, *, axis_name: (
    axis_index(axis_name), None)
vjp_rules[axis_index_p] = lambda ct, *, out, axis_name: []
# --8<-- [end:axis_index]


def _size(axis_name: Any) -> int:
    return axis_frame(axis_name).global_data.size


def _without_dim(aval: ShapedArray, dim: int) -> ShapedArray:
    return ShapedArray(aval.shape[:dim] + aval.shape[dim + 1:], aval.dtype, aval.weak_type)


# --8<-- [start:psum_scatter]
psum_scatter_p = CollectivePrimitive("psum_scatter")
impl_rules[psum_scatter_p] = _unbound


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 tiled: bool = False) -> Any:
    """The sum over the examples of the named axis, each example keeping only its slice
    along ``scatter_dimension``: a reduce-scatter. Untiled, that dim's size is the axis size
    and it goes; ``tiled``, it is split into as many equal pieces.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(lambda v: jax.lax.psum_scatter(v, "i"), axis_name="i")(jnp.ones((2, 2)))
        Array([2., 2.], dtype=float32)
    """
    # --8<-- [start:task3_3]
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError("psum_scatter over several axis names at once: call it once "
                                  "per name.")
    return tree_map(lambda leaf: psum_scatter_p.bind(
        leaf, axis_name=names[0], scatter_dimension=scatter_dimension, tiled=tiled), x)
    # --8<-- [end:task3_3]


def psum_scatter_abstract_eval(x: ShapedArray, *, axis_name, scatter_dimension, tiled):
    # --8<-- [start:task3_3]
    size, shape = _size(axis_name), list(x.shape)
    if not 0 <= scatter_dimension < x.ndim:
        raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is not a dim "
                         f"of an operand of shape {x.shape}.")
    if tiled and shape[scatter_dimension] % size or not tiled and shape[scatter_dimension] != size:
        raise ValueError(
            f"psum_scatter: dim {scatter_dimension} of shape {x.shape} must "
            f"{'be divisible by' if tiled else 'equal'} the size {size} of axis {axis_name!r}"
            f"{'' if tiled else ' (or pass tiled=True to split it into pieces)'}.")
    if tiled:
        shape[scatter_dimension] //= size
    else:
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)
    # --8<-- [end:task3_3]
abstract_eval_rules[psum_scatter_p] = psum_scatter_abstract_eval


def psum_scatter_batching_rule(axis_data: AxisData, vals, dims, *, axis_name,
                               scatter_dimension, tiled):
    # --8<-- [start:task3_3]
    (x,), (bdim,) = vals, dims
    if axis_name != axis_data.name:
        if bdim is not_mapped:
            return [psum_scatter_p.bind(x, axis_name=axis_name, tiled=tiled,
                                        scatter_dimension=scatter_dimension)], [not_mapped]
        x = bdim_at(x, bdim, 0, axis_data)
        return [psum_scatter_p.bind(x, axis_name=axis_name, tiled=tiled,
                                    scatter_dimension=scatter_dimension + 1)], [0]
    example = get_aval(x) if bdim is not_mapped else _without_dim(get_aval(x), bdim)
    psum_scatter_abstract_eval(example, axis_name=axis_name,  # checks the sizes
                               scatter_dimension=scatter_dimension, tiled=tiled)
    if bdim is not_mapped:
        total = lax.mul(x, lax.full_like(x, axis_data.size))
    else:
        total = lax.reduce_sum(x, (bdim,))
    if tiled:  # the scattered dim as (examples, piece): example i keeps piece i
        shape = list(get_aval(total).shape)
        size = axis_data.size
        shape[scatter_dimension:scatter_dimension + 1] = [size, shape[scatter_dimension] // size]
        total = lax.reshape(total, tuple(shape))
    return [total], [scatter_dimension]
    # --8<-- [end:task3_3]
batching_rules[psum_scatter_p] = psum_scatter_batching_rule


def psum_scatter_jvp(primals, tangents, **params):
    # --8<-- [start:task3_3]
    return psum_scatter_p.bind(primals[0], **params), psum_scatter_p.bind(tangents[0], **params)
    # --8<-- [end:task3_3]
jvp_rules[psum_scatter_p] = psum_scatter_jvp


def psum_scatter_vjp(ct, x, *, out, axis_name, scatter_dimension, tiled):
    """The transpose of a reduce-scatter is an all-gather of the cotangent."""
    # --8<-- [start:task3_3]
    return [all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled)]
    # --8<-- [end:task3_3]
vjp_rules[psum_scatter_p] = psum_scatter_vjp
# --8<-- [end:psum_scatter]


# --8<-- [start:ppermute]
ppermute_p = CollectivePrimitive("ppermute")
impl_rules[ppermute_p] = _unbound
abstract_eval_rules[ppermute_p] = lambda x, *, axis_name, perm: x


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Each example sends ``x`` as ``perm`` says: ``(source, destination)`` pairs of
    positions along the named axis. An example no pair sends to gets zeros.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> shift = [(i, (i + 1) % 3) for i in range(3)]
        >>> jax.vmap(lambda v: jax.lax.ppermute(v, "i", shift), axis_name="i")(jnp.arange(3.0))
        Array([2., 0., 1.], dtype=float32)
    """
    pairs = tuple((int(src), int(dst)) for src, dst in perm)
    sources, destinations = [s for s, _ in pairs], [d for _, d in pairs]
    if len(set(sources)) != len(sources) or len(set(destinations)) != len(destinations):
        raise ValueError(f"ppermute: perm {list(pairs)} sends from or to a position more than "
                         f"once; each source and each destination may appear once.")
    return tree_map(lambda leaf: ppermute_p.bind(leaf, axis_name=axis_name, perm=pairs), x)


def ppermute_batching_rule(axis_data: AxisData, vals, dims, *, axis_name, perm):
    if axis_name != axis_data.name:
        return _other_axis(ppermute_p, vals, dims, dict(axis_name=axis_name, perm=perm))
    (x,), (bdim,) = vals, dims
    size = axis_data.size
    if any(not 0 <= i < size for pair in perm for i in pair):
        raise ValueError(f"ppermute: perm {list(perm)} names a position outside axis "
                         f"{axis_name!r} of size {size}.")
    stacked = bdim_at(x, bdim, 0, axis_data)  # the examples along dim 0
    source = dict((dst, src) for src, dst in perm)
    picked = jnp.take(stacked, np.array([source.get(i, 0) for i in range(size)]), axis=0)
    received = np.array([i in source for i in range(size)])
    mask = received.reshape((size,) + (1,) * (get_aval(picked).ndim - 1))
    return [jnp.where(mask, picked, jnp.zeros_like(picked))], [0]
batching_rules[ppermute_p] = ppermute_batching_rule
jvp_rules[ppermute_p] = lambda primals, tangents, **params: (
    ppermute_p.bind(primals[0], **params), ppermute_p.bind(tangents[0], **params))
vjp_rules[ppermute_p] = lambda ct, x, *, out, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))]
# --8<-- [end:ppermute]


# --8<-- [start:all_to_all]
all_to_all_p = CollectivePrimitive("all_to_all")
impl_rules[all_to_all_p] = _unbound


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               tiled: bool = False) -> Any:
    """Each example cuts ``x`` into as many pieces along ``split_axis`` as the axis has
    examples, sends piece j to example j, and joins what it receives along ``concat_axis``.
    Untiled, ``split_axis``'s size is the axis size; that dim goes and a new one of that
    size appears at ``concat_axis``. ``tiled``, no dim comes or goes.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> x = jnp.arange(4.0).reshape(2, 2)
        >>> jax.vmap(lambda v: jax.lax.all_to_all(v, "i", 0, 0), axis_name="i")(x)
        Array([[0., 2.],
               [1., 3.]], dtype=float32)
    """
    return tree_map(lambda leaf: all_to_all_p.bind(
        leaf, axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis,
        tiled=tiled), x)


def all_to_all_abstract_eval(x: ShapedArray, *, axis_name, split_axis, concat_axis, tiled):
    size, shape = _size(axis_name), list(x.shape)
    if not (0 <= split_axis < x.ndim and 0 <= concat_axis < x.ndim):
        raise ValueError(f"all_to_all: split_axis {split_axis} or concat_axis {concat_axis} "
                         f"is not a dim of an operand of shape {x.shape}.")
    if tiled and shape[split_axis] % size or not tiled and shape[split_axis] != size:
        raise ValueError(
            f"all_to_all: dim {split_axis} of shape {x.shape} must "
            f"{'be divisible by' if tiled else 'equal'} the size {size} of axis {axis_name!r}.")
    if tiled:
        shape[split_axis] //= size
        shape[concat_axis] *= size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)
abstract_eval_rules[all_to_all_p] = all_to_all_abstract_eval


def all_to_all_batching_rule(axis_data: AxisData, vals, dims, *, axis_name, split_axis,
                             concat_axis, tiled):
    params = dict(axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis,
                  tiled=tiled)
    (x,), (bdim,) = vals, dims
    size = axis_data.size
    if axis_name != axis_data.name:
        if bdim is not_mapped:
            return [all_to_all_p.bind(x, **params)], [not_mapped]
        x = bdim_at(x, bdim, 0, axis_data)
        return [all_to_all_p.bind(x, **dict(params, split_axis=split_axis + 1,
                                             concat_axis=concat_axis + 1))], [0]
    example = get_aval(x) if bdim is not_mapped else _without_dim(get_aval(x), bdim)
    all_to_all_abstract_eval(example, **params)  # checks the sizes
    # Dims of ``stacked``: the sender j, then the example's dims, where ``split_axis`` holds
    # (receiver i[, piece]).
    stacked = bdim_at(x, bdim, 0, axis_data)  # the examples along dim 0
    shape = list(get_aval(stacked).shape)
    if tiled:
        shape[split_axis + 1:split_axis + 2] = [size, shape[split_axis + 1] // size]
        stacked = lax.reshape(stacked, tuple(shape))
    by_receiver = jnp.moveaxis(stacked, split_axis + 1, 0)  # (i, j, the rest)
    out = jnp.moveaxis(by_receiver, 1, concat_axis + 1)  # (i, the rest with j at concat)
    if tiled:  # j joins the piece's dim at concat_axis
        shape = list(get_aval(out).shape)
        shape[concat_axis + 1:concat_axis + 3] = [shape[concat_axis + 1] * shape[concat_axis + 2]]
        out = lax.reshape(out, tuple(shape))
    return [out], [0]
batching_rules[all_to_all_p] = all_to_all_batching_rule
jvp_rules[all_to_all_p] = lambda primals, tangents, **params: (
    all_to_all_p.bind(primals[0], **params), all_to_all_p.bind(tangents[0], **params))
vjp_rules[all_to_all_p] = lambda ct, x, *, out, axis_name, split_axis, concat_axis, tiled: [
    all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                      concat_axis=split_axis, tiled=tiled)]
# --8<-- [end:all_to_all]


# --8<-- [start:conveniences]
# Three collectives written with the ones above (JAX's pshuffle and pswapaxes are such
# compositions too; its pbroadcast is a primitive of its own).


def pshuffle(x: Any, axis_name: Any, perm: Any) -> Any:
    """``ppermute`` with the permutation given by its sources: the example at position ``i``
    of the named axis receives ``x`` from position ``perm[i]``. ``perm`` names every
    position once.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(lambda v: jax.lax.pshuffle(v, "i", [2, 0, 1]), axis_name="i")(
        ...     jnp.arange(3.0))
        Array([2., 0., 1.], dtype=float32)
    """
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: perm {perm} is not a permutation: it must name each "
                         f"position 0 to {len(perm) - 1} once (the source of each example).")
    size = axis_size(axis_name)
    if len(perm) != size:
        raise ValueError(f"pshuffle: perm {perm} names {len(perm)} positions, but axis "
                         f"{axis_name!r} has {size}: give a source for every example.")
    return ppermute(x, axis_name, list(zip(perm, range(size))))


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swaps the named axis with dim ``axis`` of ``x``, whose size must be the axis size:
    example ``i`` gets piece ``i`` of every example's dim ``axis``, in the examples' order
    (``all_to_all`` with ``split_axis = concat_axis = axis``)."""
    if axis_index_groups is not None:
        raise NotImplementedError("pswapaxes: axis_index_groups is not supported here (nor "
                                  "by the other collectives): leave it out.")
    return all_to_all(x, axis_name, axis, axis)


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every example of the named axis gets the ``x`` of the example at position
    ``source``: a ``psum`` in which every other example contributes zeros."""
    size = axis_size(axis_name)
    if not 0 <= source < size:
        raise ValueError(f"pbroadcast: source {source} is not a position of axis "
                         f"{axis_name!r}, which has {size} examples (0 to {size - 1}).")
    chosen = axis_index(axis_name) == source

    def broadcast(leaf):
        if get_aval(leaf).dtype == np.bool_:  # (psum adds numbers: a bool goes as an int)
            return psum(jnp.where(chosen, leaf, False).astype(np.int32), axis_name) > 0
        return psum(jnp.where(chosen, leaf, jnp.zeros_like(leaf)), axis_name)
    return tree_map(broadcast, x)
# --8<-- [end:conveniences]
