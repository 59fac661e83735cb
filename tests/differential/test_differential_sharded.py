"""Stage 4 against JAX on meshes of 8 and 4x2 devices: random programs, and every shape
primitive, under ``set_mesh`` with their inputs split on each dim in turn, through ``jit``
and eagerly (the random programs through ``grad``, ``vmap`` and ``vmap`` of ``grad`` too).
Values, dtypes, weak types and the output shardings (specs) must be JAX's; where JAX refuses
a layout (explicit mode's sharding errors) ours must refuse it too.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from oracle import Inputs, Mismatch, compare, ours, real_jax  # noqa: E402
from random_programs import Line, Program, Value, draw_program  # noqa: E402
from sharded import (  # noqa: E402
    MESHES,
    OP_BY_OP,
    SHARDED_EAGER,
    SHARDED_GRAD,
    SHARDED_JIT,
    SHARDED_VMAP,
    SHARDED_VMAP_GRAD,
    SPLIT_BATCH,
    Placement,
    check_sharded,
    every_split,
    placements,
    run_sharded,
    shrink_sharded,
)

SEEDS = range(8)

# Known differences, by (transformation, mesh, seed) or (op, mesh): strict, see
# test_differential_programs.py. None at present.
KNOWN: dict[tuple, str] = {}


def xfail_if_known(key: tuple, *values, id: str):
    reason = KNOWN.get(key)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(*values, marks=marks, id=id)


def test_jax_has_the_devices_the_meshes_need() -> None:
    """JAX was given 8 CPU devices before it started (conftest.py); without them every test
    here would only compare errors."""
    assert len(jax.devices()) >= 8, jax.devices()
    assert len(ours(4).jax.devices()) >= 8


def report(found: list[tuple[Mismatch, Placement]]) -> None:
    if found:
        first, placement = found[0]
        lines = [f"{p.specs} on the {p.mesh} mesh: {'; '.join(m.problems)}" for m, p in found]
        pytest.fail("\n".join(lines) + "\n\nSmallest reproducer of the first:\n"
                    + shrink_sharded(first, placement).reproducer(), pytrace=False)


@pytest.mark.parametrize("transform, mesh, seed", [
    xfail_if_known((t.name, mesh, seed), t, mesh, seed, id=f"{t.name}-{mesh}-{seed}")
    for t in (SHARDED_JIT, SHARDED_EAGER, SHARDED_GRAD, SHARDED_VMAP, SHARDED_VMAP_GRAD)
    for mesh in MESHES for seed in SEEDS])
def test_random_program_on_split_inputs_equals_jax(transform, mesh: str, seed: int) -> None:
    program = draw_program(seed + 2000, sides=(2, 4, 8))
    found = []
    for placement in placements(program, mesh):
        mismatch = check_sharded(program, placement, transform)
        if mismatch is not None:
            found.append((mismatch, placement))
    report(found)


@pytest.mark.parametrize("name, mesh, seed", [
    xfail_if_known((name, mesh, seed), name, mesh, seed, id=f"{name}-{mesh}-{seed}")
    for name, mesh in SPLIT_BATCH for seed in SEEDS])
def test_random_program_over_a_split_batch_equals_jax(name: str, mesh: str, seed: int) -> None:
    """Each broadcast to the batch of a value that does not depend on it is split as the
    batch is (it raised, or gave an unsplit batch dim, before ``AxisData.split``)."""
    program = draw_program(seed + 3000, sides=(2, 4, 8))
    found = []
    for placement in placements(program, mesh):
        mismatch = check_sharded(program, placement, SPLIT_BATCH[name, mesh])
        if mismatch is not None:
            found.append((mismatch, placement))
    report(found)


# Every shape primitive, each a one-line program of one 3-D input.
SHAPE_OPS = {
    "rev": "x[::-1] * 2.0", "rev_minor": "lax.rev(x, (1,))", "flip": "jnp.flip(x, (0, 2))",
    "strided_slice": "x[1::2]", "slice": "x[:, 1:3]", "reversed_slice": "x[..., ::-1]",
    "pad": "lax.pad(x, 0.0, [(1, 1, 0), (0, 0, 0), (0, 0, 0)])",
    "pad_interior": "lax.pad(x, 0.0, [(0, 0, 0), (0, 0, 1), (0, 0, 0)])",
    "concatenate": "jnp.concatenate([x, x * 2.0], axis=0)",
    "concatenate_minor": "jnp.concatenate([x, x], axis=1)",
    "transpose": "jnp.transpose(x, (1, 0, 2))", "T": "x.T", "swapaxes": "jnp.swapaxes(x, 0, 2)",
    "reshape_flat": "x.reshape(-1)", "reshape_merge_minor": "x.reshape(x.shape[0], -1)",
    "reshape_split_major": "x.reshape(2, -1, x.shape[1], x.shape[2])",
    "expand_dims": "jnp.expand_dims(x, 1)", "squeeze": "jnp.squeeze(x[:, :1], axis=1)",
    "broadcast": "jnp.broadcast_to(x[None], (2,) + x.shape)",
    "stack": "jnp.stack([x, x], axis=1)", "tile": "jnp.tile(x, (1, 2, 1))",
    "tile_major": "jnp.tile(x, (2, 1, 1))", "tile_rank": "jnp.tile(x, (2, 1, 1, 1))",
    "index": "x[2]", "gather": "x[jnp.array([0, 3, 1])]",
    "gather_minor": "x[:, jnp.array([1, 0])]", "take": "jnp.take(x, jnp.array([1, 0]), axis=2)",
    "update": "x.at[..., 0].add(0.5)", "update_rows": "x.at[jnp.array([1, 2])].set(0.0)",
    "zeros_like": "jnp.zeros_like(x)", "full_like": "jnp.full_like(x, 2.0)",
    "zeros_like_shape": "jnp.zeros_like(x, shape=x.shape)",
    "ones_like_new_shape": "jnp.ones_like(x, shape=x.shape[:2])",
    # matmul's batch dims: one operand's are missing, or of size 1 (not broadcast, in JAX)
    "matmul_matrix_by_stack": "jnp.matmul(jnp.mean(x, axis=0).T, x)",
    "matmul_unit_batch": "jnp.matmul(x[:1], jnp.swapaxes(x, 1, 2))",
}
SHAPES = {"8": (8, 8, 2), "4x2": (8, 4, 2)}


def one_line_program(expr: str, shape: tuple[int, ...]) -> Program:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10.0 - 3.0
    out = Value("v1", (), "f")
    return Program([Value("x", shape, "f")], [x], [Line(out, expr, ("x",))], ("v1",), seed=0)


@pytest.mark.parametrize("op, mesh", [
    xfail_if_known((op, mesh), op, mesh, id=f"{op}-{mesh}") for op in SHAPE_OPS
    for mesh in MESHES])
def test_shape_op_on_each_split_equals_jax(op: str, mesh: str) -> None:
    program = one_line_program(SHAPE_OPS[op], SHAPES[mesh])
    found = []
    for spec in every_split(SHAPES[mesh], mesh):
        placement = Placement(mesh, (spec,))
        mismatch = check_sharded(program, placement, SHARDED_JIT)
        if mismatch is not None:
            found.append((mismatch, placement))
    report(found)


@pytest.mark.parametrize("op", [op for op in SHAPE_OPS if "like" in op])
def test_like_functions_keep_shardings_eagerly_as_jax(op: str) -> None:
    """Eagerly (op by op, not under the one jit the oracle uses for JAX's eager side), JAX
    keeps a concrete array's sharding for a *_like of its own shape, given or not; traced,
    only when no shape is given (the jit test above)."""
    program = one_line_program(SHAPE_OPS[op], SHAPES["8"])
    found = []
    for spec in every_split(SHAPES["8"], "8"):
        placement = Placement("8", (spec,))
        mismatch = check_sharded(program, placement, OP_BY_OP)
        if mismatch is not None:
            found.append((mismatch, placement))
    report(found)


def test_an_unsplit_program_on_the_mesh_equals_jax() -> None:
    """The comparison itself sees shardings: a replicated input gives replicated results in
    both, and an input split over ``d`` gives JAX's split result, spec and all."""
    program = one_line_program("jnp.sin(x) * 2.0", SHAPES["8"])
    inputs = Inputs(program.args, [], [], ())
    for spec in ((), ("d",)):
        placement = Placement("8", (spec,))
        got = run_sharded(ours(4), program, SHARDED_JIT, inputs, placement)
        want = run_sharded(real_jax(), program, SHARDED_JIT, inputs, placement)
        assert want.error is None and got.error is None
        assert want.value.sharding.spec[:1] == (spec[0] if spec else None,)
        assert not compare(got, want, shardings=True)


def test_where_lays_every_operand_out_alike_when_one_is_broadcast() -> None:
    """JAX's ``jnp.where`` broadcasts all three operands to one layout, merged from theirs,
    as soon as one of them is broadcast; without a broadcast, select_n's rule refuses cases
    laid out differently. Found by ``tools/differential.py`` (program 5240075), where ours
    refused ``where(v > a, v, a)`` with ``v`` a split row and ``a`` replicated."""
    import stage4_sharding.numpy as sjnp

    import stage4_sharding as sj
    results = []
    for lib, np_ in ((jax, jax.numpy), (sj, sjnp)):
        mesh = lib.make_mesh((4, 2), ("x", "y"))
        sharding = lib.sharding.NamedSharding
        spec = lib.sharding.PartitionSpec

        def put(value, *entries, lib=lib, mesh=mesh, sharding=sharding, spec=spec):
            return lib.device_put(np.asarray(value, np.float32), sharding(mesh, spec(*entries)))
        a = put(np.arange(4.0).reshape(2, 2))
        row, split, column = put([[1.0, 2.5]], None, "y"), put(np.ones((2, 2)), None, "y"), \
            put(np.ones((4, 1)), "x", None)
        cases = {"row": lambda: np_.where(row > a, row, a),
                 "jit": lambda: lib.jit(lambda r, a: np_.where(r > a, r, a))(row, a),
                 "two splits": lambda: np_.where(column > 0, column, put(np.ones((4, 2)),
                                                                         None, "y")),
                 "grad": lambda: lib.grad(lambda r: np_.where(r > a, r, a).sum())(row),
                 "no broadcast": lambda: np_.where(split > 0, split, a)}
        with lib.set_mesh(mesh):
            out = {}
            for name, case in cases.items():
                try:
                    value = case()
                    out[name] = (str(lib.typeof(value)), np.asarray(value).tolist())
                except Exception as error:  # noqa: BLE001 -- the class is compared
                    out[name] = type(error).__name__
        results.append(out)
    theirs, ours = results
    assert ours == theirs
    assert theirs["no broadcast"] == "ShardingTypeError"
    assert theirs["two splits"][0] == "float32[4@x,2@y]"
