"""Sharding in types: for each primitive, the sharding of its results from its operands', as
in JAX's explicit mode. A rule either finds the one sharding that needs no guess, or raises an
error that names the op, its operands' types (``float32[8@data,4]``) and the fix.

A spec here is a tuple with one entry per dim: a tuple of mesh axis names (major first), empty
for a dim that is not split. Rules see only avals and specs, never values.

- Elementwise ops: operands of one shape must agree dim by dim (an unsplit dim takes the other
  operand's split); two different splits of a dim are an error.
- Reductions drop the reduced dims (on devices: an all-reduce), ``dot_general`` keeps batch and
  free dims' splits and drops a contracting dim split on one side (an all-gather); split on both
  sides, the result's layout is a choice (a reduce-scatter or an all-reduce), so it is an error.
- Shape ops carry splits along, as JAX's rules do: transpose permutes them; rev, slice, pad and
  concatenate keep the operand's (a sliced or padded split dim must still divide evenly over its
  mesh axes; concatenated operands must be split alike); reshape keeps them through one split
  or one merge of dims (JAX's decisions, below). Dims that sorting or indexing read whole must
  not be split.
- Ops that make arrays from nothing (``iota``) are replicated.

NB: in JAX these are the ``sharding_rule`` of each primitive (jax/_src/lax/lax.py and friends,
through ``standard_primitive``'s ``sharding_rule``), checked in explicit mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from stage1_autodiff.core import Primitive, PrimitiveKind, ShapedArray, primitives_of_kind
from stage1_autodiff.fft import fft_p
from stage1_autodiff.slicing import window_operand_dims
from stage2_jit.abstract_eval import abstract_eval_rules

from stage1_autodiff import linalg, random_distributions
from stage1_autodiff import prims as p

Spec = tuple[tuple[str, ...], ...]
ShardingRule = Callable[..., list[Spec]]
sharding_rules: dict[Primitive, ShardingRule] = {}


class ShardingTypeError(TypeError):
    """An op whose operands' shardings leave its result's sharding ambiguous or impossible."""


def describe(aval: ShapedArray, spec: Spec) -> str:
    dims = []
    for size, axes in zip(aval.shape, spec):
        dims.append(str(size) if not axes else
                    f"{size}@{axes[0]}" if len(axes) == 1 else f"{size}@({','.join(axes)})")
    return f"{aval.dtype.name}[{','.join(dims)}]"


def _error(prim: Primitive, avals: Sequence[ShapedArray], specs: Sequence[Spec],
           why: str, fix: str) -> ShardingTypeError:
    types = ", ".join(describe(a, s) for a, s in zip(avals, specs))
    return ShardingTypeError(f"{prim.name} got operands of types {types}: {why}. {fix}")


def unsplit(ndim: int) -> Spec:
    return ((),) * ndim


# ------------------------------------------------------------------------------------------
# Elementwise
# ------------------------------------------------------------------------------------------


def _agree(prim: Primitive, avals: Sequence[ShapedArray], specs: Sequence[Spec]) -> Spec:
    """The one spec all full-rank operands allow, dim by dim (scalars do not vote)."""
    ndim = max(a.ndim for a in avals)
    out: list[tuple[str, ...]] = [()] * ndim
    for aval, spec in zip(avals, specs):
        if aval.ndim != ndim:
            continue
        for d, axes in enumerate(spec):
            if axes and out[d] and axes != out[d]:
                raise _error(prim, avals, specs, f"dim {d} is split over {out[d]} in one "
                             f"operand and over {axes} in another",
                             "Reshard one of them (jax.sharding.reshard) so they agree.")
            out[d] = axes or out[d]
    _check_no_axis_twice(prim, avals, specs, out)
    return tuple(out)


def _check_no_axis_twice(prim, avals, specs, out: Sequence[tuple[str, ...]]) -> None:
    used = [name for axes in out for name in axes]
    if len(used) != len(set(used)):
        raise _error(prim, avals, specs, "the result would split two dims over the same mesh "
                     "axis", "Reshard one operand so a mesh axis splits one dim only.")


def _elementwise(prim: Primitive) -> ShardingRule:
    def rule(avals, specs, **params):
        spec = _agree(prim, avals, specs)
        return [spec] * (2 if prim.multiple_results else 1)
    return rule


# Every primitive stage 1 declares elementwise; select_n's stricter rule follows.
for _prim in primitives_of_kind(PrimitiveKind.ELEMENTWISE):
    sharding_rules[_prim] = _elementwise(_prim)


def select_n_sharding_rule(avals, specs):
    """JAX's rule, stricter than the other elementwise ops': the cases laid out alike, and
    the predicate a scalar or laid out as they are (no split is inferred from one side).
    An operand without a layout in its type (a NumPy array, a constant the program makes)
    takes theirs, as JAX's uncommitted arrays do."""
    typed = [(a, s) for a, s in zip(avals, specs) if a.sharding is not None]
    case_specs = [s for a, s in typed if a is not avals[0]] or [s for _, s in typed]
    out = case_specs[0] if case_specs else specs[1]
    if any(spec != out for spec in case_specs):
        raise _error(p.select_n_p, avals, specs, "its cases are laid out differently",
                     "Reshard them alike first (jax.sharding.reshard).")
    if avals[0].ndim and avals[0].sharding is not None and specs[0] != out:
        raise _error(p.select_n_p, avals, specs, "its predicate is laid out differently "
                     "from its cases", "Reshard it as they are, or use a scalar predicate.")
    return [out]
