"""Layouts under ``vmap`` against JAX 0.10.2 on 8 CPU devices: a mapped dim that is split
keeps its layout through a reshard or an ``out_sharding`` inside, and
``vmap(spmd_axis_name=...)``, which in JAX's explicit sharding mode (stage 4's only mode) is
checked against the mapped arguments' layouts and changes nothing else."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


def _types(lib, spmd, split_rows: bool, jitted: bool):
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        x = lib.device_put(X, P("x")) if split_rows else X
        f = lib.vmap(lambda r: lib.sharding.reshard(r * 2, P("y")), spmd_axis_name=spmd)
        out = (lib.jit(f) if jitted else f)(x)
        plain = lib.vmap(lambda r: r * 2, spmd_axis_name=spmd)(x)
        return str(lib.typeof(out)), str(lib.typeof(plain)), np.asarray(out).tolist()


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("split_rows", [False, True], ids=["replicated", "rows split"])
@pytest.mark.parametrize("spmd", [None, "x", ("x",)])
def test_spmd_axis_name_changes_no_layout_as_in_jax(spmd, split_rows: bool, jitted: bool):
    assert _types(jax, spmd, split_rows, jitted) == _types(real, spmd, split_rows, jitted)


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
def test_a_mapped_dim_split_over_another_axis_is_a_value_error_as_in_jax(lib):
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        x = lib.device_put(X, lib.sharding.PartitionSpec("x"))
        with pytest.raises(ValueError, match="Only one of spmd_axis_name or arrays sharded"):
            lib.vmap(lambda r: r * 2, spmd_axis_name="y")(x)


A = np.arange(64.0, dtype=np.float32).reshape(4, 4, 4) / 10
B = np.ones((4, 6), np.float32)

ASKED = {
    "matmul": lambda L, P, s: L.numpy.matmul(s, B, out_sharding=P(None, "y")),
    "dot_general": lambda L, P, s: L.lax.dot_general(s, B, (((1,), (0,)), ((), ())),
                                                     out_sharding=P(None, "y")),
    "broadcast_in_dim": lambda L, P, s: L.lax.broadcast_in_dim(s[0], (2, 4), (1,),
                                                               out_sharding=P(None, "y")),
    "einsum": lambda L, P, s: L.numpy.einsum("ij,jk->ik", s, B, out_sharding=P(None, "y")),
    "reshard": lambda L, P, s: L.sharding.reshard(s * 2, P("y")),
}


def _batched_layouts(lib, case: str, jitted: bool):
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        a = lib.device_put(A, P("x"))
        f = lib.vmap(lambda s: ASKED[case](lib, P, s))
        out = (lib.jit(f) if jitted else f)(a)
        return str(lib.typeof(out)), np.asarray(out).round(5).tolist()


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", list(ASKED))
def test_a_split_batch_dim_keeps_its_layout_under_out_sharding_as_in_jax(case, jitted):
    """The batch dim was made unsplit here (and a bare spec raised an AttributeError)."""
    assert _batched_layouts(jax, case, jitted) == _batched_layouts(real, case, jitted)


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
@pytest.mark.parametrize("specs", [("x", None), ("x", "y")], ids=["split, unsplit", "x, y"])
def test_mapped_dims_split_unlike_each_other_are_a_value_error_as_in_jax(lib, specs):
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        a, b = (lib.device_put(X, P(s)) for s in specs)
        with pytest.raises(ValueError, match="should be sharded the same"):
            lib.vmap(lambda r, s: r * s)(a, b)
        lib.vmap(lambda r, s: r * s, in_axes=(0, None))(a, b)  # an unmapped one may differ


# A value that does not depend on the batch meets batched ones split over a mesh axis: it is
# broadcast to the batch split the same way (JAX's AxisData.explicit_mesh_axis). Each case
# raised a ShardingTypeError here, gave an unsplit batch dim, or (vmap of jit) failed an
# internal assertion, where JAX computes.
C = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 2, 8)
D = np.linspace(0, 2, 4, dtype=np.float32)

BROADCAST = {
    # select_n of constants broadcast under a predicate split on 'y'
    "where of constants": lambda L, a, b: L.vmap(
        lambda r: L.numpy.where(r * r > 0.25, 1.0, -1.0))(a),
    # the zero cotangent of an unused input is a constant the batch is broadcast to
    "grad of an unused input": lambda L, a, b: L.vmap(
        L.grad(lambda r, s: L.numpy.sum(L.numpy.sin(r)), (0, 1)))(a, b),
    # an unbatched scatter update meets a cotangent split on 'y' in scatter's VJP
    "grad through a scatter": lambda L, a, b: L.vmap(
        L.grad(lambda r: L.numpy.sum(L.numpy.sin(r.at[-1].set(0.5)))))(a),
    # the batched program of a jitted function keeps its operands' layouts
    "jit inside": lambda L, a, b: L.vmap(L.jit(lambda r, s: L.numpy.sin(r) * s))(a, b),
    "jit of grad inside": lambda L, a, b: L.vmap(
        L.jit(L.grad(lambda r, s: L.numpy.sum(L.numpy.cos(r) * s), (0, 1))))(a, b),
    # grad of vmap of tile: a reshape that adds a dim of size 1 and splits another
    "grad of tile": lambda L, a, b: L.grad(lambda r: L.numpy.sum(L.numpy.sin(
        L.vmap(lambda t: L.numpy.tile(t, (2,))[L.numpy.array([0, -3])])(r))))(a[:, 0, :2]),
}


def _broadcast_case(lib, case: str, a_spec: tuple, jitted: bool):
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        a = lib.device_put(C, P("x", *a_spec))
        b = lib.device_put(D, P("x"))
        f = (lambda a, b: BROADCAST[case](lib, a, b))
        try:
            out = (lib.jit(f) if jitted else f)(a, b)
        except Exception as e:  # noqa: BLE001 -- both must refuse alike (a split row indexed)
            return type(e).__name__
        leaves = lib.tree_util.tree_leaves(out)
        return [str(lib.typeof(o)) for o in leaves], [np.asarray(o) for o in leaves]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("a_spec", [(), ("y",), (None, "y")],
                         ids=["batch split", "and rows", "and columns"])
@pytest.mark.parametrize("case", list(BROADCAST))
def test_values_broadcast_to_a_split_batch_are_split_alike_as_in_jax(case, a_spec, jitted):
    ours, theirs = (_broadcast_case(lib, case, a_spec, jitted) for lib in (jax, real))
    if isinstance(theirs, str):  # JAX refuses (an indexed dim is split): so must we
        assert ours == theirs
        return
    assert ours[0] == theirs[0]  # the types, shardings included
    for mine, jax_value in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(mine, jax_value, rtol=2e-6, atol=1e-6)


def _type_fields(lib, spec, jitted: bool):
    """What JAX code reads off ``typeof``: the sharding (its spec, and whether its mesh is
    empty, as for an array put on no mesh), the rank and the size; eagerly and traced."""
    P = lib.sharding.PartitionSpec
    seen = []

    def read(x):
        t = lib.typeof(x)
        seen.append((tuple(t.sharding.spec), t.sharding.mesh.empty, t.ndim, t.size, t.shape))
        return x * 2

    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        x = lib.numpy.asarray(X) if spec is None else lib.device_put(X, P(*spec))
        (lib.jit(read) if jitted else read)(x)
    return seen


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("spec", [None, ("x",), ("x", "y"), (None, "y")])
def test_typeof_has_the_sharding_rank_and_size_as_in_jax(spec, jitted: bool):
    """``jax.typeof(x).sharding`` raised AttributeError here: our type had only a spec."""
    assert _type_fields(jax, spec, jitted) == _type_fields(real, spec, jitted)


def test_typeof_an_array_on_no_mesh_has_an_empty_one_as_in_jax():
    for lib in (jax, real):
        t = lib.typeof(lib.numpy.ones((3, 2)))
        assert (tuple(t.sharding.spec), t.sharding.mesh.empty, t.ndim) == ((None, None), True, 2)
