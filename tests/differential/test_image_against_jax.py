"""``jax.image`` against JAX 0.10.2 (the module was missing): ``resize`` by every method, to
larger, smaller and mixed shapes, with and without antialiasing, eagerly and under ``jit``;
integers; the gradient; ``scale_and_translate`` with a translation; ``vmap``; and the errors."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

X = np.random.default_rng(0).standard_normal((5, 7, 3)).astype(np.float32)
SHAPES = [(9, 4, 3), (3, 12, 3), (10, 14, 6), (2, 3, 3)]
METHODS = ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "bilinear"]


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("method", METHODS)
def test_resize_as_jax(method, antialias):
    for shape in SHAPES:
        expected = np.asarray(real.image.resize(X, shape, method, antialias=antialias))
        got = np.asarray(ours.image.resize(X, shape, method, antialias=antialias))
        assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    jitted = ours.jit(lambda v: ours.image.resize(v, SHAPES[0], method, antialias=antialias))
    np.testing.assert_allclose(jitted(X), real.image.resize(X, SHAPES[0], method,
                                                            antialias=antialias),
                               rtol=1e-4, atol=1e-5)


def test_resize_of_integers_gradients_vmap_and_scale_and_translate_as_jax():
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    for method in ("nearest", "linear"):
        got, expected = ours.image.resize(ints, (5, 3), method), real.image.resize(
            ints, (5, 3), method)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-6)

    def loss(jax):
        return lambda v: (jax.image.resize(v, (9, 4, 3), "cubic") ** 2).sum()
    np.testing.assert_allclose(ours.grad(loss(ours))(X), real.grad(loss(real))(X), rtol=1e-4,
                               atol=1e-4)
    scale, shift = np.array([1.5], np.float32), np.array([0.25], np.float32)
    np.testing.assert_allclose(
        ours.image.scale_and_translate(X, (8, 7, 3), (0,), scale, shift, "linear"),
        real.image.scale_and_translate(X, (8, 7, 3), (0,), scale, shift, "linear"),
        rtol=1e-5, atol=1e-6)
    images = X.transpose(2, 0, 1)
    np.testing.assert_allclose(
        ours.vmap(lambda im: ours.image.resize(im, (4, 4), "linear"))(images),
        real.vmap(lambda im: real.image.resize(im, (4, 4), "linear"))(images),
        rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args, match", [
    (((5,), "linear"), "number of dimensions"),
    (((5, 7, 3), "foo"), "Unknown resize method"),
])
def test_resize_refuses_as_jax(args, match):
    for lib in (ours, real):
        with pytest.raises(ValueError, match=match):
            lib.image.resize(X, *args)
