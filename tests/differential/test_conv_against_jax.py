"""``lax.conv_general_dilated`` and its wrappers against JAX: values and VJPs over a grid of
strides, paddings, dilations, layouts and groups; check_grads to order 2; jit == eager,
vmap == a loop, a batch-sharded convolution == the unsharded one; and the errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jlax = pytest.importorskip("jax.lax")

import stage4_sharding.numpy as jnp  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402
from stage4_sharding.sharding import NamedSharding  # noqa: E402
from stage4_sharding.sharding import PartitionSpec as P  # noqa: E402

import stage4_sharding as sj  # noqa: E402
from stage4_sharding import lax  # noqa: E402

rng = np.random.default_rng(0)


def draw(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def assert_both(lhs_shape, rhs_shape, **params):
    """Values and both cotangents agree with JAX's."""
    x, w = draw(*lhs_shape), draw(*rhs_shape)
    want, pullback = jax.vjp(lambda a, b: jlax.conv_general_dilated(a, b, **params), x, w)
    got, our_pullback = sj.vjp(lambda a, b: lax.conv_general_dilated(a, b, **params),
                               jnp.asarray(x), jnp.asarray(w))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    ct = draw(*want.shape)
    for ours, theirs in zip(our_pullback(jnp.asarray(ct)), pullback(ct)):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-4)


GRID = list(itertools.product([(1, 1), (2, 1), (2, 3)],
                              ["SAME", "VALID", "SAME_LOWER", ((1, 2), (0, 1)), ((-1, 2), (2, 0))],
                              [None, (1, 2)]))


@pytest.mark.parametrize("strides, padding, rhs_dilation", GRID)
def test_2d_grid_of_strides_paddings_and_dilations(strides, padding, rhs_dilation):
    assert_both((2, 3, 7, 6), (4, 3, 3, 2), window_strides=strides, padding=padding,
                rhs_dilation=rhs_dilation)


@pytest.mark.parametrize("padding", [((1, 2), (0, 1)), ((2, 0), (-1, 1))])
@pytest.mark.parametrize("strides", [(1, 1), (2, 3)])
def test_lhs_dilation_with_explicit_padding(strides, padding):
    assert_both((2, 3, 7, 6), (4, 3, 3, 2), window_strides=strides, padding=padding,
                lhs_dilation=(2, 1), rhs_dilation=(1, 2))


LAYOUTS = [
    ((2, 5, 6, 3), (3, 2, 3, 4), dict(dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 5, 6, 3), (3, 2, 3, 4), dict(dimension_numbers=("NWHC", "HWIO", "CNWH"))),
    ((2, 5, 6, 4), (3, 2, 2, 4), dict(dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                      feature_group_count=2)),
    ((2, 6, 5, 5), (6, 1, 3, 3), dict(feature_group_count=6)),  # depthwise
    ((6, 4, 5, 5), (6, 4, 3, 3), dict(batch_group_count=3)),
    ((6, 4, 5, 5), (6, 4, 3, 3), dict(batch_group_count=2, rhs_dilation=(2, 1))),
    ((2, 3, 7), (4, 3, 3), dict(window_strides=(2,))),  # 1-D
    ((2, 3, 5, 4, 6), (4, 3, 2, 3, 2), dict(window_strides=(1, 2, 1), rhs_dilation=(1, 1, 2))),
]


@pytest.mark.parametrize("lhs_shape, rhs_shape, params", LAYOUTS)
def test_layouts_groups_and_ranks(lhs_shape, rhs_shape, params):
    params = {"window_strides": (1,) * (len(lhs_shape) - 2), "padding": "SAME", **params}
    if "dimension_numbers" in params:
        as_numbers = jlax.conv_dimension_numbers(lhs_shape, rhs_shape,
                                                 params["dimension_numbers"])
        ours = lax.conv_dimension_numbers(lhs_shape, rhs_shape, params["dimension_numbers"])
        assert tuple(ours) == tuple(as_numbers)
    assert_both(lhs_shape, rhs_shape, **params)


def test_integer_and_preferred_element_type():
    x, w = rng.integers(-3, 4, (1, 2, 5)).astype(np.int32), rng.integers(-3, 4, (2, 2, 2))
    w = w.astype(np.int32)
    want = jlax.conv_general_dilated(x, w, (1,), "VALID")
    got = lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), (1,), "VALID")
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    xf, wf = draw(1, 2, 5), draw(2, 2, 2)
    got = lax.conv_general_dilated(jnp.asarray(xf), jnp.asarray(wf), (1,), "VALID",
                                   preferred_element_type=np.float32)
    assert got.dtype == np.float32


