"""Shape primitives on split dims, against JAX 0.10.2 in explicit mode (issue 15, items 2 and 3).

For every shape primitive (rev, slice with strides and unaligned bounds, pad with interior
padding, concatenate, transpose, reshape that splits, merges or does neither, squeeze,
expand_dims and broadcast_in_dim), each split of its operand on the 1-D (8,) mesh and the 2-D
(4, 2) mesh, eagerly and under ``jit``: the same values and the same result type
(``float32[24@data]``) as JAX, or a ``ShardingTypeError`` where JAX raises (where it asks for
``out_sharding``); and the gathers and scatters of indexing and ``.at[]`` updates, indices out
of bounds included. There is no ``dynamic_slice`` primitive here yet, so dynamic slicing is not
among them. Negative padding is a pad and then a slice here (JAX: one pad).
"""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices
from stage4_sharding.partitioner import partition
from stage4_sharding.sharding import NamedSharding, P, set_mesh
from stage4_sharding.sharding_rules import ShardingTypeError

import stage4_sharding as jax
from stage4_sharding import lax

real = jax_with_eight_cpu_devices()

from jax import lax as real_lax  # noqa: E402  (after JAX's device count is set)
from jax.sharding import AxisType  # noqa: E402
from jax.sharding import PartitionSpec as RealP  # noqa: E402

X = np.arange(128, dtype=np.float32).reshape(16, 8)
ZERO = np.float32(0)

# Each program is written once over a ``lax`` namespace: ours or JAX's.
PROGRAMS = {
    "rev dim 0": lambda lax: lambda v: lax.rev(v, (0,)),
    "rev both dims": lambda lax: lambda v: lax.rev(v, (0, 1)),
    "v[::-1] * 2": lambda lax: lambda v: v[::-1] * 2.0,
    "slice all": lambda lax: lambda v: lax.slice(v, (0, 0), (16, 8)),
    "slice rows 1:9": lambda lax: lambda v: lax.slice(v, (1, 0), (9, 8)),
    "slice rows 3:7": lambda lax: lambda v: lax.slice(v, (3, 0), (7, 8)),
    "slice rows ::2": lambda lax: lambda v: lax.slice(v, (0, 0), (16, 8), (2, 1)),
    "slice rows 1::2": lambda lax: lambda v: lax.slice(v, (1, 0), (16, 8), (2, 1)),
    "slice rows 2:14:3": lambda lax: lambda v: lax.slice(v, (2, 0), (14, 8), (3, 1)),
    "slice cols 1:5, rows ::4": lambda lax: lambda v: lax.slice(v, (0, 1), (16, 5), (4, 1)),
    "pad rows interior": lambda lax: lambda v: lax.pad(v, ZERO, ((0, 1, 1), (0, 0, 0))),
    "pad rows 4, 4": lambda lax: lambda v: lax.pad(v, ZERO, ((4, 4, 0), (0, 0, 0))),
    "pad cols 2, 6 interior": lambda lax: lambda v: lax.pad(v, ZERO, ((0, 0, 0), (2, 6, 1))),
    "pad both 1, 2": lambda lax: lambda v: lax.pad(v, ZERO, ((1, 2, 0), (1, 2, 0))),
    "pad rows -1, 3 interior": lambda lax: lambda v: lax.pad(v, ZERO, ((-1, 3, 1), (0, 0, 0))),
    "pad cols -2, -1": lambda lax: lambda v: lax.pad(v, ZERO, ((0, 0, 0), (-2, -1, 0))),
    "concatenate rows": lambda lax: lambda v: lax.concatenate([v, v * 2.0], 0),
    "concatenate cols": lambda lax: lambda v: lax.concatenate([v, -v, v], 1),
    "transpose": lambda lax: lambda v: lax.transpose(v, (1, 0)),
    "reshape(-1)": lambda lax: lambda v: v.reshape(-1),
    "reshape merge, split": lambda lax: lambda v: v.reshape(-1).reshape(8, 16),
    "reshape split rows (8, 2, 8)": lambda lax: lambda v: v.reshape(8, 2, 8),
    "reshape split rows (4, 4, 8)": lambda lax: lambda v: v.reshape(4, 4, 8),
    "reshape split rows (2, 8, 8)": lambda lax: lambda v: v.reshape(2, 8, 8),
    "reshape split rows (2, 4, 2, 8)": lambda lax: lambda v: v.reshape(2, 4, 2, 8),
    "reshape split cols (16, 4, 2)": lambda lax: lambda v: v.reshape(16, 4, 2),
    "reshape split both (4, 4, 2, 4)": lambda lax: lambda v: v.reshape(4, 4, 2, 4),
    "reshape mixed (8, 16)": lambda lax: lambda v: v.reshape(8, 16),
    "reshape mixed (32, 4)": lambda lax: lambda v: v.reshape(32, 4),
    "reshape ones (1, 16, 1, 8)": lambda lax: lambda v: v.reshape(1, 16, 1, 8),
    "squeeze": lambda lax: lambda v: lax.squeeze(v.reshape(16, 1, 8), (1,)),
    "expand_dims 0": lambda lax: lambda v: lax.expand_dims(v, (0,)),
    "expand_dims 2": lambda lax: lambda v: lax.expand_dims(v, (2,)),
    "broadcast_in_dim": lambda lax: lambda v: lax.broadcast_in_dim(v, (16, 3, 8), (0, 2)),
    # Indexing and updates (gather and scatter), out-of-bounds indices included
    "at[..., 0].add": lambda lax: lambda v: v.at[..., 0].add(0.5),
    "at[:, cols].set": lambda lax: lambda v: v.at[:, np.array([1, 9, -1])].set(-1.0),
    "at[2].mul": lambda lax: lambda v: v.at[2].mul(3.0),
    "at[rows].add": lambda lax: lambda v: v.at[np.array([0, 17, 3])].add(1.0),
    "v[:, cols]": lambda lax: lambda v: v[:, np.array([0, 7, 3, 12])],
    "v[rows]": lambda lax: lambda v: v[np.array([0, 7, -3])],
    "v[5]": lambda lax: lambda v: v[5],
    "v[rows, cols]": lambda lax: lambda v: v[np.array([0, 7]), np.array([1, 2])],
}