sharding_rules[p.select_n_p] = select_n_sharding_rule


# ------------------------------------------------------------------------------------------
# Shapes
# ------------------------------------------------------------------------------------------


def _asked_spec(prim, avals, specs, out_sharding: Any, ndim: int) -> Spec:
    """The layout an ``out_sharding`` asks for (a sharding or a bare spec), checked to have
    no more entries than the result has dims."""
    given = out_sharding.spec if hasattr(out_sharding, "spec") else out_sharding
    if len(given) > ndim:
        raise _error(prim, avals, specs, f"out_sharding {given} has more entries than the "
                     f"result has dims ({ndim})",
                     "Give one entry per result dim (or fewer: the rest are not split).")
    return spec_of(given, ndim)


def broadcast_in_dim_sharding_rule(avals, specs, *, shape, broadcast_dimensions,
                                   out_sharding=None):
    (aval,), (spec,) = avals, specs
    if out_sharding is not None:  # the caller said (a cotangent says its primal's layout)
        return [_asked_spec(p.broadcast_in_dim_p, avals, specs, out_sharding, len(shape))]
    out: list[tuple[str, ...]] = [()] * len(shape)
    for d, axes in zip(broadcast_dimensions, spec):
        if axes and aval.shape[list(broadcast_dimensions).index(d)] != shape[d]:
            raise _error(p.broadcast_in_dim_p, avals, specs,
                         f"a split dim of size 1 cannot be broadcast to {shape[d]}",
                         "Reshard the operand unsplit first.")
        out[d] = axes
    return [tuple(out)]
sharding_rules[p.broadcast_in_dim_p] = broadcast_in_dim_sharding_rule


