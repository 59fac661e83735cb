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
- Shape ops carry splits along (transpose permutes them; reshape keeps a split dim whose size and
  position among the split dims stay); dims that slicing, padding, sorting or indexing read whole
  must not be split.
- Ops that make arrays from nothing (``iota``) are replicated.

NB: in JAX these are the ``sharding_rule`` of each primitive (jax/_src/lax/lax.py and friends,
through ``standard_primitive``'s ``sharding_rule``), checked in explicit mode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stage1_autodiff.core import Primitive, ShapedArray
from stage2_jit.codegen_cpu import ELEMENTWISE

from stage1_autodiff import primitives as p

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
        return [spec] * (2 if prim is p.threefry2x32_p else 1)
    return rule


for _prim in [*ELEMENTWISE, p.threefry2x32_p]:
    sharding_rules[_prim] = _elementwise(_prim)


# ------------------------------------------------------------------------------------------
# Shapes
# ------------------------------------------------------------------------------------------


def broadcast_in_dim_sharding_rule(avals, specs, *, shape, broadcast_dimensions,
                                   out_sharding=None):
    (aval,), (spec,) = avals, specs
    if out_sharding is not None:  # the caller said (a cotangent says its primal's layout)
        given = out_sharding.spec if hasattr(out_sharding, "spec") else out_sharding
        if len(given) > len(shape):
            raise _error(p.broadcast_in_dim_p, avals, specs, f"out_sharding {given} has more "
                         f"entries than the result has dims ({len(shape)})",
                         "Give one entry per result dim (or fewer: the rest are not split).")
        return [spec_of(given, len(shape))]
    out: list[tuple[str, ...]] = [()] * len(shape)
    for d, axes in zip(broadcast_dimensions, spec):
        if axes and aval.shape[list(broadcast_dimensions).index(d)] != shape[d]:
            raise _error(p.broadcast_in_dim_p, avals, specs,
                         f"a split dim of size 1 cannot be broadcast to {shape[d]}",
                         "Reshard the operand unsplit first.")
        out[d] = axes
    return [tuple(out)]
sharding_rules[p.broadcast_in_dim_p] = broadcast_in_dim_sharding_rule


def reshape_sharding_rule(avals, specs, *, new_sizes, dimensions):
    """A split dim keeps its split when the reshape leaves it whole: the same size, with the
    same product of sizes before it (so its elements' blocks stay blocks)."""
    (aval,), (spec,) = avals, specs
    out: list[tuple[str, ...]] = [()] * len(new_sizes)
    for d, axes in enumerate(spec):
        if not axes:
            continue
        before = _prod(aval.shape[:d])
        matches = [k for k in range(len(new_sizes)) if new_sizes[k] == aval.shape[d]
                   and _prod(new_sizes[:k]) == before]
        if not matches:
            raise _error(p.reshape_p, avals, specs,
                         f"reshaping to {tuple(new_sizes)} splits or merges dim {d}, "
                         f"which is split over {axes}",
                         "Reshard that dim unsplit first, or reshape a dim that is not split.")
        out[matches[0]] = axes
    return [tuple(out)]
sharding_rules[p.reshape_p] = reshape_sharding_rule


def _prod(sizes: Sequence[int]) -> int:
    result = 1
    for s in sizes:
        result *= s
    return result


def transpose_sharding_rule(avals, specs, *, permutation):
    return [tuple(specs[0][d] for d in permutation)]
sharding_rules[p.transpose_p] = transpose_sharding_rule


def squeeze_sharding_rule(avals, specs, *, dimensions):
    return [tuple(axes for d, axes in enumerate(specs[0]) if d not in dimensions)]
sharding_rules[p.squeeze_p] = squeeze_sharding_rule


def _whole_dims(prim: Primitive, dims: Callable[..., Sequence[int]]) -> ShardingRule:
    """Ops that read some dims whole (slicing, padding, reversing, concatenating, sorting
    along them): those must not be split; the others keep their split."""
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


def _changed_dims(avals, *, start_indices, limit_indices, strides):
    return [d for d, (lo, hi, n) in enumerate(zip(start_indices, limit_indices, avals[0].shape))
            if (lo, hi) != (0, n) or (strides and strides[d] != 1)]


sharding_rules[p.slice_p] = _whole_dims(p.slice_p, _changed_dims)
sharding_rules[p.pad_p] = _whole_dims(
    p.pad_p, lambda avals, *, padding_config: [
        d for d, cfg in enumerate(padding_config) if tuple(cfg) != (0, 0, 0)])
sharding_rules[p.rev_p] = _whole_dims(p.rev_p, lambda avals, *, dimensions: dimensions)
sharding_rules[p.concatenate_p] = _whole_dims(
    p.concatenate_p, lambda avals, *, dimension: [dimension])
sharding_rules[p.sort_p] = _whole_dims(
    p.sort_p, lambda avals, *, dimension, num_keys: [dimension])


def iota_sharding_rule(avals, specs, *, dtype, shape, dimension):
    return [unsplit(len(shape))]
sharding_rules[p.iota_p] = iota_sharding_rule


# ------------------------------------------------------------------------------------------
# Reductions and contractions
# ------------------------------------------------------------------------------------------


def reduction_sharding_rule(avals, specs, *, axes, **params):
    """The reduced dims go (each device reduces its block, then an all-reduce combines)."""
    return [tuple(a for d, a in enumerate(specs[0]) if d not in axes)]


for _prim in [p.reduce_sum_p, p.reduce_max_p, p.reduce_min_p, p.reduce_prod_p,
              p.reduce_and_p, p.reduce_or_p, p.argmax_p, p.argmin_p]:
    sharding_rules[_prim] = reduction_sharding_rule


def dot_general_sharding_rule(avals, specs, *, dimension_numbers, preferred_element_type,
                              out_sharding=None):
    # --8<-- [start:task4_1]
    (lc, rc), (lb, rb) = dimension_numbers
    (x, y), (xs, ys) = avals, specs
    if out_sharding is not None:  # the caller said (a gradient says its primal's layout)
        ndim = x.ndim + y.ndim - len(lc) - len(rc) - len(lb)
        spec = out_sharding.spec if hasattr(out_sharding, "spec") else out_sharding
        if len(spec) > ndim:
            raise _error(p.dot_general_p, avals, specs, f"out_sharding {spec} has more "
                         f"entries than the result has dims ({ndim})",
                         "Give one entry per result dim (or fewer: the rest are not split).")
        return [spec_of(spec, ndim)]
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
        if xs[dx] and ys[dy] and xs[dx] != ys[dy]:
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


def gather_sharding_rule(avals, specs):
    """The indexed leading dims are read anywhere: unsplit. The indices' batch dims keep
    their split, then the operand's other dims."""
    indices, (os_, is_) = avals[1], specs
    k = indices.shape[-1]
    if any(os_[d] for d in range(k)) or is_[-1]:
        raise _error(p.gather_p, avals, specs, "an indexed dim (or the indices' last dim) is "
                     "split", "Reshard the indexed dims unsplit before indexing.")
    out = (*is_[:-1], *os_[k:])
    _check_no_axis_twice(p.gather_p, avals, specs, out)
    return [out]
sharding_rules[p.gather_p] = gather_sharding_rule


def _scatter(prim: Primitive) -> ShardingRule:
    """The result is laid out as the operand; what is read anywhere must be whole."""
    def rule(avals, specs):
        indices, (os_, is_, us) = avals[1], specs
        k = indices.shape[-1]
        if any(os_[d] for d in range(k)) or any(is_) or any(us):
            raise _error(prim, avals, specs, "the indexed dims, the indices or the updates "
                         "are split", "Reshard them unsplit before the update.")
        return [os_]
    return rule


for _prim in [p.scatter_p, p.scatter_add_p, p.scatter_mul_p, p.scatter_min_p, p.scatter_max_p]:
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


def _register_program_rules() -> None:
    from stage1_autodiff.autodiff import custom_vjp_call_p
    from stage2_jit.debug import debug_print_p
    from stage2_jit.jit import jit_p
    sharding_rules[jit_p] = _program_outputs(lambda jaxpr, **_: jaxpr.out_avals)
    sharding_rules[custom_vjp_call_p] = _program_outputs(
        lambda call_jaxpr, **_: call_jaxpr.out_avals)
    sharding_rules[debug_print_p] = lambda avals, specs, **params: []


_register_program_rules()
