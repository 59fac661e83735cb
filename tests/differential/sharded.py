"""Stage 4 against JAX: a program under ``set_mesh``, its array inputs put on the mesh with
``device_put`` and a ``PartitionSpec``, run by ``jit`` (and eagerly); the results compared as
everywhere, and their shardings too.

Placements: each array input split on each of its dims in turn (the others replicated), then
every input split at once. On the 4x2 mesh a dim is split over ``x``, ``y`` or both, as its size
allows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from oracle import (
    Inputs,
    Library,
    Mismatch,
    Outcome,
    Tolerance,
    Transform,
    compare,
    evaluate,
    inputs_for,
    jax_side,
    ours,
    real_jax,
    scope_for,
)
from random_programs import Program

MESHES = {"8": ((8,), ("d",)), "4x2": ((4, 2), ("x", "y"))}

SHARDED_JIT = Transform("sharded_jit", "jax.jit(program)(*args)", 4)
SHARDED_EAGER = Transform("sharded_eager", "program(*args)", 4)
SHARDED_GRAD = Transform("sharded_grad", "jax.grad(loss_of(program), ARGNUMS)(*args)", 4)
# vmap over a new leading dim (two examples) of the split inputs, and of their gradient
_STACKED = "*[jnp.stack([a, a * 0.5 + 0.25]) for a in args]"
SHARDED_VMAP = Transform("sharded_vmap", f"jax.vmap(program)({_STACKED})", 4)
SHARDED_VMAP_GRAD = Transform(
    "sharded_vmap_grad", f"jax.vmap(jax.grad(loss_of(program), ARGNUMS))({_STACKED})", 4)
# vmap over a batch dim split over a mesh axis the inputs leave free: whatever does not depend
# on the batch is broadcast to it split alike (jit inside vmap, grad inside and outside too)
_SPLIT_BATCH = {"vmap": "jax.vmap(program)(*BATCH)",
                "vmap_jit": "jax.vmap(jax.jit(program))(*BATCH)",
                "vmap_grad": "jax.vmap(jax.grad(loss_of(program), ARGNUMS))(*BATCH)",
                "grad_vmap": "jax.grad(loss_of(jax.vmap(program)), ARGNUMS)(*BATCH)"}
SPLIT_BATCH = {(name, mesh): Transform(f"split_batch_{name}", code.replace(
    "BATCH", f"split_batch(args, {axes!r})"), 4)
    for name, code in _SPLIT_BATCH.items() for mesh, (_, axes) in MESHES.items()}
# Eager on JAX's side too, op by op (slower): where JAX's eager and traced results differ.
OP_BY_OP = Transform("op_by_op", "program(*args)", 4)

Spec = tuple[Any, ...] | None  # None: not put on the mesh (a Python float)


@dataclass(frozen=True)
class Placement:
    """A mesh and one partition spec per argument."""

    mesh: str
    specs: tuple[Spec, ...]

    def setup(self) -> str:
        """The lines that make the mesh and place ``args``, for a reproducer."""
        shape, names = MESHES[self.mesh]
        lines = [f"mesh = jax.make_mesh({shape}, {names})", "jax.set_mesh(mesh)"]
        for k, spec in enumerate(self.specs):
            if spec is not None:
                lines.append(f"args[{k}] = jax.device_put(args[{k}], jax.sharding.NamedSharding("
                             f"mesh, jax.sharding.PartitionSpec(*{spec})))")
        return "\n".join(lines)


def axes_for(mesh: str, size: int) -> list[Any]:
    """The mesh axes (or axis tuples) a dim of ``size`` can be split over."""
    shape, names = MESHES[mesh]
    options: list[Any] = [n for n, s in zip(names, shape) if size % s == 0]
    if len(names) > 1 and size % (shape[0] * shape[1]) == 0:
        options.append(names)
    return options


def placements(program: Program, mesh: str) -> Iterator[Placement]:
    """One placement per (array input, dim an axis divides), then all inputs split at once."""
    arrays = [k for k, v in enumerate(program.inputs) if v.kind == "f"]
    replicated = tuple(() if k in arrays else None for k in range(len(program.inputs)))
    together = list(replicated)
    turn = 0
    for k in arrays:
        shape = program.inputs[k].shape
        for dim, size in enumerate(shape):
            options = axes_for(mesh, size)
            if not options:
                continue
            axis = options[turn % len(options)]
            turn += 1
            spec = tuple(axis if d == dim else None for d in range(len(shape)))
            specs = list(replicated)
            specs[k] = spec
            yield Placement(mesh, tuple(specs))
            if together[k] == ():
                together[k] = spec
    if sum(1 for s in together if s) > 1:
        yield Placement(mesh, tuple(together))


def mesh_of(lib: Library, name: str) -> Any:
    shape, names = MESHES[name]
    return lib.jax.make_mesh(shape, names)


def placed_args(lib: Library, mesh: Any, inputs: Inputs, specs: Sequence[Spec]) -> list[Any]:
    sharding, spec_type = lib.jax.sharding.NamedSharding, lib.jax.sharding.PartitionSpec
    return [x if spec is None else lib.jax.device_put(x, sharding(mesh, spec_type(*spec)))
            for x, spec in zip(inputs.args, specs)]


def run_sharded(lib: Library, program: Program, transform: Transform, inputs: Inputs,
                placement: Placement) -> Outcome:
    try:
        mesh = mesh_of(lib, placement.mesh)
        with lib.jax.set_mesh(mesh):
            scope = scope_for(lib, program, transform.code)
            scope["args"] = placed_args(lib, mesh, inputs, placement.specs)
            scope["tangents"] = scope["batch"] = ()
            code = transform.code if transform in (SHARDED_JIT, OP_BY_OP) or not lib.is_jax else (
                jax_side(transform.code))
            return evaluate(code, scope, f"<{transform.name}>")
    except Exception as error:  # noqa: BLE001 -- an error is a result to compare
        return Outcome(error=error)


def check_sharded(program: Program, placement: Placement, transform: Transform = SHARDED_JIT,
                  tol: Tolerance = Tolerance()) -> Mismatch | None:
    inputs = inputs_for(program)
    got = run_sharded(ours(4), program, transform, inputs, placement)
    want = run_sharded(real_jax(), program, transform, inputs, placement)
    problems = compare(got, want, tol, shardings=True)
    if not problems:
        return None
    return Mismatch(program, transform, inputs, problems, got, want, setup=placement.setup())


def shrink_sharded(mismatch: Mismatch, placement: Placement,
                   tol: Tolerance = Tolerance()) -> Mismatch:
    """The first value of the program whose result or sharding differs, alone."""
    for line in mismatch.program.lines:
        candidate = mismatch.program.returning((line.target.name,))
        found = check_sharded(candidate, placement, mismatch.transform, tol)
        if found is not None:
            return found
    return mismatch


def every_split(shape: tuple[int, ...], mesh: str) -> list[tuple[Any, ...]]:
    """Every spec of one array splitting one dim over an axis it divides, and on the 2-D
    mesh each pair of dims split over ``x`` and ``y``."""
    specs = [tuple(axis if d == dim else None for d in range(len(shape)))
             for dim, size in enumerate(shape) for axis in axes_for(mesh, size)]
    if mesh == "4x2":
        specs += [tuple("x" if d == i else "y" if d == j else None for d in range(len(shape)))
                  for i in range(len(shape)) for j in range(len(shape))
                  if i != j and shape[i] % 4 == 0 and shape[j] % 2 == 0]
    return specs