def reshape_sharding_rule(avals, specs, *, new_sizes, dimensions, out_sharding=None):
    """JAX's decisions. Adding or removing dims of size 1 carries every split along. Splitting
    one dim into a run of dims deals its mesh axes out to the run, major first: each new dim
    takes axes while its size is not used up, and each axis must divide what is left. Merging
    a run of dims into one gives it the run's axes, major first, if the split dims come first
    in the run. Any other reshape of a split operand is an error.

    ``out_sharding``, where given, decides: any layout can be reached (the partitioner
    gathers what moves between devices).

    NB: in JAX this is ``_reshape_sharding_rule`` in jax/_src/lax/lax.py."""
    (aval,), (spec,) = avals, specs
    shape, new_sizes = tuple(aval.shape), tuple(new_sizes)
    if out_sharding is not None:
        return [_asked_spec(p.reshape_p, avals, specs, out_sharding, len(new_sizes))]
    if not any(spec):
        return [unsplit(len(new_sizes))]
    if _without_ones(shape) == _without_ones(new_sizes):
        return [_through_ones(shape, spec, new_sizes)]
    start, old_stop, new_stop = _changed_run(shape, new_sizes)
    if old_stop - start == 1:  # one dim split into several
        axes = spec[start]
    elif new_stop - start == 1:  # several dims merged into one
        axes = _merged_axes(avals, specs, new_sizes, spec[start:old_stop])
    else:
        raise _reshape_error(avals, specs, new_sizes, "it neither splits one dim nor merges "
                             "one run of dims, so no rule says where the splits go")
    dealt = _deal_axes(axes, new_sizes[start:new_stop], _mesh_sizes(avals))
    if dealt is None:
        raise _reshape_error(avals, specs, new_sizes, f"the mesh axes {axes} do not divide "
                             f"the new dims {new_sizes[start:new_stop]} major first")
    return [(*spec[:start], *dealt, *spec[old_stop:])]
sharding_rules[p.reshape_p] = reshape_sharding_rule


def _without_ones(shape: Sequence[int]) -> list[int]:
    return [n for n in shape if n != 1]


def _through_ones(shape: Sequence[int], spec: Spec, new_sizes: Sequence[int]) -> Spec:
    """Dims of size 1 come and go: the other dims keep their splits, in order (a split on a
    dim of size 1, over a mesh axis of size 1, goes with it)."""
    kept = iter(axes for n, axes in zip(shape, spec) if n != 1)
    return tuple(() if n == 1 else next(kept) for n in new_sizes)


def _changed_run(shape: Sequence[int], new_sizes: Sequence[int]) -> tuple[int, int, int]:
    """Where the reshape changes dims: the common leading and trailing dims stay; the run
    in between is ``shape[start:old_stop]``, which becomes ``new_sizes[start:new_stop]``."""
    start = 0
    while start < min(len(shape), len(new_sizes)) and shape[start] == new_sizes[start]:
        start += 1
    end = 0
    while (end < min(len(shape), len(new_sizes)) - start
           and shape[-1 - end] == new_sizes[-1 - end]):
        end += 1
    return start, len(shape) - end, len(new_sizes) - end


def _merged_axes(avals, specs, new_sizes, run: Spec) -> tuple[str, ...]:
    """The axes of a run of merged dims, major first; its split dims must come first (an
    unsplit dim before a split one would leave each device's elements apart)."""
    split = [d for d, axes in enumerate(run) if axes]
    if split and any(not axes for axes in run[:split[-1]]):
        raise _reshape_error(avals, specs, new_sizes, "in the dims it merges, an unsplit "
                             "dim comes before a split one")
    return tuple(name for axes in run for name in axes)


def _deal_axes(axes: Sequence[str], sizes: Sequence[int],
               mesh_sizes: dict[str, int]) -> list[tuple[str, ...]] | None:
    """Mesh axes dealt out to new dims, major first; None where an axis does not divide."""
    left, dealt = list(axes), []
    for n in sizes:
        taken: list[str] = []
        while n > 1 and left:
            if n % mesh_sizes[left[0]]:
                return None
            n //= mesh_sizes[left[0]]
            taken.append(left.pop(0))
        dealt.append(tuple(taken))
    return None if left else dealt


def _reshape_error(avals, specs, new_sizes, why: str) -> ShardingTypeError:
    return _error(p.reshape_p, avals, specs, f"reshaping to {tuple(new_sizes)}: {why}",
                  "Say where the result's splits go with the reshape's out_sharding=, or "
                  "reshard the operand first (jax.sharding.reshard), for example with the "
                  "reshaped dims unsplit.")


