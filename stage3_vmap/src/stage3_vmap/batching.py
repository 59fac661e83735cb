"""``vmap``: the batching interpreter.

A ``BatchTracer`` is a value with one more axis than the function sees: ``val`` holds every
example, ``batch_dim`` says which of its axes runs over them (``not_mapped``, None, for a
value that is the same for all). Each primitive has a batching rule that takes the operands'
values and batch dims and returns the results' values and batch dims, doing the work for all
examples in one call: ``sin`` applies to the whole batch as it is, ``dot_general`` gets one
more batch or free dimension, so a batched matrix-vector product is a matrix-matrix product.

Rules move batch dims only when they must (``moveaxis``), so ``vmap(f)`` of an elementwise
function never transposes. A named axis (``axis_name``) lets collectives (``psum`` and the
rest, in ``collectives.py``) reduce over the examples.

NB: in JAX this is jax/_src/interpreters/batching.py (``BatchTracer``, ``BatchTrace``,
``primitive_batchers``) and jax/_src/api.py:vmap.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from stage1_autodiff.api_util import check_callable
from stage1_autodiff.core import (
    MainTrace,
    Primitive,
    Trace,
    Tracer,
    full_raise,
    get_aval,
    new_main,
    trace_state,
)
from stage1_autodiff.random import PRNGKeyArray
from stage1_autodiff.tree_util import (
    broadcast_prefix,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_structure,
    tree_unflatten,
)
from stage2_jit.jaxpr import ClosedJaxpr, ShapedArray
from stage2_jit.jit import jit_p
from stage2_jit.remat import remat_p
from stage2_jit.tracing import closed_with_consts_as_args, jaxpr_as_fun, trace_to_jaxpr

from stage1_autodiff import dtypes
from stage1_autodiff import numpy as jnp
from stage1_autodiff import prims as lax

not_mapped = None  # the batch dim of a value that is the same for every example


class AxisData(NamedTuple):
    """What a batching rule knows of the axis it maps over: its name (or None), its size,
    and (stage 4) how the mapped dims are split over the mesh: the sharding of the batch dim
    alone (rank 1), or None. A value broadcast to the batch is split the same way, so that
    it meets the batched ones laid out alike. NB: JAX's AxisData keeps the mesh axis of the
    split as ``explicit_mesh_axis``."""
    name: Any
    size: int
    split: Any = None


# rule(axis_data, vals_in, dims_in, **params) -> (vals_out, dims_out), both lists.
BatchingRule = Callable[..., tuple[list[Any], list[int | None]]]
batching_rules: dict[Primitive, BatchingRule] = {}
# Primitives whose rule runs even when no operand is batched: the collectives, whose result
# depends on the axis (``psum(1.0, "i")`` is its size) although their operand may not.
always_batched: set[Primitive] = set()


# --8<-- [start:batch_tracer]
class BatchTracer(Tracer):
    """A batch of values: ``val`` has the batch axis at ``batch_dim`` (or none at all)."""

    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: int | None) -> None:
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        aval = get_aval(self.val)
        if self.batch_dim is not_mapped:
            return aval
        shape = list(aval.shape)
        del shape[self.batch_dim]
        sharding = None if aval.sharding is None else aval.sharding.without_dim(self.batch_dim)
        return ShapedArray(tuple(shape), aval.dtype, aval.weak_type, sharding)


class BatchTrace(Trace):
    """Runs each primitive's batching rule. ``main.global_data`` is the axis (AxisData)."""

    def pure(self, val: Any) -> BatchTracer:
        return BatchTracer(self, val, not_mapped)

    lift = pure

    @property
    def axis_data(self) -> AxisData:
        return self.main.global_data

    def process_primitive(self, prim: Primitive, tracers: list[BatchTracer],
                          params: dict[str, Any]) -> list[BatchTracer]:
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        if all(d is not_mapped for d in dims) and prim not in always_batched:
            # nothing batched: the primitive as it is
            outs = prim.bind(*vals, **params)
            return [self.pure(o) for o in (outs if prim.multiple_results else [outs])]
        rule = batching_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"vmap has no batching rule for the primitive {prim}.")
        outs, out_dims = rule(self.axis_data, vals, dims, **params)
        return [BatchTracer(self, o, d) for o, d in zip(outs, out_dims)]