def test_conv_and_conv_with_general_padding():
    x, w = draw(1, 2, 6, 5), draw(3, 2, 3, 3)
    np.testing.assert_allclose(np.asarray(lax.conv(jnp.asarray(x), jnp.asarray(w), (2, 1),
                                                   "SAME")),
                               np.asarray(jlax.conv(x, w, (2, 1), "SAME")), rtol=1e-5,
                               atol=1e-5)
    args = ((1, 1), ((1, 0), (2, 1)), (2, 1), (1, 2))
    np.testing.assert_allclose(
        np.asarray(lax.conv_with_general_padding(jnp.asarray(x), jnp.asarray(w), *args)),
        np.asarray(jlax.conv_with_general_padding(x, w, *args)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding, transpose_kernel, consistent", [
    ("SAME", False, False), ("VALID", True, False), (((1, 0), (0, 2)), False, False),
    (((1, 0), (0, 2)), True, True)])
def test_conv_transpose(padding, transpose_kernel, consistent):
    x, w = draw(2, 4, 5, 3), draw(3, 2, 3, 3)
    kw = dict(transpose_kernel=transpose_kernel, use_consistent_padding=consistent)
    want = jlax.conv_transpose(x, w, (2, 1), padding, **kw)
    got = lax.conv_transpose(jnp.asarray(x), jnp.asarray(w), (2, 1), padding, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------
# Gradients to order 2, jit, vmap, sharding
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [
    dict(window_strides=(2,), padding="SAME", rhs_dilation=(2,)),
    dict(window_strides=(1,), padding=((1, 0),), lhs_dilation=(2,), feature_group_count=2),
    dict(window_strides=(1,), padding="VALID", batch_group_count=2),
])
def test_check_grads_to_order_2(params):
    x, w = jnp.asarray(draw(2, 4, 5)), jnp.asarray(draw(4, 4 // params.get(
        "feature_group_count", 1), 2))
    check_grads(lambda a, b: lax.conv_general_dilated(a, b, **params), (x, w), order=2,
                atol=5e-2, rtol=5e-2)


def cnn(x, w):
    y = lax.conv_general_dilated(x, w, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO",
                                                                          "NHWC"),
                                 feature_group_count=2)
    return jnp.tanh(y)


X, W = draw(4, 5, 6, 4), draw(3, 3, 2, 6)


def test_jit_equals_eager_with_its_gradient():
    x, w = jnp.asarray(X), jnp.asarray(W)
    loss = lambda a, b: (cnn(a, b) ** 2).sum()
    for eager, jitted in ((cnn(x, w), sj.jit(cnn)(x, w)),
                          *zip(sj.grad(loss, (0, 1))(x, w), sj.jit(sj.grad(loss, (0, 1)))(x, w))):
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-4, atol=1e-4)


def test_the_jaxpr_shows_jaxs_params():
    text = str(sj.make_jaxpr(cnn)(jnp.asarray(X), jnp.asarray(W)))
    theirs = str(jax.make_jaxpr(lambda a, b: jax.numpy.tanh(jlax.conv_general_dilated(
        a, b, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2)))(X, W))
    ours_eqn = text.split("conv_general_dilated[")[1].split("]")[0]
    assert ours_eqn == theirs.split("conv_general_dilated[")[1].split("]")[0]


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1)])
def test_vmap_equals_a_loop(in_axes):
    xs, ws = draw(3, 4, 5, 6, 4), draw(3, 3, 3, 2, 6)
    args = [np.moveaxis(a, 0, ax) if ax is not None else a[0]
            for a, ax in zip((xs, ws), in_axes)]
    got = sj.vmap(cnn, in_axes=in_axes)(*map(jnp.asarray, args))
    want = [cnn(jnp.asarray(xs[i] if in_axes[0] is not None else xs[0]),
                jnp.asarray(ws[i] if in_axes[1] is not None else ws[0])) for i in range(3)]
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(w) for w in want]),
                               rtol=1e-4, atol=1e-4)


def test_per_example_gradients_of_a_convolution():
    w = jnp.asarray(W)
    per_example = sj.vmap(sj.grad(lambda x, w: cnn(x[None], w).sum(), 1), in_axes=(0, None))
    got = per_example(jnp.asarray(X), w)
    want = [sj.grad(lambda x, w: cnn(x[None], w).sum(), 1)(jnp.asarray(X[i]), w)
            for i in range(4)]
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(g) for g in want]),
                               rtol=1e-4, atol=1e-4)


