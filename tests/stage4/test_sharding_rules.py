"""Sharding in types, eagerly: each primitive's result gets the sharding its rule gives (as
in JAX's explicit mode), the values equal NumPy's, and the layouts with no single answer are
errors that name the op, the operand types and the fix."""

import numpy as np
import pytest
from stage1_autodiff.core import ShapedArray, all_primitives
from stage4_sharding.sharding import NamedSharding, P
from stage4_sharding.sharding_rules import (
    ShardingTypeError,
    dot_general_sharding_rule,
    sharding_rules,
)

import stage4_sharding as jax
from stage4_sharding import lax
from stage4_sharding import numpy as jnp

rng = np.random.default_rng(0)
x8x4 = rng.standard_normal((8, 4)).astype(np.float32)
x4x6 = rng.standard_normal((4, 6)).astype(np.float32)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((4, 2), ("x", "y"))


def put(value, mesh, *spec):
    return jax.device_put(value, NamedSharding(mesh, P(*spec)))


def check(result, expected, type_string):
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-5, atol=1e-6)
    assert str(jax.typeof(result)) == type_string


def test_elementwise_ops_agree_dim_by_dim(mesh):
    x = put(x8x4, mesh, "x", "y")
    check(jnp.tanh(x) * 2.0 + 1.0, np.tanh(x8x4) * 2 + 1, "float32[8@x,4@y]")
    check(x + put(x8x4, mesh, "x"), x8x4 * 2, "float32[8@x,4@y]")  # unsplit takes the split
    with pytest.raises(ShardingTypeError, match=r"add got operands of types float32\[8@x,4@y\], "
                                                r"float32\[8@y,4\]: dim 0 is split"):
        x + put(x8x4, mesh, "y")


def test_reductions_drop_the_reduced_dims(mesh):
    x = put(x8x4, mesh, "x", "y")
    check(x.sum(0), x8x4.sum(0), "float32[4@y]")
    check(jnp.max(x, axis=1), x8x4.max(1), "float32[8@x]")
    check(jnp.argmax(x, axis=0), np.argmax(x8x4, axis=0), "int32[4@y]")


def test_shape_ops_carry_splits_or_raise_where_jax_does(mesh):
    """(tests/stage4/test_shape_ops_vs_jax.py compares every shape op with JAX itself.)"""
    x = put(x8x4, mesh, "x", "y")
    check(x.T, x8x4.T, "float32[4@y,8@x]")
    check(x[None], x8x4[None], "float32[1,8@x,4@y]")
    check(jnp.reshape(put(x8x4, mesh, "x"), (8, 2, 2)), x8x4.reshape(8, 2, 2),
          "float32[8@x,2,2]")
    check(jnp.reshape(put(x8x4, mesh, "x"), (32,)), x8x4.reshape(32), "float32[32@x]")
    with pytest.raises(ShardingTypeError, match="neither splits one dim nor merges"):
        jnp.reshape(put(x8x4, mesh, "x"), (2, 16))
    check(x[1:5], x8x4[1:5], "float32[4@x,4@y]")
    with pytest.raises(ShardingTypeError, match=r"slice got .* dim 0, split over \('x',\) "
                                                r"\(4 blocks\), would have size 2"):
        x[1:3]
    check(put(x8x4, mesh, "x")[:, 1:3], x8x4[:, 1:3], "float32[8@x,2]")
    check(jnp.flip(x, 0), x8x4[::-1], "float32[8@x,4@y]")
    check(jnp.concatenate([x, x], axis=1), np.concatenate([x8x4, x8x4], 1), "float32[8@x,8@y]")
    with pytest.raises(ShardingTypeError, match="concatenate .* laid out differently"):
        jnp.concatenate([x, put(x8x4, mesh, "x")], axis=1)


def test_dot_general_keeps_free_dims_and_drops_one_sided_contractions(mesh):
    x = put(x8x4, mesh, "x", "y")
    check(x @ put(x4x6, mesh), x8x4 @ x4x6, "float32[8@x,6]")  # contraction split on one side
    check(put(x8x4, mesh, "x") @ put(x4x6, mesh, None, "y"), x8x4 @ x4x6, "float32[8@x,6@y]")
    with pytest.raises(ShardingTypeError, match="sharding is ambiguous.*out_sharding"):
        x @ put(x4x6, mesh, "y")
    with pytest.raises(ShardingTypeError, match="same mesh axis"):
        put(x8x4, mesh, "x") @ put(np.ones((4, 8), np.float32), mesh, None, "x")


# dot_general's rule on types alone, nothing run (Task 4.1): the rule called directly, and
# the types of a traced program.
MATMUL = (((1,), (0,)), ((), ()))
BATCHED = (((2,), (1,)), ((0,), (0,)))  # dim 0 is a batch dim; x's dim 2 meets y's dim 1


def rule(avals, specs, dimension_numbers=MATMUL, **params):
    shaped = [ShapedArray(shape, np.dtype(np.float32)) for shape in avals]
    return dot_general_sharding_rule(shaped, specs, dimension_numbers=dimension_numbers,
                                     preferred_element_type=None, **params)