# --8<-- [end:batch_tracer]

    # --8<-- [start:custom_vjp_batching]
    def process_custom_vjp_call(self, prim, fun, fwd, bwd, tracers, out_trees):
        """The custom rule survives ``vmap``: the lower interpreter gets the function, its
        forward pass and its backward pass, each batched (a ``vmap`` of its own, since the
        backward pass may run after this one has finished). Results and residuals come out
        with the batch at axis 0; an argument that was not batched gets its cotangent
        summed over the examples."""
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        axis = self.axis_data
        batched = dict(in_axes=tuple(dims), axis_size=axis.size, axis_name=axis.name)
        fun_b = vmap(lambda *xs: list(fun(*xs)), **batched)
        fwd_b = vmap(fwd, **batched)

        def bwd_b(residuals, cts):
            cts_in = vmap(bwd, axis_size=axis.size, axis_name=axis.name)(residuals, cts)
            return [None if ct is None else
                    jnp.sum(ct, axis=0) if d is not_mapped else moveaxis(ct, 0, d)
                    for ct, d in zip(cts_in, dims)]

        if hasattr(bwd, "linear_in"):  # still linear in those arguments (stage 2's solves)
            bwd_b.linear_in = bwd.linear_in
        outs = prim.bind(*vals, fun=fun_b, fwd=fwd_b, bwd=bwd_b, out_trees=out_trees)
        return [BatchTracer(self, o, 0) for o in outs]
    # --8<-- [end:custom_vjp_batching]

    def process_custom_jvp_call(self, prim, fun, jvp, tracers):
        """As for ``custom_vjp``: the function and its rule are each batched, so the rule
        survives ``vmap`` (a tangent is batched as its primal is). Results at axis 0."""
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        if all(d is not_mapped for d in dims):
            return [self.pure(o) for o in prim.bind(*vals, fun=fun, jvp=jvp)]
        axis = self.axis_data
        batched = dict(axis_size=axis.size, axis_name=axis.name)
        fun_b = vmap(lambda *xs: list(fun(*xs)), in_axes=tuple(dims), **batched)
        jvp_b = vmap(lambda ps, ts: tuple(map(list, jvp(ps, ts))),
                     in_axes=(list(dims), list(dims)), **batched)
        fun_b.__name__, jvp_b.__name__ = fun.__name__, jvp.__name__
        outs = prim.bind(*vals, fun=fun_b, jvp=jvp_b)
        return [BatchTracer(self, o, 0) for o in outs]


# ------------------------------------------------------------------------------------------
# Helpers for rules
# ------------------------------------------------------------------------------------------


def batch_layout(x: Any, bdim: int) -> Any:
    """How ``x``'s batch dim is split (stage 4's spec entry; None when it is not): a result
    asked for with ``out_sharding`` keeps it, as in JAX."""
    spec = getattr(get_aval(x).sharding, "spec", ())
    return spec[bdim] if bdim < len(spec) else None


def with_batch_layout(sharding: Any, out_bdim: int, x: Any, bdim: int) -> Any:
    """A result's ``out_sharding`` (None: none asked for) with the batch dim inserted at
    ``out_bdim``, split as ``x``'s batch dim ``bdim`` is: the batch keeps its layout."""
    return None if sharding is None else sharding.inserted(out_bdim, batch_layout(x, bdim))


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """``x`` with axis ``src`` moved to ``dst`` (a transpose; nothing when they are equal)."""
    ndim = get_aval(x).ndim
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    perm = [d for d in range(ndim) if d != src]
    perm.insert(dst, src)
    return lax.transpose(x, tuple(perm))


def bdim_at(x: Any, bdim: int | None, dst: int, axis: AxisData,
            lay_out_constant: bool = False) -> Any:
    """``x`` with its batch axis at ``dst``: moved there, or, for an unbatched value,
    broadcast to the ``axis.size`` examples there, split as the batched values are. A
    constant without a layout in its type stays without (it takes the layout of the values
    it meets), unless ``lay_out_constant``."""
    if bdim is not_mapped:
        aval = get_aval(x)
        shape = list(aval.shape)
        dst = dst % (aval.ndim + 1)
        shape.insert(dst, axis.size)
        dims = tuple(d for d in range(aval.ndim + 1) if d != dst)
        layout = _broadcast_layout(aval, dst, axis.split, lay_out_constant)
        return lax.broadcast_in_dim(x, tuple(shape), dims, out_sharding=layout)
    return moveaxis(x, bdim, dst)


