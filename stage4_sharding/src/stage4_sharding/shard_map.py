"""``shard_map``: write the per-device program yourself.

``shard_map(f, mesh=mesh, in_specs=P("data"), out_specs=P())`` calls ``f`` on each device's
block of every argument (split as ``in_specs`` says); inside, collectives over the mesh's
axis names (``psum``, ``all_gather``, ``ppermute``, ...) exchange blocks, and ``out_specs``
says how the blocks ``f`` returns form the global results. It is what the partitioner
produces, written by hand: the per-device program runs on the same runtime.

An output whose spec leaves out a mesh axis claims to be the same on every device along it.
``shard_map`` checks the claim (unless ``check_vma=False``) by following which axes each
value varies over: arguments vary over the axes their specs name, ``psum``, ``pmax``,
``pmin`` and ``all_gather`` make a value the same along their axis, ``axis_index``,
``psum_scatter``, ``ppermute`` and ``all_to_all`` make it vary.

Differentiation follows from the global view: an input that is the same on every device
along an axis gets the sum of the devices' gradients (a ``psum``), and a replicated output's
cotangent is shared out among the devices that hold a copy.

NB: JAX's is jax/_src/shard_map.py (``shard_map_p``, its ``_check_rep`` / varying-manual-axes
typing, and the transpose rule that does the same bookkeeping).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from stage1_autodiff.api_util import check_callable
from stage1_autodiff.autodiff import cotangent_hooks, vjp, vjp_flat
from stage1_autodiff.core import (
    Primitive,
    ShapedArray,
    Tracer,
    asarray,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
    vjp_rules_take_needs,
)
from stage1_autodiff.tree_util import tree_flatten, tree_unflatten
from stage2_jit.abstract_eval import abstract_eval_rules
from stage2_jit.derived import is_inexact, jvp_program, split_tangents
from stage2_jit.jaxpr import ClosedJaxpr, Jaxpr, Literal, map_programs
from stage2_jit.jit import jit_p
from stage2_jit.passes import CALL_PARAMS
from stage2_jit.remat import remat_p
from stage2_jit.tracing import JaxprTracer, eval_jaxpr, jaxpr_as_fun
from stage3_vmap.batching import AxisData, batch_fun, batching_rules, bdim_at, not_mapped
from stage3_vmap.collectives import (
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
    psum_scatter_p,
)
from stage3_vmap.collectives import psum as lax_psum

from stage1_autodiff import prims as lax

from .arrays import run_primitive
from .mesh import Mesh, get_mesh
from .named_sharding import NamedSharding, PartitionSpec
from .partitioner import local_shape, partition_rules, trace_local
from .sharding_rules import Spec, sharding_rules, spec_of

shard_map_p = Primitive("shard_map", multiple_results=True)


class _Infer:
    """shard_map's default ``in_specs``: each argument's spec from its own sharding."""

    def __repr__(self) -> str:
        return "Infer"


INFER = _Infer()


# --8<-- [start:shard_map]
def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = INFER,
              mesh: Mesh | None = None, axis_names: Any = frozenset(), check_vma: bool = True,
              check_rep: bool | None = None) -> Callable:
    """``f`` run on every device's blocks; see the module docstring. Without ``f``, a
    decorator. Without ``in_specs``, each argument's spec is the one its sharding has (an
    unsharded argument: ``P()``). ``axis_names``, the mesh axes ``f`` handles by hand, must
    be all of them (or left out).

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import PartitionSpec as P
        >>> mesh = jax.make_mesh((8,), ("data",))
        >>> def local_sum(block):
        ...     return jax.lax.psum(block.sum(), "data")
        >>> jax.shard_map(local_sum, mesh=mesh, in_specs=P("data"), out_specs=P())(
        ...     np.arange(16.0, dtype=np.float32))
        Array(120., dtype=float32)
    """
    if f is None:
        return lambda f: shard_map(f, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma,
                                   check_rep=check_rep)
    check_callable(f)
    check = check_vma if check_rep is None else check_rep

    def mapped(*args: Any) -> Any:
        the_mesh = mesh if mesh is not None else get_mesh()
        if the_mesh is None:
            raise ValueError("shard_map needs a mesh: pass mesh=... or call "
                             "jax.sharding.set_mesh(mesh) first.")
        _check_axis_names(axis_names, the_mesh)
        leaves, in_tree = tree_flatten(args)
        specs = (_broadcast_specs(in_specs, args, "in_specs") if in_specs is not INFER
                 else [_spec_of_argument(x, the_mesh, i) for i, x in enumerate(leaves)])
        avals = [get_aval(x) for x in leaves]
        local = []
        for i, (aval, spec) in enumerate(zip(avals, specs)):
            NamedSharding(the_mesh, spec).check(aval.shape, f"shard_map's argument {i}")
            local.append(ShapedArray(local_shape(aval.shape, spec_of(spec, aval.ndim),
                                                 the_mesh), aval.dtype, aval.weak_type))
        out_tree_box: list[Any] = []

        def flat_body(*blocks):
            if check and blocks:  # gradients of replicated values are summed, as in JAX
                in_axes = [{a for axes in spec_of(s, x.ndim) for a in axes}
                           for s, x in zip(specs, avals)]
                cotangent_hooks.append(_SumWhereSame(blocks, in_axes, the_mesh))
            try:
                outs, out_tree = tree_flatten(f(*tree_unflatten(in_tree, blocks)))
            finally:
                if check and blocks:
                    cotangent_hooks.pop()
            out_tree_box.append(out_tree)
            return outs

        body = trace_local(flat_body, the_mesh, local)
        out_tree = out_tree_box[0]
        outs_example = tree_unflatten(out_tree, list(range(out_tree.num_leaves)))
        out_spec_list = _broadcast_specs(out_specs, outs_example, "out_specs")
        _check_out_specs(out_spec_list, body.out_avals, the_mesh)
        body, closed_over = _closed_over_as_arguments(body)
        leaves = [*closed_over, *leaves]
        in_spec_tuple = tuple([((),) * get_aval(c).ndim for c in closed_over] + [
            spec_of(s, a.ndim) for s, a in zip(specs, avals)])
        out_spec_tuple = tuple(spec_of(s, a.ndim) for s, a in zip(out_spec_list, body.out_avals))
        if check:
            check_replication(body, in_spec_tuple, out_spec_tuple, the_mesh)
        outs = shard_map_p.bind(*leaves, body=body, mesh=the_mesh, in_specs=in_spec_tuple,
                                out_specs=out_spec_tuple)
        return tree_unflatten(out_tree, outs)

    return mapped
# --8<-- [end:shard_map]


def _spec_of_argument(x: Any, mesh: Mesh, i: int) -> PartitionSpec:
    sharding = get_aval(x).sharding
    if not isinstance(sharding, NamedSharding) or not sharding.mesh.shape:
        return PartitionSpec()
    if sharding.mesh != mesh:
        raise ValueError(f"shard_map's argument {i} is sharded over {sharding.mesh}, not the "
                         f"shard_map's {mesh}, so its in_specs cannot be inferred: pass "
                         f"in_specs=..., or reshard it onto the shard_map's mesh.")
    return sharding.spec


def _closed_over_as_arguments(body: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """Values the body closes over that belong to an outer transformation (a tracer of the
    ``jit`` or ``grad`` around the ``shard_map``) become its leading arguments, whole on every
    device: baked into the body, they would outlive their transformation."""
    jaxpr, consts = body.jaxpr, body.consts
    traced = [isinstance(c, Tracer) for c in consts]
    if not any(traced):
        return body, []
    kept = [(v, c) for v, c, t in zip(jaxpr.constvars, consts, traced) if not t]
    moved = [(v, c) for v, c, t in zip(jaxpr.constvars, consts, traced) if t]
    program = Jaxpr([v for v, _ in kept], [*(v for v, _ in moved), *jaxpr.invars],
                    jaxpr.outvars, jaxpr.eqns)
    return ClosedJaxpr(program, [c for _, c in kept]), [c for _, c in moved]


def _check_out_specs(specs: list[PartitionSpec], avals: list[ShapedArray], mesh: Mesh) -> None:
    for i, (spec, aval) in enumerate(zip(specs, avals)):
        if len(spec) > aval.ndim:
            raise ValueError(f"shard_map out_specs[{i}] = {spec} has {len(spec)} entries, but "
                             f"output {i} ({aval.str_short()} per device) has {aval.ndim} "
                             f"dims: give at most one entry per dim of the body's output.")
        NamedSharding(mesh, spec)  # (names only the mesh's axes, each once)


def _check_axis_names(axis_names: Any, mesh: Mesh) -> None:
    names = set(axis_names)
    if names and names != set(mesh.axis_names):
        raise NotImplementedError(
            f"shard_map with axis_names={sorted(names)}, a part of the mesh's axes "
            f"{list(mesh.axis_names)}: the other axes would stay automatic inside the body, "
            f"which this library does not do. Leave axis_names out (every axis by hand).")


def _broadcast_specs(specs: Any, tree: Any, what: str) -> list[PartitionSpec]:
    """One spec per leaf of ``tree``, from a pytree prefix of it (a single spec: for all)."""
    if specs is None or isinstance(specs, PartitionSpec):
        spec = specs if specs is not None else PartitionSpec()
        return [spec] * len(tree_flatten(tree)[0])
    if isinstance(specs, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(specs) != len(tree):
            raise ValueError(f"shard_map {what} has {len(specs)} entries but there are "
                             f"{len(tree)} {'arguments' if what == 'in_specs' else 'outputs'}"
                             f": give one PartitionSpec per entry (or one for all).")
        return [s for sub_spec, sub in zip(specs, tree)
                for s in _broadcast_specs(sub_spec, sub, what)]
    if isinstance(specs, dict) and isinstance(tree, dict) and specs.keys() == tree.keys():
        return [s for k in sorted(tree) for s in _broadcast_specs(specs[k], tree[k], what)]
    raise TypeError(f"shard_map {what} must be a PartitionSpec or a pytree prefix of the "
                    f"{'arguments' if what == 'in_specs' else 'outputs'} made of "
                    f"PartitionSpecs; got {specs!r}.")


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Marks ``x`` (each leaf of a pytree) as varying over the mesh axes ``axis_name`` in a
    ``shard_map`` body (``to="varying"``), as JAX's type system asks of a loop carry that
    starts the same on every device and becomes different. The check here follows values
    (``varying_axes``) rather than types, so the values pass through unchanged."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"pcast's axis_name must be a tuple or a str, got {axis_name!r}.")
    if to not in ("varying", "reduced", "unreduced"):
        raise ValueError(f"pcast's to= must be 'varying', 'reduced' or 'unreduced', got "
                         f"{to!r}.")
    if to != "varying":
        raise NotImplementedError(f"pcast(..., to={to!r}): this library has no reduced or "
                                  f"unreduced arrays; only to='varying' is provided.")
    return x


# --8<-- [start:check_replication]
_MAKES_SAME = {psum_p, pmax_p, pmin_p, all_gather_p}
_MAKES_VARYING = {psum_scatter_p, ppermute_p, all_to_all_p, axis_index_p}


def varying_axes(jaxpr: Jaxpr, in_axes: list[set[str]]) -> list[set[str]]:
    """For each output of a per-device program, the mesh axes along which it may differ
    between devices."""
    # --8<-- [start:task4_4]
    env: dict[Any, set[str]] = {v: set(a) for v, a in zip(jaxpr.invars, in_axes)}
    for v in jaxpr.constvars:
        env[v] = set()

    def read(atom):
        return set() if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        axes = set().union(*[read(a) for a in eqn.invars]) if eqn.invars else set()
        if eqn.primitive in _MAKES_SAME or eqn.primitive in _MAKES_VARYING:
            name = eqn.params["axis_name"]
            names = set(name) if isinstance(name, tuple) else {name}
            axes = axes - names if eqn.primitive in _MAKES_SAME else axes | names
        elif eqn.primitive.name in CALL_PARAMS:  # a nested program: jit, custom_vjp/jvp, remat
            inner = eqn.params[CALL_PARAMS[eqn.primitive.name]]
            outs = varying_axes(inner.jaxpr, [read(a) for a in eqn.invars])
            for var, out in zip(eqn.outvars, outs):
                env[var] = out
            continue
        for var in eqn.outvars:
            env[var] = axes
    return [read(v) for v in jaxpr.outvars]
    # --8<-- [end:task4_4]


def check_replication(body: ClosedJaxpr, in_specs: tuple[Spec, ...],
                      out_specs: tuple[Spec, ...], mesh: Mesh) -> None:
    in_axes = [{a for axes in spec for a in axes} for spec in in_specs]
    for i, (axes, spec, aval) in enumerate(zip(varying_axes(body.jaxpr, in_axes), out_specs,
                                               body.out_avals)):
        missing = sorted(axes - {a for names in spec for a in names})
        if missing:
            raise ValueError(
                f"shard_map out_specs[{i}] = {_pspec(spec)} says output {i} "
                f"({aval.str_short()} per device) is the same on every device along mesh "
                f"axis {', '.join(map(repr, missing))}, but it varies along it. Reduce it "
                f"over the axis first (jax.lax.psum or jax.lax.all_gather), name the axis in "
                f"out_specs, or pass check_vma=False if you know the blocks are equal.")
# --8<-- [end:check_replication]


# --8<-- [start:same_on_devices]
class _SumWhereSame:
    """The cotangent hook (``autodiff.cotangent_hooks``) of a shard_map body traced with its
    check on. JAX types each value of a body with the mesh axes it varies along; where a
    value the same on every device along an axis meets one that varies (``x * b``, ``b``
    replicated), it marks the first varying (``pvary``), and that mark's transpose is a
    ``psum``; a ``psum``'s own transpose is then a ``pvary``, which moves no value. So the
    gradient of a replicated ``b`` is the sum of every device's, the same on every device, as
    ``b`` is. Here the equations of the body are followed as it is traced, with JAX's rules
    (unlike ``varying_axes``, ``all_gather`` keeps its operand's axes), and the cotangent of
    an operand that is the same along axes its primitive's results vary along is summed
    over them."""

    def __init__(self, blocks: Sequence[Any], in_axes: list[set[str]], mesh: Mesh) -> None:
        self.builder = blocks[0]._trace.builder
        self.axes_of = {self.builder.var(b): frozenset(a) for b, a in zip(blocks, in_axes)}
        self.order, self.done = list(mesh.axis_names), 0

    def __call__(self, primal: Any, ct: Any, outs: list[Any]) -> Any:
        out_axes = [self._axes(o) for o in outs]
        primal_axes = self._axes(primal)
        if primal_axes is None or None in out_axes:
            return ct  # (a value of another trace, or of a program we do not follow)
        extra = frozenset().union(*out_axes) - primal_axes
        return lax_psum(ct, tuple(a for a in self.order if a in extra)) if extra else ct

    def typed(self, axis_name: Any, x: Any) -> bool:
        """Whether a collective over ``axis_name`` of ``x`` is typed here: its axes are the
        mesh's, and ``x`` a value of the body (perhaps under a vmap or a jvp in it); with
        ``x`` None, whether the axes are the mesh's."""
        names = set(axis_name if isinstance(axis_name, tuple) else (axis_name,))
        return names <= set(self.order) and (x is None or self._body_value(x) is not None)

    def _body_value(self, x: Any) -> JaxprTracer | None:
        """The body's tracer under ``x``: itself, or the value a vmap's or a JVP's tracer in
        the body wraps (a ``jit`` in the body traces values of its own: None)."""
        while not isinstance(x, JaxprTracer):
            x = getattr(x, "val", getattr(x, "primal", None))
            if x is None:
                return None
        return x if x._trace.main.global_data is self.builder else None

    def _axes(self, x: Any) -> frozenset[str] | None:
        x = self._body_value(x)
        if x is None:
            return None
        for eqn in self.builder.eqns[self.done:]:
            outs = _eqn_axes(eqn, [_read(self.axes_of, a) for a in eqn.invars])
            for var, out in zip(eqn.outvars, outs or [None] * len(eqn.outvars)):
                self.axes_of[var] = out
        self.done = len(self.builder.eqns)
        return self.axes_of.get(self.builder.var(x), frozenset())


def _typed_transpose(rule: Callable, in_body: Callable) -> Callable:
    """A reduction's VJP: in a body traced with its check on, for the mesh's axes,
    ``in_body``, which sums no cotangent (``psum``'s transpose is a ``pvary``: the sums are
    made where ``_SumWhereSame`` finds them); elsewhere ``rule``, stage 3's."""
    def vjp(ct, x, *, out, axis_name):
        hook = cotangent_hooks[-1] if cotangent_hooks else None
        if isinstance(hook, _SumWhereSame) and hook.typed(axis_name, x):
            return in_body(ct, x, out, axis_name)
        if isinstance(hook, _SumWhereSame) and hook.typed(axis_name, None):
            raise NotImplementedError(
                f"grad inside a shard_map body, through a cond, scan, while_loop or fori_loop "
                f"whose body holds a reduction over mesh axis {axis_name!r} (psum, pmean, "
                f"pmax or pmin), is not implemented here: JAX "
                f"types that loop's values and sums gradients where they meet, which this "
                f"library follows only outside such loops. Take the gradient of the whole "
                f"shard_map instead, or pass check_vma=False for each device's own gradient.")
        return rule(ct, x, out=out, axis_name=axis_name)
    return vjp


def _to_the_extremum(ct, x, out, axis_name):
    """The cotangent to the devices holding the extremum, split evenly among ties."""
    wins = lax.convert_element_type(lax.eq(x, out), get_aval(ct).dtype)
    return [lax.mul(ct, lax.div(wins, psum_p.bind(wins, axis_name=axis_name)))]


def _inlined_in_body(rule: Callable) -> Callable:
    """The VJP of a ``jit`` (or ``checkpoint``) whose program exchanges values between
    devices: in a body traced with its check on, the program's equations are run again in
    the body and differentiated there, where ``_SumWhereSame`` types them (its own backward
    program would be traced apart, with the untyped rules); elsewhere ``rule``."""
    def vjp(cts, *primals, out, needs, jaxpr, **params):
        hook = cotangent_hooks[-1] if cotangent_hooks else None
        if not (isinstance(hook, _SumWhereSame) and _exchanges(jaxpr.jaxpr)
                and any(hook._body_value(p) is not None for p in primals)):
            return rule(cts, *primals, out=out, needs=needs, jaxpr=jaxpr, **params)
        _, pullback = vjp_flat(lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, xs), *primals)
        return [ct if need else None for ct, need in zip(pullback(list(cts)), needs)]
    return vjp