def _mesh_sizes(avals: Sequence[ShapedArray]) -> dict[str, int]:
    """The sizes of the mesh axes the operands are split over (a rule sees only avals)."""
    for aval in avals:
        if aval.sharding is not None:
            return aval.sharding.mesh.shape
    return {}


def _axes_size(mesh_sizes: dict[str, int], axes: Sequence[str]) -> int:
    return math.prod(mesh_sizes[name] for name in axes)


def transpose_sharding_rule(avals, specs, *, permutation):
    return [tuple(specs[0][d] for d in permutation)]
sharding_rules[p.transpose_p] = transpose_sharding_rule


def squeeze_sharding_rule(avals, specs, *, dimensions):
    return [tuple(axes for d, axes in enumerate(specs[0]) if d not in dimensions)]
sharding_rules[p.squeeze_p] = squeeze_sharding_rule


def _whole_dims(prim: Primitive, dims: Callable[..., Sequence[int]]) -> ShardingRule:
    """Ops that read some dims whole (sorting along them): those must not be split; the
    others keep their split."""
    def rule(avals, specs, **params):
        read_whole = set(dims(avals, **params))
        for d in read_whole:
            for spec in specs:
                if d < len(spec) and spec[d]:
                    raise _error(prim, avals, specs, f"dim {d} is split over {spec[d]}, but "
                                 f"{prim.name} needs it whole",
                                 f"Reshard dim {d} unsplit first (jax.sharding.reshard).")
        spec = _agree(prim, avals, specs)
        return [spec] * (len(avals) if prim is p.sort_p else 1)
    return rule


sharding_rules[p.sort_p] = _whole_dims(
    p.sort_p, lambda avals, *, dimension, num_keys: [dimension])
for _prim in p.CUMULATIVE:  # the scanned dim whole
    sharding_rules[_prim] = _whole_dims(_prim, lambda avals, *, axis, reverse: [axis])


def top_k_sharding_rule(avals, specs, *, k, axis):
    """Values and indices laid out as the operand, whose ``axis`` must be whole."""
    spec, = _whole_dims(p.top_k_p, lambda avals, *, k, axis: [axis])(avals, specs, k=k,
                                                                      axis=axis)
    return [spec, spec]
sharding_rules[p.top_k_p] = top_k_sharding_rule


def _window_fits_split_dims(prim, avals, specs, sizes) -> Spec:
    """A dynamic slice's (update's) layout: the operand's (and the update's, which must
    agree, as JAX's). A split dim sliced at a computed start keeps its axes, so the window
    must divide among them, as JAX asks."""
    spec = _agree(prim, avals[:2], specs[:2]) if prim is p.dynamic_update_slice_p else specs[0]
    mesh_sizes = _mesh_sizes(avals)
    for d, (m, axes) in enumerate(zip(sizes, spec)):
        if axes and m % _axes_size(mesh_sizes, axes):
            raise _error(prim, avals, specs, f"dim {d} is split over {axes} (into "
                         f"{_axes_size(mesh_sizes, axes)}) and the window's {m} elements do "
                         f"not divide among them", f"Reshard dim {d} unsplit first "
                         f"(jax.sharding.reshard), or take a window that divides.")
    return spec


def dynamic_slice_sharding_rule(avals, specs, *, slice_sizes):
    return [_window_fits_split_dims(p.dynamic_slice_p, avals, specs, slice_sizes)]
sharding_rules[p.dynamic_slice_p] = dynamic_slice_sharding_rule


def dynamic_update_slice_sharding_rule(avals, specs):
    return [_window_fits_split_dims(p.dynamic_update_slice_p, avals, specs, avals[1].shape)]
sharding_rules[p.dynamic_update_slice_p] = dynamic_update_slice_sharding_rule