def _broadcast_layout(aval: ShapedArray, dst: int, split: Any, lay_out_constant: bool) -> Any:
    """The sharding of ``aval`` broadcast to a batch at ``dst`` that is split as ``split``
    says (None: the default layout). A laid-out constant is split nowhere else."""
    if split is None or aval.sharding is None and not lay_out_constant:
        return None
    own = aval.sharding or split.with_spec(type(split.spec)(*[None] * aval.ndim))
    return own.inserted(dst, split.spec[0])


# ------------------------------------------------------------------------------------------
# vmap
# ------------------------------------------------------------------------------------------


# --8<-- [start:batch_fun]
def batch_fun(fun: Callable[..., Sequence[Any]], axis_data: AxisData, vals: Sequence[Any],
              dims: Sequence[int | None]) -> tuple[list[Any], list[int | None]]:
    """Runs ``fun`` (flat arguments in, a flat list out) on a batch: the results' values and
    their batch dims, as the rules left them (``not_mapped`` for results that do not depend
    on the batch)."""
    with new_main(BatchTrace, axis_data) as main:
        trace: BatchTrace = main.trace
        # An unmapped argument is passed as it is (a Python int stays one, usable as a shape).
        tracers_in = [v if d is not_mapped else BatchTracer(trace, v, d)
                      for v, d in zip(vals, dims)]
        outs = fun(*tracers_in)
        out_tracers = [full_raise(trace, o) for o in outs]
        vals_out = [t.val for t in out_tracers]
        dims_out = [t.batch_dim for t in out_tracers]
    return vals_out, dims_out
# --8<-- [end:batch_fun]


