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