def _linalg(prim: Primitive) -> ShardingRule:
    """A linear-algebra primitive (stage 1's linalg.py) maps over its batch dims, which keep
    their split, alike in every operand; it reads each matrix whole, so the matrix dims must
    not be split. NB: JAX's ``linalg_sharding_rule`` in jax/_src/lax/linalg.py."""
    ranks = linalg.LINALG[prim].ranks

    def rule(avals, specs, **params):
        batches = [spec[:aval.ndim - rank] for aval, spec, rank in zip(avals, specs, ranks)]
        for aval, spec, batch in zip(avals, specs, batches):
            split = [d for d in range(len(batch), aval.ndim) if spec[d]]
            if split:
                raise _error(prim, avals, specs, f"matrix dim {split[0]} is split over "
                             f"{spec[split[0]]}, but {prim.name} reads each matrix whole",
                             "Reshard the matrix dims unsplit first (jax.sharding.reshard), "
                             "or split a batch dim instead.")
        if any(batch != batches[0] for batch in batches):
            raise _error(prim, avals, specs, "the operands' batch dims are split differently",
                         "Reshard them alike (jax.sharding.reshard).")
        outs = abstract_eval_rules[prim](*avals, **params)
        outs = outs if prim.multiple_results else [outs]
        return [batches[0] + unsplit(out.ndim - len(batches[0])) for out in outs]
    return rule


for _prim in linalg.LINALG:
    sharding_rules[_prim] = _linalg(_prim)


def random_poisson_sharding_rule(avals, specs, *, dtype):
    """The rates' layout, whatever it is: the partitioner draws the samples whole (every
    element of one key's block runs as many rounds as the slowest, which one device alone
    cannot know) and each device keeps its block, so sharded equals unsharded."""
    return [specs[1]]
sharding_rules[random_distributions.random_poisson_p] = random_poisson_sharding_rule


def rev_sharding_rule(avals, specs, *, dimensions):
    """The operand's layout: a reversed split dim stays split, and its blocks trade places
    on the devices (the partitioner's collective permute)."""
    return [specs[0]]
sharding_rules[p.rev_p] = rev_sharding_rule


def tile_sharding_rule(avals, specs, *, reps):
    """The operand's layout, where every repeated dim is whole (a split one would need each
    device to hold copies of the others' blocks)."""
    for d, (r, axes) in enumerate(zip(reps, specs[0])):
        if r != 1 and axes:
            raise _error(p.tile_p, avals, specs, f"dim {d} is split over {axes} and repeated "
                         f"{r} times", f"Reshard dim {d} unsplit first (jax.sharding.reshard).")
    return [specs[0]]
sharding_rules[p.tile_p] = tile_sharding_rule


def _resized(prim: Primitive) -> ShardingRule:
    """Slicing and padding keep the operand's layout, as JAX does; a split dim whose size
    changes must still divide evenly over its mesh axes (blocks are all one size). The
    partitioner then moves the elements that end up on another device."""
    def rule(avals, specs, **params):
        (aval, *_), (spec, *_) = avals, specs
        out_shape = abstract_eval_rules[prim](*avals, **params).shape
        mesh_sizes = _mesh_sizes(avals)
        for d, (n, m, axes) in enumerate(zip(aval.shape, out_shape, spec)):
            if axes and n != m and m % _axes_size(mesh_sizes, axes):
                raise _error(prim, avals, specs, f"dim {d}, split over {axes} "
                             f"({_axes_size(mesh_sizes, axes)} blocks), would have size {m}, "
                             f"which does not divide into that many blocks",
                             f"Reshard dim {d} unsplit first (jax.sharding.reshard), or "
                             f"choose a result size that divides evenly.")
        return [spec]
    return rule