# --8<-- [start:vmap]
def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorizes ``fun`` over an axis of its arguments: ``vmap(f)(xs)`` equals stacking
    ``f(x)`` for each ``x`` in ``xs``, computed in one batched call.

    ``in_axes`` and ``out_axes`` are pytree prefixes of the arguments and results: an int
    (negative counts from the end) or None (not mapped) per subtree. Keyword arguments are
    mapped over axis 0. ``axis_name`` names the axis for collectives (``psum``...);
    ``axis_size`` is needed when nothing is mapped. ``spmd_axis_name`` (stage 4): the mesh
    axis the mapped dim is split over; as in JAX's explicit sharding mode, it is checked
    against the arguments' layouts and changes nothing else.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(lambda x, y: jnp.dot(x, y), in_axes=(0, None))(jnp.ones((3, 2)),
        ...                                                        jnp.ones(2))
        Array([2., 2., 2.], dtype=float32)
    """
    check_callable(fun)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or type(in_axes) is int or isinstance(in_axes, tuple)):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries "
                        f"corresponding to the positional arguments passed to the function, "
                        f"but got {in_axes!r}.")
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    name = getattr(fun, "__name__", "fun")

    def batched(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                f"the positional arguments passed to the function, but got len(in_axes)="
                f"{len(in_axes)}, len(args)={len(args)} (vmap of {name}).")
        leaves, in_tree = tree_flatten((args, kwargs))
        dims = _flat_in_axes(in_axes, args, kwargs, in_tree, name)
        dims = _canonical_axes(dims, leaves, in_tree, (args, kwargs), name)
        size = _axis_size(leaves, dims, axis_size, (args, kwargs), name)
        leaves, dims = _float0_unmapped(leaves, dims)
        split = _batch_split(spmd_axis_name, leaves, dims)
        out_tree_box = []

        def flat_fun(*tracers):
            a, k = tree_unflatten(in_tree, tracers)
            out_flat, out_tree = tree_flatten(fun(*a, **k))
            out_tree_box.append(out_tree)
            return out_flat

        axis = AxisData(axis_name, size, split)
        vals_out, dims_out = batch_fun(flat_fun, axis, leaves, dims)
        out_tree = out_tree_box[0]
        wanted = _flat_out_axes(out_axes, out_tree, name)
        outs = [_place_output(v, d, w, axis, name) for v, d, w in zip(vals_out, dims_out, wanted)]
        return tree_unflatten(out_tree, outs)

    batched.__name__ = f"vmap({name})"
    batched.__wrapped__ = fun
    return batched
# --8<-- [end:vmap]


def _batch_split(spmd_axis_name: Any, leaves: list, dims: list) -> Any:
    """How the mapped dims are split (stage 4's types say; see ``AxisData.split``), after
    JAX's checks: all split alike, and over the ``spmd_axis_name`` given, if one is."""
    layouts = [(leaf, batch_layout(leaf, d)) for leaf, d in zip(leaves, dims) if d is not None]
    splits = {(entry,) if isinstance(entry, str) else tuple(entry or ()) for _, entry in layouts}
    if len(splits) > 1:
        shown = " vs ".join(",".join(s) or "None" for s in sorted(splits))
        raise ValueError(f"Mapped away dimension of inputs passed to vmap should be sharded "
                         f"the same. Got inconsistent axis specs: {shown}. Reshard the "
                         f"arguments so that the mapped dims are split alike.")
    wanted = (spmd_axis_name,) if isinstance(spmd_axis_name, str) else tuple(
        spmd_axis_name or ())
    for split in splits:
        if wanted and split and split != wanted:
            raise ValueError(
                f"Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis type "
                f"is allowed. Got spmd_axis_name={wanted} and arrays sharded on "
                f"explicit_mesh_axis={split}: vmap over the axis the arguments are split "
                f"over, or reshard them first.")
    leaf, entry = next(((leaf, entry) for leaf, entry in layouts if entry), (None, None))
    if entry is None:
        return None
    sharding = get_aval(leaf).sharding
    return sharding.with_spec(type(sharding.spec)(entry))


def _check_axes_spec(axes: Any, what: str) -> None:
    for leaf in tree_flatten(axes)[0]:
        if leaf is not None and type(leaf) is not int:
            raise TypeError(f"vmap {what} must be an int, None, or a (nested) container with "
                            f"those types as leaves, but got {leaf!r} of type "
                            f"{type(leaf).__name__}.")


def _flat_in_axes(in_axes: Any, args: tuple, kwargs: dict, in_tree: Any,
                  name: str) -> list[int | None]:
    """One axis per argument leaf: ``in_axes`` broadcast over the positional arguments (a
    prefix of their structure), axis 0 for every keyword argument leaf."""
    args_def, kwargs_def = in_tree.children_defs
    if not isinstance(in_axes, tuple):  # the common case: counting the leaves is enough
        return [in_axes] * args_def.num_leaves + [0] * kwargs_def.num_leaves
    axes_for_args = in_axes
    flat: list[int | None] = []
    for i, (arg, axes) in enumerate(zip(args, axes_for_args)):
        flat += _broadcast_prefix(axes, arg, f"args[{i}]", "in_axes", name)
    return flat + [0] * kwargs_def.num_leaves


def _broadcast_prefix(prefix: Any, tree: Any, where: str, what: str, name: str) -> list:
    """The leaves of ``prefix`` repeated over the subtrees of ``tree`` they stand for."""
    if prefix is None or type(prefix) is int:
        return [prefix] * len(tree_flatten(tree)[0])
    try:
        return broadcast_prefix(prefix, tree, is_leaf=lambda x: x is None)
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"vmap {what} specification must be a tree prefix of the corresponding value, "
            f"got specification {prefix!r} for value tree {tree_structure(tree)} at {where} "
            f"(vmap of {name}). {e}") from None


def _paths(tree: Any) -> list[str]:
    """``args[0]['w']``-style names of each leaf, for error messages."""
    names = []
    for path, _ in tree_flatten_with_path(tree)[0]:
        if path[0].idx == 0:
            names.append(f"args[{path[1].idx}]{keystr(path[2:])}")
        else:
            names.append(f"kwargs['{path[1].key}']{keystr(path[2:])}")
    return names


