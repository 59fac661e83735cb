"""Sharding in types under tracing: in a program over sharded arrays every value's aval
carries its ``NamedSharding``, so ``make_jaxpr`` prints ``f32[8@data,4]`` and a gradient
can ask for its primal's layout.

Stage 2's tracer asks each ``TypeExtension`` for the types it infers. This one:

- types the arguments: a sharded array's aval has its sharding; once any argument is
  sharded, the others are typed as replicated on the same mesh (a plain array is on every
  device, as JAX's arrays are under ``set_mesh``);
- types each result with the primitive's sharding rule (``sharding_rules.py``), which raises
  for an ambiguous or impossible layout while tracing, where the user's line is on the stack
  (over a mesh's ``AxisType.Auto`` axes the result is replicated instead: the compiler's
  choice, where explicit mode asks the user).

NB: in JAX the sharding is a field of ``ShapedArray`` and each primitive's ``sharding_rule``
runs in ``standard_abstract_eval`` (jax/_src/lax/utils.py).
"""

from __future__ import annotations

import threading
from typing import Any

from stage1_autodiff.core import Primitive, ShapedArray
from stage2_jit.tracing import TypeExtension, type_extensions

from .mesh import AxisType, Mesh, get_mesh
from .named_sharding import NamedSharding, P, PartitionSpec, as_sharding
from .sharding_rules import ShardingTypeError, Spec, describe, sharding_rules, spec_of, unsplit


def spec_of_aval(aval: ShapedArray) -> Spec:
    """The per-dim mesh axes of a typed value (none split for an untyped one)."""
    if aval.sharding is None:
        return unsplit(aval.ndim)
    return spec_of(aval.sharding.spec, aval.ndim)


def as_partition_spec(spec: Spec) -> P:
    return P(*(axes[0] if len(axes) == 1 else axes if axes else None for axes in spec))


def mesh_of(avals: list[ShapedArray], what: str = "an operation", *,
            any_types: bool = False) -> Mesh | None:
    """The one mesh of the typed ``avals`` (None if none is typed). With ``any_types``, meshes
    that differ only in their axis types count as one (a whole program, which ``auto_axes``
    moves between them: the blocks are laid out alike), and the first is returned."""
    meshes = list(dict.fromkeys(a.sharding.mesh for a in avals if a.sharding is not None))
    others = [m for m in meshes[1:] if not (any_types and m.same_grid(meshes[0]))]
    if others:
        raise ValueError(f"{what} got arrays sharded over different meshes "
                         f"({', '.join(map(repr, meshes))}): put them onto one mesh first, "
                         f"with jax.device_put(x, NamedSharding(mesh, spec)) outside jit.")
    return meshes[0] if meshes else None


def in_context(avals: list[ShapedArray], what: str) -> Mesh | None:
    """The mesh an operation on ``avals`` is typed on: their mesh, read with the current
    mesh's axis types where it has the same devices and names (JAX reads every type against
    the context's abstract mesh). Values typed on meshes that differ only in axis types meet
    where ``auto_axes`` switched them: a closure inside it, a gradient made after it. An axis
    is then ``Auto`` if any of them has it so, as no layout is asked for where one is."""
    mesh = mesh_of(avals, what, any_types=True)
    if mesh is None:
        return None
    current = get_mesh()
    meshes = {a.sharding.mesh for a in avals if a.sharding is not None}
    if current is not None and current is not mesh and mesh.same_grid(current):
        meshes.add(current)
    if len(meshes) == 1:
        return meshes.pop()
    loosest = {name: max((dict(zip(m.axis_names, m.axis_types))[name] for m in meshes),
                         key=_LOOSENESS.index) for name in mesh.axis_names}
    return mesh.with_axis_types(loosest)


_LOOSENESS = [AxisType.Explicit, AxisType.Auto, AxisType.Manual]


def with_spec(aval: ShapedArray, mesh: Mesh, spec: Spec) -> ShapedArray:
    sharding = NamedSharding(mesh, as_partition_spec(spec))
    sharding.check(aval.shape, f"the result {describe(aval, spec)}")
    return aval._replace(sharding=sharding)