vjp_rules[jit_p] = _inlined_in_body(vjp_rules[jit_p])
vjp_rules[remat_p] = _inlined_in_body(vjp_rules[remat_p])
vjp_rules[psum_p] = _typed_transpose(vjp_rules[psum_p], lambda ct, x, out, axis_name: [ct])
vjp_rules[pmax_p] = _typed_transpose(vjp_rules[pmax_p], _to_the_extremum)
vjp_rules[pmin_p] = _typed_transpose(vjp_rules[pmin_p], _to_the_extremum)


Axes = frozenset[str]


def _read(env: dict[Any, Axes | None], atom: Any) -> Axes | None:
    return frozenset() if isinstance(atom, Literal) else env.get(atom, frozenset())


def _program_axes(jaxpr: Jaxpr, in_axes: list[Axes]) -> list[Axes] | None:
    """The axes each output of a program varies along, its inputs varying along
    ``in_axes`` (its constants along none); None where it is not followed."""
    env: dict[Any, Axes | None] = dict(zip(jaxpr.invars, in_axes))
    for eqn in jaxpr.eqns:
        outs = _eqn_axes(eqn, [_read(env, a) for a in eqn.invars])
        if outs is None:
            return None
        env.update(zip(eqn.outvars, outs))
    return [_read(env, v) for v in jaxpr.outvars]