sharding_rules[p.slice_p] = _resized(p.slice_p)
sharding_rules[p.pad_p] = _resized(p.pad_p)
# Windows keep the operand's layout too, as JAX's ``reduce_window_sharding_rule`` does (the
# partitioner reads whole the dims whose windows span several elements).
for _prim in p.REDUCE_WINDOWS:
    sharding_rules[_prim] = _resized(_prim)


def conv_general_dilated_sharding_rule(avals, specs, **params):
    """``out_sharding`` when given (the kernel's cotangent gives its kernel's: there the
    contracted dim is the batch, which may be split); else the lhs's layout, dim by dim, as
    JAX's rule gives it (the partitioner keeps only the batch split on the devices), where
    the kernel must be replicated and the lhs features whole.
    NB: JAX's ``_conv_general_dilated_sharding_rule`` in jax/_src/lax/convolution.py."""
    if params["out_sharding"] is not None:
        return [spec_of(params["out_sharding"].spec, avals[0].ndim)]
    feature = params["dimension_numbers"].lhs_spec[1]
    if any(specs[1]) or specs[0][feature]:
        raise _error(p.conv_general_dilated_p, avals, specs, "the kernel is split, or the "
                     "lhs feature dim is", "Reshard the kernel replicated and the lhs feature "
                     "dim unsplit (jax.sharding.reshard); split the batch dim instead.")
    return _resized(p.conv_general_dilated_p)(avals, specs, **params)
sharding_rules[p.conv_general_dilated_p] = conv_general_dilated_sharding_rule


def concatenate_sharding_rule(avals, specs, *, dimension):
    """The operands' one layout, as JAX asks: operands split differently (or one split and
    one replicated) are an error. A value made inside the program (a constant) has no
    sharding and takes the others' layout, as a JAX value with no mesh does."""
    placed = [spec for aval, spec in zip(avals, specs) if aval.sharding is not None]
    if not placed:
        return [unsplit(avals[0].ndim)]
    for spec in placed[1:]:
        if spec != placed[0]:
            raise _error(p.concatenate_p, avals, specs, "its operands are laid out "
                         "differently, and JAX asks them to agree",
                         "Reshard them to one layout first (jax.sharding.reshard).")
    return [placed[0]]
sharding_rules[p.concatenate_p] = concatenate_sharding_rule


def iota_sharding_rule(avals, specs, *, dtype, shape, dimension):
    return [unsplit(len(shape))]
sharding_rules[p.iota_p] = iota_sharding_rule


# ------------------------------------------------------------------------------------------
# Reductions and contractions
# ------------------------------------------------------------------------------------------


def reduction_sharding_rule(avals, specs, *, axes, **params):
    """The reduced dims go (each device reduces its block, then an all-reduce combines)."""
    return [tuple(a for d, a in enumerate(specs[0]) if d not in axes)]


for _prim in [*primitives_of_kind(PrimitiveKind.REDUCTION), *p.ARG_REDUCTIONS]:
    sharding_rules[_prim] = reduction_sharding_rule


def dot_general_sharding_rule(avals, specs, *, dimension_numbers, preferred_element_type,
                              out_sharding=None):
    # --8<-- [start:task4_1]
    (lc, rc), (lb, rb) = dimension_numbers
    (x, y), (xs, ys) = avals, specs
    if out_sharding is not None:  # the caller said (a gradient says its primal's layout)
        ndim = x.ndim + y.ndim - len(lc) - len(rc) - len(lb)
        return [_asked_spec(p.dot_general_p, avals, specs, out_sharding, ndim)]
    for dx, dy in zip(lc, rc):
        if xs[dx] and ys[dy]:
            raise _error(p.dot_general_p, avals, specs,
                         f"both operands' contracting dims are split (over {xs[dx]} and "
                         f"{ys[dy]}), so the result could be split either way: its sharding "
                         f"is ambiguous",
                         "Say which with out_sharding (out_sharding=P() for a replicated "
                         "result, an all-reduce), or reshard one operand's contracting dim "
                         "unsplit. (An eager gradient gets here when its parameter is a "
                         "plain array: put the parameters on the mesh first, "
                         "jax.device_put(params, P()), or take the gradient under jit.)")
    batch = []
    for dx, dy in zip(lb, rb):
        if xs[dx] != ys[dy]:  # as JAX: a split on one side only is an error too
            raise _error(p.dot_general_p, avals, specs,
                         f"batch dims {dx} and {dy} are split differently",
                         "Reshard one operand so its batch dims match the other's.")
        batch.append(xs[dx] or ys[dy])
    x_free = [xs[d] for d in range(x.ndim) if d not in lc and d not in lb]
    y_free = [ys[d] for d in range(y.ndim) if d not in rc and d not in rb]
    out = (*batch, *x_free, *y_free)
    _check_no_axis_twice(p.dot_general_p, avals, specs, out)
    return [out]
    # --8<-- [end:task4_1]