def _mesh_of_equation(prim: Primitive, avals_in: list[ShapedArray],
                      params: dict[str, Any]) -> Mesh | None:
    """The mesh of the operands, or of the result sharding the caller gave: a broadcast of a
    constant is sharded when asked, though no operand is (a gradient's zeros)."""
    mesh = in_context(avals_in, prim.name)
    asked = params.get("out_sharding")
    if isinstance(asked, PartitionSpec) and mesh is None:  # a bare spec: set_mesh's mesh
        asked = as_sharding(asked, f"{prim.name}'s out_sharding")
    if not isinstance(asked, NamedSharding):
        return mesh
    # the asked mesh may differ in its axis types only: auto_axes's casts are reshards, and
    # a gradient of a value typed inside auto_axes is made outside it
    if mesh is not None and not asked.mesh.same_grid(mesh):
        raise ValueError(f"{prim.name} got arrays sharded over {mesh} and out_sharding over "
                         f"{asked.mesh}: use one mesh.")
    return asked.mesh


# --8<-- [start:sharding_in_types]
class ShardingInTypes(TypeExtension):
    """Puts shardings into the avals stage 2's tracer infers."""

    # An eager operation's plain operands stay untyped, as JAX's uncommitted arrays: a
    # predicate made with NumPy selects among split cases. A jitted function's are placed,
    # replicated (arrays.py's run_primitive sets this while it traces).
    eager = threading.local()

    def argument_avals(self, avals: list[ShapedArray]) -> list[ShapedArray]:
        mesh = in_context(avals, "a jitted function")
        if mesh is None or getattr(ShardingInTypes.eager, "active", False):
            return avals
        # JAX types a jitted function's arguments with a spec entry per dim
        replicated = NamedSharding(mesh, P())
        return [a._replace(sharding=(a.sharding or replicated).padded(a.ndim)) for a in avals]

    def result_avals(self, prim: Primitive, avals_in: list[ShapedArray],
                     avals_out: list[ShapedArray], params: dict[str, Any]) -> list[ShapedArray]:
        mesh = _mesh_of_equation(prim, avals_in, params)
        if mesh is None:
            return avals_out
        if all(a.sharding is not None for a in avals_out):  # typed by the primitive itself
            eager = getattr(ShardingInTypes.eager, "active", False)
            if prim.name == "reshard" or (prim.name == "shard_map" and eager):
                return avals_out
            # One spec entry per dim, as JAX types every result (jnp.sin of P("x") is
            # P("x", None)); a unary op's abstract eval passed its operand's type through.
            # Only a reshard (device_put's and jit's out_shardings) and an eager shard_map's
            # out_specs keep the spec as the caller wrote it, as in JAX.
            return [a._replace(sharding=a.sharding.padded(a.ndim)) for a in avals_out]
        rule = sharding_rules.get(prim)
        if rule is None:
            raise NotImplementedError(
                f"{prim.name} has no sharding rule, so it cannot run on sharded arrays. "
                f"Reshard its operands to replicated ones first (jax.sharding.reshard(x, P())) "
                f"and report the missing rule.")
        specs = [spec_of_aval(a) for a in avals_in]
        try:
            out_specs = rule(avals_in, specs, **params)
        except ShardingTypeError:
            auto = set(mesh.auto_axes)
            if not auto:
                raise
            # Auto axes: the compiler chooses, where explicit mode would ask. This one
            # chooses a result replicated over them (the partitioner gathers or
            # all-reduces), typed by the Explicit axes alone, whose conflicts still raise.
            out_specs = rule(avals_in, [tuple(tuple(a for a in axes if a not in auto)
                                              for axes in spec) for spec in specs], **params)
        return [with_spec(a, mesh, s) for a, s in zip(avals_out, out_specs)]
# --8<-- [end:sharding_in_types]


type_extensions.append(ShardingInTypes())