def _eqn_axes(eqn: Any, ins: list[Axes | None]) -> list[Axes] | None:
    """The axes each result of an equation varies along, by JAX's rules: a reduction over
    an axis removes it, ``axis_index`` gives it, every other primitive (``all_gather``
    too) gives the union of its operands'. Programs it holds are followed (a loop's carry
    until it settles); None where one is not (an equation of another kind that holds one)."""
    if any(a is None for a in ins):
        return None
    union, prim, params = frozenset().union(*ins), eqn.primitive, eqn.params
    if prim in (psum_p, pmax_p, pmin_p, axis_index_p):
        name = params["axis_name"]
        names = frozenset(name if isinstance(name, tuple) else (name,))
        return [names if prim is axis_index_p else union - names]
    if prim.name in CALL_PARAMS:
        return _program_axes(params[CALL_PARAMS[prim.name]].jaxpr, ins)
    if prim.name == "cond":
        branches = [_program_axes(b.jaxpr, ins[1:]) for b in params["branches"]]
        return None if None in branches else [ins[0].union(*outs) for outs in zip(*branches)]
    if prim.name in ("scan", "while"):
        return _loop_axes(prim.name, params, ins)
    return None if _programs(eqn) else [union] * len(eqn.outvars)


def _loop_axes(kind: str, params: dict[str, Any], ins: list[Axes]) -> list[Axes] | None:
    """A scan's or a while's results: the carries' axes grow until the body keeps them."""
    if kind == "scan":
        body, first = params["jaxpr"].jaxpr, params["num_consts"]
        carry, rest = ins[first:first + params["num_carry"]], ins[first + params["num_carry"]:]
    else:
        body, first = params["body_jaxpr"].jaxpr, params["cond_nconsts"]
        rest, carry = [], ins[first + params["body_nconsts"]:]
        first += params["body_nconsts"]
    consts = ins[params.get("cond_nconsts", 0):first]
    while True:
        outs = _program_axes(body, [*consts, *carry, *rest])
        if outs is None:
            return None
        grown = [c | o for c, o in zip(carry, outs)]
        if grown == carry:
            break
        carry = grown
    if kind == "scan":
        return [*carry, *outs[len(carry):]]
    pred = _program_axes(params["cond_jaxpr"].jaxpr, [*ins[:params["cond_nconsts"]], *carry])
    return None if pred is None else [c | pred[0] for c in carry]