MESHES = {"(8,)": ((8,), ("data",)), "(4, 2)": ((4, 2), ("x", "y"))}
SPLITS = [("(8,)", ("data",)), ("(8,)", (None, "data")),
          ("(4, 2)", ("x", "y")), ("(4, 2)", ("y", "x")), ("(4, 2)", (("x", "y"),)),
          ("(4, 2)", (None, ("y", "x"))), ("(4, 2)", (None, "y"))]


def _ours(mesh_name: str):
    shape, names = MESHES[mesh_name]
    return jax.make_mesh(shape, names)


def _theirs(mesh_name: str):
    shape, names = MESHES[mesh_name]
    return real.make_mesh(shape, names, axis_types=(AxisType.Explicit,) * len(shape))


@pytest.fixture(autouse=True)
def interpreter_backend():
    """The reference backend on each device: these tests are about where blocks go, and it
    spares a Numba compile per program (one test below runs the CPU backend)."""
    previous = jax.config.jax_default_backend
    jax.config.update("jax_default_backend", "interpreter")
    yield
    jax.config.update("jax_default_backend", previous)


def _outcomes(lib, fun, x, mesh_context, errors):
    """(value, type) of ``fun(x)`` eagerly and under ``lib.jit``, or the error's class name."""
    results = []
    with mesh_context:
        for run in (fun, lib.jit(fun)):
            try:
                y = run(x)
                results.append((np.asarray(y), str(lib.typeof(y))))
            except errors as e:
                results.append(type(e).__name__)
    return results


def _jax_outcomes(name, mesh_name, spec):
    mesh = _theirs(mesh_name)
    x = real.device_put(X, real.sharding.NamedSharding(mesh, RealP(*spec)))
    return _outcomes(real, PROGRAMS[name](real_lax), x, real.set_mesh(mesh), Exception)


def _our_outcomes(name, mesh_name, spec):
    mesh = _ours(mesh_name)
    x = jax.device_put(X, NamedSharding(mesh, P(*spec)))
    return _outcomes(jax, PROGRAMS[name](lax), x, set_mesh(mesh), ShardingTypeError)