@pytest.mark.task4_1
def test_dot_general_rule_keeps_free_and_batch_dims_and_drops_one_sided_contractions():
    shapes = [(64, 16), (16, 4)]
    assert rule(shapes, [(("x",), ()), ((), ("y",))]) == [(("x",), ("y",))]
    assert rule(shapes, [((), ("x",)), ((), ())]) == [((), ())]
    assert rule(shapes, [(("x", "y"), ()), (("y",), ())]) == [(("x", "y"), ())]
    cube, other = (8, 4, 4), (8, 4, 2)
    assert rule([cube, other], [(("x",), ("y",), ()), (("x",), (), ())], BATCHED) == [
        (("x",), ("y",), ())]
    assert rule([cube, other], [(("x",), (), ()), (("x",), ("y",), ())], BATCHED) == [
        (("x",), (), ())]


@pytest.mark.task4_1
def test_dot_general_rule_errors_name_the_problem():
    shapes = [(64, 16), (16, 4)]
    with pytest.raises(ShardingTypeError, match="ambiguous.*out_sharding"):
        rule(shapes, [((), ("x",)), (("x",), ())])
    with pytest.raises(ShardingTypeError, match="batch dims 0 and 0 are split differently"):
        rule([(8, 4, 4), (8, 4, 2)], [(("x",), (), ()), (("y",), (), ())], BATCHED)
    with pytest.raises(ShardingTypeError, match="batch dims 0 and 0 are split differently"):
        rule([(8, 4, 4), (8, 4, 2)], [((), (), ()), (("x",), (), ())], BATCHED)  # as JAX
    with pytest.raises(ShardingTypeError, match="same mesh axis"):
        rule(shapes, [(("x",), ()), ((), ("x",))])
    with pytest.raises(ShardingTypeError, match="more entries than the result has dims"):
        rule(shapes, [((), ()), ((), ())], out_sharding=P("x", None, None))


@pytest.mark.task4_1
def test_out_sharding_is_the_result_spec_padded_to_its_rank(mesh):
    shapes, split_inner = [(64, 16), (16, 4)], [((), ("x",)), (("x",), ())]
    assert rule(shapes, split_inner, out_sharding=P("x")) == [(("x",), ())]
    assert rule(shapes, split_inner, out_sharding=NamedSharding(mesh, P(None, "y"))) == [
        ((), ("y",))]
    assert rule(shapes, split_inner, out_sharding=P()) == [((), ())]


@pytest.mark.task4_1
def test_traced_contractions_carry_the_rules_types(mesh):
    closed = jax.make_jaxpr(lambda a, b: (a @ b, b.T @ a.T))(
        put(x8x4, mesh, "x", "y"), put(x4x6, mesh, None, "y"))
    assert [v.aval.str_short() for v in closed.jaxpr.outvars] == [
        "f32[8@x,6@y]", "f32[6@y,8@x]"]


def test_out_sharding_resolves_the_ambiguous_contraction(mesh):
    x, y = put(x8x4, mesh, "x", "y"), put(x4x6, mesh, "y")
    check(jnp.matmul(x, y, out_sharding=P()), x8x4 @ x4x6, "float32[8,6]")  # an all-reduce
    check(jnp.matmul(x, y, out_sharding=P("x", "y")), x8x4 @ x4x6, "float32[8@x,6@y]")
    with jax.record_collectives() as log:
        jnp.matmul(x, y, out_sharding=P(None, "y"))
    assert [c.kind for c in log] == ["reduce-scatter", "all-gather"]
    with pytest.raises(ShardingTypeError, match="out_sharding .* has more entries than the "
                                                "result has dims"):
        jnp.matmul(x, y, out_sharding=P("x", None, None))
    # a vector operand takes one too (as JAX's: the contraction is not reshaped to matrices)
    check(jnp.matmul(x, x4x6[:, 0], out_sharding=P("x")), x8x4 @ x4x6[:, 0], "float32[8@x]")


def test_creation_is_replicated_and_sorting_needs_the_sorted_dim_whole(mesh):
    x = put(x8x4, mesh, "x")
    check(x + jnp.arange(4, dtype=jnp.float32), x8x4 + np.arange(4), "float32[8@x,4]")
    check(lax.sort(x, dimension=1), np.sort(x8x4, axis=1), "float32[8@x,4]")
    with pytest.raises(ShardingTypeError, match="sort .* dim 0 is split"):
        lax.sort(x, dimension=0)


def test_different_meshes_are_an_error(mesh):
    other = jax.make_mesh((8,), ("x",))
    with pytest.raises(ValueError, match="different meshes"):
        put(x8x4, mesh, "x") + put(x8x4, other, "x")


def test_every_primitive_has_a_sharding_rule_but_the_per_device_ones():
    """Collectives (and the partitioner's shard_slice) exist only in per-device programs,
    where types are blocks and shard_map's replication check types them instead."""
    missing = {prim.name for prim in all_primitives if prim not in sharding_rules}
    assert missing == {"psum", "pmax", "pmin", "all_gather", "axis_index", "psum_scatter",
                       "ppermute", "all_to_all", "shard_slice"}