sharding_rules[p.dot_general_p] = dot_general_sharding_rule


def _split_windows(prim, avals, specs, eqn_dims) -> dict[int, tuple[str, ...]]:
    """A gather's (scatter's) operand may be split only on window dims that span the whole
    dim: an indexed dim, or a window smaller than its dim, is read (written) anywhere.
    A batching dim may be split too (its indices dim says the same). Returns the split
    window dims, by operand dim."""
    operand_spec, (window_sizes, indexed, batching) = specs[0], eqn_dims
    split = {}
    for d, axes in enumerate(operand_spec):
        if not axes or d in batching:
            continue
        if d in indexed or window_sizes[d] != avals[0].shape[d]:
            raise _error(prim, avals, specs, f"operand dim {d} is split but indexed, or read "
                         f"through a window smaller than the dim",
                         "Reshard the indexed dims unsplit before indexing.")
        split[d] = axes
    return split


def gather_sharding_rule(avals, specs, *, dimension_numbers, slice_sizes, **_):
    """The result's window dims keep the operand's splits (whole-dim windows only), its
    batch dims the indices'; a batching pair of dims must agree."""
    dn, (operand, indices), (os_, is_) = dimension_numbers, avals, specs
    if is_[-1]:
        raise _error(p.gather_p, avals, specs, "the index vectors' dim is split",
                     "Reshard the indices unsplit along their last dim.")
    split = _split_windows(p.gather_p, avals, specs,
                                      (slice_sizes, dn.start_index_map,
                                       dn.operand_batching_dims))
    batch = list(is_[:-1])
    for d, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
        batch[i] = _agreeing(p.gather_p, avals, specs, os_[d], is_[i])
    window = window_operand_dims(operand.ndim, dn.collapsed_slice_dims, dn.operand_batching_dims)
    offsets = dict(zip(dn.offset_dims, window))
    batch_iter = iter(batch)
    rank = indices.ndim - 1 + len(dn.offset_dims)
    out = tuple(split.get(offsets[d], ()) if d in offsets else next(batch_iter)
                for d in range(rank))
    _check_no_axis_twice(p.gather_p, avals, specs, out)
    return [out]
sharding_rules[p.gather_p] = gather_sharding_rule