@pytest.mark.parametrize("split", SPLITS, ids=lambda s: f"{s[0]}-P{s[1]}")
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_shape_op_on_split_dims_equals_jax(name, split):
    theirs = _jax_outcomes(name, *split)
    ours = _our_outcomes(name, *split)
    for mode, want, got in zip(("eager", "jit"), theirs, ours):
        if isinstance(want, str):
            assert want == "ShardingTypeError", f"{mode}: JAX raised {want}: a wrong test"
            assert got == want, f"{mode}: JAX raised {want}, we gave {got}"
            continue
        assert not isinstance(got, str), f"{mode}: JAX gave {want[1]}, we raised {got}"
        assert got[1] == want[1], f"{mode}: result type"
        np.testing.assert_array_equal(got[0], want[0], err_msg=mode)


def _collectives(fun, x) -> list[str]:
    """The collectives of ``fun``'s per-device program (the partitioner's choices)."""
    program = partition(jax.make_jaxpr(fun)(x), x.sharding.mesh).local
    kinds = {"all_gather", "all_to_all", "ppermute", "psum", "psum_scatter"}
    return [eqn.primitive.name for eqn in program.jaxpr.eqns if eqn.primitive.name in kinds]


@pytest.mark.parametrize(("fun", "spec", "collectives"), [
    (lambda v: v.reshape(-1), ("data",), []),  # the split dim is the major one: blocks stay
    (lambda v: v.reshape(4, 4, 8), (("x", "y"),), []),
    (lambda v: v.reshape(-1), ("x", "y"), ["all_gather", "all_gather"]),  # blocks change
    (lambda v: lax.rev(v, (0,)), (("x", "y"),), ["ppermute", "ppermute"]),  # one per axis
    (lambda v: v[::2], ("data",), []),  # each block keeps its own even rows
    (lambda v: v[1:9], ("data",), ["all_gather"]),
], ids=["merge", "split", "merge moving blocks", "rev", "aligned stride", "unaligned"])
def test_the_partitioner_moves_only_what_changes_device(fun, spec, collectives):
    mesh = _ours("(8,)" if "data" in str(spec) else "(4, 2)")
    with set_mesh(mesh):
        x = jax.device_put(X, NamedSharding(mesh, P(*spec)))
        assert _collectives(fun, x) == collectives


def test_reversed_split_rows_on_the_cpu_backend():
    """The issue's example, compiled by the CPU backend, eagerly and under jit."""
    jax.config.update("jax_default_backend", "cpu")
    mesh, theirs = _ours("(8,)"), _theirs("(8,)")
    fun = PROGRAMS["v[::-1] * 2"](lax)
    with set_mesh(mesh):
        x = jax.device_put(X[:8, :3], NamedSharding(mesh, P("data")))
        ours = [fun(x), jax.jit(fun)(x)]
    with real.set_mesh(theirs):
        want = real.jit(fun)(real.device_put(X[:8, :3], RealP("data")))
    for y in ours:
        np.testing.assert_array_equal(np.asarray(y), np.asarray(want))
        assert str(jax.typeof(y)) == str(real.typeof(want)) == "float32[8@data,3]"


def test_concatenate_asks_its_operands_to_agree_as_jax_does():
    """A split operand beside a replicated one: JAX raises, and so do we (a constant made
    inside the program has no sharding here, and takes the others' layout)."""
    mesh = _ours("(8,)")
    with set_mesh(mesh):
        x = jax.device_put(X, NamedSharding(mesh, P("data")))
        y = jax.device_put(X, NamedSharding(mesh, P()))
        with pytest.raises(ShardingTypeError, match="laid out differently"):
            lax.concatenate([x, y], 0)
        with pytest.raises(ShardingTypeError, match="laid out differently"):
            jax.jit(lambda a, b: lax.concatenate([a, b], 1))(x, y)
    theirs = _theirs("(8,)")
    with real.set_mesh(theirs):
        a = real.device_put(X, RealP("data"))
        b = real.device_put(X, RealP())
        with pytest.raises(Exception, match="same sharding"):
            real_lax.concatenate([a, b], 0)