def _canonical_axes(dims: list, leaves: list, in_tree: Any, tree: Any,
                    name: str) -> list[int | None]:
    """Each mapped axis in [0, rank): checked, negative ones counted from the end. The
    argument names an error needs are found only then."""
    keys = _key_leaves(in_tree)
    out: list[int | None] = []
    for i, d in enumerate(dims):
        if d is not None:
            ndim = _aval(leaves[i]).ndim - keys[i]
            if not -ndim <= d < ndim:
                _canonical_axis(d, ndim, leaves[i], _paths(tree)[i], name)  # raises
            d %= ndim
        out.append(d)
    return out


def _key_leaves(treedef: Any) -> tuple[bool, ...]:
    """For each leaf, whether it is a typed key array's uint32 data (shape ``s + (2,)``),
    whose rank to the user is ``len(s)``: ``in_axes=-1`` maps over keys, not their words."""
    if treedef.node_type is None:
        return (False,)
    if treedef.node_type is PRNGKeyArray:
        return (True,)
    return tuple(k for child in treedef.children_defs for k in _key_leaves(child))


def _canonical_axis(axis: int, ndim: int, leaf: Any, path: str, name: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap was requested to map its argument along axis {axis}, which implies that "
            f"its rank should be at least {axis + 1 if axis >= 0 else -axis}, but is only "
            f"{ndim} (its shape is {_aval(leaf).shape}): argument {path} of vmap of {name}.")
    return axis % ndim


def _axis_size(leaves: list, dims: list, axis_size: int | None, tree: Any, name: str) -> int:
    sizes = {_aval(x).shape[d] for x, d in zip(leaves, dims) if d is not None}
    if not sizes:
        if axis_size is None:
            raise ValueError(f"vmap must have at least one non-None value in in_axes, or be "
                             f"given axis_size (vmap of {name}).")
        return axis_size
    if len(sizes) > 1 or (axis_size is not None and axis_size not in sizes):
        lines = [f"  {path} of type {_aval(x).str_short()} is mapped along axis {d}, "
                 f"of size {_aval(x).shape[d]}"
                 for x, d, path in zip(leaves, dims, _paths(tree)) if d is not None]
        given = [] if axis_size is None else [f"  axis_size was given as {axis_size}"]
        raise ValueError(f"vmap got inconsistent sizes for the array axes to be mapped "
                         f"(vmap of {name}):\n" + "\n".join(lines + given))
    return sizes.pop()


def _aval(x: Any) -> ShapedArray:
    """``x``'s type; a float0 array's (a gradient of integers) from its shape alone."""
    return ShapedArray(x.shape, dtypes.float0) if dtypes.is_float0(x) else get_aval(x)


def _float0_unmapped(leaves: list, dims: list) -> tuple[list, list]:
    """float0 arguments hold no values, so each example's is the same zeros: they enter the
    function unmapped, one example's shape."""
    if not any(dtypes.is_float0(x) for x in leaves):
        return leaves, dims
    return ([np.zeros(x.shape[:d] + x.shape[d + 1:], dtypes.float0)
             if dtypes.is_float0(x) and d is not None else x for x, d in zip(leaves, dims)],
            [not_mapped if dtypes.is_float0(x) else d for x, d in zip(leaves, dims)])


def _flat_out_axes(out_axes: Any, out_tree: Any, name: str) -> list[int | None]:
    if out_axes is None or type(out_axes) is int:
        return [out_axes] * out_tree.num_leaves
    dummy = tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    return _broadcast_prefix(out_axes, dummy, "the result", "out_axes", name)


# --8<-- [start:place_output]
def _place_output(val: Any, dim: int | None, wanted: int | None, axis: AxisData,
                  name: str) -> Any:
    """A result with its batch axis where ``out_axes`` asks: moved, or broadcast for a result
    that does not depend on the batch; ``out_axes=None`` only for such results."""
    if wanted is None:
        if dim is not not_mapped:
            raise ValueError(
                f"vmap has mapped output but out_axes is None: a result of {name} depends on "
                f"the mapped axis, so it cannot be returned unmapped. Give it an out_axes "
                f"entry (0, for example), or return a value that does not depend on the "
                f"mapped arguments.")
        return val
    ndim = _aval(val).ndim + (dim is not_mapped)
    if not -ndim <= wanted < ndim:
        raise ValueError(f"vmap out_axes {wanted} is out of range for a result of rank "
                         f"{ndim} (vmap of {name}).")
    if dtypes.is_float0(val):  # never mapped (float0 arguments enter unmapped): zeros
        shape = list(val.shape)
        shape.insert(wanted % ndim, axis.size)
        return np.zeros(shape, dtypes.float0)
    return bdim_at(val, dim, wanted % ndim, axis, lay_out_constant=True)  # (as JAX's)
