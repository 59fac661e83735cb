"""``reshard``: the same values with another sharding, a primitive so that it can be traced,
differentiated and batched like any other.

Its partition rule is the partitioner's ``convert`` (all-gather, all-to-all or a local
slice, as the two layouts require). Its transpose reshards the cotangent back to the
operand's layout: the gradient of an all-gather is a reduce-scatter.

NB: JAX's is ``reshard_p`` in jax/_src/pjit.py; ``with_sharding_constraint`` is its
counterpart for Auto mesh axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stage1_autodiff.core import (
    Array,
    Primitive,
    ShapedArray,
    Tracer,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
)
from stage1_autodiff.tree_util import tree_map
from stage2_jit.abstract_eval import abstract_eval_rules
from stage3_vmap.batching import batching_rules, not_mapped, with_batch_layout

from .arrays import shard
from .mesh import AxisType
from .named_sharding import NamedSharding, P, as_sharding
from .partitioner import partition_rules
from .sharding_rules import sharding_rules, spec_of

# --8<-- [start:reshard]
reshard_p = Primitive("reshard", multiple_results=True)


def reshard(x: Any, out_sharding: Any) -> Any:
    """``x`` (each leaf of a pytree) laid out by ``out_sharding``: a ``NamedSharding``, or a
    ``PartitionSpec`` on the mesh ``set_mesh`` set.

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P, reshard
        >>> mesh = jax.make_mesh((4, 2), ("x", "y"))
        >>> a = jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("x")))
        >>> print(jax.typeof(reshard(a, NamedSharding(mesh, P(None, "y")))))
        float32[8,4@y]
    """
    sharding = as_sharding(out_sharding, "reshard")
    # typed with one spec entry per dim, as JAX's reshard is (device_put keeps the spec)
    return tree_map(lambda leaf: lay_out(leaf, sharding.padded(np.ndim(leaf))), x)


def lay_out(leaf: Any, sharding: NamedSharding) -> Any:
    """One array laid out by ``sharding``: a ``reshard`` equation for a traced value or a
    sharded array; a plain array is split onto the devices."""
    if isinstance(leaf, Tracer):
        return reshard_p.bind(leaf, sharding=sharding)[0]
    if type(leaf) is not Array and isinstance(leaf, Array):
        mesh = getattr(leaf.sharding, "mesh", None)
        if mesh is None or mesh.same_grid(sharding.mesh):
            return reshard_p.bind(leaf, sharding=sharding)[0]
        # another mesh's grid (device_put between meshes): gathered, then split anew
    return shard(leaf, sharding)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``jax.lax.with_sharding_constraint``: ``x`` (a pytree) laid out by ``shardings``, one
    for every leaf or a pytree of them shaped as ``x``.

    The spec may name only ``Auto`` mesh axes (an ``Explicit`` layout is changed with
    :func:`reshard`), as in JAX.

    NB: JAX's (``sharding_constraint_p``, jax/_src/pjit.py) is a hint to XLA's sharding
    propagation on Auto mesh axes. Here every value's layout is in its type, chosen by the
    sharding rules, so the constraint is what the hint achieves: a :func:`reshard`.

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        >>> y = jax.lax.with_sharding_constraint(np.zeros(16, np.float32),
        ...                                      NamedSharding(mesh, P("x")))
        >>> y.sharding.spec
        P('x',)
    """
    if isinstance(shardings, (NamedSharding, P)):
        return tree_map(lambda leaf: _constrain(leaf, shardings), x)
    return tree_map(_constrain, x, shardings)


def _constrain(x: Any, sharding: Any) -> Any:
    sharding = as_sharding(sharding, "with_sharding_constraint")
    kinds = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types))
    spec = sharding.spec
    explicit = [a for d in range(len(spec)) for a in spec.axes_of(d)
                if kinds[a] is AxisType.Explicit]
    if explicit:
        raise ValueError(f"with_sharding_constraint names the Explicit mesh axes {explicit}: "
                         f"it is for Auto axes. Change an Explicit layout with "
                         f"jax.sharding.reshard(x, {sharding.spec}).")
    return lay_out(x, sharding)  # (its type keeps the spec as given, as JAX's)


def reshard_abstract_eval(x: ShapedArray, *, sharding: NamedSharding) -> list[ShapedArray]:
    sharding.check(x.shape, f"reshard's operand {x.str_short()}")
    return [x._replace(sharding=sharding)]


abstract_eval_rules[reshard_p] = reshard_abstract_eval
sharding_rules[reshard_p] = lambda avals, specs, *, sharding: [
    spec_of(sharding.spec, avals[0].ndim)]
impl_rules[reshard_p] = lambda x, *, sharding: [shard(Array(x), sharding)]
jvp_rules[reshard_p] = lambda primals, tangents, *, sharding: (
    reshard_p.bind(primals[0], sharding=sharding),
    reshard_p.bind(tangents[0], sharding=sharding))


def reshard_vjp(cts, x, *, out, sharding):
    """Back to the operand's layout (replicated for an operand that was not sharded)."""
    back = get_aval(x).sharding or NamedSharding(sharding.mesh, P())
    return [reshard_p.bind(cts[0], sharding=back)[0]]


vjp_rules[reshard_p] = reshard_vjp


def reshard_batching_rule(axis_data, vals, dims, *, sharding):
    (x,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return reshard_p.bind(x, sharding=sharding), [not_mapped]
    # The batch dim keeps its own layout, as JAX's (an axis the new spec uses too is JAX's
    # DuplicateSpecError).
    return reshard_p.bind(x, sharding=with_batch_layout(sharding, bdim, x, bdim)), [bdim]


batching_rules[reshard_p] = reshard_batching_rule


def reshard_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, sharding):
    return [ctx.convert(vals[0], specs[0], out_specs[0])]


partition_rules[reshard_p] = reshard_partition_rule
# --8<-- [end:reshard]