def _programs(eqn: Any) -> list[ClosedJaxpr]:
    """The programs an equation holds (a jit's, a loop's body, a cond's branches)."""
    found: list[ClosedJaxpr] = []
    for value in eqn.params.values():
        map_programs(found.append, value)
    return found


_EXCHANGES = _MAKES_SAME | _MAKES_VARYING  # every collective, and axis_index


def _exchanges(jaxpr: Jaxpr) -> bool:
    """Whether a program (or one it holds) has a collective or ``axis_index``."""
    return any(eqn.primitive in _EXCHANGES or any(_exchanges(p.jaxpr) for p in _programs(eqn))
               for eqn in jaxpr.eqns)
# --8<-- [end:same_on_devices]


def _pspec(spec: Spec) -> PartitionSpec:
    entries = [a[0] if len(a) == 1 else a if a else None for a in spec]
    while entries and entries[-1] is None:
        entries.pop()  # P() rather than P(None, None), as the user wrote it
    return PartitionSpec(*entries)


# ------------------------------------------------------------------------------------------
# Rules
# ------------------------------------------------------------------------------------------


def _scale(spec: Spec, mesh: Mesh, shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(n * math.prod(mesh.shape[a] for a in axes) for n, axes in zip(shape, spec))


def shard_map_abstract_eval(*avals, body, mesh, in_specs, out_specs):
    for i, (aval, local, spec) in enumerate(zip(avals, body.in_avals, in_specs)):
        if local_shape(aval.shape, spec, mesh) != local.shape or aval.dtype != local.dtype:
            raise TypeError(f"shard_map was given {aval.str_short()} for argument {i}, whose "
                            f"blocks under {_pspec(spec)} are not the body's "
                            f"{local.str_short()}.")
    return [ShapedArray(_scale(spec, mesh, a.shape), a.dtype, a.weak_type,
                        NamedSharding(mesh, _pspec(spec)))
            for a, spec in zip(body.out_avals, out_specs)]


abstract_eval_rules[shard_map_p] = shard_map_abstract_eval
sharding_rules[shard_map_p] = lambda avals, specs, *, out_specs, **params: list(out_specs)
impl_rules[shard_map_p] = lambda *values, **params: run_primitive(
    shard_map_p, [asarray(v) for v in values], params)


def _inline(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Evaluates a per-device program by binding its equations, with nested programs
    (``jit`` inside the body) inlined, so their collectives are seen by the runtime."""
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        vals = [read(a) for a in eqn.invars]
        if eqn.primitive.name in CALL_PARAMS:
            inner = eqn.params[CALL_PARAMS[eqn.primitive.name]]
            outs = _inline(inner.jaxpr, inner.consts, vals)
        else:
            outs = eqn.primitive.bind(*vals, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def shard_map_partition_rule(ctx, vals, specs, result_specs, avals_in, avals_out, *, body,
                             mesh, in_specs, out_specs):
    if mesh != ctx.mesh:
        raise ValueError(f"shard_map over {mesh} was given arrays sharded over {ctx.mesh}: "
                         f"use one mesh, or reshard the arguments onto the shard_map's.")
    blocks = [ctx.convert(v, s, t) for v, s, t in zip(vals, specs, in_specs)]
    return _inline(body.jaxpr, body.consts, blocks)


partition_rules[shard_map_p] = shard_map_partition_rule


# --8<-- [start:shard_map_jvp]
def shard_map_jvp(primals, tangents, *, body, mesh, in_specs, out_specs):
    """A shard_map of the body's JVP: tangents are laid out as their primals."""
    float_in = [is_inexact(a) for a in body.in_avals]
    float_out = [is_inexact(a) for a in body.out_avals]
    jvp_body, _ = jvp_program(body, float_in,
                              trace=lambda f, avals: (trace_local(f, mesh, avals), []))
    outs = shard_map_p.bind(
        *primals, *[t for t, f in zip(tangents, float_in) if f], body=jvp_body, mesh=mesh,
        in_specs=in_specs + tuple(s for s, f in zip(in_specs, float_in) if f),
        out_specs=out_specs + tuple(s for s, f in zip(out_specs, float_out) if f))
    return split_tangents(list(outs), body.out_avals)
# --8<-- [end:shard_map_jvp]


jvp_rules[shard_map_p] = shard_map_jvp


# --8<-- [start:shard_map_vjp]
def shard_map_vjp(cts, *primals, out, needs, body, mesh, in_specs, out_specs):
    """A shard_map of the body's VJP. A replicated output's cotangent is divided among the
    copies (each device's copy carries 1/N of it); an input that is the same on every device
    along an axis gets the sum of the devices' gradients."""
    wanted = [n and is_inexact(a) for n, a in zip(needs, body.in_avals)]
    float_out = [is_inexact(a) for a in body.out_avals]
    if not any(wanted):
        return [None] * len(wanted)
    program = jaxpr_as_fun(body)

    def copies(spec: Spec) -> list[str]:
        return [a for a in mesh.axis_names if all(a not in names for names in spec)]

    def vjp_body(*args):
        primals_in, cts_in = args[:len(wanted)], iter(args[len(wanted):])

        def of_wanted(*xs):
            xs = iter(xs)
            return program(*[next(xs) if w else p for w, p in zip(wanted, primals_in)])

        outs, pullback = vjp(of_wanted, *[p for p, w in zip(primals_in, wanted) if w])
        shared = []
        for o, f, spec in zip(outs, float_out, out_specs):
            ct = next(cts_in) if f else lax.zeros_like(o)
            n = math.prod(mesh.shape[a] for a in copies(spec))
            shared.append(ct if n == 1 else lax.div(ct, lax.full_like(ct, n)))
        grads = list(pullback(shared))
        specs = [s for s, w in zip(in_specs, wanted) if w]
        for k, spec in enumerate(specs):
            for name in copies(spec):
                grads[k] = psum_p.bind(grads[k], axis_name=name)
        return grads

    local = list(body.in_avals) + [a for a in body.out_avals if is_inexact(a)]
    vjp_program = trace_local(vjp_body, mesh, local)
    results = iter(shard_map_p.bind(
        *primals, *[c for c, f in zip(cts, float_out) if f], body=vjp_program, mesh=mesh,
        in_specs=in_specs + tuple(s for s, f in zip(out_specs, float_out) if f),
        out_specs=tuple(s for s, w in zip(in_specs, wanted) if w)))
    return [next(results) if w else None for w in wanted]
# --8<-- [end:shard_map_vjp]


vjp_rules[shard_map_p] = shard_map_vjp
vjp_rules_take_needs.add(shard_map_p)


# --8<-- [start:shard_map_batching]
def shard_map_batching_rule(axis_data: AxisData, vals, dims, *, body, mesh, in_specs,
                            out_specs):
    """vmap of a shard_map: the batch is a new leading dim, not split, of every block that
    depends on it; a result that does not stays unbatched, as the body's batching says."""
    vals = [v if d is not_mapped else bdim_at(v, d, 0, axis_data)
            for v, d in zip(vals, dims)]
    dims = [not_mapped if d is not_mapped else 0 for d in dims]
    local = [a if d is not_mapped else ShapedArray((axis_data.size, *a.shape), a.dtype,
                                                   a.weak_type)
             for a, d in zip(body.in_avals, dims)]

    mapped: list[bool] = []

    def batched_body(*blocks):
        outs, out_dims = batch_fun(jaxpr_as_fun(body), AxisData(None, axis_data.size),
                                   list(blocks), list(dims))
        mapped[:] = [d is not not_mapped for d in out_dims]
        return [o if d is not_mapped else bdim_at(o, d, 0, axis_data)
                for o, d in zip(outs, out_dims)]

    program = trace_local(batched_body, mesh, local)
    outs = shard_map_p.bind(
        *vals, body=program, mesh=mesh,
        in_specs=tuple(s if d is not_mapped else ((),) + s for s, d in zip(in_specs, dims)),
        out_specs=tuple(((),) + s if m else s for s, m in zip(out_specs, mapped)))
    return outs, [0 if m else not_mapped for m in mapped]
# --8<-- [end:shard_map_batching]


batching_rules[shard_map_p] = shard_map_batching_rule