# --8<-- [end:place_output]


# --8<-- [start:axis_frame]
class BoundAxis(NamedTuple):
    """A named axis bound by something other than ``vmap``: stage 4's ``shard_map`` binds
    its mesh axes while it traces its body, so a collective over one is staged into the body
    (at the level of the interpreter that traces it), where devices will run it."""
    main: MainTrace
    global_data: AxisData

    @property
    def level(self) -> int:
        return self.main.level

    @property
    def trace(self) -> Any:
        return self.main.trace


bound_axes: list[BoundAxis] = []  # innermost last


def axis_frame(axis_name: Any) -> MainTrace | BoundAxis:
    """The innermost ``vmap`` (its MainTrace) whose ``axis_name`` is ``axis_name``, else
    the innermost axis of that name that stage 4 bound."""
    for main in reversed(trace_state.trace_stack):
        if main.trace_type is BatchTrace and main.global_data.name == axis_name:
            return main
    for axis in reversed(bound_axes):
        if axis.global_data.name == axis_name:
            return axis
    raise NameError(f"unbound axis name: {axis_name}. The name must be given to an "
                    f"enclosing vmap (vmap(f, axis_name={axis_name!r})) around this call.")
# --8<-- [end:axis_frame]



# ------------------------------------------------------------------------------------------
# jit_p: batching a jitted function batches its program, once
# ------------------------------------------------------------------------------------------

_batched_programs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# --8<-- [start:batch_jaxpr]
def batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData, vals: Sequence[Any],
                dims: tuple[int | None, ...]) -> tuple[ClosedJaxpr, list[Any], list]:
    """The program that computes ``closed`` for a whole batch (operands ``vals``, batched at
    ``dims`` and typed as they are), its constants, and its results' batch dims: traced once
    per (axis, dims, types) and kept."""
    per_program = _batched_programs.setdefault(closed, {})
    avals = tuple(aval if d is not_mapped else _laid_out_as(
        _with_batch(aval, d, axis_data.size), get_aval(v)) for aval, v, d in
        zip(closed.in_avals, vals, dims))
    key = (axis_data, dims, avals)
    if key not in per_program:
        dims_box: list = []

        def batched(*args):
            outs, out_dims = batch_fun(jaxpr_as_fun(closed), axis_data, args, dims)
            dims_box.append(out_dims)
            return outs

        jaxpr, consts = trace_to_jaxpr(batched, avals)
        program, consts = closed_with_consts_as_args(jaxpr, consts)
        per_program[key] = (program, consts, dims_box[0])
    return per_program[key]


def jit_batching_rule(axis_data: AxisData, vals, dims, *, jaxpr, name, backend):
    program, consts, out_dims = batch_jaxpr(jaxpr, axis_data, vals, tuple(dims))
    outs = jit_p.bind(*consts, *vals, jaxpr=program, name=name, backend=backend)
    return outs, out_dims
batching_rules[jit_p] = jit_batching_rule


def remat_batching_rule(axis_data: AxisData, vals, dims, *, jaxpr, **params):
    """``remat2`` of the batched program (stage 2's remat.py), its policy kept."""
    program, consts, out_dims = batch_jaxpr(jaxpr, axis_data, vals, tuple(dims))
    return remat_p.bind(*consts, *vals, jaxpr=program, **params), out_dims
batching_rules[remat_p] = remat_batching_rule
# --8<-- [end:batch_jaxpr]


def _with_batch(aval: ShapedArray, dim: int, size: int) -> ShapedArray:
    shape = list(aval.shape)
    shape.insert(dim, size)
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _laid_out_as(aval: Any, operand: Any) -> Any:
    """``aval`` with the sharding of ``operand`` (a type) when their shapes agree: a batched
    program then sees its operands laid out as they are (a batched carry split over a mesh
    stays split). NB: JAX's batched types keep the batch dim's sharding the same way."""
    if operand is None or operand.sharding is None or operand.shape != aval.shape:
        return aval
    return aval._replace(sharding=operand.sharding)
