"""Switching mesh axis types for a part of a program: ``auto_axes``, ``explicit_axes``, and the
abstract mesh that says which types are in force (``get_abstract_mesh``).

On ``Explicit`` axes an operation whose result layout is ambiguous is an error that asks for
``out_sharding``; on ``Auto`` axes the compiler chooses. ``auto_axes(f, out_sharding=...)``
runs ``f`` with (some of) the current mesh's axes ``Auto``, then lays its result out as asked;
``explicit_axes(f, in_sharding=...)`` is its dual, laying the arguments out as asked and
running ``f`` with the axes ``Explicit``.

Here an array's type names its mesh, types included (``sharded_types.py`` chooses by them), so
the switch is a cast: each argument's blocks move, unchanged, to the same devices under the
switched types (a ``reshard`` to the same spec), ``f`` runs with that mesh current, and the
results are cast back. Under ``jit`` the casts are equations, which partition to nothing.

NB: in JAX the axis types live in the context's abstract mesh and an array's type is read
against it (``mesh_cast`` and ``auto_axes`` in jax/_src/sharding_impls.py and pjit.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from stage1_autodiff.core import get_aval
from stage1_autodiff.tree_util import broadcast_prefix, tree_flatten, tree_map, tree_unflatten

from .mesh import AbstractMesh, AxisType, Mesh, get_abstract_mesh, get_mesh, set_mesh
from .named_sharding import NamedSharding, PartitionSpec, as_sharding
from .reshard import reshard

__all__ = ["AbstractMesh", "auto_axes", "explicit_axes", "get_abstract_mesh",
           "use_abstract_mesh"]


class use_abstract_mesh:  # noqa: N801 -- a function in JAX's API, used in a ``with``
    """Within the block, the current mesh is ``abstract``'s: the current mesh's devices, in
    their order, regrouped into its axes (sizes, names and types), whose product must be the
    current mesh's size."""

    def __init__(self, abstract: AbstractMesh) -> None:
        mesh = get_mesh()
        if mesh is None:
            raise ValueError("use_abstract_mesh needs a current mesh whose devices it "
                             "regroups: call it inside `with jax.set_mesh(mesh):`.")
        if abstract.size != mesh.size:
            raise ValueError(f"use_abstract_mesh: {abstract} has {abstract.size} devices, the "
                             f"current mesh {mesh} has {mesh.size}; the sizes must be equal.")
        self._regrouped = Mesh(mesh.devices.reshape(abstract.axis_sizes), abstract.axis_names,
                               abstract.axis_types)
        self._regrouped._abstract = abstract  # get_abstract_mesh gives it back as it was made

    def __enter__(self) -> None:
        self._setting = set_mesh(self._regrouped)

    def __exit__(self, *exc: Any) -> None:
        self._setting.__exit__(*exc)


def _cast(tree: Any, mesh: Mesh) -> Any:
    """Each leaf sharded over ``mesh``'s grid moved to ``mesh`` itself, spec unchanged."""
    def leaf(x: Any) -> Any:
        sharding = getattr(_type_of(x), "sharding", None)
        if isinstance(sharding, NamedSharding) and sharding.mesh != mesh \
                and sharding.mesh.same_grid(mesh):
            return reshard(x, NamedSharding(mesh, sharding.spec))
        return x
    return tree_map(leaf, tree)


def _type_of(x: Any) -> Any:
    return get_aval(x) if hasattr(x, "shape") else None


def _laid_out(tree: Any, shardings: Any, mesh: Mesh, what: str) -> Any:
    """``tree``'s leaves resharded onto ``mesh`` by ``shardings``: one spec or sharding for
    every leaf, or a pytree of them shaped as a prefix of ``tree``."""
    leaves, treedef = tree_flatten(tree)
    targets = broadcast_prefix(shardings, tree, is_leaf=lambda s: isinstance(
        s, (PartitionSpec, NamedSharding)))
    return tree_unflatten(treedef, [
        reshard(x, NamedSharding(mesh, s) if isinstance(s, PartitionSpec) else as_sharding(
            s, what)) for x, s in zip(leaves, targets)])