def _agreeing(prim, avals, specs, a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    if a and b and a != b:
        raise _error(prim, avals, specs, "a batching dim of the operand and its indices "
                     "dim are split differently", "Reshard one of them to match the other.")
    return a or b


def _scatter(prim: Primitive) -> ShardingRule:
    """The result is laid out as the operand, which may be split only on whole-dim windows
    (the partitioner gives the updates the same split there)."""
    def rule(avals, specs, *, dimension_numbers, **_):
        dn = dimension_numbers
        window = window_operand_dims(avals[0].ndim, dn.inserted_window_dims,
                                     dn.operand_batching_dims)
        sizes = [1] * avals[0].ndim
        for d, u in zip(window, dn.update_window_dims):
            sizes[d] = avals[2].shape[u]
        _split_windows(prim, avals, specs, (sizes, dn.scatter_dims_to_operand_dims,
                                            dn.operand_batching_dims))
        return [specs[0]]
    return rule


for _prim in p.SCATTERS:
    sharding_rules[_prim] = _scatter(_prim)


def spec_of(sharding_spec: Any, ndim: int) -> Spec:
    """A PartitionSpec as a rule's spec: one tuple of axis names per dim."""
    out = []
    for d in range(ndim):
        entry = sharding_spec[d] if d < len(sharding_spec) else None
        out.append(() if entry is None else entry if isinstance(entry, tuple) else (entry,))
    return tuple(out)


# ------------------------------------------------------------------------------------------
# Programs: their results are laid out as their traced bodies say
# ------------------------------------------------------------------------------------------


def _program_outputs(avals_of: Callable[..., Sequence[ShapedArray]]) -> ShardingRule:
    def rule(avals, specs, **params):
        return [spec_of(a.sharding.spec, a.ndim) if a.sharding is not None else unsplit(a.ndim)
                for a in avals_of(**params)]
    return rule


# --8<-- [start:pure_callback_sharding_rule]
def pure_callback_sharding_rule(avals, specs, *, result_avals, sharding, **params):
    """A callback is called with the global values (the partitioner gathers them) and
    its results are replicated. ``sharding`` may only name one device, as in JAX.

    NB: JAX runs the callback on one device (device 0, or the one ``sharding`` names; XLA's
    maximal sharding) and leaves its results there; ours are on every device."""
    if sharding is not None and sharding.mesh.size != 1:
        raise NotImplementedError(
            f"pure_callback only supports SingleDeviceSharding, but got {type(sharding)}: "
            f"sharding= names the one device that calls the callback. Leave it None; "
            f"reshard the results (jax.sharding.reshard) to split them.")
    return [unsplit(a.ndim) for a in result_avals]
# --8<-- [end:pure_callback_sharding_rule]


def _register_program_rules() -> None:
    from stage1_autodiff.autodiff import custom_vjp_call_p
    from stage1_autodiff.custom_derivatives import custom_jvp_call_p
    from stage2_jit.callback import io_callback_p, pure_callback_p
    from stage2_jit.debug import debug_print_p
    from stage2_jit.jit import jit_p
    from stage2_jit.remat import remat_p
    sharding_rules[jit_p] = _program_outputs(lambda jaxpr, **_: jaxpr.out_avals)
    sharding_rules[custom_vjp_call_p] = _program_outputs(
        lambda call_jaxpr, **_: call_jaxpr.out_avals)
    sharding_rules[custom_jvp_call_p] = sharding_rules[custom_vjp_call_p]
    sharding_rules[remat_p] = sharding_rules[jit_p]
    sharding_rules[debug_print_p] = lambda avals, specs, **params: []
    sharding_rules[pure_callback_p] = pure_callback_sharding_rule
    sharding_rules[io_callback_p] = pure_callback_sharding_rule


def fft_sharding_rule(avals, specs, *, fft_type, fft_lengths):
    """The FFT reads each transformed (trailing) dim whole, so those must not be split; the
    leading dims keep their split. NB: JAX's ``_fft_sharding_rule`` (jax/_src/lax/fft.py)
    asks the same."""
    (x,), (spec,) = avals, specs
    n = x.ndim - len(fft_lengths)
    split = [d for d in range(n, x.ndim) if spec[d]]
    if split:
        raise _error(fft_p, avals, specs, f"transformed dim {split[0]} is split over "
                     f"{spec[split[0]]}, but the FFT reads it whole",
                     "Reshard it unsplit first (jax.sharding.reshard), or split a leading "
                     "dim instead.")
    return [tuple(spec[:n]) + unsplit(len(fft_lengths))]
sharding_rules[fft_p] = fft_sharding_rule


_register_program_rules()