def test_batch_sharded_equals_unsharded():
    mesh = sj.make_mesh((4,), ("data",), devices=sj.devices()[:4])
    x = sj.device_put(jnp.asarray(X), NamedSharding(mesh, P("data")))
    w = sj.device_put(jnp.asarray(W), NamedSharding(mesh, P()))
    loss = lambda a, b: (cnn(a, b) ** 2).sum()
    for run in (cnn, sj.jit(cnn)):
        out = run(x, w)
        assert str(sj.typeof(out)) == "float32[4@data,5,3,6]"
        np.testing.assert_allclose(np.asarray(out), np.asarray(cnn(jnp.asarray(X),
                                                                   jnp.asarray(W))),
                                   rtol=1e-4, atol=1e-4)
    grads = sj.jit(sj.grad(loss, (0, 1)))(x, w)
    want = sj.grad(loss, (0, 1))(jnp.asarray(X), jnp.asarray(W))
    for got, expected in zip(grads, want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-4,
                                   atol=1e-4)


# ------------------------------------------------------------------------------------------
# Errors, of JAX's classes
# ------------------------------------------------------------------------------------------

ERRORS = [
    ("mismatched ranks", (2, 3, 5, 4), (4, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ("two specs", (2, 3, 5, 4), (4, 3, 3, 3),
     dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO"))),
    ("bad letter", (2, 3, 5, 4), (4, 3, 3, 3),
     dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIX", "NHWC"))),
    ("features", (2, 3, 5, 4), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ("groups", (2, 6, 5, 4), (4, 3, 3, 3),
     dict(window_strides=(1, 1), padding="SAME", feature_group_count=4)),
    ("batch groups", (3, 6, 5, 4), (4, 6, 3, 3),
     dict(window_strides=(1, 1), padding="SAME", batch_group_count=2)),
    ("strides", (2, 6, 5, 4), (4, 6, 3, 3), dict(window_strides=(1,), padding="SAME")),
    ("padding", (2, 6, 5, 4), (4, 6, 3, 3), dict(window_strides=(1, 1), padding="FOO")),
    ("string padding with lhs dilation", (2, 6, 5, 4), (4, 6, 3, 3),
     dict(window_strides=(1, 1), padding="SAME", lhs_dilation=(2, 1))),
]


@pytest.mark.parametrize("name, lhs_shape, rhs_shape, params", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_of_jaxs_classes(name, lhs_shape, rhs_shape, params):
    x, w = draw(*lhs_shape), draw(*rhs_shape)
    with pytest.raises(Exception) as theirs:
        jlax.conv_general_dilated(x, w, **params)
    with pytest.raises(theirs.type) as ours:
        lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), **params)
    assert "conv" in str(ours.value) or "padding" in str(ours.value)


def test_mismatched_dtypes_are_a_type_error():
    with pytest.raises(TypeError, match="one dtype"):
        lax.conv_general_dilated(jnp.ones((1, 1, 3)), jnp.ones((1, 1, 2), np.int32), (1,),
                                 "SAME")


PATCH_INPUT = draw(2, 3, 5, 6)
PATCHES = {
    "valid": lambda m, x: m.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"),
    "same_strided": lambda m, x: m.conv_general_dilated_patches(x, (3, 2), (2, 1), "SAME"),
    "padded_and_dilated": lambda m, x: m.conv_general_dilated_patches(
        x, (2, 2), (1, 2), [(1, 0), (0, 2)], lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    "nhwc": lambda m, x: m.conv_general_dilated_patches(
        np.moveaxis(x, 1, -1), (2, 3), (1, 1), "SAME",
        dimension_numbers=("NHWC", "HWIO", "NHWC")),
    "one_spatial_dim": lambda m, x: m.conv_general_dilated_patches(x[:, :, 0], (3,), (1,),
                                                                  "SAME"),
    "integers": lambda m, x: m.conv_general_dilated_patches(x.astype(np.int32), (2, 2),
                                                           (1, 1), "VALID"),
}


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_conv_general_dilated_patches_as_jax(name):
    """Every window as features, each input feature's taps together: JAX's layout."""
    expected = np.asarray(PATCHES[name](jlax, PATCH_INPUT))
    got = np.asarray(PATCHES[name](lax, PATCH_INPUT))
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_conv_general_dilated_patches_under_jit_and_grad_as_jax():
    def loss(module, x):
        return (module.conv_general_dilated_patches(x, (2, 2), (1, 1), "SAME") ** 2).sum()

    np.testing.assert_allclose(sj.grad(lambda x: loss(lax, x))(PATCH_INPUT),
                               jax.grad(lambda x: loss(jlax, x))(PATCH_INPUT), atol=1e-5)
    np.testing.assert_allclose(sj.jit(PATCHES["nhwc"], static_argnums=0)(lax, PATCH_INPUT),
                               PATCHES["nhwc"](jlax, PATCH_INPUT), atol=1e-6)