def _switched(mesh: Mesh, axes: str | Sequence[str] | None, kind: AxisType,
              name: str) -> Mesh:
    names = (axes,) if isinstance(axes, str) else tuple(axes or mesh.axis_names)
    unknown = [a for a in names if a not in mesh.axis_names]
    if unknown:
        raise ValueError(f"{name}: axes {unknown} are not axes of the current mesh {mesh}.")
    manual = [a for a in names if dict(zip(mesh.axis_names, mesh.axis_types))[a]
              is AxisType.Manual]
    if manual:
        raise ValueError(f"{name}: the mesh axes {manual} are Manual (inside shard_map); "
                         f"only Explicit and Auto axes can be switched.")
    return mesh.with_axis_types(dict.fromkeys(names, kind))


def _decorator(kind: AxisType, name: str, keyword: str) -> Callable[..., Any]:
    """``auto_axes`` or ``explicit_axes``: ``keyword`` (``out_sharding`` or ``in_sharding``)
    is given when decorating or at each call."""
    def decorate(f: Callable | None = None, /, *, axes: str | Sequence[str] | None = None,
                 **given: Any) -> Callable[..., Any]:
        unknown = set(given) - {keyword}
        if unknown:
            raise TypeError(f"{name} got unexpected keyword arguments {sorted(unknown)}.")
        if f is None:
            return functools.partial(decorate, axes=axes, **given)

        @functools.wraps(f)
        def switched(*args: Any, **kwargs: Any) -> Any:
            sharding = kwargs.pop(keyword, given.get(keyword))
            if sharding is None:
                raise TypeError(f"{name}: missing required keyword argument {keyword!r}; give "
                                f"it when decorating ({name}(f, {keyword}=P(...))) or calling.")
            outer = get_mesh()
            if outer is None:
                return f(*args, **kwargs)
            inner = _switched(outer, axes, kind, name)
            if kind is AxisType.Explicit:
                args = _laid_out(_cast(args, inner), sharding, inner, keyword)
            with set_mesh(inner):
                out = f(*_cast(args, inner), **kwargs)
            if kind is AxisType.Auto:  # one reshard each, onto the outer mesh as asked
                return _laid_out(out, sharding, outer, keyword)
            return _cast(out, outer)
        return switched
    return decorate


auto_axes = _decorator(AxisType.Auto, "auto_axes", "out_sharding")
auto_axes.__name__ = auto_axes.__qualname__ = "auto_axes"
auto_axes.__doc__ = """``f`` run with the current mesh's ``axes`` (all, by default) of type
``Auto``, its results laid out by ``out_sharding`` (a ``PartitionSpec`` or sharding for all
of them, or a pytree prefix of them), given here or at each call.

Example:
    >>> import numpy as np, stage4_sharding as jax
    >>> from stage4_sharding.sharding import P, auto_axes
    >>> with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
    ...     a = jax.device_put(np.ones((4, 4), np.float32), P("x", None))
    ...     b = jax.device_put(np.ones((4, 4), np.float32), P(None, "x"))
    ...     print(jax.typeof(auto_axes(lambda a, b: a + b, out_sharding=P("x"))(a, b)))
    float32[4@x,4]
"""
explicit_axes = _decorator(AxisType.Explicit, "explicit_axes", "in_sharding")
explicit_axes.__name__ = explicit_axes.__qualname__ = "explicit_axes"
explicit_axes.__doc__ = """``f`` run with the current mesh's ``axes`` (all, by default) of
type ``Explicit``, its arguments laid out by ``in_sharding`` first (given here or at each
call): the dual of :func:`auto_axes`. Its results come back on the mesh as it was.
"""
